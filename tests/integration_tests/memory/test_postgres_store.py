"""MemoryStore over a real Postgres with pgvector (pgserver), real MiniLM embeddings."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import psycopg
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from psycopg import sql

from cogito_lc import MemoryNotFoundError, MemoryStore
from cogito_lc.retrievers import RecallB, recall_b
from cogito_lc.stores import PostgresLexicalIndex, StoredVectors, postgres_lexical
from cogito_lc.stores.postgres import (
    SCHEMA_VERSION,
    DatabaseSetupError,
    PostgresAdapter,
    PostgresDatabase,
    StatementTimeoutError,
    open_postgres_store,
    where_to_sql,
)
from tests.integration_tests.conftest import EXAMPLES_DATA
from tests.integration_tests.conftest_pg import closed_after_test


def _memory(pg_url: str, collection: str, embeddings: Embeddings, **kwargs: object) -> MemoryStore:
    memory = MemoryStore.from_database_url(
        pg_url, embeddings=embeddings, collection=collection, **kwargs
    )
    return closed_after_test(memory)


def test_store_recall_and_scopes(pg_url: str, pg_collection: str, minilm: Embeddings) -> None:
    memory = _memory(pg_url, pg_collection, minilm)
    assert isinstance(memory._store, PostgresAdapter)
    alice, bob = memory.scoped({"user_id": "alice"}), memory.scoped({"user_id": "bob"})
    summary = alice.seed(EXAMPLES_DATA, progress=False)
    assert summary.failed == []
    assert summary.stored == alice.count() == summary.chunks
    bob.store("Bob's production region is us-east-2 (Ohio).")
    docs = alice.as_retriever(k=3).invoke("Which AWS region does production run in?")
    assert any("eu-west-1 (Ireland)" in d.page_content for d in docs)
    assert all(d.metadata["user_id"] == "alice" for d in docs)
    bob_docs = bob.as_retriever(k=3).invoke("Which AWS region does production run in?")
    assert [d.page_content for d in bob_docs] == ["Bob's production region is us-east-2 (Ohio)."]
    [(hit, score)] = bob.search("production region", k=5)
    assert hit.metadata["user_id"] == "bob"
    assert score is not None
    assert 0 < score <= 1
    assert memory.count() == summary.chunks + 1


def test_dedup_update_delete_and_filters(
    pg_url: str, pg_collection: str, minilm: Embeddings
) -> None:
    memory = _memory(pg_url, pg_collection, minilm, scope={"user_id": "alice"})
    first = memory.store("Auth tokens expire after 3600 seconds.", metadata={"n": 3})
    again = memory.store("Auth tokens expire after 3600 seconds.")
    assert again.id == first.id
    assert again.metadata["created_at"] == first.metadata["created_at"]
    assert memory.count() == 1
    spaced = memory.store("Auth   tokens expire after 3600 seconds.")  # spacing is content
    assert (spaced.id, memory.count()) == (f"{first.id}-2", 2)
    memory.delete(spaced.id or "")
    other = memory.store("Billing runs on port 8083.", metadata={"n": 1, "tag": "x"})
    adapter = memory._store
    assert adapter.count({"n": {"$gt": 2}}) == 1
    assert adapter.count({"n": {"$gt": "a"}}) == 0  # another type never matches
    assert adapter.count({"tag": {"$ne": "x"}}) == 1  # a missing key matches $ne
    assert adapter.count({"$or": [{"tag": "x"}, {"n": 3}]}) == 2
    assert adapter.count({"user_id": {"$in": ["alice", "carol"]}}) == 2
    updated = memory.update(other.id or "", "Billing runs on port 9090.")
    assert memory.get(other.id or "") is not None
    assert memory.get(other.id or "").page_content == updated.page_content  # type: ignore[union-attr]
    assert memory.scoped({"user_id": "bob"}).get(first.id or "") is None
    memory.delete(first.id or "")
    assert memory.count() == 1


def test_a_nul_character_is_refused_before_the_database(
    pg_url: str, pg_collection: str, minilm: Embeddings
) -> None:
    memory = _memory(pg_url, pg_collection, minilm, scope={"user_id": "alice"})
    with pytest.raises(ValueError, match=r"text holds a NUL character"):
        memory.store("Billing runs on port\x00 8083.")
    with pytest.raises(ValueError, match=r"metadata\['team'\] holds a NUL character"):
        memory.store("Billing runs on port 8083.", metadata={"team": "web\x00"})
    assert memory.get("a\x00b") is None  # no such id can be stored
    with pytest.raises(MemoryNotFoundError):
        memory.delete("a\x00b")
    assert memory.count() == 0


def test_a_small_scope_among_many_is_searched_exactly(pg_url: str, pg_collection: str) -> None:
    memory = _memory(pg_url, pg_collection, DeterministicFakeEmbedding(size=32))
    memory.scoped({"user_id": "crowd"}).store_many([f"crowd memory {i}" for i in range(600)])
    few = memory.scoped({"user_id": "few"})
    few.store_many(["alpha note", "beta note", "gamma note"])
    found = few.search("a query unlike any note", k=5)
    assert sorted(d.page_content for d, _ in found) == ["alpha note", "beta note", "gamma note"]


def test_a_scope_filter_plans_from_the_counters_as_the_rows_would(
    pg_url: str, pg_collection: str
) -> None:
    memory = _memory(pg_url, pg_collection, DeterministicFakeEmbedding(size=32))
    memory.scoped({"user_id": "a"}).store_many([f"a note {i}" for i in range(5)])
    memory.scoped({"user_id": "b", "agent_id": "x"}).store_many(["b note", "b other"])
    memory.store("a note without a scope")
    memory.delete(memory.scoped({"user_id": "a"}).list(limit=1)[0].id or "")
    adapter = memory._store
    wheres = [
        {"user_id": "a"},
        {"user_id": {"$in": ["a", "b"]}},
        {"user_id": {"$ne": "a"}},
        {"agent_id": "x"},
        {"user_id": "nobody"},
    ]
    mixed_where = {"$and": [{"user_id": "a"}, {"kind": "note"}]}
    with adapter.database.connection() as conn:
        planned = [
            adapter._matching_and_held(conn, where, *where_to_sql(where)) for where in wheres
        ]
        mixed = adapter._matching_and_held(conn, mixed_where, *where_to_sql(mixed_where))
    assert planned == [(adapter.count(where), adapter.count()) for where in wheres]
    assert planned[0] == (4, 7)
    assert mixed == (0, 7)  # another key: counted from the rows


def test_stored_vectors_are_the_rows_float32_vectors_while_the_text_is_current(
    pg_url: str, pg_collection: str
) -> None:
    embeddings = DeterministicFakeEmbedding(size=32)
    memory = _memory(pg_url, pg_collection, embeddings, scope={"user_id": "a"})
    first, second = memory.store("alpha note"), memory.store("beta note")
    adapter = memory._store
    texts = {second.id or "": "beta note", first.id or "": "alpha note"}
    vectors = adapter.stored_vectors(texts, {"user_id": "a"})
    assert vectors is not None
    expected = [embeddings.embed_query("beta note"), embeddings.embed_query("alpha note")]
    for vector, wanted in zip(vectors, expected, strict=True):
        assert vector.dtype == np.float32
        assert np.array_equal(vector, np.asarray(wanted, dtype=np.float32))
    assert adapter.stored_vectors({first.id or "": "other text"}, {"user_id": "a"}) is None
    assert adapter.stored_vectors(texts, {"user_id": "b"}) is None


def test_lexical_run_is_postgres_full_text(
    pg_url: str, pg_collection: str, minilm: Embeddings
) -> None:
    memory = _memory(pg_url, pg_collection, minilm)
    memory.scoped({"user_id": "a"}).store("The billing service listens on port 8083.")
    memory.scoped({"user_id": "b"}).store("Port 8083 is closed on the bastion host.")
    assert memory._lexical is not None
    index = memory._lexical.index
    assert isinstance(index, PostgresLexicalIndex)
    [(doc, score)] = index.search("port 8083?", k=5, where={"user_id": "a"})
    assert doc.metadata["user_id"] == "a"
    assert score > 0
    assert len(index.search("8083", k=5)) == 2
    for query in ["'; DROP TABLE x; --", "a & b | !c <-> d", "???", "", "(((", "ünïcode 'quote'"]:
        index.search(query, k=5)  # plain words, never query syntax: no error
    assert index.scores("billing port", [doc.id or "", "missing"])["missing"] == 0.0
    assert index.covers_all({"user_id": "a"}) is False
    assert memory.count() == 2


def test_lexical_search_past_the_budget_ranks_the_rare_terms_candidates(
    pg_url: str, pg_collection: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres_lexical, "POSTING_BUDGET", 5)
    memory = _memory(pg_url, pg_collection, DeterministicFakeEmbedding(size=8))
    crowd = memory.scoped({"user_id": "a"})
    crowd.store_many([f"common common words in note {i}" for i in range(12)])
    [rare_id] = crowd.store_many(["one common line about the zebra"])
    memory.scoped({"user_id": "b"}).store("zebra crossing outside common office")
    assert memory._lexical is not None
    bounded = memory._lexical.index
    assert isinstance(bounded, PostgresLexicalIndex)
    assert bounded.posting_budget == 5
    exact = PostgresLexicalIndex(bounded.adapter)
    assert exact.posting_budget == postgres_lexical.POSTING_BUDGET == 5
    exact = PostgresLexicalIndex(bounded.adapter, posting_budget=1_000)

    # Below the budget every row sharing a word is ranked by BM25: "zebra", rare in the
    # scope, outweighs "common" said twice.
    exact_hits = exact.search("common zebra", k=5, where={"user_id": "a"})
    assert len(exact_hits) == 5
    assert all(doc.metadata["user_id"] == "a" for doc, _ in exact_hits)
    assert exact_hits[0][0].id == rare_id
    scored = exact.scores("common zebra", [rare_id], where={"user_id": "a"})
    assert scored[rare_id] == pytest.approx(exact_hits[0][1])
    # Past it ("common" is in 14 rows) only the rows holding "zebra" are candidates, and
    # "common"'s frequency is the count reached (a lower bound: its weight is not lower).
    hits = bounded.search("common zebra?", k=5, where={"user_id": "a"})
    assert [doc.id for doc, _ in hits] == [rare_id]
    assert hits[0][1] >= exact_hits[0][1] - 1e-9
    assert {d.metadata["user_id"] for d, _ in bounded.search("common zebra", k=5)} == {"a", "b"}
    # One term past the budget on its own: at most the budget's rows are ranked.
    assert len(exact.search("common", k=20)) == 14
    assert len(bounded.search("common", k=20)) == 5
    assert bounded.search("common", k=20, where={"user_id": "nobody"}) == []
    for query in ["'; DROP TABLE x; --", "common & zebra | !c <-> d", "(((", "ünïcode 'common'"]:
        bounded.search(query, k=5)  # plain words, never query syntax: no error


def _bounded_and_exact(memory: MemoryStore) -> tuple[PostgresLexicalIndex, PostgresLexicalIndex]:
    """The store's own lexical index, and one over its table with every row in its budget."""
    assert memory._lexical is not None
    bounded = memory._lexical.index
    assert isinstance(bounded, PostgresLexicalIndex)
    return bounded, PostgresLexicalIndex(bounded.adapter, posting_budget=1_000)


