"""BM25 in Postgres: scores as FTS5 gives them, per-scope statistics kept by the writes."""

from __future__ import annotations

import logging
from pathlib import Path

import psycopg
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from cogito_lc import MemoryStore
from cogito_lc.stores import (
    PostgresLexicalIndex,
    SqliteLexicalIndex,
    lexical_terms,
    postgres_lexical,
)
from cogito_lc.stores._fts_ranking import CorpusStats, bm25_scorer
from cogito_lc.stores.postgres import PostgresDatabase, _memories_steps
from cogito_lc.stores.postgres_bm25 import stats_table
from tests.integration_tests.conftest_pg import closed_after_test

EMBEDDINGS = DeterministicFakeEmbedding(size=8)

NOTES = {
    "a": [
        "The billing service listens on port 8083 behind the gateway",
        "Tokens expire after 3600 seconds and refresh tokens after thirty days",
        "The gateway retries webhooks three times with a growing delay",
        "Billing exports run nightly and billing reports go to finance",
        "Deploys freeze on Fridays after noon",
    ],
    "b": [
        "Port 8083 is closed on the bastion host",
        "The bastion host rotates its keys weekly",
        "Gateway gateway gateway logs fill the disk on weekends",
    ],
}
QUERIES = [
    "Which port does billing listen on?",
    "gateway webhooks",
    "billing billing reports",
    "tokens expire refresh",
    "bastion keys",
    "nothing matches this",
]


def _memory(pg_url: str, collection: str) -> MemoryStore:
    memory = MemoryStore.from_database_url(pg_url, embeddings=EMBEDDINGS, collection=collection)
    return closed_after_test(memory)


def _index(memory: MemoryStore) -> PostgresLexicalIndex:
    assert memory._lexical is not None
    index = memory._lexical.index
    assert isinstance(index, PostgresLexicalIndex)
    return index


def _filled(pg_url: str, collection: str) -> tuple[MemoryStore, dict[str, str]]:
    memory = _memory(pg_url, collection)
    texts: dict[str, str] = {}
    for user, notes in NOTES.items():
        ids = memory.scoped({"user_id": user}).store_many(notes)
        texts.update(zip(ids, notes, strict=True))
    return memory, texts


def _common_and_zebra(memory: MemoryStore) -> str:
    """Forty notes of user a sharing "common", then one holding "zebra" too: its id."""
    scope = memory.scoped({"user_id": "a"})
    scope.store_many([f"common words in note number {i}" for i in range(40)])
    zebra = scope.store("one common line about the zebra").id
    assert zebra is not None
    return zebra


def _analyse(pg_url: str, collection: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'ANALYZE "{collection}"')


def _python_bm25(query: str, corpus: list[str]) -> dict[str, float]:
    terms = list(dict.fromkeys(lexical_terms(query)))
    documents = [lexical_terms(text) for text in corpus]
    frequency = {term: sum(term in document for document in documents) for term in terms}
    stats = CorpusStats(
        rows=len(corpus), tokens=sum(len(d) for d in documents), document_frequency=frequency
    )
    score = bm25_scorer(terms, stats)
    return {
        text: score(" ".join(document)) for text, document in zip(corpus, documents, strict=True)
    }


def test_scores_are_bm25_over_the_scope(pg_url: str, pg_collection: str) -> None:
    memory, texts = _filled(pg_url, pg_collection)
    index = _index(memory)
    for user, notes in NOTES.items():
        where = {"user_id": user}
        for query in QUERIES:
            expected = _python_bm25(query, notes)
            hits = index.search(query, k=10, where=where)
            assert {texts[doc.id or ""]: score for doc, score in hits} == pytest.approx(
                {text: score for text, score in expected.items() if score > 0}, rel=1e-9
            ), query
            assert [score for _, score in hits] == sorted((s for _, s in hits), reverse=True)
            scored = index.scores(query, list(texts), where=where)
            for doc_id, text in texts.items():
                if text in expected:
                    assert scored[doc_id] == pytest.approx(expected[text], rel=1e-9)


