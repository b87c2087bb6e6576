"""Chroma-style ``where`` filters translated to an SQLite condition over the lexical index.

Matches like :func:`cogito_lc._core.filters.where_predicate`: a document without
the key matches only ``$ne`` and ``$nin``; a comparison with a value of another
type never matches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cogito_lc._core.filters import split_condition

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
    if not isinstance(where, Mapping) or not where:
        msg = f"a filter must be a non-empty dict, got {where!r}."
        raise ValueError(msg)
    parts: list[str] = []
    params: list[Any] = []
    for key, condition in where.items():
        if key in {"$and", "$or"}:
            if not isinstance(condition, list) or not condition:
                msg = f"{key} needs a non-empty list of filters, got {condition!r}."
                raise ValueError(msg)
            inner = [where_sql(part, column) for part in condition]
            joiner = " AND " if key == "$and" else " OR "
            parts.append("(" + joiner.join(sql for sql, _ in inner) + ")")
            params.extend(p for _, part_params in inner for p in part_params)
        elif key.startswith("$"):
            msg = (
                f"filter operator {key!r} is not supported here; use $and or $or at the top level."
            )
            raise ValueError(msg)
        else:
            sql, cond_params = _comparison(key, condition, column)
            parts.append(sql)
            params.extend(cond_params)
    return "(" + " AND ".join(parts) + ")", params


def _comparison(key: str, condition: Any, column: ColumnFor) -> tuple[str, list[Any]]:
    op, operand = split_condition(key, condition, _OPERATORS)
    expr, expr_params = column(key)
    if op in {"$in", "$nin"}:
        values = [_value(key, v) for v in operand]
        inside = f"{expr} IN ({', '.join('?' * len(values))})" if values else "0"
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
