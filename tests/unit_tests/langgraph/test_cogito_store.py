from __future__ import annotations

import asyncio
import threading
from datetime import datetime

import pytest

pytest.importorskip("langgraph.store.base")  # the langgraph extra (absent on the 3.10 tier)

from langchain_chroma import Chroma
from langchain_core.language_models import FakeListChatModel
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp

from cogito_lc import MemoryStore, SupersessionJudge
from cogito_lc.langgraph import CogitoStore
from tests.unit_tests.conftest import HashEmbeddings
from tests.unit_tests.fakes import ScriptedChatModel


@pytest.fixture
def memory(chroma: Chroma) -> MemoryStore:
    return MemoryStore(chroma, scope={"agent_id": "helpdesk"})


@pytest.fixture
def store(memory: MemoryStore) -> CogitoStore:
    return CogitoStore(memory, index={"fields": ["text"]}, scope_keys={"user_id": 1})


def test_put_get_returns_the_value_verbatim_with_timestamps(store: CogitoStore) -> None:
    value = {"text": "Café hours: 8-17 (été)", "tags": ["a", "b"], "n": {"x": 1.5, "ok": True}}
    store.put(("memories", "alice"), "hours", value)
    item = store.get(("memories", "alice"), "hours")
    assert item is not None
    assert item.value == value
    assert (item.namespace, item.key) == (("memories", "alice"), "hours")
    assert item.created_at == item.updated_at
    assert item.created_at.tzinfo is not None
    assert store.get(("memories", "bob"), "hours") is None
    assert store.get(("memories", "alice"), "other") is None


def test_replacing_keeps_created_at_and_moves_updated_at(store: CogitoStore) -> None:
    store.put(("memories", "alice"), "k", {"text": "first"})
    first = store.get(("memories", "alice"), "k")
    store.put(("memories", "alice"), "k", {"text": "second", "extra": 1})
    second = store.get(("memories", "alice"), "k")
    assert first is not None
    assert second is not None
    assert second.value == {"text": "second", "extra": 1}
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    assert store.memory.count() == 2  # the old value is kept as a superseded version
    assert len(store.memory.list(include_superseded=False)) == 1


def test_delete_removes_the_item_and_a_missing_one_is_no_error(store: CogitoStore) -> None:
    store.put(("memories", "alice"), "k", {"text": "gone soon"})
    store.delete(("memories", "alice"), "k")
    store.delete(("memories", "alice"), "k")
    store.delete(("nowhere",), "k")
    assert store.get(("memories", "alice"), "k") is None
    assert store.memory.count() == 0


def test_namespaces_map_to_scopes(memory: MemoryStore, store: CogitoStore) -> None:
    store.put(("memories", "alice"), "a", {"text": "Alice likes tea."})
    store.put(("memories", "bob"), "b", {"text": "Bob likes coffee."})
    store.put(("shared",), "c", {"text": "The office opens at 8."})
    alice = memory.scoped({"user_id": "alice"})
    assert [doc.page_content for doc in alice.list()] == ["Alice likes tea."]
    doc = alice.list()[0]
    assert doc.metadata["user_id"] == "alice"
    assert doc.metadata["agent_id"] == "helpdesk"
    assert memory.count() == 3
    # A store over another scope of the same vector store sees none of it.
    other = CogitoStore(MemoryStore(memory.vectorstore, scope={"agent_id": "sales"}))
    assert other.search(()) == []
    assert other.get(("shared",), "c") is None


def test_scope_keys_are_checked(memory: MemoryStore) -> None:
    with pytest.raises(ValueError, match="unknown scope key 'tenant'"):
        CogitoStore(memory, scope_keys={"tenant": 1})
    with pytest.raises(ValueError, match="already fixes"):
        CogitoStore(memory, scope_keys={"agent_id": 0})
    with pytest.raises(ValueError, match="position >= 0"):
        CogitoStore(memory, scope_keys={"user_id": -1})
    with pytest.raises(ValueError, match="unknown key"):
        CogitoStore(memory, index={"fields": ["text"], "fileds": []})  # type: ignore[typeddict-unknown-key]


