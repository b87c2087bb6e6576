"""The FTS5 index's postings in memory rank as FTS5's ``bm25()`` does, through every write."""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from langchain_core.documents import Document

from cogito_lc.stores import SqliteLexicalIndex, _fts_postings
from cogito_lc.stores._fts_postings import Postings
from cogito_lc.stores._fts_ranking import CorpusStats, bm25_score

WORDS = ["what", "did", "caroline", "say", "about", "group", "pottery", "workshop", "camping"]
QUERIES = [
    "what did caroline say about the pottery workshop",
    "caroline group",
    "camping w17 w3",
    "workshop",
    "nothing matches zzz",
]


def _doc(rng: random.Random, doc_id: str) -> Document:
    words = rng.choices(WORDS, k=rng.randint(1, 7))
    words += [f"w{rng.randint(0, 60)}" for _ in range(rng.randint(0, 4))]
    return Document(page_content=" ".join(words), id=doc_id, metadata={"user_id": "a"})


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[SqliteLexicalIndex, SqliteLexicalIndex]]:
    """One index file, searched in memory and in SQL."""
    memory = SqliteLexicalIndex(tmp_path / "lexical.sqlite3")
    sql = SqliteLexicalIndex(tmp_path / "lexical.sqlite3", postings_in_memory=False)
    memory.load_postings()
    yield memory, sql
    memory.close()
    sql.close()


def _ranked(index: SqliteLexicalIndex, query: str, k: int = 400) -> list[tuple[str | None, float]]:
    return [(doc.id, score) for doc, score in index.search(query, k=k)]


def _wait_until_ready(index: SqliteLexicalIndex) -> None:
    deadline = time.monotonic() + 10
    while not index.postings_ready:
        assert time.monotonic() < deadline, "the postings were never read"
        index.search("pottery", k=1)  # a read starts at a search, at a bounded rate
        time.sleep(0.01)


def _assert_same_ranking(memory: SqliteLexicalIndex, sql: SqliteLexicalIndex) -> None:
    assert memory.postings_ready
    for query in QUERIES:
        in_memory, in_sql = _ranked(memory, query), _ranked(sql, query)
        assert dict(in_memory) == pytest.approx(dict(in_sql), rel=1e-9), query
        for k in (1, 5, 10):  # the same rows in the same order, ties at the cut included
            assert _ranked(memory, query, k) == _ranked(sql, query, k), (query, k)
        scores = [score for _, score in in_memory]
        assert scores == sorted(scores, reverse=True)


def _rowid(index: SqliteLexicalIndex, doc_id: str) -> int | None:
    with sqlite3.connect(index.path) as conn:
        row = conn.execute("SELECT rowid FROM docs WHERE id = ?", (doc_id,)).fetchone()
    return None if row is None else int(row[0])


def test_postings_score_as_the_python_bm25() -> None:
    rows = [(1, "port billing port"), (2, "billing"), (5, "latency budget port")]
    postings = Postings(rows)
    stats = CorpusStats(rows=3, tokens=7, document_frequency={"port": 2, "billing": 2})
    ranked = postings.top(["port", "billing"], k=3)
    assert [rowid for rowid, _ in ranked] == [1, 2, 5]
    for rowid, score in ranked:
        terms = dict(rows)[rowid]
        assert score == pytest.approx(bm25_score(["port", "billing"], terms, stats), rel=1e-12)
    assert [rowid for rowid, _ in postings.top(["port", "billing"], k=1)] == [1]
    assert postings.top(["absent"], k=3) == []


def test_postings_follow_removals_and_reused_rowids() -> None:
    postings = Postings([(1, "alpha beta"), (2, "beta")])
    postings.remove([(1, "alpha beta")])
    postings.add([(1, "gamma")])
    assert postings.top(["alpha"], k=5) == []
    assert {rowid for rowid, _ in postings.top(["beta", "gamma"], k=5)} == {1, 2}
    assert (postings.rows, postings.tokens) == (2, 2)


