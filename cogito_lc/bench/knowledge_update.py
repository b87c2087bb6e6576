"""Knowledge-update benchmark: after a fact changes, does memory return its current version?

A user moves from Austin to Denver, changes employer, stops being vegetarian; a team
switches from MySQL to Postgres. :func:`generate_conversations` builds such
conversations from templates (:mod:`cogito_lc.bench.update_templates`), deterministically
for a seed, with no model and no network: 24 kinds of fact, each stated once and changed
one to three times, unrelated chat turns interleaved (some sharing the fact's words:
a sister's city, another team's database), every turn dated days after the one before.
Each conversation asks about the current value (with a cue word, "Where does the user
currently live?", and in plain present tense, "Where does the user live?") and about a
past value ("Where did the user live before Denver?", read ``as_of`` a time that value
held); every fourth conversation ends with a forget request ("Please forget my phone
number.") and asks nothing but probes that no version of the fact comes back. Each
question knows its gold memory (the turn text of the expected version) and the stale ones.

:class:`UpdateEvaluation` writes a conversation set into one :class:`~cogito_lc.MemoryStore`
(each conversation in its own scope, turns in order with their ``created_at``) once, and
then scores any RecallB configuration on it (:meth:`UpdateEvaluation.score`): the
per-question hits :func:`cross_validate` fits configurations with, conversations as folds.

:func:`main` runs the modes: ``zero_llm`` (verbatim writes, no judge: recall alone must
prefer the current fact), ``local_llm`` (the store's supersession judge over Gemma 3 270M
served by llama.cpp, as the tests start it: a tiny base model, so its rows measure the
mechanics and the cost, not the judge's quality) and ``openai`` (the judge over the
OpenAI-compatible endpoint ``$OPENAI_BASE_URL`` or ``$COGITO_FILTER_ENDPOINT`` names;
skipped without one). Metrics per read path (RecallB, plain ``search``): current-fact@1
and stale-at-1 split by question type, past-fact@1 of ``as_of`` reads, forget compliance
(forgotten memories any read path returns: must be 0) and write cost (p50 of a write
with and without supersession, model calls per write).

Usage:
    ```bash
    python benchmarks/knowledge_update.py [--conversations 300] [--seed 0] \\
        [--modes zero_llm local_llm openai] [--llm-conversations 10] [--out FILE]
    ```
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import platform
import random
import re
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever

from cogito_lc import MemoryNotFoundError, MemoryStore, __version__
from cogito_lc.bench.results import add_out_argument, narrowing_flags, results_path
from cogito_lc.bench.update_templates import CHAT_LINES, CUE_WORDS, FACT_TEMPLATES, FactTemplate

__all__ = [
    "MODES",
    "QUESTION_TYPES",
    "CallCounter",
    "Conversation",
    "ForgetCheck",
    "ForgetRecord",
    "Question",
    "QuestionHit",
    "Turn",
    "UpdateCV",
    "UpdateEvaluation",
    "WriteRecord",
    "build_evaluation",
    "conversation_folds",
    "cross_validate",
    "default_objective",
    "generate_conversations",
    "main",
    "rank_of",
    "score_ranking",
    "summarise_by_kind",
    "summarise_forgets",
    "summarise_hits",
    "summarise_writes",
]

logger = logging.getLogger(__name__)

DEFAULT_CONVERSATIONS = 300
DEFAULT_LLM_CONVERSATIONS = 10
DEFAULT_OUT = Path("benchmarks/results/knowledge_update.json")
TOP_K = 10
FORGET_EVERY = 4
"""Every fourth conversation ends with a forget request."""
START = datetime(2023, 1, 2, 9, 0, tzinfo=timezone.utc)
"""The earliest a conversation starts; each starts up to 540 days later."""
MODES = ("zero_llm", "local_llm", "openai")
QUESTION_TYPES = ("current_cue", "current_plain", "past", "forget")
CURRENT_TYPES = ("current_cue", "current_plain")
JUDGE_MAX_TOKENS = 256
JUDGE_TIMEOUT_S = 60.0
"""The judge's wait for one answer in the model modes."""
LLAMA_CPP_CONTEXT = 4096

_CUE = re.compile(
    r"\b(" + "|".join(re.escape(w) for w in sorted(CUE_WORDS, key=len, reverse=True)) + r")\b"
)


# -- conversations ----------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """One user turn: its text, when it was said, and its part in the conversation."""

    text: str
    created_at: datetime
    role: str
    """``statement`` (the fact's first value), ``change``, ``distractor`` or ``forget``."""
    version: int | None = None
    """0 for the statement, 1.. for the changes; None for other turns."""


@dataclass(frozen=True)
class Question:
    """A question about the conversation's fact and the memories that answer it."""

    qid: str
    text: str
    qtype: str
    """``current_cue``, ``current_plain``, ``past`` or ``forget`` (see :data:`QUESTION_TYPES`)."""
    gold: str | None
    """The turn text of the expected version; None for a forget probe (nothing may come)."""
    stale: tuple[str, ...]
    """The turn texts of the fact's other versions (every version, for a forget probe)."""
    as_of: datetime | None = None
    """For a past question: a time when the asked-about value held."""
    cue: str = ""
    """The cue word of a current question ("now", "still", ...); empty in plain tense."""


@dataclass(frozen=True)
class Conversation:
    """One conversation: a fact that changes, the chat around it and the questions on it."""

    conv_id: str
    kind: str
    subject: str
    values: tuple[str, ...]
    """The fact's values in the order they held."""
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]

    @property
    def versions(self) -> tuple[Turn, ...]:
        """The fact's turns, first statement then each change."""
        return tuple(t for t in self.turns if t.version is not None)

    @property
    def changes(self) -> int:
        return len(self.versions) - 1

    @property
    def forget_request(self) -> Turn | None:
        return next((t for t in self.turns if t.role == "forget"), None)

    @property
    def scope(self) -> dict[str, str]:
        """The scope the conversation is stored in."""
        return {"user_id": self.conv_id}