def test_a_scope_has_its_own_statistics(pg_url: str, pg_collection: str) -> None:
    memory, _ = _filled(pg_url, pg_collection)
    index = _index(memory)
    before = index.search("port gateway", k=5, where={"user_id": "a"})
    memory.scoped({"user_id": "b"}).store_many(
        [f"port {i} opened on the gateway" for i in range(20)]
    )
    after = index.search("port gateway", k=5, where={"user_id": "a"})
    assert [(doc.id, score) for doc, score in after] == [(doc.id, score) for doc, score in before]
    whole = index.search("port gateway", k=50)
    assert len(whole) == 24  # no scope: the whole table is the corpus


def test_the_same_scores_as_sqlite_fts5(pg_url: str, pg_collection: str, tmp_path: Path) -> None:
    memory, texts = _filled(pg_url, pg_collection)
    index = _index(memory)
    fts = SqliteLexicalIndex(tmp_path / "fts.sqlite3")
    fts.upsert([doc for doc_id in texts if (doc := memory.get(doc_id)) is not None])
    for query in QUERIES:
        postgres = [(doc.id, round(score, 9)) for doc, score in index.search(query, k=10)]
        sqlite = [(doc.id, round(score, 9)) for doc, score in fts.search(query, k=10)]
        assert postgres == sqlite, query


CODE_NOTES = [
    "The config lives at /etc/app/config.yaml on every host",
    "Mail alice@example.com before the v1.2.3 release",
    "Call foo_bar before the billing-port check",
    "The café opens at 3.14 pm, see https://example.com/hours",
    "An example of an example: billing reports",
]
CODE_QUERIES = ["config.yaml", "example", "foo_bar", "billing port", "v1", "café", "14", "hours"]


def test_words_are_split_as_the_query_and_every_other_index_split_them(
    pg_url: str, pg_collection: str, tmp_path: Path
) -> None:
    memory = _memory(pg_url, pg_collection)
    ids = memory.scoped({"user_id": "a"}).store_many(CODE_NOTES)
    texts = dict(zip(ids, CODE_NOTES, strict=True))
    index = _index(memory)
    fts = SqliteLexicalIndex(tmp_path / "fts.sqlite3")
    fts.upsert([doc for doc_id in ids if (doc := memory.get(doc_id)) is not None])
    for query in CODE_QUERIES:
        expected = {t: v for t, v in _python_bm25(query, CODE_NOTES).items() if v > 0}
        hits = index.search(query, k=10, where={"user_id": "a"})
        assert {texts[doc.id or ""]: score for doc, score in hits} == pytest.approx(
            expected, rel=1e-9
        ), query
        postgres = [(doc.id, round(score, 9)) for doc, score in index.search(query, k=10)]
        sqlite = [(doc.id, round(score, 9)) for doc, score in fts.search(query, k=10)]
        assert postgres == sqlite, query
    tokens = sum(len(lexical_terms(text)) for text in CODE_NOTES)
    assert _counters(pg_url, pg_collection) == {"a": (len(CODE_NOTES), tokens)}


def test_words_are_the_same_for_a_session_reading_backslashes_as_escapes(
    pg_url: str, pg_collection: str
) -> None:
    joiner = "&" if "?" in pg_url else "?"
    escapes_on = f"{pg_url}{joiner}options=-c%20standard_conforming_strings%3Doff"
    memory = _memory(escapes_on, pg_collection)
    ids = memory.scoped({"user_id": "a"}).store_many(CODE_NOTES)
    texts = dict(zip(ids, CODE_NOTES, strict=True))
    for query in CODE_QUERIES:
        expected = {t: v for t, v in _python_bm25(query, CODE_NOTES).items() if v > 0}
        hits = _index(memory).search(query, k=10, where={"user_id": "a"})
        assert {texts[doc.id or ""]: score for doc, score in hits} == pytest.approx(
            expected, rel=1e-9
        ), query
    tokens = sum(len(lexical_terms(text)) for text in CODE_NOTES)
    assert _counters(pg_url, pg_collection) == {"a": (len(CODE_NOTES), tokens)}


