"""RecallB: zero-LLM recall over any LangChain vector store."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future
from copy import deepcopy
from datetime import datetime
from functools import partial
from typing import Any

import numpy as np
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.callbacks.manager import adispatch_custom_event, dispatch_custom_event
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import ContextThreadPoolExecutor
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, Field, PrivateAttr, model_validator
from typing_extensions import Self

from cogito_lc._core.filters import equality_predicate, store_filter
from cogito_lc._core.metadata import METADATA_KEY
from cogito_lc._core.text import STOP_WORDS
from cogito_lc._core.validation import (
    RejectUnknownFields,
    check_positive_int,
    check_query,
    reject_unknown_kwargs,
)
from cogito_lc._core.versions import (
    VERSION_SEARCH_DEPTH,
    VERSION_SEARCH_GROWTH,
    check_as_of,
    version_filter,
)
from cogito_lc.retrievers import _search
from cogito_lc.retrievers._decompose import Decomposition, decompose_query
from cogito_lc.retrievers._fusion import document_key, reciprocal_rank_fusion
from cogito_lc.retrievers._ranking import Vector, blend, bm25_run
from cogito_lc.retrievers._recency import RecencyBasis, RecencyTrigger, recency_step
from cogito_lc.retrievers._subquery_vectors import (
    SubqueryPlan,
    SubqueryVectorMode,
    aembed_with_plan,
    embed_with_plan,
    shared_plan,
)
from cogito_lc.retrievers._vector_cache import VectorCache, shared_cache
from cogito_lc.retrievers.adaptive_fusion import (
    adaptive_lexical_weight,
    inflect_query,
    lexical_blend,
    lexical_query,
    load_lexicon,
    query_terms,
)
from cogito_lc.stores import ChromaAdapter, StoreAdapter, adapter_for, cosine_scores
from cogito_lc.stores.bm25s_index import Bm25Index, ChromaBm25Source
from cogito_lc.stores.lexical_index import LexicalIndex
from cogito_lc.stores.lexical_sync import LexicalSync, lexical_sync_for
from cogito_lc.stores.postgres_lexical import PostgresLexicalIndex

__all__ = ["RECALL_B_EVENT", "RecallB"]

logger = logging.getLogger(__name__)

_Keep = Callable[[Mapping[str, Any]], bool] | None

RECALL_B_EVENT = "cogito_lc.recall_b"
"""Name of the custom event dispatched at the end of every :class:`RecallB` run.

