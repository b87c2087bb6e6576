"""Cross-validation of RecallB's recency step on the knowledge-update benchmark and LoCoMo.

The recency step (:mod:`cogito_lc.retrievers._recency`) is RecallB's last: it only
reorders the candidate pool after the fused and blended scores are made. So each
question is asked once, with the real retriever on the real store and the step off,
and the pool it ranked just before the step (ids, texts, ``created_at``, scores,
cosines to the query, vectors) is kept (:class:`Candidates`); any setting of the step
is then scored offline on those pools, with the very function RecallB calls
(:func:`~cogito_lc.retrievers._recency.recency_step`). Replaying the step off gives
back the live top 10 (``agreement`` in the report; a live check of settings on is in
:func:`check_replay`).

Two benchmarks, each store built once:

- the knowledge-update benchmark (:mod:`cogito_lc.bench.knowledge_update`, ``zero_llm``:
  verbatim writes, no judge), where present-tense questions must get the current
  version of a fact; :class:`ReplayedUpdates` feeds its replayed hits to that module's
  :func:`~cogito_lc.bench.knowledge_update.cross_validate`;
- LoCoMo (:mod:`cogito_lc.bench.locomo`, turns and facts, every document dated from its
  session), where most questions ask about the past and the step must not cost recall.

:func:`joint_cv` fits the step on both at once: the knowledge-update conversations are
split into as many folds as LoCoMo has conversations and fold ``i`` is paired with
LoCoMo conversation ``i``. For each fold, among the settings that keep LoCoMo's R@1 and
R@5 on the other conversations (both units) within ``tolerance`` of the step off, the one
with the best robust knowledge-update score on the other folds (mean plus worst fold of
:func:`~cogito_lc.bench.knowledge_update.default_objective`) is scored on the held-out
fold and the held-out LoCoMo conversation.

Usage:
    ```bash
    python benchmarks/recency_cv.py [../shared/data/locomo/locomo10-dev.json] \\
        [--conversations 300] [--seed 0] [--check-seed 1] [--out FILE]
    ```
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import pickle
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from pydantic import PrivateAttr

from cogito_lc import RecallB
from cogito_lc.bench import knowledge_update as ku
from cogito_lc.bench import locomo
from cogito_lc.bench.results import add_out_argument, narrowing_flags, results_path
from cogito_lc.retrievers import document_key, recency_step

__all__ = [
    "RECENCY_FIELDS",
    "Candidates",
    "LocomoConversation",
    "ReplayedUpdates",
    "check_replay",
    "collect_locomo",
    "collect_updates",
    "default_grid",
    "joint_cv",
    "locomo_scores",
    "main",
    "report_lines",
]

Array = npt.NDArray[np.float32]
CACHE_DIR = Path(tempfile.gettempdir()) / "recency-cv"
CACHE_VERSION = 1
TOP_K = 10
UNITS = ("turns", "facts")
TOLERANCE = 0.005
"""How far below the step off LoCoMo's R@1 or R@5 may fall (the benchmark's constraint)."""
DEFAULT_OUT = Path("benchmarks/results/recency_cv.md")

RECENCY_FIELDS: tuple[str, ...] = (
    "recency_trigger",
    "recency_margin",
    "recency_similarity",
    "recency_basis",
    "recency_depth",
    "recency_chain",
)
"""RecallB's fields of the recency step, the keys a configuration may set."""

Config = Mapping[str, Any]


def recency_settings(config: Config) -> dict[str, Any]:
    """The :func:`recency_step` keywords for RecallB fields ``config`` (its defaults elsewhere).

    Raises:
        ValueError: If ``config`` sets a field that is not one of :data:`RECENCY_FIELDS`.
    """
    unknown = set(config) - set(RECENCY_FIELDS)
    if unknown:
        msg = f"only the recency fields {RECENCY_FIELDS} can be replayed, got {sorted(unknown)}."
        raise ValueError(msg)
    fields = {name: RecallB.model_fields[name].default for name in RECENCY_FIELDS}
    fields.update(config)
    return {name.removeprefix("recency_"): value for name, value in fields.items()}


@dataclass
class Candidates:
    """One question's pool as RecallB ranked it just before the recency step."""

    query: str
    ids: list[str]
    texts: list[str]
    created: list[Any]
    scores: Array
    cosines: Array
    vectors: Array

    def order(self, config: Config, k: int = TOP_K) -> list[int]:
        """Indices of the top ``k`` after the recency step under ``config``."""
        scores = recency_step(
            self.query,
            self.scores,
            self.cosines,
            self.vectors,
            self.created,
            **recency_settings(config),
        )
        return [int(i) for i in np.argsort(-scores, kind="stable")[:k]]

    def top_texts(self, config: Config, k: int = TOP_K) -> list[str]:
        return [self.texts[i] for i in self.order(config, k)]

    def top_ids(self, config: Config, k: int = TOP_K) -> list[str]:
        return [self.ids[i] for i in self.order(config, k)]


