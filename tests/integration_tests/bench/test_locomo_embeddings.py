"""The LoCoMo benchmark's --embeddings rows, on a small LoCoMo-shaped data set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cogito_lc.bench.locomo import main
from tests.unit_tests.bench.locomo_sample import locomo_sample


def write_sample_with_evidence(path: Path) -> Path:
    samples = locomo_sample(conversations=1)
    for qa in samples[0]["qa"]:
        session = qa["question"].rsplit(" ", 1)[-1].rstrip("?")
        qa["evidence"] = [f"D{session}:1"] if session.isdigit() else []
    path.write_text(json.dumps(samples))
    return path


def test_constructions_get_rows_side_by_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_sample_with_evidence(tmp_path / "locomo.json")
    out = tmp_path / "out.json"
    argv = [str(data), "--units", "facts", "--methods", "vector", "recall_b", "--out", str(out)]
    assert main([*argv, "--embeddings", "local", "plain-hf"]) == 0
    rows = json.loads(out.read_text())["units"]["facts"]
    assert set(rows) == {
        "vector [local]",
        "recall_b [local]",
        "vector [plain-hf]",
        "recall_b [plain-hf]",
    }
    assert rows["recall_b [plain-hf]"]["subquery_vectors"] == {
        "span": rows["recall_b [plain-hf]"]["questions"]
    }
    for metric in ("R@1", "R@5", "R@10"):
        assert rows["recall_b [local]"][metric] == rows["recall_b [plain-hf]"][metric]
    printed = capsys.readouterr().out
    assert "| recall_b [plain-hf] | span |" in printed
