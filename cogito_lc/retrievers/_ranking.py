"""Ranking helpers for RecallB: BM25 over the candidate pool and the cosine blend.

The cosine similarities themselves come from :func:`cogito_lc.stores.cosine_scores`.
"""

from __future__ import annotations

from collections.abc import Sequence

import bm25s
import numpy as np
import numpy.typing as npt

__all__ = ["blend", "bm25_run"]

Vector = npt.NDArray[np.float32]


def bm25_run(query: str, keys: Sequence[str], texts: Sequence[str]) -> list[str]:
    """Rank ``keys`` by BM25 of their ``texts`` against ``query``; non-matching keys are left out.

    The index is built over the candidate pool only, so it costs a few
    milliseconds for a pool of a hundred memories.
    """
    if not texts:
        return []
    corpus_tokens = bm25s.tokenize(list(texts), stopwords="en", show_progress=False)
    query_words = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
    if not query_words:
        return []
    index = bm25s.BM25()
    index.index(corpus_tokens, show_progress=False)
    scores = index.get_scores(query_words)
    order = np.argsort(-scores, kind="stable")
    return [keys[i] for i in order if scores[i] > 0]


def _unit_range(values: Vector) -> Vector:
    low, high = float(values.min()), float(values.max())
    if high - low < 1e-12:
        return np.ones_like(values)
    return (values - low) / (high - low)


def blend(cosines: Vector, fused: Vector, cosine_weight: float) -> Vector:
    """Blend cosine similarity and fused rank scores, each scaled to 0..1 within the pool."""
    return cosine_weight * _unit_range(cosines) + (1.0 - cosine_weight) * _unit_range(fused)
