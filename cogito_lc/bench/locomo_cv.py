"""Leave-one-conversation-out cross-validation of RecallB's fusion against the baselines.

Every question's candidate runs are computed once per conversation and unit
variant, with the real retriever on the real store (RecallB's sub-query runs,
its query vector, the corpus BM25 scores, the plain query's cosine to every
memory), and cached as a pickle. Fusion configurations are then scored offline
over the cache: for each held-out conversation, the configuration with the best
robust score on the other five (mean plus worst conversation of R@1 + R@5,
averaged over every unit variant) is scored on the held-out one.

Unit variants: ``turns`` with or without photo captions, ``facts`` keyed to all
or to the first of their evidence turns (the same documents, labelled twice).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import pickle
import statistics
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import numpy.typing as npt
from langchain_core.embeddings import Embeddings
from pydantic import PrivateAttr

from cogito_lc import RecallB
from cogito_lc._core.text import STOP_WORDS
from cogito_lc.bench import locomo
from cogito_lc.bench.mem0_hybrid import SEMANTIC_K, hybrid_order, keyword_terms, keyword_tokens
from cogito_lc.retrievers.adaptive_fusion import (
    adaptive_lexical_weight,
    inflect_query,
    inflections,
    lexical_blend,
    lexical_query,
    query_terms,
)
from cogito_lc.stores import Bm25Index

__all__ = [
    "FusionConfig",
    "UnitVariant",
    "collect",
    "cross_validate",
    "fusion_order",
    "print_cv",
]

Array = npt.NDArray[np.float32]
CACHE_DIR = Path(tempfile.gettempdir()) / "locomo-cv"
CACHE_VERSION = 2
"""Bumped when the cached runs change with the same defaults (2: lexicon inflections)."""
TOP_K = locomo.TOP_K
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@dataclass(frozen=True)
class UnitVariant:
    """How one unit is built: turns with or without captions, facts keyed to all or first turn."""

    unit: str
    captions: bool = False
    fact_evidence: str = "all"

    @property
    def label(self) -> str:
        if self.unit == "turns":
            return "turns+captions" if self.captions else "turns"
        return f"facts/{self.fact_evidence}"


@dataclass(frozen=True)
class FusionConfig:
    """RecallB's fusion knobs, as scored offline (the same names as RecallB's fields)."""

    rrf_k: int = 5
    cosine_weight: float = 0.35
    corpus_bm25_weight: float = 4.0
    fragment_weight: float = 0.5
    bm25_weight: float = 0.0
    original_weight: float = 1.0
    corpus_bm25_k: int = 10
    """At most the 10 the runs were cached with."""
    lexical_floor: float = 0.5
    """1.0: fixed lexical weight; below 1, scaled by the lexical run's decisiveness."""
    lexical_blend_weight: float = 0.5
    """Share of the squashed absolute BM25 score in the final score (0: off)."""
    lexical_blend_shift: float = -4.0
    """Shift of the squashing curve's midpoint."""
    strip_stop_words: bool = True
    """The lexical run searches with the query's stop words removed (RecallB's default)."""
    lexical_inflections: bool = True
    """The stop-word-free lexical query also searches each word's inflections (RecallB's
    default); the query as written (``strip_stop_words=False``) is never inflected."""
    max_subqueries: int = 4
    """Sub-queries searched, the original included (at most the cached runs' 8)."""
    original_fetch_k: int = 15
    """Depth of the original query's vector run (at most the cached 30)."""
    fetch_k: int = 5
    """Depth of each fragment's vector run (at most the cached 20)."""

    def recall_b_kwargs(self) -> dict[str, Any]:
        """The RecallB fields that rank as this configuration does."""
        kwargs = dataclasses.asdict(self)
        strip = kwargs.pop("strip_stop_words")
        kwargs["lexical_stop_words"] = STOP_WORDS if strip else frozenset()
        return kwargs


COLLECTED = FusionConfig(max_subqueries=8, original_fetch_k=30, fetch_k=20)
"""RecallB as the runs are collected: its defaults at the deeper search of the releases
before (8 sub-queries, 30 and 20 deep), so every shallower depth is scored from the cache.
The earlier releases below are scored at this depth, the one they searched with."""

PREVIOUS_DEFAULTS = dataclasses.replace(
    COLLECTED,
    rrf_k=10,
    bm25_weight=0.5,
    lexical_floor=1.0,
    lexical_blend_weight=0.0,
    lexical_blend_shift=0.0,
    strip_stop_words=False,
    lexical_inflections=False,
)
"""RecallB's defaults before the lexical blend term (reported as ``recall_b_previous``)."""

