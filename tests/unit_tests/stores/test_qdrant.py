"""The Qdrant store and adapter over Qdrant's in-memory local mode (a real engine, no server)."""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

pytest.importorskip("qdrant_client")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import VectorStore
from qdrant_client import QdrantClient

from cogito_lc._core.filters import where_predicate
from cogito_lc.stores import QdrantAdapter, adapter_for, open_qdrant_store
from cogito_lc.stores._qdrant_filters import where_to_qdrant
from cogito_lc.stores.qdrant import point_id

EMBEDDINGS = DeterministicFakeEmbedding(size=16)
VALUES = st.one_of(
    st.sampled_from(["a", "b", "c"]),
    st.integers(-2, 2),
    st.sampled_from([0.5, 1.5]),
    st.booleans(),
)
KEYS = st.sampled_from(["k", "m", "a.b"])
METADATA = st.dictionaries(KEYS, VALUES, max_size=2)


def _leaf() -> st.SearchStrategy[dict[str, Any]]:
    ops = st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"])
    simple = st.builds(lambda k, op, v: {k: {op: v}}, KEYS, ops, VALUES)
    listed = st.builds(
        lambda k, op, vs: {k: {op: vs}},
        KEYS,
        st.sampled_from(["$in", "$nin"]),
        st.lists(VALUES, max_size=3),
    )
    return st.one_of(st.builds(lambda k, v: {k: v}, KEYS, VALUES), simple, listed)


WHERE = st.recursive(
    _leaf(),
    lambda inner: st.builds(
        lambda op, parts: {op: parts},
        st.sampled_from(["$and", "$or"]),
        st.lists(inner, min_size=1, max_size=3),
    ),
    max_leaves=5,
)


@pytest.fixture(scope="module")
def population() -> Iterator[tuple[VectorStore, list[dict[str, Any]]]]:
    """Forty documents with every mix of the metadata values (and missing keys)."""
    metadatas = [
        {
            **({"k": k} if k is not None else {}),
            **({"m": m, "a.b": m} if m is not None else {}),
        }
        for k in [None, "a", "b", 1, -2, 0.5, True]
        for m in [None, "c", 2, 1.5, False]
    ][:40]
    store = open_qdrant_store(EMBEDDINGS)
    store.add_texts(
        [f"doc {i}" for i in range(len(metadatas))],
        metadatas,
        ids=[f"d{i}" for i in range(len(metadatas))],
    )
    yield store, metadatas
    store.client.close()  # type: ignore[attr-defined]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(where=WHERE)
def test_pushed_filters_keep_what_the_where_filter_keeps(
    population: tuple[VectorStore, list[dict[str, Any]]], where: dict[str, Any]
) -> None:
    store, metadatas = population
    adapter = adapter_for(store)
    matches = where_predicate(where)
    expected = {f"d{i}" for i, meta in enumerate(metadatas) if matches(meta)}
    assert set(adapter.ids_in(where)) == expected
    assert adapter.count(where) == len(expected)
    pushed = where_to_qdrant(where).filter
    found = store.client.scroll(store.collection_name, scroll_filter=pushed, limit=100)[0]  # type: ignore[attr-defined]
    assert expected <= {
        str(p.payload["doc_id"]) for p in found
    }  # the pushed filter keeps a superset


def test_documents_keep_their_ids_and_metadata() -> None:
    store = open_qdrant_store(EMBEDDINGS)
    metadata = {"user_id": "alice", "n": 3, "nested_ok": "x"}
    store.add_documents([Document("a memory", metadata=metadata, id="not-a-uuid:1")])
    [found] = store.get_by_ids(["not-a-uuid:1"])
    assert (found.id, found.page_content, found.metadata) == ("not-a-uuid:1", "a memory", metadata)
    [hit] = store.similarity_search("a memory", k=1)
    assert (hit.id, hit.metadata) == ("not-a-uuid:1", metadata)
    assert isinstance(adapter_for(store), QdrantAdapter)
    held = store.client.retrieve(store.collection_name, [point_id("not-a-uuid:1")])  # type: ignore[attr-defined]
    assert len(held) == 1
    store.delete(["not-a-uuid:1"])
    assert store.get_by_ids(["not-a-uuid:1"]) == []