class _CapturingRecallB(RecallB):
    """RecallB that keeps the pool of its last ranking, as the recency step got it."""

    _captured: list[Candidates] = PrivateAttr(default_factory=list)

    def _recency(
        self, query: str, scores: Any, cosines: Any, matrix: Any, pool: list[Document]
    ) -> Any:
        self._captured.append(
            Candidates(
                query=query,
                ids=[document_key(doc) for doc in pool],
                texts=[doc.page_content for doc in pool],
                created=[doc.metadata.get("created_at") for doc in pool],
                scores=np.asarray(scores, np.float32).copy(),
                cosines=np.asarray(cosines, np.float32).copy(),
                vectors=np.asarray(matrix, np.float32).copy(),
            )
        )
        return super()._recency(query, scores, cosines, matrix, pool)

    def capture(self, query: str, **kwargs: Any) -> tuple[list[Document], Candidates | None]:
        """The live documents and the pool behind them (None when nothing was ranked)."""
        self._captured.clear()
        docs = self.invoke(query, **kwargs)
        return docs, (self._captured[-1] if self._captured else None)


def _capturing(retriever: Any, **fields: Any) -> _CapturingRecallB:
    """A capturing copy of a RecallB built elsewhere (its explicitly set fields), step off."""
    given = {name: getattr(retriever, name) for name in retriever.model_fields_set}
    return _CapturingRecallB(**{**given, **fields, "recency_trigger": "off"})


def _cached(name: str, key: str, build: Callable[[], Any]) -> Any:
    digest = hashlib.blake2b(f"{key}|{CACHE_VERSION}".encode(), digest_size=6).hexdigest()
    path = CACHE_DIR / f"{name}-{digest}.pkl"
    if path.is_file():
        return pickle.loads(path.read_bytes())  # noqa: S301 - written by this module
    value = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(value))
    return value


# -- the knowledge-update benchmark -----------------------------------------------------


@dataclass
class UpdateCandidates:
    """Every question's pool on one generated conversation set (``zero_llm``)."""

    count: int
    seed: int
    pools: dict[str, Candidates | None]
    """By question id."""
    agreement: float
    """Share of questions whose replay with the step off equals the live top ``k``."""
    seconds: float


def collect_updates(
    count: int,
    seed: int,
    *,
    embeddings: Embeddings | None = None,
    store: str = "chroma",
    k: int = TOP_K,
    progress: bool = False,
) -> UpdateCandidates:
    """Write ``count`` conversations of ``seed`` once (no judge) and keep every question's pool."""
    started = time.perf_counter()
    conversations = ku.generate_conversations(count, seed)
    with ku.build_evaluation(
        conversations, embeddings=embeddings, store=store, progress=progress
    ) as evaluation:
        kept = _keep_pools(evaluation, k)
    kept.count, kept.seed, kept.seconds = count, seed, time.perf_counter() - started
    return kept


def _keep_pools(evaluation: ku.UpdateEvaluation, k: int) -> UpdateCandidates:
    """Ask every question of ``evaluation`` once (step off) and keep the pools."""
    pools: dict[str, Candidates | None] = {}
    same = 0
    for conversation in evaluation.conversations:
        retriever = _capturing(evaluation.retriever(conversation, {}, k))
        for question in conversation.questions:
            extra = {} if question.as_of is None else {"as_of": question.as_of}
            docs, pool = retriever.capture(question.text, **extra)
            pools[question.qid] = pool
            replayed = pool.top_ids({"recency_trigger": "off"}, k) if pool else []
            same += replayed == [document_key(d) for d in docs]
    return UpdateCandidates(
        len(evaluation.conversations), -1, pools, same / max(len(pools), 1), 0.0
    )