UNSTRIPPED_DEFAULTS = dataclasses.replace(
    COLLECTED,
    lexical_blend_weight=0.6,
    lexical_blend_shift=0.0,
    strip_stop_words=False,
    lexical_inflections=False,
)
"""RecallB's defaults before the lexical query lost its stop words (``recall_b_unstripped``)."""

UNINFLECTED_DEFAULTS = dataclasses.replace(COLLECTED, lexical_inflections=False)
"""RecallB's defaults before the lexical query searched inflections (``recall_b_uninflected``)."""


@dataclass
class QuestionRuns:
    """One question's cached runs over one conversation's documents (indices into them)."""

    question: str
    category: int
    evidence: frozenset[str]
    vector_runs: list[list[int]]
    lexical_run: list[int]
    """RecallB's corpus BM25 run (its top ``corpus_bm25_k=10``, ties as the index broke them),
    searched with the query without its stop words, inflected."""
    live_top: list[int]
    query_cosines: Array
    """Cosine of RecallB's original-query vector to every document."""
    plain_cosines: Array
    """Cosine of the plain ``embed_query`` vector to every document (vector search)."""
    bm25: Array
    """RecallB's corpus BM25 score of every document (the query without its stop words,
    inflected)."""
    mem0_keyword: list[tuple[int, float]]
    mem0_terms: int
    lexical_query: str = ""
    """The query without its stop words (its terms set the blend's curve); the lexical run
    searched with it inflected."""
    unstripped_lexical_run: list[int] = field(default_factory=list)
    """The corpus BM25 top 10 for the query as written."""
    unstripped_bm25: Array | None = None
    """The corpus BM25 score of every document for the query as written."""
    uninflected_lexical_run: list[int] = field(default_factory=list)
    """The corpus BM25 top 10 for the query without its stop words, not inflected."""
    uninflected_bm25: Array | None = None
    """The corpus BM25 score of every document for that query."""
    mem0_inflected_keyword: list[tuple[int, float]] = field(default_factory=list)
    """mem0's keyword run with each term's inflections searched too (a stand-in for the
    spaCy lemmas mem0 matches with)."""

    def lexical(self, strip: bool, inflect: bool = True) -> tuple[str, list[int], Array]:
        """The lexical query, corpus run and scores (without stop words, inflected or not)."""
        if not strip and self.unstripped_bm25 is not None:
            return self.question, self.unstripped_lexical_run, self.unstripped_bm25
        if not inflect and self.uninflected_bm25 is not None:
            return self.lexical_query, self.uninflected_lexical_run, self.uninflected_bm25
        return self.lexical_query, self.lexical_run, self.bm25


@dataclass
class ConversationRuns:
    """One conversation's documents (their evidence labels) and question runs."""

    sample_id: str
    labels: dict[str, list[frozenset[str]]]
    """Evidence ids of each document, by fact-evidence variant (turns: only ``"all"``)."""
    questions: list[QuestionRuns] = field(default_factory=list)


class _CapturingRecallB(RecallB):
    """RecallB that keeps its last query's runs and query vector."""

    _last: tuple[list[list[str]], list[str], Array] | None = PrivateAttr(default=None)

    def _rank(
        self,
        decomposition: Any,
        plan: Any,
        query_vector: Any,
        found: Any,
        hits: Any,
        k: int,
    ) -> Any:
        runs = [list(run) for run in found.vector_runs]
        self._last = (runs, list(found.lexical_run), np.asarray(query_vector))
        return super()._rank(decomposition, plan, query_vector, found, hits, k)


def _depth(config: FusionConfig) -> dict[str, int]:
    """The RecallB fields that set how many vector runs a recall reads, and how deep."""
    return {
        "max_subqueries": config.max_subqueries,
        "original_fetch_k": config.original_fetch_k,
        "fetch_k": config.fetch_k,
    }


def _cache_path(data: Path, variant: UnitVariant, questions: int | None) -> Path:
    # RecallB's defaults at the collected depth are in the key: the cached live top 10
    # follows them.
    digest = hashlib.blake2b(
        f"{data.resolve()}|{data.stat().st_size}|{questions}|{COLLECTED}|{CACHE_VERSION}".encode()
    )
    name = f"{variant.unit}-{int(variant.captions)}-{digest.hexdigest()[:10]}.pkl"
    return CACHE_DIR / name


