"""Read the timestamps memories carry and the ``since`` bounds users give.

Stored timestamps are ISO 8601 strings (``created_at`` as written by
:class:`~cogito_lc.MemoryStore`: ``2026-03-27T14:05:00+00:00``), but stores filled
by other code may hold ``Z``-suffixed or naive strings, dates, ``datetime``
objects or Unix epoch seconds. Everything is compared as an aware UTC
``datetime``; naive values are taken as UTC.

Example:
    ```python
    from cogito_lc._core.timestamps import parse_since, parse_timestamp

    parse_since("2026-03-27")  # datetime(2026, 3, 27, 0, 0, tzinfo=timezone.utc)
    parse_timestamp("2026-03-27T16:05:00+02:00")  # 14:05 UTC
    parse_timestamp("yesterday")  # None
    ```
"""

from __future__ import annotations

import math
from datetime import date, datetime, timezone
from typing import Any

from cogito_lc._core.validation import echo

__all__ = ["parse_since", "parse_timestamp"]

_ZULU_SUFFIXES = ("Z", "z")


def parse_timestamp(value: Any) -> datetime | None:
    """Return ``value`` as an aware UTC ``datetime``, or ``None`` if it is not a timestamp.

    Args:
        value: An ISO 8601 string (date, date and time, ``Z`` or an offset), a
            ``datetime`` or ``date``, or Unix epoch seconds (int or float).

    Returns:
        The instant in UTC; ``None`` for anything else.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, datetime):
        return _as_utc(value)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=timezone.utc)
    if isinstance(value, (int, float)):
        return _from_epoch(float(value))
    if isinstance(value, str):
        return _from_iso(value)
    return None


def parse_since(value: Any, *, name: str = "since") -> datetime:
    """Parse a user's ``since`` bound, raising a clear error when it is not a timestamp.

    Args:
        value: An ISO 8601 string such as ``"2026-03-01"`` or
            ``"2026-03-01T09:00:00Z"``, a ``datetime`` or a ``date``.
        name: Argument name used in the error.

    Returns:
        The bound as an aware UTC ``datetime``.

    Raises:
        TypeError: If ``value`` is neither a string, a ``datetime`` nor a ``date``.
        ValueError: If the string is not ISO 8601, or the instant lies outside the
            years 1 to 9999 once moved to UTC.
    """
    if isinstance(value, bool) or not isinstance(value, (str, datetime, date)):
        msg = (
            f"{name} must be an ISO 8601 string or a datetime, got {type(value).__name__}; "
            "for example '2026-03-01' or '2026-03-01T09:00:00Z'."
        )
        raise TypeError(msg)
    parsed = parse_timestamp(value)
    if parsed is None:
        if isinstance(value, str) and _from_iso(value, in_utc=False) is None:
            problem = "is not an ISO 8601 timestamp"
        else:
            problem = "lies outside the years 1 to 9999 in UTC"
        msg = (
            f"{name}={echo(value)} {problem}; use for example "
            "'2026-03-01', '2026-03-01T09:00:00Z' or '2026-03-01T09:00:00+02:00'."
        )
        raise ValueError(msg)
    return parsed


def _as_utc(value: datetime) -> datetime | None:
    if value.tzinfo is None or value.utcoffset() is None:
        return value.replace(tzinfo=timezone.utc)
    try:
        return value.astimezone(timezone.utc)
    except OverflowError:  # 0001-01-01T00:00+01:00 is before year 1 in UTC
        return None


def _from_epoch(seconds: float) -> datetime | None:
    if not math.isfinite(seconds):
        return None
    try:
        return datetime.fromtimestamp(seconds, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def _from_iso(text: str, *, in_utc: bool = True) -> datetime | None:
    cleaned = text.strip()
    if cleaned.endswith(_ZULU_SUFFIXES):
        cleaned = cleaned[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(cleaned)
    except ValueError:
        return None
    return _as_utc(parsed) if in_utc else parsed
