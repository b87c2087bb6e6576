"""Versions of a memory: which memory replaced which, and what was current when.

A memory is never edited when a newer one replaces it. The new memory records
the ids it replaced under :data:`SUPERSEDES_KEY` (a JSON list of ids, written
with it); each replaced memory gets :data:`SUPERSEDED_BY_KEY` (the new id) and
:data:`SUPERSEDED_AT_KEY` (when it stopped being current: the new memory's
``created_at``) added to its metadata. Text, id and every other key stay as
stored.

A memory is *current at* a time ``t`` when it was created at or before ``t``
and was not superseded at or before ``t``; with no time, when it is not
superseded at all. A memory without a readable ``created_at`` counts as
created before any time.

Example:
    ```python
    from datetime import datetime, timezone

    from cogito_lc._core.versions import current_at, version_filter

    old = {"created_at": "2026-01-01T00:00:00+00:00",
           "superseded_by": "m2", "superseded_at": "2026-03-01T00:00:00+00:00"}
    assert not current_at(old)
    assert current_at(old, datetime(2026, 2, 1, tzinfo=timezone.utc))
    assert version_filter(include_superseded=True) is None
    ```
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from cogito_lc._core.timestamps import parse_since, parse_timestamp

__all__ = [
    "SUPERSEDED_AT_KEY",
    "SUPERSEDED_BY_KEY",
    "SUPERSEDES_KEY",
    "VERSION_KEYS",
    "VERSION_SEARCH_DEPTH",
    "VERSION_SEARCH_GROWTH",
    "check_as_of",
    "current_at",
    "is_superseded",
    "superseded_ids",
    "supersedes_value",
    "version_filter",
]

SUPERSEDES_KEY = "supersedes"
"""On a new memory: a JSON list of the ids of the memories it replaced."""
SUPERSEDED_BY_KEY = "superseded_by"
"""On a replaced memory: the id of the memory that replaced it."""
SUPERSEDED_AT_KEY = "superseded_at"
"""On a replaced memory: when it stopped being current (ISO 8601 UTC)."""
VERSION_KEYS = frozenset({SUPERSEDES_KEY, SUPERSEDED_BY_KEY, SUPERSEDED_AT_KEY})
"""The metadata keys the store sets for versions; user metadata may not use them."""
VERSION_SEARCH_DEPTH = 1_000
"""The most candidates a search reads while leaving out versions the read does not return."""
VERSION_SEARCH_GROWTH = 4
"""How many times deeper each such search goes than the one before."""


_CLOCK_SKEW = timedelta(seconds=5)
"""How far past this machine's clock ``as_of`` may be (another replica's clock)."""


def check_as_of(value: Any) -> datetime:
    """Parse an ``as_of`` time (ISO 8601 string or datetime), refusing one in the future.

    Raises:
        TypeError: If ``value`` is not a string, datetime or date.
        ValueError: If it is not ISO 8601, or lies in the future (what is current
            now is the default read: leave ``as_of`` out).
    """
    when = parse_since(value, name="as_of")
    now = datetime.now(timezone.utc)
    if when > now + _CLOCK_SKEW:
        msg = (
            f"as_of={when.isoformat()} is in the future (now {now.isoformat(timespec='seconds')}); "
            "leave as_of out to read what is current now."
        )
        raise ValueError(msg)
    return when


def supersedes_value(ids: list[str]) -> str:
    """The :data:`SUPERSEDES_KEY` value for these ids (metadata values are scalars)."""
    return json.dumps(list(dict.fromkeys(ids)))


def superseded_ids(metadata: Mapping[str, Any]) -> list[str]:
    """The ids a memory says it replaced; empty when it replaced none or the value is unreadable."""
    raw = metadata.get(SUPERSEDES_KEY)
    if not isinstance(raw, str) or not raw:
        return []
    try:
        value = json.loads(raw)
    except ValueError:
        return []
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, str) and item]


def is_superseded(metadata: Mapping[str, Any]) -> bool:
    """Whether a newer memory replaced this one."""
    return bool(metadata.get(SUPERSEDED_BY_KEY)) or metadata.get(SUPERSEDED_AT_KEY) is not None


def current_at(metadata: Mapping[str, Any], as_of: datetime | None = None) -> bool:
    """Whether a memory with this metadata was current at ``as_of`` (now when None)."""
    if as_of is None:
        return not is_superseded(metadata)
    created = parse_timestamp(metadata.get("created_at"))
    if created is not None and created > as_of:
        return False
    if not is_superseded(metadata):
        return True
    ended = parse_timestamp(metadata.get(SUPERSEDED_AT_KEY))
    return ended is not None and ended > as_of


def version_filter(
    *, as_of: datetime | None = None, include_superseded: bool = False
) -> Callable[[Mapping[str, Any]], bool] | None:
    """A metadata predicate keeping the memories a read should see; None keeps all.

    Args:
        as_of: Keep what was current then (wins over ``include_superseded``).
        include_superseded: Keep replaced memories too (no ``as_of``).

    Raises:
        TypeError: If ``include_superseded`` is not a bool (the text "false" is true).
    """
    if not isinstance(include_superseded, bool):
        msg = f"include_superseded must be True or False, got {include_superseded!r}."
        raise TypeError(msg)
    if as_of is not None:
        return lambda metadata: current_at(metadata, as_of)
    if include_superseded:
        return None
    return lambda metadata: not is_superseded(metadata)