def _scorable(sample: dict[str, Any]) -> list[tuple[str, int, frozenset[str]]]:
    return [
        (qa["question"], int(qa["category"]), frozenset(locomo.split_ids(qa.get("evidence", []))))
        for qa in sample["qa"]
        if qa.get("category") != locomo.EXCLUDED_CATEGORY
    ]


def _labels(sample: dict[str, Any], variant: UnitVariant) -> dict[str, dict[str, frozenset[str]]]:
    """Evidence ids of each document by id, per fact-evidence variant (turns: only ``all``)."""
    options: list[tuple[str, dict[str, Any]]] = [("all", {"captions": variant.captions})]
    if variant.unit == "facts":
        options = [(evidence, {"fact_evidence": evidence}) for evidence in ("all", "first")]
    return {
        name: {
            str(d.id): frozenset(locomo.split_ids(d.metadata["dia_id"]))
            for d in locomo.build_unit(sample, variant.unit, **kwargs).documents
        }
        for name, kwargs in options
    }


def _collect_conversation(
    sample: dict[str, Any], variant: UnitVariant, embeddings: Embeddings, questions: int | None
) -> ConversationRuns:
    built = locomo.build_unit(sample, variant.unit, captions=variant.captions).documents
    store = locomo.make_store(embeddings, built)
    stored = store.get(include=["embeddings"])
    # The store's order, which RecallB's lexical index follows (it breaks ties).
    by_id = {str(d.id): d for d in built}
    docs = [by_id[key] for key in stored["ids"]]
    position = {str(d.id): i for i, d in enumerate(docs)}
    matrix = np.asarray(stored["embeddings"], np.float32)
    lexical = Bm25Index(docs)
    keyword_index = bm25s.BM25(k1=1.2, b=0.75)
    keyword_index.index(keyword_tokens(docs), show_progress=False)
    asked = _scorable(sample)[:questions] if questions else _scorable(sample)
    plain = np.asarray(embeddings.embed_documents([q for q, _, _ in asked]), np.float32)
    retriever = _CapturingRecallB(vectorstore=store, k=TOP_K, **_depth(COLLECTED))
    labels = {
        name: [by_label[key] for key in stored["ids"]]
        for name, by_label in _labels(sample, variant).items()
    }
    result = ConversationRuns(str(sample.get("sample_id")), labels)
    keys = [str(d.id) for d in docs]
    for (question, category, evidence), plain_vector in zip(asked, plain, strict=True):
        live = retriever.invoke(question)
        assert retriever._last is not None  # noqa: S101 - set by every ranked invoke
        runs, lexical_run, query_vector = retriever._last
        stripped = lexical_query(question, STOP_WORDS)
        by_key = lexical.hits(inflect_query(stripped, exclude=STOP_WORDS)).scores(keys)
        uninflected = lexical.hits(stripped)
        uninflected_by_key = uninflected.scores(keys)
        plain_hits = lexical.hits(question)
        plain_by_key = plain_hits.scores(keys)
        terms = keyword_terms(question)
        keyword = _keyword_run(keyword_index, terms)
        inflected = list(dict.fromkeys(form for term in terms for form in inflections(term)))
        result.questions.append(
            QuestionRuns(
                question=question,
                category=category,
                evidence=evidence,
                vector_runs=[[position[key] for key in run] for run in runs],
                lexical_run=[position[key] for key in lexical_run],
                live_top=[position[str(d.id)] for d in live],
                query_cosines=matrix @ query_vector.astype(np.float32),
                plain_cosines=matrix @ plain_vector,
                bm25=np.asarray([by_key[key] for key in keys], np.float32),
                mem0_keyword=keyword,
                mem0_inflected_keyword=_keyword_run(keyword_index, inflected),
                mem0_terms=len(terms),
                lexical_query=stripped,
                unstripped_lexical_run=[
                    position[str(d.id)] for d in plain_hits.top(FusionConfig().corpus_bm25_k)
                ],
                unstripped_bm25=np.asarray([plain_by_key[key] for key in keys], np.float32),
                uninflected_lexical_run=[
                    position[str(d.id)] for d in uninflected.top(FusionConfig().corpus_bm25_k)
                ],
                uninflected_bm25=np.asarray([uninflected_by_key[key] for key in keys], np.float32),
            )
        )
    store.delete_collection()
    return result