def generate_conversations(
    count: int = DEFAULT_CONVERSATIONS, seed: int = 0, *, forget_every: int = FORGET_EVERY
) -> list[Conversation]:
    """``count`` conversations for ``seed``, the same on every run.

    Each conversation is the same whatever ``count`` is (conversation ``i`` is drawn
    from its own seeded generator). Kinds of fact take turns in an order shuffled by
    the seed, so any 24 consecutive conversations cover every kind. One conversation
    in ``forget_every`` (0: none) ends with a forget request: conversation ``i`` when
    ``(i + i // 24) % forget_every == forget_every - 1``, so the kinds take turns at
    being forgotten too.

    Raises:
        ValueError: If ``count`` is below 1 or ``forget_every`` negative.
    """
    if count < 1 or forget_every < 0:
        msg = f"count must be >= 1 and forget_every >= 0, got {count} and {forget_every}."
        raise ValueError(msg)
    kinds = list(FACT_TEMPLATES)
    random.Random(f"knowledge-update:{seed}:kinds").shuffle(kinds)
    return [
        _conversation(
            index,
            kinds[index % len(kinds)],
            seed,
            forget=forget_every > 0
            and (index + index // len(kinds)) % forget_every == forget_every - 1,
        )
        for index in range(count)
    ]


def _fill(template: str, **values: str) -> str:
    text = template.format(**values)
    return text[:1].upper() + text[1:]


def cue_word(text: str) -> str:
    """The first cue word of ``text`` (:data:`~cogito_lc.bench.update_templates.CUE_WORDS`)."""
    found = _CUE.search(text.lower())
    return found.group(1) if found else ""


def _conversation(index: int, template: FactTemplate, seed: int, *, forget: bool) -> Conversation:
    rng = random.Random(f"knowledge-update:{seed}:{index}")
    conv_id = f"ku-{seed}-{index:04d}"
    changes = rng.choices((1, 2, 3), weights=(4, 3, 3))[0]
    values = rng.sample(template.values, changes + 1)
    others = [v for v in template.values if v not in values]
    facts = [_fill(rng.choice(template.first), value=values[0])]
    for step, wording in enumerate(rng.sample(template.change, changes), start=1):
        facts.append(_fill(wording, old=values[step - 1], new=values[step]))
    request = _fill(rng.choice(template.forget), value=values[-1]) if forget else None
    anchors = facts + ([request] if request else [])
    roles = ["statement"] + ["change"] * changes + (["forget"] if request else [])
    chat = _distractors(rng, template, others, between=len(anchors) - 1)
    plan = _interleave(rng, anchors, roles, chat, ends_with_anchor=request is not None)
    turns = _dated(rng, plan)
    texts = [t.text for t in turns]
    if len(set(texts)) != len(texts):  # pragma: no cover - the pools make it impossible
        msg = f"conversation {conv_id} repeats a turn"
        raise AssertionError(msg)
    versions = [t for t in turns if t.version is not None]
    questions = _questions(rng, template, conv_id, tuple(values), versions, forget=forget)
    return Conversation(
        conv_id, template.kind, template.subject, tuple(values), turns, tuple(questions)
    )


def _distractors(
    rng: random.Random, template: FactTemplate, others: list[str], between: int
) -> list[str]:
    """Chat lines: about the same kind of thing (not the user's), other facts, small talk."""
    near = [
        _fill(wording, other=other)
        for wording, other in zip(
            rng.sample(template.near, rng.randint(1, 2)), rng.sample(others, 2), strict=False
        )
    ]
    kinds = [t for t in FACT_TEMPLATES if t.kind != template.kind]
    static = [
        _fill(rng.choice(other.first), value=rng.choice(other.values))
        for other in rng.sample(kinds, rng.randint(1, 2))
    ]
    total = max(rng.randint(4, 8), between + 2)
    small_talk = rng.sample(CHAT_LINES, max(total - len(near) - len(static), 1))
    lines = near + static + small_talk
    rng.shuffle(lines)
    return lines


def _interleave(
    rng: random.Random,
    anchors: list[str],
    roles: list[str],
    chat: list[str],
    *,
    ends_with_anchor: bool,
) -> list[tuple[str, str, int | None]]:
    """The fact's turns in order with chat between each two and around them."""
    gaps = len(anchors) + (0 if ends_with_anchor else 1)
    counts = [0] + [1] * (len(anchors) - 1) + ([] if ends_with_anchor else [0])
    for _ in range(len(chat) - sum(counts)):
        counts[rng.randrange(gaps)] += 1
    plan: list[tuple[str, str, int | None]] = []
    lines = iter(chat)
    version = 0
    for gap, count in enumerate(counts):
        plan.extend((next(lines), "distractor", None) for _ in range(count))
        if gap < len(anchors):
            role = roles[gap]
            plan.append((anchors[gap], role, version if role != "forget" else None))
            version += role != "forget"
    return plan


def _dated(rng: random.Random, plan: list[tuple[str, str, int | None]]) -> tuple[Turn, ...]:
    moment = START + timedelta(
        days=rng.randint(0, 540), hours=rng.randint(0, 11), minutes=rng.randint(0, 59)
    )
    turns = []
    for text, role, version in plan:
        turns.append(Turn(text, moment, role, version))
        moment += timedelta(
            days=rng.randint(1, 9), hours=rng.randint(0, 12), seconds=rng.randint(0, 3599)
        )
    return tuple(turns)


def _questions(
    rng: random.Random,
    template: FactTemplate,
    qid: str,
    values: tuple[str, ...],
    versions: list[Turn],
    *,
    forget: bool,
) -> list[Question]:
    texts = tuple(v.text for v in versions)
    cue = _fill(rng.choice(template.current_cue), old=values[-2])
    plain = _fill(rng.choice(template.current_plain), old=values[-2])
    if forget:
        return [
            Question(f"{qid}/forget-cue", cue, "forget", None, texts, cue=cue_word(cue)),
            Question(f"{qid}/forget-plain", plain, "forget", None, texts),
        ]
    asked = rng.randrange(len(versions) - 1)
    held, followed = versions[asked], versions[asked + 1]
    as_of = held.created_at + (followed.created_at - held.created_at) / 2
    past = _fill(rng.choice(template.past), next=values[asked + 1])
    return [
        Question(
            f"{qid}/current-cue", cue, "current_cue", texts[-1], texts[:-1], cue=cue_word(cue)
        ),
        Question(f"{qid}/current-plain", plain, "current_plain", texts[-1], texts[:-1]),
        Question(
            f"{qid}/past",
            past,
            "past",
            held.text,
            tuple(t for t in texts if t != held.text),
            as_of=as_of.replace(microsecond=0),
        ),
    ]


# -- metrics ------------------------------------------------------------------------


def _norm(text: str) -> str:
    return " ".join(text.split())


def rank_of(texts: Sequence[str], targets: Collection[str]) -> int | None:
    """The 1-based rank of the first text that is one of ``targets`` (whitespace aside)."""
    wanted = {_norm(t) for t in targets}
    return next((rank for rank, text in enumerate(texts, start=1) if _norm(text) in wanted), None)


@dataclass(frozen=True)
class QuestionHit:
    """Where one read path ranked a question's gold and stale memories."""

    conversation: str
    qid: str
    qtype: str
    kind: str
    read: str
    gold_rank: int | None
    stale_rank: int | None
    """Rank of the first stale memory (for a forget probe: of any version of the fact)."""
    returned: int
    cue: str = ""

    @property
    def hit(self) -> bool:
        """The top memory is the expected version."""
        return self.gold_rank == 1

    @property
    def stale_at_1(self) -> bool:
        """The top memory is another version of the fact."""
        return self.stale_rank == 1

    @property
    def leaked(self) -> bool:
        """A forget probe got a version of the forgotten fact back."""
        return self.qtype == "forget" and self.stale_rank is not None


def score_ranking(
    question: Question, texts: Sequence[str], *, conversation: str, kind: str, read: str
) -> QuestionHit:
    """Score one ranking (memory texts, best first) for ``question``."""
    return QuestionHit(
        conversation=conversation,
        qid=question.qid,
        qtype=question.qtype,
        kind=kind,
        read=read,
        gold_rank=rank_of(texts, [question.gold]) if question.gold is not None else None,
        stale_rank=rank_of(texts, question.stale),
        returned=len(texts),
        cue=question.cue,
    )


def _rate(flags: Iterable[bool]) -> float:
    values = list(flags)
    return round(sum(values) / len(values), 3) if values else 0.0


def _group(hits: list[QuestionHit]) -> dict[str, Any]:
    if hits and hits[0].qtype == "forget":
        return {
            "n": len(hits),
            "leaked": _rate(h.leaked for h in hits),
            "leaked_questions": sum(h.leaked for h in hits),
        }
    return {
        "n": len(hits),
        "hit@1": _rate(h.hit for h in hits),
        "hit@5": _rate(h.gold_rank is not None and h.gold_rank <= 5 for h in hits),
        "stale@1": _rate(h.stale_at_1 for h in hits),
        "stale_first": _rate(
            h.stale_rank is not None and (h.gold_rank is None or h.stale_rank < h.gold_rank)
            for h in hits
        ),
        "mrr": round(sum(1 / h.gold_rank for h in hits if h.gold_rank) / max(len(hits), 1), 3),
    }


def summarise_hits(hits: Iterable[QuestionHit]) -> dict[str, dict[str, dict[str, Any]]]:
    """Rates per read path and question type (``current`` pools the two current types).

    ``hit@1`` is current-fact@1 for current questions and past-fact@1 for past ones;
    ``stale@1`` the share whose top memory is another version; ``stale_first`` the share
    where a stale version ranks above the gold one (or comes without it); forget probes
    report the share that got any version of the forgotten fact back (``leaked``).
    """
    by_read: dict[str, dict[str, list[QuestionHit]]] = {}
    for hit in hits:
        groups = by_read.setdefault(hit.read, {})
        groups.setdefault(hit.qtype, []).append(hit)
        if hit.qtype in CURRENT_TYPES:
            groups.setdefault("current", []).append(hit)
    order = (*CURRENT_TYPES, "current", "past", "forget")
    return {
        read: {name: _group(groups[name]) for name in order if name in groups}
        for read, groups in by_read.items()
    }


def summarise_by_kind(hits: Iterable[QuestionHit]) -> dict[str, dict[str, dict[str, float]]]:
    """Current-fact@1 and stale-at-1 per read path and kind of fact (current questions)."""
    grouped: dict[str, dict[str, list[QuestionHit]]] = {}
    for hit in hits:
        if hit.qtype in CURRENT_TYPES:
            grouped.setdefault(hit.read, {}).setdefault(hit.kind, []).append(hit)
    return {
        read: {
            kind: {
                "n": len(rows),
                "hit@1": _rate(h.hit for h in rows),
                "stale@1": _rate(h.stale_at_1 for h in rows),
            }
            for kind, rows in sorted(kinds.items())
        }
        for read, kinds in grouped.items()
    }


def default_objective(hits: Sequence[QuestionHit]) -> float:
    """What a configuration is fitted for: mean hit@1 minus stale-at-1, current and past."""
    scored = [h for h in hits if h.qtype != "forget"]
    if not scored:
        return 0.0
    return (sum(h.hit for h in scored) - sum(h.stale_at_1 for h in scored)) / len(scored)


# -- writes, forgets and their checks -----------------------------------------------


class CallCounter(BaseCallbackHandler):
    """Counts the chat model (or LLM) calls made while it is among a model's callbacks."""

    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()

    def _count(self) -> None:
        with self._lock:
            self.calls += 1

    def on_chat_model_start(self, serialized: dict[str, Any], messages: Any, **kwargs: Any) -> None:
        self._count()

    def on_llm_start(self, serialized: dict[str, Any], prompts: list[str], **kwargs: Any) -> None:
        self._count()


@dataclass
class WriteRecord:
    """One turn written: how long it took, what the store did with it."""

    conversation: str
    role: str
    version: int | None
    ms: float
    model_calls: int
    id: str | None
    superseded: list[str] = field(default_factory=list)
    repeated: list[str] = field(default_factory=list)
    supersession: str | None = None


@dataclass
class ForgetRecord:
    """A forget request: what the store forgot, and what the benchmark forgot by id."""

    conversation: str
    kind: str
    request: str
    recognised: bool
    forgotten: list[str]
    """Ids the store reported forgotten for the request."""
    explicit: list[str]
    """Ids forgotten by ``forget(ids=...)`` because the request was not recognised."""
    fact_ids: list[str]
    """Ids of every stored version of the fact."""
    method: str | None = None
    ms: float = 0.0
    model_calls: int = 0
    error: str | None = None


@dataclass
class ForgetCheck:
    """After a forget: per read path, forgotten memories and versions of the fact returned."""

    conversation: str
    kind: str
    recognised: bool
    forgotten: int
    fact_memories: int
    forgotten_of_fact: int
    returned_forgotten: dict[str, int]
    """Distinct forgotten memories each read path returned (compliance: all 0)."""
    fact_leaks: dict[str, int]
    """Distinct versions of the fact (by id or text) each read path returned."""
    returned_forgotten_any: int = 0
    """Distinct forgotten memories returned by any read path (compliance: 0)."""
    fact_leaks_any: int = 0
    """Distinct versions of the fact returned by any read path."""
    as_of_refused: int = 0
    """``as_of`` reads refused because the time lies before every memory left."""


def summarise_writes(records: Sequence[WriteRecord], *, supersede: bool) -> dict[str, Any]:
    """Write latency, model calls per write and, with supersession, what it superseded."""
    if not records:
        return {"writes": 0}
    latencies = sorted(r.ms for r in records)
    by_conversation: dict[str, dict[int, str | None]] = {}
    for r in records:
        if r.version is not None:
            by_conversation.setdefault(r.conversation, {})[r.version] = r.id
    changes = [r for r in records if r.role == "change"]
    correct = 0
    false = 0
    for r in records:
        versions = by_conversation.get(r.conversation, {})
        earlier = {versions.get(v) for v in range(r.version or 0)} - {None}
        if r.role == "change" and versions.get((r.version or 1) - 1) in set(r.superseded):
            correct += 1
        false += len(set(r.superseded) - (earlier if r.role == "change" else set()))
    calls = sum(r.model_calls for r in records)
    return {
        "writes": len(records),
        "supersede": supersede,
        "p50_ms": round(statistics.median(latencies), 2),
        "p95_ms": round(latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))], 2),
        "model_calls": calls,
        "model_calls_per_write": round(calls / len(records), 3),
        "superseded": sum(len(r.superseded) for r in records),
        "changes": len(changes),
        "changes_superseding_previous": _rate(
            by_conversation.get(r.conversation, {}).get((r.version or 1) - 1) in set(r.superseded)
            for r in changes
        ),
        "changes_superseding_previous_count": correct,
        "false_supersessions": false,
        "repeated": sum(len(r.repeated) for r in records),
        "supersession_methods": dict(
            Counter(r.supersession for r in records if r.supersession).most_common()
        ),
    }