@pytest.mark.parametrize("paired", [postgres_lexical.PAIRED_TERMS, 1])
def test_past_the_budget_rows_holding_two_rare_terms_come_first(
    pg_url: str, pg_collection: str, monkeypatch: pytest.MonkeyPatch, paired: int
) -> None:
    monkeypatch.setattr(postgres_lexical, "POSTING_BUDGET", 5)
    monkeypatch.setattr(postgres_lexical, "PAIRED_TERMS", paired)
    memory = _memory(pg_url, pg_collection, DeterministicFakeEmbedding(size=8))
    scope = memory.scoped({"user_id": "a"})
    scope.store_many([f"zebra seen near the river, sighting {i}" for i in range(12)])
    scope.store_many([f"crossing guard on the school shift {i}" for i in range(14)])
    [both] = scope.store_many(["the zebra crossing outside the office"])
    bounded, exact = _bounded_and_exact(memory)
    [(best, best_score)] = exact.search("zebra crossing", k=1, where={"user_id": "a"})
    assert best.id == both

    # Both terms are in more rows than the budget of 5 (their counts stop at 6, a tie):
    # "zebra", first in the query, is the term whose rows fill what the pairs leave.
    hits = bounded.search("zebra crossing", k=20, where={"user_id": "a"})
    assert len(hits) == 5
    if paired == 1:  # no pairs: an arbitrary 5 of zebra's rows, the last one written not among them
        assert both not in [doc.id for doc, _ in hits]
        return
    assert hits[0][0].id == both
    assert hits[0][1] >= best_score  # the terms' counts stop past the budget: lower bounds
    assert {doc.id for doc, _ in hits[1:]} <= {
        doc.id for doc, _ in exact.search("zebra", k=20, where={"user_id": "a"})
    }
    assert bounded.search("zebra crossing", k=5, where={"user_id": "b"}) == []
    # Three terms, three pairs, one row holding all three: taken once, scored once.
    scope.store_many([f"an office on floor {i}" for i in range(8)])
    three = bounded.search("zebra crossing office", k=20, where={"user_id": "a"})
    ids = [doc.id or "" for doc, _ in three]
    assert len(ids) == len(set(ids)) == 5
    assert ids[0] == both
    rescored = bounded.scores("zebra crossing office", ids, where={"user_id": "a"})
    assert [score for _, score in three] == pytest.approx([rescored[i] for i in ids])