def test_search_without_query_lists_the_prefix_oldest_first(store: CogitoStore) -> None:
    store.put(("docs", "a"), "1", {"text": "one", "n": 1})
    store.put(("docs", "a", "deep"), "2", {"text": "two", "n": 2})
    store.put(("docs", "b"), "3", {"text": "three", "n": 3})
    store.put(("docsx",), "4", {"text": "four", "n": 4})
    assert [i.key for i in store.search(("docs",))] == ["1", "2", "3"]
    assert [i.key for i in store.search(("docs", "a"))] == ["1", "2"]
    assert [i.key for i in store.search(())] == ["1", "2", "3", "4"]
    assert all(i.score is None for i in store.search(("docs",)))
    pages = [store.search(("docs",), limit=2, offset=o) for o in (0, 2, 4)]
    assert [[i.key for i in page] for page in pages] == [["1", "2"], ["3"], []]


def test_filter_matches_value_fields(store: CogitoStore) -> None:
    store.put(("docs",), "a", {"text": "a", "n": 1, "kind": "note", "meta": {"lang": "en"}})
    store.put(("docs",), "b", {"text": "b", "n": 5, "kind": "note", "tags": ["x", "y"]})
    store.put(("docs",), "c", {"text": "c", "n": 9, "kind": "task"})

    def keys(**conditions: object) -> list[str]:
        return [i.key for i in store.search(("docs",), filter=conditions)]

    assert keys(kind="note") == ["a", "b"]
    assert keys(n={"$gt": 1}) == ["b", "c"]
    assert keys(n={"$gte": 1, "$lt": 9}) == ["a", "b"]
    assert keys(kind={"$ne": "note"}) == ["c"]
    assert keys(meta={"lang": "en"}) == ["a"]
    assert keys(tags=["x", "y"]) == ["b"]
    assert keys(kind="note", n=5) == ["b"]
    assert keys(missing="x") == []
    with pytest.raises(ValueError, match=r"operator '\$in' is not supported"):
        keys(n={"$in": [1]})


def test_ordering_filters_compare_strings_as_strings_and_refuse_mixed_types(
    store: CogitoStore,
) -> None:
    store.put(("docs",), "a", {"text": "a", "day": "2023-12-31", "n": 2})
    store.put(("docs",), "b", {"text": "b", "day": "2024-03-01", "n": "10"})

    def keys(**conditions: object) -> list[str]:
        return [i.key for i in store.search(("docs",), filter=conditions)]

    assert keys(day={"$gt": "2024-01-01"}) == ["b"]
    assert keys(day={"$lte": "2024-01-01"}) == ["a"]
    assert keys(n={"$gt": 5}) == ["b"]  # a string holding a number compares as one
    with pytest.raises(ValueError, match=r"filter \$gt on field 'day' compares"):
        keys(day={"$gt": 5})


def test_query_search_ranks_by_recall_and_skips_unindexed(store: CogitoStore) -> None:
    store.put(("docs",), "db", {"text": "We chose PostgreSQL for the billing service."})
    store.put(("docs",), "auth", {"text": "Auth tokens expire after 3600 seconds."})
    store.put(("docs",), "raw", {"text": "PostgreSQL billing raw notes"}, index=False)
    hits = store.search(("docs",), query="which database for billing? PostgreSQL")
    assert [h.key for h in hits][:2] == ["db", "auth"]
    assert hits[0].score is not None
    assert hits[0].score >= (hits[1].score or 0.0)
    assert hits[-1].key == "raw"
    assert hits[-1].score is None
    assert [h.key for h in store.search(("docs",), query="billing PostgreSQL", limit=1)] == ["db"]
    paged = store.search(("docs",), query="which database for billing? PostgreSQL", offset=1)
    assert [h.key for h in paged] == [h.key for h in hits[1:]]


def test_query_search_with_a_filter_ranks_only_matching_items(store: CogitoStore) -> None:
    store.put(("docs",), "db", {"text": "We chose PostgreSQL for billing.", "team": "pay"})
    store.put(("docs",), "db2", {"text": "PostgreSQL billing replica lag.", "team": "ops"})
    store.put(("docs",), "auth", {"text": "Auth tokens expire hourly.", "team": "ops"})
    hits = store.search(("docs",), query="PostgreSQL billing", filter={"team": "ops"})
    assert [h.key for h in hits] == ["db2", "auth"]
    assert store.search(("docs",), query="PostgreSQL", filter={"team": "none"}) == []


