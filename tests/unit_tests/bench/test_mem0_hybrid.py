"""The mem0-style hybrid baseline ranks like mem0 2.2.1's score_and_rank."""

from __future__ import annotations

import pytest

from cogito_lc.bench.mem0_hybrid import bm25_sigmoid, hybrid_order, keyword_terms


def test_keyword_only_memories_are_never_returned() -> None:
    order = hybrid_order([("a", 0.5)], [("z", 40.0), ("a", 1.0)], terms=2, k=5)
    assert order == ["a"]


def test_without_keyword_matches_the_order_is_the_semantic_order() -> None:
    order = hybrid_order([("a", 0.3), ("b", 0.6), ("c", 0.05)], [], terms=2, k=5)
    assert order == ["b", "a"]  # c is under the 0.1 semantic threshold


def test_a_strong_keyword_match_overtakes_a_closer_vector() -> None:
    order = hybrid_order([("a", 0.62), ("b", 0.55)], [("b", 11.0), ("a", 1.0)], terms=3, k=2)
    assert order == ["b", "a"]


@pytest.mark.parametrize(
    ("terms", "midpoint"), [(1, 5.0), (5, 7.0), (8, 9.0), (12, 10.0), (20, 12.0)]
)
def test_the_sigmoid_midpoint_grows_with_the_query(terms: int, midpoint: float) -> None:
    assert bm25_sigmoid(midpoint, terms) == pytest.approx(0.5)


def test_keyword_terms_drop_stop_words() -> None:
    pytest.importorskip("sklearn", reason="the stop words need scikit-learn")
    assert keyword_terms("What did Ana do with the cat?") == ["ana", "cat"]
