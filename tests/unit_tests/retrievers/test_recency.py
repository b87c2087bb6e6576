"""The zero-LLM recency step: present-time questions get the newest same-subject near-tie."""

from __future__ import annotations

import numpy as np
import pytest

from cogito_lc.retrievers._recency import asks_about_present, prefer_recent, recency_step


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
        ("What is John currently doing as a volunteer in August 2023?", False, False),
        ("What is the user's job in 2024?", False, False),
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


def test_near_ties_on_the_cosine_to_the_query_reach_past_a_lexical_lead() -> None:
    # The old version leads on the blended score (it shares the query's words) but the
    # newer one is as close to the query: on the cosine they tie.
    scores = np.asarray([0.95, 0.3, 0.2], dtype=np.float32)
    cosines = np.asarray([0.53, 0.56, 0.2], dtype=np.float32)
    created = ["2026-01-01", "2026-03-01", "2026-05-01"]
    assert prefer_recent(scores, VECTORS, created, margin=0.1, similarity=0.5) is scores
    moved = prefer_recent(scores, VECTORS, created, margin=0.1, similarity=0.5, cosines=cosines)
    assert int(np.argmax(moved)) == 1
    # the newest candidate (2) is neither close to the query nor about the same subject
    far = prefer_recent(scores, VECTORS, created, margin=0.5, similarity=0.5, cosines=cosines)
    assert int(np.argmax(far)) == 1


def test_depth_limits_the_candidates_that_can_move_up() -> None:
    vectors = np.asarray([[1.0, 0.0], [0.95, 0.05], [0.9, 0.1]], dtype=np.float32)
    scores = np.asarray([0.9, 0.8, 0.7], dtype=np.float32)
    created = ["2026-01-01", "2026-03-01", "2026-05-01"]
    full = prefer_recent(scores, vectors, created, margin=0.5, similarity=0.5)
    assert int(np.argmax(full)) == 2
    shallow = prefer_recent(scores, vectors, created, margin=0.5, similarity=0.5, depth=2)
    assert int(np.argmax(shallow)) == 1


def test_the_step_runs_only_when_the_trigger_fires() -> None:
    scores = np.asarray([0.9, 0.85, 0.88], dtype=np.float32)
    created = ["2026-01-01", "2026-03-01", "2026-05-01"]
    cosines = np.asarray([0.6, 0.6, 0.1], dtype=np.float32)
    args = (scores, cosines, VECTORS, created)
    fields = {"margin": 0.1, "similarity": 0.8}
    past = "Where did the user live before Denver?"
    assert recency_step(past, *args, trigger="present", **fields) is scores
    assert recency_step("Where does the user live?", *args, trigger="cue", **fields) is scores
    moved = recency_step("Where does the user live now?", *args, trigger="cue", **fields)
    assert int(np.argmax(moved)) == 1
    by_cosine = recency_step(
        "Where does the user live?", *args, trigger="present", basis="cosine", **fields
    )
    assert int(np.argmax(by_cosine)) == 1


def test_the_chain_follows_the_versions_past_a_newer_line_merely_near_the_best() -> None:
    # 0: the old version (best); 1: its successor, much like it; 2: its successor in turn;
    # 3: the newest line, somewhat near the old version but unlike the later ones.
    vectors = np.asarray(
        [[1.0, 0.0, 0.0], [0.8, 0.6, 0.0], [0.5, 0.85, 0.0], [0.6, -0.2, 0.77]], np.float32
    )
    scores = np.asarray([0.9, 0.5, 0.3, 0.4], dtype=np.float32)
    created = ["2026-01-01", "2026-02-01", "2026-03-01", "2026-04-01"]
    newest = prefer_recent(scores, vectors, created, margin=1.0, similarity=0.3)
    assert int(np.argmax(newest)) == 3
    chained = prefer_recent(scores, vectors, created, margin=1.0, similarity=0.5, chain=3)
    assert int(np.argmax(chained)) == 2
    one_step = prefer_recent(scores, vectors, created, margin=1.0, similarity=0.5, chain=1)
    assert int(np.argmax(one_step)) == 1
    # nothing newer is close enough to the best: it stays
    alone = prefer_recent(scores, vectors, created, margin=1.0, similarity=0.95, chain=3)
    assert alone is scores


def test_recall_b_applies_its_recency_fields() -> None:
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    from cogito_lc import RecallB

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    texts = ["I live in Austin.", "I moved to Denver.", "My sister lives in Boston."]
    store.add_documents(
        [
            Document(text, metadata={"created_at": f"2026-0{i + 1}-01T00:00:00+00:00"})
            for i, text in enumerate(texts)
        ],
        ids=["a", "b", "c"],
    )
    eager = {"recency_margin": 1.0, "recency_similarity": -1.0, "recency_basis": "cosine"}
    now = RecallB(vectorstore=store, k=3, recency_trigger="cue", **eager)
    assert now.invoke("Where does the user live now?")[0].id == "c"
    followed = RecallB(vectorstore=store, k=3, recency_trigger="cue", recency_chain=1, **eager)
    assert followed.invoke("Where does the user live now?")[0].id in {"b", "c"}
    off = RecallB(vectorstore=store, k=3, recency_trigger="off", **eager)
    plain = RecallB(vectorstore=store, k=3, recency_trigger="off")
    query = "Where does the user live now?"
    assert [d.id for d in off.invoke(query)] == [d.id for d in plain.invoke(query)]