def test_pages_follow_insertion_order_and_set_metadata_leaves_the_text() -> None:
    store = open_qdrant_store(EMBEDDINGS)
    adapter = adapter_for(store)
    ids = [f"m{i}" for i in range(2_500)]
    store.add_texts(
        [f"memory {i}" for i in range(2_500)], [{"user_id": "u"}] * 2_500, ids=ids, batch_size=500
    )
    assert [d.id for d in adapter.page({"user_id": "u"}, 3, 1_999)] == ["m1999", "m2000", "m2001"]
    assert [d.id for d in adapter.recent(2)] == ["m2498", "m2499"]
    assert adapter.ids_in({"user_id": "u"}) == ids
    [changed] = adapter.set_metadata({"m5": {"superseded_by": "m6"}})
    assert changed.page_content == "memory 5"
    [again] = adapter.get(["m5"])
    assert again.metadata == {"user_id": "u", "superseded_by": "m6"}
    assert adapter.add_new([Document("memory 5", id="m5"), Document("new one", id="n1")]) == {"n1"}


def test_open_qdrant_store_rejects_two_locations_and_another_dimension(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match="only one"):
        open_qdrant_store(EMBEDDINGS, path=tmp_path, url="http://localhost:6333")
    store = open_qdrant_store(EMBEDDINGS, path=tmp_path / "q")
    client = store.client  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="size 16"):
        open_qdrant_store(DeterministicFakeEmbedding(size=8), client=client)
    client.close()


def test_another_model_of_the_same_size_is_refused(tmp_path: Any) -> None:
    from cogito_lc.bench.hash_embeddings import HashEmbeddings

    store = open_qdrant_store(EMBEDDINGS, path=tmp_path / "q")
    client = store.client  # type: ignore[attr-defined]
    open_qdrant_store(HashEmbeddings(size=16), client=client)  # nothing stored: any model
    store.add_texts(["billing runs on port 8083"], ids=["m1"])

    with pytest.raises(ValueError, match=r"another embedding model of the same size.*cosine"):
        open_qdrant_store(HashEmbeddings(size=16), client=client)
    reopened = open_qdrant_store(DeterministicFakeEmbedding(size=16), client=client)
    assert [doc.id for doc in reopened.similarity_search("billing port", k=1)] == ["m1"]
    client.close()


def test_a_lazy_model_is_checked_against_an_existing_collection_on_first_use(
    tmp_path: Any,
) -> None:
    from cogito_lc.embeddings import LazyEmbeddings

    store = open_qdrant_store(EMBEDDINGS, path=tmp_path / "q")
    store.add_texts(["billing runs on port 8083"], [{"user_id": "u"}], ids=["m1"])
    client = store.client  # type: ignore[attr-defined]

    right = LazyEmbeddings(lambda: EMBEDDINGS)
    reopened = open_qdrant_store(right, client=client)
    adapter = adapter_for(reopened)
    assert adapter.count({"user_id": "u"}) == 1
    assert [doc.id for doc in adapter.get(["m1"])] == ["m1"]
    assert not right.loaded  # opened, counted and read without the model
    assert [doc.id for doc in reopened.similarity_search("billing port", k=1)] == ["m1"]
    assert right.loaded

    wrong = LazyEmbeddings(lambda: DeterministicFakeEmbedding(size=8))
    misfit = open_qdrant_store(wrong, client=client)
    assert not wrong.loaded
    with pytest.raises(ValueError, match="size 16, but the embedding model gives 8"):
        misfit.similarity_search("billing port", k=1)
    with pytest.raises(ValueError, match="size 16"):
        misfit.add_texts(["never stored"], ids=["m2"])
    assert adapter.get(["m2"]) == []
    # The same model serves a new collection, as the error advises, in the same process.
    small = open_qdrant_store(wrong, client=client, collection="small")
    small.add_texts(["kept here"], ids=["s1"])
    assert [doc.id for doc in small.similarity_search("kept here", k=1)] == ["s1"]
    with pytest.raises(ValueError, match="size 16"):
        misfit.similarity_search("billing port", k=1)

    fresh = LazyEmbeddings(lambda: EMBEDDINGS)
    open_qdrant_store(fresh, client=client, collection="new_one")
    assert fresh.loaded  # a new collection is sized from the model
    client.close()


