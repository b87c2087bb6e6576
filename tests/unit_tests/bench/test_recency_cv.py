"""Cross-validation of the recency step: pools kept once, settings replayed, folds fitted."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from cogito_lc.bench import knowledge_update as ku
from cogito_lc.bench import recency_cv as rc

EAGER: dict[str, Any] = {
    "recency_trigger": "present",
    "recency_margin": 1.0,
    "recency_similarity": -1.0,
    "recency_basis": "cosine",
    "recency_chain": 0,
}
"""A setting that moves something on nearly every present-time question."""


@pytest.fixture(scope="module")
def kept() -> rc.UpdateCandidates:
    return rc.collect_updates(6, 0, embeddings=DeterministicFakeEmbedding(size=32), store="memory")


def test_the_replay_with_the_step_off_is_the_live_ranking(kept: rc.UpdateCandidates) -> None:
    assert kept.agreement == 1.0
    conversations = ku.generate_conversations(6, 0)
    assert set(kept.pools) == {q.qid for c in conversations for q in c.questions}
    assert all(pool is not None and len(pool.ids) >= 2 for pool in kept.pools.values())


def test_replayed_settings_rank_as_the_live_retriever(kept: rc.UpdateCandidates) -> None:
    conversations = ku.generate_conversations(6, 0)
    replay = rc.ReplayedUpdates(conversations, kept)
    assert replay.score(EAGER) != replay.score({"recency_trigger": "off"})
    embeddings = DeterministicFakeEmbedding(size=32)
    same = rc.check_replay(
        conversations, [EAGER, {"recency_trigger": "cue"}], embeddings=embeddings, store="memory"
    )
    assert same == 1.0


def test_the_knowledge_update_cross_validation_runs_on_the_replay(
    kept: rc.UpdateCandidates,
) -> None:
    replay = rc.ReplayedUpdates(ku.generate_conversations(6, 0), kept)
    cv = ku.cross_validate(replay, [{"recency_trigger": "off"}, EAGER], folds=3)
    assert len(cv.chosen) == 3
    assert len(cv.held_out) == sum(len(c.questions) for c in replay.conversations)


def _pool(query: str, newer_first: bool) -> rc.Candidates:
    """Two candidates: the evidence "a" leads, "b" nearly ties (newer with ``newer_first``)."""
    dates = ["2023-01-01T00:00:00+00:00", "2023-02-01T00:00:00+00:00"]
    return rc.Candidates(
        query=query,
        ids=["a", "b"],
        texts=["A", "B"],
        created=dates if newer_first else dates[::-1],
        scores=np.asarray([0.9, 0.85], np.float32),
        cosines=np.asarray([0.5, 0.5], np.float32),
        vectors=np.asarray([[1.0, 0.0], [0.9, 0.1]], np.float32),
    )


def _locomo(hurt: bool) -> dict[str, list[rc.LocomoConversation]]:
    rows = []
    for sample in ("c1", "c2"):
        conversation = rc.LocomoConversation(
            sample, "turns", {"a": frozenset({"D1:1"}), "b": frozenset({"D2:1"})}
        )
        for _ in range(4):
            pool = _pool("What is her job now?", newer_first=hurt)
            conversation.questions.append(("q", frozenset({"D1:1"}), pool))
        rows.append(conversation)
    return {"turns": rows}


def test_locomo_scores_follow_the_step() -> None:
    kept_locomo = _locomo(hurt=True)
    off = rc.locomo_scores(kept_locomo, {"recency_trigger": "off"})
    on = rc.locomo_scores(kept_locomo, EAGER)
    assert off.recall("turns", 1) == 1.0
    assert on.recall("turns", 1) == 0.0
    assert on.recall("turns", 5) == 1.0
    assert on.moved == 8
    assert off.moved == 0


@pytest.mark.parametrize("hurt", [True, False])
def test_the_joint_fit_keeps_to_settings_that_spare_locomo(
    kept: rc.UpdateCandidates, hurt: bool
) -> None:
    replay = rc.ReplayedUpdates(ku.generate_conversations(6, 0), kept)
    configs = [{"recency_trigger": "off"}, EAGER]
    joint = rc.joint_cv(replay, _locomo(hurt), configs)
    assert len(joint.folds) == 2
    assert joint.admissible == [True, not hurt]
    if hurt:
        assert [fold.chosen for fold in joint.folds] == [0, 0]
    for fold in joint.folds:
        assert fold.locomo["turns"]["off R@1"] == 1.0
    assert len(joint.held_out_hits) == sum(len(c.questions) for c in replay.conversations)


def test_only_the_recency_fields_can_be_replayed() -> None:
    with pytest.raises(ValueError, match="cosine_weight"):
        rc.recency_settings({"cosine_weight": 0.5})
    settings = rc.recency_settings({"recency_trigger": "cue"})
    assert settings["trigger"] == "cue"
    assert set(settings) == {"trigger", "margin", "similarity", "basis", "depth", "chain"}
    assert rc.label({"recency_trigger": "off", "recency_margin": 0.3}) == "off"
    assert rc.label(EAGER) == "present m=1 s=-1 cosine"
    assert rc.label({**EAGER, "recency_chain": 3}) == "present m=1 s=-1 cosine chain3"


def test_the_grids_spell_out_every_field_but_for_the_step_off() -> None:
    grid = rc.grid("extended")
    assert grid[0] == {"recency_trigger": "off"}
    assert all(set(config) == set(rc.RECENCY_FIELDS) for config in grid[1:])
    assert len({rc.label(config) for config in grid}) == len(grid)
