"""The lexical indexes: SQLite FTS5 on disk, bm25s in memory, and their sync with the store."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

from cogito_lc._core.filters import where_predicate
from cogito_lc.stores import (
    Bm25LexicalIndex,
    LexicalIndex,
    LexicalSync,
    SqliteLexicalIndex,
    bm25s_index,
    lexical_sync_for,
)
from tests.unit_tests.conftest import HashEmbeddings

DOCS = [
    Document(page_content="billing runs on port 8083", id="port", metadata={"user_id": "a"}),
    Document(page_content="billing invoices are monthly", id="inv", metadata={"user_id": "b"}),
    Document(
        page_content="search latency budget is p95 under 250 ms",
        id="lat",
        metadata={"user_id": "a", "topic": "perf", "n": 3},
    ),
]

NASTY_QUERIES = [
    'port "8083',
    "billing AND OR NOT",
    "NEAR(billing port, 2)",
    "bill* ^port",
    "topic:perf",
    "((billing",
    "billing)) -- ;DROP TABLE docs",
    '"',
    "ポート 8083 の請求",
    "账单 服务",
    "счёт порт",
    "🚀🔥 billing 💸",
    "",
    "   ",
    "\x00billing",
    "a of the",
]


@pytest.fixture
def sqlite_index(tmp_path: Path) -> Iterator[SqliteLexicalIndex]:
    index = SqliteLexicalIndex(tmp_path / "lexical.sqlite3")
    yield index
    index.close()


@pytest.fixture(params=["sqlite", "bm25s"])
def any_index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LexicalIndex]:
    if request.param == "bm25s":
        yield Bm25LexicalIndex()
        return
    index = SqliteLexicalIndex(tmp_path / "lexical.sqlite3")
    yield index
    index.close()


def _ids(hits: list[tuple[Document, float]]) -> list[str | None]:
    return [doc.id for doc, _ in hits]


def test_both_indexes_follow_the_protocol(any_index: LexicalIndex) -> None:
    assert isinstance(any_index, LexicalIndex)
    any_index.upsert(DOCS)
    assert any_index.count() == 3
    assert any_index.ids() == {"port", "inv", "lat"}
    hits = any_index.search("which port does billing use", k=5)
    assert _ids(hits) == ["port", "inv"]
    assert hits[0][1] > hits[1][1] > 0
    assert hits[0][0].metadata == {"user_id": "a"}
    assert hits[0][0].page_content == "billing runs on port 8083"
    scores = any_index.scores("port 8083", ["port", "lat", "unknown"])
    assert scores["port"] > 0
    assert scores["lat"] == scores["unknown"] == 0.0


def test_upsert_replaces_and_delete_removes(any_index: LexicalIndex) -> None:
    any_index.upsert(DOCS)
    any_index.upsert([Document(page_content="billing moved to port 9090", id="port")])
    assert _ids(any_index.search("8083", k=5)) == []
    assert _ids(any_index.search("9090", k=5)) == ["port"]
    any_index.delete(["port", "never-there"])
    assert _ids(any_index.search("9090 billing", k=5)) == ["inv"]
    assert any_index.count() == 2


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ({"user_id": "a"}, ["port", "lat"]),
        ({"user_id": {"$ne": "a"}}, ["inv"]),
        ({"topic": "perf"}, ["lat"]),
        ({"topic": {"$ne": "perf"}}, ["port", "inv"]),
        ({"n": {"$gt": 2}}, ["lat"]),
        ({"n": {"$gt": "2"}}, []),
        ({"user_id": {"$in": ["b", "c"]}}, ["inv"]),
        ({"topic": {"$nin": ["perf"]}}, ["port", "inv"]),
        ({"$or": [{"user_id": "b"}, {"topic": "perf"}]}, ["inv", "lat"]),
        ({"$and": [{"user_id": "a"}, {"n": 3}]}, ["lat"]),
    ],
)
def test_where_filters_match_like_chroma(
    any_index: LexicalIndex, where: dict[str, Any], expected: list[str]
) -> None:
    any_index.upsert(DOCS)
    predicate = where_predicate(where)
    assert [d.id for d in DOCS if predicate(d.metadata)] == expected, "the reference itself"
    found = _ids(any_index.search("billing port latency budget", k=10, where=where))
    assert sorted(found, key=str) == sorted(expected)
    assert any_index.count(where) == len(expected)


@pytest.mark.parametrize("query", NASTY_QUERIES)
def test_any_query_is_searched_as_plain_words(sqlite_index: SqliteLexicalIndex, query: str) -> None:
    sqlite_index.upsert([*DOCS, Document(page_content="ポート 8083 の請求 🚀", id="ja")])
    hits = sqlite_index.search(query, k=5)
    assert all(score > 0 for _, score in hits)
    if "billing" in query:
        assert "port" in _ids(hits) or "inv" in _ids(hits)


def test_non_latin_words_are_found(sqlite_index: SqliteLexicalIndex) -> None:
    sqlite_index.upsert([Document(page_content="счёт отправлен клиенту", id="ru"), *DOCS])
    assert _ids(sqlite_index.search("где счёт?", k=3)) == ["ru"]


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.text(max_size=60))
def test_no_query_text_raises(sqlite_index: SqliteLexicalIndex, query: str) -> None:
    if sqlite_index.count() == 0:
        sqlite_index.upsert(DOCS)
    hits = sqlite_index.search(query, k=3)
    assert all(score > 0 for _, score in hits)
    assert set(sqlite_index.scores(query, ["port", "inv"])) == {"port", "inv"}


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    words=st.lists(
        st.sampled_from(["AND", "OR", "NOT", "NEAR", "*", "^", ":", "(", ")", '"', "port", "-"]),
        max_size=8,
    )
)
def test_fts5_syntax_is_never_parsed(sqlite_index: SqliteLexicalIndex, words: list[str]) -> None:
    if sqlite_index.count() == 0:
        sqlite_index.upsert(DOCS)
    found = _ids(sqlite_index.search("".join(words) + " " + " ".join(words), k=3))
    assert found == (["port"] if "port" in words else [])


def test_the_index_persists_and_is_shared_between_connections(tmp_path: Path) -> None:
    path = tmp_path / "lexical.sqlite3"
    first = SqliteLexicalIndex(path)
    assert first.rebuild_reason == "missing"
    first.upsert(DOCS)
    second = SqliteLexicalIndex(path)
    assert second.rebuild_reason is None
    assert _ids(second.search("8083", k=3)) == ["port"]
    second.delete(["port"])
    assert _ids(first.search("8083", k=3)) == []
    assert first._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    first.close()
    second.close()


def test_a_corrupt_file_is_moved_aside_and_started_afresh(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "lexical.sqlite3"
    path.write_bytes(b"this is not an SQLite database" * 100)
    with caplog.at_level(logging.ERROR):
        index = SqliteLexicalIndex(path)
    assert "is unreadable" in caplog.text
    assert "rebuilding from the vector store" in caplog.text
    assert index.rebuild_reason == "unreadable"
    assert index.count() == 0
    assert list(tmp_path.glob("lexical.sqlite3.corrupt-*"))
    index.close()


# -- the in-memory index -----------------------------------------------------------


def test_bm25s_index_is_built_once_per_write_never_on_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    builds: list[int] = []
    original = bm25s_index.Bm25Index.__init__

    def counted(self: bm25s_index.Bm25Index, documents: Any) -> None:
        builds.append(len(documents))
        original(self, documents)

    monkeypatch.setattr(bm25s_index.Bm25Index, "__init__", counted)
    index = Bm25LexicalIndex()
    builds.clear()
    index.upsert(DOCS)
    assert builds == [3], "one batch of three documents: one build"
    for _ in range(5):
        index.search("billing", k=3, where={"user_id": "a"})
        index.scores("billing", ["port"])
    assert builds == [3], "searches never build"
    index.delete(["never-there"])
    assert builds == [3], "a delete of nothing held builds nothing"


# -- keeping the index in step with the store ----------------------------------------


@pytest.fixture
def persistent(tmp_path: Path, embeddings: HashEmbeddings) -> Iterator[Chroma]:
    store = Chroma(
        f"unit-{uuid.uuid4().hex[:12]}", embeddings, persist_directory=str(tmp_path / "chroma")
    )
    yield store
    store.delete_collection()


def _reopen(store: Chroma) -> Chroma:
    directory = store._client.get_settings().persist_directory
    return Chroma(store._collection.name, store.embeddings, persist_directory=directory)


def test_a_persistent_chroma_store_gets_an_fts5_file_beside_it(persistent: Chroma) -> None:
    sync = lexical_sync_for(persistent)
    assert sync is not None
    assert isinstance(sync.index, SqliteLexicalIndex)
    assert sync.index.path.parent == Path(persistent._client.get_settings().persist_directory)
    assert lexical_sync_for(persistent) is sync, "one per store object"
    assert isinstance(
        lexical_sync_for(InMemoryVectorStore(HashEmbeddings())).index, Bm25LexicalIndex
    )  # type: ignore[union-attr]


def test_direct_writes_are_reconciled_with_a_log_line(
    persistent: Chroma, caplog: pytest.LogCaptureFixture
) -> None:
    sync = LexicalSync(persistent, check_interval=0.0)
    persistent.add_texts(["billing runs on port 8083"], ids=["port"])
    with caplog.at_level(logging.WARNING):
        assert _ids(sync.search("8083", k=3)) == ["port"]
    assert "building it from the 1 memories" in caplog.text
    caplog.clear()
    persistent.add_texts(["error E4711 means the ledger lock timed out"], ids=["rare"])
    persistent.delete(ids=["port"])
    persistent.add_texts(["one more note"], ids=["more"])
    with caplog.at_level(logging.WARNING):
        assert _ids(sync.search("E4711 8083", k=3)) == ["rare"]
    assert "out of step with the vector store" in caplog.text
    assert "added 2, removed 1" in caplog.text


def test_interrupted_writes_are_resynced_on_start(
    persistent: Chroma, caplog: pytest.LogCaptureFixture
) -> None:
    sync = LexicalSync(persistent)
    persistent.add_texts(["kept note", "old text", "doomed note"], ids=["k", "u", "d"])
    sync.reindex()
    # A writer marked its ids, wrote the vector store, and died before the lexical write:
    sync.mark_pending(["u", "d", "new"])
    persistent.add_texts(["new text about zebras"], ids=["u"])
    persistent.delete(ids=["d"])
    persistent.add_texts(["a new note about giraffes"], ids=["new"])
    sync.index.close()  # type: ignore[attr-defined]

    restarted = LexicalSync(_reopen(persistent))
    assert restarted.index.pending() == {"u", "d", "new"}
    with caplog.at_level(logging.WARNING):
        assert _ids(restarted.search("zebras giraffes", k=5)) in (["u", "new"], ["new", "u"])
    assert "3 writes were interrupted" in caplog.text
    assert _ids(restarted.search("old doomed", k=5)) == []
    assert restarted.index.pending() == set()
    assert restarted.index.count() == persistent._collection.count() == 3


def test_a_missing_or_corrupt_file_is_rebuilt_from_the_store(
    persistent: Chroma, caplog: pytest.LogCaptureFixture
) -> None:
    sync = LexicalSync(persistent)
    persistent.add_texts(["billing runs on port 8083", "search latency"], ids=["port", "lat"])
    sync.reindex()
    path: Path = sync.index.path  # type: ignore[attr-defined]
    sync.index.close()  # type: ignore[attr-defined]
    path.write_bytes(b"\x00garbage" * 512)
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    with caplog.at_level(logging.WARNING):
        restarted = LexicalSync(_reopen(persistent))
        assert _ids(restarted.search("8083", k=3)) == ["port"]
    assert "is unreadable" in caplog.text
    assert "building it from the 2 memories" in caplog.text


def test_an_index_broken_while_in_use_is_rebuilt(
    persistent: Chroma, caplog: pytest.LogCaptureFixture
) -> None:
    sync = LexicalSync(persistent)
    persistent.add_texts(["billing runs on port 8083"], ids=["port"])
    sync.reindex()
    index: SqliteLexicalIndex = sync.index  # type: ignore[assignment]
    index._conn.execute("DROP TABLE docs")
    with caplog.at_level(logging.ERROR):
        assert _ids(sync.search("8083", k=3)) == ["port"]
    assert "is unreadable" in caplog.text


def test_sqlite_errors_other_than_corruption_are_not_hidden(tmp_path: Path) -> None:
    index = SqliteLexicalIndex(tmp_path / "lexical.sqlite3")
    index.close()
    with pytest.raises(sqlite3.ProgrammingError):
        index.count()


def test_covers_all_reads_the_scope_column_indexes(sqlite_index: SqliteLexicalIndex) -> None:
    sqlite_index.upsert([DOCS[0], DOCS[2]])  # both user "a"
    assert sqlite_index.covers_all({"user_id": "a"}) is True
    assert sqlite_index.covers_all({"user_id": "b"}) is False
    assert sqlite_index.covers_all({"$and": [{"user_id": "a"}, {"agent_id": "x"}]}) is False
    assert sqlite_index.covers_all({"topic": "perf"}) is None, "not an indexed column: count"
    assert sqlite_index.covers_all({"user_id": {"$ne": "b"}}) is None
    sqlite_index.upsert([Document(page_content="no scope at all", id="loose")])
    assert sqlite_index.covers_all({"user_id": "a"}) is False
    sqlite_index.delete(["loose"])
    sqlite_index.upsert([DOCS[1]])
    assert sqlite_index.covers_all({"user_id": "a"}) is False


def test_warm_up_starts_the_index_and_reads_its_postings_before_any_search(
    persistent: Chroma,
) -> None:
    sync = LexicalSync(persistent)
    persistent.add_texts(["kiln note", "glaze note"], ids=["k", "g"])
    sync.reindex()
    sync.index.close()  # type: ignore[attr-defined]

    restarted = LexicalSync(_reopen(persistent))
    index = restarted.index
    assert isinstance(index, SqliteLexicalIndex)
    assert not index.postings_ready
    restarted.warm_up()
    assert index.postings_ready
    assert _ids(restarted.search("kiln", k=2)) == ["k"]
    index.close()


def test_the_periodic_count_check_runs_beside_reads_and_reconciles(persistent: Chroma) -> None:
    sync = LexicalSync(persistent, check_interval=0.01)
    persistent.add_texts(["billing runs on port 8083"], ids=["port"])
    assert _ids(sync.search("8083", k=3)) == ["port"]  # start-up builds the index at once
    counting, release = threading.Event(), threading.Event()
    count = sync.adapter.count

    def slow_count() -> int:
        counting.set()
        assert release.wait(10)
        return count()

    sync.adapter.count = slow_count  # type: ignore[method-assign]
    persistent.add_texts(["error E4711 means the ledger lock timed out"], ids=["rare"])
    time.sleep(0.02)
    assert _ids(sync.search("8083", k=3)) == ["port"]  # starts the check, does not wait for it
    assert counting.wait(5)
    assert _ids(sync.search("E4711", k=3)) == []  # still checking, still not waiting
    release.set()
    deadline = time.monotonic() + 10
    while _ids(sync.search("E4711", k=3)) != ["rare"]:
        assert time.monotonic() < deadline, "the direct write was never reconciled"
        time.sleep(0.02)


def test_a_read_does_not_wait_for_a_reconcile_under_way(persistent: Chroma) -> None:
    sync = LexicalSync(persistent, check_interval=0.01)
    persistent.add_texts(["billing runs on port 8083"], ids=["port"])
    assert _ids(sync.search("8083", k=3)) == ["port"]
    reconciling, release = threading.Event(), threading.Event()
    ids = sync.index.ids

    def slow_ids() -> set[str]:
        reconciling.set()
        assert release.wait(10)
        return ids()

    sync.index.ids = slow_ids  # type: ignore[method-assign]
    persistent.add_texts(["error E4711 means the ledger lock timed out"], ids=["rare"])
    time.sleep(0.02)
    sync.search("8083", k=3)  # starts the check, which reconciles holding the sync's lock
    assert reconciling.wait(5)
    time.sleep(0.02)  # past the interval: the next read would start another check
    reader = threading.Thread(target=sync.search, args=("8083", 3))
    reader.start()
    reader.join(timeout=2)
    done = not reader.is_alive()
    release.set()
    reader.join()
    assert done, "a read waited for the reconcile"
