"""Query vectors against stored rows: torch's product when torch is loaded, numpy's otherwise."""

from __future__ import annotations

import sys
import types
import warnings
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

torch = pytest.importorskip("torch")

from cogito_lc.stores._similarities import similarities  # noqa: E402

ROWS = 9_000  # two of numpy's row parts where two CPUs are usable


def _unit(rows: int, seed: int) -> npt.NDArray[np.float32]:
    values = np.random.default_rng(seed).standard_normal((rows, 384)).astype(np.float32)
    return values / np.linalg.norm(values, axis=1, keepdims=True)


@pytest.mark.parametrize("queries", [1, 4])
def test_torch_ranks_as_numpy_when_loaded(queries: int, numpy_products: list[int]) -> None:
    matrix, asked = _unit(ROWS, 0), _unit(queries, 1)
    found = similarities(asked, matrix)
    assert found.shape == (queries, ROWS)
    assert found.dtype == np.float32
    assert found.flags.c_contiguous
    expected = asked @ matrix.T
    np.testing.assert_allclose(found, expected, atol=1e-5)
    nearest = np.argsort(-found, axis=1)[:, :10]
    assert (nearest == np.argsort(-expected, axis=1)[:, :10]).all()
    assert numpy_products == []


def test_without_torch_numpy_splits_the_product(
    monkeypatch: pytest.MonkeyPatch, numpy_products: list[int]
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # as if never imported
    matrix, asked = _unit(ROWS, 2), _unit(4, 3)
    np.testing.assert_allclose(similarities(asked, matrix), asked @ matrix.T, atol=1e-5)
    assert numpy_products == [4]


def test_a_torch_still_importing_leaves_the_product_to_numpy(
    monkeypatch: pytest.MonkeyPatch, numpy_products: list[int]
) -> None:
    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))  # no attributes yet
    matrix, asked = _unit(ROWS, 6), _unit(3, 7)
    np.testing.assert_allclose(similarities(asked, matrix), asked @ matrix.T, atol=1e-5)
    assert numpy_products == [3]


@pytest.mark.parametrize(
    "layout",
    ["read-only", "float64", "a column slice"],
)
def test_rows_torch_cannot_share_go_to_numpy_without_a_warning(
    layout: str, numpy_products: list[int]
) -> None:
    matrix: npt.NDArray[Any] = _unit(ROWS, 4)
    if layout == "read-only":
        matrix.setflags(write=False)
    elif layout == "float64":
        matrix = matrix.astype(np.float64)
    else:
        matrix = np.concatenate([matrix, matrix], axis=1)[:, :384]
    asked = _unit(2, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = similarities(asked, matrix)
    np.testing.assert_allclose(found, asked @ matrix.T, atol=1e-5)
    assert found.dtype == np.float32
    assert numpy_products == [2]
