"""``FactExtractor``: distil agent output into atomic, classified memory facts.

This is the write-time step of a memory system: before agent output is stored,
it is reduced to self-contained facts, each with a kind and an importance, so that
later retrieval finds precise statements instead of verbose transcripts.

Where the prompt comes from, highest precedence first: a prompt given to
:meth:`FactExtractorBuilder.prompt` or ``FactExtractor.from_llm(...,
prompt=...)``; the ``fact_extraction`` prompt registered in the prompt registry (an
application's ``register(..., replace=True)``, a file in ``$COGITO_PROMPTS_DIR`` or
a ``cogito_lc.prompts`` entry point, see :mod:`cogito_lc.prompts`); the built-in
prompt. The prompt is resolved when the extractor is built.
"""

from __future__ import annotations

import difflib
import math
import warnings
from collections.abc import Sequence
from enum import Enum
from typing import Any

from langchain_core.exceptions import OutputParserException
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableConfig, RunnableSerializable
from pydantic import BaseModel, ConfigDict, Field, field_validator

from cogito_lc._core.json_repair import JsonExtractionError
from cogito_lc._core.model_call import arun_as_chain, run_as_chain, with_model_name
from cogito_lc._core.structured_output import LIST_WRAPPER_KEY, StructuredOutputMode
from cogito_lc.extraction.llm_extractor import (
    EXTRACTION_EVENT,
    ExtractionMethod,
    ExtractionResult,
    LlmExtractor,
    decode_items,
    validate_items,
)
from cogito_lc.prompts.builders import ComponentBuilder
from cogito_lc.prompts.registry import PromptLike, PromptRegistry, resolve_prompt

__all__ = [
    "FACT_EXTRACTION_PROMPT",
    "Fact",
    "FactExtractionInput",
    "FactExtractor",
    "FactExtractorBuilder",
    "FactExtractorInput",
    "FactKind",
    "FactListOutputParser",
    "render_context_section",
]

FACT_EXTRACTION_PROMPT = "fact_extraction"
"""Registry name of the default prompt."""


class FactKind(str, Enum):
    """What kind of knowledge a fact carries; serialised as its snake_case value.

    Example:
        ```python
        from cogito_lc import Fact, FactKind

        FactKind("decision") is FactKind.DECISION
        # True
        Fact(content="Use UTC timestamps.", kind=FactKind.RULE, importance=0.9).model_dump_json()
        # '{"content":"Use UTC timestamps.","kind":"rule","importance":0.9}'
        ```
    """

    RULE = "rule"
    """A standing instruction that must always be respected."""

    PREFERENCE = "preference"
    """A softer guideline; follow it unless there is a reason not to."""

    CONTEXT = "context"
    """Situational information that informs decisions."""

    DECISION = "decision"
    """A past choice with its rationale; informative, not prescriptive."""

    OBSERVATION = "observation"
    """An ongoing state worth being aware of."""


