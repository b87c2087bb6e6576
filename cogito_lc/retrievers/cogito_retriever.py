"""``CogitoRetriever``: two-stage recall, RecallB for the pool and a PointerFilter to choose.

Stage 1 (:class:`~cogito_lc.RecallB`, no LLM) gathers a pool of up to 100
candidates; stage 2 (:class:`~cogito_lc.PointerFilter`) lets a chat
model point at the relevant ones by number. What comes back are the stored
documents, at most ``k`` of them.

The *method tag* of a run joins the two stages' tags with ``|`` (for example
``decompose_6_v|filter`` or ``decompose_4|skipped_confident``); it is reported in
the custom event :data:`RETRIEVAL_EVENT` and in every returned document's
``metadata["cogito"]`` dict, under ``method``, next to ``filter_method`` and
RecallB's scores. :data:`~cogito_lc.METADATA_KEY` lists every tag and key.
"""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
    adispatch_custom_event,
    dispatch_custom_event,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator

from cogito_lc._core.metadata import METADATA_KEY
from cogito_lc._core.timestamps import parse_since, parse_timestamp
from cogito_lc._core.validation import (
    RejectUnknownFields,
    check_positive_int,
    check_query,
    reject_unknown_kwargs,
)
from cogito_lc.document_compressors.pointer_filter import (
    FILTER_METHOD_KEY,
    FilterMethod,
    PointerFilter,
)
from cogito_lc.prompts.registry import PromptLike, PromptRegistry
from cogito_lc.retrievers.recall_b import RecallB

__all__ = [
    "CANDIDATES_EVENT",
    "CREATED_AT_KEY",
    "RETRIEVAL_EVENT",
    "ROUTED_KEYWORDS",
    "CogitoRetriever",
    "FilterWhen",
]

logger = logging.getLogger(__name__)

CANDIDATES_EVENT = "cogito_lc.candidates"
"""Name of the custom event dispatched when stage 1 is ready, before the model is called.

Its data is a dict with ``name``, ``recall_method`` (stage 1's tag), ``ids`` (the
candidates' ids, best first, at most ``k``), ``documents`` (those candidates) and
``pool`` (how many stage 1 found). A client can show stage 1 at once and the
final order when :data:`RETRIEVAL_EVENT` arrives (``astream_events``).
"""

RETRIEVAL_EVENT = "cogito_lc.retrieval"
"""Name of the custom event dispatched at the end of every :class:`CogitoRetriever` run.

Its data is a dict with ``name``, ``method`` (the run's tag, such as
``decompose_6|filter``), ``recall_method`` (stage 1's tag), ``filter_method``
(stage 2's), ``pool`` (candidates from stage 1), ``eligible`` (left after
``since``) and ``returned``.
"""

CREATED_AT_KEY = "created_at"
"""Metadata key holding when a memory was stored (ISO 8601, UTC), read by ``since``."""

ROUTED_KEYWORDS: tuple[str, ...] = (
    "when",
    "what time",
    "what year",
    "what month",
    "what day",
    "what date",
    "which year",
    "which month",
    "which day",
    "how many",
    "how much",
    "how often",
    "how long",
    "how old",
    "before",
    "after",
    "first",
    "last",
    "earliest",
    "latest",
    "most recent",
    "recently",
    "ago",
    "since",
    "until",
    "during",
    "times",
    "number of",
    "count",
    "date",
    "year",
    "month",
    "week",
    "yesterday",
    "today",
    "tomorrow",
)
"""Words and phrases that mark a temporal or counting question for ``filter_when="routed"``."""

FilterWhen = Literal["always", "low_confidence", "routed"]
"""When stage 2 calls the model: on every query, only when stage 1 is unsure, or only for
temporal and counting questions."""

SKIPPED_CONFIDENT = "skipped_confident"
SKIPPED_UNROUTED = "skipped_unrouted"
SKIPPED_EMPTY = FilterMethod.SKIPPED_EMPTY.value
_TAG_SEPARATOR = "|"


@dataclass(frozen=True)
class _Call:
    query: str
    k: int
    since: datetime | None
    versions: dict[str, Any] = field(default_factory=dict)
    """``as_of`` and ``include_superseded`` as given, for stage 1."""


