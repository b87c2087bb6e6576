"""Query-adaptive weights for RecallB's fusion: trust the lexical run when it is decisive.

A BM25 run whose best document clearly outscores the runner-up has found the
memory sharing the query's rare words; a flat run (every candidate matching the
same common word) is mostly noise. :func:`lexical_decisiveness` turns the top of
a run into a 0..1 signal and :func:`adaptive_lexical_weight` scales the run's
fusion weight by it, at the cost of reading two scores.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["adaptive_lexical_weight", "lexical_decisiveness"]


def lexical_decisiveness(top_scores: Sequence[float]) -> float:
    """How far the best lexical score leads the runner-up, as a share of the best (0..1).

    Args:
        top_scores: The run's best scores, best first (at least the first two).

    Returns:
        ``(best - second) / best``; 1.0 for a single match, 0.0 for no match.

    Example:
        ```python
        from cogito_lc.retrievers.adaptive_fusion import lexical_decisiveness

        assert lexical_decisiveness([8.0, 2.0]) == 0.75
        assert lexical_decisiveness([3.0, 3.0]) == 0.0
        assert lexical_decisiveness([]) == 0.0
        ```
    """
    if not top_scores or top_scores[0] <= 0:
        return 0.0
    second = max(float(top_scores[1]), 0.0) if len(top_scores) > 1 else 0.0
    return min(max((float(top_scores[0]) - second) / float(top_scores[0]), 0.0), 1.0)


def adaptive_lexical_weight(base: float, top_scores: Sequence[float], floor: float) -> float:
    """The lexical run's weight: ``base`` scaled from ``floor`` (flat run) up to 1 (decisive run).

    Example:
        ```python
        from cogito_lc.retrievers.adaptive_fusion import adaptive_lexical_weight

        assert adaptive_lexical_weight(4.0, [8.0, 2.0], floor=0.5) == 3.5
        assert adaptive_lexical_weight(4.0, [3.0, 3.0], floor=0.5) == 2.0
        ```
    """
    if not 0.0 <= floor <= 1.0:
        msg = f"floor must be within 0..1, got {floor}; 1.0 keeps the weight fixed."
        raise ValueError(msg)
    return base * (floor + (1.0 - floor) * lexical_decisiveness(top_scores))