def test_in_memory_search_equals_fts5_through_upserts_replacements_and_deletes(
    pair: tuple[SqliteLexicalIndex, SqliteLexicalIndex],
) -> None:
    memory, sql = pair
    rng = random.Random(3)
    memory.upsert([_doc(rng, f"d{i}") for i in range(300)])
    _assert_same_ranking(memory, sql)
    memory.upsert([_doc(rng, f"d{i}") for i in range(0, 300, 7)])  # replaced texts
    memory.delete([f"d{i}" for i in range(1, 300, 5)])
    newest = max(range(300), key=lambda i: _rowid(memory, f"d{i}") or -1)
    rowid = _rowid(memory, f"d{newest}")
    memory.delete([f"d{newest}"])
    memory.upsert([_doc(rng, "reused")])  # SQLite gives the freed highest rowid again
    assert _rowid(memory, "reused") == rowid
    memory.upsert([_doc(rng, f"n{i}") for i in range(40)])
    _assert_same_ranking(memory, sql)


def test_scores_from_the_postings_statistics_equal_fts5vocab_through_writes(
    pair: tuple[SqliteLexicalIndex, SqliteLexicalIndex],
) -> None:
    memory, sql = pair
    rng = random.Random(7)
    ids = [f"d{i}" for i in range(200)]
    for step in range(3):
        memory.upsert([_doc(rng, doc_id) for doc_id in ids[step::2]])
        memory.delete(ids[step::9])
        assert memory.postings_ready
        for query in QUERIES:
            assert memory.scores(query, ids) == sql.scores(query, ids), (step, query)


def test_a_write_by_another_connection_is_seen_by_the_next_search(
    pair: tuple[SqliteLexicalIndex, SqliteLexicalIndex],
) -> None:
    memory, sql = pair
    memory.upsert([Document(page_content="pottery class", id="a")])
    assert [doc.id for doc, _ in memory.search("pottery", k=5)] == ["a"]
    sql.upsert([Document(page_content="pottery pottery kiln", id="b")])
    sql.delete(["a"])
    assert not memory.postings_ready
    assert [doc.id for doc, _ in memory.search("pottery kiln", k=5)] == ["b"]  # FTS5 ranks
    _wait_until_ready(memory)  # the search above started reading the postings again
    assert [doc.id for doc, _ in memory.search("pottery kiln", k=5)] == ["b"]
    _assert_same_ranking(memory, sql)