class Fact(BaseModel):
    """One atomic, self-contained memory fact.

    Example:
        ```python
        from cogito_lc import Fact

        Fact(content="The API service is a monolith.", kind="decision", importance=1.4)
        # Fact(content='The API service is a monolith.', kind=<FactKind.DECISION: 'decision'>,
        #      importance=1.0)
        ```
    """

    model_config = ConfigDict(frozen=True, str_strip_whitespace=True)

    content: str = Field(min_length=1, description="Self-contained atomic statement.")
    """Self-contained statement, understandable without the text it came from."""

    kind: FactKind = Field(description="rule, preference, context, decision or observation.")
    """What kind of knowledge the fact carries."""

    importance: float = Field(default=0.5, description="How important the fact is, 0.0 to 1.0.")
    """Importance between 0 and 1; values outside are clamped, a missing or null one is 0.5."""

    @field_validator("content")
    @classmethod
    def _says_something(cls, value: str) -> str:
        if not any(character.isalnum() for character in value):
            msg = (
                f"content must state a fact in words, got {value!r} (a placeholder such as "
                "'...' copied from the prompt's example is not a fact)"
            )
            raise ValueError(msg)
        return value

    @field_validator("kind", mode="before")
    @classmethod
    def _normalise_kind(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("importance", mode="before")
    @classmethod
    def _null_importance_is_missing(cls, value: Any) -> Any:
        return 0.5 if value is None else value  # models write null for "no idea"

    @field_validator("importance")
    @classmethod
    def _clamp_importance(cls, value: float) -> float:
        if math.isnan(value):
            msg = "importance must be a number between 0 and 1, got NaN"
            raise ValueError(msg)
        return min(1.0, max(0.0, value))


class FactExtractionInput(BaseModel):
    """Input of :class:`FactExtractor`.

    Example:
        ```python
        from cogito_lc import FactExtractionInput

        FactExtractionInput(
            text="Chose a monolith: the team cannot run microservices yet.",
            context_hints=["project: billing API"],
            max_facts=5,
        )
        ```
    """

    model_config = ConfigDict(validate_assignment=True, extra="forbid")

    text: str
    """Agent output to extract facts from."""

    context_hints: list[str] = Field(default_factory=list)
    """Short hints shown to the model, such as ``"project: billing API"``."""

    max_facts: int = Field(default=7, ge=1)
    """Most facts to return; at least 1 (a smaller value is a ``ValueError``)."""


FactExtractorInput = FactExtractionInput | str | dict[str, Any]
"""What :class:`FactExtractor` accepts: the input model, its fields as a dict, or the text."""


def render_context_section(hints: Sequence[str]) -> str:
    r"""Render the ``{context_section}`` prompt variable.

    The built-in prompt puts ``{context_section}`` directly before ``Agent output:``,
    so with hints the prompt reads ``...work.\n\nContext:\n- hint\n- hint\n\nAgent
    output:`` and without them ``...work.\n\nAgent output:``, with no empty
    ``Context:`` line and no extra blank line.

    Args:
        hints: Context hints; blank ones are ignored, line breaks become spaces.

    Returns:
        ``"Context:\n- hint\n- hint"`` followed by the blank line that separates it
        from what follows, or ``""`` when there are no hints.
    """
    lines = [f"- {' '.join(hint.split())}" for hint in hints if hint.strip()]
    if not lines:
        return ""
    return "Context:\n" + "\n".join(lines) + "\n\n"


class FactExtractor(RunnableSerializable[FactExtractorInput, list[Fact]]):
    """Extract atomic facts from agent output: ``FactExtractionInput | str -> list[Fact]``.

    The prompt given to the builder or ``from_llm`` wins over the ``fact_extraction``
    prompt of the registry, which is the built-in one unless overridden. At most
    ``max_facts`` facts are returned, a repeat of an earlier fact not counted among
    them; entries with an unknown kind or no content are dropped and logged; empty
    text returns ``[]`` without calling the model; an
    unparseable reply, or one whose items were all dropped, returns ``[]`` as
    ``parse_error`` with a logged warning; a model call that fails in any way, or does
    not answer within ``timeout``, returns ``[]`` as ``error`` with a logged warning
    unless ``raise_on_error``.
    :meth:`invoke_with_result` also tells how the run went.

    Example:
        ```python
        from langchain_core.language_models import FakeListChatModel
        from cogito_lc import FactExtractionInput, FactExtractor

        # Any chat model works, e.g. ChatOllama(model="qwen2.5:3b").
        llm = FakeListChatModel(
            responses=['[{"content": "The billing API is a monolith.", "kind": "decision", '
                       '"importance": 0.8}]']
        )
        extractor = FactExtractor.from_llm(llm)
        extractor.invoke(
            FactExtractionInput(
                text="Chose a monolith for the API: the team cannot operate "
                "microservices at its current size.",
                context_hints=["project: billing API"],
                max_facts=3,
            )
        )
        # [Fact(content='The billing API is a monolith.', kind=<FactKind.DECISION: 'decision'>,
        #       importance=0.8)]
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    extractor: LlmExtractor[Fact]
    """The list extractor that calls the model and parses its reply."""

    @classmethod
    def builder(cls, llm: Runnable[Any, Any]) -> FactExtractorBuilder:
        """Start building a fact extractor around the chat model ``llm``."""
        return FactExtractorBuilder(llm)

    @classmethod
    def from_llm(
        cls,
        llm: Runnable[Any, Any],
        *,
        prompt: PromptLike | None = None,
        registry: PromptRegistry | None = None,
        model: str | None = None,
        structured_output: StructuredOutputMode = "auto",
        raise_on_error: bool = False,
        timeout: float | None = None,
        name: str | None = None,
    ) -> FactExtractor:
        """Create a fact extractor from a chat model.

        Args:
            llm: Chat model to call.
            prompt: Prompt to use instead of the registry's ``fact_extraction`` entry;
                it must use ``{text}`` and may use ``{context_section}`` and
                ``{max_facts}``.
            registry: Registry to take the default prompt from.
            model: Model name to set on the chat model.
            structured_output: How the output schema reaches the model.
            raise_on_error: Raise model failures instead of returning ``[]``.
            timeout: Seconds one extraction may wait for the model, a retry without
                the schema included, before it returns ``[]`` as ``error``; ``None``
                waits as long as the chat model's own client does.
            name: Run name shown in traces.

        Returns:
            The fact extractor.

        Raises:
            PromptVariablesError: If ``prompt`` has the wrong variables.
        """
        chat_model = with_model_name(llm, model) if model else llm
        extractor = LlmExtractor[Fact](
            llm=chat_model,
            prompt=resolve_prompt(FACT_EXTRACTION_PROMPT, prompt, registry=registry),
            output=Fact,
            many=True,
            input_key="text",
            structured_output=structured_output,
            raise_on_error=raise_on_error,
            timeout=timeout,
        )
        return cls(extractor=extractor, name=name)

    @property
    def prompt(self) -> ChatPromptTemplate:
        """The prompt sent to the model."""
        return self.extractor.prompt

    def invoke(
        self,
        input: FactExtractorInput,  # noqa: A002
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> list[Fact]:
        """Extract facts; see :meth:`invoke_with_result` for how the run went.

        Args:
            input: A :class:`FactExtractionInput`, its fields as a dict, or the text.
            config: Runnable config (callbacks, tags, metadata, run name).
            **kwargs: None is taken: ``max_facts`` and ``context_hints`` go in the input.

        Returns:
            At most ``max_facts`` facts.

        Raises:
            ValueError: If the input is invalid, such as ``max_facts < 1``.
            TypeError: If a keyword argument is given.
        """
        _no_call_options(kwargs)
        return self.invoke_with_result(input, config).value

    async def ainvoke(
        self,
        input: FactExtractorInput,  # noqa: A002
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> list[Fact]:
        """Async :meth:`invoke`."""
        _no_call_options(kwargs)
        return (await self.ainvoke_with_result(input, config)).value

    def invoke_with_result(
        self,
        input: FactExtractorInput,  # noqa: A002
        config: RunnableConfig | None = None,
    ) -> ExtractionResult[list[Fact]]:
        """Extract facts and report how the run went (``method``, raw reply).

        Args:
            input: A :class:`FactExtractionInput`, its fields as a dict, or the text.
            config: Runnable config.

        Returns:
            The facts with the method tag; ``skipped`` when the text was empty.
        """

        def extract(child: RunnableConfig) -> ExtractionResult[list[Fact]]:
            request = _as_request(input)  # inside the run: a bad input is its error
            if not request.text.strip():
                return _skipped()
            variables = self._variables(request)
            return self.extractor.invoke_with_result(variables, child, max_items=request.max_facts)

        return run_as_chain(self, extract, input, config, **self._run_options())

    async def ainvoke_with_result(
        self,
        input: FactExtractorInput,  # noqa: A002
        config: RunnableConfig | None = None,
    ) -> ExtractionResult[list[Fact]]:
        """Async :meth:`invoke_with_result`."""

        async def extract(child: RunnableConfig) -> ExtractionResult[list[Fact]]:
            request = _as_request(input)  # inside the run: a bad input is its error
            if not request.text.strip():
                return _skipped()
            variables = self._variables(request)
            return await self.extractor.ainvoke_with_result(
                variables, child, max_items=request.max_facts
            )

        return await arun_as_chain(self, extract, input, config, **self._run_options())

    def _run_options(self) -> dict[str, Any]:
        # The inner extractor reports its own runs; a skipped run is reported here.
        return {
            "output": _facts,
            "event": EXTRACTION_EVENT,
            "event_data": lambda result: (
                result.event_data(self.get_name()) if _is_skipped(result) else None
            ),
        }

    @staticmethod
    def _variables(request: FactExtractionInput) -> dict[str, Any]:
        # A prompt that leaves out an optional variable ignores its value.
        return {
            "text": request.text,
            "context_section": render_context_section(request.context_hints),
            "max_facts": request.max_facts,
        }


class FactExtractorBuilder(ComponentBuilder["FactExtractor"]):
    """Step-by-step construction of a :class:`FactExtractor`.

    Example:
        ```python
        from langchain_ollama import ChatOllama
        from cogito_lc import FactExtractor

        extractor = (
            FactExtractor.builder(ChatOllama(model="llama3.2"))
            .prompt("List the billing facts in {text}, at most {max_facts}.")
            .model("qwen2.5:3b")
            .raise_on_error()
            .build()
        )
        extractor.extractor.llm.model, extractor.prompt.input_variables
        # ('qwen2.5:3b', ['max_facts', 'text'])
        ```
    """

    def __init__(self, llm: Runnable[Any, Any]) -> None:
        """Start a builder for the chat model ``llm``."""
        super().__init__(llm)

    def prompt_template(self, template: PromptLike) -> FactExtractorBuilder:
        """Deprecated alias of :meth:`prompt`."""
        warnings.warn(
            "FactExtractorBuilder.prompt_template() is deprecated; use prompt() instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.prompt(template)

    def raise_on_error(self, value: bool = True) -> FactExtractorBuilder:
        """Raise model failures instead of returning ``[]``."""
        return self._with(raise_on_error=value)

    def timeout(self, seconds: float | None) -> FactExtractorBuilder:
        """Wait at most ``seconds`` for the model (``None``: the client's own timeout)."""
        return self._with(timeout=seconds)

    def _create(self, llm: Runnable[Any, Any] | None, **fields: Any) -> FactExtractor:
        """Create the fact extractor.

        Raises:
            PromptVariablesError: If the prompt template has the wrong variables.
        """
        assert llm is not None  # noqa: S101 - the builder is started with a chat model
        return FactExtractor.from_llm(llm, **fields)


class FactListOutputParser(BaseOutputParser[list[Fact]]):
    """Parse a chat model's reply into facts, as tolerantly as :class:`FactExtractor` does.

    Accepts ``{"items": [...]}`` (what the default prompt and schema ask for) or a
    bare array, inside code fences, after ``<think>`` blocks or among prose, with
    trailing commas or cut off mid-array. Invalid items are dropped; a reply with
    no JSON, or whose items are all invalid, raises ``OutputParserException``.

    Example:
        ```python
        from langchain_core.language_models import FakeListChatModel
        from langchain_core.prompts import ChatPromptTemplate
        from cogito_lc import FactListOutputParser

        llm = FakeListChatModel(
            responses=['Sure: {"items": [{"content": "Deploys freeze on Fridays.", '
                       '"kind": "rule", "importance": 0.9}, {"content": "?", "kind": "x"}]}']
        )
        prompt = ChatPromptTemplate.from_template("Facts in: {text}")
        chain = prompt | llm | FactListOutputParser()
        chain.invoke({"text": "No deploys on Fridays."})
        # [Fact(content='Deploys freeze on Fridays.', kind=<FactKind.RULE: 'rule'>,
        #       importance=0.9)]
        ```
    """

    max_facts: int | None = Field(default=None, ge=1)
    """Most facts returned; ``None`` keeps all valid ones."""

    @property
    def _type(self) -> str:
        return "fact_list"

    @property
    def OutputType(self) -> type[list[Fact]]:  # noqa: N802 - the Runnable interface's name
        """``list[Fact]``."""
        return list[Fact]

    def parse(self, text: str) -> list[Fact]:
        """Parse the reply text.

        Args:
            text: The model's reply.

        Returns:
            The valid facts, at most ``max_facts``; ``[]`` for an empty answer.

        Raises:
            OutputParserException: If the reply holds no JSON list or object, or none
                of its items is a valid fact.
        """
        try:
            items, _ = decode_items(text)
        except JsonExtractionError as exc:
            raise OutputParserException(str(exc), llm_output=text) from exc
        facts, errors = validate_items(items, Fact, distinct=True)
        if items and not facts:
            msg = f"none of the {len(items)} items of the reply is a valid Fact: {errors[0][1]}"
            raise OutputParserException(msg, llm_output=text)
        return facts if self.max_facts is None else facts[: self.max_facts]

    def get_format_instructions(self) -> str:
        """Describe the reply the parser expects, for a prompt."""
        return (
            f'Return a JSON object only, no prose: {{"{LIST_WRAPPER_KEY}": [{{"content": '
            '"...", "kind": "rule|preference|context|decision|observation", "importance": '
            f'0.5}}]}}. With no facts, return {{"{LIST_WRAPPER_KEY}": []}}.'
        )


def _skipped() -> ExtractionResult[list[Fact]]:
    return ExtractionResult([], ExtractionMethod.SKIPPED)


def _facts(result: ExtractionResult[list[Fact]]) -> list[Fact]:
    return result.value


def _is_skipped(result: ExtractionResult[list[Fact]]) -> bool:
    return result.method is ExtractionMethod.SKIPPED


def _as_request(value: Any) -> FactExtractionInput:
    if isinstance(value, FactExtractionInput):
        return value
    if isinstance(value, str):
        return FactExtractionInput(text=value)
    if isinstance(value, dict):
        _check_fields(value)
        return FactExtractionInput.model_validate(value)
    msg = (
        "FactExtractor takes a FactExtractionInput, a dict of its fields or a string, "
        f"got {type(value).__name__}."
    )
    raise TypeError(msg)


def _check_fields(value: dict[str, Any]) -> None:
    """Refuse an input key that is no field, naming the closest one (a typo would cap nothing)."""
    fields = list(FactExtractionInput.model_fields)
    for key in value:
        if key not in fields:
            close = difflib.get_close_matches(str(key), fields, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            msg = f"FactExtractor input has no field {key!r}: {hint}its fields are {fields}."
            raise ValueError(msg)


def _no_call_options(kwargs: dict[str, Any]) -> None:
    """Refuse keyword options, which would otherwise pass unnoticed (a typo, a misplaced cap)."""
    if kwargs:
        msg = (
            f"FactExtractor.invoke takes no keyword options, got {sorted(kwargs)}: put "
            "max_facts or context_hints in the input, e.g. "
            "invoke({'text': ..., 'max_facts': 3})."
        )
        raise TypeError(msg)