@pytest.mark.parametrize("fill", [True, False])
def test_the_budget_left_goes_to_rows_holding_two_left_out_terms(
    pg_url: str, pg_collection: str, monkeypatch: pytest.MonkeyPatch, fill: bool
) -> None:
    monkeypatch.setattr(postgres_lexical, "POSTING_BUDGET", 5)
    if not fill:
        monkeypatch.setattr(postgres_lexical, "_left_out_pair", lambda *_: None)
    memory = _memory(pg_url, pg_collection, DeterministicFakeEmbedding(size=8))
    scope = memory.scoped({"user_id": "a"})
    zebras = scope.store_many(["a zebra grazing", "zebra stripes"])
    scope.store_many([f"the river runs past mill {i}" for i in range(6)])
    scope.store_many([f"a crossing guard on shift {i}" for i in range(6)])
    [both] = scope.store_many(["the river crossing by the old bridge"])
    bounded, exact = _bounded_and_exact(memory)
    exact_top = [
        doc.id for doc, _ in exact.search("zebra river crossing", k=3, where={"user_id": "a"})
    ]
    assert both in exact_top

    # "zebra" (2 rows) fits the budget of 5, "river" (7) does not: 3 rows are left.
    hits = bounded.search("zebra river crossing", k=10, where={"user_id": "a"})
    found = [doc.id for doc, _ in hits]
    assert set(zebras) <= set(found)
    assert len(found) == (3 if fill else 2)
    assert (both in found) is fill
    if fill:
        assert found[: len(exact_top)] == exact_top


