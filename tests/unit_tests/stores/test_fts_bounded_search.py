"""The FTS5 index's bounded search: exact scores, rare-term candidates, upgrades, scopes."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.documents import Document

from cogito_lc.stores import LexicalSync, SqliteLexicalIndex
from cogito_lc.stores._fts_ranking import CorpusStats, bm25_score, rarest_terms

COMMON = ["what", "did", "caroline", "about", "group"]
RARE = ["pottery", "workshop", "adoption", "religious", "camping", "accident"]


def _corpus(size: int, seed: int = 7) -> list[Document]:
    rng = random.Random(seed)
    docs = []
    for i in range(size):
        words = rng.choices(COMMON, k=rng.randint(2, 8))
        if i % 9 == 0:
            words += rng.sample(RARE, k=rng.randint(1, 2))
        words += [f"w{rng.randint(0, 400)}" for _ in range(rng.randint(1, 6))]
        rng.shuffle(words)
        docs.append(
            Document(page_content=" ".join(words), id=f"d{i}", metadata={"user_id": f"u{i % 3}"})
        )
    return docs


@pytest.fixture(scope="module")
def index_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fts") / "lexical.sqlite3"
    index = SqliteLexicalIndex(path)
    index.upsert(_corpus(900))
    index.close()
    return path


@pytest.fixture
def exact(index_file: Path) -> Iterator[SqliteLexicalIndex]:
    index = SqliteLexicalIndex(index_file, posting_budget=10**9, postings_in_memory=False)
    yield index
    index.close()


@pytest.fixture
def bounded(index_file: Path) -> Iterator[SqliteLexicalIndex]:
    index = SqliteLexicalIndex(index_file, posting_budget=150, postings_in_memory=False)
    yield index
    index.close()


QUERIES = [
    "what did caroline say about the pottery workshop",
    "caroline religious group",
    "what about camping and the accident",
    "adoption group about caroline",
]


@pytest.mark.parametrize("query", QUERIES)
def test_scores_computed_in_python_equal_fts5_bm25(exact: SqliteLexicalIndex, query: str) -> None:
    hits = exact.search(query, k=25)
    assert hits, "the query must match something for the comparison to mean anything"
    recomputed = exact.scores(query, [doc.id for doc, _ in hits if doc.id])
    for doc, score in hits:
        assert recomputed[doc.id or ""] == pytest.approx(score, rel=1e-9)


@pytest.mark.parametrize("query", QUERIES)
def test_a_bounded_search_finds_the_exact_top_when_rare_terms_decide(
    exact: SqliteLexicalIndex, bounded: SqliteLexicalIndex, query: str
) -> None:
    full = exact.search(query, k=5)
    pruned = bounded.search(query, k=5)
    assert [doc.id for doc, _ in pruned] == [doc.id for doc, _ in full]
    assert [score for _, score in pruned] == pytest.approx([score for _, score in full])


def test_a_bounded_search_of_common_words_takes_candidates_from_the_rarest(
    exact: SqliteLexicalIndex, bounded: SqliteLexicalIndex
) -> None:
    query = "what did caroline say about the group"
    pruned = bounded.search(query, k=10)
    assert len(pruned) == 10
    scores = [score for _, score in pruned]
    assert scores == sorted(scores, reverse=True)
    with sqlite3.connect(exact.path) as conn:
        frequency = {
            term: conn.execute(
                "SELECT count(*) FROM fts WHERE fts MATCH ?", (f'"{term}"',)
            ).fetchone()[0]
            for term in ["what", "did", "caroline", "about", "group"]
        }
    rare = rarest_terms(frequency, 150)
    assert all(set(rare) & set(doc.page_content.split()) for doc, _ in pruned)
    rescored = exact.scores(query, [doc.id for doc, _ in pruned if doc.id])
    assert [rescored[doc.id or ""] for doc, _ in pruned] == pytest.approx(scores)


def test_a_bounded_search_keeps_the_filter(bounded: SqliteLexicalIndex) -> None:
    hits = bounded.search("what did caroline say about the pottery", k=10, where={"user_id": "u0"})
    assert hits
    assert {doc.metadata["user_id"] for doc, _ in hits} == {"u0"}


def test_rarest_terms_fit_the_budget_and_never_come_back_empty() -> None:
    frequency = {"a": 50, "b": 5, "c": 20}
    assert rarest_terms(frequency, 25) == ["b", "c"]
    assert rarest_terms(frequency, 1) == ["b"]
    assert rarest_terms({}, 10) == []


def test_bm25_of_a_document_without_the_terms_is_zero() -> None:
    stats = CorpusStats(rows=10, tokens=40, document_frequency={"x": 9})
    assert bm25_score(["y"], "x z", stats) == 0.0
    assert bm25_score(["x"], "x z", stats) == pytest.approx(1e-6 * 2.2 / (1 + 1.2 * 0.625))


def test_corpus_totals_follow_writes_and_deletes(tmp_path: Path) -> None:
    index = SqliteLexicalIndex(tmp_path / "lexical.sqlite3")
    index.upsert([Document(page_content="alpha beta gamma", id="1")])
    index.upsert([Document(page_content="alpha", id="2"), Document(page_content="", id="3")])
    index.upsert([Document(page_content="alpha beta", id="1")])
    index.delete(["2"])
    with sqlite3.connect(tmp_path / "lexical.sqlite3") as conn:
        assert conn.execute("SELECT rows, tokens FROM stats").fetchone() == (2, 2)
    index.reindex([Document(page_content="one two three", id="9")])
    with sqlite3.connect(tmp_path / "lexical.sqlite3") as conn:
        assert conn.execute("SELECT rows, tokens FROM stats").fetchone() == (1, 3)
    index.close()


def test_an_index_of_schema_version_1_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "lexical.sqlite3"
    index = SqliteLexicalIndex(path)
    index.upsert(_corpus(40))
    before = index.search("caroline pottery", k=5)
    index.close()
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TRIGGER docs_counted")
        conn.execute("DROP TRIGGER docs_uncounted")
        conn.execute("DROP TABLE stats")
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'version'")
    upgraded = SqliteLexicalIndex(path)
    assert upgraded.rebuild_reason is None
    assert upgraded.search("caroline pottery", k=5) == before
    upgraded.upsert([Document(page_content="pottery kiln", id="new")])
    assert upgraded.count() == 41
    upgraded.close()


FOLDED = [
    Document(page_content="p99 latency is 20\u00b5s on the hot path", id="micro"),
    Document(page_content="\u039f\u0394\u039f\u03a3 \u03a0\u0391\u039d\u0395\u03a0", id="greek"),
    Document(page_content="unrelated note about billing", id="other"),
]
"""Terms SQLite's unicode61 tokenizer folds again: a micro sign and a final sigma."""


