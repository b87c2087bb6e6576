"""Prefer the latest version of a fact when a query asks about the present, with no model.

Memories written over time may hold the same subject at different times ("I live
in Austin", later "I'm settled in Denver now"). When nothing marked the older one
superseded, a query about the present ("Where does the user live now?") should
still get the newer one first. Among the candidates that nearly tie with the best
one and are about the same subject (their vectors close to the best one's), the
newest (``created_at``) is moved to the top.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

import numpy as np

from cogito_lc._core.timestamps import parse_timestamp
from cogito_lc.retrievers._ranking import Vector

__all__ = ["RecencyTrigger", "asks_about_present", "prefer_recent"]

RecencyTrigger = Literal["off", "cue", "present"]
"""When the step runs: never, on a present-time cue word, or also on any present-tense question."""

_PRESENT_CUES = re.compile(
    r"\b(?:currently|current|now|nowadays|still|any\s?more|latest|these\s+days|"
    r"at\s+the\s+moment|right\s+now|presently|most\s+recent(?:ly)?|today)\b",
    re.IGNORECASE,
)
_PAST_CUES = re.compile(
    r"\b(?:did|was|were|had|used\s+to|before|previous(?:ly)?|former(?:ly)?|originally|"
    r"first|earlier|ago|last\s+(?:year|month|week|time)|back\s+then|past|old)\b",
    re.IGNORECASE,
)
_PRESENT_VERBS = re.compile(
    r"\b(?:is|are|am|does|do|has|have|'s|'re|uses?|lives?|works?|owns?|drives?|eats?|likes?|"
    r"prefers?|plays?|reads?|goes|go)\b",
    re.IGNORECASE,
)


def asks_about_present(query: str, trigger: RecencyTrigger) -> bool:
    """Whether ``query`` asks what holds now (see :data:`RecencyTrigger`).

    Example:
        ```python
        from cogito_lc.retrievers._recency import asks_about_present

        assert asks_about_present("Where does the user currently live?", "cue")
        assert not asks_about_present("Where does the user live?", "cue")
        assert asks_about_present("Where does the user live?", "present")
        assert not asks_about_present("Where did the user live before Denver?", "present")
        ```
    """
    if trigger == "off":
        return False
    if _PRESENT_CUES.search(query):
        return True
    if trigger == "cue":
        return False
    return bool(_PRESENT_VERBS.search(query)) and not _PAST_CUES.search(query)


def prefer_recent(
    scores: Vector,
    vectors: Vector,
    created: Sequence[str | None],
    *,
    margin: float,
    similarity: float,
) -> Vector:
    """``scores`` with the newest same-subject near-tie of the best candidate put first.

    Args:
        scores: The candidates' final scores (higher first).
        vectors: The candidates' vectors, one row each.
        created: The candidates' ``created_at`` values.
        margin: How far below the best score a candidate may be to count as tied.
        similarity: How close (cosine) its vector must be to the best one's.

    Returns:
        New scores: the newest tied candidate just above the best; others unchanged.
    """
    if len(scores) < 2 or margin <= 0:
        return scores
    best = int(np.argmax(scores))
    norms = np.linalg.norm(vectors, axis=1)
    norms[norms == 0] = 1.0
    unit = vectors / norms[:, None]
    close = unit @ unit[best]
    tied = np.flatnonzero((scores >= scores[best] - margin) & (close >= similarity))
    times = {int(i): parse_timestamp(created[int(i)]) for i in tied}
    dated = [i for i, when in times.items() if when is not None]
    best_time = times.get(best)
    if best_time is None or len(dated) < 2:
        return scores
    newest = max(dated, key=lambda i: (times[i], -i))
    if newest == best or times[newest] == best_time:
        return scores
    moved: Vector = scores.copy()
    moved[newest] = scores[best] + 1e-6
    return moved