@pytest.mark.parametrize("collection", ["q", "t", "m"])
def test_lexical_search_in_a_table_named_like_a_query_alias(pg_url: str, collection: str) -> None:
    memory = _memory(pg_url, collection, DeterministicFakeEmbedding(size=8))
    [memory_id] = memory.store_many(["the gateway retries webhooks"])
    assert memory._lexical is not None
    bounded = PostgresLexicalIndex(memory._store, posting_budget=1)  # the rare-terms path
    for index in (memory._lexical.index, bounded):
        assert isinstance(index, PostgresLexicalIndex)
        [(doc, score)] = index.search("gateway webhooks", k=3, where={"kind": {"$ne": "x"}})
        assert doc.id == memory_id
        assert score > 0
        assert index.scores("gateway", [memory_id])[memory_id] > 0
    with pytest.raises(ValueError, match="posting_budget"):
        PostgresLexicalIndex(memory._store, posting_budget=0)


def test_schema_is_versioned_and_created_once(pg_url: str, pg_collection: str) -> None:
    embeddings = DeterministicFakeEmbedding(size=8)
    first = _memory(pg_url, pg_collection, embeddings)
    first.store("kept across opens")
    second = _memory(pg_url, pg_collection, embeddings)
    assert second.count() == 1
    with psycopg.connect(pg_url) as conn:
        row = conn.execute(
            "SELECT version FROM cogito_schema WHERE component = %s", (f"memories:{pg_collection}",)
        ).fetchone()
        indexes = {
            r[0]
            for r in conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE tablename = %s", (pg_collection,)
            )
        }
    assert row == (SCHEMA_VERSION,)
    assert any("hnsw" in d and "vector_cosine_ops" in d for d in indexes)
    assert any("gin" in d and "content_tsv" in d and "fastupdate=off" in d for d in indexes)
    assert any("(user_id)" in d for d in indexes)


def test_a_lazy_model_is_checked_against_an_existing_table_on_first_use(
    pg_url: str, pg_collection: str
) -> None:
    from cogito_lc.embeddings import LazyEmbeddings

    _memory(pg_url, pg_collection, DeterministicFakeEmbedding(size=8)).store("kept across opens")

    right = LazyEmbeddings(lambda: DeterministicFakeEmbedding(size=8))
    reopened = _memory(pg_url, pg_collection, right)
    assert reopened.count() == 1
    assert not right.loaded  # opened and counted without the model
    assert [doc.page_content for doc in reopened.as_retriever(k=1).invoke("kept")] == [
        "kept across opens"
    ]
    assert right.loaded

    wrong = LazyEmbeddings(lambda: DeterministicFakeEmbedding(size=12))
    misfit = _memory(pg_url, pg_collection, wrong)
    assert not wrong.loaded
    with pytest.raises(ValueError, match="size 8, but the embedding model gives 12"):
        misfit.store("never stored")
    with pytest.raises(ValueError, match="size 8, but the embedding model gives 12"):
        misfit.search("kept")  # and at every later use
    assert reopened.count() == 1

    with pytest.raises(ValueError, match="size 8, but the embedding model gives 12"):
        _memory(pg_url, pg_collection, DeterministicFakeEmbedding(size=12))