def summarise_forgets(
    records: Sequence[ForgetRecord], checks: Sequence[ForgetCheck]
) -> dict[str, Any]:
    """Forget requests recognised, and what every read path returned afterwards."""
    returned: Counter[str] = Counter()
    leaks: Counter[str] = Counter()
    for check in checks:
        returned.update(check.returned_forgotten)
        leaks.update(check.fact_leaks)
    fact = sum(c.fact_memories for c in checks)
    return {
        "requests": len(records),
        "recognised": sum(r.recognised for r in records),
        "forgotten_by_ids": sum(bool(r.explicit) for r in records),
        "errors": sum(r.error is not None for r in records),
        "methods": dict(Counter(r.method or "none" for r in records).most_common()),
        "forgotten_memories": sum(c.forgotten for c in checks),
        "fact_memories": fact,
        "fact_memories_forgotten": round(sum(c.forgotten_of_fact for c in checks) / fact, 3)
        if fact
        else 0.0,
        "compliance": sum(c.returned_forgotten_any for c in checks),
        "compliance_by_path": dict(sorted(returned.items())),
        "fact_leaks": sum(c.fact_leaks_any for c in checks),
        "fact_leaks_by_path": dict(sorted(leaks.items())),
        "conversations_leaking": sum(c.fact_leaks_any > 0 for c in checks),
        "as_of_reads_refused": sum(c.as_of_refused for c in checks),
        "request_p50_ms": round(statistics.median(r.ms for r in records), 2) if records else 0.0,
    }


