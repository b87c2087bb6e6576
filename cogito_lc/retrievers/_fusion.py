"""Reciprocal rank fusion of ranked runs, keyed by document identity."""

from __future__ import annotations

from collections.abc import Sequence

from cogito_lc._core.identity import document_key

__all__ = ["document_key", "reciprocal_rank_fusion"]


def reciprocal_rank_fusion(
    runs: Sequence[Sequence[str]],
    *,
    weights: Sequence[float] | None = None,
    k: int = 60,
) -> dict[str, float]:
    """Fuse ranked runs of keys into one score per key.

    Each run adds ``weight / (k + rank)`` (rank starting at 1) to every key it
    holds; a key that repeats within a run counts once, at its best rank.

    Args:
        runs: Ranked lists of document keys, best first.
        weights: One weight per run; all 1.0 when omitted.
        k: The RRF constant; larger values flatten the rank curve.

    Returns:
        Fused scores by key, in no particular order.

    Raises:
        ValueError: If ``weights`` does not match ``runs`` or ``k`` is negative.

    Example:
        ```python
        from cogito_lc.retrievers._fusion import reciprocal_rank_fusion

        scores = reciprocal_rank_fusion([["a", "b"], ["b"]])
        assert max(scores, key=scores.__getitem__) == "b"
        ```
    """
    if weights is None:
        weights = [1.0] * len(runs)
    if len(weights) != len(runs):
        msg = f"weights has {len(weights)} entries for {len(runs)} runs; pass one weight per run."
        raise ValueError(msg)
    if k < 0:
        msg = f"k must be >= 0, got {k}."
        raise ValueError(msg)
    scores: dict[str, float] = {}
    for run, weight in zip(runs, weights, strict=True):
        seen: set[str] = set()
        for rank, key in enumerate(run, start=1):
            if key in seen:
                continue
            seen.add(key)
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    return scores
