"""Where a benchmark writes: the published file only for a full default run in the checkout."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import pytest

from cogito_lc.bench import knowledge_update, locomo, recency_cv, scale
from cogito_lc.bench.results import narrowing_flags, results_path
from tests.unit_tests.bench.locomo_sample import write_locomo_sample


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory laid out like the repository root, with its results folder."""
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def is_temporary(path: Path, published: Path) -> bool:
    """Whether ``path`` is a new file of the temp directory, outside the working directory."""
    temp = Path(tempfile.gettempdir()).resolve()
    outside = not path.resolve().is_relative_to(Path.cwd().resolve())
    inside_temp = path.resolve().is_relative_to(temp)
    named = path.suffix == published.suffix and path.name.startswith(published.stem)
    return outside and inside_temp and named


def test_a_partial_run_writes_under_the_temp_directory(checkout: Path) -> None:
    published = Path("benchmarks/results/scale.json")
    path = results_path(None, published, ["--quick"])
    assert path.resolve() != (checkout / published).resolve()
    assert is_temporary(path, published)


def test_a_full_run_writes_the_published_file(checkout: Path) -> None:
    published = Path("benchmarks/results/scale.json")
    assert results_path(None, published, []) == published


def test_an_explicit_out_always_wins(checkout: Path) -> None:
    published = Path("benchmarks/results/scale.json")
    mine = checkout / "mine.json"
    assert results_path(mine, published, ["--quick"]) == mine
    assert results_path(mine, published, []) == mine


def test_a_full_run_outside_the_checkout_creates_no_results_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    published = Path("benchmarks/results/locomo.json")
    path = results_path(None, published, [])
    assert is_temporary(path, published)
    assert not (tmp_path / "benchmarks").exists()


def test_narrowing_flags_name_what_differs_from_the_full_run() -> None:
    full = {"quick": False, "sizes": (10, 20), "questions": None}
    args = argparse.Namespace(quick=False, sizes=[20, 10], questions=None)
    assert narrowing_flags(args, full) == []
    args = argparse.Namespace(quick=True, sizes=[10], questions=5)
    assert narrowing_flags(args, full) == ["--quick", "--sizes", "--questions"]


def test_scale_quick_leaves_the_published_results_alone(checkout: Path) -> None:
    data = str(write_locomo_sample(checkout / "locomo.json"))
    assert is_temporary(scale.parse_args([data, "--quick"]).out, scale.DEFAULT_OUT)
    assert is_temporary(scale.parse_args([data, "--sizes", "1000"]).out, scale.DEFAULT_OUT)
    assert scale.parse_args([data]).out == scale.DEFAULT_OUT
    assert scale.parse_args([data, "--quick", "--out", "x.json"]).out == Path("x.json")


@pytest.mark.parametrize(
    ("module", "argv"),
    [
        (locomo, ["--questions", "5"]),
        (locomo, ["--conversations", "2"]),
        (locomo, ["--units", "facts"]),
        (knowledge_update, ["--conversations", "10"]),
        (recency_cv, ["--conversations", "12"]),
    ],
)
def test_a_narrowed_run_leaves_the_published_results_alone(
    checkout: Path, module: Any, argv: list[str]
) -> None:
    published = module.DEFAULT_OUT
    assert module.parse_args([]).out == published
    assert is_temporary(module.parse_args(argv).out, published)
