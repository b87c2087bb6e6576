"""Chroma-style ``where`` filters translated to an SQLite condition over the lexical index.

Matches like :func:`cogito_lc._core.filters.where_predicate`: a document without
the key matches only ``$ne`` and ``$nin``; a comparison with a value of another
type never matches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cogito_lc._core.filters import split_values
from cogito_lc._core.where_sql import where_sql as walk_where

__all__ = ["where_sql"]

_SIMPLE = {"$eq": "=", "$ne": "!=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_OPERATORS = frozenset({*_SIMPLE, "$in", "$nin"})

ColumnFor = Callable[[str], tuple[str, list[Any]]]
"""The SQL expression of a metadata key's value and its parameters."""


def where_sql(where: Mapping[str, Any], column: ColumnFor) -> tuple[str, list[Any]]:
    """An SQL condition equal to ``where`` and its parameters.

    Raises:
        ValueError: On an operator or shape outside the ``where`` language.
    """
    return walk_where(where, lambda key, condition: _comparison(key, condition, column))


def _comparison(key: str, condition: Any, column: ColumnFor) -> tuple[str, list[Any]]:
    op, _, given = split_values(key, condition, _OPERATORS)
    values = [int(v) if isinstance(v, bool) else v for v in given]  # SQLite stores bools as 0/1
    expr, expr_params = column(key)
    if op in {"$in", "$nin"}:
        if not values:  # nothing is in an empty list
            return ("(0)", []) if op == "$in" else ("(1)", [])
        inside = f"{expr} IN ({', '.join('?' * len(values))})"
        if op == "$in":
            return f"({inside})", [*expr_params, *values]
        return f"({expr} IS NULL OR NOT {inside})", [*expr_params, *expr_params, *values]
    symbol = _SIMPLE[op]
    value = values[0]
    if op == "$ne":
        return f"({expr} IS NULL OR {expr} != ?)", [*expr_params, *expr_params, value]
    if op == "$eq":
        return f"({expr} = ?)", [*expr_params, value]
    kinds = "'text'" if isinstance(value, str) else "'integer', 'real'"
    return (
        f"(typeof({expr}) IN ({kinds}) AND {expr} {symbol} ?)",
        [*expr_params, *expr_params, value],
    )