def test_concurrent_writers_and_readers_in_local_mode(tmp_path: Any) -> None:
    """Local mode has no locks of its own: the store serialises every call to it."""
    store = open_qdrant_store(EMBEDDINGS, path=tmp_path / "q")
    adapter = adapter_for(store)
    errors: list[BaseException] = []

    def write(user: str) -> None:
        try:
            for start in range(0, 300, 10):
                docs = [
                    Document(f"{user} note {i}", metadata={"user_id": user}, id=f"{user}-{i}")
                    for i in range(start, start + 10)
                ]
                adapter.add_new(docs)
        except BaseException as error:
            errors.append(error)

    def read() -> None:
        try:
            for _ in range(30):
                adapter.count({"user_id": "alice"})
                adapter.page({"user_id": "bob"}, 5, 0)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=write, args=(u,)) for u in ("alice", "bob")]
    threads += [threading.Thread(target=read) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert adapter.count({"user_id": "alice"}) == adapter.count({"user_id": "bob"}) == 300
    assert len(adapter.ids_in(None)) == 600
    again = open_qdrant_store(EMBEDDINGS, path=tmp_path / "q")  # the same directory, same process
    assert again.client is store.client  # type: ignore[attr-defined]
    store.client.close()  # type: ignore[attr-defined]


def test_stores_over_a_callers_local_client_call_it_one_at_a_time() -> None:
    client = QdrantClient(location=":memory:")
    writer = open_qdrant_store(EMBEDDINGS, client=client)
    reader = adapter_for(open_qdrant_store(EMBEDDINGS, client=client))
    query = EMBEDDINGS.embed_query("note")
    errors: list[BaseException] = []
    done = threading.Event()

    def write() -> None:
        try:
            for i in itertools.count():
                if done.is_set():
                    return
                writer.add_texts([f"note {i}"], [{"user_id": f"u{i % 3}"}], ids=[f"n{i}"])
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=write)
    thread.start()
    try:
        for _ in range(100):
            reader.search_by_vectors(["q"], [query], [10], {"filter": {"user_id": "u1"}})
    finally:
        done.set()
        thread.join()
    assert errors == []
    assert reader.count() == len(reader.ids_in(None)) > 0


def test_paging_keeps_documents_that_share_an_insertion_order() -> None:
    from qdrant_client import models

    store = open_qdrant_store(EMBEDDINGS)
    client, name = store.client, store.collection_name  # type: ignore[attr-defined]
    points = [
        models.PointStruct(
            id=point_id(f"t{i}"),
            vector=[0.1] * 16,
            payload={
                "page_content": f"t{i}",
                "metadata": {},
                "doc_id": f"t{i}",
                "seq": 7 + i // 600,
            },
        )
        for i in range(1_201)
    ]
    client.upsert(name, points)
    adapter = adapter_for(store)
    assert len(set(adapter.ids_in(None))) == adapter.count() == 1_201
    assert len(adapter.page(None, 10, 1_195)) == 6


def test_a_second_writer_of_an_id_never_overwrites_the_first() -> None:
    from qdrant_client import models

    store = open_qdrant_store(EMBEDDINGS)
    adapter = adapter_for(store)
    adapter.add_new([Document("first", metadata={"user_id": "u"}, id="x")])
    adapter.set_metadata({"x": {"superseded_by": "y"}, "gone": {"k": 1}})
    store.add_texts(["second"], [{}], ids=["x"], update_mode=models.UpdateMode.INSERT_ONLY)
    [held] = adapter.get(["x"])
    assert held.page_content == "first"
    assert held.metadata == {"user_id": "u", "superseded_by": "y"}


def test_a_filter_qdrant_cannot_express_still_finds_k_documents() -> None:
    store = open_qdrant_store(EMBEDDINGS)
    store.add_texts(
        [f"note {i}" for i in range(30)],
        [{"user_id": "u", "day": f"2024-01-{i + 1:02d}"} for i in range(30)],
        ids=[f"n{i}" for i in range(30)],
    )
    adapter = adapter_for(store)
    where = {"$and": [{"user_id": "u"}, {"day": {"$gte": "2024-01-20"}}]}
    vector = EMBEDDINGS.embed_query("note")
    [run] = adapter.search_by_vectors(["note"], [vector], [5], {"filter": where})
    docs, _ = run
    assert len(docs) == 5
    assert all(doc.metadata["day"] >= "2024-01-20" for doc in docs)
    assert adapter.count(where) == 11