def _keyword_run(index: bm25s.BM25, terms: list[str]) -> list[tuple[int, float]]:
    """mem0's keyword run: the ``SEMANTIC_K`` best ``(document, raw BM25)``."""
    if not terms:
        return []
    raw = np.asarray(index.get_scores(terms))
    return [(int(i), float(raw[i])) for i in np.argsort(-raw, kind="stable")[:SEMANTIC_K]]


def collect(
    data: Path,
    samples: Sequence[dict[str, Any]],
    variant: UnitVariant,
    embeddings: Embeddings,
    questions: int | None = None,
) -> list[ConversationRuns]:
    """Every conversation's cached runs for one unit (computed once, then read from the cache)."""
    path = _cache_path(data, variant, questions)
    if path.is_file():
        cached: list[ConversationRuns] = pickle.loads(path.read_bytes())  # noqa: S301 - own file
        if len(cached) == len(samples):
            return cached
    runs = []
    for sample in samples:
        runs.append(_collect_conversation(sample, variant, embeddings, questions))
        print(f"  cached {variant.label}: {sample.get('sample_id')}", file=sys.stderr)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(runs))
    return runs


def _unit_range(values: Array) -> Array:
    low, high = float(values.min()), float(values.max())
    if high - low < 1e-12:
        return np.ones_like(values)
    return (values - low) / (high - low)


def _lexical_top(scores: Array, k: int) -> list[int]:
    order = np.argsort(-scores, kind="stable")[:k]
    return [int(i) for i in order if scores[i] > 0]


@dataclass
class _Components:
    """The configuration-independent parts of one question's fusion, for one ``rrf_k``."""

    members: npt.NDArray[np.int64]
    original: npt.NDArray[np.float64]
    fragments: npt.NDArray[np.float64]
    lexical: npt.NDArray[np.float64]
    pool_bm25: npt.NDArray[np.float64]
    cosines: Array
    lexical_top: list[float]


_MEMO: dict[tuple[Any, ...], tuple[QuestionRuns, _Components]] = {}


def _rrf_vector(run: Sequence[int], pool: dict[int, int], rrf_k: int) -> npt.NDArray[np.float64]:
    out = np.zeros(len(pool), np.float64)
    if run:
        positions = np.fromiter((pool[d] for d in run), dtype=np.int64)
        out[positions] = 1.0 / (rrf_k + np.arange(1, len(run) + 1))
    return out


def _vector_runs(runs: QuestionRuns, config: FusionConfig) -> list[list[int]]:
    """The cached vector runs cut to ``config``'s sub-queries and depths."""
    kept = runs.vector_runs[: config.max_subqueries]
    if not kept:
        return []
    original = max(config.original_fetch_k, TOP_K)  # as RecallB searches for k=TOP_K
    return [kept[0][:original]] + [run[: config.fetch_k] for run in kept[1:]]


def _components(runs: QuestionRuns, config: FusionConfig) -> _Components | None:
    strip, inflect = config.strip_stop_words, config.lexical_inflections
    rrf_k = config.rrf_k
    key = (id(runs), rrf_k, config.corpus_bm25_k, strip, inflect, *_depth(config).values())
    cached = _MEMO.get(key)
    if cached is not None and cached[0] is runs:
        return cached[1]
    _, lexical_run, bm25 = runs.lexical(strip, inflect)
    lexical = lexical_run[: config.corpus_bm25_k]
    vector_runs = _vector_runs(runs, config)
    pool: dict[int, int] = {}
    for doc in itertools.chain(*vector_runs, lexical):
        pool.setdefault(doc, len(pool))
    if not pool:
        return None
    members = np.fromiter(pool, dtype=np.int64)
    pool_scores = bm25[members]
    ranked = [
        int(members[i]) for i in np.argsort(-pool_scores, kind="stable") if pool_scores[i] > 0
    ]
    fragments = np.zeros(len(pool), np.float64)
    for run in vector_runs[1:]:
        fragments += _rrf_vector(run, pool, rrf_k)
    components = _Components(
        members=members,
        original=_rrf_vector(vector_runs[0] if vector_runs else [], pool, rrf_k),
        fragments=fragments,
        lexical=_rrf_vector(lexical, pool, rrf_k),
        pool_bm25=_rrf_vector(ranked, pool, rrf_k),
        cosines=_unit_range(runs.query_cosines[members]),
        lexical_top=[float(bm25[i]) for i in lexical[:2]],
    )
    _MEMO[key] = (runs, components)
    return components