class ReplayedUpdates(ku.UpdateEvaluation):
    """An :class:`~cogito_lc.bench.knowledge_update.UpdateEvaluation` scored from kept pools.

    :meth:`score` replays the recency step on the pools :func:`collect_updates` kept, so
    :func:`~cogito_lc.bench.knowledge_update.cross_validate` can fit the step's fields
    with no store; only the fields of :data:`RECENCY_FIELDS` can vary.
    """

    def __init__(self, conversations: Sequence[ku.Conversation], kept: UpdateCandidates) -> None:
        # No store: every read is a replay of a kept pool.
        self.conversations = list(conversations)
        self.mode = "zero_llm"
        self.writes = []
        self.forgets = []
        self.write_s = 0.0
        self._cleanup = None
        self.kept = kept

    def score(
        self,
        recall_b: Mapping[str, Any] | None = None,
        *,
        conversations: Collection[str] | None = None,
        k: int = TOP_K,
        read: str = "recall_b",
    ) -> list[ku.QuestionHit]:
        hits: list[ku.QuestionHit] = []
        for conversation in self.select(conversations):
            for question in conversation.questions:
                pool = self.kept.pools[question.qid]
                texts = pool.top_texts(recall_b or {}, k) if pool else []
                hits.append(self._hit(conversation, question, texts_as_docs(texts), read))
        return hits


def texts_as_docs(texts: Sequence[str]) -> list[Document]:
    return [Document(page_content=text) for text in texts]


def check_replay(
    conversations: Sequence[ku.Conversation],
    configs: Sequence[Config],
    *,
    embeddings: Embeddings | None = None,
    store: str = "chroma",
    k: int = TOP_K,
) -> float:
    """Share of questions where the live RecallB under each config ranks as its replay does.

    Writes ``conversations`` into a store of their own, keeps every question's pool there
    (step off), then asks every question live with each configuration's fields and
    compares the ranks of its gold and stale memories with the replay's on those pools.
    """
    same = total = 0
    with ku.build_evaluation(conversations, embeddings=embeddings, store=store) as evaluation:
        kept = _keep_pools(evaluation, k)
        replay = ReplayedUpdates(conversations, kept)
        for config in configs:
            live = evaluation.score(config, k=k)
            offline = replay.score(config, k=k)
            for a, b in zip(live, offline, strict=True):
                total += 1
                same += (a.gold_rank, a.stale_rank, a.returned) == (
                    b.gold_rank,
                    b.stale_rank,
                    b.returned,
                )
    return same / max(total, 1)


# -- LoCoMo ------------------------------------------------------------------------------


@dataclass
class LocomoConversation:
    """One LoCoMo conversation's questions in one unit: evidence and the pool behind each."""

    sample_id: str
    unit: str
    labels: dict[str, frozenset[str]]
    """Evidence ids (``dia_id``) of each document, by id."""
    questions: list[tuple[str, frozenset[str], Candidates | None]] = field(default_factory=list)
    agreement: int = 0
    """Questions whose replay with the step off equals the live top 10."""


def _collect_locomo_conversation(
    sample: dict[str, Any], unit: str, embeddings: Embeddings, questions: int | None
) -> LocomoConversation:
    built = locomo.build_unit(sample, unit)
    store = locomo.make_store(embeddings, built.documents)
    retriever = _CapturingRecallB(vectorstore=store, k=TOP_K, recency_trigger="off")
    labels = {str(d.id): frozenset(locomo.split_ids(d.metadata["dia_id"])) for d in built.documents}
    result = LocomoConversation(str(sample.get("sample_id")), unit, labels)
    asked = built.questions[:questions] if questions else built.questions
    for question, evidence in asked:
        docs, pool = retriever.capture(question)
        result.questions.append((question, frozenset(evidence), pool))
        replayed = pool.top_ids({"recency_trigger": "off"}) if pool else []
        result.agreement += replayed == [document_key(d) for d in docs]
    store.delete_collection()
    return result


def collect_locomo(
    data: Path,
    embeddings: Embeddings,
    *,
    units: Sequence[str] = UNITS,
    conversations: int | None = None,
    questions: int | None = None,
) -> dict[str, list[LocomoConversation]]:
    """Every LoCoMo question's pool per unit (read from the cache after the first run)."""
    samples = list(locomo.iter_samples(data, conversations))
    out: dict[str, list[LocomoConversation]] = {}
    for unit in units:
        key = f"{data.resolve()}|{data.stat().st_size}|{unit}|{conversations}|{questions}"

        def build(unit: str = unit) -> list[LocomoConversation]:
            rows = []
            for sample in samples:
                rows.append(_collect_locomo_conversation(sample, unit, embeddings, questions))
                print(f"  locomo {unit}: {sample.get('sample_id')} kept", file=sys.stderr)
            return rows

        out[unit] = _cached(f"locomo-{unit}", key, build)
    return out


def _first_hit(
    ids: Sequence[str], labels: Mapping[str, frozenset[str]], evidence: frozenset[str]
) -> int | None:
    for rank, key in enumerate(ids, start=1):
        if labels.get(key, frozenset()) & evidence:
            return rank
    return None