def test_a_store_without_a_directory_keeps_its_state_in_qdrant() -> None:
    """Snapshots, vocabulary maps and forget audits live beside the memories (as on a server)."""
    from cogito_lc import MemoryStore
    from cogito_lc.memory.state import QdrantStateStore

    store = open_qdrant_store(EMBEDDINGS)
    memory = MemoryStore(store, scope={"user_id": "alice"})
    assert isinstance(memory.state, QdrantStateStore)
    stored = memory.store("My phone number is 555-0100.")
    memory.forget(ids=[stored.id or ""])
    [record] = memory.forget_log
    names = [
        str(point.payload["name"])
        for point in store.client.scroll("cogito_memory-cogito-state", limit=100)[0]  # type: ignore[attr-defined]
    ]
    [name] = [n for n in names if n.startswith("forget-audit-")]
    again = MemoryStore(store, scope={"user_id": "alice"})  # another process on the server
    assert again.state is not None
    kept = again.state.read(name)
    assert kept is not None
    assert stored.id in kept
    assert "555-0100" not in kept
    assert record["ids"] == [stored.id]


def _library_ranking(client: Any, collection: str, vector: list[float], k: int) -> list[Any]:
    from qdrant_client import models

    [response] = client.query_batch_points(
        collection, requests=[models.QueryRequest(query=vector, limit=k, with_payload=False)]
    )
    return [(point.id, point.score) for point in response.points]


@pytest.fixture(params=["numpy", "torch"])
def ranked_on(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, numpy_products: list[int]
) -> list[int]:
    """Rank on numpy's product (torch not loaded) or on torch's; the numpy products, counted."""
    if request.param == "torch":
        pytest.importorskip("torch")
    else:
        monkeypatch.setitem(sys.modules, "torch", None)  # as if never imported
    return numpy_products


def test_unfiltered_local_searches_rank_as_qdrant_does(ranked_on: list[int]) -> None:
    from cogito_lc.stores._qdrant_local import local_nearest

    store = open_qdrant_store(EMBEDDINGS)
    ids = [f"m{i}" for i in range(300)]
    store.add_texts([f"memory number {i}" for i in range(300)], [{"user_id": "u"}] * 300, ids=ids)
    store.delete(ids[::7])  # deleted points must not come back
    client, collection = store.client, store.collection_name  # type: ignore[attr-defined]
    queries = [EMBEDDINGS.embed_query(f"question {i}") for i in range(5)]
    ks = [1, 10, 40, 299, 300]
    ranked = local_nearest(client, collection, "", queries, ks)
    assert ranked is not None
    for run, vector, k in zip(ranked, queries, ks, strict=True):
        expected = _library_ranking(client, collection, vector, k)
        assert [point for point, _ in run] == [point for point, _ in expected]
        assert [score for _, score in run] == pytest.approx([s for _, s in expected], abs=1e-5)
    assert len(ranked[-1]) == 300 - len(ids[::7])

    adapter = adapter_for(store)
    [(docs, _)] = adapter.search_by_vectors(["q"], [queries[1]], [10], {"filter": None})
    assert [point_id(doc.id or "") for doc in docs] == [p for p, _ in ranked[1]]
    assert all(doc.page_content == f"memory number {doc.id[1:]}" for doc in docs)  # type: ignore[index]
    on_numpy = sys.modules.get("torch") is None
    assert ranked_on == ([5, 1] if on_numpy else [])


def test_tied_points_come_newest_first_and_a_smaller_k_is_a_prefix(
    ranked_on: list[int],
) -> None:
    from cogito_lc.stores._qdrant_local import local_nearest

    store = open_qdrant_store(EMBEDDINGS)
    texts = [f"memory number {i}" for i in range(100)] + ["the same words"] * 40
    ids = [f"m{i}" for i in range(len(texts))]
    store.add_texts(texts, ids=ids)
    client, collection = store.client, store.collection_name  # type: ignore[attr-defined]
    query = EMBEDDINGS.embed_query("the same words")
    ks = [3, 5, 10, 45]
    ranked = local_nearest(client, collection, "", [query] * len(ks), ks)
    assert ranked is not None
    newest = [point_id(doc_id) for doc_id in reversed(ids[100:])]
    for run, k in zip(ranked, ks, strict=True):
        expected = _library_ranking(client, collection, query, k)  # ties in no set order
        assert [score for _, score in run] == pytest.approx([s for _, s in expected], abs=1e-5)
        assert [point for point, _ in run][:40] == newest[:k]
    assert all(run[: len(shorter)] == shorter for shorter, run in itertools.pairwise(ranked))


