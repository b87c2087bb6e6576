"""The same scenarios against LangGraph's InMemoryStore and CogitoStore, results compared.

Both stores embed with the real all-MiniLM-L6-v2 model; CogitoStore keeps its
memories in a real persistent Chroma store. Orders are compared only where the
query defines one (a query with one clear answer); otherwise as sets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("langgraph.store.base")

from langchain_chroma import Chroma
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, GetOp, InvalidNamespaceError, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from cogito_lc import MemoryStore
from cogito_lc.langgraph import CogitoStore

MEMORIES = {
    "db": {"text": "We chose PostgreSQL for the billing service.", "team": "pay", "n": 1},
    "auth": {"text": "Auth tokens expire after 3600 seconds.", "team": "sec", "n": 2},
    "deploy": {"text": "Deploys are frozen on Fridays after 3pm.", "team": "ops", "n": 3},
    "lang": {"text": "Alice prefers answers in French.", "team": "pay", "n": 4},
    "pager": {"text": "The on-call pager rotates every Monday.", "team": "ops", "n": 5},
    "cache": {"text": "Redis caches session data for 15 minutes.", "team": "sec", "n": 6},
}
QUERIES = {
    "which database does billing use?": "db",
    "how long do login tokens last?": "auth",
    "can I ship code on Friday afternoon?": "deploy",
    "what language should replies to Alice be in?": "lang",
    "when does the on-call rotation change?": "pager",
}

Scenario = Callable[[BaseStore], Any]


@pytest.fixture
def stores(minilm: Embeddings, persistent_chroma: Chroma) -> list[BaseStore]:
    reference = InMemoryStore(index={"dims": 384, "embed": minilm, "fields": ["text"]})
    cogito = CogitoStore(MemoryStore(persistent_chroma), index={"fields": ["text"]})
    return [reference, cogito]


def same(stores: list[BaseStore], scenario: Scenario) -> Any:
    """Run the scenario on both stores; assert equal results and return them."""
    reference, cogito = (scenario(store) for store in stores)
    assert cogito == reference
    return reference


def fill(store: BaseStore, namespace: tuple[str, ...] = ("team", "notes")) -> None:
    for key, value in MEMORIES.items():
        store.put(namespace, key, value)


def keys(items: list[Any]) -> list[str]:
    return [item.key for item in items]


def test_put_get_replace_delete(stores: list[BaseStore]) -> None:
    def scenario(store: BaseStore) -> list[Any]:
        seen: list[Any] = []
        store.put(("users", "alice"), "prefs", {"theme": "dark", "langs": ["fr", "en"]})
        first = store.get(("users", "alice"), "prefs")
        assert first is not None
        seen.append((first.namespace, first.key, first.value))
        store.put(("users", "alice"), "prefs", {"theme": "light"})
        second = store.get(("users", "alice"), "prefs")
        assert second is not None
        seen.append((second.value, second.updated_at >= first.updated_at))
        seen.append(store.get(("users", "bob"), "prefs"))
        store.delete(("users", "alice"), "prefs")
        store.delete(("users", "alice"), "never-stored")
        seen.append(store.get(("users", "alice"), "prefs"))
        return seen

    result = same(stores, scenario)
    assert result[0] == (("users", "alice"), "prefs", {"theme": "dark", "langs": ["fr", "en"]})


def test_search_without_query_by_prefix_and_filter(stores: list[BaseStore]) -> None:
    def scenario(store: BaseStore) -> dict[str, list[str]]:
        fill(store)
        store.put(("team", "notes", "old"), "archived", {"text": "Old note.", "n": 9})
        store.put(("teamwork",), "other", {"text": "Not in the prefix.", "n": 0})
        filters: dict[str, dict[str, Any] | None] = {
            "all": None,
            "team": {"team": "ops"},
            "gt": {"n": {"$gt": 3}},
            "range": {"n": {"$gte": 2, "$lte": 4}},
            "ne": {"team": {"$ne": "pay"}},
            "two": {"team": "pay", "n": 4},
            "none": {"team": "nobody"},
        }
        found = {
            name: sorted(keys(store.search(("team",), filter=where, limit=50)))
            for name, where in filters.items()
        }
        found["exact"] = sorted(keys(store.search(("team", "notes", "old"))))
        found["root"] = sorted(keys(store.search((), limit=50)))
        found["scores"] = [str(i.score) for i in store.search(("team",), limit=50)]
        return found

    result = same(stores, scenario)
    assert result["gt"] == ["archived", "cache", "lang", "pager"]
    assert result["none"] == []


def test_pages_cover_every_item_once(stores: list[BaseStore]) -> None:
    def scenario(store: BaseStore) -> list[Any]:
        fill(store)
        pages = [keys(store.search(("team",), limit=4, offset=o)) for o in (0, 4, 8)]
        return [[len(page) for page in pages], sorted(key for page in pages for key in page)]

    assert same(stores, scenario) == [[4, 2, 0], sorted(MEMORIES)]


def test_list_namespaces(stores: list[BaseStore]) -> None:
    namespaces = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "c", "f")]

    def scenario(store: BaseStore) -> list[Any]:
        for namespace in namespaces:
            store.put(namespace, "k", {"text": "x"})
        return [
            store.list_namespaces(),
            store.list_namespaces(prefix=("a", "b")),
            store.list_namespaces(prefix=("a", "b"), max_depth=3),
            store.list_namespaces(suffix=("f",)),
            store.list_namespaces(prefix=("a", "*", "d")),
            store.list_namespaces(max_depth=2),
            store.list_namespaces(limit=2, offset=1),
        ]

    result = same(stores, scenario)
    assert result[2] == [("a", "b", "c"), ("a", "b", "d")]


def test_query_ranks_the_clear_answer_first(stores: list[BaseStore]) -> None:
    def scenario(store: BaseStore) -> dict[str, Any]:
        fill(store)
        found: dict[str, Any] = {}
        for query in QUERIES:
            hits = store.search(("team",), query=query, limit=10)
            found[query] = (hits[0].key, sorted(keys(hits)), hits[0].score is not None)
        return found

    result = same(stores, scenario)
    assert {query: top for query, (top, _, _) in result.items()} == QUERIES


def test_query_with_filter_limit_and_offset(stores: list[BaseStore]) -> None:
    def scenario(store: BaseStore) -> list[Any]:
        fill(store)
        query = "which database does billing use?"
        filtered = store.search(("team",), query=query, filter={"team": "pay"})
        top = store.search(("team",), query=query, limit=1)
        rest = store.search(("team",), query=query, limit=10, offset=1)
        ranked = store.search(("team",), query=query, limit=10)
        return [
            keys(filtered)[0],
            sorted(keys(filtered)),
            keys(top),
            sorted(keys(rest)) == sorted(keys(ranked)[1:]),
            store.search(("team",), query=query, filter={"team": "nobody"}),
        ]

    result = same(stores, scenario)
    assert result[:3] == ["db", ["db", "lang"], ["db"]]


def test_unindexed_items_are_stored_not_ranked(stores: list[BaseStore]) -> None:
    def scenario(store: BaseStore) -> list[Any]:
        fill(store)
        store.put(("team", "notes"), "raw", {"text": "PostgreSQL billing database"}, index=False)
        store.put(("team", "notes"), "untexted", {"other": "PostgreSQL"})
        hits = store.search(("team",), query="which database does billing use?", limit=20)
        got = store.get(("team", "notes"), "raw")
        assert got is not None
        return [
            hits[0].key,
            sorted(h.key for h in hits if h.score is None),
            {h.key for h in hits[-2:]},
            got.value,
        ]

    result = same(stores, scenario)
    assert result[1] == ["raw", "untexted"]


def test_per_put_index_fields(stores: list[BaseStore]) -> None:
    def scenario(store: BaseStore) -> str:
        store.put(("n",), "a", {"text": "Deploys freeze on Fridays.", "tag": "billing"})
        store.put(("n",), "b", {"text": "Unrelated.", "tag": "Auth tokens expire hourly."}, ["tag"])
        return store.search(("n",), query="when do auth tokens expire?", limit=1)[0].key

    assert same(stores, scenario) == "b"


def test_batch_reads_before_writes_and_last_write_wins(stores: list[BaseStore]) -> None:
    def scenario(store: BaseStore) -> list[Any]:
        store.put(("n",), "k", {"text": "old"})
        results = store.batch(
            [
                PutOp(("n",), "k", {"text": "new"}),
                GetOp(("n",), "k"),
                SearchOp(("n",), None, 10, 0, None),
                PutOp(("n",), "k2", {"text": "first"}),
                PutOp(("n",), "k2", {"text": "last"}),
            ]
        )
        got, found = results[1], results[2]
        after = [store.get(("n",), key) for key in ("k", "k2")]
        return [
            results[0],
            got.value if got is not None else None,  # type: ignore[union-attr]
            keys(found),  # type: ignore[arg-type]
            [item.value if item is not None else None for item in after],
        ]

    result = same(stores, scenario)
    assert result[1:] == [{"text": "old"}, ["k"], [{"text": "new"}, {"text": "last"}]]


async def test_async_twins(stores: list[BaseStore]) -> None:
    found = []
    for store in stores:
        await store.aput(("u", "alice"), "lang", {"text": "Alice prefers answers in French."})
        await store.aput(("u", "alice"), "db", {"text": "Billing runs on PostgreSQL."})
        item = await store.aget(("u", "alice"), "lang")
        hits = await store.asearch(("u",), query="which language for Alice?")
        spaces = await store.alist_namespaces()
        await store.adelete(("u", "alice"), "lang")
        gone = await store.aget(("u", "alice"), "lang")
        found.append([item.value if item else None, hits[0].key, spaces, gone])
    assert found[0] == found[1]
    assert found[0][1] == "lang"


def test_bad_namespaces_fail_alike(stores: list[BaseStore]) -> None:
    def scenario(store: BaseStore) -> list[str]:
        errors = []
        for namespace in [(), ("a.b",), ("langgraph", "x"), ("",)]:
            with pytest.raises(InvalidNamespaceError) as caught:
                store.put(namespace, "k", {"text": "x"})
            errors.append(type(caught.value).__name__)
        with pytest.raises(NotImplementedError):
            store.put(("n",), "k", {"text": "x"}, ttl=1.0)
        return errors

    same(stores, scenario)