def test_a_replica_with_another_model_of_the_same_size_is_refused(
    pg_url: str, pg_collection: str
) -> None:
    from cogito_lc.bench.hash_embeddings import HashEmbeddings
    from cogito_lc.embeddings import LazyEmbeddings

    first = _memory(pg_url, pg_collection, DeterministicFakeEmbedding(size=8))
    first.store("Deploys freeze on Fridays.")

    with pytest.raises(ValueError, match=r"another embedding model of the same size.*cosine"):
        _memory(pg_url, pg_collection, HashEmbeddings(size=8))
    misfit = _memory(pg_url, pg_collection, LazyEmbeddings(lambda: HashEmbeddings(size=8)))
    with pytest.raises(ValueError, match="another embedding model of the same size"):
        misfit.store("never stored")
    again = _memory(pg_url, pg_collection, DeterministicFakeEmbedding(size=8))
    assert [doc.page_content for doc, _ in again.search("Fridays", k=1)] == [
        "Deploys freeze on Fridays."
    ]
    assert again.count() == 1


def test_a_text_index_of_an_older_release_stops_deferring_its_writes(
    pg_url: str, pg_collection: str
) -> None:
    embeddings = DeterministicFakeEmbedding(size=8)
    memory = _memory(pg_url, pg_collection, embeddings)
    index = f"{pg_collection}_content_tsv"
    with psycopg.connect(pg_url, autocommit=True) as conn:  # as the release before left it
        conn.execute(sql.SQL("ALTER INDEX {} SET (fastupdate = on)").format(sql.Identifier(index)))
    memory.store_many([f"pending note {i}" for i in range(20)])  # into the pending list
    reopened = _memory(pg_url, pg_collection, embeddings)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        options = conn.execute(
            "SELECT reloptions FROM pg_class WHERE relname = %s", (index,)
        ).fetchone()
        pending_pages = conn.execute("SELECT gin_clean_pending_list(%s::regclass)", (index,))
        left = pending_pages.fetchone()
    assert options == (["fastupdate=off"],)
    assert left == (0,)
    assert len(PostgresLexicalIndex(reopened._store).search("pending note", k=30)) == 20


def test_same_text_from_two_threads_is_one_memory(pg_url: str, pg_collection: str) -> None:
    embeddings = DeterministicFakeEmbedding(size=16)
    stores = [_memory(pg_url, pg_collection, embeddings) for _ in range(2)]  # no shared lock
    barrier = threading.Barrier(2)
    ids: list[str] = []

    def write(memory: MemoryStore) -> None:
        barrier.wait()
        ids.extend(
            memory.store(f"shared memory {i}", scope={"user_id": "u"}).id or "" for i in range(30)
        )

    threads = [threading.Thread(target=write, args=(m,)) for m in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(ids) == 60
    assert len(set(ids)) == 30
    assert stores[0].count() == 30


WRITER = textwrap.dedent(
    """
    import sys
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from cogito_lc import MemoryStore

    memory = MemoryStore.from_database_url(
        sys.argv[1], embeddings=DeterministicFakeEmbedding(size=16), collection=sys.argv[2]
    )
    ids = memory.store_many([f"process memory {i}" for i in range(40)], scope={"user_id": "p"})
    print(len(set(ids)))
    """
)


def test_same_texts_from_two_processes_are_one_memory_each(pg_url: str, pg_collection: str) -> None:
    _memory(pg_url, pg_collection, DeterministicFakeEmbedding(size=16))  # create the table
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, pg_url, pg_collection],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [w.communicate(timeout=300) for w in writers]
    assert [w.returncode for w in writers] == [0, 0], outputs
    assert all(out.strip().splitlines()[-1] == "40" for out, _ in outputs)
    memory = _memory(pg_url, pg_collection, DeterministicFakeEmbedding(size=16))
    assert memory.count({"user_id": "p"}) == 40


def test_setup_errors_name_the_setting_and_hide_the_password(pg_collection: str) -> None:
    url = "postgresql://cogito:hunter2secret@127.0.0.1:1/app"
    with pytest.raises(DatabaseSetupError) as raised:
        _memory(url, pg_collection, DeterministicFakeEmbedding(size=8))
    message = str(raised.value)
    assert "COGITO_DATABASE_URL" in message
    assert "hunter2secret" not in message
    assert "cogito:***@127.0.0.1:1" in message