def test_index_fields_choose_the_embedded_text(memory: MemoryStore, store: CogitoStore) -> None:
    store.put(("docs",), "a", {"text": "alpha beta", "note": "zebra"})
    store.put(("docs",), "b", {"text": "alpha beta", "note": "zebra"}, index=["note"])
    store.put(("docs",), "c", {"note": "no text field"})
    texts = {doc.metadata["lg_key"]: doc.page_content for doc in memory.list()}
    assert texts["a"] == "alpha beta"
    assert texts["b"] == "zebra"
    assert texts["c"] == '{"note": "no text field"}'  # held, but not indexed
    hits = store.search(("docs",), query="zebra")
    assert [(h.key, h.score is None) for h in hits][-1] == ("c", True)
    whole = CogitoStore(MemoryStore(memory.vectorstore, scope={"agent_id": "w"}))
    whole.put(("docs",), "j", {"b": 1, "a": "x"})
    [doc] = MemoryStore(memory.vectorstore, scope={"agent_id": "w"}).list()
    assert doc.page_content == '{"a": "x", "b": 1}'  # default fields ["$"]: the value as JSON


def test_list_namespaces_matches_prefix_suffix_and_depth(store: CogitoStore) -> None:
    for namespace in [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "c")]:
        store.put(namespace, "k", {"text": "x"})
    assert store.list_namespaces() == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "c"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
    ]
    assert store.list_namespaces(suffix=("d", "*")) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]
    assert store.list_namespaces(prefix=("a", "*", "c")) == [("a", "b", "c")]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]
    store.delete(("a", "c"), "k")
    assert ("a", "c") not in store.list_namespaces()


def test_batch_reads_see_the_store_before_its_writes(store: CogitoStore) -> None:
    store.put(("n",), "k", {"text": "old"})
    results = store.batch(
        [
            PutOp(("n",), "k", {"text": "new"}),
            GetOp(("n",), "k"),
            PutOp(("n",), "k2", {"text": "first"}),
            PutOp(("n",), "k2", {"text": "last"}),
            SearchOp(("n",)),
        ]
    )
    got = results[1]
    assert got is not None
    assert got.value == {"text": "old"}
    assert [i.key for i in results[4]] == ["k"]  # type: ignore[union-attr]
    after = store.get(("n",), "k2")
    assert after is not None
    assert after.value == {"text": "last"}
    assert [results[0], results[2], results[3]] == [None, None, None]


def test_bad_input_raises_naming_the_field_and_writes_nothing(store: CogitoStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {"text": "x"})
    with pytest.raises(InvalidNamespaceError):
        store.put((), "k", {"text": "x"})
    with pytest.raises(ValueError, match="at most 16"):
        store.put(tuple(f"l{i}" for i in range(17)), "k", {"text": "x"})
    with pytest.raises(ValueError, match="key holds a lone surrogate"):
        store.put(("n",), "\ud800", {"text": "x"})
    with pytest.raises(ValueError, match="namespace label"):
        store.put(("\ud800",), "k", {"text": "x"})
    with pytest.raises(ValueError, match="not JSON-serialisable"):
        store.put(("n",), "k", {"when": datetime.now()})
    with pytest.raises(TypeError, match="must be a dict"):
        store.batch([PutOp(("n",), "k", ["not", "a", "dict"])])  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError, match="TTL"):
        store.put(("n",), "k", {"text": "x"}, ttl=5)
    with pytest.raises(InvalidNamespaceError, match="at least one label"):
        store.batch([PutOp((), "k", {"text": "x"})])  # BaseStore.put's own check skipped
    assert store.memory.count() == 0