@dataclass
class LocomoScore:
    """First-hit ranks of one configuration, per unit and conversation."""

    ranks: dict[str, list[list[int | None]]]
    moved: int
    """Questions whose top 10 the step changed."""

    def recall(self, unit: str, cut: int, conversations: Collection[int] | None = None) -> float:
        rows = [
            r
            for c, ranks in enumerate(self.ranks[unit])
            if conversations is None or c in conversations
            for r in ranks
        ]
        return sum(1 for r in rows if r is not None and r <= cut) / max(len(rows), 1)


def locomo_scores(kept: Mapping[str, list[LocomoConversation]], config: Config) -> LocomoScore:
    """R@k material for ``config``: each question's first-hit rank after the step."""
    ranks: dict[str, list[list[int | None]]] = {}
    moved = 0
    off = {"recency_trigger": "off"}
    for unit, conversations in kept.items():
        ranks[unit] = []
        for conversation in conversations:
            row = []
            for _, evidence, pool in conversation.questions:
                ids = pool.top_ids(config) if pool else []
                if pool and ids != pool.top_ids(off):
                    moved += 1
                row.append(_first_hit(ids, conversation.labels, evidence))
            ranks[unit].append(row)
    return LocomoScore(ranks, moved)


# -- the grid and the joint cross-validation ---------------------------------------------


def default_grid() -> list[dict[str, Any]]:
    """Trigger x margin x similarity (-1: any vector) of the first step, the step off first."""
    grid: list[dict[str, Any]] = [{"recency_trigger": "off"}]
    for trigger, margin, similarity in itertools.product(
        ("cue", "present"), (0.05, 0.1, 0.2, 0.3, 0.5), (-1.0, 0.2, 0.35, 0.5, 0.65)
    ):
        grid.append(
            {
                "recency_trigger": trigger,
                "recency_margin": margin,
                "recency_similarity": similarity,
                **FIRST_STEP,
            }
        )
    return grid


FIRST_STEP: dict[str, Any] = {"recency_basis": "score", "recency_depth": 0, "recency_chain": 0}
"""The other fields as the step first had them (the basic grid's), spelled out so that the
grid means the same whatever RecallB's defaults are."""


def _objective_by_fold(
    hits: Sequence[ku.QuestionHit], folds: Sequence[Collection[str]]
) -> list[float]:
    return [ku.default_objective([h for h in hits if h.conversation in fold]) for fold in folds]


def _present(hits: Sequence[ku.QuestionHit]) -> dict[str, float]:
    current = [h for h in hits if h.qtype in ku.CURRENT_TYPES]
    past = [h for h in hits if h.qtype == "past"]
    n = max(len(current), 1)
    return {
        "n": len(current),
        "current@1": sum(h.hit for h in current) / n,
        "stale@1": sum(h.stale_at_1 for h in current) / n,
        "past@1": sum(h.hit for h in past) / max(len(past), 1),
        "past_stale@1": sum(h.stale_at_1 for h in past) / max(len(past), 1),
    }


@dataclass
class JointFold:
    held_out: int
    chosen: int
    updates: dict[str, float]
    locomo: dict[str, dict[str, float]]
    """Per unit: R@1, R@5 of the pick and of the step off on the held-out conversation."""


@dataclass
class JointCV:
    configs: list[dict[str, Any]]
    folds: list[JointFold]
    update_scores: list[list[ku.QuestionHit]]
    locomo: list[LocomoScore]
    admissible: list[bool]
    """Per config: within ``tolerance`` of the step off on all of LoCoMo (for reference)."""
    held_out_hits: list[ku.QuestionHit]


def _locomo_ok(
    score: LocomoScore, off: LocomoScore, conversations: Collection[int], tolerance: float
) -> bool:
    return all(
        score.recall(unit, cut, conversations) >= off.recall(unit, cut, conversations) - tolerance
        for unit in score.ranks
        for cut in (1, 5)
    )


