"""The ``where`` filter language walked into an SQL condition, for any SQL dialect.

Each dialect (the SQLite lexical index, the Postgres store) supplies how one
key's condition becomes SQL; the ``$and``/``$or`` structure and its errors are
the same everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cogito_lc._core.filters import fold_where

__all__ = ["Comparison", "where_sql"]

Comparison = Callable[[str, Any], tuple[str, list[Any]]]
"""One key's condition (``{"$gt": 2}``, or a bare value) as SQL and its parameters."""


def where_sql(where: Mapping[str, Any], comparison: Comparison) -> tuple[str, list[Any]]:
    """An SQL condition equal to ``where`` and its parameters.

    Raises:
        ValueError: On an operator or shape outside the ``where`` language.

    Example:
        ```python
        from cogito_lc._core.where_sql import where_sql

        sql, params = where_sql(
            {"$or": [{"a": 1}, {"b": 2}]}, lambda key, value: (f"({key} = ?)", [value])
        )
        assert sql == "((((a = ?)) OR ((b = ?))))" and params == [1, 2]
        ```
    """
    return fold_where(where, comparison, _joined)


def _joined(op: str, parts: list[tuple[str, list[Any]]]) -> tuple[str, list[Any]]:
    joiner = " AND " if op == "$and" else " OR "
    sql = "(" + joiner.join(part for part, _ in parts) + ")"
    return sql, [param for _, params in parts for param in params]
