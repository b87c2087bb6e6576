"""The scale benchmark end to end at a tiny size: real Chroma, worker processes, the JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.unit_tests.bench.locomo_sample import write_locomo_sample

MEMORIES = 300
QUERIES = 5


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    root = Path(__file__).resolve().parents[3]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, "-m", "cogito_lc.cli", "bench", "scale", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=600,
        check=False,
    )


def check_latency(stats: dict[str, Any]) -> None:
    assert stats["n"] == QUERIES
    assert 0 < stats["p50"] <= stats["p95"] <= stats["max"] < 60_000


def check_lexical_quality(run: dict[str, Any]) -> None:
    """FTS5 against itself unbounded: 300 memories are below every bound."""
    agreement = run["lexical_top10_agreement"]
    share, worst = run["lexical_top10_score_share"], run["lexical_top10_worst_score_share"]
    assert agreement is not None
    assert 0.9 <= agreement <= 1.0
    assert worst == pytest.approx(1.0)  # ties may be ordered apart, never scored apart
    assert share == pytest.approx(1.0)


def check_run(run: dict[str, Any], layout: str) -> None:
    assert run["memories"] == run["stored"] == MEMORIES
    assert run["layout"] == layout
    assert run["embeddings"].startswith("hash-384")
    assert run["scopes"] == (1 if layout == "one" else 100)
    assert run["recall_scope_memories"] == (MEMORIES if layout == "one" else MEMORIES // 100)
    assert run["load_s"] > 0
    assert run["load_memories_per_s"] > 0
    assert 0 < run["disk_mb"] < 500
    assert 50 < run["peak_rss_mb"] < 8_000
    rss = run["rss_mb"]
    assert 0 < rss["after_model"] <= run["peak_rss_mb"] + 1
    assert set(rss) == {"after_model", "after_load", "after_idle_queries", "after_write_queries"}
    assert run["first_recall_after_load_ms"] > 0
    for name in ("vector", "recall_idle", "recall_after_write", "store"):
        check_latency(run["latency_ms"][name])
    ratios = run["ratios"]
    vector = run["latency_ms"]["vector"]["p50"]
    idle = run["latency_ms"]["recall_idle"]["p50"]
    assert abs(ratios["recall_idle_to_vector"] - idle / vector) < 0.01 + 0.01 * idle / vector
    assert set(ratios) == {
        "recall_idle_to_vector",
        "recall_after_write_to_vector",
        "recall_after_write_to_idle",
    }
    assert all(value > 0 for value in ratios.values())
    assert run["subquery_vectors"] == "batch"  # HashEmbeddings: no model to take spans from
    check_lexical_quality(run)
    restart = run["restart"]
    assert restart["open_s"] > 0
    assert restart["first_recall_ms"] > 0
    assert restart["second_recall_ms"] > 0
    assert restart["model_load_s"] >= 0
    assert restart["process_spawn_to_first_recall_s"] >= restart["open_and_first_recall_s"]
    for name in ("vector", "recall"):
        check_latency(restart[name])
        assert restart[name]["n"] == QUERIES
    reopened = restart["recall"]["p50"] / restart["vector"]["p50"]
    assert abs(restart["recall_to_vector"] - reopened) < 0.01 + 0.01 * reopened


def test_scale_benchmark_writes_every_figure(tmp_path: Path) -> None:
    data = write_locomo_sample(tmp_path / "locomo.json", conversations=3)
    out = tmp_path / "results" / "scale.json"
    done = run_cli(
        str(data),
        "--size", str(MEMORIES),
        "--queries", str(QUERIES),
        "--embeddings", "hash",
        "--out", str(out),
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["settings"]["queries"] == QUERIES
    assert [(r["memories"], r["layout"]) for r in report["runs"]] == [
        (MEMORIES, "one"),
        (MEMORIES, "spread"),
    ]
    for run in report["runs"]:
        check_run(run, run["layout"])
    assert "| memories |" in done.stdout
    assert "hash-384 (deterministic feature hashing" in done.stdout


def test_scale_benchmark_names_a_missing_file(tmp_path: Path) -> None:
    done = run_cli(str(tmp_path / "missing.json"), "--quick", cwd=tmp_path)
    assert done.returncode == 2
    assert "missing.json is not a file" in done.stderr


def test_scale_benchmark_names_a_bad_flag(tmp_path: Path) -> None:
    data = write_locomo_sample(tmp_path / "locomo.json")
    done = run_cli(str(data), "--layout", "both", cwd=tmp_path)
    assert done.returncode == 2
    assert "--layout must be 'one' or 'spread'" in done.stderr
    done = run_cli(str(data), "--size", "50", "--embeddings", "hash", cwd=tmp_path)
    assert done.returncode == 2
    assert "--sizes must be >= --scopes (100)" in done.stderr
