"""Chroma ``where`` filters: evaluated in code, and translated for other vector stores.

Scopes and ``search_kwargs["filter"]`` are written as Chroma ``where`` dicts.
Other stores take other filter forms; :func:`store_filter` is the one place a
``where`` dict is translated into the form a store's search takes
(:func:`cogito_lc.stores.check_filterable` rejects a store none is known for).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar

from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

__all__ = [
    "AllFilters",
    "DocumentFilter",
    "and_filters",
    "equality_clauses",
    "equality_predicate",
    "fold_where",
    "split_condition",
    "split_values",
    "store_filter",
    "where_predicate",
]

MetadataPredicate = Callable[[Mapping[str, Any]], bool]
_T = TypeVar("_T")

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


def equality_clauses(where: Any) -> list[tuple[str, Any]] | None:
    """``where`` as (key, value) equalities, if it is only equalities joined by ``$and``.

    Example:
        ```python
        from cogito_lc._core.filters import equality_clauses

        assert equality_clauses({"$and": [{"user_id": "a"}, {"run_id": {"$eq": "r1"}}]}) == [
            ("user_id", "a"), ("run_id", "r1")
        ]
        assert equality_clauses({"n": {"$gt": 2}}) is None
        ```
    """
    if not isinstance(where, Mapping) or not where:
        return None
    return _clauses(where)


def equality_predicate(where: Any) -> Callable[[Mapping[str, Any]], bool] | None:
    """A predicate over metadata equal to ``where``, if it is only equalities joined by ``$and``.

    Returns None for any other filter (operators, ``$or``, ranges): those are
    left to the store.

    Example:
        ```python
        from cogito_lc._core.filters import equality_predicate

        same_run = equality_predicate({"$and": [{"user_id": "a"}, {"run_id": "r1"}]})
        assert same_run is not None
        assert same_run({"user_id": "a", "run_id": "r1"})
        assert not same_run({"user_id": "a"})
        assert equality_predicate({"n": {"$gt": 2}}) is None  # left to the store
        ```
    """
    if not isinstance(where, Mapping) or not where:
        return None
    clauses = _clauses(where)
    if clauses is None:
        return None

    def matches(metadata: Mapping[str, Any]) -> bool:
        return all(metadata.get(key) == value for key, value in clauses)

    return matches


_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
    "$in": lambda value, options: value in options,
    "$nin": lambda value, options: value not in options,
}
_MATCH_MISSING = frozenset({"$ne", "$nin"})
"""Operators a document without the key satisfies."""


def split_condition(key: str, condition: Any, operators: Collection[str]) -> tuple[str, Any]:
    """The operator and operand of one field's condition; a bare value means ``$eq``.

    Raises:
        ValueError: If the condition has more than one operator, an operator not
            in ``operators``, or ``$in``/``$nin`` without a list.

    Example:
        ```python
        from cogito_lc._core.filters import split_condition

        assert split_condition("n", 3, {"$eq"}) == ("$eq", 3)
        assert split_condition("n", {"$in": [1, 2]}, {"$in"}) == ("$in", [1, 2])
        ```
    """
    if not isinstance(condition, Mapping):
        condition = {"$eq": condition}
    if len(condition) != 1:
        msg = f"filter on {key!r} must have one operator, got {sorted(condition)}."
        raise ValueError(msg)
    op, operand = next(iter(condition.items()))
    if op not in operators:
        msg = (
            f"filter operator {op!r} on {key!r} is not supported here; "
            f"use one of {sorted(operators)}."
        )
        raise ValueError(msg)
    if op in {"$in", "$nin"} and not isinstance(operand, list):
        msg = f"filter operator {op!r} on {key!r} needs a list, got {type(operand).__name__}."
        raise ValueError(msg)
    return op, operand


def split_values(
    key: str, condition: Any, operators: Collection[str]
) -> tuple[str, Any, list[Any]]:
    """:func:`split_condition`, and the values compared with (a list for ``$in``/``$nin``).

    Raises:
        ValueError: As :func:`split_condition`, or if a value is not a str, int,
            float or bool.

    Example:
        ```python
        from cogito_lc._core.filters import split_values

        assert split_values("n", {"$in": [1, 2]}, {"$in"}) == ("$in", [1, 2], [1, 2])
        assert split_values("n", 3, {"$eq"}) == ("$eq", 3, [3])
        ```
    """
    op, operand = split_condition(key, condition, operators)
    values = operand if op in {"$in", "$nin"} else [operand]
    for value in values:
        if not isinstance(value, _SCALARS):
            msg = f"filter value for {key!r} must be a str, int, float or bool, got {value!r}."
            raise ValueError(msg)  # noqa: TRY004 - bad filter data
    return op, operand, values


def fold_where(
    where: Mapping[str, Any],
    comparison: Callable[[str, Any], _T],
    join: Callable[[str, list[_T]], _T],
) -> _T:
    """``where`` folded bottom-up: each key's condition by ``comparison``, lists by ``join``.

    ``join`` gets ``"$and"`` or ``"$or"`` and the folded parts; the keys of one
    dict are joined by ``"$and"``. Every translation of the ``where`` language
    (a predicate, SQL, a vector database's filter) walks it here, so its shape
    and its errors are the same everywhere.

    Raises:
        ValueError: On an operator or shape outside the ``where`` language.

    Example:
        ```python
        from cogito_lc._core.filters import fold_where

        text = fold_where(
            {"$or": [{"a": 1}, {"b": 2}]},
            lambda key, value: f"{key}={value}",
            lambda op, parts: f"{op}({', '.join(parts)})",
        )
        assert text == "$and($or($and(a=1), $and(b=2)))"
        ```
    """
    if not isinstance(where, Mapping) or not where:
        msg = f"a filter must be a non-empty dict, got {where!r}."
        raise ValueError(msg)
    parts: list[_T] = []
    for key, condition in where.items():
        if key in {"$and", "$or"}:
            if not isinstance(condition, list) or not condition:
                msg = f"{key} needs a non-empty list of filters, got {condition!r}."
                raise ValueError(msg)
            parts.append(join(key, [fold_where(part, comparison, join) for part in condition]))
        elif key.startswith("$"):
            msg = (
                f"filter operator {key!r} is not supported here; use $and or $or at the top level."
            )
            raise ValueError(msg)
        else:
            parts.append(comparison(key, condition))
    return join("$and", parts)


def _comparison(key: str, condition: Any) -> MetadataPredicate:
    op, operand = split_condition(key, condition, _COMPARISONS)
    compare = _COMPARISONS[op]

    def matches(metadata: Mapping[str, Any]) -> bool:
        if key not in metadata:
            return op in _MATCH_MISSING
        try:
            return bool(compare(metadata[key], operand))
        except TypeError:  # e.g. "a" < 1: a value of another type never matches
            return False

    return matches


def _joined(operator_name: str, inner: list[MetadataPredicate]) -> MetadataPredicate:
    join = all if operator_name == "$and" else any

    def matches(metadata: Mapping[str, Any]) -> bool:
        return join(part(metadata) for part in inner)

    return matches


def where_predicate(where: Mapping[str, Any]) -> MetadataPredicate:
    """A predicate over metadata that matches like the Chroma ``where`` filter ``where``.

    Supports equality (``{"k": v}``), the comparison operators ``$eq``,
    ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``, ``$in``, ``$nin``, and
    ``$and``/``$or`` lists; several keys in one dict are joined by AND.

    Raises:
        ValueError: On an operator or shape outside that language.

    Example:
        ```python
        from cogito_lc._core.filters import where_predicate

        matches = where_predicate({"$or": [{"n": {"$gt": 2}}, {"tag": "x"}]})
        assert matches({"n": 3})
        assert not matches({"n": 1, "tag": "y"})
        ```
    """
    return fold_where(where, _comparison, _joined)


def store_filter(store: VectorStore, where: Any) -> Any:
    """The filter to pass to ``store``'s search for a Chroma-style ``where`` filter.

    Chroma takes ``where`` as is; InMemoryVectorStore takes a function of the
    Document. A filter that is already a function, or one for a store with no
    known translation, is returned unchanged (the store's own form).

    Raises:
        ValueError: If ``where`` uses an operator that cannot be translated.
    """
    if where is None or callable(where) or not isinstance(store, InMemoryVectorStore):
        return where
    return DocumentFilter(where)


def and_filters(store: VectorStore, *filters: Any) -> Any:
    """One filter for ``store`` that passes what every given filter passes (None: no filter).

    Chroma ``where`` dicts are joined with ``$and``; for other stores each
    filter is translated with :func:`store_filter` and the results are joined
    into one function.
    """
    given = [f for f in filters if f is not None and f != {}]
    if len(given) <= 1:
        return store_filter(store, given[0]) if given else None
    if not isinstance(store, InMemoryVectorStore):
        return {"$and": given}
    return AllFilters([store_filter(store, f) for f in given])


class DocumentFilter:
    """A ``where`` filter as a function of the Document, as InMemoryVectorStore takes it.

    It keeps ``where``, so a retriever holding it copies and pickles (the
    predicate is built again from ``where``).

    Raises:
        ValueError: If ``where`` uses an operator outside :func:`where_predicate`'s.
    """

    __slots__ = ("_predicate", "where")

    def __init__(self, where: Mapping[str, Any]) -> None:
        self.where = where
        self._predicate = where_predicate(where)

    def __call__(self, document: Document) -> bool:
        return self._predicate(document.metadata)

    def __reduce__(self) -> tuple[type[DocumentFilter], tuple[Mapping[str, Any]]]:
        return DocumentFilter, (self.where,)

    def __repr__(self) -> str:
        return f"DocumentFilter({self.where!r})"


class AllFilters:
    """Document filters joined: a Document passes when every one of ``checks`` passes it."""

    __slots__ = ("checks",)

    def __init__(self, checks: Sequence[Callable[[Document], bool]]) -> None:
        self.checks = tuple(checks)

    def __call__(self, document: Document) -> bool:
        return all(check(document) for check in self.checks)

    def __reduce__(self) -> tuple[type[AllFilters], tuple[tuple[Callable[[Document], bool], ...]]]:
        return AllFilters, (self.checks,)

    def __repr__(self) -> str:
        return f"AllFilters({list(self.checks)!r})"