def fusion_order(runs: QuestionRuns, config: FusionConfig, k: int = TOP_K) -> list[int]:
    """RecallB's ranking of one question's cached runs under ``config`` (document indices).

    Mirrors ``RecallB._rank``: the pool is every vector run then the corpus BM25
    top, fused by weighted RRF (original, fragments, corpus BM25, pool BM25) and
    blended with the original query's cosine, each scaled to 0..1 in the pool.
    """
    parts = _components(runs, config)
    if parts is None:
        return []
    lexical_weight = config.corpus_bm25_weight
    if config.lexical_floor < 1.0:
        lexical_weight = adaptive_lexical_weight(
            lexical_weight, parts.lexical_top, config.lexical_floor
        )
    fused = (
        config.original_weight * parts.original
        + config.fragment_weight * parts.fragments
        + lexical_weight * parts.lexical
        + config.bm25_weight * parts.pool_bm25
    ).astype(np.float32)
    scores = config.cosine_weight * parts.cosines + (1.0 - config.cosine_weight) * _unit_range(
        fused
    )
    query, _, bm25 = runs.lexical(config.strip_stop_words, config.lexical_inflections)
    if config.lexical_blend_weight > 0 and query.strip():
        scores = lexical_blend(
            scores,
            bm25[parts.members].tolist(),
            _terms(query),
            config.lexical_blend_weight,
            config.lexical_blend_shift,
        )
    return [int(parts.members[i]) for i in np.argsort(-scores, kind="stable")[:k]]


@functools.cache
def _terms(question: str) -> int:
    return query_terms(question)


def vector_order(runs: QuestionRuns, k: int = TOP_K) -> list[int]:
    return [int(i) for i in np.argsort(-runs.plain_cosines, kind="stable")[:k]]


def bm25_order(runs: QuestionRuns, k: int = TOP_K) -> list[int]:
    return _lexical_top(runs.lexical(strip=False)[2], k)


def ensemble_order(runs: QuestionRuns, k: int = TOP_K) -> list[int]:
    """EnsembleRetriever([bm25, vector], weights=[0.5, 0.5]): weighted RRF with c=60."""
    scores: dict[int, float] = {}
    for run in (bm25_order(runs), vector_order(runs)):
        for rank, doc in enumerate(run, start=1):
            scores[doc] = scores.get(doc, 0.0) + 0.5 / (60 + rank)
    return sorted(scores, key=lambda doc: -scores[doc])[:k]


def mem0_order(runs: QuestionRuns, k: int = TOP_K) -> list[int]:
    semantic = [(str(i), float(runs.plain_cosines[i])) for i in vector_order(runs, SEMANTIC_K)]
    keyword = [(str(i), raw) for i, raw in runs.mem0_keyword]
    return [int(key) for key in hybrid_order(semantic, keyword, runs.mem0_terms, k)]


def mem0_inflected_order(runs: QuestionRuns, k: int = TOP_K) -> list[int]:
    """mem0's hybrid with its keyword run matching inflections, as mem0's lemmas would."""
    semantic = [(str(i), float(runs.plain_cosines[i])) for i in vector_order(runs, SEMANTIC_K)]
    keyword = [(str(i), raw) for i, raw in runs.mem0_inflected_keyword]
    return [int(key) for key in hybrid_order(semantic, keyword, runs.mem0_terms, k)]


BASELINES = {
    "vector": vector_order,
    "bm25": bm25_order,
    "ensemble": ensemble_order,
    "mem0_hybrid": mem0_order,
}

REFERENCES = {"mem0_hybrid_inflected": mem0_inflected_order}
"""Rows scored beside the baselines, with their own margin table: mem0's hybrid given the
inflections RecallB searches with (mem0 matches spaCy lemmas; the baseline does not)."""


def default_grid() -> list[FusionConfig]:
    """The fixed-weight configurations searched (the previous defaults among them)."""
    return [
        FusionConfig(
            rrf_k,
            cosine,
            lexical,
            fragment,
            pool_bm25,
            lexical_floor=1.0,
            lexical_blend_weight=0.0,
        )
        for rrf_k in (5, 10, 20)
        for cosine in (0.2, 0.35, 0.5)
        for lexical in (2.0, 4.0, 8.0)
        for fragment in (0.25, 0.5)
        for pool_bm25 in (0.0, 0.5)
    ]


