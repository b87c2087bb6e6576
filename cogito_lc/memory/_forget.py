"""Forget requests: telling "forget my phone number" from a memory, and its audit record."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

__all__ = ["ForgetResult", "audit_record", "audit_text", "forget_subject"]

_REQUEST = re.compile(
    r"""^\W*(?:(?:hey|ok|okay|oh|actually|also|and|but|so|well|um|hmm|one\s+more\s+thing)\W+)*
    (?:please\s+)?(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?)?
    (?P<verb>forget|erase|delete|remove)\s+(?P<rest>.+)$""",
    re.IGNORECASE | re.VERBOSE | re.DOTALL,
)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|my|me|mine|myself|we|our|ours|us)\b", re.I)
_REPLACEMENT = re.compile(r"\b(?:use|uses|using|instead|now|rather\s+than)\b", re.IGNORECASE)
_CLAUSE_END = re.compile(r"\s*(?:[,;:]|[.!?](?:\s|$)).*$", re.DOTALL)
_FILLER = re.compile(
    r"^(?:that\s+|about\s+|(?:everything|anything|all|what(?:ever)?)\s+(?:you\s+know\s+)?(?:about\s+)?)+",
    re.IGNORECASE,
)
_POLITE_END = re.compile(r"[\s,]*(?:please|thanks|thank you)?[\s.!?]*$", re.IGNORECASE)
_AUDIT_PREFIX = "forget-audit-"


def forget_subject(text: str) -> str | None:
    """What a forget request asks to forget, or None when ``text`` is not one.

    A request tells the assistant to forget: "Please forget my phone number.",
    "Forget that I have a dog.", "Can you forget about my old address?", "Forget
    the name Juniper, it's confidential." (the subject is its first clause). A note
    that goes on to say what holds instead ("Forget the staging server; use
    prod-2") is a memory like any other, and so is "delete"/"remove" unless it is
    about the speaker ("Remove the old index before migrating" is a note).

    Example:
        ```python
        from cogito_lc.memory._forget import forget_subject

        assert forget_subject("Please forget my phone number.") == "my phone number"
        assert forget_subject("Forget the name Juniper, it's private.") == "the name Juniper"
        assert forget_subject("Forget the staging server; use prod-2.") is None
        ```
    """
    found = _REQUEST.match(text.strip())
    if found is None:
        return None
    rest = found.group("rest").strip()
    clause = _CLAUSE_END.sub("", rest)
    if ";" in rest or _REPLACEMENT.search(rest[len(clause) :]):
        return None
    if found.group("verb").lower() in {"delete", "remove"} and not _FIRST_PERSON.search(rest):
        return None
    subject = _POLITE_END.sub("", _FILLER.sub("", clause.strip()))
    return subject or None


@dataclass
class ForgetResult:
    """What :meth:`MemoryStore.forget <cogito_lc.MemoryStore.forget>` removed.

    Attributes:
        ids: The ids of the memories forgotten (each with every version of it).
        method: ``ids`` (the ids were given) or ``matched`` (found from a query
            without a model: the memories at least ``forget_min_cosine`` similar to it).
        audit: The audit record kept of it: ids, time, scope and reason, never the text.
    """

    ids: list[str]
    method: str
    audit: dict[str, Any] = field(default_factory=dict)

    @property
    def count(self) -> int:
        """How many memories were forgotten."""
        return len(self.ids)


def audit_record(
    ids: Sequence[str], scope: Mapping[str, str], reason: str
) -> tuple[str, dict[str, Any]]:
    """A state-store name and the record of one forgetting (holds no memory text)."""
    now = datetime.now(timezone.utc)
    record = {
        "event": "forget",
        "ids": list(ids),
        "count": len(ids),
        "at": now.isoformat(timespec="milliseconds"),
        "scope": dict(scope),
        "reason": reason,
    }
    name = f"{_AUDIT_PREFIX}{now.strftime('%Y%m%dT%H%M%S%f')}-{uuid.uuid4().hex[:8]}.json"
    return name, record


def audit_text(record: Mapping[str, Any]) -> str:
    """The record as the JSON kept in the state store."""
    return json.dumps(record, sort_keys=True)