@pytest.mark.parametrize(
    "ending", ["_bm25", "_seq", "_pkey", "_embedding_hnsw", "_content_tsv", "_user_id", "_run_id"]
)
def test_a_collection_named_like_another_collections_own_tables_is_refused(
    pg_url: str, pg_collection: str, ending: str
) -> None:
    embeddings = DeterministicFakeEmbedding(size=8)
    _memory(pg_url, pg_collection, embeddings).store("The billing API listens on port 8443.")

    with pytest.raises(ValueError, match=f"ends like the tables.*{ending}"):
        _memory(pg_url, pg_collection + ending, embeddings)
    assert _memory(pg_url, pg_collection, embeddings).count() == 1


def test_a_write_held_up_by_another_transaction_times_out_without_opening_the_breaker(
    pg_url: str, pg_collection: str
) -> None:
    embeddings = DeterministicFakeEmbedding(size=8)
    database = PostgresDatabase(pg_url, statement_timeout=1.0)
    memory = closed_after_test(
        MemoryStore(open_postgres_store(database, embeddings, collection=pg_collection))
    )
    held = memory.store("The billing API listens on port 8443.")

    with psycopg.connect(pg_url) as other, other.transaction():
        other.execute(
            sql.SQL("LOCK TABLE {} IN EXCLUSIVE MODE").format(sql.Identifier(pg_collection))
        )
        with pytest.raises(StatementTimeoutError, match="ran past its time limit"):
            memory.store("Deploys freeze on Fridays.")
        assert not database.breaker.is_open
        assert memory.get(held.id or "") is not None  # reads go on meanwhile

    assert memory.store("Deploys freeze on Fridays.").id is not None


def test_a_missing_database_is_named(pg_url: str, pg_collection: str) -> None:
    url = pg_url.replace("/postgres?", "/no_such_db?")
    with pytest.raises(DatabaseSetupError, match="create the database"):
        _memory(url, pg_collection, DeterministicFakeEmbedding(size=8))


def test_replicas_starting_together_on_a_new_database_all_start(pg_url: str) -> None:
    database = f"fresh_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    url = pg_url.replace("/postgres?", f"/{database}?")
    starting = threading.Barrier(6)

    def start() -> PostgresDatabase:
        starting.wait()
        return PostgresDatabase(url)  # each creates the vector extension if it is missing

    with ThreadPoolExecutor(max_workers=6) as pool:
        outcomes = [pool.submit(start) for _ in range(6)]
        errors = [future.exception() for future in outcomes]
    assert errors == [None] * 6
    for future in outcomes:
        future.result().close()
    with psycopg.connect(url) as conn:
        held = conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'")
        assert held.fetchone() == (1,)


def test_snapshot_and_vocab_map_built_on_one_replica_are_served_by_another(
    pg_url: str, pg_collection: str
) -> None:
    from cogito_lc import SnapshotBuilder, load_snapshot
    from cogito_lc.memory._vocab_file import save_vocab_map

    embeddings = DeterministicFakeEmbedding(size=16)
    builder_side = _memory(pg_url, pg_collection, embeddings, scope={"user_id": "alice"})
    builder_side.store_many(["Deploys go out on Tuesdays.", "The on-call rota is weekly."])
    built = SnapshotBuilder.from_llm(None).build(builder_side)
    assert built.path == f"postgres:cogito_state/{pg_collection}/snapshot.md"
    assert builder_side.state is not None
    save_vocab_map(builder_side.state, {"deploy": ["release", "ship"]})
    scope_state = builder_side.state.child("scopes/abc")
    scope_state.write({"snapshot.md": "scoped text"})

    other = _memory(pg_url, pg_collection, embeddings, scope={"user_id": "alice"})
    served = load_snapshot(other)
    assert served is not None
    assert served.text == built.text
    assert served.count == 2
    assert other.vocab_map == {"deploy": ["release", "ship"]}
    assert other.state is not None
    assert other.state.child("scopes/abc").read("snapshot.md") == ("scoped text")
    elsewhere = _memory(pg_url, f"{pg_collection}_b", embeddings)
    assert load_snapshot(elsewhere) is None
    assert elsewhere.vocab_map is None