def joint_cv(
    replay: ReplayedUpdates,
    kept_locomo: Mapping[str, list[LocomoConversation]],
    configs: Sequence[Config],
    *,
    tolerance: float = TOLERANCE,
    seed: int = 0,
) -> JointCV:
    """Fit the step on both benchmarks, update fold ``i`` paired with LoCoMo conversation ``i``.

    See the module's docstring; ``configs[0]`` must be the step off.
    """
    conversations = len(next(iter(kept_locomo.values())))
    split = ku.conversation_folds([c.conv_id for c in replay.conversations], conversations, seed)
    update_scores = [replay.score(config) for config in configs]
    by_fold = [_objective_by_fold(hits, split) for hits in update_scores]
    scored = [locomo_scores(kept_locomo, config) for config in configs]
    off = scored[0]
    everything = range(conversations)
    folds: list[JointFold] = []
    held_out_hits: list[ku.QuestionHit] = []
    for held in range(conversations):
        train = [c for c in everything if c != held]

        def fit(i: int, train: list[int] = train) -> tuple[bool, float, int]:
            values = [by_fold[i][c] for c in train]
            robust = statistics.fmean(values) + min(values)
            return _locomo_ok(scored[i], off, train, tolerance), robust, -i

        best = max(range(len(configs)), key=fit)
        test = set(split[held])
        hits = [h for h in update_scores[best] if h.conversation in test]
        held_out_hits.extend(hits)
        folds.append(
            JointFold(
                held,
                best,
                _present(hits),
                {
                    unit: {
                        "R@1": scored[best].recall(unit, 1, [held]),
                        "R@5": scored[best].recall(unit, 5, [held]),
                        "off R@1": off.recall(unit, 1, [held]),
                        "off R@5": off.recall(unit, 5, [held]),
                    }
                    for unit in kept_locomo
                },
            )
        )
    admissible = [_locomo_ok(s, off, everything, tolerance) for s in scored]
    return JointCV(
        [dict(c) for c in configs], folds, update_scores, scored, admissible, held_out_hits
    )


# -- the report --------------------------------------------------------------------------


def label(config: Config) -> str:
    """A short name of a configuration of the step."""
    settings = recency_settings(config)
    if settings["trigger"] == "off":
        return "off"
    text = f"{settings['trigger']} m={settings['margin']:g} s={settings['similarity']:g}"
    if settings["basis"] != "score":
        text += f" {settings['basis']}"
    if settings["depth"]:
        text += f" top{settings['depth']}"
    if settings["chain"]:
        text += f" chain{settings['chain']}"
    return text


def _f(value: float) -> str:
    return f"{value:.3f}"


def _d(value: float) -> str:
    return f"{value:+.3f}"


def chosen_config(joint: JointCV) -> int:
    """The configuration most folds chose (the earliest in the grid on a tie)."""
    picks = [fold.chosen for fold in joint.folds]
    return max(sorted(set(picks)), key=lambda i: (picks.count(i), -i))


def _by_fold_table(
    hits: Sequence[ku.QuestionHit], folds: Sequence[Collection[str]]
) -> list[dict[str, float]]:
    return [_present([h for h in hits if h.conversation in fold]) for fold in folds]


def _type_rows(hits: Sequence[ku.QuestionHit], off: Sequence[ku.QuestionHit]) -> list[str]:
    now = ku.summarise_hits(hits).get("recall_b", {})
    before = ku.summarise_hits(off).get("recall_b", {})
    return [
        f"| {name} | {now[name]['n']} | {_f(now[name]['hit@1'])} | {_f(now[name]['stale@1'])} "
        f"| {_f(before[name]['hit@1'])} | {_f(before[name]['stale@1'])} |"
        for name in (*ku.CURRENT_TYPES, "current", "past")
        if name in now
    ]


def _kind_rows(hits: Sequence[ku.QuestionHit], off: Sequence[ku.QuestionHit]) -> list[str]:
    now = ku.summarise_by_kind(hits).get("recall_b", {})
    before = ku.summarise_by_kind(off).get("recall_b", {})
    return [
        f"| {kind} | {row['n']} | {_f(before[kind]['hit@1'])} | {_f(row['hit@1'])} | "
        f"{_f(before[kind]['stale@1'])} | {_f(row['stale@1'])} |"
        for kind, row in now.items()
    ]


