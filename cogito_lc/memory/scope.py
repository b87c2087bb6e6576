"""Memory scopes: which tenant, agent and run a memory belongs to."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from cogito_lc._core.metadata import SCOPE_KEYS
from cogito_lc._core.validation import check_unicode

__all__ = ["SCOPE_KEYS", "Scope", "ScopeLike", "as_scope", "memory_id", "normalise_text"]


class Scope(BaseModel):
    """A subset of ``user_id``, ``agent_id`` and ``run_id`` that confines reads and writes.

    A memory written in a scope carries its keys in metadata; a read in a scope
    sees only memories whose metadata match every key the scope sets. The empty
    scope sets no key and sees the whole store.

    Example:
        ```python
        from cogito_lc import Scope

        assert Scope(user_id="alice").where() == {"user_id": "alice"}
        ```
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    user_id: str | None = None
    """The tenant: one end user or one application account."""
    agent_id: str | None = None
    """The agent within a tenant."""
    run_id: str | None = None
    """One run or session of an agent."""

    @field_validator(*SCOPE_KEYS)
    @classmethod
    def _check_value(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        if not value.strip():
            msg = f"scope key {info.field_name!r} must be a non-empty string, got {value!r}."
            raise ValueError(msg)
        return check_unicode(value, name=f"scope key {info.field_name!r}")

    def items(self) -> list[tuple[str, str]]:
        """The keys this scope sets, with their values."""
        return [(key, value) for key in SCOPE_KEYS if (value := getattr(self, key)) is not None]

    def metadata(self) -> dict[str, str]:
        """The metadata a memory written in this scope carries."""
        return dict(self.items())

    def where(self) -> dict[str, Any] | None:
        """A Chroma ``where`` filter for this scope, or None for the empty scope."""
        clauses = [{key: value} for key, value in self.items()]
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    def contains(self, metadata: Mapping[str, Any]) -> bool:
        """Whether a memory with this metadata is inside the scope."""
        return all(metadata.get(key) == value for key, value in self.items())

    def holds_exactly(self, metadata: Mapping[str, Any]) -> bool:
        """Whether a memory with this metadata was written in this scope, not a narrower one."""
        return self.contains(metadata) and all(
            metadata.get(key) is None for key in SCOPE_KEYS if getattr(self, key) is None
        )

    def __bool__(self) -> bool:
        return bool(self.items())


def as_scope(value: Scope | Mapping[str, Any] | None, default: Scope | None = None) -> Scope:
    """Turn a ``Scope``, a mapping of scope keys or None (the default) into a ``Scope``.

    Raises:
        ValueError: If the mapping has a key other than ``user_id``, ``agent_id``
            and ``run_id``, or a value that is not a non-empty string.
    """
    if value is None:
        return default or Scope()
    if isinstance(value, Scope):
        return value
    unknown = sorted(set(value) - set(SCOPE_KEYS))
    if unknown:
        msg = f"unknown scope key(s) {unknown}; a scope takes only {list(SCOPE_KEYS)}."
        raise ValueError(msg)
    for key, item in value.items():
        if item is not None and (not isinstance(item, str) or not item.strip()):
            msg = f"scope key {key!r} must be a non-empty string, got {item!r}."
            raise ValueError(msg)
    try:
        return Scope(**value)
    except ValidationError as exc:
        raise ValueError(
            exc.errors(include_url=False)[0]["msg"].removeprefix("Value error, ")
        ) from None


ScopeLike = Scope | Mapping[str, Any] | None
"""A scope, a mapping of scope keys, or None (the default scope)."""


def normalise_text(text: str) -> str:
    """The text a memory's id is derived from: whitespace runs folded to one space."""
    return " ".join(text.split())


def memory_id(text: str, scope: Scope) -> str:
    """The stable id of ``text`` stored in ``scope`` (storing it twice yields one memory).

    Whitespace runs are folded first, so ids stay those of earlier releases. A text
    that differs from a stored one only in whitespace has the same id here;
    :class:`~cogito_lc.MemoryStore` stores it as another memory under the next id
    of the text (``<id>-2``, ...).
    """
    payload = json.dumps([scope.metadata(), normalise_text(text)], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]