# -- the stores, built once ------------------------------------------------------------


class UpdateEvaluation:
    """A conversation set written into one MemoryStore once, then scored under any config.

    Build it with :func:`build_evaluation` (or :meth:`build`); :meth:`score` runs every
    question through a RecallB built from the fields given (one retriever per
    conversation, confined to its scope; past questions read ``as_of``), so another
    ranking configuration costs only its reads. :meth:`close` removes the store.

    Example:
        ```python
        from cogito_lc.bench.hash_embeddings import HashEmbeddings
        from cogito_lc.bench.knowledge_update import build_evaluation, generate_conversations

        conversations = generate_conversations(4)
        embeddings = HashEmbeddings()  # offline; the benchmark uses local_embeddings()
        with build_evaluation(conversations, embeddings=embeddings, store="memory") as evaluation:
            defaults = evaluation.score()  # RecallB's defaults
            other = evaluation.score({"cosine_weight": 0.8})  # the same store, another ranking
            assert len(defaults) == len(other) == sum(len(c.questions) for c in conversations)
        ```
    """

    def __init__(
        self,
        memory: MemoryStore,
        conversations: Sequence[Conversation],
        *,
        mode: str = "zero_llm",
        cleanup: Callable[[], None] | None = None,
    ) -> None:
        self.memory = memory
        self.conversations = list(conversations)
        self.mode = mode
        self.writes: list[WriteRecord] = []
        self.forgets: list[ForgetRecord] = []
        self.write_s = 0.0
        self._cleanup = cleanup

    @classmethod
    def build(
        cls,
        conversations: Sequence[Conversation],
        *,
        embeddings: Embeddings | None = None,
        store: str = "chroma",
        judge: Any = None,
        supersede: bool = False,
        counter: CallCounter | None = None,
        mode: str = "zero_llm",
        progress: bool = False,
    ) -> UpdateEvaluation:
        """Write every conversation's turns, in order and dated, each in its own scope.

        Args:
            conversations: The conversations (:func:`generate_conversations`).
            embeddings: The embeddings; :func:`cogito_lc.local_embeddings` by default.
            store: ``chroma`` (embedded, persistent in a temporary folder, so its
                lexical index is SQLite FTS5) or ``memory`` (``InMemoryVectorStore``).
            judge: The store's supersession judge (``SupersessionJudge.from_llm``).
            supersede: Write with ``supersede=True`` (the judge decides what each
                write supersedes); False writes verbatim.
            counter: Counts the judge model's calls (it must be among its callbacks).
            mode: A label for the report.
            progress: Print a line to stderr every 50 conversations.
        """
        memory, cleanup = _memory_store(embeddings, store, judge)
        evaluation = cls(memory, conversations, mode=mode, cleanup=cleanup)
        try:
            evaluation._write_all(supersede=supersede, counter=counter, progress=progress)
        except BaseException:
            evaluation.close()
            raise
        return evaluation

    def __enter__(self) -> UpdateEvaluation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove the store (its temporary folder)."""
        if self._cleanup is not None:
            self._cleanup()
            self._cleanup = None

    # -- writes

    def _write_all(self, *, supersede: bool, counter: CallCounter | None, progress: bool) -> None:
        started = time.perf_counter()
        for done, conversation in enumerate(self.conversations, start=1):
            ids: dict[int, str] = {}
            for turn in conversation.turns:
                if turn.role == "forget":
                    self.forgets.append(self._forget(conversation, turn, ids, counter))
                    continue
                record = self._write(conversation, turn, supersede, counter)
                self.writes.append(record)
                if turn.version is not None and record.id is not None:
                    ids[turn.version] = record.id
            if progress and (done % 50 == 0 or done == len(self.conversations)):
                print(
                    f"  {self.mode}: {done}/{len(self.conversations)} conversations written "
                    f"({time.perf_counter() - started:.1f} s)",
                    file=sys.stderr,
                )
        self.write_s = time.perf_counter() - started

    def _write(
        self,
        conversation: Conversation,
        turn: Turn,
        supersede: bool,
        counter: CallCounter | None,
    ) -> WriteRecord:
        before = counter.calls if counter else 0
        start = time.perf_counter()
        if supersede:
            result = self.memory.add(
                turn.text, scope=conversation.scope, created_at=turn.created_at, supersede=True
            )
            ms = (time.perf_counter() - start) * 1000
            return WriteRecord(
                conversation.conv_id,
                turn.role,
                turn.version,
                ms,
                (counter.calls if counter else 0) - before,
                result.memories[0].id if result.memories else None,
                list(result.superseded),
                list(result.repeated),
                result.supersession,
            )
        doc = self.memory.store(turn.text, scope=conversation.scope, created_at=turn.created_at)
        ms = (time.perf_counter() - start) * 1000
        calls = (counter.calls if counter else 0) - before
        return WriteRecord(conversation.conv_id, turn.role, turn.version, ms, calls, doc.id)

    def _forget(
        self,
        conversation: Conversation,
        turn: Turn,
        ids: Mapping[int, str],
        counter: CallCounter | None,
    ) -> ForgetRecord:
        """Pass the request to the store; forget the fact by id if it was not recognised."""
        fact_ids = list(dict.fromkeys(ids[v] for v in sorted(ids)))
        before = counter.calls if counter else 0
        start = time.perf_counter()
        forgotten: list[str] = []
        method: str | None = None
        error: str | None = None
        try:
            result = self.memory.add(
                turn.text, scope=conversation.scope, created_at=turn.created_at, supersede=True
            )
            forgotten = list(result.forgotten)
            method = result.supersession or result.method
        except ValueError as exc:  # e.g. a store without a judge refusing supersede=True
            error = str(exc)
        ms = (time.perf_counter() - start) * 1000
        calls = (counter.calls if counter else 0) - before
        explicit: list[str] = []
        if not forgotten:
            answer = self.memory.forget(ids=fact_ids, scope=conversation.scope)
            explicit = list(answer.ids)
            method = f"by_ids:{answer.method}"
        return ForgetRecord(
            conversation.conv_id,
            conversation.kind,
            turn.text,
            bool(forgotten),
            forgotten,
            explicit,
            fact_ids,
            method,
            ms,
            calls,
            error,
        )

    # -- reads

    def select(self, conversations: Collection[str] | None = None) -> list[Conversation]:
        """The conversations with these ids (all by default), in the set's order."""
        if conversations is None:
            return self.conversations
        wanted = set(conversations)
        return [c for c in self.conversations if c.conv_id in wanted]

    def retriever(
        self, conversation: Conversation, recall_b: Mapping[str, Any] | None = None, k: int = TOP_K
    ) -> BaseRetriever:
        """RecallB over the conversation's scope with the fields of ``recall_b``."""
        fields = {"k": k, **(recall_b or {})}
        return self.memory.as_retriever("recall_b", scope=conversation.scope, **fields)

    def score(
        self,
        recall_b: Mapping[str, Any] | None = None,
        *,
        conversations: Collection[str] | None = None,
        k: int = TOP_K,
        read: str = "recall_b",
    ) -> list[QuestionHit]:
        """Every question's hit under RecallB built with ``recall_b`` (its defaults if None).

        Args:
            recall_b: Fields of RecallB (``{"cosine_weight": 0.5}``, a recency term ...).
            conversations: Only these conversation ids.
            k: How many memories each question reads.
            read: The label of the hits' read path.
        """
        hits: list[QuestionHit] = []
        for conversation in self.select(conversations):
            retriever = self.retriever(conversation, recall_b, k)
            for question in conversation.questions:
                docs = _recall(retriever, question)
                hits.append(self._hit(conversation, question, docs, read))
        return hits

    def score_search(
        self, *, conversations: Collection[str] | None = None, k: int = TOP_K
    ) -> list[QuestionHit]:
        """Every question's hit under plain vector search (``MemoryStore.search``)."""
        hits: list[QuestionHit] = []
        for conversation in self.select(conversations):
            for question in conversation.questions:
                docs = _search(self.memory, conversation, question, k)
                hits.append(self._hit(conversation, question, docs, "search"))
        return hits

    @staticmethod
    def _hit(
        conversation: Conversation, question: Question, docs: Sequence[Document], read: str
    ) -> QuestionHit:
        return score_ranking(
            question,
            [d.page_content for d in docs],
            conversation=conversation.conv_id,
            kind=conversation.kind,
            read=read,
        )

    def check_forgets(self) -> list[ForgetCheck]:
        """Read every forgotten fact back through every read path; count what returns."""
        by_id = {c.conv_id: c for c in self.conversations}
        return [self._check(by_id[record.conversation], record) for record in self.forgets]

    def _check(self, conversation: Conversation, record: ForgetRecord) -> ForgetCheck:
        scope = conversation.scope
        forgotten = set(record.forgotten) | set(record.explicit)
        fact_ids = set(record.fact_ids)
        fact_texts = {_norm(v.text) for v in conversation.versions}
        depth = len(conversation.turns) + 5
        recall = self.memory.as_retriever("recall_b", scope=scope, k=depth)
        recall_all = self.memory.as_retriever(
            "recall_b", scope=scope, k=depth, include_superseded=True
        )
        paths: dict[str, list[Document]] = {}

        def read(path: str, docs: Iterable[Document]) -> None:
            paths.setdefault(path, []).extend(docs)

        questions = [q.text for q in conversation.questions]
        times = [_held_at(conversation, v) for v in range(len(conversation.versions))]
        for probe in questions + [v.text for v in conversation.versions]:
            read("search", (d for d, _ in self.memory.search(probe, k=depth, scope=scope)))
            read(
                "search_include_superseded",
                (
                    d
                    for d, _ in self.memory.search(
                        probe, k=depth, scope=scope, include_superseded=True
                    )
                ),
            )
            read("recall_b", recall.invoke(probe))
            read("recall_b_include_superseded", recall_all.invoke(probe))
        refused = 0
        for probe in questions:
            for moment in times:
                # A time before every memory left in the scope is refused (ValueError):
                # the forgotten versions may have been its oldest memories.
                try:
                    found = self.memory.search(probe, k=depth, scope=scope, as_of=moment)
                    read("search_as_of", (d for d, _ in found))
                except ValueError:
                    refused += 1
                    read("search_as_of", [])
                try:
                    read("recall_b_as_of", recall.invoke(probe, as_of=moment))
                except ValueError:
                    refused += 1
                    read("recall_b_as_of", [])
        listed = self.memory.list(scope=scope, limit=1000)
        read("list", listed)
        for memory_id in sorted(fact_ids | forgotten):
            got = self.memory.get(memory_id, scope=scope)
            read("get", [got] if got is not None else [])
        for memory_id in sorted({str(d.id) for d in listed if d.id} | fact_ids | forgotten):
            with contextlib.suppress(MemoryNotFoundError):
                read("history", self.memory.history(memory_id, scope=scope))
        returned = {
            path: {str(d.id) for d in docs if d.id in forgotten} for path, docs in paths.items()
        }
        leaks = {
            path: {
                d.id or _norm(d.page_content)
                for d in docs
                if d.id in fact_ids or _norm(d.page_content) in fact_texts
            }
            for path, docs in paths.items()
        }
        return ForgetCheck(
            conversation.conv_id,
            conversation.kind,
            record.recognised,
            len(forgotten),
            len(fact_ids),
            len(forgotten & fact_ids),
            {path: len(found) for path, found in returned.items()},
            {path: len(found) for path, found in leaks.items()},
            len(set().union(*returned.values())),
            len(set().union(*leaks.values())),
            refused,
        )