def adaptive_grid() -> list[FusionConfig]:
    """The fixed grid plus each point with a decisiveness-scaled lexical weight."""
    fixed = default_grid()
    return fixed + [
        FusionConfig(**{**c.__dict__, "lexical_floor": floor})
        for c in fixed
        for floor in (0.25, 0.5)
    ]


BLEND_WEIGHTS = (0.2, 0.4, 0.6)
"""The shares of the squashed absolute BM25 score tried by :func:`blend_grid`."""


def blend_grid() -> list[FusionConfig]:
    """The adaptive grid plus each fixed or half-floor point with a lexical blend term."""
    fixed = default_grid()
    return adaptive_grid() + [
        FusionConfig(**{**c.__dict__, "lexical_floor": floor, "lexical_blend_weight": weight})
        for c in fixed
        for floor in (1.0, 0.5)
        for weight in BLEND_WEIGHTS
    ]


BLEND_SHIFTS = (-4.0, -3.0, -2.0, -1.0, 0.0)
"""The midpoint shifts of the BM25 squashing curve tried by :func:`stop_word_grid`."""


def _blend_points(**fixed: Any) -> list[FusionConfig]:
    """``fixed`` with every blend shift, blend share (0.5-0.7) and cosine weight (0.2, 0.35)."""
    return [
        FusionConfig(
            cosine_weight=cosine, lexical_blend_weight=weight, lexical_blend_shift=shift, **fixed
        )
        for shift in BLEND_SHIFTS
        for weight in (0.5, 0.6, 0.7)
        for cosine in (0.2, 0.35)
    ]


def stop_word_grid() -> list[FusionConfig]:
    """The lexical query with or without stop words (uninflected), by blend, shift, cosine."""
    return [
        config
        for strip in (False, True)
        for config in _blend_points(strip_stop_words=strip, lexical_inflections=False)
    ]


def inflection_grid() -> list[FusionConfig]:
    """The stop-word-free lexical query with or without inflections, by blend, shift, cosine."""
    return [
        config for inflect in (False, True) for config in _blend_points(lexical_inflections=inflect)
    ]


DEPTHS = ((10, 5), (15, 5), (20, 10), (30, 10), (30, 20))
"""(original_fetch_k, fetch_k) pairs tried by :func:`depth_grid`."""


def depth_grid(max_results: int | None = 30) -> list[FusionConfig]:
    """The defaults at 2-8 sub-queries and every depth of :data:`DEPTHS`.

    With ``max_results``, only the settings whose vector runs read at most that many
    results in all: a cost budget, so the fit chooses among settings cheap enough to run
    on every turn (at 10,000 memories the scale benchmark measures recall at 1.6-1.7
    times a plain vector search reading 30 results, 2.0 times reading the 170 of the
    releases before).
    """
    configs = [
        FusionConfig(max_subqueries=count, original_fetch_k=original, fetch_k=fragment)
        for count in (2, 3, 4, 6, 8)
        for original, fragment in DEPTHS
    ]
    if max_results is None:
        return configs
    return [c for c in configs if results_read(c) <= max_results]


def results_read(config: FusionConfig) -> int:
    """How many vector results a recall under ``config`` reads, in all its runs."""
    return config.original_fetch_k + (config.max_subqueries - 1) * config.fetch_k


@dataclass
class Hits:
    """First-hit ranks of one method on one conversation and variant."""

    ranks: list[int | None] = field(default_factory=list)
    categories: list[int] = field(default_factory=list)

    def recall(self, cut: int, category: int | None = None) -> float:
        ranks = [
            r for r, c in zip(self.ranks, self.categories, strict=True) if category in (None, c)
        ]
        return sum(1 for r in ranks if r is not None and r <= cut) / max(len(ranks), 1)

    def mrr(self) -> float:
        return sum(1 / r for r in self.ranks if r is not None) / max(len(self.ranks), 1)


def _first_hit(
    order: Iterable[int], labels: list[frozenset[str]], evidence: frozenset[str]
) -> int | None:
    for rank, doc in enumerate(order, start=1):
        if labels[doc] & evidence:
            return rank
    return None


Table = dict[str, dict[str, list[Hits]]]
"""method -> variant label -> one Hits per conversation."""