def test_the_lexical_run_goes_to_the_database_beside_the_vector_searches(
    pg_url: str, pg_collection: str, minilm: Embeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = _memory(pg_url, pg_collection, minilm)
    scope = memory.scoped({"user_id": "a"})
    scope.store_many(
        [
            "The billing service listens on port 8083.",
            "Auth tokens expire after 3600 seconds.",
            "Deploys run every Tuesday after the standup.",
            "The staging database is Postgres 16 with pgvector.",
        ]
    )
    recall = scope.as_retriever(k=3)
    assert isinstance(recall, RecallB)
    assert recall._lexical_beside_search() is True
    vectors_searched = threading.Event()
    patience = [5.0]  # seconds a lexical search waits to see the vector searches start
    overlapped: list[bool] = []
    original_search = PostgresLexicalIndex.search_with_vectors
    original_vectors = PostgresAdapter.search_by_vectors

    def waiting_search(self: PostgresLexicalIndex, *args: object, **kwargs: object) -> object:
        # In flight beside the vector searches, it sees them start before it ends.
        overlapped.append(vectors_searched.wait(timeout=patience[0]))
        return original_search(self, *args, **kwargs)  # type: ignore[arg-type]

    def signalling_vectors(self: PostgresAdapter, *args: object) -> object:
        vectors_searched.set()
        return original_vectors(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(PostgresLexicalIndex, "search_with_vectors", waiting_search)
    monkeypatch.setattr(PostgresAdapter, "search_by_vectors", signalling_vectors)
    query = "which port does billing listen on?"
    beside = recall.invoke(query)
    vectors_searched.clear()
    beside_async = asyncio.run(recall.ainvoke(query))
    assert overlapped == [True, True]
    monkeypatch.setattr(type(recall), "_lexical_beside_search", lambda _self: False)
    vectors_searched.clear()
    patience[0] = 0.0
    in_turn = recall.invoke(query)
    assert overlapped == [True, True, False]  # in turn, the lexical run ends first
    assert [(doc.id, doc.page_content) for doc in beside] == [
        (doc.id, doc.page_content) for doc in in_turn
    ]
    assert [doc.id for doc in beside_async] == [doc.id for doc in in_turn]
    assert "port 8083" in beside[0].page_content


def _billing_recall(pg_url: str, collection: str, embeddings: Embeddings) -> RecallB:
    """A RecallB over two memories of scope ``a`` in Postgres."""
    scope = _memory(pg_url, collection, embeddings).scoped({"user_id": "a"})
    scope.store_many(["The billing service listens on port 8083.", "Deploys run on Tuesdays."])
    recall = scope.as_retriever(k=2)
    assert isinstance(recall, RecallB)
    return recall


def test_the_lexical_run_is_sent_before_the_query_is_embedded(
    pg_url: str, pg_collection: str, minilm: Embeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    recall = _billing_recall(pg_url, pg_collection, minilm)
    lexical_started = threading.Event()
    sent_first: list[bool] = []
    original_search = PostgresLexicalIndex.search_with_vectors
    original_embed, original_aembed = recall_b.embed_with_plan, recall_b.aembed_with_plan

    def signalling_search(self: PostgresLexicalIndex, *args: object) -> object:
        lexical_started.set()
        return original_search(self, *args)  # type: ignore[arg-type]

    def waiting_embed(*args: Any, **kwargs: Any) -> Any:
        sent_first.append(lexical_started.wait(timeout=5.0))
        return original_embed(*args, **kwargs)

    async def waiting_aembed(*args: Any, **kwargs: Any) -> Any:
        waited = asyncio.to_thread(lexical_started.wait, 5.0)
        sent_first.append(await waited)
        return await original_aembed(*args, **kwargs)

    monkeypatch.setattr(PostgresLexicalIndex, "search_with_vectors", signalling_search)
    monkeypatch.setattr(recall_b, "embed_with_plan", waiting_embed)
    monkeypatch.setattr(recall_b, "aembed_with_plan", waiting_aembed)
    query = "which port does billing listen on?"
    found = recall.invoke(query)
    lexical_started.clear()
    found_async = asyncio.run(recall.ainvoke(query))
    assert sent_first == [True, True]
    assert "port 8083" in found[0].page_content
    assert [doc.id for doc in found_async] == [doc.id for doc in found]


def test_searches_read_their_rows_vectors_so_a_recall_reads_none_by_id(
    pg_url: str, pg_collection: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    embeddings = DeterministicFakeEmbedding(size=32)
    memory = _memory(pg_url, pg_collection, embeddings, scope={"user_id": "a"})
    texts = [
        "The billing service listens on port 8083.",
        "Auth tokens expire after 3600 seconds.",
        "Deploys run every Tuesday after the standup.",
        "Billing invoices go out on the first of the month.",
    ]
    memory.store_many(texts)
    adapter = memory._store
    assert isinstance(adapter, PostgresAdapter)
    wanted = {text: np.asarray(embeddings.embed_query(text), np.float32) for text in texts}
    query = np.asarray([embeddings.embed_query("billing port")], np.float32)
    where = {"filter": {"user_id": "a"}}
    [(plain, _)] = adapter.search_by_vectors(["billing port"], query, [3], where)
    known = plain[0].id
    stored = StoredVectors(known=lambda doc_id: doc_id == known)
    [(read, _)] = adapter.search_by_vectors(["billing port"], query, [3], where, stored)
    assert [(d.id, d.page_content, d.metadata) for d in read] == [
        (d.id, d.page_content, d.metadata) for d in plain
    ]
    assert set(stored.found) == {doc.id for doc in read} - {known}
    by_id = {doc.id: doc.page_content for doc in read}
    assert all(np.array_equal(vector, wanted[by_id[key]]) for key, vector in stored.found.items())

    index = PostgresLexicalIndex(adapter)
    hits, vectors = index.search_with_vectors("billing invoices", 2, {"user_id": "a"})
    assert [(d.id, d.page_content, score) for d, score in hits] == [
        (d.id, d.page_content, score)
        for d, score in index.search("billing invoices", 2, {"user_id": "a"})
    ]
    assert len(hits) == 2
    assert all(np.array_equal(vectors[d.id or ""], wanted[d.page_content]) for d, _ in hits)

    reads: list[dict[str, str]] = []
    original = PostgresAdapter.stored_vectors

    def recording(self: PostgresAdapter, texts: dict[str, str], *args: Any) -> Any:
        reads.append(texts)
        return original(self, texts, *args)

    monkeypatch.setattr(PostgresAdapter, "stored_vectors", recording)
    found = memory.as_retriever(k=3).invoke("which port do billing invoices use?")
    assert found
    assert reads == []


def test_each_wide_hnsw_search_gets_a_candidate_list_for_its_own_k(
    pg_url: str, pg_collection: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    embeddings = DeterministicFakeEmbedding(size=32)
    memory = _memory(pg_url, pg_collection, embeddings, scope={"user_id": "a"})
    memory.store_many([f"note {i}" for i in range(8)])
    adapter = memory._store
    assert isinstance(adapter, PostgresAdapter)
    if adapter.database.vector_version >= (0, 8):
        pytest.skip("pgvector 0.8+ widens the scan itself (iterative scans)")
    sent: list[str] = []
    original = psycopg.Connection.execute

    def recording(self: psycopg.Connection[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(str(query))
        return original(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "execute", recording)
    vectors = np.asarray([embeddings.embed_query(t) for t in ("x", "y", "z")], np.float32)
    found = adapter._nearest_many(vectors, [15, 5, 30], {"user_id": "a"})
    assert [s for s in sent if "ef_search" in s] == [
        "SET LOCAL hnsw.ef_search = 150",
        "SET LOCAL hnsw.ef_search = 100",
        "SET LOCAL hnsw.ef_search = 300",
    ]
    assert [len(hits) for hits in found] == [8, 5, 8]


def test_a_failed_recall_never_runs_its_waiting_lexical_search(
    pg_url: str, pg_collection: str, minilm: Embeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    recall = _billing_recall(pg_url, pg_collection, minilm)
    assert recall._lexical_beside_search() is True
    busy = ThreadPoolExecutor(max_workers=1)  # every thread taken: the lexical run waits
    release = threading.Event()
    busy.submit(release.wait, 30.0)
    monkeypatch.setattr(recall_b, "_lexical_pool", lambda: busy)
    searched: list[str] = []
    original_search = PostgresLexicalIndex.search_with_vectors

    def recording_search(self: PostgresLexicalIndex, query: str, *args: object) -> object:
        searched.append(query)
        return original_search(self, query, *args)  # type: ignore[arg-type]

    def failing_vectors(self: PostgresAdapter, *args: object) -> object:
        msg = "the vector search failed"
        raise RuntimeError(msg)

    monkeypatch.setattr(PostgresLexicalIndex, "search_with_vectors", recording_search)
    monkeypatch.setattr(PostgresAdapter, "search_by_vectors", failing_vectors)
    try:
        with pytest.raises(RuntimeError, match="the vector search failed"):
            recall.invoke("which port does billing listen on?")
    finally:
        release.set()
        busy.shutdown(wait=True)
    assert searched == []  # cancelled before a thread took it
