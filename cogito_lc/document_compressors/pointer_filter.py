"""``PointerFilter``: an LLM picks relevant candidates by number; the stored documents come back.

The filter shows a chat model the candidates as ``[1] text``, ``[2] text``, ... and
asks for ONLY the relevant numbers, most relevant first, as ``{"ids": [...]}`` (a
bare array is read too). The
numbers are bounds-checked and dereferenced to the ``Document`` objects the
filter was given, and copies of those come back: the model's output never becomes
memory text, so what comes back is exactly what was stored, plus the tag below.

How a run went is its *method tag* (:class:`FilterMethod`; every tag of the
package is listed under :data:`~cogito_lc.METADATA_KEY`): when the model's answer
cannot be used, the candidates come back in their original (stage-1) order. The
tag is reported in three places:

- :class:`FilterResult`, returned by :meth:`PointerFilter.invoke_with_result`;
- the custom event :data:`FILTER_EVENT`, dispatched inside every run and seen by
  callback handlers' ``on_custom_event`` and by ``astream_events``;
- each returned document's ``metadata["cogito"]`` dict
  (:data:`~cogito_lc.METADATA_KEY`), under ``filter_method``, with
  ``filter_rank`` (the 1-based position in the model's answer, ``None`` for a
  document not ranked by the model).

Each returned document is a copy of the one given, with the same ``page_content``,
``id`` and metadata, and a new ``cogito`` dict with these two keys added. The
documents given are never changed: two runs over the same documents (or documents
sharing one metadata template) each keep their own tags. No other metadata key is
read or written.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.exceptions import OutputParserException
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableConfig, RunnableSerializable
from pydantic import ConfigDict, Field
from typing_extensions import TypedDict

from cogito_lc._core.identity import document_key
from cogito_lc._core.metadata import METADATA_KEY
from cogito_lc._core.structured_output import StructuredOutputMode
from cogito_lc._core.validation import (
    RejectUnknownFields,
    check_documents,
    check_positive_int,
    check_query,
)
from cogito_lc.document_compressors._pointer_call import (
    PointerBuilder,
    PointerCaller,
    PointerQuestion,
    PointerReply,
    model_failure,
)
from cogito_lc.document_compressors._pointers import (
    CandidateBlock,
    ParsedPointers,
    PointerParseError,
    parse_pointers,
    pointer_model,
    render_candidates,
)
from cogito_lc.prompts.registry import PromptLike, PromptRegistry, resolve_prompt

__all__ = [
    "FILTER_EVENT",
    "POINTER_FILTER_PROMPT",
    "FilterMethod",
    "FilterResult",
    "PointerFilter",
    "PointerFilterBuilder",
    "PointerFilterInput",
    "PointerOutputParser",
]

logger = logging.getLogger(__name__)

POINTER_FILTER_PROMPT = "pointer_filter"
"""Registry name of the default prompt (variables ``query`` and ``candidates``)."""

FILTER_EVENT = "cogito_lc.pointer_filter"
"""Name of the custom event dispatched at the end of every filter run.

