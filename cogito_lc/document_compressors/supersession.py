r"""``SupersessionJudge``: a chat model says, by number, which stored memories a new one replaces.

When a new memory arrives, the memories already stored in its scope that look
related are shown to a chat model as ``[1] text``, ``[2] text``, ... (with the date
each was stored, when its ``created_at`` metadata holds one), after the new memory's
text. The model answers with numbers only, ``{"supersedes": [...], "repeats": [...]}``:

- **supersedes**: the new memory is about the same subject with a new value, so the
  stored one is out of date ("I moved to Denver" supersedes "I live in Austin");
- **repeats**: the new memory states the same fact again (a duplicate);
- a candidate in neither list is unrelated.

The numbers are bounds-checked and dereferenced to the very ``Document`` objects the
judge was given: the model's output never becomes memory text, and no candidate is
rebuilt or altered (not even its metadata). How a run went is its *method tag*
(:class:`SupersessionMethod`; every tag of the package is listed under
:data:`~cogito_lc.METADATA_KEY`), reported in :class:`SupersessionDecision` and in
the custom event :data:`SUPERSESSION_EVENT`. When the model's answer cannot be used,
the decision supersedes and repeats nothing.

Example:
    ```python
    from langchain_core.documents import Document

    from cogito_lc.document_compressors.supersession import parse_judgement, render_memories

    stored = [
        Document("I live in Austin.", metadata={"created_at": "2025-06-01T09:00:00+00:00"}),
        Document("My sister\nis called Ana."),
    ]
    render_memories(stored, max_candidates=8, snippet_chars=300).text
    # '[1] (stored 2025-06-01) I live in Austin.\n[2] My sister is called Ana.'
    parsed = parse_judgement('{"supersedes": [1, 1, 7, true], "repeats": [2]}', 2)
    parsed.supersedes, parsed.repeats, parsed.rejected
    # ((1,), (2,), 3)
    ```
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar

from langchain_core.documents import Document
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableConfig, RunnableSerializable
from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from cogito_lc._core.json_repair import JsonExtractionError, extract_json
from cogito_lc._core.structured_output import StructuredOutputMode
from cogito_lc._core.timestamps import parse_timestamp
from cogito_lc._core.validation import RejectUnknownFields, echo, reject_unknown_kwargs
from cogito_lc.document_compressors._pointer_call import (
    PointerBuilder,
    PointerCaller,
    PointerQuestion,
    PointerReply,
    model_failure,
)
from cogito_lc.document_compressors._pointers import (
    CandidateBlock,
    pointer_list_type,
    snippet,
    strip_echo,
    valid_pointers,
)
from cogito_lc.prompts.registry import PromptLike, PromptRegistry, resolve_prompt

__all__ = [
    "SUPERSESSION_EVENT",
    "SUPERSESSION_PROMPT",
    "JudgementParseError",
    "ParsedJudgement",
    "SupersessionDecision",
    "SupersessionInput",
    "SupersessionJudge",
    "SupersessionJudgeBuilder",
    "SupersessionMethod",
    "judgement_model",
    "parse_judgement",
    "render_memories",
]

logger = logging.getLogger(__name__)

SUPERSESSION_PROMPT = "supersession"
"""Registry name of the default prompt (variables ``memory`` and ``candidates``)."""

SUPERSESSION_EVENT = "cogito_lc.supersession"
"""Name of the custom event dispatched at the end of every judge run.

