"""Chroma-style ``where`` filters translated to an SQLite condition over the lexical index.

Matches like :func:`cogito_lc._core.filters.where_predicate`: a document without
the key matches only ``$ne`` and ``$nin``; a comparison with a value of another
type never matches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cogito_lc._core.filters import split_condition
from cogito_lc._core.where_sql import where_sql as walk_where

__all__ = ["where_sql"]

_SIMPLE = {"$eq": "=", "$ne": "!=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_OPERATORS = frozenset({*_SIMPLE, "$in", "$nin"})
_SCALARS = (str, int, float, bool)

ColumnFor = Callable[[str], tuple[str, list[Any]]]
"""The SQL expression of a metadata key's value and its parameters."""


def where_sql(where: Mapping[str, Any], column: ColumnFor) -> tuple[str, list[Any]]:
    """An SQL condition equal to ``where`` and its parameters.

    Raises:
        ValueError: On an operator or shape outside the ``where`` language.
    """
    return walk_where(where, lambda key, condition: _comparison(key, condition, column))


def _comparison(key: str, condition: Any, column: ColumnFor) -> tuple[str, list[Any]]:
    op, operand = split_condition(key, condition, _OPERATORS)
    expr, expr_params = column(key)
    if op in {"$in", "$nin"}:
        values = [_value(key, v) for v in operand]
        if not values:  # nothing is in an empty list
            return ("(0)", []) if op == "$in" else ("(1)", [])
        inside = f"{expr} IN ({', '.join('?' * len(values))})"
        if op == "$in":
            return f"({inside})", [*expr_params, *values]
        return f"({expr} IS NULL OR NOT {inside})", [*expr_params, *expr_params, *values]
    symbol = _SIMPLE[op]
    value = _value(key, operand)
    if op == "$ne":
        return f"({expr} IS NULL OR {expr} != ?)", [*expr_params, *expr_params, value]
    if op == "$eq":
        return f"({expr} = ?)", [*expr_params, value]
    kinds = "'text'" if isinstance(value, str) else "'integer', 'real'"
    return (
        f"(typeof({expr}) IN ({kinds}) AND {expr} {symbol} ?)",
        [*expr_params, *expr_params, value],
    )


def _value(key: str, value: Any) -> Any:
    if not isinstance(value, _SCALARS):
        msg = f"filter value for {key!r} must be a str, int, float or bool, got {value!r}."
        raise ValueError(msg)  # noqa: TRY004 - bad filter data, same class as other checks
    return int(value) if isinstance(value, bool) else value
