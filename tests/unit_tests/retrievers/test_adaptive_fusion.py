"""The lexical run's weight follows its decisiveness."""

from __future__ import annotations

import pytest

from cogito_lc.retrievers.adaptive_fusion import adaptive_lexical_weight, lexical_decisiveness


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ([], 0.0),
        ([0.0, 0.0], 0.0),
        ([4.0], 1.0),
        ([4.0, 0.0], 1.0),
        ([4.0, 3.0], 0.25),
        ([2.0, 2.0], 0.0),
    ],
)
def test_decisiveness_is_the_leads_share_of_the_best(scores: list[float], expected: float) -> None:
    assert lexical_decisiveness(scores) == pytest.approx(expected)


def test_floor_one_keeps_the_weight_fixed() -> None:
    assert adaptive_lexical_weight(4.0, [2.0, 2.0], floor=1.0) == 4.0


def test_a_flat_run_gets_the_floor_and_a_decisive_one_the_full_weight() -> None:
    assert adaptive_lexical_weight(4.0, [2.0, 2.0], floor=0.25) == pytest.approx(1.0)
    assert adaptive_lexical_weight(4.0, [6.0, 0.0], floor=0.25) == pytest.approx(4.0)


def test_a_floor_outside_zero_to_one_names_the_fix() -> None:
    with pytest.raises(ValueError, match=r"1\.0 keeps the weight fixed"):
        adaptive_lexical_weight(4.0, [1.0], floor=1.5)