def test_a_truncate_empties_the_counters(pg_url: str, pg_collection: str) -> None:
    memory, _ = _filled(pg_url, pg_collection)
    with psycopg.connect(pg_url) as conn:
        conn.execute(f'TRUNCATE "{pg_collection}"')
    assert _counters(pg_url, pg_collection) == {}
    assert _index(memory).search("bastion keys", k=3, where={"user_id": "b"}) == []
    memory.scoped({"user_id": "b"}).store("The bastion host rotates its keys weekly")
    assert _counters(pg_url, pg_collection) == _recounted(pg_url, pg_collection)


def _table_at_version(pg_url: str, collection: str, version: int, text: str) -> None:
    """A memories table of an earlier schema ``version`` holding ``text`` as id "old"."""
    database = PostgresDatabase(pg_url)
    try:
        database.migrate(f"memories:{collection}", _memories_steps(collection, 8)[:version])
        with database.connection() as conn:
            conn.execute(
                f'INSERT INTO "{collection}" (id, content, embedding, user_id) '  # noqa: S608
                "VALUES ('old', %s, %s::vector, 'a')",
                (text, str([float(x) for x in EMBEDDINGS.embed_documents([text])[0]])),
            )
    finally:
        database.close()


def test_a_table_of_schema_version_2_is_split_again(pg_url: str, pg_collection: str) -> None:
    # Version 2: Postgres's parser made the words.
    _table_at_version(pg_url, pg_collection, 2, "Mail alice@example.com about foo_bar")
    memory = _memory(pg_url, pg_collection)
    words = lexical_terms("Mail alice@example.com about foo_bar")
    assert _counters(pg_url, pg_collection) == {"a": (1, len(words))}
    for query in ["example", "foo_bar"]:
        [(doc, score)] = _index(memory).search(query, k=3, where={"user_id": "a"})
        assert (doc.id, score > 0) == ("old", True), query


def _counters(pg_url: str, collection: str) -> dict[str | None, tuple[int, int]]:
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(
            f'SELECT user_id, rows, tokens FROM "{stats_table(collection)}" WHERE rows <> 0'  # noqa: S608
        ).fetchall()
    return {row[0]: (row[1], row[2]) for row in rows}


def _recounted(pg_url: str, collection: str) -> dict[str | None, tuple[int, int]]:
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(
            f'SELECT user_id, count(*), sum(lexical_length) FROM "{collection}" GROUP BY user_id'  # noqa: S608
        ).fetchall()
    return {row[0]: (row[1], row[2]) for row in rows}


def test_the_counters_follow_every_write(pg_url: str, pg_collection: str) -> None:
    memory, texts = _filled(pg_url, pg_collection)
    assert _counters(pg_url, pg_collection) == _recounted(pg_url, pg_collection)
    assert _counters(pg_url, pg_collection)["a"][0] == len(NOTES["a"])
    first = next(iter(texts))
    memory.delete(first)
    with psycopg.connect(pg_url) as conn:
        conn.execute(
            f"UPDATE \"{pg_collection}\" SET user_id = 'c', content = content || ' moved along' "  # noqa: S608
            "WHERE content LIKE 'Port 8083%'"
        )
        conn.execute(
            f"UPDATE \"{pg_collection}\" SET langchain_metadata = '{{}}'::jsonb"  # noqa: S608
        )
    counters = _counters(pg_url, pg_collection)
    assert counters == _recounted(pg_url, pg_collection)
    assert counters["a"][0] == len(NOTES["a"]) - 1
    assert counters["c"][0] == 1