def _score(
    conversations: list[ConversationRuns], variants: list[UnitVariant], order: Any
) -> dict[str, list[Hits]]:
    """Score one ranking function on every (unit variant, conversation) sharing a cache."""
    out: dict[str, list[Hits]] = {v.label: [] for v in variants}
    for conversation in conversations:
        per_variant = {v.label: Hits() for v in variants}
        for runs in conversation.questions:
            ranked = order(runs)
            for v in variants:
                labels = conversation.labels[v.fact_evidence if v.unit == "facts" else "all"]
                if not any(label & runs.evidence for label in labels):
                    continue
                per_variant[v.label].ranks.append(_first_hit(ranked, labels, runs.evidence))
                per_variant[v.label].categories.append(runs.category)
        for label, hits in per_variant.items():
            out[label].append(hits)
    return out


def _robust(hits: list[Hits]) -> float:
    values = [(h.recall(1) + h.recall(5)) / 2 for h in hits]
    return statistics.fmean(values) + min(values)


def _fit(grid_scores: list[dict[str, list[Hits]]], train: list[int]) -> int:
    """The grid point with the best robust score on the training conversations, all variants."""

    def criterion(i: int) -> float:
        return statistics.fmean(
            _robust([hits[c] for c in train]) for hits in grid_scores[i].values()
        )

    return max(range(len(grid_scores)), key=criterion)


@dataclass
class CrossValidation:
    """Held-out ranks of every method (one Hits per fold) and the configurations each fold chose."""

    table: Table
    chosen: dict[str, list[FusionConfig]]
    live_agreement: float


def cross_validate(
    caches: dict[UnitVariant, list[ConversationRuns]],
    grids: dict[str, list[FusionConfig]] | None = None,
) -> CrossValidation:
    """Score the baselines, RecallB's defaults and each grid fitted leave-one-conversation-out."""
    if grids is None:
        fixed = len(default_grid())
        grids = {
            "recall_b_cv": adaptive_grid()[:fixed],
            "recall_b_adaptive_cv": adaptive_grid(),
            "recall_b_blend_cv": blend_grid(),
            "recall_b_stop_words_cv": stop_word_grid(),
            "recall_b_inflections_cv": inflection_grid(),
            "recall_b_depth_cv": depth_grid(),
            "recall_b_depth_any_cv": depth_grid(max_results=None),
        }
    groups: dict[tuple[str, bool], list[UnitVariant]] = {}
    for variant in caches:
        groups.setdefault((variant.unit, variant.captions), []).append(variant)

    def score_all(order: Any) -> dict[str, list[Hits]]:
        scored: dict[str, list[Hits]] = {}
        for variants in groups.values():
            scored.update(_score(caches[variants[0]], variants, order))
        return scored

    table: Table = {name: score_all(order) for name, order in {**BASELINES, **REFERENCES}.items()}
    table["recall_b_previous"] = score_all(lambda runs: fusion_order(runs, PREVIOUS_DEFAULTS))
    table["recall_b_unstripped"] = score_all(lambda runs: fusion_order(runs, UNSTRIPPED_DEFAULTS))
    table["recall_b_uninflected"] = score_all(lambda runs: fusion_order(runs, UNINFLECTED_DEFAULTS))
    table["recall_b"] = score_all(lambda runs: fusion_order(runs, FusionConfig()))
    table["recall_b_deep"] = score_all(lambda runs: fusion_order(runs, COLLECTED))
    chosen: dict[str, list[FusionConfig]] = {}
    scored: dict[FusionConfig, dict[str, list[Hits]]] = {}
    for name, grid in grids.items():
        for config in grid:
            if config not in scored:
                scored[config] = score_all(lambda runs, c=config: fusion_order(runs, c))
        grid_scores = [scored[c] for c in grid]
        folds = len(next(iter(grid_scores[0].values())))
        picks = [_fit(grid_scores, [c for c in range(folds) if c != held]) for held in range(folds)]
        chosen[name] = [grid[i] for i in picks]
        table[name] = {
            label: [grid_scores[i][label][held] for held, i in enumerate(picks)]
            for label in grid_scores[0]
        }
    return CrossValidation(table, chosen, _live_agreement(caches))


def _live_agreement(caches: dict[UnitVariant, list[ConversationRuns]]) -> float:
    """Share of questions where the offline default ranking equals the live RecallB top 10."""
    same = total = 0
    for conversations in caches.values():
        for conversation in conversations:
            for runs in conversation.questions:
                total += 1
                same += fusion_order(runs, COLLECTED) == runs.live_top
    return same / max(total, 1)


