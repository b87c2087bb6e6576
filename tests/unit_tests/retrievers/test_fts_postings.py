"""The FTS5 index's postings in memory rank as FTS5's ``bm25()`` does, through every write."""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.documents import Document

from cogito_lc.retrievers import SqliteLexicalIndex
from cogito_lc.retrievers._fts_postings import Postings
from cogito_lc.retrievers._fts_ranking import CorpusStats, bm25_score

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


def _ranked(index: SqliteLexicalIndex, query: str) -> list[tuple[str | None, float]]:
    return [(doc.id, score) for doc, score in index.search(query, k=400)]


def _wait_until_ready(index: SqliteLexicalIndex) -> None:
    deadline = time.monotonic() + 10
    while not index.postings_ready:
        assert time.monotonic() < deadline, "the postings were never read"
        time.sleep(0.01)


def _assert_same_ranking(memory: SqliteLexicalIndex, sql: SqliteLexicalIndex) -> None:
    assert memory.postings_ready
    for query in QUERIES:
        in_memory, in_sql = _ranked(memory, query), _ranked(sql, query)
        assert dict(in_memory) == pytest.approx(dict(in_sql), rel=1e-9), query
        scores = [score for _, score in in_memory]
        assert scores == sorted(scores, reverse=True)


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
    memory.upsert([_doc(rng, f"n{i}") for i in range(40)])  # rowids freed above are reused
    _assert_same_ranking(memory, sql)


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


def test_the_first_search_ranks_in_fts5_and_starts_reading_the_postings(tmp_path: Path) -> None:
    path = tmp_path / "lexical.sqlite3"
    writer = SqliteLexicalIndex(path)
    rng = random.Random(5)
    writer.upsert([_doc(rng, f"d{i}") for i in range(200)])
    reader = SqliteLexicalIndex(path)
    assert not reader.postings_ready
    first = _ranked(reader, QUERIES[0])
    _wait_until_ready(reader)
    assert dict(_ranked(reader, QUERIES[0])) == pytest.approx(dict(first), rel=1e-9)
    writer.close()
    reader.close()


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
    assert [doc.id for doc, _ in memory.search("pottery", k=5)] == ["a"]
    replaced = Document(page_content="glaze", id="a")
    with pytest.raises(sqlite3.IntegrityError, match="refused"):
        memory.upsert([replaced, Document(page_content="kiln", id="b")])
    hits = memory.search("pottery glaze kiln", k=5)
    assert [(doc.id, doc.page_content) for doc, _ in hits] == [("a", "pottery class")]


def test_a_reindex_is_searched_in_memory_afterwards(
    pair: tuple[SqliteLexicalIndex, SqliteLexicalIndex],
) -> None:
    memory, sql = pair
    memory.upsert([Document(page_content="pottery class", id="a")])
    memory.reindex([Document(page_content="kiln pottery", id="z")])
    assert not memory.postings_ready
    assert [doc.id for doc, _ in memory.search("pottery", k=5)] == ["z"]
    _wait_until_ready(memory)
    assert [doc.id for doc, _ in memory.search("pottery", k=5)] == ["z"]
    _assert_same_ranking(memory, sql)