Its data is a dict with ``name`` (the runnable's name), ``method`` (the tag),
``candidates`` (documents given), ``shown`` (numbered for the model), ``supersedes``
and ``repeats`` (documents in each list of the decision), ``ambiguous`` (numbers the
answer put in both lists), ``rejected`` (items of the answer not kept),
``structured`` (whether the answer was constrained by a JSON schema) and ``error``.
"""

CREATED_AT_KEY = "created_at"
"""Metadata key of the date a candidate was stored, shown to the model when it parses."""

SUPERSEDES_KEY = "supersedes"
"""Key of the answer's array of candidates the new memory replaces."""

REPEATS_KEY = "repeats"
"""Key of the answer's array of candidates the new memory states again."""

_ANSWER_KEYS = (SUPERSEDES_KEY, REPEATS_KEY)
_RAW_PREVIEW_CHARS = 200


class SupersessionMethod(str, Enum):
    """How a :class:`SupersessionJudge` run went."""

    JUDGED = "judged"
    """The model's answer was used (its lists may be empty)."""

    FALLBACK_NO_LLM = "fallback_no_llm"
    """No model is configured; nothing is superseded or repeated."""

    FALLBACK_UNREACHABLE = "fallback_unreachable"
    """The model could not be reached (connection refused, HTTP 5xx or 429)."""

    FALLBACK_TIMEOUT = "fallback_timeout"
    """The model did not answer within ``timeout``; the wait was abandoned."""

    FALLBACK_PARSE_ERROR = "fallback_parse_error"
    """The answer held no usable ``{"supersedes": [...], "repeats": [...]}`` object."""

    FALLBACK_ERROR = "fallback_error"
    """The model call failed otherwise (bad request, authentication, a client bug)."""

    SKIPPED_EMPTY = "skipped_empty"
    """There were no candidates; the model was not called."""

    @property
    def is_fallback(self) -> bool:
        """Whether the model's answer was missing or unusable, so nothing was decided."""
        return self.value.startswith("fallback_")


class SupersessionInput(RejectUnknownFields, BaseModel):
    """Input of :class:`SupersessionJudge`: the new memory and the stored ones to judge.

    Example:
        ```python
        from langchain_core.documents import Document
        from pydantic import ValidationError

        from cogito_lc import SupersessionInput

        stored = [Document("I live in Austin.", id="home")]
        request = SupersessionInput(memory="I moved to Denver.", candidates=stored)
        assert request.candidates[0] is stored[0]  # the candidate itself, not a copy
        try:
            SupersessionInput(memory="   ", candidates=stored)
        except ValidationError as exc:
            assert "memory" in str(exc)
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", frozen=True)

    memory: str
    """The new memory's text, as it is about to be stored."""

    candidates: list[Document]
    """Stored memories that may be about the same subject, most related first; the
    judge returns these very objects and never changes them."""

    @field_validator("memory", mode="before")
    @classmethod
    def _check_memory(cls, value: Any) -> Any:
        if not isinstance(value, str):
            msg = (
                f"memory must be the new memory's text (a str), got {type(value).__name__}; "
                "pass {'memory': 'I moved to Denver.', 'candidates': [Document, ...]}."
            )
            raise ValueError(msg)  # noqa: TRY004 - pydantic reports ValueError per field
        if not value.strip():
            msg = "memory is empty or whitespace; pass the new memory's text."
            raise ValueError(msg)
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            msg = "memory holds a lone surrogate, which is not valid Unicode text; send UTF-8."
            raise ValueError(msg) from None
        return value

    @field_validator("candidates", mode="before")
    @classmethod
    def _check_candidates(cls, value: Any) -> Any:
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
            msg = (
                f"candidates must be a list of Document (the stored memories to judge), got "
                f"{type(value).__name__} {echo(value)}; pass [] when there are none."
            )
            raise ValueError(msg)  # noqa: TRY004 - pydantic reports ValueError per field
        documents = list(value)
        for index, document in enumerate(documents):
            if not isinstance(document, Document):
                msg = (
                    f"candidates[{index}] must be a langchain_core.documents.Document, got "
                    f"{type(document).__name__}; pass the stored Document objects "
                    "themselves, not their text."
                )
                raise ValueError(msg)  # noqa: TRY004 - pydantic reports ValueError per field
        return documents


@dataclass(frozen=True)
class SupersessionDecision:
    """What a judge run decided about the candidates, and how it went.

    ``supersedes`` and ``repeats`` hold candidate objects themselves (never copies), in
    the model's order, and never share a document. After a fallback both are empty.

    Example:
        ```python
        from langchain_core.documents import Document

        from cogito_lc import SupersessionJudge, SupersessionMethod

        stored = [Document("I live in Austin.", id="home")]
        judge = SupersessionJudge()  # no model
        decision = judge.invoke({"memory": "I moved to Denver.", "candidates": stored})
        assert decision.method is SupersessionMethod.FALLBACK_NO_LLM
        assert decision.method.is_fallback
        assert decision.supersedes == [] and decision.repeats == []
        ```
    """

    supersedes: list[Document]
    """Candidates the new memory replaces: same subject, new value."""

    repeats: list[Document]
    """Candidates the new memory states again: duplicates."""

    method: SupersessionMethod
    """How the run went."""

    pointers: dict[str, tuple[int, ...]] = field(
        default_factory=lambda: {SUPERSEDES_KEY: (), REPEATS_KEY: ()}
    )
    """The validated 1-based candidate numbers behind each list, under ``"supersedes"``
    and ``"repeats"``, in the model's order."""

    candidates: int = 0
    """Number of candidates given."""

    shown: int = 0
    """Number of candidates numbered for the model (at most ``max_candidates``)."""

    ambiguous: tuple[int, ...] = ()
    """Valid numbers the answer put in both lists; they are in neither."""

    rejected: int = 0
    """Items of the answer's arrays not kept (not an int, out of range, repeated)."""

    structured: bool = False
    """Whether the answer was constrained by a JSON schema."""

    raw: str | None = None
    """The model's reply, if it replied."""

    error: str | None = None
    """Why the run fell back, if it did."""

    def event_data(self, name: str) -> dict[str, Any]:
        """The payload of :data:`SUPERSESSION_EVENT` for this decision."""
        return {
            "name": name,
            "method": self.method.value,
            "candidates": self.candidates,
            "shown": self.shown,
            "supersedes": len(self.supersedes),
            "repeats": len(self.repeats),
            "ambiguous": len(self.ambiguous),
            "rejected": self.rejected,
            "structured": self.structured,
            "error": self.error,
        }


class JudgementParseError(ValueError):
    """The model reply holds no usable ``{"supersedes": [...], "repeats": [...]}`` object."""


@dataclass(frozen=True)
class ParsedJudgement:
    """Valid candidate numbers read from a model reply."""

    supersedes: tuple[int, ...]
    """Numbers of the candidates superseded, in the model's order, each once."""

    repeats: tuple[int, ...]
    """Numbers of the candidates repeated, in the model's order, each once."""

    ambiguous: tuple[int, ...] = ()
    """Valid numbers found in both arrays, dropped from both."""

    rejected: int = 0
    """Items of the arrays not kept (not an int, out of range, repeated in one array)."""


def render_memories(
    documents: Sequence[Document], *, max_candidates: int, snippet_chars: int
) -> CandidateBlock:
    """Number the leading candidates as ``[n] (stored YYYY-MM-DD) text`` lines.

    Each text is collapsed to one line (newlines included) and cut to
    ``snippet_chars``, so a candidate cannot fake a numbered line of its own. The
    date comes from ``metadata["created_at"]`` and is left out when that is missing
    or not a timestamp.

    Args:
        documents: Candidates, most related first.
        max_candidates: Most candidates rendered.
        snippet_chars: Most characters of one candidate's text.

    Returns:
        The block and the number of candidates it shows.
    """
    lines = []
    for number, document in enumerate(documents[:max_candidates], start=1):
        stored = _stored_date(document)
        prefix = f"[{number}] " + (f"(stored {stored}) " if stored else "")
        lines.append(prefix + snippet(document.page_content, snippet_chars))
    return CandidateBlock("\n".join(lines), len(lines))


@functools.lru_cache(maxsize=64)
def judgement_model(shown: int) -> type[BaseModel]:
    """Pydantic model of an answer about candidates 1..``shown``.

    ``{"supersedes": [int, ...], "repeats": [int, ...]}``: its JSON schema bounds
    every number and each array's length, so constrained decoding cannot produce an
    out-of-range pointer.

    Args:
        shown: Number of candidates shown to the model.

    Returns:
        The model class, cached per ``shown``.
    """
    numbers = pointer_list_type(shown)
    return create_model(
        "SupersessionAnswer",
        supersedes=(
            numbers,
            Field(description="Numbers of the stored memories the new memory replaces."),
        ),
        repeats=(
            numbers,
            Field(description="Numbers of the stored memories the new memory repeats."),
        ),
    )


def parse_judgement(raw: str, shown: int, *, prompt_text: str = "") -> ParsedJudgement:
    """Read the candidate numbers of both lists from a model reply, keeping only valid ones.

    Tolerates ``<think>`` blocks, code fences, prose around the object, trailing commas
    and extra keys. Lines that repeat the prompt (a small model echoing its examples)
    are ignored. A missing key counts as an empty array. In each array, keeps items
    that are ints (not bools, floats or strings) between 1 and ``shown``, the first
    occurrence of each, in the model's order; a number valid in both arrays is
    ambiguous and dropped from both.

    Args:
        raw: The model's reply.
        shown: Number of candidates shown to the model.
        prompt_text: The prompt the model saw, to recognise echoed lines.

    Returns:
        The valid numbers; empty tuples when the model answered empty arrays.

    Raises:
        JudgementParseError: If the reply holds no complete JSON object, the object has
            neither ``supersedes`` nor ``repeats``, one of them is not an array, or the
            arrays hold items but not a single valid candidate number.
    """
    answer = _answer_object(strip_echo(raw, prompt_text))
    arrays: dict[str, list[Any]] = {}
    for key in _ANSWER_KEYS:
        items = answer.get(key, [])
        if not isinstance(items, list):
            msg = f"{key!r} is a JSON {type(items).__name__}, not an array of candidate numbers"
            raise JudgementParseError(msg)
        arrays[key] = items
    valid = {key: valid_pointers(items, shown) for key, items in arrays.items()}
    given = sum(len(items) for items in arrays.values())
    kept = sum(len(pointers) for pointers in valid.values())
    if given and not kept:
        preview = str(arrays)[:80]
        msg = f"the reply's arrays {preview} hold no candidate number between 1 and {shown}"
        raise JudgementParseError(msg)
    both = set(valid[SUPERSEDES_KEY]) & set(valid[REPEATS_KEY])
    return ParsedJudgement(
        supersedes=tuple(p for p in valid[SUPERSEDES_KEY] if p not in both),
        repeats=tuple(p for p in valid[REPEATS_KEY] if p not in both),
        ambiguous=tuple(p for p in valid[SUPERSEDES_KEY] if p in both),
        rejected=given - kept,
    )


class SupersessionJudge(
    RejectUnknownFields,
    PointerCaller[SupersessionInput, SupersessionDecision],
    RunnableSerializable[SupersessionInput | dict[str, Any], SupersessionDecision],
):
    """Ask a chat model which stored memories a new memory supersedes or repeats, by number.

    A runnable ``{"memory": str, "candidates": list[Document]} -> SupersessionDecision``
    (a :class:`SupersessionInput` is accepted too). The model sees the new memory's
    text, then at most ``max_candidates`` candidates numbered from 1, each on one line
    cut to ``snippet_chars`` with the date it was stored, and answers
    ``{"supersedes": [...], "repeats": [...]}``.

    The answer is read with these rules (see :func:`parse_judgement`):

    - a number is kept only if it is an int (not a bool, a float such as ``1.5`` or
      ``1.0``, or a string), from 1 to the number of candidates shown;
    - within one list a repeated number is kept once, at its first place; a number
      in both lists is ambiguous and goes in neither;
    - any other item (out of range, negative, huge, nested, of another type) is
      dropped, never mapped;
    - a well-formed answer whose lists end up empty (``{"supersedes": [],
      "repeats": []}``, or only ambiguous numbers) is ``judged`` with empty lists;
    - a reply without a complete JSON object holding ``supersedes`` or ``repeats``
      (prose, a bare array, an object cut off), with a key that is not an array, or
      whose arrays hold items but no valid number, is ``fallback_parse_error``.

    The kept numbers are mapped to the candidates given, which come back as the same
    objects, unchanged. The judge never raises because of the model: if the model is
    missing, unreachable, too slow, failing or its answer unusable, the decision
    supersedes and repeats nothing and its method tag says why. Without candidates
    the model is not called (``skipped_empty``). Only invalid input raises, before
    any model call.

    Example:
        ```python
        from langchain_core.documents import Document
        from langchain_core.language_models import FakeListChatModel

        from cogito_lc import SupersessionJudge, SupersessionMethod

        stored = [
            Document("I live in Austin.", id="home", metadata={"created_at": "2025-06-01"}),
            Document("My sister is called Ana.", id="sister"),
        ]
        llm = FakeListChatModel(responses=['{"supersedes": [1], "repeats": []}'])
        judge = SupersessionJudge.from_llm(llm)  # or ChatOllama(model="qwen2.5:3b")
        decision = judge.invoke({"memory": "I moved to Denver.", "candidates": stored})
        assert decision.method is SupersessionMethod.JUDGED
        assert decision.supersedes[0] is stored[0]  # the stored document itself
        assert decision.repeats == []
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")
    _prompt_name: ClassVar[str] = SUPERSESSION_PROMPT
    _event: ClassVar[str] = SUPERSESSION_EVENT
    _log: ClassVar[logging.Logger] = logger

    llm: Runnable[Any, Any] | None = None
    """Chat model that judges the candidates; ``None`` decides nothing
    (``fallback_no_llm``)."""

    prompt: ChatPromptTemplate = Field(default_factory=lambda: resolve_prompt(SUPERSESSION_PROMPT))
    """Prompt with the variables ``memory`` and ``candidates``; by default the registry's
    ``supersession`` entry, resolved when the judge is built."""

    max_candidates: int = Field(default=8, ge=1)
    """Most candidates shown to the model; the ones after them are never judged."""

    snippet_chars: int = Field(default=300, ge=1)
    """Most characters of the new memory's text and of each candidate's text shown to
    the model (whitespace collapsed)."""

    timeout: float | None = Field(default=12.0, gt=0)
    """Seconds to wait for the model on each call before falling back
    (``fallback_timeout``); ``None`` waits as long as the chat model's own client does.
    Async calls are cancelled. Sync calls run in a worker thread the caller stops
    waiting for; the abandoned request ends with the client's own timeout."""

    structured_output: StructuredOutputMode = "auto"
    """How the JSON schema of the answer reaches the model (see
    :data:`~cogito_lc.StructuredOutputMode`); ``json_object`` for
    llama-cpp-python's server."""

    @classmethod
    def builder(cls, llm: Runnable[Any, Any] | None) -> SupersessionJudgeBuilder:
        """Start building a judge around the chat model ``llm`` (``None`` for no model)."""
        return SupersessionJudgeBuilder(llm)

    @classmethod
    def from_llm(
        cls,
        llm: Runnable[Any, Any] | None,
        *,
        prompt: PromptLike | None = None,
        registry: PromptRegistry | None = None,
        **fields: Any,
    ) -> SupersessionJudge:
        """Create a judge from a chat model.

        Args:
            llm: Chat model to call; ``None`` makes every run ``fallback_no_llm``.
            prompt: Prompt to use instead of the registry's ``supersession`` entry;
                it must use ``{memory}`` and ``{candidates}``.
            registry: Registry to take the default prompt from.
            **fields: Other fields, such as ``max_candidates`` or ``timeout``.

        Returns:
            The judge.

        Raises:
            PromptVariablesError: If ``prompt`` has the wrong variables.
            TypeError: If a keyword is not a field of the judge.
        """
        template = resolve_prompt(SUPERSESSION_PROMPT, prompt, registry=registry)
        return cls(llm=llm, prompt=template, **fields)

    def invoke(
        self,
        input: SupersessionInput | Mapping[str, Any],  # noqa: A002
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> SupersessionDecision:
        """Judge which candidates the new memory supersedes or repeats.

        The input is checked inside the run, before any model call: a bad input is
        recorded as the run's error (``on_chain_error``) and raised.

        Args:
            input: ``{"memory": str, "candidates": list[Document]}`` or a
                :class:`SupersessionInput`.
            config: Runnable config (callbacks, tags, metadata, run name).
            **kwargs: None are accepted.

        Returns:
            The decision: the candidates superseded and repeated, and the method tag.

        Raises:
            TypeError: If the input is neither a dict nor a :class:`SupersessionInput`,
                a key is unknown, or a keyword argument is given.
            ValidationError: If ``memory`` or ``candidates`` is missing or invalid.
        """
        return self._run_chain(lambda: self._request(input, kwargs), input, config)

    async def ainvoke(
        self,
        input: SupersessionInput | Mapping[str, Any],  # noqa: A002
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> SupersessionDecision:
        """Async :meth:`invoke`; the model is awaited, and a timeout cancels its call."""
        return await self._arun_chain(lambda: self._request(input, kwargs), input, config)

    def _request(self, input_: Any, kwargs: Mapping[str, Any]) -> SupersessionInput:
        name = self.get_name()
        reject_unknown_kwargs(f"{name}.invoke", kwargs, ())
        if isinstance(input_, SupersessionInput):
            return input_
        if not isinstance(input_, Mapping):
            msg = (
                f"{name} takes a dict {{'memory': str, 'candidates': list[Document]}} or a "
                f"SupersessionInput, got {type(input_).__name__}."
            )
            raise TypeError(msg)
        return SupersessionInput.model_validate(dict(input_))

    def _early(self, request: SupersessionInput) -> SupersessionDecision | None:
        if not request.candidates:
            return SupersessionDecision([], [], SupersessionMethod.SKIPPED_EMPTY)
        if self.llm is None:
            logger.debug("%s has no llm; superseding nothing.", self.get_name())
            return _fallback(request, SupersessionMethod.FALLBACK_NO_LLM, shown=0)
        return None

    def _question(self, request: SupersessionInput) -> PointerQuestion:
        block = self._render(request.candidates)
        variables = {
            "memory": snippet(request.memory, self.snippet_chars),
            "candidates": block.text,
        }
        return PointerQuestion(block, variables, judgement_model(block.shown))

    def _render(self, candidates: list[Document]) -> CandidateBlock:
        block = render_memories(
            candidates, max_candidates=self.max_candidates, snippet_chars=self.snippet_chars
        )
        if block.shown < len(candidates):
            logger.debug(
                "%s: judging the first %d of %d candidates (max_candidates).",
                self.get_name(),
                block.shown,
                len(candidates),
            )
        return block

    def _failed(
        self, request: SupersessionInput, block: CandidateBlock, exc: Exception
    ) -> SupersessionDecision:
        failure = model_failure(exc, SupersessionMethod)
        logger.warning(
            "%s: model call failed (%s); superseding nothing among the %d candidates (%s).",
            self.get_name(),
            failure.error,
            len(request.candidates),
            failure.method.value,
        )
        return _fallback(request, failure.method, shown=block.shown, error=failure.error)

    def _answered(self, request: SupersessionInput, reply: PointerReply) -> SupersessionDecision:
        try:
            parsed = parse_judgement(reply.text, reply.block.shown, prompt_text=reply.prompt_text)
        except JudgementParseError as exc:
            logger.warning(
                "%s: could not read candidate numbers from the reply (%s); superseding "
                "nothing. Reply starts with: %r",
                self.get_name(),
                exc,
                reply.text[:_RAW_PREVIEW_CHARS],
            )
            return _fallback(
                request,
                SupersessionMethod.FALLBACK_PARSE_ERROR,
                shown=reply.block.shown,
                structured=reply.structured,
                raw=reply.text,
                error=str(exc),
            )
        return _decided(request, reply, parsed)

    def _run_output(self, decision: SupersessionDecision) -> dict[str, Any]:
        return {
            "method": decision.method.value,
            SUPERSEDES_KEY: decision.supersedes,
            REPEATS_KEY: decision.repeats,
        }


class SupersessionJudgeBuilder(PointerBuilder["SupersessionJudge"]):
    r"""Step-by-step construction of a :class:`SupersessionJudge`.

    Example:
        ```python
        from langchain_core.language_models import FakeListChatModel
        from cogito_lc import SupersessionJudge

        llm = FakeListChatModel(responses=['{"supersedes": [], "repeats": [1]}'])
        judge = (
            SupersessionJudge.builder(llm)
            .prompt("New: {memory}\nOld:\n{candidates}\nJSON with supersedes and repeats:")
            .max_candidates(5)
            .timeout(8)
            .structured_output("json_object")
            .build()
        )
        judge.max_candidates, judge.timeout
        # (5, 8.0)
        ```
    """

    def snippet_chars(self, value: int) -> SupersessionJudgeBuilder:
        """Cut the new memory's and each candidate's text to ``value`` characters."""
        return self._with(snippet_chars=value)

    def _create(self, llm: Runnable[Any, Any] | None, **fields: Any) -> SupersessionJudge:
        """Create the judge.

        Raises:
            PromptVariablesError: If the prompt has the wrong variables.
            ValidationError: If a setting is out of range, such as ``max_candidates(0)``.
        """
        return SupersessionJudge.from_llm(llm, **fields)


def _stored_date(document: Document) -> str | None:
    created = parse_timestamp(document.metadata.get(CREATED_AT_KEY))
    return None if created is None else created.date().isoformat()


def _answer_object(text: str) -> dict[str, Any]:
    try:
        value = extract_json(text, shape="object")
    except (JsonExtractionError, ValueError, RecursionError) as exc:
        # TruncatedJsonError is a JsonExtractionError: an object cut off is not an answer.
        msg = f"no complete JSON object in the reply ({exc})"
        raise JudgementParseError(msg) from exc
    if not isinstance(value, dict) or not any(key in value for key in _ANSWER_KEYS):
        msg = f"the reply's JSON object has neither {SUPERSEDES_KEY!r} nor {REPEATS_KEY!r}"
        raise JudgementParseError(msg)
    return value


def _decided(
    request: SupersessionInput, reply: PointerReply, parsed: ParsedJudgement
) -> SupersessionDecision:
    candidates = request.candidates
    supersedes = _unique([candidates[p - 1] for p in parsed.supersedes])
    repeats = _unique([candidates[p - 1] for p in parsed.repeats])
    # The same object given under two numbers, one in each list, is ambiguous too.
    shared = {id(doc) for doc in supersedes} & {id(doc) for doc in repeats}
    return SupersessionDecision(
        [doc for doc in supersedes if id(doc) not in shared],
        [doc for doc in repeats if id(doc) not in shared],
        SupersessionMethod.JUDGED,
        pointers={SUPERSEDES_KEY: parsed.supersedes, REPEATS_KEY: parsed.repeats},
        candidates=len(candidates),
        shown=reply.block.shown,
        ambiguous=parsed.ambiguous,
        rejected=parsed.rejected,
        structured=reply.structured,
        raw=reply.text,
    )


def _fallback(
    request: SupersessionInput,
    method: SupersessionMethod,
    *,
    shown: int,
    structured: bool = False,
    raw: str | None = None,
    error: str | None = None,
) -> SupersessionDecision:
    return SupersessionDecision(
        [],
        [],
        method,
        candidates=len(request.candidates),
        shown=shown,
        structured=structured,
        raw=raw,
        error=error,
    )


def _unique(documents: list[Document]) -> list[Document]:
    seen: set[int] = set()
    unique = []
    for document in documents:
        if id(document) not in seen:
            seen.add(id(document))
            unique.append(document)
    return unique
