"""The ``where`` filter language walked into an SQL condition, for any SQL dialect.

Each dialect (the SQLite lexical index, the Postgres store) supplies how one
key's condition becomes SQL; the ``$and``/``$or`` structure and its errors are
the same everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

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
            inner = [where_sql(part, comparison) for part in condition]
            joiner = " AND " if key == "$and" else " OR "
            parts.append("(" + joiner.join(sql for sql, _ in inner) + ")")
            params.extend(p for _, part_params in inner for p in part_params)
        elif key.startswith("$"):
            msg = (
                f"filter operator {key!r} is not supported here; use $and or $or at the top level."
            )
            raise ValueError(msg)
        else:
            sql, cond_params = comparison(key, condition)
            parts.append(sql)
            params.extend(cond_params)
    return "(" + " AND ".join(parts) + ")", params