@pytest.mark.parametrize("in_memory", [True, False])
@pytest.mark.parametrize("where", [None, {"user_id": "a"}])
def test_terms_are_found_as_written_whether_or_not_the_postings_are_in_memory(
    tmp_path: Path, in_memory: bool, where: dict[str, str] | None
) -> None:
    index = SqliteLexicalIndex(tmp_path / "lexical.sqlite3", postings_in_memory=in_memory)
    index.upsert([Document(d.page_content, id=d.id, metadata={"user_id": "a"}) for d in FOLDED])
    for query, expected in (("20\u00b5s", "micro"), ("\u03bf\u03b4\u03bf\u03c2", "greek")):
        found = index.search(query, k=3, where=where)
        assert [doc.id for doc, _ in found] == [expected]
        assert found[0][1] > 0
        assert index.scores(query, [expected], where=where)[expected] == pytest.approx(found[0][1])
    index.close()


def test_an_index_of_schema_version_2_is_indexed_again_in_place(tmp_path: Path) -> None:
    path = tmp_path / "lexical.sqlite3"
    index = SqliteLexicalIndex(path)
    index.upsert([*_corpus(40), *FOLDED])
    before = index.search("caroline pottery", k=5)
    index.close()
    with sqlite3.connect(path) as conn:  # the table as version 2 made it
        conn.execute("DROP TABLE fts")
        conn.execute(
            "CREATE VIRTUAL TABLE fts USING fts5(terms, content='docs', content_rowid='rowid', "
            "tokenize=\"unicode61 remove_diacritics 0 tokenchars '_'\")"
        )
        conn.execute("INSERT INTO fts (fts) VALUES ('rebuild')")
        conn.execute("UPDATE meta SET value = '2' WHERE key = 'version'")
    upgraded = SqliteLexicalIndex(path, postings_in_memory=False)
    assert upgraded.rebuild_reason is None
    assert upgraded.search("caroline pottery", k=5) == before
    assert [doc.id for doc, _ in upgraded.search("20\u00b5s", k=3)] == ["micro"]
    upgraded.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'version'").fetchone() == ("3",)


def test_a_scope_searched_unfiltered_never_returns_another_scope(tmp_path: Path) -> None:
    from langchain_core.vectorstores import InMemoryVectorStore

    from tests.unit_tests.conftest import HashEmbeddings

    store = InMemoryVectorStore(HashEmbeddings())
    index = SqliteLexicalIndex(tmp_path / "lexical.sqlite3")
    sync = LexicalSync(store, index=index, check_interval=3600)
    docs = [
        Document(page_content=f"pottery class {i}", id=f"a{i}", metadata={"user_id": "a"})
        for i in range(5)
    ]
    store.add_documents(docs)
    sync.upsert(docs)
    assert sync.covers_all({"user_id": "a"})
    # Another process writes another scope to the shared file: this process's cache
    # still says the scope is the whole index.
    other = SqliteLexicalIndex(tmp_path / "lexical.sqlite3")
    other.upsert([Document(page_content="pottery pottery", id="b1", metadata={"user_id": "b"})])
    other.close()
    hits = sync.search("pottery", k=10, where={"user_id": "a"})
    assert {doc.metadata["user_id"] for doc, _ in hits} == {"a"}
    assert len(hits) == 5
    index.close()
