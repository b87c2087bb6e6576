"""The benchmarks' Postgres runs at a tiny size, on the session's private Postgres."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from cogito_lc import MemoryStore
from cogito_lc.bench.locomo import (
    build_methods,
    build_unit,
    iter_samples,
    main,
    make_store,
    parse_args,
    postgres_store,
)
from cogito_lc.bench.locomo import postgres_url as locomo_postgres_url
from cogito_lc.bench.scale import lexical_quality
from cogito_lc.retrievers import RecallB
from cogito_lc.stores import PostgresLexicalIndex
from tests.integration_tests.bench.test_locomo_embeddings import write_sample_with_evidence

ROOT = Path(__file__).resolve().parents[3]


def _tables(pg_url: str, prefix: str) -> list[str]:
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE tablename LIKE %s", (f"{prefix}%",)
        ).fetchall()
    return [row[0] for row in rows]


def test_recall_b_pg_ranks_with_postgres_full_text_and_drops_its_tables(
    pg_url: str, minilm: Embeddings, tmp_path: Path
) -> None:
    data = write_sample_with_evidence(tmp_path / "locomo.json")
    with contextlib.ExitStack() as stack:
        assert locomo_postgres_url(parse_args([str(data)]), stack) is None  # opt-in only
    unit = build_unit(next(iter_samples(data, 1)), "facts")
    store = make_store(minilm, unit.documents)
    with postgres_store(pg_url, minilm, unit.documents) as memory:
        methods = build_methods(store, unit.documents, {}, {"recall_b_pg"}, None, memory)
        sync = methods["recall_b_pg"].lexical_sync  # type: ignore[attr-defined]
        assert isinstance(sync.index, PostgresLexicalIndex)
        assert _tables(pg_url, "locomo_")
    store.delete_collection()
    assert _tables(pg_url, "locomo_") == []

    out = tmp_path / "out.json"
    argv = [str(data), "--units", "facts", "--out", str(out), "--database-url", pg_url]
    assert main([*argv, "--methods", "recall_b_fts", "recall_b_pg"]) == 0
    rows = json.loads(out.read_text())["units"]["facts"]
    assert set(rows) == {"recall_b_fts", "recall_b_pg"}
    assert rows["recall_b_pg"]["questions"] == rows["recall_b_fts"]["questions"] > 0
    assert rows["recall_b_pg"]["R@10"] > 0
    assert _tables(pg_url, "locomo_") == []


def test_service_benchmark_measures_each_replica_count_over_one_postgres(
    pg_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "service.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    args = ["--store", "postgres", "--database-url", pg_url, "--replicas", "1", "2"]
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "service.py"),
            *args,
            "--memories",
            "16",
            "--requests",
            "2",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert [section["replicas"] for section in report["replicas"]] == [1, 2]
    assert report["load"]["count"] == 16
    for section in report["replicas"]:
        assert len(section["rss_mb_after"]) == section["replicas"]
        runs = {(row["endpoint"], row["clients"]): row for row in section["runs"]}
        assert set(runs) == {(e, c) for e in ("/store", "/recall_b", "/query") for c in (1, 8)}
        assert all(row["errors"] == 0 and row["rps"] > 0 for row in runs.values())
        assert runs["/query", 8]["requests"] == 8
    assert "| 2 | `/query` | 8 |" in done.stdout
    assert _tables(pg_url, report["table"]) == []

    refused = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "service.py"), "--replicas", "2"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 2
    assert "--replicas needs --store postgres" in refused.stderr


def test_scale_lexical_quality_is_measured_against_an_unbounded_postgres_search(
    pg_url: str, pg_collection: str
) -> None:
    memory = MemoryStore.from_database_url(
        pg_url, embeddings=DeterministicFakeEmbedding(size=8), collection=pg_collection
    )
    scope = memory.scoped({"user_id": "a"})
    scope.store_many([f"shared words in note {i} about topic {i % 3}" for i in range(30)])
    recall = scope.as_retriever(k=3)
    assert isinstance(recall, RecallB)
    queries = ["shared words topic 1", "note 7", "topic 2 words"]
    exact = lexical_quality(recall, queries, {"user_id": "a"})  # below every bound
    assert exact == {
        "lexical_top10_agreement": 1.0,
        "lexical_top10_score_share": 1.0,
        "lexical_top10_worst_score_share": 1.0,
    }
    assert recall.lexical_sync is not None
    index = recall.lexical_sync.index
    assert isinstance(index, PostgresLexicalIndex)
    index.posting_budget = 2  # past the budget: the rarest terms' rows only
    bounded = lexical_quality(recall, queries, {"user_id": "a"})
    assert bounded["lexical_top10_agreement"] < 1.0
    share = bounded["lexical_top10_score_share"]
    assert bounded["lexical_top10_worst_score_share"] <= share < 1.0
    assert share > 0.0
