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
from datetime import datetime
from typing import Literal

import numpy as np

from cogito_lc._core.timestamps import parse_timestamp
from cogito_lc.retrievers._ranking import Vector

__all__ = ["RecencyBasis", "RecencyTrigger", "asks_about_present", "prefer_recent", "recency_step"]

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
_DATED = re.compile(
    r"\b(?:(?:19|20)\d\d|january|february|march|april|june|july|august|september|"
    r"october|november|december)\b",
    re.IGNORECASE,
)
"""A year or a month named (not "May", a modal verb too): the question asks about that time."""
_PRESENT_VERBS = re.compile(
    r"\b(?:is|are|am|does|do|has|have|'s|'re|uses?|lives?|works?|owns?|drives?|eats?|likes?|"
    r"prefers?|plays?|reads?|goes|go)\b",
    re.IGNORECASE,
)


def asks_about_present(query: str, trigger: RecencyTrigger) -> bool:
    """Whether ``query`` asks what holds now (see :data:`RecencyTrigger`).

    A query naming a year or a month asks about that time, whatever its tense.

    Example:
        ```python
        from cogito_lc.retrievers._recency import asks_about_present

        assert asks_about_present("Where does the user currently live?", "cue")
        assert not asks_about_present("Where does the user live?", "cue")
        assert asks_about_present("Where does the user live?", "present")
        assert not asks_about_present("Where did the user live before Denver?", "present")
        assert not asks_about_present("What is she currently reading in July 2023?", "cue")
        ```
    """
    if trigger == "off" or _DATED.search(query):
        return False
    if _PRESENT_CUES.search(query):
        return True
    if trigger == "cue":
        return False
    return bool(_PRESENT_VERBS.search(query)) and not _PAST_CUES.search(query)


RecencyBasis = Literal["score", "cosine"]
"""What a near-tie is measured on: the final blended score, or the cosine to the query."""


def prefer_recent(
    scores: Vector,
    vectors: Vector,
    created: Sequence[object],
    *,
    margin: float,
    similarity: float,
    cosines: Vector | None = None,
    depth: int = 0,
    chain: int = 0,
) -> Vector:
    """``scores`` with the newest same-subject near-tie of the best candidate put first.

    Args:
        scores: The candidates' final scores (higher first).
        vectors: The candidates' vectors, one row each.
        created: The candidates' ``created_at`` values.
        margin: How far below the best a candidate may be to count as tied: below the
            best score, or with ``cosines``, below the best cosine to the query among
            the candidates considered.
        similarity: How close (cosine) its vector must be to the best one's (with
            ``chain``, to the version before it).
        cosines: The candidates' cosines to the query; given, near-ties are measured
            on them instead of on ``scores`` (the blended score favours a version that
            shares the query's words, often the old one: "Does the user still live in
            Austin?").
        depth: Only the ``depth`` best candidates by score are considered (0: all).
        chain: 0 moves the newest tied candidate up. Above 0, follow the versions
            instead, at most ``chain`` steps: from the best, the tied candidate newer
            than the current one and most like it (at least ``similarity``), and so on;
            the last one reached goes first. A newer line merely near the best in
            vector space is then passed over for the one most like it.

    Returns:
        New scores: the chosen candidate just above the best; others unchanged.
    """
    if len(scores) < 2 or margin <= 0:
        return scores
    ranked = np.argsort(-scores, kind="stable")
    considered = ranked[:depth] if depth > 0 else ranked
    best = int(ranked[0])
    norms = np.linalg.norm(vectors, axis=1)
    norms[norms == 0] = 1.0
    unit = vectors / norms[:, None]
    basis = scores if cosines is None else cosines
    level = basis[best] if cosines is None else basis[considered].max()
    near = considered[basis[considered] >= level - margin]
    times = {int(i): parse_timestamp(created[int(i)]) for i in near}
    times[best] = parse_timestamp(created[best])
    if times[best] is None:
        return scores
    if chain > 0:
        chosen = _follow(unit, near, times, best, similarity, chain)
    else:
        close = unit[near] @ unit[best]
        dated = [
            int(i) for i, c in zip(near, close, strict=True) if c >= similarity and times[int(i)]
        ]
        chosen = max([best, *dated], key=lambda i: (times[i], -i))
    if chosen == best or times[chosen] == times[best]:
        return scores
    moved: Vector = scores.copy()
    moved[chosen] = scores[best] + 1e-6
    return moved


def _follow(
    unit: Vector,
    near: Vector,
    times: dict[int, datetime | None],
    best: int,
    similarity: float,
    steps: int,
) -> int:
    """The candidate the versions lead to from ``best`` (see ``chain`` of prefer_recent)."""
    current = best
    seen = {best}
    for _ in range(steps):
        now = times[current]
        close = unit[near] @ unit[current]
        later = [
            (float(c), -int(i))
            for i, c in zip(near, close, strict=True)
            if int(i) not in seen
            and c >= similarity
            and (when := times[int(i)]) is not None
            and now is not None
            and when > now
        ]
        if not later:
            break
        current = -max(later)[1]
        seen.add(current)
    return current


def recency_step(
    query: str,
    scores: Vector,
    cosines: Vector,
    vectors: Vector,
    created: Sequence[object],
    *,
    trigger: RecencyTrigger,
    margin: float,
    similarity: float,
    basis: RecencyBasis = "score",
    depth: int = 0,
    chain: int = 0,
) -> Vector:
    """RecallB's recency step: :func:`prefer_recent` when ``query`` asks about the present.

    Args:
        query: The query as the user wrote it.
        scores: The candidates' final scores (higher first).
        cosines: Each candidate's cosine to the query.
        vectors: The candidates' vectors, one row each.
        created: The candidates' ``created_at`` values.
        trigger: When the step runs (:data:`RecencyTrigger`).
        margin: See :func:`prefer_recent`.
        similarity: See :func:`prefer_recent`.
        basis: Near-ties on the blended ``score`` or on the ``cosine`` to the query.
        depth: See :func:`prefer_recent`.
        chain: See :func:`prefer_recent`.
    """
    if not asks_about_present(query, trigger):
        return scores
    return prefer_recent(
        scores,
        vectors,
        created,
        margin=margin,
        similarity=similarity,
        cosines=cosines if basis == "cosine" else None,
        depth=depth,
        chain=chain,
    )