def _recall(retriever: BaseRetriever, question: Question) -> list[Document]:
    """The retriever's answer; nothing when it refuses the question's ``as_of``."""
    if question.as_of is None:
        return retriever.invoke(question.text)
    try:
        return retriever.invoke(question.text, as_of=question.as_of)
    except ValueError as exc:  # a time before every memory of the scope
        logger.info("an as_of read was refused (%s); scored as returning nothing", exc)
        return []


def _search(
    memory: MemoryStore, conversation: Conversation, question: Question, k: int
) -> list[Document]:
    """Plain search's answer; nothing when the store refuses the question's ``as_of``."""
    try:
        found = memory.search(question.text, k=k, scope=conversation.scope, as_of=question.as_of)
    except ValueError as exc:
        if question.as_of is None:
            raise
        logger.info("an as_of search was refused (%s); scored as returning nothing", exc)
        return []
    return [doc for doc, _ in found]


def _held_at(conversation: Conversation, version: int) -> datetime:
    """A time when ``version`` of the fact held (halfway to the next turn)."""
    turns = list(conversation.turns)
    at = next(i for i, t in enumerate(turns) if t.version == version)
    start = turns[at].created_at
    end = turns[at + 1].created_at if at + 1 < len(turns) else start + timedelta(days=2)
    return (start + (end - start) / 2).replace(microsecond=0)


