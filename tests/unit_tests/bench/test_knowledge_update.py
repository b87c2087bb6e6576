"""The knowledge-update benchmark: generated conversations and the metrics on hand-made ranks."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from datetime import timedelta, timezone
from typing import Any

import pytest
from langchain_core.language_models import FakeListChatModel

from cogito_lc.bench import knowledge_update as ku
from cogito_lc.bench.knowledge_update import (
    CallCounter,
    Conversation,
    ForgetCheck,
    ForgetRecord,
    Question,
    QuestionHit,
    WriteRecord,
)
from cogito_lc.bench.update_templates import CUE_WORDS, FACT_TEMPLATES


@pytest.fixture(scope="module")
def conversations() -> list[Conversation]:
    return ku.generate_conversations(300, seed=0)


def _has_cue(text: str) -> bool:
    lower = text.lower()
    return any(re.search(rf"\b{re.escape(word)}\b", lower) for word in CUE_WORDS)


# -- the generator --------------------------------------------------------------------


def test_the_same_seed_gives_the_same_conversations_and_another_seed_others() -> None:
    first = ku.generate_conversations(40, seed=7)
    assert first == ku.generate_conversations(40, seed=7)
    assert ku.generate_conversations(10, seed=7) == first[:10]  # independent of the count
    other = ku.generate_conversations(40, seed=8)
    assert [c.turns for c in other] != [c.turns for c in first]


def test_300_conversations_cover_at_least_20_kinds_evenly(
    conversations: list[Conversation],
) -> None:
    assert len(conversations) == 300
    assert len({c.conv_id for c in conversations}) == 300
    kinds = Counter(c.kind for c in conversations)
    assert len(kinds) >= 20
    assert len(kinds) == len(FACT_TEMPLATES)
    assert min(kinds.values()) >= 10
    assert {c.subject for c in conversations} == {"user", "team"}
    # any 24 consecutive conversations hold every kind once
    assert len({c.kind for c in conversations[24:48]}) == len(FACT_TEMPLATES)


def test_each_fact_changes_one_to_three_times_with_distinct_values(
    conversations: list[Conversation],
) -> None:
    changes = Counter(c.changes for c in conversations)
    assert set(changes) == {1, 2, 3}
    assert min(changes.values()) >= 50
    templates = {t.kind: t for t in FACT_TEMPLATES}
    for c in conversations:
        versions = c.versions
        assert [v.version for v in versions] == list(range(len(versions)))
        assert versions[0].role == "statement"
        assert all(v.role == "change" for v in versions[1:])
        assert len(c.values) == len(versions) == len(set(c.values))
        assert set(c.values) <= set(templates[c.kind].values)
        for value, version in zip(c.values, versions, strict=True):
            assert value.lower() in version.text.lower()  # "Bossa nova is ..."
        texts = [t.text for t in c.turns]
        assert len(texts) == len(set(texts))


def test_distractors_are_interleaved_and_share_the_facts_vocabulary(
    conversations: list[Conversation],
) -> None:
    templates = {t.kind: t for t in FACT_TEMPLATES}
    for c in conversations:
        roles = [t.role for t in c.turns]
        assert roles.count("distractor") >= 4
        anchors = [i for i, t in enumerate(c.turns) if t.role != "distractor"]
        assert all(b - a >= 2 for a, b in itertools.pairwise(anchors))
        unused = [v for v in templates[c.kind].values if v not in c.values]
        distractors = [t.text for t in c.turns if t.role == "distractor"]
        assert any(value in text for value in unused for text in distractors), c.conv_id
    lines = [t.text for c in conversations for t in c.turns if t.role == "distractor"]
    assert sum(_has_cue(line) for line in lines) >= 20  # cue words in chat, not only questions
    # other facts' statements appear as distractors too
    firsts = {
        wording.format(value=value)[:20]
        for t in FACT_TEMPLATES
        for wording in t.first
        for value in t.values
    }
    assert sum(line[:20] in firsts for line in lines) >= 100


def test_turns_are_dated_days_apart_in_increasing_order(
    conversations: list[Conversation],
) -> None:
    for c in conversations:
        times = [t.created_at for t in c.turns]
        assert all(t.tzinfo is timezone.utc for t in times)
        assert all(b - a >= timedelta(days=1) for a, b in itertools.pairwise(times))
    starts = {c.turns[0].created_at.date() for c in conversations}
    assert len(starts) > 100


def test_questions_know_their_gold_and_stale_versions(
    conversations: list[Conversation],
) -> None:
    types: Counter[str] = Counter()
    for c in conversations:
        versions = [v.text for v in c.versions]
        for q in c.questions:
            types[q.qtype] += 1
            assert q.qid.startswith(c.conv_id + "/")
            if q.qtype == "forget":
                assert q.gold is None
                assert set(q.stale) == set(versions)
                continue
            assert q.gold in versions
            assert set(q.stale) == set(versions) - {q.gold}
            if q.qtype in {"current_cue", "current_plain"}:
                assert q.gold == versions[-1]
                assert q.as_of is None
            if q.qtype == "past":
                asked = versions.index(q.gold)
                assert asked < len(versions) - 1
                held, followed = c.versions[asked], c.versions[asked + 1]
                assert q.as_of is not None
                assert held.created_at < q.as_of < followed.created_at
                assert c.values[asked + 1] in q.text
                assert c.values[asked] not in q.text
            if q.qtype == "current_cue":
                assert q.cue
                assert _has_cue(q.text)
            if q.qtype == "current_plain":
                assert not q.cue
                assert not _has_cue(q.text)
    assert set(types) == {"current_cue", "current_plain", "past", "forget"}
    assert types["current_cue"] == types["current_plain"] == types["past"] >= 200
    cues = Counter(q.cue for c in conversations for q in c.questions if q.qtype == "current_cue")
    assert len(cues) >= 5
    assert "still" in cues


def test_wordings_vary_within_each_kind(conversations: list[Conversation]) -> None:
    by_kind: dict[str, list[Conversation]] = {}
    for c in conversations:
        by_kind.setdefault(c.kind, []).append(c)
    for kind, group in by_kind.items():
        firsts = {c.versions[0].text.replace(c.values[0], "{}") for c in group}
        changes = {
            v.text.replace(c.values[v.version or 0], "{}") for c in group for v in c.versions[1:]
        }
        questions = {q.text for c in group for q in c.questions if q.qtype == "current_cue"}
        assert len(firsts) >= 2, kind
        assert len(changes) >= 3, kind
        assert len(questions) >= 2, kind


def test_some_conversations_end_with_a_forget_request(
    conversations: list[Conversation],
) -> None:
    forgetting = [c for c in conversations if c.forget_request is not None]
    assert len(forgetting) == 75
    assert len({c.kind for c in forgetting}) == len(FACT_TEMPLATES)  # kinds take turns
    for c in forgetting:
        assert c.turns[-1].role == "forget"
        assert [t.role for t in c.turns].count("forget") == 1
        assert re.search(r"\b(forget|delete)\b", c.turns[-1].text, re.IGNORECASE)
        assert {q.qtype for q in c.questions} == {"forget"}
    assert {q.qtype for c in conversations if c.forget_request is None for q in c.questions} == {
        "current_cue",
        "current_plain",
        "past",
    }
    assert any(c.values[-1] in c.turns[-1].text for c in forgetting)  # "Forget that ... Rex."
    assert ku.generate_conversations(8, forget_every=0)[3].forget_request is None


def test_bad_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="count must be >= 1"):
        ku.generate_conversations(0)
    with pytest.raises(ValueError, match="forget_every"):
        ku.generate_conversations(5, forget_every=-1)


# -- the metrics --------------------------------------------------------------------------


def _question(
    qtype: str = "current_cue", gold: str | None = "B", stale: tuple[str, ...] = ("A",)
) -> Question:
    return Question(
        f"c/{qtype}", "q?", qtype, gold, stale, cue="now" if qtype == "current_cue" else ""
    )


def _hit(texts: list[str], **kwargs: Any) -> QuestionHit:
    read = kwargs.pop("read", "recall_b")
    conversation = kwargs.pop("conversation", "c")
    return ku.score_ranking(
        _question(**kwargs), texts, conversation=conversation, kind="k", read=read
    )


def test_rank_of_finds_the_first_target_whitespace_aside() -> None:
    assert ku.rank_of(["x", "I live in  Denver.", "y"], ["I live in Denver."]) == 2
    assert ku.rank_of(["x", "y"], ["z"]) is None
    assert ku.rank_of([], ["z"]) is None
    assert ku.rank_of(["a", "b", "c"], ["c", "b"]) == 2


def test_a_ranking_scores_current_and_stale_at_1() -> None:
    current_first = _hit(["B", "A", "x"])
    assert current_first.hit
    assert not current_first.stale_at_1
    assert (current_first.gold_rank, current_first.stale_rank, current_first.returned) == (1, 2, 3)
    stale_first = _hit(["A", "B"])
    assert not stale_first.hit
    assert stale_first.stale_at_1
    neither = _hit(["x", "B"])
    assert not neither.hit
    assert not neither.stale_at_1
    assert neither.gold_rank == 2
    assert not _hit([]).hit


def test_summaries_split_by_read_path_and_question_type() -> None:
    hits = [
        _hit(["B", "A"]),
        _hit(["A", "B"]),
        _hit(["B"]),
        _hit(["x", "x", "x", "x", "x", "B"]),
        _hit(["B", "A"], qtype="current_plain"),
        _hit(["A"], qtype="current_plain"),
        _hit(["B", "A"], qtype="past"),
        _hit(["A", "B"], qtype="current_cue", read="search"),
        _hit(["x"], qtype="forget", gold=None, stale=("A", "B")),
        _hit(["x", "B"], qtype="forget", gold=None, stale=("A", "B")),
    ]
    summary = ku.summarise_hits(hits)
    assert set(summary) == {"recall_b", "search"}
    cue = summary["recall_b"]["current_cue"]
    assert cue["n"] == 4
    assert cue["hit@1"] == 0.5
    assert cue["hit@5"] == 0.75
    assert cue["stale@1"] == 0.25
    assert cue["stale_first"] == 0.25
    assert cue["mrr"] == round((1 + 0.5 + 1 + 1 / 6) / 4, 3)
    plain = summary["recall_b"]["current_plain"]
    assert (plain["n"], plain["hit@1"], plain["stale@1"], plain["stale_first"]) == (
        2,
        0.5,
        0.5,
        0.5,
    )
    pooled = summary["recall_b"]["current"]
    assert (pooled["n"], pooled["hit@1"]) == (6, 0.5)
    assert summary["recall_b"]["past"]["hit@1"] == 1.0
    assert summary["recall_b"]["forget"] == {"n": 2, "leaked": 0.5, "leaked_questions": 1}
    assert summary["search"]["current_cue"]["stale@1"] == 1.0
    assert list(summary["recall_b"]) == [
        "current_cue",
        "current_plain",
        "current",
        "past",
        "forget",
    ]
    by_kind = ku.summarise_by_kind(hits)
    assert by_kind["recall_b"]["k"] == {"n": 6, "hit@1": 0.5, "stale@1": 0.333}


def test_the_objective_rewards_current_and_penalises_stale() -> None:
    good = [_hit(["B", "A"]), _hit(["B", "A"], qtype="past")]
    bad = [_hit(["A", "B"]), _hit(["A", "B"], qtype="past")]
    forget = [_hit(["A"], qtype="forget", gold=None, stale=("A",))]
    assert ku.default_objective(good + forget) == 1.0
    assert ku.default_objective(bad) == -1.0
    assert ku.default_objective(forget) == 0.0


def test_write_summary_counts_latency_calls_and_what_changes_superseded() -> None:
    records = [
        WriteRecord("c", "statement", 0, 10.0, 0, "v0"),
        WriteRecord("c", "distractor", None, 20.0, 1, "d1", superseded=["v0"]),
        WriteRecord("c", "change", 1, 30.0, 1, "v1", superseded=["v0"], supersession="judged"),
        WriteRecord("c", "change", 2, 40.0, 1, "v2", superseded=["d1"], supersession="judged"),
        WriteRecord("e", "statement", 0, 50.0, 1, "w0", repeated=["x"], supersession="skipped"),
    ]
    summary = ku.summarise_writes(records, supersede=True)
    assert summary["writes"] == 5
    assert summary["p50_ms"] == 30.0
    assert summary["p95_ms"] == 50.0
    assert summary["model_calls"] == 4
    assert summary["model_calls_per_write"] == 0.8
    assert summary["changes"] == 2
    assert summary["changes_superseding_previous"] == 0.5
    assert summary["changes_superseding_previous_count"] == 1
    assert summary["false_supersessions"] == 2  # the distractor's, and the change of a non-version
    assert summary["repeated"] == 1
    assert summary["supersession_methods"] == {"judged": 2, "skipped": 1}
    assert ku.summarise_writes([], supersede=False) == {"writes": 0}


def test_forget_summary_adds_what_each_read_path_returned() -> None:
    records = [
        ForgetRecord("a", "k", "Forget my x.", True, ["1", "2"], [], ["1", "2"], "forgotten"),
        ForgetRecord("b", "k", "Forget our y.", False, [], ["3"], ["3", "4"], "by_ids:ids"),
    ]
    checks = [
        ForgetCheck("a", "k", True, 2, 2, 2, {"search": 0, "list": 0}, {"search": 0}, 0, 0),
        ForgetCheck(
            "b", "k", False, 1, 2, 1, {"search": 1, "history": 2}, {"search": 1, "get": 1}, 2, 1
        ),
    ]
    summary = ku.summarise_forgets(records, checks)
    assert summary["requests"] == 2
    assert summary["recognised"] == 1
    assert summary["forgotten_by_ids"] == 1
    assert summary["compliance"] == 2  # distinct memories over all paths, not path by path
    assert summary["compliance_by_path"] == {"history": 2, "list": 0, "search": 1}
    assert summary["fact_leaks"] == 1
    assert summary["fact_leaks_by_path"] == {"get": 1, "search": 1}
    assert summary["conversations_leaking"] == 1
    assert summary["fact_memories_forgotten"] == 0.75
    assert summary["methods"] == {"forgotten": 1, "by_ids:ids": 1}


def test_the_call_counter_counts_each_model_call() -> None:
    counter = CallCounter()
    llm = FakeListChatModel(responses=["a", "b"], callbacks=[counter])
    llm.invoke("one")
    llm.invoke("two")
    assert counter.calls == 2


# -- cross-validation ---------------------------------------------------------------------


def test_folds_split_conversations_disjointly_and_deterministically() -> None:
    ids = [f"c{i}" for i in range(23)]
    folds = ku.conversation_folds(ids, 5, seed=1)
    assert len(folds) == 5
    assert sorted(i for fold in folds for i in fold) == sorted(ids)
    assert {len(f) for f in folds} == {4, 5}
    assert folds == ku.conversation_folds(list(reversed(ids)), 5, seed=1)
    assert folds != ku.conversation_folds(ids, 5, seed=2)
    with pytest.raises(ValueError, match="folds must be between 2"):
        ku.conversation_folds(ids, 1)
    with pytest.raises(ValueError, match="folds must be between 2"):
        ku.conversation_folds(["a", "b"], 3)


class _FakeEvaluation:
    """Scores a config as hits on every conversation: "good" wins everywhere but on c0."""

    def __init__(self, ids: list[str]) -> None:
        self.conversations = [Conversation(i, "k", "user", ("A", "B"), (), ()) for i in ids]
        self.scored: list[dict[str, Any]] = []

    def score(self, config: dict[str, Any], *, k: int) -> list[QuestionHit]:
        self.scored.append(config)
        hits = []
        for c in self.conversations:
            wins = (config.get("name") == "good") != (c.conv_id == "c0")
            hits.append(_hit(["B", "A"] if wins else ["A", "B"], conversation=c.conv_id))
        return hits


def test_cross_validation_scores_each_config_once_and_fits_on_training_folds() -> None:
    ids = [f"c{i}" for i in range(10)]
    evaluation = _FakeEvaluation(ids)
    configs = [{"name": "bad"}, {"name": "good"}]
    cv = ku.cross_validate(evaluation, configs, folds=5, seed=0)  # type: ignore[arg-type]
    assert evaluation.scored == configs
    assert cv.chosen == [1] * 5
    assert sorted(h.conversation for h in cv.held_out) == sorted(ids)
    held = ku.summarise_hits(cv.held_out)["recall_b"]["current_cue"]
    assert held["hit@1"] == 0.9  # c0 is the one conversation where "good" loses
    summary = cv.summary()
    assert summary["chosen"] == [{"name": "good"}] * 5
    assert [row["objective"] for row in summary["configs"]] == [-0.8, 0.8]
    with pytest.raises(ValueError, match="configs is empty"):
        ku.cross_validate(evaluation, [])  # type: ignore[arg-type]


def test_markdown_tables_name_skipped_modes() -> None:
    summary = ku.summarise_hits([_hit(["B", "A"]), _hit(["A"], qtype="past")])
    report = {
        "settings": {
            "conversations": 1,
            "seed": 0,
            "kinds": 1,
            "questions": 2,
            "top_k": 10,
            "embeddings": "m",
            "store": "chroma",
        },
        "cogito_lc": "0",
        "machine": {"cpus": 2},
        "elapsed_s": 1.0,
        "modes": {
            "zero_llm": {
                "conversations": 1,
                "retrieval": summary,
                "forget": ku.summarise_forgets([], []),
                "writes": ku.summarise_writes(
                    [WriteRecord("c", "statement", 0, 5.0, 0, "v0")], supersede=False
                ),
                "seconds": {"write": 1.0, "questions": 1.0, "forget_checks": 0.0},
            },
            "openai": {"skipped": "no OpenAI-compatible endpoint"},
        },
    }
    text = ku.markdown(report)
    assert "| zero_llm | recall_b | 1 | 1.000 | - | 0.000 | - | 0.000 | 1.000 | - |" in text
    assert "`openai` skipped: no OpenAI-compatible endpoint" in text
    assert "| zero_llm | 0 | 0 | 0 | 0 | 5.0 | - | 5.0 |" in text
    assert "load average" not in text
    report["machine"] = {"cpus": 2, "load_average_start": 1.5, "load_average_end": 7.25}
    assert "(1-minute load average 1.5 at the start, 7.25 at the end)." in ku.markdown(report)
