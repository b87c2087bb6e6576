"""How a LangGraph item is held as a memory, and the matching rules of LangGraph's stores."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from langchain_core.documents import Document
from langgraph.store.base import (
    InvalidNamespaceError,
    Item,
    MatchCondition,
    get_text_at_path,
    tokenize_path,
)

from cogito_lc._core.validation import check_unicode
from cogito_lc.memory.scope import Scope

NAMESPACE = "lg_namespace"
"""Metadata key of the namespace, its labels joined by ``.`` (a label never holds one)."""
LABEL = "lg_ns{}"
"""Metadata key of the namespace label at a depth (``lg_ns0``, ``lg_ns1``, ...): prefix filters."""
DEPTH = "lg_depth"
"""Metadata key of the number of labels: every item of the store has one."""
KEY = "lg_key"
VALUE = "lg_value"
"""Metadata key of the value, as JSON: items come back with it verbatim."""
INDEXED = "lg_indexed"
"""Whether the item was embedded from its fields (False: stored, never ranked by a query)."""
ITEM_ID = "lg_id"
CREATED = "lg_created_at"
UPDATED = "lg_updated_at"

MAX_DEPTH = 16
"""The deepest namespace the store holds (one metadata key per label)."""


def item_id(scope: Scope, namespace: Sequence[str], key: str) -> str:
    """The memory id of an item: a stable hash of the store's scope, namespace and key."""
    payload = json.dumps([scope.metadata(), list(namespace), key], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def version_id(base: str, previous: str) -> str:
    """The memory id of the version of an item written over ``previous`` (stable, unique)."""
    payload = json.dumps([base, previous], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def check_namespace(namespace: Sequence[str]) -> None:
    """Raise ``ValueError`` for a namespace the store cannot hold.

    ``InvalidNamespaceError`` (a ``ValueError``) for a label that is not a
    non-empty string without ``.`` and NUL, as LangGraph's own checks (which ops
    handed to ``batch`` directly skip).
    """
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            msg = (
                f"invalid namespace label {label!r} in {tuple(namespace)!r}: labels are "
                "non-empty strings without periods ('.') or NUL bytes."
            )
            raise InvalidNamespaceError(msg)
        check_unicode(label, name=f"namespace label {label!r}")
    if len(namespace) > MAX_DEPTH:
        msg = (
            f"namespace {tuple(namespace)!r} has {len(namespace)} labels; "
            f"CogitoStore holds namespaces of at most {MAX_DEPTH}."
        )
        raise ValueError(msg)


def dump_value(namespace: Sequence[str], key: str, value: Any) -> str:
    """The value as JSON; raises ``ValueError`` naming the item when it is not JSON."""
    if not isinstance(value, Mapping):
        msg = (
            f"value of item {key!r} in namespace {tuple(namespace)!r} must be a dict, "
            f"got {type(value).__name__}."
        )
        raise TypeError(msg)
    try:
        raw = json.dumps(dict(value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        msg = (
            f"value of item {key!r} in namespace {tuple(namespace)!r} is not JSON-serialisable "
            f"({exc}); CogitoStore stores JSON values, as LangGraph's database stores do."
        )
        raise ValueError(msg) from exc
    return check_unicode(raw, name=f"value of item {key!r}")


def index_texts(value: Mapping[str, Any], fields: Sequence[str]) -> list[str]:
    """The texts at the field paths of ``value`` (``$`` is the whole value as JSON)."""
    texts: list[str] = []
    for path in fields:
        texts.extend(get_text_at_path(value, path if path == "$" else tokenize_path(path)))
    return [text for text in texts if text.strip()]


def where(clauses: list[dict[str, Any]]) -> dict[str, Any]:
    """A Chroma ``where`` filter joining ``clauses`` (at least one) with ``$and``."""
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def prefix_clauses(prefix: Sequence[str]) -> list[dict[str, Any]]:
    """The metadata clauses of every item in a namespace starting with ``prefix``."""
    if not prefix:
        return [{DEPTH: {"$gte": 1}}]
    return [{LABEL.format(depth): label} for depth, label in enumerate(prefix)]


def timestamp(text: str) -> datetime:
    return datetime.fromisoformat(text)


def now() -> str:
    return datetime.now(timezone.utc).isoformat()


def to_item(document: Document) -> Item:
    """The LangGraph item a memory of the store holds."""
    meta = document.metadata
    return Item(
        value=json.loads(meta[VALUE]),
        key=str(meta[KEY]),
        namespace=tuple(str(meta[NAMESPACE]).split(".")),
        created_at=timestamp(meta[CREATED]),
        updated_at=timestamp(meta[UPDATED]),
    )


def matches_filter(value: Mapping[str, Any], conditions: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes a ``search(filter=...)``, as LangGraph's stores match."""
    if not conditions:
        return True
    return all(_compare(value.get(key), wanted, key) for key, wanted in conditions.items())


def _compare(held: Any, wanted: Any, field: str) -> bool:
    if isinstance(wanted, dict):
        if any(key.startswith("$") for key in wanted):
            return all(_operator(held, op, operand, field) for op, operand in wanted.items())
        if not isinstance(held, dict):
            return False
        return all(
            _compare(held.get(key), inner, f"{field}.{key}") for key, inner in wanted.items()
        )
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(held, (list, tuple))
            and len(held) == len(wanted)
            and all(_compare(h, w, field) for h, w in zip(held, wanted, strict=True))
        )
    return bool(held == wanted)


_ORDERINGS = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def _operator(held: Any, op: str, operand: Any, field: str) -> bool:
    if op == "$eq":
        return bool(held == operand)
    if op == "$ne":
        return bool(held != operand)
    if op not in _ORDERINGS:
        msg = f"filter operator {op!r} is not supported; use $eq, $ne, $gt, $gte, $lt or $lte."
        raise ValueError(msg)
    if held is None:  # the value has no such field
        return False
    if isinstance(held, str) and isinstance(operand, str):
        return bool(_ORDERINGS[op](held, operand))
    return bool(
        _ORDERINGS[op](_number(held, op, operand, field), _number(operand, op, held, field))
    )


def _number(value: Any, op: str, other: Any, field: str) -> float:
    """``value`` as a number (a string of one too, as LangGraph's stores read it) for ``op``."""
    with contextlib.suppress(TypeError, ValueError):
        return float(value)
    msg = (
        f"filter {op} on field {field!r} compares {other!r} with {value!r}: ordering compares "
        "two numbers or two strings; give the operand the type the field holds."
    )
    raise ValueError(msg)


def matches_namespace(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether a namespace passes a ``list_namespaces`` prefix or suffix condition."""
    path = condition.path
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        msg = f"unsupported namespace match type {condition.match_type!r}; use prefix or suffix."
        raise ValueError(msg)
    return all(wanted in ("*", label) for label, wanted in pairs)