def test_a_value_longer_than_a_memory_is_kept_whole_and_indexed_on_its_start(
    store: CogitoStore,
) -> None:
    store.memory.max_text_chars = 20
    store.batch([PutOp(("n",), "ok", {"text": "short"}), PutOp(("n",), "long", {"text": "x" * 50})])
    item = store.get(("n",), "long")
    assert item is not None
    assert item.value == {"text": "x" * 50}
    held = store.memory.get(store._document(("n",), "long").id or "")  # type: ignore[union-attr]
    assert held is not None
    assert held.page_content == "x" * 20


def test_a_blank_query_lists_and_an_empty_index_list_indexes_nothing(store: CogitoStore) -> None:
    store.put(("n",), "a", {"text": "deploys freeze on fridays"})
    store.put(("n",), "b", {"text": "deploys go to prod-2"}, index=[])
    assert [item.key for item in store.search(("n",), query=" \n")] == ["a", "b"]
    ranked = store.search(("n",), query="deploys")
    assert [(item.key, item.score is None) for item in ranked] == [("a", False), ("b", True)]


async def test_async_twins(store: CogitoStore) -> None:
    await store.aput(("memories", "alice"), "k", {"text": "Alice prefers French."})
    item = await store.aget(("memories", "alice"), "k")
    assert item is not None
    assert item.value == {"text": "Alice prefers French."}
    hits = await store.asearch(("memories",), query="French")
    assert [h.key for h in hits] == ["k"]
    assert await store.alist_namespaces() == [("memories", "alice")]
    results = await asyncio.gather(
        store.aget(("memories", "alice"), "k"), store.asearch(("memories",))
    )
    assert results[0] is not None
    assert len(results[1]) == 1
    await store.adelete(("memories", "alice"), "k")
    assert await store.aget(("memories", "alice"), "k") is None