def _fold_summary(hits: list[Hits], cut: int) -> tuple[float, float, float]:
    values = [h.recall(cut) for h in hits]
    return statistics.fmean(values), statistics.pstdev(values), min(values)


def print_cv(result: CrossValidation, samples: Sequence[str]) -> None:
    """Print the per-variant CV tables, the smallest-margin folds and per-category figures."""
    table = result.table
    print(f"\noffline default ranking == live RecallB top 10 on {result.live_agreement:.1%}")
    for label in next(iter(table.values())):
        n = sum(len(h.ranks) for h in table["vector"][label])
        print(f"\nUnit = {label} ({n} questions, {len(samples)} folds)\n")
        print("| method | R@1 mean | R@1 sd | R@1 worst | R@5 mean | R@5 sd | R@5 worst | MRR |")
        print("|---|---|---|---|---|---|---|---|")
        for name, rows in table.items():
            r1, r5 = _fold_summary(rows[label], 1), _fold_summary(rows[label], 5)
            mrr = statistics.fmean(h.mrr() for h in rows[label])
            print(
                f"| {name} | {r1[0]:.3f} | {r1[1]:.3f} | {r1[2]:.3f} | "
                f"{r5[0]:.3f} | {r5[1]:.3f} | {r5[2]:.3f} | {mrr:.3f} |"
            )
        _print_margins(table, label, samples, list(BASELINES))
        references = [name for name in REFERENCES if name in table]
        if references:
            _print_margins(table, label, samples, [*BASELINES, *references])
        _print_categories(table, label)
    for name, configs in result.chosen.items():
        print(f"\n{name} chose per fold:")
        for sample, config in zip(samples, configs, strict=True):
            print(f"  held out {sample}: {config}")


def _print_margins(table: Table, label: str, samples: Sequence[str], others: Sequence[str]) -> None:
    print(
        f"\n| RecallB method | cut | mean margin over best of {', '.join(others)} | "
        "smallest-margin fold |"
    )
    print("|---|---|---|---|")
    for name in (n for n in table if n.startswith("recall_b")):
        for cut in (1, 5):
            margins = [
                table[name][label][f].recall(cut)
                - max(table[o][label][f].recall(cut) for o in others)
                for f in range(len(samples))
            ]
            worst = min(range(len(margins)), key=margins.__getitem__)
            print(
                f"| {name} | R@{cut} | {statistics.fmean(margins):+.3f} | "
                f"{samples[worst]} {margins[worst]:+.3f} |"
            )


def _print_categories(table: Table, label: str) -> None:
    print("\n| method | " + " | ".join(f"{c} {n} R@1 / R@5" for c, n in CATEGORIES.items()) + " |")
    print("|---|" + "---|" * len(CATEGORIES))
    for name, rows in table.items():
        pooled = Hits(
            [r for h in rows[label] for r in h.ranks],
            [c for h in rows[label] for c in h.categories],
        )
        cells = [f"{pooled.recall(1, c):.3f} / {pooled.recall(5, c):.3f}" for c in CATEGORIES]
        print(f"| {name} | " + " | ".join(cells) + " |")


def run_cv(
    data: Path,
    samples: Sequence[dict[str, Any]],
    units: Sequence[str],
    embeddings: Embeddings,
    questions: int | None = None,
) -> CrossValidation:
    """Collect (or read) every unit variant's runs, cross-validate and print the tables."""
    caches: dict[UnitVariant, list[ConversationRuns]] = {}
    for unit in units:
        if unit == "turns":
            for captions in (False, True):
                variant = UnitVariant("turns", captions=captions)
                caches[variant] = collect(data, samples, variant, embeddings, questions)
        else:
            shared = collect(data, samples, UnitVariant("facts"), embeddings, questions)
            for evidence in ("all", "first"):
                caches[UnitVariant("facts", fact_evidence=evidence)] = shared
    result = cross_validate(caches)
    print_cv(result, [str(s.get("sample_id")) for s in samples])
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """``benchmarks/locomo.py``: the cross-validation with ``--cv``, else the plain benchmark."""
    args = locomo.parse_args(argv)
    if not args.cv:
        return locomo.main(argv)
    if not args.data.is_file():
        print(f"LoCoMo file not found: {args.data}", file=sys.stderr)
        return 2
    from cogito_lc.embeddings.local import local_embeddings

    samples = list(locomo.iter_samples(args.data, args.conversations))
    run_cv(args.data, samples, args.units, local_embeddings(), args.questions)
    return 0