def test_the_first_search_reads_the_postings_and_a_new_file_starts_with_none(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lexical.sqlite3"
    writer = SqliteLexicalIndex(path)
    assert writer.postings_ready  # created here: empty postings, kept by its writes
    rng = random.Random(5)
    writer.upsert([_doc(rng, f"d{i}") for i in range(200)])
    assert writer.postings_ready
    reader = SqliteLexicalIndex(path)
    assert not reader.postings_ready
    first = _ranked(reader, QUERIES[0])
    assert reader.postings_ready
    sql = SqliteLexicalIndex(path, postings_in_memory=False)
    assert first == _ranked(sql, QUERIES[0])
    assert _ranked(writer, QUERIES[0]) == first
    for index in (writer, reader, sql):
        index.close()


def test_a_write_rolled_back_leaves_the_postings_as_they_were(
    pair: tuple[SqliteLexicalIndex, SqliteLexicalIndex],
) -> None:
    memory, _ = pair
    memory.upsert([Document(page_content="pottery class", id="a")])
    with sqlite3.connect(memory.path) as conn:
        conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON docs WHEN NEW.text = 'kiln' "
            "BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
    memory.search("pottery", k=1)  # another connection wrote: the postings are read again
    _wait_until_ready(memory)
    replaced = Document(page_content="glaze", id="a")
    with pytest.raises(sqlite3.IntegrityError, match="refused"):
        memory.upsert([replaced, Document(page_content="kiln", id="b")])
    assert memory.postings_ready
    hits = memory.search("pottery glaze kiln", k=5)
    assert [(doc.id, doc.page_content) for doc, _ in hits] == [("a", "pottery class")]


def test_writes_made_while_the_postings_are_read_are_replayed_on_them(
    pair: tuple[SqliteLexicalIndex, SqliteLexicalIndex],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    memory, sql = pair
    rng = random.Random(11)
    memory.upsert([_doc(rng, f"d{i}") for i in range(100)])
    sql.upsert([_doc(rng, "other")])  # another connection wrote: the next search reads again
    entered, release = threading.Event(), threading.Event()

    class HeldPostings(_fts_postings.Postings):
        def __init__(self, rows: Iterable[tuple[int, str]] = ()) -> None:
            entered.set()
            assert release.wait(10)
            super().__init__(rows)

    monkeypatch.setattr(_fts_postings, "Postings", HeldPostings)
    time.sleep(0.2)  # past the spacing after the last read
    memory.search("pottery", k=1)  # starts the read; its snapshot is taken now
    assert entered.wait(5)
    memory.upsert([Document(page_content="kiln kiln pottery", id="late")])
    memory.delete(["d3", "other"])
    memory.upsert([_doc(rng, "d5")])
    release.set()
    _wait_until_ready(memory)
    assert _ranked(memory, "kiln pottery", 1) == _ranked(sql, "kiln pottery", 1)
    assert _ranked(memory, "kiln pottery", 1)[0][0] == "late"
    _assert_same_ranking(memory, sql)


def test_a_reindex_is_searched_in_memory_afterwards(
    pair: tuple[SqliteLexicalIndex, SqliteLexicalIndex],
) -> None:
    memory, sql = pair
    memory.upsert([Document(page_content="pottery class", id="a")])
    memory.reindex([Document(page_content="kiln pottery", id="z")])
    assert memory.postings_ready
    assert [doc.id for doc, _ in memory.search("pottery", k=5)] == ["z"]
    _assert_same_ranking(memory, sql)


def test_a_write_after_another_connections_write_drops_the_stale_postings(
    pair: tuple[SqliteLexicalIndex, SqliteLexicalIndex],
) -> None:
    memory, sql = pair
    rng = random.Random(13)
    sql.upsert([_doc(rng, f"d{i}") for i in range(1100)])  # rowids past the first 1,024
    memory.delete(["d1050"])  # a row the stale postings never held
    memory.upsert([_doc(rng, "d1060")])
    assert not memory.postings_ready
    _wait_until_ready(memory)
    _assert_same_ranking(memory, sql)


def _reference_top(rows: dict[int, str], terms: list[str], k: int) -> list[tuple[int, float]]:
    """The k best rows by the Python BM25 over ``rows``, rowid order among equal scores."""
    tokens = sum(len(text.split()) for text in rows.values())
    held = {term: sum(term in text.split() for text in rows.values()) for term in terms}
    stats = CorpusStats(rows=len(rows), tokens=tokens, document_frequency=held)
    scored = [(rowid, bm25_score(terms, text, stats)) for rowid, text in sorted(rows.items())]
    return sorted([row for row in scored if row[1] > 0], key=lambda row: -row[1])[:k]


@pytest.mark.parametrize("seed", range(6))
def test_compact_postings_rank_as_the_python_bm25_through_folds(seed: int) -> None:
    rng = random.Random(seed)
    vocabulary = [f"t{i}" for i in range(25)]
    live: dict[int, str] = {
        rowid: " ".join(rng.choices(vocabulary, k=rng.randint(0, 6))) for rowid in range(1, 40)
    }
    postings = Postings(live.items(), fold_at=rng.choice([1, 5, 50]))
    for _ in range(120):
        rowid = rng.randint(1, 70)
        if rng.random() < 0.35 and rowid in live:
            postings.remove([(rowid, live.pop(rowid))])
        else:
            live[rowid] = " ".join(rng.choices(vocabulary, k=rng.randint(0, 6)))
            postings.add([(rowid, live[rowid])])
        assert (postings.rows, postings.tokens) == (
            len(live),
            sum(len(text.split()) for text in live.values()),
        )
        query = sorted(set(rng.choices(vocabulary, k=3)))
        k = rng.choice([1, 3, 100])
        got, expected = postings.top(query, k), _reference_top(live, query, k)
        assert [rowid for rowid, _ in got] == [rowid for rowid, _ in expected], query
        assert [score for _, score in got] == pytest.approx([s for _, s in expected], rel=1e-9)


def test_compact_postings_take_a_fraction_of_a_mapping_per_term() -> None:
    rng = random.Random(1)
    rows = [(i, " ".join([*rng.choices(WORDS, k=20), f"u{i}"])) for i in range(1, 5001)]
    postings = Postings(rows)
    distinct = sum(len(set(terms.split())) for _, terms in rows)
    assert postings.nbytes < 12 * distinct  # 4-byte rowids and counts, plus per-row arrays


def test_a_rowid_given_twice_at_construction_keeps_its_last_terms() -> None:
    postings = Postings([(1, "alpha beta"), (2, "beta"), (1, "gamma"), (3, "gamma beta")])
    assert postings.top(["alpha"], k=5) == []
    assert [rowid for rowid, _ in postings.top(["gamma"], k=5)] == [1, 3]
    assert (postings.rows, postings.tokens) == (3, 4)