def _memory_store(
    embeddings: Embeddings | None, store: str, judge: Any
) -> tuple[MemoryStore, Callable[[], None]]:
    if embeddings is None:
        from cogito_lc.embeddings.local import local_embeddings

        embeddings = local_embeddings()
    options: dict[str, Any] = {} if judge is None else {"judge": judge}
    if store == "memory":
        from langchain_core.vectorstores import InMemoryVectorStore

        return MemoryStore(InMemoryVectorStore(embeddings), **options), lambda: None
    if store != "chroma":
        msg = f"store must be 'chroma' or 'memory', got {store!r}."
        raise ValueError(msg)
    from langchain_chroma import Chroma

    directory = Path(tempfile.mkdtemp(prefix="knowledge-update-"))
    chroma = Chroma(
        collection_name=f"updates-{uuid.uuid4().hex[:12]}",
        embedding_function=embeddings,
        persist_directory=str(directory),
    )

    def cleanup() -> None:
        with contextlib.suppress(Exception):
            chroma.delete_collection()
        shutil.rmtree(directory, ignore_errors=True)

    return MemoryStore(chroma, **options), cleanup


def build_evaluation(
    conversations: Sequence[Conversation],
    *,
    embeddings: Embeddings | None = None,
    store: str = "chroma",
    judge: Any = None,
    supersede: bool = False,
    counter: CallCounter | None = None,
    mode: str = "zero_llm",
    progress: bool = False,
) -> UpdateEvaluation:
    """Write ``conversations`` into one store once (:meth:`UpdateEvaluation.build`)."""
    return UpdateEvaluation.build(
        conversations,
        embeddings=embeddings,
        store=store,
        judge=judge,
        supersede=supersede,
        counter=counter,
        mode=mode,
        progress=progress,
    )


# -- cross-validation over conversations --------------------------------------------------


def conversation_folds(ids: Sequence[str], folds: int = 5, seed: int = 0) -> list[list[str]]:
    """``ids`` split into ``folds`` disjoint sets of nearly equal size, shuffled by ``seed``.

    Raises:
        ValueError: If ``folds`` is below 2 or above the number of distinct ids.
    """
    distinct = sorted(set(ids))
    if not 2 <= folds <= len(distinct):
        msg = f"folds must be between 2 and the {len(distinct)} conversations, got {folds}."
        raise ValueError(msg)
    random.Random(f"knowledge-update:folds:{seed}").shuffle(distinct)
    return [sorted(distinct[i::folds]) for i in range(folds)]


@dataclass
class UpdateCV:
    """Held-out hits of the configuration each fold chose on the other folds."""

    configs: list[dict[str, Any]]
    folds: list[list[str]]
    chosen: list[int]
    """Index into ``configs`` of each fold's pick."""
    held_out: list[QuestionHit]
    scores: list[list[QuestionHit]]
    """Every configuration's hits on every conversation."""

    def summary(self) -> dict[str, Any]:
        return {
            "folds": len(self.folds),
            "chosen": [self.configs[i] for i in self.chosen],
            "held_out": summarise_hits(self.held_out),
            "configs": [
                {"config": config, "objective": round(default_objective(hits), 4)}
                for config, hits in zip(self.configs, self.scores, strict=True)
            ],
        }


def cross_validate(
    evaluation: UpdateEvaluation,
    configs: Sequence[Mapping[str, Any]],
    *,
    folds: int = 5,
    seed: int = 0,
    objective: Callable[[Sequence[QuestionHit]], float] = default_objective,
    k: int = TOP_K,
) -> UpdateCV:
    """Fit a RecallB configuration on all folds but one, score it on that one, for each.

    Every configuration is scored once on every conversation (the store is not rebuilt);
    a fold's pick is the configuration with the best ``objective`` on the other folds'
    hits (the earlier one on a tie).
    """
    if not configs:
        msg = "configs is empty; pass at least one dict of RecallB fields ({} = defaults)."
        raise ValueError(msg)
    scores = [evaluation.score(config, k=k) for config in configs]
    split = conversation_folds([c.conv_id for c in evaluation.conversations], folds, seed)
    chosen: list[int] = []
    held_out: list[QuestionHit] = []
    for held in split:
        test = set(held)

        def fitted(i: int, test: set[str] = test) -> tuple[float, int]:
            return objective([h for h in scores[i] if h.conversation not in test]), -i

        best = max(range(len(configs)), key=fitted)
        chosen.append(best)
        held_out.extend(h for h in scores[best] if h.conversation in test)
    return UpdateCV([dict(c) for c in configs], split, chosen, held_out, scores)


# -- the runner -----------------------------------------------------------------------------


@dataclass
class Judge:
    """A mode's supersession judge, its model's label and its call counter."""

    judge: Any
    label: str
    counter: CallCounter


def _chat_model(base_url: str, model: str, api_key: str, counter: CallCounter) -> Any:
    from langchain_openai import ChatOpenAI

    # llama-cpp-python reads max_tokens, not the max_completion_tokens langchain-openai sends.
    return ChatOpenAI(
        model=model,
        base_url=base_url,
        api_key=api_key,
        temperature=0,
        max_tokens=JUDGE_MAX_TOKENS,
        max_retries=0,
        timeout=2 * JUDGE_TIMEOUT_S,
        extra_body={"max_tokens": JUDGE_MAX_TOKENS},
        callbacks=[counter],
    )


def _judge(llm: Any, label: str, counter: CallCounter, **fields: Any) -> Judge:
    from cogito_lc import SupersessionJudge

    return Judge(SupersessionJudge.from_llm(llm, **fields), label, counter)


