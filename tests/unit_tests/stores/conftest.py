"""Fixtures shared by the store unit tests."""

from __future__ import annotations

from typing import Any

import pytest

from cogito_lc.stores import _similarities


@pytest.fixture
def numpy_products(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the products that ran on numpy."""
    calls: list[int] = []
    numpy_product = _similarities.row_product

    def counted(queries: Any, matrix: Any) -> Any:
        calls.append(len(queries))
        return numpy_product(queries, matrix)

    monkeypatch.setattr(_similarities, "row_product", counted)
    return calls