def test_an_empty_batch_finds_nothing_and_a_nan_query_is_an_error() -> None:
    from cogito_lc.stores._qdrant_local import local_nearest

    store = open_qdrant_store(EMBEDDINGS)
    store.add_texts(["one memory"], ids=["m1"])
    client, collection = store.client, store.collection_name  # type: ignore[attr-defined]
    assert local_nearest(client, collection, "", [], []) == []
    with pytest.raises(ValueError, match="NaN"):
        local_nearest(client, collection, "", [[float("nan")] * 16], [1])


@pytest.mark.parametrize("where", [{"account": 2**53 + 1}, {"account": {"$in": [2**53 + 1]}}])
def test_integers_past_a_floats_precision_are_matched_exactly(where: dict[str, Any]) -> None:
    store = open_qdrant_store(EMBEDDINGS)
    store.add_texts(
        ["alice's account", "bob's account"],
        [{"account": 2**53 + 1}, {"account": 2**53}],
        ids=["alice", "bob"],
    )
    adapter = adapter_for(store)
    assert adapter.ids_in(where) == ["alice"]
    assert adapter.count(where) == 1
    assert [doc.id for doc in adapter.page(where, 10, 0)] == ["alice"]
    vector = EMBEDDINGS.embed_query("account")
    [(docs, _)] = adapter.search_by_vectors(["account"], [vector], [2], {"filter": where})
    assert [doc.id for doc in docs] == ["alice"]
    assert set(adapter.ids_in({"account": {"$ne": 2**53 + 1}})) == {"bob"}


