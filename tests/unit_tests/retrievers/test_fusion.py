from __future__ import annotations

import pytest
from langchain_core.documents import Document

from cogito_lc.retrievers._fusion import document_key, reciprocal_rank_fusion


def test_rrf_scores_sum_reciprocal_ranks() -> None:
    scores = reciprocal_rank_fusion([["a", "b"], ["b", "c"]], k=60)
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["c"] == pytest.approx(1 / 62)
    assert max(scores, key=scores.__getitem__) == "b"


def test_rrf_weights_scale_each_run() -> None:
    scores = reciprocal_rank_fusion([["a"], ["b"]], weights=[3.0, 1.0], k=0)
    assert scores == {"a": 3.0, "b": 1.0}


def test_rrf_counts_a_key_once_per_run_at_its_best_rank() -> None:
    scores = reciprocal_rank_fusion([["a", "a", "b"]], k=0)
    assert scores == {"a": 1.0, "b": pytest.approx(1 / 3)}


def test_rrf_rejects_mismatched_weights_and_negative_k() -> None:
    with pytest.raises(ValueError, match="one weight per run"):
        reciprocal_rank_fusion([["a"], ["b"]], weights=[1.0])
    with pytest.raises(ValueError, match="k must be >= 0"):
        reciprocal_rank_fusion([["a"]], k=-1)


def test_same_text_different_ids_stay_two() -> None:
    first = Document(page_content="same text", id="one")
    second = Document(page_content="same text", id="two")
    scores = reciprocal_rank_fusion([[document_key(first)], [document_key(second)]])
    assert len(scores) == 2


def test_document_key_is_the_id_or_a_stable_content_hash() -> None:
    assert document_key(Document(page_content="x", id="m1")) == "m1"
    a = document_key(Document(page_content="x", metadata={"k": 1}))
    b = document_key(Document(page_content="x", metadata={"k": 1}))
    c = document_key(Document(page_content="x", metadata={"k": 2}))
    assert a == b
    assert a != c
    assert a.startswith("sha256:")