def test_counters_out_of_step_are_rebuilt_at_start_up(
    pg_url: str, pg_collection: str, caplog: pytest.LogCaptureFixture
) -> None:
    _filled(pg_url, pg_collection)
    with psycopg.connect(pg_url) as conn:
        conn.execute(f'DELETE FROM "{stats_table(pg_collection)}"')  # noqa: S608
    with caplog.at_level(logging.WARNING, logger="cogito_lc.stores.postgres_bm25"):
        memory = _memory(pg_url, pg_collection)
    assert "BM25 statistics" in caplog.text
    assert "rebuilt" in caplog.text
    assert _counters(pg_url, pg_collection) == _recounted(pg_url, pg_collection)
    assert _index(memory).search("bastion keys", k=3, where={"user_id": "b"})
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="cogito_lc.stores.postgres_bm25"):
        _memory(pg_url, pg_collection)
    assert "BM25 statistics" not in caplog.text


def test_counters_wrong_in_one_scope_only_are_rebuilt_at_start_up(
    pg_url: str, pg_collection: str, caplog: pytest.LogCaptureFixture
) -> None:
    _filled(pg_url, pg_collection)
    with psycopg.connect(pg_url) as conn:  # moved with the triggers off: the totals still agree
        conn.execute("SET session_replication_role = replica")
        conn.execute(
            f"UPDATE \"{pg_collection}\" SET user_id = 'b' WHERE content LIKE 'Deploys%'"  # noqa: S608
        )
    assert _counters(pg_url, pg_collection) != _recounted(pg_url, pg_collection)
    with caplog.at_level(logging.WARNING, logger="cogito_lc.stores.postgres_bm25"):
        _memory(pg_url, pg_collection)
    assert "rebuilt" in caplog.text
    assert _counters(pg_url, pg_collection) == _recounted(pg_url, pg_collection)


def test_a_table_of_schema_version_1_gains_the_statistics(pg_url: str, pg_collection: str) -> None:
    _table_at_version(pg_url, pg_collection, 1, "written before the upgrade about the gateway")
    memory = _memory(pg_url, pg_collection)
    assert _counters(pg_url, pg_collection) == {"a": (1, 5)}
    [(doc, score)] = _index(memory).search("gateway upgrade", k=3, where={"user_id": "a"})
    assert doc.id == "old"
    assert score > 0


def test_a_search_finds_a_word_written_right_before_it(pg_url: str, pg_collection: str) -> None:
    memory, _ = _filled(pg_url, pg_collection)
    index = _index(memory)
    assert index.search("zebra crossing", k=3, where={"user_id": "a"}) == []
    new = memory.scoped({"user_id": "a"}).store("A zebra crossing outside the office")
    [(doc, score)] = index.search("zebra crossing", k=3, where={"user_id": "a"})
    assert doc.id == new.id
    assert index.scores("zebra crossing", [doc.id or ""], where={"user_id": "a"}) == {
        doc.id: pytest.approx(score)
    }


def test_a_scoped_view_audits_its_forgetting_in_the_database(
    pg_url: str, pg_collection: str
) -> None:
    memory, texts = _filled(pg_url, pg_collection)
    view = memory.scoped({"user_id": "b"})
    forgotten = next(doc_id for doc_id, text in texts.items() if text in NOTES["b"])
    view.forget(ids=[forgotten], reason="user asked")
    [record] = view.forget_log
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(
            "SELECT content FROM cogito_state WHERE name LIKE %s AND content LIKE %s",
            ("%forget-audit-%", f"%{forgotten}%"),
        ).fetchall()
    assert len(rows) == 1
    assert record["ids"] == [forgotten]
    assert NOTES["b"][0] not in rows[0][0]


def test_past_the_budget_a_common_term_is_estimated_not_counted(
    pg_url: str, pg_collection: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres_lexical, "POSTING_BUDGET", 5)
    memory = _memory(pg_url, pg_collection)
    zebra = _common_and_zebra(memory)
    _analyse(pg_url, pg_collection)
    index = _index(memory)
    assert index.posting_budget == 5
    with index.adapter.database.connection() as conn:
        weights = index._read_weights(conn, ["common", "zebra"], {"user_id": "a"})
    assert weights is not None
    assert weights.frequency["zebra"] == 1  # counted
    assert weights.frequency["common"] == 41  # the planner's share of the rows: all of them
    hits = index.search("common zebra", k=1, where={"user_id": "a"})
    assert [doc.id for doc, _ in hits] == [zebra]
    exact = PostgresLexicalIndex(index.adapter, posting_budget=1_000)
    [(_, exact_score)] = exact.search("common zebra", k=1, where={"user_id": "a"})
    assert hits[0][1] == pytest.approx(exact_score)


