"""Chroma ``where`` filters made of equalities, evaluated in code."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["equality_predicate"]

_SCALARS = (str, int, float, bool)


def _clauses(where: Mapping[str, Any]) -> list[tuple[str, Any]] | None:
    if set(where) == {"$and"} and isinstance(where["$and"], list):
        found: list[tuple[str, Any]] = []
        for part in where["$and"]:
            inner = _clauses(part) if isinstance(part, Mapping) else None
            if inner is None:
                return None
            found.extend(inner)
        return found
    if len(where) != 1:
        return None
    key, value = next(iter(where.items()))
    if key.startswith("$"):
        return None
    if isinstance(value, Mapping) and set(value) == {"$eq"}:
        value = value["$eq"]
    return [(key, value)] if isinstance(value, _SCALARS) else None


def equality_predicate(where: Any) -> Callable[[Mapping[str, Any]], bool] | None:
    """A predicate over metadata equal to ``where``, if it is only equalities joined by ``$and``.

    Returns None for any other filter (operators, ``$or``, ranges): those are
    left to the store.

    Example:
        >>> equality_predicate({"$and": [{"user_id": "a"}, {"run_id": "r1"}]})({"user_id": "a"})
        False
    """
    if not isinstance(where, Mapping) or not where:
        return None
    clauses = _clauses(where)
    if clauses is None:
        return None

    def matches(metadata: Mapping[str, Any]) -> bool:
        return all(metadata.get(key) == value for key, value in clauses)

    return matches