class GatedEmbeddings(HashEmbeddings):
    """Embeds documents once ``release`` is set, and says when a call is waiting."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = threading.Event()
        self.release = threading.Event()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.waiting.set()
        self.release.wait(timeout=30)
        return super().embed_documents(texts)


async def test_a_cancelled_put_is_written_before_the_cancellation_is_raised() -> None:
    embeddings = GatedEmbeddings()
    store = CogitoStore(MemoryStore(InMemoryVectorStore(embeddings)))
    put = asyncio.ensure_future(store.aput(("n",), "k", {"text": "Deploys freeze on Fridays."}))
    assert await asyncio.to_thread(embeddings.waiting.wait, 10)
    put.cancel()
    asyncio.get_running_loop().call_later(0.2, embeddings.release.set)

    with pytest.raises(asyncio.CancelledError):
        await put

    item = store.get(("n",), "k")  # not a write landing later, unseen by its caller
    assert item is not None
    assert item.value == {"text": "Deploys freeze on Fridays."}


def test_a_filter_model_orders_the_results(chroma: Chroma) -> None:
    llm = ScriptedChatModel(replies=["[2]"])
    store = CogitoStore(
        MemoryStore(chroma),
        index={"fields": ["text"]},
        llm=llm,
        retriever_kwargs={"structured_output": "none"},
    )
    store.put(("docs",), "db", {"text": "We chose PostgreSQL for billing."})
    store.put(("docs",), "auth", {"text": "Auth tokens expire after 3600 seconds."})
    hits = store.search(("docs",), query="PostgreSQL billing")
    shown = llm.prompt_text(0)
    second = next(line for line in shown.splitlines() if line.startswith("[2] "))
    assert len(hits) == 1
    assert hits[0].value["text"] == second.removeprefix("[2] ")


def test_works_over_an_in_memory_vector_store() -> None:
    store = CogitoStore(MemoryStore(InMemoryVectorStore(HashEmbeddings())))
    store.put(("n",), "k", {"text": "Deploys freeze on Fridays."})
    assert [i.key for i in store.search(("n",), query="deploy freeze Friday")] == ["k"]
    assert [i.key for i in store.search(("n",), filter={"text": {"$ne": "x"}})] == ["k"]


def test_ops_handed_to_batch_directly_are_checked_too(store: CogitoStore) -> None:
    with pytest.raises(InvalidNamespaceError, match="periods"):
        store.batch([GetOp(("a.b",), "k")])
    with pytest.raises(InvalidNamespaceError, match="periods"):
        store.batch([SearchOp(("ok", "x.y"))])
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("", "x"), "k", {"text": "x"})])
    with pytest.raises(TypeError, match="key must be a str"):
        store.batch([GetOp(("n",), 3)])  # type: ignore[arg-type]
    assert store.list_namespaces(prefix=("*", "b")) == []


def test_a_query_over_unindexed_items_only_lists_them(store: CogitoStore) -> None:
    store.put(("raw",), "a", {"text": "first"}, index=False)
    store.put(("raw",), "b", {"other": "no text field"})
    hits = store.search(("raw",), query="first")
    assert [(h.key, h.score) for h in hits] == [("a", None), ("b", None)]
    assert [h.key for h in store.search(("raw",), query="first", offset=1)] == ["b"]


async def test_concurrent_writers_and_readers_lose_nothing(store: CogitoStore) -> None:
    writes = [store.aput(("n",), f"k{i}", {"text": f"note {i}", "i": i}) for i in range(12)]
    replaces = [store.aput(("n",), "k0", {"text": f"replaced {i}", "i": 0}) for i in range(3)]
    reads = [store.asearch(("n",), query="note") for _ in range(4)]
    await asyncio.gather(*writes, *replaces, *reads)
    items = await store.asearch(("n",), limit=50)
    assert sorted(item.value["i"] for item in items) == list(range(12))
    assert len(store.memory.list(limit=100, include_superseded=False)) == 12
    assert len(store.history(("n",), "k0")) == 4


def test_retriever_kwargs_reach_recall_but_not_the_limit(memory: MemoryStore) -> None:
    store = CogitoStore(memory, index={"fields": ["text"]}, retriever_kwargs={"k": 1, "rrf_k": 5})
    for i in range(3):
        store.put(("n",), f"k{i}", {"text": f"billing note {i}"})
    assert len(store.search(("n",), query="billing note", limit=3)) == 3
    with pytest.raises(TypeError, match="rrf_kk"):
        CogitoStore(memory, retriever_kwargs={"rrf_kk": 5})


# -- versions ------------------------------------------------------------------------------


def test_a_replaced_value_stays_in_history_and_reads_return_the_current(
    memory: MemoryStore, store: CogitoStore
) -> None:
    namespace = ("memories", "alice")
    store.put(namespace, "city", {"text": "Alice lives in Austin, Texas."})
    store.put(namespace, "city", {"text": "Alice lives in Denver now."})
    store.put(namespace, "city", {"text": "Alice lives in Boston these days."})
    store.put(namespace, "food", {"text": "Alice likes ramen."})
    item = store.get(namespace, "city")
    assert item is not None
    assert item.value == {"text": "Alice lives in Boston these days."}
    assert [i.value["text"] for i in store.history(namespace, "city")] == [
        "Alice lives in Austin, Texas.",
        "Alice lives in Denver now.",
        "Alice lives in Boston these days.",
    ]
    hits = store.search(("memories",), query="where does Alice live? Austin Denver Boston")
    assert [(h.key, h.value["text"]) for h in hits if h.key == "city"] == [
        ("city", "Alice lives in Boston these days.")
    ]
    assert [i.key for i in store.search(("memories",))] == ["city", "food"]
    assert store.list_namespaces() == [namespace]
    alice = memory.scoped({"user_id": "alice"})
    first = next(d for d in alice.list() if d.page_content.endswith("Austin, Texas."))
    assert first.metadata["superseded_by"]  # marked, never edited
    chain = alice.history(first.id or "")
    assert [d.page_content for d in chain][-1] == "Alice lives in Boston these days."
    assert store.history(namespace, "nothing") == []


def test_delete_forgets_every_version_with_an_audit(
    memory: MemoryStore, store: CogitoStore
) -> None:
    namespace = ("memories", "alice")
    store.put(namespace, "phone", {"text": "Alice's phone is 555-0101."})
    store.put(namespace, "phone", {"text": "Alice's phone is 555-0199."})
    store.put(namespace, "food", {"text": "Alice likes ramen."})
    store.delete(namespace, "phone")
    assert store.get(namespace, "phone") is None
    assert store.history(namespace, "phone") == []
    held = [d.page_content for d in memory.scoped({"user_id": "alice"}).list()]
    assert held == ["Alice likes ramen."]
    hits = store.search(("memories",), query="phone 555")
    assert [h.key for h in hits] == ["food"]
    record = memory.forget_log[-1]
    assert record["reason"] == "langgraph delete"
    assert record["count"] == 2
    assert "555" not in str(record)
    store.put(namespace, "phone", {"text": "Alice has no phone."})  # a key used again
    again = store.get(namespace, "phone")
    assert again is not None
    assert again.value == {"text": "Alice has no phone."}
    assert len(store.history(namespace, "phone")) == 1


def test_a_put_of_none_deletes_too(store: CogitoStore) -> None:
    store.put(("n",), "k", {"text": "one"})
    store.put(("n",), "k", {"text": "two"})
    store.batch([PutOp(("n",), "k", None)])
    assert store.get(("n",), "k") is None
    assert store.memory.count() == 0


def _put_cut_before_marking(
    store: CogitoStore, monkeypatch: pytest.MonkeyPatch, value: dict[str, str]
) -> None:
    """Put ``value`` at ("n",)/k, the process dying before the replaced version is marked."""

    def crash(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(MemoryStore, "_apply_marks", crash)
    with pytest.raises(KeyboardInterrupt):
        store.put(("n",), "k", value)
    monkeypatch.undo()


def test_a_replace_cut_before_marking_still_reads_the_new_value(
    store: CogitoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.put(("n",), "k", {"text": "old value"})
    _put_cut_before_marking(store, monkeypatch, {"text": "new value"})
    item = store.get(("n",), "k")
    assert item is not None
    assert item.value == {"text": "new value"}  # it names the one it replaces
    assert store.memory.complete_supersessions(recent=None) == 1
    assert [i.value["text"] for i in store.search(("n",))] == ["new value"]


async def test_async_history(store: CogitoStore) -> None:
    await store.aput(("n",), "k", {"text": "one"})
    await store.aput(("n",), "k", {"text": "two"})
    assert [i.value for i in await store.ahistory(("n",), "k")] == [
        {"text": "one"},
        {"text": "two"},
    ]


def _counting_gets(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    get = MemoryStore.get

    def counted(self: MemoryStore, id: str, **kwargs: object) -> object:  # noqa: A002
        calls.append(id)
        return get(self, id, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(MemoryStore, "get", counted)
    return calls


def test_reading_an_item_does_not_walk_every_version_it_had(
    memory: MemoryStore, store: CogitoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(30):
        store.put(("n",), "k", {"text": f"value {n}"})
    calls = _counting_gets(monkeypatch)
    assert store.get(("n",), "k").value == {"text": "value 29"}  # type: ignore[union-attr]
    assert len(calls) <= 2, calls  # from the version this store last saw
    calls.clear()
    fresh = CogitoStore(memory, index={"fields": ["text"]}, scope_keys={"user_id": 1})
    assert fresh.get(("n",), "k").value == {"text": "value 29"}  # type: ignore[union-attr]
    assert len(calls) <= 10, calls  # a few steps, then the item's versions are listed
    fresh.put(("n",), "k", {"text": "value 30"})  # another writer: the first store follows
    assert store.get(("n",), "k").value == {"text": "value 30"}  # type: ignore[union-attr]


def test_a_long_chain_cut_before_marking_is_read_at_its_newest_value(
    memory: MemoryStore, store: CogitoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(12):
        store.put(("n",), "k", {"text": f"value {n}"})
    _put_cut_before_marking(store, monkeypatch, {"text": "value 12"})
    fresh = CogitoStore(memory, index={"fields": ["text"]}, scope_keys={"user_id": 1})
    assert fresh.get(("n",), "k").value == {"text": "value 12"}  # type: ignore[union-attr]
    fresh.put(("n",), "k", {"text": "value 13"})
    assert [i.value["text"] for i in fresh.history(("n",), "k")][-2:] == ["value 12", "value 13"]


def test_pages_of_a_query_search_neither_repeat_nor_skip_items(store: CogitoStore) -> None:
    topics = ["deploys", "billing", "tokens", "on-call", "staging", "backups"]
    for n in range(60):
        store.put(("n",), f"k{n:02d}", {"text": f"note {n} about {topics[n % 6]} and the team"})
    paged = [
        item.key
        for offset in range(0, 63, 7)
        for item in store.search(("n",), query="team notes about deploys", limit=7, offset=offset)
    ]
    whole = [item.key for item in store.search(("n",), query="team notes about deploys", limit=60)]
    assert paged == whole
    assert sorted(whole) == [f"k{n:02d}" for n in range(60)]


def _item_memory(memory: MemoryStore, user: str) -> str:
    [held] = memory.scoped({"user_id": user}).list()
    return held.id or ""


def _check_ended_then_restarted(memory: MemoryStore, store: CogitoStore, old_id: str) -> None:
    ns = ("memories", "alice")
    assert store.get(ns, "theme") is None
    assert store.search(ns) == []
    assert store.search(ns, query="dark mode") == []
    assert store.list_namespaces() == []
    assert store.history(ns, "theme") == []
    store.put(ns, "theme", {"text": "Alice prefers solarized."})
    store.put(ns, "theme", {"text": "Alice prefers high contrast."})
    item = store.get(ns, "theme")
    assert item is not None
    assert item.value == {"text": "Alice prefers high contrast."}
    assert [i.key for i in store.search(ns)] == ["theme"]
    assert [i.value["text"] for i in store.history(ns, "theme")] == [
        "Alice prefers solarized.",
        "Alice prefers high contrast.",
    ]
    old = memory.scoped({"user_id": "alice"}).get(old_id)
    assert old is not None  # the ended item's memory is kept as stored
    assert old.page_content == "Alice prefers dark mode."


def test_an_item_superseded_by_another_memory_ends_and_a_put_starts_it_again(
    memory: MemoryStore, store: CogitoStore
) -> None:
    store.put(("memories", "alice"), "theme", {"text": "Alice prefers dark mode."})
    old_id = _item_memory(memory, "alice")
    alice = memory.scoped({"user_id": "alice"})
    alice.store("Alice now prefers light mode.", supersedes=[old_id])
    _check_ended_then_restarted(memory, store, old_id)


def test_an_item_a_judge_says_is_superseded_ends_too(chroma: Chroma) -> None:
    reply = '{"supersedes": [1], "repeats": []}'
    judge = SupersessionJudge.from_llm(FakeListChatModel(responses=[reply] * 3))
    memory = MemoryStore(chroma, judge=judge)
    store = CogitoStore(memory, index={"fields": ["text"]}, scope_keys={"user_id": 1})
    store.put(("memories", "alice"), "theme", {"text": "Alice prefers dark mode."})
    old_id = _item_memory(memory, "alice")
    added = memory.add("Alice now prefers light mode.", scope={"user_id": "alice"})
    assert added.superseded == [old_id], added
    _check_ended_then_restarted(memory, store, old_id)


def _race(first: CogitoStore, second: CogitoStore, key: str, round_: int) -> list[Exception]:
    """Both stores put ("n",)/``key`` at once; the errors they raised."""
    errors: list[Exception] = []
    start = threading.Barrier(2)

    def put(store: CogitoStore, name: str) -> None:
        start.wait()
        try:
            store.put(("n",), key, {"text": f"{name} round {round_}"})
        except Exception as exc:  # collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=put, args=(s, n)) for s, n in ((first, "a"), (second, "b"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def _check_last_write_wins(first: CogitoStore, second: CogitoStore) -> None:
    errors = [e for n in range(8) for e in _race(first, second, f"new{n}", n)]
    errors += [e for n in range(8) for e in _race(first, second, "hot", n)]
    assert errors == []
    assert len(first.search(("n",), limit=100)) == 9
    item, other = first.get(("n",), "hot"), second.get(("n",), "hot")
    assert item is not None
    assert other is not None
    assert item.value == other.value
    assert item.value["text"] in {"a round 7", "b round 7"}


def test_two_stores_over_one_memory_store_racing_a_put_never_raise(memory: MemoryStore) -> None:
    _check_last_write_wins(CogitoStore(memory), CogitoStore(memory))
