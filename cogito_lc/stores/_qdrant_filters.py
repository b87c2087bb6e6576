"""Chroma-style ``where`` filters translated into Qdrant payload filters.

Metadata lives under the payload key ``metadata`` (as ``langchain-qdrant``
writes it), so ``{"user_id": "alice"}`` becomes a condition on
``metadata.user_id``. What Qdrant cannot express exactly (an order on strings)
is left out of the pushed-down filter, which then keeps a superset: the
adapter checks every result against the ``where`` filter in code too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cogito_lc._core.filters import fold_where, split_values

__all__ = ["QdrantFilter", "where_to_qdrant"]

_RANGES = {"$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}
_OPERATORS = frozenset({"$eq", "$ne", "$in", "$nin", *_RANGES})
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class QdrantFilter:
    """A pushed-down filter and whether it keeps exactly what ``where`` keeps."""

    filter: Any
    """A ``qdrant_client.models.Filter``, or None (no condition pushed down)."""
    exact: bool
    """False when the filter keeps a superset (results must be checked in code)."""


def where_to_qdrant(where: Mapping[str, Any] | None, payload_key: str = "metadata") -> QdrantFilter:
    """The Qdrant filter for a Chroma-style ``where`` filter over ``payload_key``.

    Example:
        ```python
        from cogito_lc.stores._qdrant_filters import where_to_qdrant

        found = where_to_qdrant({"$and": [{"user_id": "a"}, {"n": {"$gt": 2}}]})
        assert found.exact
        assert found.filter.must[0].key == "metadata.user_id"
        assert where_to_qdrant(None).filter is None
        ```
    """
    if where is None:
        return QdrantFilter(None, exact=True)
    translated, exact = fold_where(
        where,
        lambda key, condition: _comparison(_field(payload_key, key), key, condition),
        _joined,
    )
    return QdrantFilter(None if translated is None else _as_filter(translated), exact)


def _joined(op: str, inner: list[tuple[Any, bool]]) -> tuple[Any, bool]:
    from qdrant_client import models

    exact = all(exact for _, exact in inner)
    pushed = [found for found, _ in inner]
    if op == "$and":
        kept = [found for found in pushed if found is not None]  # None keeps everything
        if not kept:
            return None, exact
        return (kept[0] if len(kept) == 1 else models.Filter(must=kept)), exact
    if any(found is None for found in pushed):  # one branch keeps everything: so does the $or
        return None, False
    return models.Filter(should=pushed), exact


def _field(prefix: str, key: str) -> str | None:
    """The payload path of a metadata key (quoted when it is not a plain name), or None."""
    if _PLAIN_KEY.fullmatch(key):
        return f"{prefix}.{key}"
    return None if '"' in key or "\\" in key else f'{prefix}."{key}"'


def _comparison(field: str | None, key: str, condition: Any) -> tuple[Any, bool]:
    from qdrant_client import models

    op, operand, values = split_values(key, condition, _OPERATORS)
    # Checked in code: a key no payload path can name, or an integer Qdrant's float
    # comparison would round.
    if field is None or any(_past_float(value) for value in [operand, *values]):
        return None, False
    if op == "$eq":
        return _equal(field, operand), True
    if op == "$ne":
        return models.Filter(must_not=[_equal(field, operand)]), True
    if op in {"$in", "$nin"}:
        any_of = _any_of(field, values)
        return (any_of if op == "$in" else models.Filter(must_not=[any_of])), True
    if isinstance(operand, str):
        return None, False  # an order on strings: checked in code
    return _ordered(field, _RANGES[op], float(operand)), True


_EXACT_FLOAT_INTS = 2**53
"""Integers past this size have no float of their own: 2**53 + 1 becomes 2**53."""


def _past_float(value: Any) -> bool:
    """Whether ``value`` is an integer a float cannot hold exactly."""
    return isinstance(value, int) and abs(value) > _EXACT_FLOAT_INTS


def _equal(field: str, value: Any) -> Any:
    """Equal as Python compares: a number equals any number of the same value; bools are 0, 1."""
    from qdrant_client import models

    if isinstance(value, str):
        return models.FieldCondition(key=field, match=models.MatchValue(value=value))
    number = float(value)
    parts: list[Any] = [
        models.FieldCondition(key=field, range=models.Range(gte=number, lte=number))
    ]
    parts.extend(_bools(field, lambda flag: float(flag) == number))
    return parts[0] if len(parts) == 1 else models.Filter(should=parts)


def _ordered(field: str, bound: str, number: float) -> Any:
    """A number ordered against ``number`` (bools count as 0 and 1, as in Python)."""
    from qdrant_client import models

    compare: Callable[[float], bool] = {
        "gt": lambda x: x > number,
        "gte": lambda x: x >= number,
        "lt": lambda x: x < number,
        "lte": lambda x: x <= number,
    }[bound]
    parts: list[Any] = [models.FieldCondition(key=field, range=models.Range(**{bound: number}))]
    parts.extend(_bools(field, lambda flag: compare(float(flag))))
    return parts[0] if len(parts) == 1 else models.Filter(should=parts)


def _bools(field: str, keeps: Callable[[bool], bool]) -> list[Any]:
    from qdrant_client import models

    return [
        models.FieldCondition(key=field, match=models.MatchValue(value=flag))
        for flag in (False, True)
        if keeps(flag)
    ]


def _any_of(field: str, values: list[Any]) -> Any:
    from qdrant_client import models

    if not values:
        return models.HasIdCondition(has_id=[])  # matches nothing
    return models.Filter(should=[_equal(field, value) for value in values])


def _as_filter(node: Any) -> Any:
    from qdrant_client import models

    return node if isinstance(node, models.Filter) else models.Filter(must=[node])
