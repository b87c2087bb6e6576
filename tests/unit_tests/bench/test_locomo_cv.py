"""The LoCoMo cross-validation: cached runs reproduce RecallB, folds fit on training data only."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.vectorstores import InMemoryVectorStore

from cogito_lc import RecallB
from cogito_lc.bench import locomo, locomo_cv
from cogito_lc.bench.hash_embeddings import HashEmbeddings
from cogito_lc.bench.locomo_cv import FusionConfig, QuestionRuns, UnitVariant
from cogito_lc.bench.mem0_hybrid import Mem0HybridRetriever
from tests.unit_tests.bench.locomo_sample import locomo_sample

pytest.importorskip("sklearn", reason="the mem0 baseline's stop words need scikit-learn")


def _samples(conversations: int) -> list[dict[str, Any]]:
    samples = copy.deepcopy(locomo_sample(conversations))
    for c, sample in enumerate(samples):
        sample["sample_id"] = f"conv-{c}"
        for s, qa in enumerate(sample["qa"], start=1):
            qa["evidence"] = [f"D{s}:1"]
        first = sample["conversation"]["session_1"][0]
        first["blip_caption"] = "a photo of a grey cat on a sofa"
        sample["observation"]["session_1_observation"]["Ana" + str(c)][0][1] = "D1:1; D1:2"
        # "started a pottery class": found by the lexical run only through inflections
        sample["qa"][1]["question"] = f"Which pottery classes did Ana{c} start?"
    return samples


@pytest.fixture
def cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[UnitVariant, Any]:
    monkeypatch.setattr(locomo_cv, "CACHE_DIR", tmp_path / "cache")
    data = tmp_path / "locomo.json"
    data.write_text("[]")
    samples = _samples(3)
    embeddings = HashEmbeddings(size=64)
    turns = locomo_cv.collect(data, samples, UnitVariant("turns"), embeddings)
    facts = locomo_cv.collect(data, samples, UnitVariant("facts"), embeddings)
    return {
        UnitVariant("turns"): turns,
        UnitVariant("facts", fact_evidence="all"): facts,
        UnitVariant("facts", fact_evidence="first"): facts,
    }


def test_offline_collected_ranking_is_the_live_recall_b_ranking(cached: dict[Any, Any]) -> None:
    runs = [q for conversations in cached.values() for c in conversations for q in c.questions]
    assert runs
    assert all(locomo_cv.fusion_order(q, locomo_cv.COLLECTED) == q.live_top for q in runs)
    assert any(len(q.vector_runs) > FusionConfig().max_subqueries for q in runs)


def test_offline_default_depth_is_the_live_recall_b_ranking(cached: dict[Any, Any]) -> None:
    _moved_by_the_blend(cached, FusionConfig())


def test_shallower_configurations_cut_the_cached_runs() -> None:
    runs = _runs([0.0, 0.0, 0.0, 0.0, 0.0])
    runs.vector_runs = [list(range(12)), [12, 3, 2], [1, 0], [13]]
    config = FusionConfig(max_subqueries=3, original_fetch_k=2, fetch_k=1)
    # the original run is searched at least TOP_K deep, as RecallB searches for k=TOP_K
    assert locomo_cv._vector_runs(runs, config) == [list(range(10)), [12], [1]]


def test_the_depth_grid_keeps_the_settings_within_the_result_budget() -> None:
    cheap = locomo_cv.depth_grid()
    assert FusionConfig() in cheap
    assert locomo_cv.COLLECTED not in cheap
    assert locomo_cv.COLLECTED in locomo_cv.depth_grid(max_results=None)
    assert all(locomo_cv.results_read(c) <= 30 for c in cheap)


def test_cache_is_read_back_not_recomputed(tmp_path: Path, cached: dict[Any, Any]) -> None:
    data = tmp_path / "locomo.json"

    class Exploding(HashEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            raise AssertionError

    again = locomo_cv.collect(data, _samples(3), UnitVariant("turns"), Exploding(size=64))
    assert [q.question for q in again[0].questions] == [
        q.question for q in cached[UnitVariant("turns")][0].questions
    ]


def test_each_fold_is_fitted_without_its_held_out_conversation(cached: dict[Any, Any]) -> None:
    grid = [FusionConfig(cosine_weight=w) for w in (0.0, 0.35, 1.0)]
    result = locomo_cv.cross_validate(cached, {"fitted": grid})
    assert len(result.chosen["fitted"]) == 3
    assert set(result.table) == {
        "vector",
        "bm25",
        "ensemble",
        "mem0_hybrid",
        "mem0_hybrid_inflected",
        "recall_b_previous",
        "recall_b_unstripped",
        "recall_b_uninflected",
        "recall_b",
        "recall_b_deep",
        "fitted",
    }
    assert all(len(folds) == 3 for folds in result.table["fitted"].values())
    assert set(result.table["recall_b"]) == {"turns", "facts/all", "facts/first"}
    assert result.live_agreement == 1.0


def test_fact_evidence_first_labels_only_the_first_turn(cached: dict[Any, Any]) -> None:
    labels = cached[UnitVariant("facts")][0].labels
    assert labels["all"][0] == {"D1:1", "D1:2"}
    assert labels["first"][0] == {"D1:1"}


def test_turn_captions_append_the_shared_photo() -> None:
    sample = _samples(1)[0]
    plain = locomo.build_unit(sample, "turns").documents[0].page_content
    captioned = locomo.build_unit(sample, "turns", captions=True).documents[0].page_content
    assert captioned == plain + " [shares a photo: a photo of a grey cat on a sofa]"


def _runs(bm25: list[float]) -> QuestionRuns:
    n = len(bm25)
    return QuestionRuns(
        question="q",
        category=4,
        evidence=frozenset({"x"}),
        vector_runs=[[0, 1, 2, 3]],
        lexical_run=[i for i in sorted(range(n), key=lambda i: -bm25[i]) if bm25[i] > 0],
        live_top=[],
        query_cosines=np.asarray([0.9, 0.8, 0.7, 0.6, 0.5][:n], np.float32),
        plain_cosines=np.zeros(n, np.float32),
        bm25=np.asarray(bm25, np.float32),
        mem0_keyword=[],
        mem0_terms=0,
    )


def test_a_flat_lexical_run_weighs_less_under_adaptive_fusion() -> None:
    fixed = FusionConfig(
        corpus_bm25_weight=2.0, cosine_weight=0.5, lexical_floor=1.0, lexical_blend_weight=0.0
    )
    adaptive = dataclasses.replace(fixed, lexical_floor=0.0)
    flat = _runs([0.0, 0.0, 0.0, 5.0, 5.0])
    assert locomo_cv.fusion_order(flat, fixed)[0] == 3
    assert locomo_cv.fusion_order(flat, adaptive)[0] == 0
    decisive = _runs([0.0, 0.0, 0.0, 9.0, 1.0])
    assert locomo_cv.fusion_order(decisive, adaptive)[0] == 3


def test_the_live_mem0_retriever_ranks_like_the_cached_one(cached: dict[Any, Any]) -> None:
    docs = locomo.build_unit(_samples(3)[0], "turns").documents
    store = locomo.make_store(HashEmbeddings(size=64), docs)
    live = Mem0HybridRetriever(store=store, documents=docs)
    conversation = cached[UnitVariant("turns")][0]
    for runs in conversation.questions:
        found = [
            frozenset(locomo.split_ids(d.metadata["dia_id"])) for d in live.invoke(runs.question)
        ]
        assert found == [conversation.labels["all"][i] for i in locomo_cv.mem0_order(runs)]
    store.delete_collection()


def _moved_by_the_blend(cached: dict[Any, Any], config: FusionConfig) -> int:
    """Assert live RecallB under ``config`` ranks like the offline scorer; count blend-moved."""
    docs = locomo.build_unit(_samples(3)[0], "turns").documents
    store = locomo.make_store(HashEmbeddings(size=64), docs)
    live = RecallB(vectorstore=store, k=locomo_cv.TOP_K, **config.recall_b_kwargs())
    conversation = cached[UnitVariant("turns")][0]
    unblended = dataclasses.replace(config, lexical_blend_weight=0.0)
    moved = 0
    for runs in conversation.questions:
        found = [
            frozenset(locomo.split_ids(d.metadata["dia_id"])) for d in live.invoke(runs.question)
        ]
        offline = locomo_cv.fusion_order(runs, config)
        assert found == [conversation.labels["all"][i] for i in offline]
        moved += offline != locomo_cv.fusion_order(runs, unblended)
    store.delete_collection()
    return moved


def test_offline_lexical_blend_ranking_is_the_live_recall_b_ranking(
    cached: dict[Any, Any],
) -> None:
    assert _moved_by_the_blend(cached, FusionConfig(lexical_blend_weight=1.0)) > 0


def test_offline_blend_with_adaptive_weights_is_the_live_recall_b_ranking(
    cached: dict[Any, Any],
) -> None:
    config = FusionConfig(
        rrf_k=5, cosine_weight=0.2, bm25_weight=0.0, lexical_floor=0.5, lexical_blend_weight=0.6
    )
    _moved_by_the_blend(cached, config)


def test_the_blend_grid_adds_blend_weights_to_the_adaptive_grid() -> None:
    grid = locomo_cv.blend_grid()
    assert grid[: len(locomo_cv.adaptive_grid())] == locomo_cv.adaptive_grid()
    assert {c.lexical_blend_weight for c in grid} == {0.0, *locomo_cv.BLEND_WEIGHTS}
    assert len(set(grid)) == len(grid)


def test_the_offline_defaults_are_recall_b_defaults() -> None:
    defaults = RecallB.model_fields
    for name, value in FusionConfig().recall_b_kwargs().items():
        assert defaults[name].default == value, name


def test_offline_ranking_with_the_query_as_written_is_live_recall_b_without_stop_words(
    cached: dict[Any, Any],
) -> None:
    _moved_by_the_blend(cached, locomo_cv.UNSTRIPPED_DEFAULTS)


def test_the_cache_keeps_the_lexical_query_with_and_without_stop_words(
    cached: dict[Any, Any],
) -> None:
    runs = [q for c in cached[UnitVariant("turns")] for q in c.questions]
    live = RecallB(vectorstore=InMemoryVectorStore(HashEmbeddings(size=64)))
    assert all(q.lexical_query == live.lexical_query(q.question) for q in runs)
    differs = [q for q in runs if q.lexical_query != q.question]
    assert differs
    assert any(not np.array_equal(q.bm25, q.unstripped_bm25) for q in differs)


def _default_depth() -> dict[str, int]:
    return locomo_cv._depth(FusionConfig())


def test_the_stop_word_grid_tries_the_query_with_and_without_stop_words() -> None:
    grid = locomo_cv.stop_word_grid()
    assert {c.strip_stop_words for c in grid} == {False, True}
    assert {c.lexical_blend_shift for c in grid} == set(locomo_cv.BLEND_SHIFTS)
    assert not any(c.lexical_inflections for c in grid)
    assert dataclasses.replace(locomo_cv.UNINFLECTED_DEFAULTS, **_default_depth()) in grid
    assert len(set(grid)) == len(grid)


def test_the_inflection_grid_tries_the_query_with_and_without_inflections() -> None:
    grid = locomo_cv.inflection_grid()
    assert {c.lexical_inflections for c in grid} == {False, True}
    assert all(c.strip_stop_words for c in grid)
    assert FusionConfig() in grid
    assert dataclasses.replace(locomo_cv.UNINFLECTED_DEFAULTS, **_default_depth()) in grid
    assert len(set(grid)) == len(grid)


def test_offline_ranking_without_inflections_is_live_recall_b_without_them(
    cached: dict[Any, Any],
) -> None:
    _moved_by_the_blend(cached, locomo_cv.UNINFLECTED_DEFAULTS)


def test_the_cache_keeps_the_lexical_run_with_and_without_inflections(
    cached: dict[Any, Any],
) -> None:
    runs = [q for c in cached[UnitVariant("facts")] for q in c.questions]
    assert all(q.uninflected_bm25 is not None for q in runs)
    assert all((q.bm25 >= q.uninflected_bm25 - 1e-6).all() for q in runs)  # type: ignore[operator]
    assert any(not np.array_equal(q.bm25, q.uninflected_bm25) for q in runs)


def test_mem0_with_inflections_matches_a_memory_by_another_form_of_a_query_word(
    cached: dict[Any, Any],
) -> None:
    runs = [q for c in cached[UnitVariant("facts")] for q in c.questions]
    asked = [q for q in runs if q.question.startswith("Which pottery classes")]
    assert asked
    for q in asked:
        # "Ana0 started a pottery class": "classes" and "start" match it only when inflected
        (best, plain), (same, inflected) = q.mem0_keyword[0], q.mem0_inflected_keyword[0]
        assert best == same
        assert inflected > plain > 0