@pytest.mark.parametrize(
    "where",
    [
        {"user_id": "u1"},
        {"$and": [{"user_id": "u1"}, {"n": {"$gte": 2}}]},
        {"$or": [{"n": {"$in": [1, 3]}}, {"user_id": "u0"}]},
        {"user_id": "nobody"},
    ],
)
def test_filtered_local_searches_find_what_qdrants_filter_finds(
    where: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from qdrant_client import models

    store = open_qdrant_store(EMBEDDINGS)
    ids = [f"m{i}" for i in range(200)]
    metadatas = [{"user_id": f"u{i % 3}", "n": i % 5} for i in range(200)]
    store.add_texts([f"memory number {i}" for i in range(200)], metadatas, ids=ids)
    store.delete(ids[::11])
    client, collection = store.client, store.collection_name  # type: ignore[attr-defined]
    pushed = where_to_qdrant(where, "metadata")
    assert pushed.exact
    queries = [EMBEDDINGS.embed_query(f"question {i}") for i in range(3)]
    library_search = client.query_batch_points
    searched_by_the_library: list[Any] = []
    monkeypatch.setattr(client, "query_batch_points", searched_by_the_library.append, raising=False)
    runs = adapter_for(store).search_by_vectors(["q"] * 3, queries, [5, 20, 60], {"filter": where})
    assert searched_by_the_library == []  # ranked in one product, filter checked once
    for (docs, _), vector, k in zip(runs, queries, [5, 20, 60], strict=True):
        request = models.QueryRequest(query=vector, filter=pushed.filter, limit=k)
        [expected] = library_search(collection, requests=[request])
        assert [point_id(doc.id or "") for doc in docs] == [p.id for p in expected.points]
        assert all(where_predicate(where)(doc.metadata) for doc in docs)


def _payloads_checked(adapter: QdrantAdapter, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The payloads the adapter's local-mode filter checks from now on, in order."""
    checked: list[Any] = []
    test = adapter._payload_test

    def counting(translated: Any) -> Any:
        keep = test(translated)
        assert keep is not None
        return lambda payload: checked.append(payload) or keep(payload)

    monkeypatch.setattr(adapter, "_payload_test", counting)
    return checked


def test_a_remembered_filter_sees_every_write_since(monkeypatch: pytest.MonkeyPatch) -> None:
    from qdrant_client import models

    from cogito_lc.stores import _qdrant_local

    store = open_qdrant_store(EMBEDDINGS)
    ids = [f"m{i}" for i in range(60)]
    store.add_texts(
        [f"memory number {i}" for i in range(60)],
        [{"user_id": f"u{i % 2}"} for i in range(60)],
        ids=ids,
    )
    adapter = adapter_for(store)
    assert isinstance(adapter, QdrantAdapter)
    client, collection = store.client, store.collection_name  # type: ignore[attr-defined]
    where = {"user_id": "u1"}
    pushed = where_to_qdrant(where, "metadata")
    query = EMBEDDINGS.embed_query("memory number 3")
    checked = _payloads_checked(adapter, monkeypatch)

    def found() -> list[Any]:
        [(docs, _)] = adapter.search_by_vectors(["q"], [query], [60], {"filter": where})
        return [point_id(doc.id or "") for doc in docs]

    def qdrant_finds() -> list[Any]:
        request = models.QueryRequest(query=query, filter=pushed.filter, limit=60)
        [response] = client.query_batch_points(collection, requests=[request])
        return [point.id for point in response.points]

    assert found() == qdrant_finds()
    assert len(checked) == 60
    checked.clear()
    assert found() == qdrant_finds()
    assert checked == []  # nothing written: nothing checked again
    adapter.set_metadata({"m0": {"user_id": "u1"}, "m1": {"user_id": "u0"}})  # in and out
    store.delete(["m3"])
    store.add_texts(["memory number 60", "memory 61"], [{"user_id": "u1"}] * 2, ids=["m60", "m61"])
    store.add_texts(["memory number 5, again"], [{"user_id": "u0"}], ids=["m5"])  # rewritten
    expected = qdrant_finds()
    assert found() == expected
    assert len(checked) == 5  # the three payloads replaced and the two new (m3 is only marked)
    assert {point_id("m0"), point_id("m60")} <= set(expected)
    assert not {point_id(i) for i in ("m1", "m3", "m5")} & set(expected)
    assert len(_qdrant_local._KEPT) >= 1


def test_local_counts_equal_qdrants_and_follow_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    from qdrant_client import models

    from cogito_lc.stores.qdrant import _ordered_points

    store = open_qdrant_store(EMBEDDINGS)
    ids = [f"m{i}" for i in range(90)]
    store.add_texts(
        [f"memory number {i}" for i in range(90)],
        [{"user_id": f"u{i % 3}", "n": i % 4} for i in range(90)],
        ids=ids,
    )
    store.delete(ids[::10])
    client, collection = store.client, store.collection_name  # type: ignore[attr-defined]
    unordered = models.PointStruct(  # written around cogito-lc: no insertion order
        id=point_id("raw"),
        vector=EMBEDDINGS.embed_query("raw"),
        payload={"page_content": "raw", "metadata": {"user_id": "u1"}},
    )
    client.upsert(collection, [unordered])
    adapter = adapter_for(store)
    assert isinstance(adapter, QdrantAdapter)
    wheres: list[dict[str, Any] | None] = [
        None,
        {"user_id": "u1"},
        {"$and": [{"user_id": "u1"}, {"n": {"$gte": 2}}]},
        {"user_id": "nobody"},
    ]

    def qdrant_counts(where: dict[str, Any] | None) -> int:
        ordered = _ordered_points(where_to_qdrant(where, "metadata").filter)
        return int(client.count(collection, count_filter=ordered, exact=True).count)

    expected = [qdrant_counts(where) for where in wheres]
    library_count = client.count
    counted_by_the_library: list[Any] = []
    monkeypatch.setattr(client, "count", counted_by_the_library.append, raising=False)
    assert [adapter.count(where) for where in wheres] == expected
    assert expected[0] == 81  # the unordered point is not counted, as ids_in does not list it
    adapter.set_metadata({"m1": {"user_id": "u1"}})
    store.delete(["m4"])
    store.add_texts(["memory number 90"], [{"user_id": "u1", "n": 3}], ids=["m90"])
    monkeypatch.setattr(client, "count", library_count, raising=False)
    expected = [qdrant_counts(where) for where in wheres]
    monkeypatch.setattr(client, "count", counted_by_the_library.append, raising=False)
    assert [adapter.count(where) for where in wheres] == expected
    assert counted_by_the_library == []
    assert len(adapter.ids_in({"user_id": "u1"})) == expected[1]


def test_a_reopened_collection_ranks_as_qdrant_does(tmp_path: Any) -> None:
    from qdrant_client import QdrantClient, models

    from cogito_lc.stores._qdrant_local import local_nearest

    vectors = [EMBEDDINGS.embed_query(f"memory {i}") for i in range(50)]  # not unit length
    client = QdrantClient(path=str(tmp_path))
    client.create_collection(
        "c", vectors_config=models.VectorParams(size=16, distance=models.Distance.COSINE)
    )
    client.upsert("c", [models.PointStruct(id=i, vector=v) for i, v in enumerate(vectors)])
    client.close()
    reopened = QdrantClient(path=str(tmp_path))  # reads the vectors back as they were given
    query = EMBEDDINGS.embed_query("question")
    ranked = local_nearest(reopened, "c", "", [query], [10])  # before any search of the client
    expected = _library_ranking(reopened, "c", query, 10)
    assert ranked is not None
    assert [p for p, _ in ranked[0]] == [p for p, _ in expected]
    assert [s for _, s in ranked[0]] == pytest.approx([s for _, s in expected], abs=1e-5)
    assert reopened._client.collections["c"].vectors[""].dtype == np.float32  # read as float64
    reopened.upsert("c", [models.PointStruct(id=50, vector=query)])  # written after the change
    ranked = local_nearest(reopened, "c", "", [query], [10])
    expected = _library_ranking(reopened, "c", query, 10)
    assert ranked is not None
    assert ranked[0][0] == (50, pytest.approx(1.0, abs=1e-5))
    assert [p for p, _ in ranked[0]] == [p for p, _ in expected]
    reopened.close()


def test_warm_up_readies_a_reopened_collection_and_its_scope(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cogito_lc import MemoryStore
    from cogito_lc.stores import _qdrant_local

    store = open_qdrant_store(EMBEDDINGS, path=tmp_path)
    ids = [f"m{i}" for i in range(40)]
    store.add_texts(
        [f"memory number {i}" for i in range(40)],
        [{"user_id": f"u{i % 2}"} for i in range(40)],
        ids=ids,
    )
    store.client.close()  # type: ignore[attr-defined]
    reopened = open_qdrant_store(EMBEDDINGS, path=tmp_path)  # vectors read back as float64
    local = reopened.client._client.collections["cogito_memory"]  # type: ignore[attr-defined]
    assert local.vectors[""].dtype != np.float32
    memory = MemoryStore(reopened, scope={"user_id": "u1"})
    memory.warm_up()
    assert local.vectors[""].dtype == np.float32
    remembered = _qdrant_local._KEPT[local]
    assert any('"u1"' in key and not key.startswith("ordered") for key in remembered)
    adapter = adapter_for(reopened)
    assert isinstance(adapter, QdrantAdapter)
    checked = _payloads_checked(adapter, monkeypatch)
    vector = EMBEDDINGS.embed_query("memory number 3")
    [(docs, _)] = adapter.search_by_vectors(["q"], [vector], [5], {"filter": memory.scope.where()})
    assert len(docs) == 5
    assert all(doc.metadata["user_id"] == "u1" for doc in docs)
    assert checked == []  # the scope's points were found at warm-up
    reopened.client.close()  # type: ignore[attr-defined]


def test_local_ranking_declines_a_collection_it_does_not_know() -> None:
    from qdrant_client import QdrantClient, models

    from cogito_lc.stores._qdrant_local import local_nearest

    client = QdrantClient(location=":memory:")
    client.create_collection(
        "euclid", vectors_config=models.VectorParams(size=2, distance=models.Distance.EUCLID)
    )
    client.upsert("euclid", [models.PointStruct(id=1, vector=[1.0, 0.0])])
    assert local_nearest(client, "euclid", "", [[1.0, 0.0]], [1]) is None
    assert local_nearest(client, "missing", "", [[1.0, 0.0]], [1]) is None
    assert local_nearest(client, "euclid", "named", [[1.0, 0.0]], [1]) is None