def openai_endpoint() -> tuple[str, str, str] | str:
    """``(base_url, model, api_key)`` of the configured OpenAI-compatible endpoint, or why not.

    The URL is ``$OPENAI_BASE_URL`` or ``$COGITO_FILTER_ENDPOINT``; the model
    ``$COGITO_LLM_MODEL``, ``$COGITO_FILTER_MODEL`` or ``$OPENAI_MODEL`` (an ``openai:``
    prefix dropped); the key ``$COGITO_FILTER_TOKEN`` or ``$OPENAI_API_KEY``.
    """
    base_url = os.environ.get("OPENAI_BASE_URL") or os.environ.get("COGITO_FILTER_ENDPOINT")
    if not base_url:
        return "no OpenAI-compatible endpoint: set OPENAI_BASE_URL or COGITO_FILTER_ENDPOINT"
    model = next(
        (
            os.environ[name]
            for name in ("COGITO_LLM_MODEL", "COGITO_FILTER_MODEL", "OPENAI_MODEL")
            if os.environ.get(name)
        ),
        "",
    ).removeprefix("openai:")
    if not model:
        return f"{base_url} is set but no model: set COGITO_LLM_MODEL (or OPENAI_MODEL)"
    key = os.environ.get("COGITO_FILTER_TOKEN") or os.environ.get("OPENAI_API_KEY") or "unused"
    return base_url, model, key


def mode_judge(
    mode: str, stack: contextlib.ExitStack, *, timeout: float = JUDGE_TIMEOUT_S
) -> Judge | str | None:
    """The judge of ``mode`` (None for ``zero_llm``), or why the mode is skipped.

    ``timeout`` is the judge's wait for one answer (its default, 12 s, is short for a
    model on two CPU cores).
    """
    if mode == "zero_llm":
        return None
    counter = CallCounter()
    if mode == "openai":
        endpoint = openai_endpoint()
        if isinstance(endpoint, str):
            return endpoint
        base_url, model, key = endpoint
        llm = _chat_model(base_url, model, key, counter)
        return _judge(llm, f"openai:{model}", counter, timeout=timeout)
    if mode != "local_llm":
        msg = f"mode must be one of {', '.join(MODES)}, got {mode!r}."
        raise ValueError(msg)
    root = Path.cwd()
    if not (root / "tests" / "integration_tests" / "llm_server.py").is_file():
        return "local_llm starts the test tier's llama.cpp server: run from a source checkout"
    sys.path.insert(0, str(root))
    from tests.integration_tests.llm_server import llama_cpp_server_available, start_llama_server

    if not llama_cpp_server_available():
        return "llama-cpp-python[server] is not installed (make setup-llm)"
    log_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="updates-llama-")))
    server = start_llama_server(log_dir, n_ctx=LLAMA_CPP_CONTEXT)
    stack.callback(server.stop)
    print(f"  llama.cpp server with {server.model} at {server.base_url}", file=sys.stderr)
    llm = _chat_model(server.base_url, server.model, "unused", counter)
    label = f"llama-cpp:{server.model}"
    return _judge(llm, label, counter, timeout=timeout, structured_output="json_object")


def run_mode(
    mode: str,
    conversations: Sequence[Conversation],
    judge: Judge | None,
    *,
    embeddings: Embeddings,
    store: str,
    recall_b: Mapping[str, Any],
    k: int,
) -> tuple[dict[str, Any], list[QuestionHit], list[WriteRecord]]:
    """Build one store for ``conversations``, score both read paths, check every forget.

    Returns:
        The mode's report, every question's hits and every write.
    """
    started = time.perf_counter()
    evaluation = build_evaluation(
        conversations,
        embeddings=embeddings,
        store=store,
        judge=judge.judge if judge else None,
        supersede=judge is not None,
        counter=judge.counter if judge else None,
        mode=mode,
        progress=True,
    )
    with evaluation:
        reads_started = time.perf_counter()
        hits = evaluation.score(recall_b, k=k) + evaluation.score_search(k=k)
        reads_s = time.perf_counter() - reads_started
        checks_started = time.perf_counter()
        checks = evaluation.check_forgets()
        checks_s = time.perf_counter() - checks_started
        questions = sum(len(c.questions) for c in conversations)
        result = {
            "conversations": len(conversations),
            "questions": questions,
            "llm": judge.label if judge else None,
            "retrieval": summarise_hits(hits),
            "by_kind": summarise_by_kind(hits),
            "forget": summarise_forgets(evaluation.forgets, checks),
            "writes": summarise_writes(evaluation.writes, supersede=judge is not None),
            "seconds": {
                "write": round(evaluation.write_s, 1),
                "questions": round(reads_s, 1),
                "question_mean_ms": round(1000 * reads_s / max(2 * questions, 1), 1),
                "forget_checks": round(checks_s, 1),
                "total": round(time.perf_counter() - started, 1),
            },
        }
    return result, hits, evaluation.writes


def _against_zero_llm(
    result: dict[str, Any],
    zero_hits: Sequence[QuestionHit],
    zero_writes: Sequence[WriteRecord],
    ids: Collection[str],
) -> None:
    """Add the zero-LLM figures on a model mode's conversations, for a like-for-like view."""
    result["zero_llm_same_conversations"] = summarise_hits(
        h for h in zero_hits if h.conversation in ids
    )
    plain = [w.ms for w in zero_writes if w.conversation in ids]
    if plain:
        p50 = statistics.median(plain)
        result["writes"]["zero_llm_p50_ms"] = round(p50, 2)
        result["writes"]["p50_to_zero_llm"] = round(result["writes"]["p50_ms"] / p50, 1)


def _load_note(machine: Mapping[str, Any]) -> str:
    start, end = machine.get("load_average_start"), machine.get("load_average_end")
    if start is None or end is None:
        return ""
    return f" (1-minute load average {start} at the start, {end} at the end)"


def _row(name: str, read: str, summary: Mapping[str, Any], conversations: int) -> str:
    def cell(group: str, metric: str) -> str:
        value = summary.get(group, {}).get(metric)
        return "-" if value is None else f"{value:.3f}"

    return (
        f"| {name} | {read} | {conversations} | {cell('current_cue', 'hit@1')} | "
        f"{cell('current_plain', 'hit@1')} | {cell('current_cue', 'stale@1')} | "
        f"{cell('current_plain', 'stale@1')} | {cell('past', 'hit@1')} | "
        f"{cell('past', 'stale@1')} | {cell('forget', 'leaked')} |"
    )