_VERSION_READS = ("as_of", "include_superseded")
"""The per-call read options of :class:`RecallB` that choose which versions are read."""


@dataclass(frozen=True)
class _Pool:
    documents: list[Document]
    eligible: list[Document]
    recall_method: str


class CogitoRetriever(RejectUnknownFields, BaseRetriever):
    """Two-stage recall with a fidelity guarantee: RecallB, then an integer-pointer filter.

    RecallB gathers ``pool_size`` candidates without an LLM; memories older than
    ``since`` are dropped; the :class:`~cogito_lc.PointerFilter` asks
    its chat model which candidates answer the query, by number only, and at most
    ``k`` of the stored documents come back unchanged (scores and method tags aside,
    under ``metadata["cogito"]``). ``filter_when`` trades cost for quality: call the
    model on every query, only when stage 1 is unsure, or only for temporal and
    counting questions. Method tags are listed under :data:`~cogito_lc.METADATA_KEY`.

    Example:
        ```python
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_core.language_models import FakeListChatModel
        from langchain_core.vectorstores import InMemoryVectorStore

        from cogito_lc import CogitoRetriever

        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
        store.add_texts(
            ["Auth tokens expire after 3600 seconds.", "We chose PostgreSQL for billing."],
            ids=["auth", "db"],
        )
        llm = FakeListChatModel(responses=['{"ids": [1]}'])  # any chat model
        retriever = CogitoRetriever.from_llm(store, llm, k=3)
        docs = retriever.invoke("how long do auth tokens last?")
        docs[0].page_content  # 'Auth tokens expire after 3600 seconds.'
        docs[0].metadata["cogito"]["method"]  # 'decompose_4|filter'
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    recall_b: RecallB
    """Stage 1: the zero-LLM retriever that gathers the candidate pool."""

    pointer_filter: PointerFilter = Field(default_factory=PointerFilter)
    """Stage 2: the filter; without a chat model every run is ``fallback_no_llm``."""

    k: int = Field(default=10, ge=1)
    """Most documents returned; can be overridden per call with ``invoke(query, k=...)``."""

    pool_size: int = Field(default=50, ge=1, le=100)
    """Candidates stage 1 is asked for and passes to stage 2 (at most 100); RecallB's own
    ``k`` is not used."""

    since: datetime | None = None
    """Keep only memories whose ``created_at`` is at or after this instant (ISO 8601 string
    or datetime; naive values are UTC). Memories without a readable ``created_at`` are
    dropped while it is set. Can be overridden per call with ``invoke(query, since=...)``."""

    filter_when: FilterWhen = "always"
    """``always`` calls the model on every query; ``low_confidence`` only when stage 1's
    top two blended scores are within ``confidence_margin``; ``routed`` only for
    temporal and counting questions (see ``route_keywords``)."""

    confidence_margin: float = Field(default=0.1, ge=0.0)
    """Gap between stage 1's top two blended scores (0..1 scale) up to which
    ``low_confidence`` calls the model. On the LoCoMo development split the default
    sends about 40% of questions to the model, and those hold most of stage 1's
    rank-1 misses."""

    route_keywords: tuple[str, ...] = ROUTED_KEYWORDS
    """Words and phrases (matched as whole words, case-insensitive) that send a query to
    the model when ``filter_when="routed"``."""

    _route_pattern: re.Pattern[str] = PrivateAttr()

    @field_validator("since", mode="before")
    @classmethod
    def _parse_since(cls, value: Any) -> datetime | None:
        return None if value is None else parse_since(value)

    @model_validator(mode="after")
    def _finish_setup(self) -> CogitoRetriever:
        self._route_pattern = _route_pattern(self.route_keywords)
        shown = self.pointer_filter.max_candidates
        if self.pool_size > shown and not self.pointer_filter.keep_unranked:
            warnings.warn(
                f"pool_size={self.pool_size} exceeds the filter's max_candidates={shown}: "
                "candidates past it are never returned when the filter answers. Lower "
                "pool_size or set keep_unranked=True on the PointerFilter.",
                stacklevel=2,
            )
        return self

    @classmethod
    def from_llm(
        cls,
        source: VectorStore | RecallB,
        llm: Runnable[Any, Any] | None,
        *,
        prompt: PromptLike | None = None,
        registry: PromptRegistry | None = None,
        **fields: Any,
    ) -> CogitoRetriever:
        """Create a two-stage retriever over a vector store (or a configured RecallB).

        Args:
            source: The vector store to search, or a RecallB to use as stage 1.
            llm: Chat model for the filter; ``None`` returns stage 1's order
                (``fallback_no_llm``).
            prompt: Filter prompt instead of the registry's ``pointer_filter`` entry.
            registry: Registry to take the default filter prompt from.
            **fields: Fields of the retriever (``k``, ``pool_size``, ``since``,
                ``filter_when``, ...) and of the filter (``timeout``, ``top_n``,
                ``max_candidates``, ``structured_output``, ...).

        Returns:
            The retriever.

        Raises:
            TypeError: If a keyword is a field of neither, or ``source`` is neither a
                vector store nor a RecallB.
        """
        recall_b = _as_recall_b(source)
        filter_fields = set(PointerFilter.model_fields) - {"llm", "prompt", "name"}
        filter_kwargs = {key: fields.pop(key) for key in list(fields) if key in filter_fields}
        reject_unknown_kwargs(
            f"{cls.__name__}.from_llm",
            fields.keys(),
            (set(cls.model_fields) | filter_fields) - {"recall_b", "pointer_filter"},
        )
        pointer_filter = PointerFilter.from_llm(
            llm, prompt=prompt, registry=registry, **filter_kwargs
        )
        return cls(recall_b=recall_b, pointer_filter=pointer_filter, **fields)

    def is_routed(self, query: str) -> bool:
        """Whether ``filter_when="routed"`` sends ``query`` to the model."""
        return self._route_pattern.search(query) is not None

    def _call(self, query: Any, kwargs: dict[str, Any]) -> _Call:
        accepted = {"k", "since", *_VERSION_READS}
        reject_unknown_kwargs(f"{type(self).__name__}.invoke", kwargs.keys(), accepted)
        check_query(query)
        k = check_positive_int(kwargs.get("k", self.k), name="k")
        since = parse_since(kwargs["since"]) if kwargs.get("since") is not None else self.since
        versions = {key: kwargs[key] for key in _VERSION_READS if key in kwargs}
        return _Call(query, k, since, versions)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        call = self._call(query, kwargs)
        found = self.recall_b.invoke(
            call.query, {"callbacks": run_manager.get_child()}, k=self.pool_size, **call.versions
        )
        pool = self._pool(call, found)
        dispatch_custom_event(
            CANDIDATES_EVENT,
            self._candidates(call, pool),
            config={"callbacks": run_manager.get_child()},
        )
        skip = self._skip_reason(call.query, pool.eligible)
        if skip is not None:
            docs, filter_method = pool.eligible[: call.k], skip
        else:
            result = self.pointer_filter.invoke_with_result(
                {"query": call.query, "documents": pool.eligible},
                {"callbacks": run_manager.get_child()},
                top_n=self._top_n(call),
            )
            docs, filter_method = result.documents[: call.k], result.method.value
        data = self._finish(docs, pool, filter_method)
        dispatch_custom_event(RETRIEVAL_EVENT, data, config={"callbacks": run_manager.get_child()})
        return docs

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        call = self._call(query, kwargs)
        found = await self.recall_b.ainvoke(
            call.query, {"callbacks": run_manager.get_child()}, k=self.pool_size, **call.versions
        )
        pool = self._pool(call, found)
        await adispatch_custom_event(
            CANDIDATES_EVENT,
            self._candidates(call, pool),
            config={"callbacks": run_manager.get_child()},
        )
        skip = self._skip_reason(call.query, pool.eligible)
        if skip is not None:
            docs, filter_method = pool.eligible[: call.k], skip
        else:
            result = await self.pointer_filter.ainvoke_with_result(
                {"query": call.query, "documents": pool.eligible},
                {"callbacks": run_manager.get_child()},
                top_n=self._top_n(call),
            )
            docs, filter_method = result.documents[: call.k], result.method.value
        data = self._finish(docs, pool, filter_method)
        await adispatch_custom_event(
            RETRIEVAL_EVENT, data, config={"callbacks": run_manager.get_child()}
        )
        return docs

    def _pool(self, call: _Call, found: list[Document]) -> _Pool:
        recall_method = _recall_method(found) or self.recall_b.decompose(call.query).method
        eligible = found if call.since is None else _since(found, call.since)
        return _Pool(found, eligible, recall_method)

    def _candidates(self, call: _Call, pool: _Pool) -> dict[str, Any]:
        top = pool.eligible[: call.k]
        return {
            "name": self.get_name(),
            "recall_method": pool.recall_method,
            "ids": [doc.id for doc in top],
            "documents": [_as_of_now(doc) for doc in top],  # stage 2 tags its own
            "pool": len(pool.documents),
        }

    def _skip_reason(self, query: str, pool: Sequence[Document]) -> str | None:
        if not pool:
            return SKIPPED_EMPTY
        if self.filter_when == "low_confidence" and self._confident(pool):
            return SKIPPED_CONFIDENT
        if self.filter_when == "routed" and not self.is_routed(query):
            return SKIPPED_UNROUTED
        return None

    def _confident(self, pool: Sequence[Document]) -> bool:
        if len(pool) < 2:
            return True
        first, second = _score(pool[0]), _score(pool[1])
        if first is None or second is None:
            return False
        return first - second > self.confidence_margin

    def _top_n(self, call: _Call) -> int:
        own = self.pointer_filter.top_n
        return call.k if own is None else min(own, call.k)

    def _finish(self, docs: list[Document], pool: _Pool, filter_method: str) -> dict[str, Any]:
        method = f"{pool.recall_method}{_TAG_SEPARATOR}{filter_method}"
        for doc in docs:
            details = doc.metadata.get(METADATA_KEY)
            if isinstance(details, dict):
                details["method"] = method
                details[FILTER_METHOD_KEY] = filter_method
        logger.debug("%s: %s, %d of %d", self.get_name(), method, len(docs), len(pool.documents))
        return {
            "name": self.get_name(),
            "method": method,
            "recall_method": pool.recall_method,
            "filter_method": filter_method,
            "pool": len(pool.documents),
            "eligible": len(pool.eligible),
            "returned": len(docs),
        }


def _as_recall_b(source: Any) -> RecallB:
    if isinstance(source, RecallB):
        return source
    if isinstance(source, VectorStore):
        return RecallB(vectorstore=source)
    msg = (
        f"source must be a LangChain VectorStore or a RecallB, got {type(source).__name__}; "
        "pass the store holding the memories."
    )
    raise TypeError(msg)


def _route_pattern(keywords: Sequence[str]) -> re.Pattern[str]:
    phrases = [r"\s+".join(map(re.escape, keyword.split())) for keyword in keywords]
    phrases = [phrase for phrase in phrases if phrase]
    if not phrases:
        return re.compile(r"(?!x)x")  # matches nothing
    return re.compile(r"\b(?:" + "|".join(phrases) + r")\b", re.IGNORECASE)


def _details(document: Document) -> dict[str, Any] | None:
    details = document.metadata.get(METADATA_KEY)
    return details if isinstance(details, dict) else None


def _recall_method(documents: Sequence[Document]) -> str | None:
    details = _details(documents[0]) if documents else None
    method = details.get("method") if details else None
    return method if isinstance(method, str) else None


def _score(document: Document) -> float | None:
    details = _details(document)
    score = details.get("score") if details else None
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        return None
    return float(score)


def _since(documents: Sequence[Document], since: datetime) -> list[Document]:
    kept = []
    for document in documents:
        created = parse_timestamp(document.metadata.get(CREATED_AT_KEY))
        if created is not None and created >= since:
            kept.append(document)
    if len(kept) < len(documents):
        logger.debug("since=%s dropped %d candidates", since, len(documents) - len(kept))
    return kept


def _as_of_now(document: Document) -> Document:
    """A copy of ``document`` whose metadata and ``cogito`` dict later tagging leaves alone."""
    metadata = dict(document.metadata)
    details = metadata.get(METADATA_KEY)
    if isinstance(details, dict):
        metadata[METADATA_KEY] = dict(details)
    return document.model_copy(update={"metadata": metadata})