Its data is a dict with ``name`` (the runnable's name), ``method`` (the tag),
``candidates`` (documents given), ``shown`` (numbered for the model), ``selected``
(valid pointers in the answer), ``rejected`` (items of the answer not kept),
``returned``, ``structured`` (whether the answer was constrained by a JSON schema)
and ``error``.
"""

FILTER_METHOD_KEY = "filter_method"
"""Key of the method tag in a returned document's ``metadata["cogito"]`` dict."""

FILTER_RANK_KEY = "filter_rank"
"""Key of the 1-based position in the model's answer (``None`` if not ranked)."""

_RAW_PREVIEW_CHARS = 200


class FilterMethod(str, Enum):
    """How a :class:`PointerFilter` run went."""

    FILTER = "filter"
    """The model's answer was used."""

    FALLBACK_NO_LLM = "fallback_no_llm"
    """No model is configured; the candidates came back unfiltered."""

    FALLBACK_UNREACHABLE = "fallback_unreachable"
    """The model could not be reached (connection refused, HTTP 5xx or 429)."""

    FALLBACK_TIMEOUT = "fallback_timeout"
    """The model did not answer within ``timeout``; the wait was abandoned."""

    FALLBACK_PARSE_ERROR = "fallback_parse_error"
    """The answer held no array, or no valid candidate number in a non-empty array."""

    FALLBACK_ERROR = "fallback_error"
    """The model call failed otherwise (bad request, authentication, a client bug)."""

    SKIPPED_EMPTY = "skipped_empty"
    """There were no candidates; the model was not called."""

    @property
    def is_fallback(self) -> bool:
        """Whether the candidates came back unfiltered because the model's answer was missing."""
        return self.value.startswith("fallback_")


# typing_extensions.TypedDict: pydantic builds the input schema from this class and
# rejects typing.TypedDict before Python 3.12.
class PointerFilterInput(TypedDict):
    """Input of :class:`PointerFilter`."""

    query: str
    """The question the candidates are judged against."""

    documents: Sequence[Document]
    """Candidates, most promising first (stage-1 order)."""


@dataclass(frozen=True)
class FilterResult:
    """The documents a filter run returned and how it went.

    Example:
        ```python
        from langchain_core.documents import Document

        from cogito_lc import FilterMethod, PointerFilter

        docs = [Document("Auth tokens expire after 3600 seconds.", id="auth")]
        result = PointerFilter().invoke_with_result({"query": "token lifetime?", "documents": docs})
        assert result.method is FilterMethod.FALLBACK_NO_LLM and result.method.is_fallback
        assert result.documents[0].page_content == docs[0].page_content
        assert "cogito" not in docs[0].metadata  # the given document is not changed
        ```
    """

    documents: list[Document]
    """Returned documents: copies of the ones given, each tagged by this run."""

    method: FilterMethod
    """How the run went."""

    candidates: int = 0
    """Number of documents given."""

    shown: int = 0
    """Number of candidates numbered for the model (within the count and character budget)."""

    pointers: tuple[int, ...] = ()
    """Valid 1-based candidate numbers from the answer, in the model's order."""

    rejected: int = 0
    """Items of the answer's array that were not kept (not int, out of range, repeated)."""

    structured: bool = False
    """Whether the answer was constrained by a JSON schema."""

    raw: str | None = None
    """The model's reply, if it replied."""

    error: str | None = None
    """Why the run fell back, if it did."""

    def event_data(self, name: str) -> dict[str, Any]:
        """The payload of :data:`FILTER_EVENT` for this result."""
        return {
            "name": name,
            "method": self.method.value,
            "candidates": self.candidates,
            "shown": self.shown,
            "selected": len(self.pointers),
            "rejected": self.rejected,
            "returned": len(self.documents),
            "structured": self.structured,
            "error": self.error,
        }


@dataclass(frozen=True)
class _Request:
    query: str
    documents: list[Document]
    top_n: int | None


class PointerFilter(
    RejectUnknownFields,
    PointerCaller[_Request, FilterResult],
    RunnableSerializable[PointerFilterInput, list[Document]],
    BaseDocumentCompressor,
):
    """Keep the candidates a chat model points at, by number, and return copies of them.

    A runnable ``{"query": str, "documents": list[Document]} -> list[Document]`` and a
    LangChain ``BaseDocumentCompressor``: use it in LCEL chains, in
    ``ContextualCompressionRetriever`` or in ``DocumentCompressorPipeline``.

    The model sees at most ``max_candidates`` candidates whose rendered lines fit in
    ``char_budget`` characters, each cut to ``snippet_chars``. Its answer is read
    tolerantly and bounds-checked (ints from 1 to the number shown, first
    occurrence, the model's order; ``[]`` means none is relevant). Candidates past the
    budget follow the ranked ones, in their original order, only with
    ``keep_unranked=True``. If the model is missing, unreachable, too slow or its
    answer unusable, all candidates come back in their original order. The result
    is cut to ``top_n``. The method tag is reported as described in
    :mod:`cogito_lc.document_compressors.pointer_filter`.

    Example:
        ```python
        from langchain_core.documents import Document
        from langchain_core.language_models import FakeListChatModel

        from cogito_lc import PointerFilter

        docs = [
            Document("We chose PostgreSQL for billing.", id="db"),
            Document("Auth tokens expire after 3600 seconds.", id="auth"),
        ]
        llm = FakeListChatModel(responses=['{"ids": [2]}'])  # or ChatOllama(model="qwen2.5:3b")
        pointer_filter = PointerFilter.from_llm(llm, top_n=3)
        kept = pointer_filter.invoke({"query": "how long do auth tokens last?", "documents": docs})
        assert kept[0].page_content == docs[1].page_content  # the stored text itself
        assert kept[0].metadata["cogito"]["filter_method"] == "filter"
        assert "cogito" not in docs[1].metadata  # the given document is not changed
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")
    _prompt_name: ClassVar[str] = POINTER_FILTER_PROMPT
    _event: ClassVar[str] = FILTER_EVENT
    _log: ClassVar[logging.Logger] = logger

    llm: Runnable[Any, Any] | None = None
    """Chat model that picks the candidates; ``None`` returns them unfiltered
    (``fallback_no_llm``)."""

    prompt: ChatPromptTemplate = Field(
        default_factory=lambda: resolve_prompt(POINTER_FILTER_PROMPT)
    )
    """Prompt with the variables ``query`` and ``candidates``; by default the registry's
    ``pointer_filter`` entry, resolved when the filter is built."""

    top_n: int | None = Field(default=None, ge=1)
    """Most documents returned; ``None`` returns all that were kept."""

    max_candidates: int = Field(default=50, ge=1)
    """Most candidates shown to the model."""

    snippet_chars: int = Field(default=300, ge=1)
    """Most characters of one candidate's text shown to the model (whitespace collapsed)."""

    char_budget: int = Field(default=6000, ge=64)
    """Most characters of the whole candidate block, so a pool never overflows a small
    model's context (about 1,500 tokens by default)."""

    keep_unranked: bool = False
    """Return the candidates past the budget after the ranked ones, in their original order."""

    timeout: float | None = Field(default=12.0, gt=0)
    """Seconds to wait for the model on each call before falling back
    (``fallback_timeout``); ``None`` waits as long as the chat model's own client does.
    Async calls are cancelled. Sync calls run in a worker thread the caller stops
    waiting for; the abandoned request ends with the client's own timeout. A local
    server that handles one request at a time keeps working on an abandoned request,
    so size the timeout (and ``max_candidates``) to the model."""

    structured_output: StructuredOutputMode = "auto"
    """How the JSON schema of the answer reaches the model (see
    :data:`~cogito_lc.StructuredOutputMode`); ``json_object`` for
    llama-cpp-python's server."""

    @classmethod
    def builder(cls, llm: Runnable[Any, Any] | None) -> PointerFilterBuilder:
        """Start building a filter around the chat model ``llm`` (``None`` for no model)."""
        return PointerFilterBuilder(llm)

    @classmethod
    def from_llm(
        cls,
        llm: Runnable[Any, Any] | None,
        *,
        prompt: PromptLike | None = None,
        registry: PromptRegistry | None = None,
        **fields: Any,
    ) -> PointerFilter:
        """Create a filter from a chat model.

        Args:
            llm: Chat model to call; ``None`` makes every run ``fallback_no_llm``.
            prompt: Prompt to use instead of the registry's ``pointer_filter`` entry;
                it must use ``{query}`` and ``{candidates}``.
            registry: Registry to take the default prompt from.
            **fields: Other fields, such as ``top_n``, ``max_candidates``, ``timeout``.

        Returns:
            The filter.

        Raises:
            PromptVariablesError: If ``prompt`` has the wrong variables.
            TypeError: If a keyword is not a field of the filter.
        """
        template = resolve_prompt(POINTER_FILTER_PROMPT, prompt, registry=registry)
        return cls(llm=llm, prompt=template, **fields)

    def compress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """Filter ``documents`` for ``query`` (the ``BaseDocumentCompressor`` interface).

        Args:
            documents: Candidates, most promising first.
            query: The question.
            callbacks: Callbacks for this run.

        Returns:
            The kept documents: copies of the given ones, tagged by this run.
        """
        return self.invoke({"query": query, "documents": documents}, {"callbacks": callbacks})

    async def acompress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """Async :meth:`compress_documents`; the model is awaited, not run in a thread."""
        return await self.ainvoke(
            {"query": query, "documents": documents}, {"callbacks": callbacks}
        )

    def invoke(
        self,
        input: PointerFilterInput,  # noqa: A002
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """Filter the documents; see :meth:`invoke_with_result` for how the run went.

        Args:
            input: ``{"query": str, "documents": list[Document]}``.
            config: Runnable config (callbacks, tags, metadata, run name).
            **kwargs: ``top_n`` overrides the field for this call.

        Returns:
            The kept documents: copies of the given ones, tagged by this run.
        """
        return self.invoke_with_result(input, config, **kwargs).documents

    async def ainvoke(
        self,
        input: PointerFilterInput,  # noqa: A002
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """Async :meth:`invoke`."""
        return (await self.ainvoke_with_result(input, config, **kwargs)).documents

    def invoke_with_result(
        self,
        input: PointerFilterInput,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        top_n: int | None = None,
    ) -> FilterResult:
        """Filter the documents and report how the run went.

        The input is checked inside the run, before any model call: a bad input is
        recorded as the run's error (``on_chain_error``) and raised.

        Args:
            input: ``{"query": str, "documents": list[Document]}``.
            config: Runnable config (callbacks, tags, metadata, run name).
            top_n: Most documents returned by this call, instead of the field.

        Returns:
            The documents, the method tag and the model's reply.

        Raises:
            TypeError: If the query is not a string, a document is not a ``Document``,
                or ``top_n`` is not an int.
            ValueError: If the query is blank, ``top_n < 1`` or a key is missing.
        """
        return self._run_chain(lambda: self._request(input, top_n), input, config)

    async def ainvoke_with_result(
        self,
        input: PointerFilterInput,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        top_n: int | None = None,
    ) -> FilterResult:
        """Async :meth:`invoke_with_result`; a timeout cancels the model call."""
        return await self._arun_chain(lambda: self._request(input, top_n), input, config)

    def _request(self, input_: Any, top_n: int | None) -> _Request:
        name = self.get_name()
        if not isinstance(input_, Mapping):
            msg = (
                f"{name} takes a dict {{'query': str, 'documents': list[Document]}}, got "
                f"{type(input_).__name__}; use compress_documents(documents, query) for "
                "positional arguments."
            )
            raise TypeError(msg)
        missing = [key for key in ("query", "documents") if key not in input_]
        if missing:
            msg = (
                f"{name} input is missing {missing}; pass "
                "{'query': str, 'documents': list[Document]}."
            )
            raise ValueError(msg)
        query = check_query(input_["query"])
        documents = check_documents(input_["documents"])
        limit = self.top_n if top_n is None else check_positive_int(top_n, name="top_n")
        return _Request(query, documents, limit)

    def _early(self, request: _Request) -> FilterResult | None:
        if not request.documents:
            return FilterResult([], FilterMethod.SKIPPED_EMPTY)
        if self.llm is None:
            logger.debug("%s has no llm; returning the candidates unfiltered.", self.get_name())
            return self._fallback(request, FilterMethod.FALLBACK_NO_LLM, shown=0)
        return None

    def _question(self, request: _Request) -> PointerQuestion:
        block = render_candidates(
            request.documents,
            max_candidates=self.max_candidates,
            snippet_chars=self.snippet_chars,
            char_budget=self.char_budget,
        )
        variables = {"query": request.query, "candidates": block.text}
        return PointerQuestion(block, variables, pointer_model(block.shown))

    def _failed(self, request: _Request, block: CandidateBlock, exc: Exception) -> FilterResult:
        failure = model_failure(exc, FilterMethod)
        logger.warning(
            "%s: model call failed (%s); returning the %d candidates unfiltered (%s).",
            self.get_name(),
            failure.error,
            len(request.documents),
            failure.method.value,
        )
        return self._fallback(request, failure.method, shown=block.shown, error=failure.error)

    def _answered(self, request: _Request, reply: PointerReply) -> FilterResult:
        try:
            parsed = parse_pointers(reply.text, reply.block.shown, prompt_text=reply.prompt_text)
        except PointerParseError as exc:
            logger.warning(
                "%s: could not read candidate numbers from the reply (%s); returning the "
                "candidates unfiltered. Reply starts with: %r",
                self.get_name(),
                exc,
                reply.text[:_RAW_PREVIEW_CHARS],
            )
            return self._fallback(
                request,
                FilterMethod.FALLBACK_PARSE_ERROR,
                shown=reply.block.shown,
                structured=reply.structured,
                raw=reply.text,
                error=str(exc),
            )
        return self._selected(request, reply, parsed)

    def _selected(
        self, request: _Request, reply: PointerReply, parsed: ParsedPointers
    ) -> FilterResult:
        docs = request.documents
        ranked = [(docs[pointer - 1], rank) for rank, pointer in enumerate(parsed.pointers, 1)]
        unranked = docs[reply.block.shown :] if self.keep_unranked else []
        chosen = _unique([*ranked, *((doc, None) for doc in unranked)], request.top_n)
        return FilterResult(
            [_annotate(doc, FilterMethod.FILTER, rank) for doc, rank in chosen],
            FilterMethod.FILTER,
            candidates=len(docs),
            shown=reply.block.shown,
            pointers=parsed.pointers,
            rejected=parsed.rejected,
            structured=reply.structured,
            raw=reply.text,
        )

    def _fallback(
        self,
        request: _Request,
        method: FilterMethod,
        *,
        shown: int,
        structured: bool = False,
        raw: str | None = None,
        error: str | None = None,
    ) -> FilterResult:
        chosen = _unique([(doc, None) for doc in request.documents], request.top_n)
        return FilterResult(
            [_annotate(doc, method, None) for doc, _ in chosen],
            method,
            candidates=len(request.documents),
            shown=shown,
            structured=structured,
            raw=raw,
            error=error,
        )

    def _run_output(self, result: FilterResult) -> list[Document]:
        return result.documents


class PointerOutputParser(BaseOutputParser[list[int]]):
    r"""Read candidate numbers from a chat model's reply, as :class:`PointerFilter` does.

    Accepts ``{"ids": [...]}`` (what the default prompt and schema ask for) or a bare
    array, among prose, code fences or ``<think>`` blocks, or cut off mid-array. Keeps
    ints from 1 to ``shown`` (any positive int when ``shown`` is ``None``), each once,
    in the model's order. A reply without an array, or with a non-empty array holding
    no valid number, raises ``OutputParserException``.

    Example:
        ```python
        from langchain_core.language_models import FakeListChatModel
        from langchain_core.prompts import ChatPromptTemplate
        from cogito_lc import PointerOutputParser

        llm = FakeListChatModel(responses=['<think>2 fits</think> {"ids": [2, 2, 9, 1]}'])
        prompt = ChatPromptTemplate.from_template("Which of these answer {query}?\n{candidates}")
        chain = prompt | llm | PointerOutputParser(shown=3)
        chain.invoke({"query": "q", "candidates": "[1] a\n[2] b\n[3] c"})
        # [2, 1]
        ```
    """

    shown: int | None = Field(default=None, ge=1)
    """Number of candidates shown to the model; ``None`` accepts any positive number."""

    @property
    def _type(self) -> str:
        return "pointer_list"

    @property
    def OutputType(self) -> type[list[int]]:  # noqa: N802 - the Runnable interface's name
        """``list[int]``."""
        return list[int]

    def parse(self, text: str) -> list[int]:
        """Parse the reply text.

        Args:
            text: The model's reply.

        Returns:
            The valid 1-based candidate numbers; ``[]`` when the model answered none.

        Raises:
            OutputParserException: If the reply holds no array of candidate numbers.
        """
        try:
            parsed = parse_pointers(text, self.shown or sys.maxsize)
        except PointerParseError as exc:
            raise OutputParserException(str(exc), llm_output=text) from exc
        return list(parsed.pointers)

    def get_format_instructions(self) -> str:
        """Describe the reply the parser expects, for a prompt."""
        return (
            'Output ONLY a JSON object whose "ids" array holds the numbers of the relevant '
            'candidates, most relevant first, for example {"ids": [1, 4, 7]} or {"ids": []}.'
        )


class PointerFilterBuilder(PointerBuilder["PointerFilter"]):
    r"""Step-by-step construction of a :class:`PointerFilter`.

    Example:
        ```python
        from langchain_core.language_models import FakeListChatModel
        from cogito_lc import PointerFilter

        llm = FakeListChatModel(responses=['{"ids": [2]}'])
        pointer_filter = (
            PointerFilter.builder(llm)
            .prompt("Which of these answer {query}?\n{candidates}\nNumbers only, as JSON.")
            .top_n(5)
            .timeout(8)
            .structured_output("json_object")
            .build()
        )
        pointer_filter.top_n, pointer_filter.timeout
        # (5, 8.0)
        ```
    """

    def top_n(self, value: int) -> PointerFilterBuilder:
        """Return at most ``value`` documents."""
        return self._with(top_n=value)

    def snippet_chars(self, value: int) -> PointerFilterBuilder:
        """Cut each candidate's text to ``value`` characters."""
        return self._with(snippet_chars=value)

    def char_budget(self, value: int) -> PointerFilterBuilder:
        """Keep the candidate block within ``value`` characters."""
        return self._with(char_budget=value)

    def keep_unranked(self, value: bool = True) -> PointerFilterBuilder:
        """Return candidates past the budget after the ranked ones."""
        return self._with(keep_unranked=value)

    def _create(self, llm: Runnable[Any, Any] | None, **fields: Any) -> PointerFilter:
        """Create the filter.

        Raises:
            PromptVariablesError: If the prompt has the wrong variables.
            ValidationError: If a setting is out of range, such as ``top_n(0)``.
        """
        return PointerFilter.from_llm(llm, **fields)


def _unique(
    items: Sequence[tuple[Document, int | None]], limit: int | None
) -> list[tuple[Document, int | None]]:
    """The items in order, each memory once (by :func:`document_key`), at most ``limit``.

    Candidates merged from several retrievers can hold one memory as distinct objects.
    """
    seen: set[str] = set()
    chosen: list[tuple[Document, int | None]] = []
    for doc, rank in items:
        key = document_key(doc)
        if key in seen:
            continue
        seen.add(key)
        chosen.append((doc, rank))
        if limit is not None and len(chosen) == limit:
            break
    return chosen


def _annotate(document: Document, method: FilterMethod, rank: int | None) -> Document:
    """A copy of ``document`` with the filter's tag, in new dicts: the one given is not changed.

    Documents built from one metadata template, or shallow copies of one another,
    hold the same dicts: written in place, one's rank would become the other's,
    and a later run's tag the earlier run's.
    """
    details = document.metadata.get(METADATA_KEY, {})
    if not isinstance(details, dict):
        logger.debug(
            "metadata[%r] of document %r is not a dict; method tag not recorded.",
            METADATA_KEY,
            document.id,
        )
        return document.model_copy(update={"metadata": dict(document.metadata)})
    tag = {FILTER_METHOD_KEY: method.value, FILTER_RANK_KEY: rank}
    metadata = {**document.metadata, METADATA_KEY: {**details, **tag}}
    return document.model_copy(update={"metadata": metadata})