def test_a_term_past_the_count_limit_is_estimated_below_the_budget(
    pg_url: str, pg_collection: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres_lexical, "COUNT_LIMIT", 3)
    memory = _memory(pg_url, pg_collection)
    scope = memory.scoped({"user_id": "a"})
    scope.store_many([f"common words in note number {i}" for i in range(40)])
    scope.store_many([f"frequent term in line {i}" for i in range(6)])
    zebra = scope.store("one common frequent line about the zebra")
    index = _index(memory)
    assert index.posting_budget == postgres_lexical.POSTING_BUDGET  # far above the rows
    with index.adapter.database.connection() as conn:
        before = index._read_weights(conn, ["frequent", "zebra"], {"user_id": "a"})
    assert before is not None
    # No statistics yet: every term counted, past the count limit too.
    assert before.frequency == {"frequent": 7, "zebra": 1}
    assert before.estimated == frozenset()
    bounded = PostgresLexicalIndex(index.adapter, posting_budget=5)
    with index.adapter.database.connection() as conn:
        stopped = bounded._read_weights(conn, ["common", "zebra"], {"user_id": "a"})
    assert stopped is not None
    assert stopped.frequency == {"common": 6, "zebra": 1}  # the count stops past the budget
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'ANALYZE "{pg_collection}"')
    index = PostgresLexicalIndex(index.adapter)  # the planner's statistics are read afresh
    with index.adapter.database.connection() as conn:
        weights = index._read_weights(conn, ["common", "frequent", "zebra"], {"user_id": "a"})
    assert weights is not None
    assert weights.estimated == {"common", "frequent"}  # only "zebra" is counted
    assert weights.frequency == {"common": 41, "frequent": 7, "zebra": 1}
    hits = index.search("common frequent zebra", k=3, where={"user_id": "a"})
    assert hits[0][0].id == zebra.id
    assert len(hits) == 3


def test_a_low_estimate_never_pushes_a_counted_terms_rows_out(
    pg_url: str, pg_collection: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres_lexical, "COUNT_LIMIT", 3)
    memory = _memory(pg_url, pg_collection)
    zebra = _common_and_zebra(memory)
    memory.scoped({"user_id": "b"}).store_many([f"other line {i}" for i in range(400)])
    _analyse(pg_url, pg_collection)
    index = PostgresLexicalIndex(_index(memory).adapter, posting_budget=5)
    with index.adapter.database.connection() as conn:
        weights = index._read_weights(conn, ["common", "zebra"], {"user_id": "a"})
    assert weights is not None
    # A tenth of the table holds "common": the estimate is a tenth of the scope's 41 rows.
    assert weights.estimated == {"common"}
    assert weights.frequency["common"] < 10
    assert weights.frequency["zebra"] == 1
    hits = index.search("common zebra", k=1, where={"user_id": "a"})
    assert [doc.id for doc, _ in hits] == [zebra]


@pytest.mark.parametrize("size", [2044, 2046, 2047, 5000])
def test_a_word_longer_than_postgres_takes_is_left_out_and_nothing_else_fails(
    pg_url: str, pg_collection: str, size: int
) -> None:
    memory, _ = _filled(pg_url, pg_collection)
    alice = memory.scoped({"user_id": "a"})
    long_word = "z" * size  # a pasted token or blob; with "ing" added, 3 bytes longer
    new = alice.store(f"The zebra gate opens at nine. {long_word}")
    [(doc, _)] = _index(memory).search(f"{long_word} zebra", k=3, where={"user_id": "a"})
    assert doc.id == new.id
    assert alice.as_retriever("recall").invoke(f"{long_word} zebra gate")[0].id == new.id
    assert not _index(memory).adapter.binding.database.breaker.is_open
