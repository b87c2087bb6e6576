"""The zero-LLM recency step: present-time questions get the newest same-subject near-tie."""

from __future__ import annotations

import numpy as np
import pytest

from cogito_lc.retrievers._recency import asks_about_present, prefer_recent


@pytest.mark.parametrize(
    ("query", "cue", "present"),
    [
        ("Where does the user currently live?", True, True),
        ("What is my phone number now?", True, True),
        ("Is the user still vegetarian?", True, True),
        ("Which editor does the team use these days?", True, True),
        ("Does she eat meat any more?", True, True),
        ("Where does the user live?", False, True),
        ("What is the user's favourite colour?", False, True),
        ("Where did the user live before Denver?", False, False),
        ("What was the user's old phone number?", False, False),
        ("When did Caroline go to the support group?", False, False),
    ],
)
def test_present_questions_are_told_from_past_ones(query: str, cue: bool, present: bool) -> None:
    assert asks_about_present(query, "cue") is cue
    assert asks_about_present(query, "present") is present
    assert asks_about_present(query, "off") is False


VECTORS = np.asarray([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]], dtype=np.float32)


def test_the_newest_close_near_tie_goes_first() -> None:
    scores = np.asarray([0.9, 0.85, 0.88], dtype=np.float32)
    created = ["2026-01-01", "2026-03-01", "2026-05-01"]
    moved = prefer_recent(scores, VECTORS, created, margin=0.1, similarity=0.8)
    assert int(np.argmax(moved)) == 1  # the newest one (2) is about another subject
    assert moved[0] == scores[0]
    assert moved[2] == scores[2]


def test_nothing_moves_outside_the_margin_or_without_dates() -> None:
    scores = np.asarray([0.9, 0.7, 0.1], dtype=np.float32)
    created: list[str | None] = ["2026-01-01", "2026-03-01", None]
    assert prefer_recent(scores, VECTORS, created, margin=0.1, similarity=0.8) is scores
    undated: list[str | None] = [None, "2026-03-01", None]
    tied = np.asarray([0.9, 0.89, 0.1], dtype=np.float32)
    assert prefer_recent(tied, VECTORS, undated, margin=0.1, similarity=0.8) is tied
    assert prefer_recent(tied, VECTORS, created, margin=0.0, similarity=0.8) is tied


def test_the_best_stays_when_it_is_the_newest() -> None:
    scores = np.asarray([0.9, 0.89, 0.1], dtype=np.float32)
    created = ["2026-04-01", "2026-03-01", "2026-05-01"]
    assert prefer_recent(scores, VECTORS, created, margin=0.1, similarity=0.8) is scores