def report_lines(
    *,
    command: str,
    kept: UpdateCandidates,
    second: UpdateCandidates | None,
    kept_locomo: Mapping[str, list[LocomoConversation]],
    configs: Sequence[Config],
    cv: ku.UpdateCV,
    joint: JointCV,
    timings: Mapping[str, float],
    embeddings: str,
    check: float | None = None,
    check_live: int = 0,
) -> list[str]:
    """The markdown report of one run."""
    conversations = ku.generate_conversations(kept.count, kept.seed)
    questions = sum(len(c.questions) for c in conversations)
    locomo_questions = {u: sum(len(c.questions) for c in rows) for u, rows in kept_locomo.items()}
    agreement = sum(c.agreement for rows in kept_locomo.values() for c in rows) / max(
        sum(locomo_questions.values()), 1
    )
    pick = chosen_config(joint)
    off_hits = joint.update_scores[0]
    off_lc = joint.locomo[0]
    lines = [
        "# RecallB's recency step: cross-validation on knowledge updates and LoCoMo",
        "",
        "```bash",
        command,
        "```",
        "",
        f"Knowledge-update benchmark: {kept.count} generated conversations (seed {kept.seed}, "
        f"{questions} questions), `zero_llm` (verbatim writes, no judge), RecallB reads "
        f"(top {TOP_K}) on embedded Chroma with {embeddings}. LoCoMo: "
        + ", ".join(f"{u} ({n} questions)" for u, n in locomo_questions.items())
        + ", every document dated from its session (`created_at`). Each question is asked "
        "once live with the step off; every setting of the step is replayed on the pool "
        "RecallB ranked (`cogito_lc.bench.recency_cv`). Replay with the step off equals the "
        f"live top {TOP_K} on {kept.agreement:.1%} of the knowledge-update questions and "
        f"{agreement:.1%} of LoCoMo's"
        + (
            f"; the chosen setting asked live (on a store of the first {check_live} "
            f"conversations, pools kept there) ranks as replayed on {check:.1%}."
            if check is not None
            else "."
        ),
        "",
        "current@1 and stale@1 are over the present-time questions (`current_cue` and "
        "`current_plain`: the newest version is gold, any older one stale); past@1 is the "
        "`as_of` questions. LoCoMo columns are pooled R@1 / R@5 minus the step off.",
        "",
        f"Chosen setting: **{label(configs[pick])}** (`{json.dumps(dict(configs[pick]))}`), "
        f"picked by {sum(f.chosen == pick for f in joint.folds)} of the {len(joint.folds)} "
        "joint folds.",
        "",
        "## Joint cross-validation (knowledge-update fold i with LoCoMo conversation i)",
        "",
        "Each fold fits on the other folds and the other LoCoMo conversations: among the "
        f"settings keeping LoCoMo R@1 and R@5 (both units) within {TOLERANCE} of the step "
        "off, the best mean plus worst training fold of the knowledge-update objective "
        "(hit@1 minus stale@1, current and past questions). Held-out figures:",
        "",
        "| fold | LoCoMo conversation | chosen | current@1 | stale@1 | past@1 | off current@1 "
        "| off stale@1 | turns R@1 (off) | turns R@5 (off) | facts R@1 (off) | facts R@5 (off) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    split = ku.conversation_folds([c.conv_id for c in conversations], len(joint.folds), 0)
    off_folds = _by_fold_table(off_hits, split)
    for fold in joint.folds:
        lc = fold.locomo
        sample = next(iter(kept_locomo.values()))[fold.held_out].sample_id
        cells = [
            f"{_f(lc[u][f'R@{cut}'])} ({_f(lc[u][f'off R@{cut}'])})"
            for u in UNITS
            if u in lc
            for cut in (1, 5)
        ]
        lines.append(
            f"| {fold.held_out + 1} | {sample} | {label(configs[fold.chosen])} | "
            f"{_f(fold.updates['current@1'])} | {_f(fold.updates['stale@1'])} | "
            f"{_f(fold.updates['past@1'])} | {_f(off_folds[fold.held_out]['current@1'])} | "
            f"{_f(off_folds[fold.held_out]['stale@1'])} | " + " | ".join(cells) + " |"
        )
    pooled = _present(joint.held_out_hits)
    lines += [
        f"| all | | | {_f(pooled['current@1'])} | {_f(pooled['stale@1'])} | "
        f"{_f(pooled['past@1'])} | {_f(_present(off_hits)['current@1'])} | "
        f"{_f(_present(off_hits)['stale@1'])} | | | | |",
        "",
        "By question type (held-out hits of the joint folds; the step off beside them):",
        "",
        "| question type | questions | current@1 | stale@1 | off current@1 | off stale@1 |",
        "|---|---|---|---|---|---|",
        *_type_rows(joint.held_out_hits, off_hits),
        "",
        "## Knowledge-update cross-validation alone (`knowledge_update.cross_validate`, 5 folds)",
        "",
        "Fitted on the default objective of the other four folds, LoCoMo not consulted:",
        "",
        "| fold | chosen | current@1 | stale@1 | past@1 |",
        "|---|---|---|---|---|",
    ]
    for number, (ids, chosen) in enumerate(zip(cv.folds, cv.chosen, strict=True), start=1):
        held = set(ids)
        row = _present([h for h in cv.held_out if h.conversation in held])
        lines.append(
            f"| {number} | {label(configs[chosen])} | {_f(row['current@1'])} | "
            f"{_f(row['stale@1'])} | {_f(row['past@1'])} |"
        )
    row = _present(cv.held_out)
    lines += [
        f"| all | | {_f(row['current@1'])} | {_f(row['stale@1'])} | {_f(row['past@1'])} |",
        "",
        f"## The chosen setting ({label(configs[pick])}) on every fold",
        "",
        "| fold | current@1 | stale@1 | past@1 | LoCoMo conversation | turns R@1 | turns R@5 "
        "| facts R@1 | facts R@5 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    fixed = _by_fold_table(joint.update_scores[pick], split)
    samples = [c.sample_id for c in next(iter(kept_locomo.values()))]
    for i, row in enumerate(fixed):
        cells = [
            _d(joint.locomo[pick].recall(u, cut, [i]) - off_lc.recall(u, cut, [i]))
            for u in UNITS
            if u in kept_locomo
            for cut in (1, 5)
        ]
        lines.append(
            f"| {i + 1} | {_f(row['current@1'])} | {_f(row['stale@1'])} | {_f(row['past@1'])} "
            f"| {samples[i]} | " + " | ".join(cells) + " |"
        )
    lines += [
        "",
        "## Every setting on the whole sets (for reference; not how the setting was chosen)",
        "",
        "| setting | current@1 | stale@1 | past@1 | LoCoMo questions moved | turns R@1 | turns R@5 "
        "| facts R@1 | facts R@5 | within tolerance on LoCoMo |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, config in enumerate(configs):
        row = _present(joint.update_scores[i])
        cells = [
            _d(joint.locomo[i].recall(u, cut) - off_lc.recall(u, cut))
            for u in UNITS
            if u in kept_locomo
            for cut in (1, 5)
        ]
        lines.append(
            f"| {label(config)} | {_f(row['current@1'])} | {_f(row['stale@1'])} | "
            f"{_f(row['past@1'])} | {joint.locomo[i].moved} | "
            + " | ".join(cells)
            + f" | {'yes' if joint.admissible[i] else 'no'} |"
        )
    off_line = [
        f"{u} R@1 {_f(off_lc.recall(u, 1))}, R@5 {_f(off_lc.recall(u, 5))}"
        for u in UNITS
        if u in kept_locomo
    ]
    lines += ["", "LoCoMo with the step off (pooled): " + "; ".join(off_line) + "."]
    chosen_hits = joint.update_scores[pick]
    lines += [
        "",
        f"## Per kind of fact (seed {kept.seed}, all conversations, current questions)",
        "",
        "| kind | questions | off current@1 | current@1 | off stale@1 | stale@1 |",
        "|---|---|---|---|---|---|",
        *_kind_rows(chosen_hits, off_hits),
    ]
    if second is not None:
        others = ku.generate_conversations(second.count, second.seed)
        replay = ReplayedUpdates(others, second)
        hits = replay.score(configs[pick])
        base = replay.score(configs[0])
        now, before = _present(hits), _present(base)
        lines += [
            "",
            f"## A second seed of the generator (seed {second.seed}, {second.count} "
            "conversations, never fitted on)",
            "",
            "| setting | current@1 | stale@1 | past@1 |",
            "|---|---|---|---|",
            f"| off | {_f(before['current@1'])} | {_f(before['stale@1'])} | "
            f"{_f(before['past@1'])} |",
            f"| {label(configs[pick])} | {_f(now['current@1'])} | {_f(now['stale@1'])} | "
            f"{_f(now['past@1'])} |",
            "",
            "| kind | questions | off current@1 | current@1 | off stale@1 | stale@1 |",
            "|---|---|---|---|---|---|",
            *_kind_rows(hits, base),
        ]
    lines += ["", "Time: " + "; ".join(f"{k} {v:.0f} s" for k, v in timings.items()) + "."]
    return lines


def run(args: argparse.Namespace) -> list[str]:
    """Collect (or read) the pools, cross-validate, and lay out the report."""
    from cogito_lc.embeddings.local import LOCAL_MODEL_NAME, local_embeddings

    embeddings = local_embeddings()
    timings: dict[str, float] = {}
    started = time.perf_counter()
    kept: UpdateCandidates = _cached(
        "updates",
        f"{args.conversations}|{args.seed}|{TOP_K}",
        lambda: collect_updates(
            args.conversations, args.seed, embeddings=embeddings, progress=True
        ),
    )
    timings[f"knowledge-update pools, seed {args.seed}"] = kept.seconds
    second: UpdateCandidates | None = None
    if args.check_seed is not None:
        second = _cached(
            "updates",
            f"{args.conversations}|{args.check_seed}|{TOP_K}",
            lambda: collect_updates(
                args.conversations, args.check_seed, embeddings=embeddings, progress=True
            ),
        )
        timings[f"knowledge-update pools, seed {args.check_seed}"] = second.seconds
    locomo_started = time.perf_counter()
    kept_locomo = collect_locomo(args.data, embeddings)
    timings["LoCoMo pools (0 when cached)"] = time.perf_counter() - locomo_started
    configs = grid(args.grid)
    conversations = ku.generate_conversations(args.conversations, args.seed)
    replay = ReplayedUpdates(conversations, kept)
    scoring = time.perf_counter()
    cv = ku.cross_validate(replay, configs, folds=5)
    joint = joint_cv(replay, kept_locomo, configs)
    timings["scoring the grid"] = time.perf_counter() - scoring
    check = None
    if args.check_live:
        checking = time.perf_counter()
        pick = configs[chosen_config(joint)]
        check = check_replay(conversations[: args.check_live], [pick], embeddings=embeddings)
        timings["live check"] = time.perf_counter() - checking
    timings["total"] = time.perf_counter() - started
    return report_lines(
        command=args.command,
        kept=kept,
        second=second,
        kept_locomo=kept_locomo,
        configs=configs,
        cv=cv,
        joint=joint,
        timings=timings,
        embeddings=LOCAL_MODEL_NAME,
        check=check,
        check_live=args.check_live,
    )


GRIDS = ("basic", "extended")
DEFAULT_GRID = "extended"
DEFAULT_CHECK_LIVE = 12
"""Conversations the pick is asked live on, to check the replay."""


def grid(name: str) -> list[dict[str, Any]]:
    """The ``basic`` grid (:func:`default_grid`) or the ``extended`` one (with the new fields)."""
    if name == "basic":
        return default_grid()
    return default_grid() + extended_grid()


def extended_grid() -> list[dict[str, Any]]:
    """Near-ties on the cosine, the step confined to the top, the versions followed.

    Near-ties on the cosine to the query (``recency_basis``), the step confined to the
    best candidates (``recency_depth``), and the versions followed from the best one
    (``recency_chain``).
    """
    configs: list[dict[str, Any]] = []
    for trigger, basis, depth, margin, similarity in itertools.product(
        ("cue", "present"),
        ("score", "cosine"),
        (0, 3, 5),
        (0.05, 0.1, 0.2, 0.3, 0.5),
        (-1.0, 0.2, 0.35, 0.5, 0.65),
    ):
        if basis == "score" and depth == 0:
            continue  # the basic grid
        configs.append(
            {
                "recency_trigger": trigger,
                "recency_margin": margin,
                "recency_similarity": similarity,
                "recency_basis": basis,
                "recency_depth": depth,
                "recency_chain": 0,
            }
        )
    for trigger, margin, similarity in itertools.product(
        ("cue", "present"), (0.2, 0.3, 0.5, 1.0), (0.25, 0.3, 0.35, 0.4, 0.5)
    ):
        configs.append(
            {
                "recency_trigger": trigger,
                "recency_margin": margin,
                "recency_similarity": similarity,
                "recency_basis": "cosine",
                "recency_depth": 0,
                "recency_chain": 3,
            }
        )
    return configs


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=locomo.DEFAULT_DATA)
    parser.add_argument("--conversations", type=int, default=ku.DEFAULT_CONVERSATIONS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--check-seed", type=int, default=1, help="a second seed, scored with the pick only"
    )
    parser.add_argument("--grid", choices=GRIDS, default=DEFAULT_GRID)
    parser.add_argument(
        "--check-live",
        type=int,
        default=DEFAULT_CHECK_LIVE,
        help="ask the pick live on this many conversations to check the replay (0: skip)",
    )
    add_out_argument(
        parser,
        what="the markdown report",
        published=DEFAULT_OUT,
        flags="--conversations, --grid, --check-live",
    )
    args = parser.parse_args(argv)
    full_run = {
        "conversations": ku.DEFAULT_CONVERSATIONS,
        "grid": DEFAULT_GRID,
        "check_live": DEFAULT_CHECK_LIVE,
    }
    args.out = results_path(args.out, DEFAULT_OUT, narrowing_flags(args, full_run))
    args.command = "python benchmarks/recency_cv.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """``benchmarks/recency_cv.py``: the report, printed and written to ``--out``."""
    args = parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if not args.data.is_file():
        print(f"LoCoMo file not found: {args.data}", file=sys.stderr)
        return 2
    text = "\n".join(run(args)) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"wrote {args.out}")
    return 0