def markdown(report: Mapping[str, Any]) -> str:
    """The report's tables: retrieval per mode and read path, then forgets and writes."""
    settings = report["settings"]
    lines = [
        "# Knowledge-update benchmark",
        "",
        f"{settings['conversations']} generated conversations (seed {settings['seed']}, "
        f"{settings['kinds']} kinds of fact, {settings['questions']} questions), top "
        f"{settings['top_k']}, {settings['embeddings']} on {settings['store']}; cogito-lc "
        f"{report['cogito_lc']}, {report['machine']['cpus']} CPUs, "
        f"{report['elapsed_s']:.0f} s in all{_load_note(report['machine'])}.",
        "",
        "| mode | read | conversations | current@1 (cue) | current@1 (plain) | stale@1 (cue) "
        "| stale@1 (plain) | past@1 (as_of) | past stale@1 | forget probes leaked |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    writes = [
        "",
        "| mode | forget requests | recognised | forgotten returned (must be 0) | fact leaks "
        "| write p50 ms | p50 / zero_llm | write p95 ms | model calls / write | changes "
        "superseding the previous | false supersessions | seconds (write / read / checks) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    skipped = []
    tags = []
    for mode, result in report["modes"].items():
        if "skipped" in result:
            skipped.append(f"- `{mode}` skipped: {result['skipped']}")
            continue
        for read, summary in result["retrieval"].items():
            lines.append(_row(mode, read, summary, result["conversations"]))
        for read, summary in result.get("zero_llm_same_conversations", {}).items():
            lines.append(
                _row("zero_llm, same conversations", read, summary, result["conversations"])
            )
        forget, write, seconds = result["forget"], result["writes"], result["seconds"]
        superseding = (
            f"{write['changes_superseding_previous']:.3f}" if write.get("supersede") else "-"
        )
        writes.append(
            f"| {mode} | {forget['requests']} | {forget['recognised']} | "
            f"{forget['compliance']} | {forget['fact_leaks']} | {write['p50_ms']:.1f} | "
            f"{write.get('p50_to_zero_llm', '-')} | "
            f"{write['p95_ms']:.1f} | {write['model_calls_per_write']:.2f} | {superseding} | "
            f"{write['false_supersessions'] if write.get('supersede') else '-'} | "
            f"{seconds['write']:.0f} / {seconds['questions']:.0f} / "
            f"{seconds['forget_checks']:.0f} |"
        )
        if write.get("supersession_methods"):
            counted = ", ".join(f"{k} {n}" for k, n in write["supersession_methods"].items())
            tags.append(f"- `{mode}` judge tags: {counted}")
    notes = tags + skipped
    return "\n".join(lines + writes + (["", *notes] if notes else [])) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--conversations", type=int, default=DEFAULT_CONVERSATIONS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--modes",
        nargs="+",
        choices=MODES,
        default=list(MODES),
        help="zero_llm (no judge), local_llm (Gemma 3 270M on llama.cpp), openai "
        "(OPENAI_BASE_URL or COGITO_FILTER_ENDPOINT; skipped without one)",
    )
    parser.add_argument(
        "--llm-conversations",
        type=int,
        default=DEFAULT_LLM_CONVERSATIONS,
        help="the model modes run on the first N conversations (default: %(default)s)",
    )
    parser.add_argument(
        "--judge-timeout",
        type=float,
        default=JUDGE_TIMEOUT_S,
        help="seconds the judge waits for one answer (default: %(default)s)",
    )
    parser.add_argument("--store", choices=["chroma", "memory"], default="chroma")
    parser.add_argument("--k", type=int, default=TOP_K, help="memories read per question")
    parser.add_argument(
        "--recall-b", default="{}", help="RecallB fields as JSON, e.g. '{\"cosine_weight\": 0.5}'"
    )
    add_out_argument(
        parser,
        what="JSON results; the markdown goes beside it",
        published=DEFAULT_OUT,
        flags="--conversations, --modes, --llm-conversations",
    )
    parser.add_argument(
        "--markdown", type=Path, default=None, help="markdown tables (default: --out as .md)"
    )
    args = parser.parse_args(argv)
    if args.conversations < 1 or args.llm_conversations < 1 or args.k < 1:
        parser.error("--conversations, --llm-conversations and --k must be >= 1")
    full_run = {
        "conversations": DEFAULT_CONVERSATIONS,
        "modes": MODES,
        "llm_conversations": DEFAULT_LLM_CONVERSATIONS,
    }
    args.out = results_path(args.out, DEFAULT_OUT, narrowing_flags(args, full_run))
    return args


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every mode of ``args`` on the conversations of its seed; the report."""
    from cogito_lc.embeddings.local import LOCAL_MODEL_NAME, local_embeddings

    started = time.perf_counter()
    conversations = generate_conversations(args.conversations, args.seed)
    recall_b = json.loads(args.recall_b)
    embeddings = local_embeddings()
    report: dict[str, Any] = {
        "benchmark": "knowledge_update",
        "cogito_lc": __version__,
        "settings": {
            "conversations": len(conversations),
            "seed": args.seed,
            "kinds": len({c.kind for c in conversations}),
            "questions": sum(len(c.questions) for c in conversations),
            "question_types": dict(
                Counter(q.qtype for c in conversations for q in c.questions).most_common()
            ),
            "forget_every": FORGET_EVERY,
            "llm_conversations": args.llm_conversations,
            "judge_timeout_s": args.judge_timeout,
            "top_k": args.k,
            "store": args.store,
            "embeddings": LOCAL_MODEL_NAME,
            "recall_b": recall_b,
        },
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_average_start": _load_average(),
        },
        "modes": {},
    }
    zero_hits: list[QuestionHit] = []
    zero_writes: list[WriteRecord] = []
    with contextlib.ExitStack() as stack:
        for mode in args.modes:
            judge = mode_judge(mode, stack, timeout=args.judge_timeout)
            if isinstance(judge, str):
                print(f"  {mode} skipped: {judge}", file=sys.stderr)
                report["modes"][mode] = {"skipped": judge}
                continue
            subset = conversations if judge is None else conversations[: args.llm_conversations]
            result, hits, writes = run_mode(
                mode,
                subset,
                judge,
                embeddings=embeddings,
                store=args.store,
                recall_b=recall_b,
                k=args.k,
            )
            if judge is None:
                zero_hits, zero_writes = hits, writes
            elif zero_hits:
                _against_zero_llm(result, zero_hits, zero_writes, {c.conv_id for c in subset})
            report["modes"][mode] = result
    report["machine"]["load_average_end"] = _load_average()
    report["elapsed_s"] = round(time.perf_counter() - started, 1)
    report["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return report


def _load_average() -> float | None:
    """The 1-minute load average (other work on the machine slows every timing)."""
    with contextlib.suppress(OSError, AttributeError):
        return round(os.getloadavg()[0], 2)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """``cogito-lc bench updates`` and ``benchmarks/knowledge_update.py``."""
    args = parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    report = run(args)
    tables = markdown(report)
    print("\n" + tables)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    target = args.markdown or args.out.with_suffix(".md")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(tables)
    print(f"wrote {args.out} and {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