Its data is a dict with ``method`` (the run's method tag), ``subquery_vectors``
(the sub-query path that ran: ``span``, ``batch`` or ``per_query``),
``subquery_reason`` (why not ``span``; empty when it ran), ``returned``,
``subqueries`` (the queries searched, the original first) and ``found_by``: for each
returned document, in order, the runs that found it, as dicts of ``run`` (``vector``
or ``lexical``), ``subquery`` (the index in ``subqueries``; the lexical run searches
the original) and ``rank`` (1-based in that run).
"""


_SHARED_FIELDS = frozenset({"vectorstore", "embeddings", "lexical_index"})
"""Fields a deep copy of RecallB shares: the data it searches, not its settings."""
_RUNTIME = frozenset({"_cache", "_store", "_chroma_bm25", "_lexical", "_plan", "_plan_lock"})
"""Private attributes built from the fields (:meth:`RecallB._attach`), never pickled."""


class RecallB(RejectUnknownFields, BaseRetriever):
    """Zero-LLM recall: decompose, search with every sub-query, fuse, re-rank by cosine.

    The name comes from the reference design, cogito-ergo, whose zero-LLM recall is
    ``recall_b`` (served at ``/recall_b``, as it is here): RecallB is that recall
    rebuilt as a LangChain retriever over any vector store.

    The query is split into sub-queries (:func:`~cogito_lc.retrievers.decompose_query`),
    embedded together (one forward pass of a local sentence-transformers model, else
    one batched call: see ``subquery_vectors``) and searched in the vector store. The ranked
    runs (the original query's weighted above its fragments) and a BM25 run
    over the candidate pool are fused with reciprocal rank fusion keyed by
    ``Document.id``; the pool is then ordered by a blend of the fused score and
    the cosine similarity of each candidate to the original query. Candidate
    vectors come from the store (Chroma returns them) or a bounded cache, never
    from re-embedding the pool on every query.

    Returned documents carry the stored ``page_content``, ``id`` and metadata;
    scores and the method tag are added under ``metadata["cogito"]``
    (:data:`~cogito_lc.METADATA_KEY`, which lists the keys and tags).

    Example:
        ```python
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_core.vectorstores import InMemoryVectorStore

        from cogito_lc import RecallB

        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
        store.add_texts(
            ["Auth tokens expire after 3600 seconds.", "We chose PostgreSQL for billing."],
            ids=["auth", "db"],
        )
        retriever = RecallB(vectorstore=store, k=5)
        docs = retriever.invoke("how long do auth tokens last?")
        docs[0].page_content  # 'Auth tokens expire after 3600 seconds.'
        docs[0].metadata["cogito"]["method"]  # 'decompose_4'
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    vectorstore: VectorStore
    """The store to search. It must have embeddings unless ``embeddings`` is given."""
    embeddings: Embeddings | None = None
    """Embeddings for queries; defaults to ``vectorstore.embeddings``."""
    k: int = Field(default=10, ge=1)
    """How many documents to return; can be overridden per call with ``invoke(query, k=...)``."""
    fetch_k: int = Field(default=5, ge=1)
    """How many documents each fragment sub-search fetches into the candidate pool (the
    original query's search fetches at least ``k``: fragments only add candidates)."""
    original_fetch_k: int = Field(default=15, ge=1)
    """How many documents the search with the original query fetches (at least ``k``)."""
    max_subqueries: int = Field(default=4, ge=1)
    """The most sub-queries one recall searches with, the original query included. The
    defaults (4 sub-queries, 15 and 5 deep) read 30 vector results: chosen by
    cross-validation among the settings reading at most that many (1.6-1.7 times a
    plain vector search at 10,000 memories, against 2.0 for 8 sub-queries 30 and 20
    deep, which scores within 0.004 of them: ``benchmarks/results/locomo_cv.md``,
    ``recall_b_deep``)."""
    vocab_map: dict[str, list[str]] | None = None
    """Plain words to the corpus's own terms, e.g. ``{"how fast": ["latency", "p95"]}``."""
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Passed to every sub-search, e.g. ``{"filter": {"user_id": "alice"}}``. A Chroma-style
    ``where`` dict is translated for an ``InMemoryVectorStore`` (which takes a function of
    the Document); other stores get the filter as given."""
    rrf_k: int = Field(default=5, ge=0)
    """The reciprocal rank fusion constant (lower favours the top of each run)."""
    original_weight: float = Field(default=1.0, ge=0.0)
    """RRF weight of the original query's vector run."""
    fragment_weight: float = Field(default=0.5, ge=0.0)
    """RRF weight of each fragment's vector run."""
    bm25_weight: float = Field(default=0.0, ge=0.0)
    """RRF weight of the BM25 run over the candidate pool; 0 (default) turns it off."""
    corpus_bm25_weight: float = Field(default=4.0, ge=0.0)
    """RRF weight of the BM25 run over the whole corpus; 0 turns it off."""
    corpus_bm25_k: int = Field(default=10, ge=1)
    """How many documents the corpus BM25 run adds to the pool."""
    lexical_index: Bm25Index | LexicalIndex | None = None
    """Corpus BM25 index for stores that get none automatically. Chroma stores and
    ``InMemoryVectorStore`` share one per store object, kept in step by MemoryStore's
    writes (:func:`~cogito_lc.stores.lexical_sync_for`: SQLite FTS5 beside a
    persistent Chroma store, bm25s in memory otherwise). A :class:`LexicalIndex` given
    here is searched with the ``filter`` of ``search_kwargs``; a :class:`Bm25Index`
    must hold only documents this retriever may return (no filter is applied to it)."""
    cosine_weight: float = Field(default=0.35, ge=0.0, le=1.0)
    """Share of the cosine similarity to the original query in the final blend; the rest
    is the fused rank score. Both are scaled to 0..1 within the pool first."""
    score_floor: float | None = Field(default=None, ge=-1.0, le=1.0)
    """Off by default. When set, return nothing if the best cosine is below it and no
    candidate stands out from the runner-up by ``standout_margin``."""
    standout_margin: float = Field(default=0.1, ge=0.0)
    """How far the best cosine must lead the second for ``score_floor`` not to apply."""
    cache_size: int = Field(default=10_000, ge=0)
    """The most candidate vectors kept; one cache per vector store, query embeddings and size
    in a process, shared by the retrievers built over them (the service builds one a request)."""
    exact_scope_limit: int = Field(default=2_000, ge=0)
    """A scope filter matching at most this many memories (counted in the corpus index)
    is ranked exactly over its own vectors, read by id, instead of by one filtered
    approximate search per sub-query: far cheaper when the scope is a small share of a
    large Chroma collection. 0 always searches the index."""
    subquery_vectors: SubqueryVectorMode = "auto"
    """How sub-query vectors are made: ``"span"`` derives them from one forward pass
    of the query on a local sentence-transformers model; ``"batch"`` embeds all
    sub-queries in one ``embed_documents`` call; ``"per_query"`` calls ``embed_query``
    for each (for asymmetric models); ``"auto"`` (default) uses span where the
    embeddings allow it, else batch (or per_query for an asymmetric local model).
    The path that ran is reported as ``subquery_vectors`` in ``metadata["cogito"]``
    and in the :data:`RECALL_B_EVENT`; the first time ``"auto"`` cannot take the
    span path with an embeddings object, one INFO log line names the reason and the fix."""
    lexical_floor: float = Field(default=0.5, ge=0.0, le=1.0)
    """1.0 keeps ``corpus_bm25_weight`` fixed. Below 1 (default 0.5), the corpus BM25 run's
    weight is scaled by how decisive the run is for this query, from this share (its two
    best scores equal) up to the full weight (the best far ahead of the runner-up);
    see :func:`~cogito_lc.retrievers.adaptive_fusion.lexical_decisiveness`."""
    lexical_blend_weight: float = Field(default=0.5, ge=0.0, le=1.0)
    """Share of each candidate's absolute corpus BM25 score, squashed to 0..1 by mem0's
    logistic curve, in the final score (0 turns it off); the rest is the cosine and rank
    blend (see :func:`~cogito_lc.retrievers.adaptive_fusion.lexical_blend`)."""
    lexical_blend_shift: float = -4.0
    """Moves the midpoint of the curve that squashes BM25 scores for ``lexical_blend_weight``
    (mem0's midpoints, 5 to 12 by query length, plus this). Negative (default -4.0) because
    the lexical query has its stop words removed (``lexical_stop_words``): fewer terms score
    lower, so a match on the query's rare words counts from a lower raw score."""
    lexical_stop_words: frozenset[str] = STOP_WORDS
    """Words removed from the query before the corpus BM25 search (compared lower-cased):
    function and question words ("when", "did", "my") that the index keeps but that match
    nearly every conversational memory. Empty searches with the query as written. A query
    made only of these words gets no lexical run."""
    lexical_inflections: bool = True
    """The corpus BM25 search also matches the English inflections of each query word
    ("sign" finds "signed", "signing"; "go" finds "went"; irregular forms from
    LemmInflect's lexicon, see :func:`~cogito_lc.retrievers.adaptive_fusion.inflect_query`),
    since the lexical indexes do not stem; a form that is one of ``lexical_stop_words`` is
    not added. False searches with the words as written."""

    recency_trigger: RecencyTrigger = "cue"
    """When to prefer the newest version of a fact: ``"cue"`` (default) when the query has
    a present-time word ("currently", "now", "still", "these days", ...), ``"present"``
    also for any present-tense question without a past-time word, ``"off"`` never; a
    query naming a year or a month never. Then the best candidate gives way to a newer
    one about the same subject (see ``recency_chain``, ``recency_margin``,
    ``recency_similarity``), by ``created_at``. It matters where nothing marked the old
    version superseded (no judge on write). The defaults were chosen by cross-validation
    over the knowledge-update benchmark's conversations paired with LoCoMo's, fitted on
    each fold's training part among the settings keeping LoCoMo's R@1 and R@5 within
    0.005 of the step off (``benchmarks/results/recency_cv.md``, ``python
    benchmarks/recency_cv.py``): on the knowledge-update questions with a present-time
    word, current-fact@1 0.28 -> 0.76 and stale-at-1 0.65 -> 0.01 (0.31 -> 0.84 and 0.62
    -> 0.01 on a second seed of the generator), LoCoMo's R@1 and R@5 within 0.004 of the
    step off. ``"present"`` would also serve plain present-tense questions (0.71
    current-fact@1 over all of them, fitted on the knowledge-update folds alone) but costs
    LoCoMo 0.11-0.20 of R@1: most of LoCoMo's present-tense questions ask about a fact
    stated once, long ago."""
    recency_margin: float = Field(default=0.5, ge=0.0, le=1.0)
    """How far below the best a candidate still counts as tied with it, on
    ``recency_basis`` (default 0.5 on the cosine to the query; cross-validated with
    ``recency_trigger``)."""
    recency_similarity: float = Field(default=0.25, ge=-1.0, le=1.0)
    """How close (cosine) a tied candidate's vector must be to the best one's (with
    ``recency_chain``, to the version before it); default 0.25, cross-validated."""
    recency_basis: RecencyBasis = "cosine"
    """What ``recency_margin`` is measured on: ``"cosine"`` (default), the cosine to the
    query below the best cosine among the candidates considered, or ``"score"``, the final
    blended score (which favours a version sharing the query's words, often the old one:
    "Does the user still live in Austin?")."""
    recency_depth: int = Field(default=0, ge=0)
    """Only the best ``recency_depth`` candidates by score can be moved up (0, the default:
    all)."""
    recency_chain: int = Field(default=3, ge=0)
    """0: the newest tied candidate comes first. Above 0 (default 3): follow the versions
    from the best candidate, at most this many steps, each to the newer tied candidate most
    like the one before (at least ``recency_similarity``); the last one reached comes
    first. A newer line merely near the best in vector space (a sister's city next to the
    user's) is passed over for the one most like it: stale-at-1 0.01 against 0.10 for the
    newest tied candidate at the same current-fact@1 (0.76)."""
    include_superseded: bool = False
    """Also return memories a newer one replaced (``superseded_by`` in their metadata,
    see :meth:`MemoryStore.add <cogito_lc.MemoryStore.add>`); by default only current
    memories come back. Per call: ``invoke(query, include_superseded=True)``."""
    as_of: datetime | None = None
    """Return what was current at this time instead: memories created by then and not
    yet superseded then. Per call: ``invoke(query, as_of=...)`` (a datetime or an ISO
    8601 string); a time in the future is an error."""

    _cache: VectorCache = PrivateAttr()
    _store: StoreAdapter = PrivateAttr()
    _chroma_bm25: ChromaBm25Source | None = PrivateAttr(default=None)
    _lexical: LexicalSync | None = PrivateAttr(default=None)
    _plan: tuple[Embeddings, SubqueryPlan] | None = PrivateAttr(default=None)
    _plan_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @model_validator(mode="after")
    def _require_embeddings(self) -> RecallB:
        if self.embeddings is None and self.vectorstore.embeddings is None:
            msg = (
                f"{type(self.vectorstore).__name__} has no embeddings: build the vector store "
                "with an embedding function or pass embeddings=... to RecallB."
            )
            raise ValueError(msg)
        _check_search_kwargs(self.search_kwargs)
        self._translated_kwargs()  # a filter that cannot be translated fails here, not at invoke
        self._attach()
        return self

    def _attach(self) -> None:
        """Build the runtime parts: candidate cache, store adapter, lexical sync, plan lock."""
        self._cache = shared_cache(self.vectorstore, self.query_embeddings, self.cache_size)
        self._store = adapter_for(self.vectorstore)
        self._chroma_bm25 = None
        self._lexical = None
        self._plan = None
        self._plan_lock = threading.Lock()
        if self.lexical_index is None:
            if self.search_kwargs.get("where_document") and isinstance(self._store, ChromaAdapter):
                self._chroma_bm25 = ChromaBm25Source(self._store)
            else:
                self._lexical = lexical_sync_for(self.vectorstore)
        if self.lexical_inflections:
            load_lexicon()  # once per process, here rather than in the first recall

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        """A copy with its own settings, sharing what it searches and its runtime parts.

        The vector store, embeddings and lexical index are shared, with the
        candidate cache and lexical sync kept for them, as :meth:`model_copy` shares
        them; the settings (``search_kwargs``, ``vocab_map``, ...) are copied deeply.
        """
        memo = {} if memo is None else memo
        copied = self.__copy__()
        memo[id(self)] = copied
        copied.__dict__.update(
            {
                name: deepcopy(value, memo)
                for name, value in self.__dict__.items()
                if name not in _SHARED_FIELDS
            }
        )
        return copied

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with ``update`` set on it (not validated), as pydantic's ``model_copy``.

        A deep copy shares what it searches and the runtime parts as
        :meth:`__deepcopy__` does, with ``update`` or without.
        """
        if deep and update:
            return deepcopy(self).model_copy(update=update)
        return super().model_copy(update=update, deep=deep)

    def __getstate__(self) -> dict[Any, Any]:
        """The fields and settings; the runtime parts are built again on load."""
        state = super().__getstate__()
        private = state.get("__pydantic_private__") or {}
        state["__pydantic_private__"] = {
            name: value for name, value in private.items() if name not in _RUNTIME
        }
        return state

    def __setstate__(self, state: dict[Any, Any]) -> None:
        super().__setstate__(state)
        self._attach()

    @property
    def query_embeddings(self) -> Embeddings:
        """The embeddings used for queries."""
        embeddings = self.embeddings or self.vectorstore.embeddings
        assert embeddings is not None  # noqa: S101 - guaranteed by the validator
        return embeddings

    @property
    def lexical_sync(self) -> LexicalSync | None:
        """The corpus index shared with the store's other users, when it has one."""
        return self._lexical

    def _written_meanwhile(self) -> Callable[[Sequence[str]], bool] | None:
        """Tells whether ids were written through the shared index from now on (None: none)."""
        sync = self._lexical
        if sync is None:
            return None
        return partial(sync.written_since, sync.version)

    def forget_cached(self, ids: Sequence[str]) -> None:
        """Drop what the candidate cache keeps of these documents (after they are deleted)."""
        self._cache.forget_groups(ids)

    def refresh_lexical_index(self) -> None:
        """Check the corpus index against the store on next use, after direct writes to it.

        Writes through :class:`~cogito_lc.MemoryStore` update the index themselves;
        writes made to the vector store directly are found by a count check at most
        once a second, or at the next search after this call.
        """
        if self._chroma_bm25 is not None:
            self._chroma_bm25.invalidate()
        if self._lexical is not None:
            self._lexical.check_now()

    def _cached_plan(self) -> SubqueryPlan | None:
        planned = self._plan
        return planned[1] if planned and planned[0] is self.query_embeddings else None

    def subquery_plan(self) -> SubqueryPlan:
        """How this retriever makes sub-query vectors.

        Planned once per embeddings object in a process (retrievers built per
        request share the plan); the INFO line about a slower path comes with
        the first plan only.
        """
        embeddings = self.query_embeddings
        with self._plan_lock:
            if self._plan is None or self._plan[0] is not embeddings:
                plan, new = shared_plan(embeddings, self.subquery_vectors)
                self._plan = (embeddings, plan)
                if new and plan.mode != "span" and self.subquery_vectors == "auto":
                    logger.info(
                        "RecallB makes sub-query vectors on the %s path, not span: %s. Fix: %s.",
                        plan.mode,
                        plan.reason,
                        plan.fix,
                    )
            return self._plan[1]

    def decompose(self, query: str) -> Decomposition:
        """The sub-queries this retriever searches with for ``query``."""
        return decompose_query(query, vocab_map=self.vocab_map, max_subqueries=self.max_subqueries)

    def _prepare(self, query: Any, kwargs: dict[str, Any]) -> tuple[Decomposition, _Keep, int]:
        reject_unknown_kwargs(
            f"{type(self).__name__}.invoke", kwargs.keys(), {"k", "as_of", "include_superseded"}
        )
        check_query(query)
        k = check_positive_int(kwargs.get("k", self.k), name="k")
        return self.decompose(query), self._versions(kwargs), k

    def _versions(self, kwargs: Mapping[str, Any]) -> _Keep:
        """The metadata predicate of the versions this call returns (None: all)."""
        as_of = kwargs.get("as_of", self.as_of)
        include = kwargs.get("include_superseded", self.include_superseded)
        when = None if as_of is None else check_as_of(as_of)
        return version_filter(as_of=when, include_superseded=include)

    def _fetch_ks(self, decomposition: Decomposition, k: int, depth: int = 1) -> list[int]:
        """Candidates per vector run; ``depth`` times more, up to ``VERSION_SEARCH_DEPTH``."""
        fragments = len(decomposition.queries) - 1
        ks = [max(self.original_fetch_k, k)] + [self.fetch_k] * fragments
        return [min(fetch * depth, max(fetch, VERSION_SEARCH_DEPTH)) for fetch in ks]

    def _translated_kwargs(self) -> dict[str, Any]:
        """``search_kwargs`` with the filter in the form the store takes."""
        if "filter" not in self.search_kwargs:
            return self.search_kwargs
        native = store_filter(self.vectorstore, self.search_kwargs["filter"])
        return {**self.search_kwargs, "filter": native}

    def _pushdown(self) -> tuple[dict[str, Any], Callable[[Mapping[str, Any]], bool] | None]:
        """The search kwargs to send, and a metadata predicate to apply to results in code.

        On a store whose filtered search scans (Chroma, Qdrant's local mode) a
        ``where`` filter makes every sub-search scan the matching set;
        when a simple equality filter (a scope) matched the whole collection at
        the last freshness check, the searches run unfiltered and the same
        filter is applied to their results here, so a document written outside
        the filter since the check can never come back.
        """
        where = self.search_kwargs.get("filter")
        predicate = equality_predicate(where)
        if (
            predicate is None
            or not self._store.filtered_search_scans
            or self._lexical is None
            or self.search_kwargs.get("where_document")
            or not self._lexical.covers_all(where)
        ):
            return self._translated_kwargs(), None
        return {k: v for k, v in self.search_kwargs.items() if k != "filter"}, predicate

    def _where_filter(self) -> Mapping[str, Any] | None:
        """The ``where`` dict of ``search_kwargs`` (None when there is none, or a function)."""
        where = self.search_kwargs.get("filter")
        return where if isinstance(where, Mapping) else None

    def _small_scope(self, search_kwargs: dict[str, Any]) -> list[str] | None:
        """The ids of the filter's scope when it is small enough to rank exactly, else None."""
        where = search_kwargs.get("filter")
        if (
            self.exact_scope_limit <= 0
            or not isinstance(where, dict)
            or set(search_kwargs) != {"filter"}
            or self._lexical is None
            or not self._store.searches_within
        ):
            return None
        return self._lexical.ids_within(where, self.exact_scope_limit)

    def lexical_query(self, query: str) -> str:
        """The query the corpus BM25 search runs with: ``query`` without ``lexical_stop_words``."""
        if not self.lexical_stop_words:
            return query
        return lexical_query(query, self.lexical_stop_words)

    def lexical_search_query(self, query: str) -> str:
        """What the corpus BM25 index is searched with: :meth:`lexical_query`, inflected."""
        stripped = self.lexical_query(query)
        if not self.lexical_inflections:
            return stripped
        return inflect_query(stripped, exclude=self.lexical_stop_words)

    def _lexical_hits(self, query: str) -> _LexicalRun | None:
        if not query.strip() or not self._lexical_weighted():
            return None
        where = self.search_kwargs.get("filter")
        if isinstance(self.lexical_index, Bm25Index):
            return _LexicalRun(self.lexical_index, query, None)
        if self.lexical_index is not None:
            return _LexicalRun(self.lexical_index, query, where)
        if self._chroma_bm25 is not None:
            index = self._chroma_bm25.index_for(where, self.search_kwargs.get("where_document"))
            return _LexicalRun(index, query, None)
        if self._lexical is not None:
            return _LexicalRun(self._lexical, query, where)
        return None

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        decomposition, keep, k = self._prepare(query, kwargs)
        original = decomposition.queries[0]
        # The lexical run needs no vector: it runs in a thread while the query is
        # embedded on a core fewer (and searched, unless the store reads its documents
        # with the vector runs' in one call, which then waits for it).
        beside = self._lexical_beside_search()
        lexical: _Lexical | Future[_Lexical] = (
            _lexical_pool().submit(self._lexical_run, original)
            if beside
            else self._lexical_run(original)
        )
        with _abandoned_on_error(lexical):
            plan = self.subquery_plan()
            queries = decomposition.queries
            vectors = embed_with_plan(plan, self.query_embeddings, queries, spare_core=beside)
            if isinstance(lexical, Future) and self._store.reads_by_id:
                lexical = lexical.result()
            docs, found = self._recall(
                decomposition, plan, vectors, lexical, k, copies=True, keep=keep
            )
        if not _search.confirm(self._store, docs, found, self._cache):
            self.refresh_lexical_index()
            meanwhile = self._written_meanwhile()
            lexical = self._lexical_run(decomposition.queries[0])
            docs, found = self._recall(
                decomposition, plan, vectors, lexical, k, copies=False, keep=keep
            )
            docs = _search.settle(self._store, docs, found, meanwhile)
        data = _event_data(docs, decomposition, plan, found)
        dispatch_custom_event(RECALL_B_EVENT, data, config={"callbacks": run_manager.get_child()})
        return docs

    def _recall(
        self,
        decomposition: Decomposition,
        plan: SubqueryPlan,
        vectors: Vector,
        lexical: _Lexical | Future[_Lexical],
        k: int,
        *,
        copies: bool,
        keep: _Keep = None,
    ) -> tuple[list[Document], _search.SearchResult]:
        """Search, fuse and rank; with ``copies``, documents the cache holds are not read.

        ``keep`` drops the candidates of versions this call does not return; when
        that leaves a full vector run short, the searches run again deeper (see
        :meth:`_depths`). A lexical run still under way is waited for once the
        vector searches are done.
        """
        corpus_top = _corpus_documents(lexical)
        search_kwargs, post_filter = self._pushdown()
        within = self._small_scope(search_kwargs)
        shared = self._search_arguments(search_kwargs, copies and post_filter is None, within)
        for fetch_ks, deeper in self._depths(decomposition, k):
            found = _search.search(
                self._store,
                decomposition.queries,
                vectors,
                fetch_ks=fetch_ks,
                lexical=corpus_top,
                **shared,
            )
            hits = (lexical.result() if isinstance(lexical, Future) else lexical)[0]
            if not self._settle_lexical(found, hits, post_filter, keep, fetch_ks) or not deeper:
                break
        _search.fill_vectors(
            self._store, self.query_embeddings, found, self._cache, self._where_filter()
        )
        return self._rank(decomposition, plan, vectors[0], found, hits, k), found

    def _search_arguments(
        self, search_kwargs: dict[str, Any], copies: bool, within: list[str] | None
    ) -> dict[str, Any]:
        """The arguments every depth's search of one recall shares."""
        return {
            "search_kwargs": search_kwargs,
            "cache": self._cache,
            "copies": copies,
            "within": within,
        }

    def _depths(self, decomposition: Decomposition, k: int) -> Iterator[tuple[list[int], bool]]:
        """Each search depth's candidates per run, and whether a deeper one follows.

        Versions a call does not return (superseded ones, say) are dropped after
        the search, so many of them near the query would otherwise leave it with
        fewer candidates than a store holding only the returned versions gives,
        or none. Each depth asks ``VERSION_SEARCH_GROWTH`` times more, up to
        ``VERSION_SEARCH_DEPTH``.
        """
        depth = 1
        fetch_ks = self._fetch_ks(decomposition, k)
        while True:
            deeper = self._fetch_ks(decomposition, k, depth * VERSION_SEARCH_GROWTH)
            yield fetch_ks, deeper != fetch_ks
            fetch_ks, depth = deeper, depth * VERSION_SEARCH_GROWTH

    def _settle_lexical(
        self,
        found: _search.SearchResult,
        hits: _LexicalRun | None,
        post_filter: _Keep,
        keep: _Keep,
        fetch_ks: Sequence[int],
    ) -> bool:
        """Filter the pool, take the lexical run's vectors, and note a stale index.

        Returns:
            Whether the filters left a full vector run short: a deeper search finds more.
        """
        if hits is not None:
            _search.add_vectors(found, hits.read)
        full = [len(run) >= fetch for run, fetch in zip(found.vector_runs, fetch_ks, strict=False)]
        for predicate in (post_filter, keep):
            if predicate is not None:
                found.keep(predicate)
        if found.lexical_stale:
            logger.debug("the corpus index is behind the store: checking it at the next search")
            self.refresh_lexical_index()
        return any(
            was_full and len(run) < fetch
            for was_full, run, fetch in zip(full, found.vector_runs, fetch_ks, strict=False)
        )

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        decomposition, keep, k = self._prepare(query, kwargs)
        loop = asyncio.get_running_loop()
        original = decomposition.queries[0]
        beside = self._lexical_beside_search()
        lexical: _Lexical | asyncio.Future[_Lexical] = (
            loop.run_in_executor(None, self._lexical_run, original)
            if beside
            else await loop.run_in_executor(None, self._lexical_run, original)
        )
        with _abandoned_on_error(lexical):
            plan, vectors = await self._aplan_vectors(decomposition, spare_core=beside)
            if isinstance(lexical, asyncio.Future) and self._store.reads_by_id:
                lexical = await lexical
            docs, found = await self._arecall(
                decomposition, plan, vectors, lexical, k, copies=True, keep=keep
            )
        confirmed = await loop.run_in_executor(
            None, _search.confirm, self._store, docs, found, self._cache
        )
        if not confirmed:
            self.refresh_lexical_index()
            meanwhile = self._written_meanwhile()
            lexical = await loop.run_in_executor(None, self._lexical_run, original)
            docs, found = await self._arecall(
                decomposition, plan, vectors, lexical, k, copies=False, keep=keep
            )
            docs = await loop.run_in_executor(
                None, _search.settle, self._store, docs, found, meanwhile
            )
        data = _event_data(docs, decomposition, plan, found)
        config = {"callbacks": run_manager.get_child()}
        await adispatch_custom_event(RECALL_B_EVENT, data, config=config)  # type: ignore[arg-type]
        return docs

    async def _aplan_vectors(
        self, decomposition: Decomposition, *, spare_core: bool = False
    ) -> tuple[SubqueryPlan, Vector]:
        plan = self._cached_plan()
        if plan is None:
            loop = asyncio.get_running_loop()
            plan = await loop.run_in_executor(None, self.subquery_plan)
        queries = decomposition.queries
        vectors = await aembed_with_plan(
            plan, self.query_embeddings, queries, spare_core=spare_core
        )
        return plan, vectors

    async def _arecall(
        self,
        decomposition: Decomposition,
        plan: SubqueryPlan,
        vectors: Vector,
        lexical: _Lexical | asyncio.Future[_Lexical],
        k: int,
        *,
        copies: bool,
        keep: _Keep = None,
    ) -> tuple[list[Document], _search.SearchResult]:
        """Async :meth:`_recall`."""

        async def awaited_top() -> list[Document]:
            return (await lexical)[1] if isinstance(lexical, asyncio.Future) else lexical[1]

        corpus_top = awaited_top if isinstance(lexical, asyncio.Future) else lexical[1]
        loop = asyncio.get_running_loop()
        search_kwargs, post_filter = await loop.run_in_executor(None, self._pushdown)
        within = await loop.run_in_executor(None, self._small_scope, search_kwargs)
        shared = self._search_arguments(search_kwargs, copies and post_filter is None, within)
        for fetch_ks, deeper in self._depths(decomposition, k):
            found = await _search.asearch(
                self._store,
                decomposition.queries,
                vectors,
                fetch_ks=fetch_ks,
                lexical=corpus_top,
                **shared,
            )
            hits = (await lexical if isinstance(lexical, asyncio.Future) else lexical)[0]
            if not self._settle_lexical(found, hits, post_filter, keep, fetch_ks) or not deeper:
                break
        await _search.afill_vectors(
            self._store, self.query_embeddings, found, self._cache, self._where_filter()
        )
        # Ranking reads the lexical scores of the pool from the index.
        ranked = await loop.run_in_executor(
            None, self._rank, decomposition, plan, vectors[0], found, hits, k
        )
        return ranked, found

    def _lexical_beside_search(self) -> bool:
        """Whether the lexical run goes to a thread while the query is embedded and searched.

        So when a recall runs one (an index, and a weight that uses it). The
        forward pass then leaves it a core: one spread over every core waits on
        the core the lexical run took.
        """
        has_index = (
            self.lexical_index is not None
            or self._chroma_bm25 is not None
            or self._lexical is not None
        )
        return has_index and self._lexical_weighted()

    def _lexical_weighted(self) -> bool:
        """Whether a weight uses the corpus lexical run (its top, its scores or its blend)."""
        return self.corpus_bm25_weight > 0 or self.bm25_weight > 0 or self.lexical_blend_weight > 0

    def _lexical_run(self, query: str) -> tuple[_LexicalRun | None, list[Document]]:
        """The corpus lexical run for ``query`` (without stop words) and its top documents."""
        hits = self._lexical_hits(self.lexical_search_query(query))
        return hits, self._corpus_top(hits)

    def _corpus_top(self, hits: _LexicalRun | None) -> list[Document]:
        if hits is None or self.corpus_bm25_weight <= 0:
            return []
        return hits.top(self.corpus_bm25_k)

    def _rank(
        self,
        decomposition: Decomposition,
        plan: SubqueryPlan,
        query_vector: Vector,
        found: _search.SearchResult,
        hits: _LexicalRun | None,
        k: int,
    ) -> list[Document]:
        if not found.pool:
            return []
        keys = list(found.pool)
        query = self.lexical_query(decomposition.queries[0])
        fused = self._fuse(query, found, hits, keys)
        matrix = np.stack([found.vectors[key] for key in keys])
        cosines = cosine_scores(query_vector, matrix)
        if self._below_floor(cosines):
            logger.debug("RecallB score floor: best cosine %.3f, nothing returned", cosines.max())
            return []
        scores = self._lexical_blend(query, blend(cosines, fused, self.cosine_weight), hits, keys)
        pool = [found.pool[key] for key in keys]
        scores = self._recency(decomposition.queries[0], scores, cosines, matrix, pool)
        order = np.argsort(-scores, kind="stable")[:k]
        method = _method_tag(decomposition, found)
        return [
            _annotate(
                found.pool[keys[i]],
                {
                    "score": float(scores[i]),
                    "cosine": float(cosines[i]),
                    "rrf": float(fused[i]),
                    "rank": rank,
                    "method": method,
                    "subquery_vectors": plan.mode,
                },
            )
            for rank, i in enumerate(order, start=1)
        ]

    def _recency(
        self, query: str, scores: Vector, cosines: Vector, matrix: Vector, pool: list[Document]
    ) -> Vector:
        """``scores`` after the recency step (see ``recency_trigger``)."""
        return recency_step(
            query,
            scores,
            cosines,
            matrix,
            [doc.metadata.get("created_at") for doc in pool],
            trigger=self.recency_trigger,
            margin=self.recency_margin,
            similarity=self.recency_similarity,
            basis=self.recency_basis,
            depth=self.recency_depth,
            chain=self.recency_chain,
        )

    def _fuse(
        self,
        query: str,
        found: _search.SearchResult,
        hits: _LexicalRun | None,
        keys: list[str],
    ) -> Vector:
        runs = list(found.vector_runs)
        weights = [self.original_weight] + [self.fragment_weight] * (len(runs) - 1)
        runs.append(found.lexical_run)
        weights.append(self._lexical_weight(hits, found.lexical_run))
        if self.bm25_weight > 0:
            runs.append(self._pool_bm25_run(query, found, hits, keys))
            weights.append(self.bm25_weight)
        fused_by_key = reciprocal_rank_fusion(runs, weights=weights, k=self.rrf_k)
        return np.asarray([fused_by_key.get(key, 0.0) for key in keys], np.float32)

    def _lexical_weight(self, hits: _LexicalRun | None, lexical_run: list[str]) -> float:
        if self.lexical_floor >= 1.0 or hits is None or not lexical_run:
            return self.corpus_bm25_weight
        scores = hits.scores(lexical_run[:2])
        top = [scores.get(key, 0.0) for key in lexical_run[:2]]
        return adaptive_lexical_weight(self.corpus_bm25_weight, top, self.lexical_floor)

    def _lexical_blend(
        self, query: str, scores: Vector, hits: _LexicalRun | None, keys: list[str]
    ) -> Vector:
        if self.lexical_blend_weight <= 0 or hits is None:
            return scores
        raw = hits.scores(keys)
        return lexical_blend(
            scores,
            [raw.get(key, 0.0) for key in keys],
            query_terms(query),
            self.lexical_blend_weight,
            self.lexical_blend_shift,
        )

    @staticmethod
    def _pool_bm25_run(
        query: str, found: _search.SearchResult, hits: _LexicalRun | None, keys: list[str]
    ) -> list[str]:
        if hits is None:
            return bm25_run(query, keys, [found.pool[key].page_content for key in keys])
        scores = hits.scores(keys)
        scored = [(scores.get(key, 0.0), key) for key in keys]
        return [key for score, key in sorted(scored, key=lambda item: -item[0]) if score > 0]

    def _below_floor(self, cosines: Vector) -> bool:
        if self.score_floor is None:
            return False
        ordered = np.sort(cosines)[::-1]
        best = float(ordered[0])
        runner_up = float(ordered[1]) if len(ordered) > 1 else -1.0
        return best < self.score_floor and best - runner_up < self.standout_margin


class _LexicalRun:
    """One query's corpus BM25 run over whichever index the retriever searches.

    Scores already known (the top documents') are not asked of the index again.
    """

    def __init__(
        self, index: Bm25Index | LexicalIndex | LexicalSync, query: str, where: Any
    ) -> None:
        self._index = index
        self._query = query
        self._where = where
        self._hits = index.hits(query) if isinstance(index, Bm25Index) else None
        self._known: dict[str, float] = {}
        self.read: dict[str, tuple[str, Vector]] = {}
        """The text and stored vector of each top document read with them, by id."""

    def top(self, k: int) -> list[Document]:
        """The ``k`` best documents; documents sharing no word with the query are left out."""
        if self._hits is not None:
            return self._hits.top(k)
        assert not isinstance(self._index, Bm25Index)  # noqa: S101 - set in __init__
        if isinstance(self._index, LexicalSync | PostgresLexicalIndex):
            found, vectors = self._index.search_with_vectors(self._query, k, self._where)
            self.read = {
                doc.id: (doc.page_content, vectors[doc.id]) for doc, _ in found if doc.id in vectors
            }
        else:
            found = self._index.search(self._query, k, self._where)
        self._known.update((document_key(doc), score) for doc, score in found)
        return [doc for doc, _ in found]

    def scores(self, keys: list[str]) -> dict[str, float]:
        """The score of each document with these keys (0.0 when it shares no word)."""
        if self._hits is not None:
            return self._hits.scores(keys)
        assert not isinstance(self._index, Bm25Index)  # noqa: S101 - set in __init__
        unknown = [key for key in keys if key not in self._known]
        if unknown:
            self._known.update(self._index.scores(self._query, unknown, self._where))
        return {key: self._known[key] for key in keys}


_Lexical = tuple[_LexicalRun | None, list[Document]]
"""A lexical run and its top documents."""

_lexical_threads: list[Executor] = []
_lexical_threads_lock = threading.Lock()


_FIELD_OF_SEARCH_KWARG = {
    "k": "k",
    "fetch_k": "fetch_k",
    "score_threshold": "score_floor",
    "lambda_mult": None,
    "search_type": None,
}
"""``search_kwargs`` keys of LangChain's ``VectorStoreRetriever`` and RecallB's field for each."""


def _check_search_kwargs(search_kwargs: Mapping[str, Any]) -> None:
    """Refuse a ``VectorStoreRetriever`` option the store's searches would be handed.

    Raises:
        TypeError: Naming the key and the RecallB field that does its work.
    """
    for key, field_name in _FIELD_OF_SEARCH_KWARG.items():
        if key not in search_kwargs:
            continue
        instead = f"pass {field_name}=... to RecallB" if field_name else "leave it out"
        msg = (
            f"search_kwargs[{key!r}] is a VectorStoreRetriever option, not a filter for the "
            f"store's searches: {instead}."
        )
        raise TypeError(msg)


def _lexical_pool() -> Executor:
    """The threads lexical runs wait for the database on, beside the vector searches."""
    with _lexical_threads_lock:
        if not _lexical_threads:
            _lexical_threads.append(
                ContextThreadPoolExecutor(max_workers=8, thread_name_prefix="cogito-lexical")
            )
        return _lexical_threads[0]


@contextlib.contextmanager
def _abandoned_on_error(
    lexical: _Lexical | Future[_Lexical] | asyncio.Future[_Lexical],
) -> Iterator[None]:
    """Cancel a lexical run still waiting for a thread when the search fails.

    A run already under way finishes on its own connection; its result is
    dropped with the failed recall.
    """
    try:
        yield
    except BaseException:
        if isinstance(lexical, Future | asyncio.Future):
            lexical.cancel()
        raise


def _corpus_documents(
    lexical: _Lexical | Future[_Lexical],
) -> list[Document] | Callable[[], list[Document]]:
    """The lexical run's documents, or a function waiting for them when it is under way."""
    if isinstance(lexical, Future):
        pending = lexical
        return lambda: pending.result()[1]
    return lexical[1]


def _method_tag(decomposition: Decomposition, found: _search.SearchResult) -> str:
    return decomposition.method + ("_t" if found.text_search else "")


def _event_data(
    docs: list[Document],
    decomposition: Decomposition,
    plan: SubqueryPlan,
    found: _search.SearchResult,
) -> dict[str, Any]:
    return {
        "method": _method_tag(decomposition, found),
        "subquery_vectors": plan.mode,
        "subquery_reason": plan.reason,
        "returned": len(docs),
        "subqueries": list(decomposition.queries),
        "found_by": _found_by(docs, found),
    }


def _found_by(docs: list[Document], found: _search.SearchResult) -> list[list[dict[str, Any]]]:
    """For each returned document, the runs that found it: ``run``, ``subquery``, ``rank``."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for index, run in enumerate(found.vector_runs):
        for rank, key in enumerate(run, start=1):
            runs.setdefault(key, []).append({"run": "vector", "subquery": index, "rank": rank})
    for rank, key in enumerate(found.lexical_run, start=1):
        runs.setdefault(key, []).append({"run": "lexical", "subquery": 0, "rank": rank})
    return [runs.get(document_key(doc), []) for doc in docs]


def _annotate(document: Document, details: dict[str, Any]) -> Document:
    return Document(
        page_content=document.page_content,
        metadata={**document.metadata, METADATA_KEY: details},
        id=document.id,
    )
