"""``LlmExtractor[O]``: a runnable that turns text into pydantic objects with a chat model.

The extractor formats a prompt, calls a chat model and parses the reply into a
pydantic model ``O`` (or a list of them). Where the chat model supports JSON-schema
constrained output it is used, so the model cannot emit invalid JSON; otherwise
the reply is parsed tolerantly (code fences, ``<think>`` blocks, prose around the
JSON, trailing commas, a single object where a list was asked, a list cut short).

How each run went is reported as a method tag (:class:`ExtractionMethod`; every
tag of the package is listed under :data:`~cogito_lc.METADATA_KEY`). A failed
model call, or one that outlasts ``timeout``, returns the empty value and logs a
warning unless ``raise_on_error=True``.
Callers read it from :meth:`LlmExtractor.invoke_with_result`, which returns an
:class:`ExtractionResult`; tracing and dashboards receive it as the custom event
``cogito_lc.extraction`` (see :data:`EXTRACTION_EVENT`), dispatched inside every
run and visible to callback handlers' ``on_custom_event`` and to ``astream_events``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, TypeVar, cast

from langchain_core.prompt_values import PromptValue
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import (
    Runnable,
    RunnableConfig,
    RunnableSerializable,
)
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from cogito_lc._core.deadline import acall_with_deadline, call_with_deadline
from cogito_lc._core.display import escape_controls
from cogito_lc._core.json_repair import (
    JsonExtractionError,
    TruncatedJsonError,
    extract_json,
    json_value_as_list,
    salvage_json_array,
)
from cogito_lc._core.model_call import (
    ModelAnswer,
    acall_model,
    arun_as_chain,
    call_model,
    failure_kind,
    reply_text,
    run_as_chain,
    with_model_name,
)
from cogito_lc._core.structured_output import (
    ModelReply,
    StructuredOutputMode,
    detect_structured_output_mode,
    request_schema,
    structured_output_kwargs,
)
from cogito_lc._core.transport import is_timeout_error, is_transport_error, schema_may_be_rejected
from cogito_lc.prompts.builders import ComponentBuilder
from cogito_lc.prompts.registry import PromptLike, PromptRegistry, as_chat_prompt, resolve_prompt

__all__ = [
    "EXTRACTION_EVENT",
    "ExtractionMethod",
    "ExtractionResult",
    "ExtractorInput",
    "LlmExtractor",
    "LlmExtractorBuilder",
    "StructuredOutputMode",
    "decode_items",
    "detect_structured_output_mode",
    "is_schema_rejection",
    "is_timeout_error",
    "is_transport_error",
    "reply_text",
    "request_schema",
    "structured_output_kwargs",
    "validate_items",
    "with_model_name",
]

logger = logging.getLogger(__name__)

O = TypeVar("O", bound=BaseModel)  # noqa: E741
P = TypeVar("P", bound=BaseModel)
T = TypeVar("T")

EXTRACTION_EVENT = "cogito_lc.extraction"
"""Name of the custom event dispatched at the end of every extraction run.

Its data is a dict with ``name`` (the runnable's name), ``method``, ``count`` (items
returned), ``dropped`` (list items rejected by validation) and ``error``.
"""

ExtractorInput = str | dict[str, Any]
"""What :class:`LlmExtractor` accepts: the text, or a dict of prompt variables."""

_RAW_PREVIEW_CHARS = 200


class ExtractionMethod(str, Enum):
    """How an extraction run went.

    Example:
        ```python
        from cogito_lc import ExtractionMethod

        ExtractionMethod("parse_error") is ExtractionMethod.PARSE_ERROR
        # True
        ```
    """

    STRUCTURED = "structured"
    """The model was called with a JSON schema and its reply parsed."""

    TEXT = "text"
    """The model was called without a schema and its reply parsed."""

    PARSE_ERROR = "parse_error"
    """The reply could not be parsed; the empty value was returned."""

    ERROR = "error"
    """The model could not be reached, failed, or did not answer within ``timeout``; the
    empty value was returned."""

    SKIPPED = "skipped"
    """No model call was needed, for example because the input text was empty."""


@dataclass(frozen=True)
class ExtractionResult(Generic[T]):
    """The value of an extraction run together with how it was obtained.

    Example:
        ```python
        from langchain_core.language_models import FakeListChatModel
        from pydantic import BaseModel
        from cogito_lc import ExtractionMethod, LlmExtractor


        class Invoice(BaseModel):
            number: str


        llm = FakeListChatModel(responses=["Sorry, I cannot find an invoice."])
        extractor = LlmExtractor.from_llm(llm, output=Invoice, prompt="Invoice in: {text}")
        result = extractor.invoke_with_result("Thanks for the call today.")
        result.method is ExtractionMethod.PARSE_ERROR, result.value
        # (True, None)
        ```
    """

    value: T
    """Parsed value: a model instance, ``None``, or a list of model instances."""

    method: ExtractionMethod
    """How the run went."""

    raw: str | None = None
    """The model's reply, or ``None`` when the model was not called or not reached."""

    error: str | None = None
    """Why the run fell back to the empty value, if it did."""

    dropped: int = 0
    """List items that were parsed but failed validation and were dropped."""

    def event_data(self, name: str) -> dict[str, Any]:
        """The payload of :data:`EXTRACTION_EVENT` for this result."""
        value = self.value
        count = len(value) if isinstance(value, list) else int(value is not None)
        return {
            "name": name,
            "method": self.method.value,
            "count": count,
            "dropped": self.dropped,
            "error": self.error,
        }


class LlmExtractor(RunnableSerializable[ExtractorInput, Any], Generic[O]):
    """Extract a pydantic model ``O``, or a list of them, from text with a chat model.

    Input is a string (bound to the prompt variable ``input_key``) or a dict of
    prompt variables. Output is an ``O`` or ``None``, or a ``list[O]`` when
    ``many=True`` (an item equal to an earlier one is left out). Parse failures
    never raise; model failures raise only with ``raise_on_error=True``. Use
    :meth:`invoke_with_result` to learn how a run went.

    ``LlmExtractor[Person](llm=..., prompt=...)`` takes ``output`` from the type
    parameter, and the output schema (:meth:`get_output_jsonschema`) is the one of
    ``Person | None``, or of ``list[Person]`` when ``many=True``.

    Example:
        ```python
        from langchain_core.language_models import FakeListChatModel
        from pydantic import BaseModel
        from cogito_lc import LlmExtractor


        class Person(BaseModel):
            name: str
            role: str


        # Any chat model works, e.g. ChatOllama(model="qwen2.5:3b").
        reply = '[{"name": "Ada", "role": "designer"}, {"name": "Charles", "role": "funder"}]'
        llm = FakeListChatModel(responses=[reply])
        extractor = (
            LlmExtractor.builder(llm)
            .prompt("List the people in this text as JSON objects: {text}")
            .output(Person, many=True)
            .build()
        )
        extractor.invoke("Ada designed the engine; Charles funded it.")
        # [Person(name='Ada', role='designer'), Person(name='Charles', role='funder')]
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    llm: Runnable[Any, Any]
    """Chat model (or a bound chat model) that produces the reply."""

    prompt: ChatPromptTemplate
    """Prompt formatted with the input variables."""

    output: type[O]
    """Pydantic model of one extracted item."""

    many: bool = False
    """Whether to extract a list of ``output`` items instead of one. Without it, a reply
    that is a list of several objects yields the first, with a warning."""

    input_key: str | None = None
    """Prompt variable a plain-string input fills; by default the prompt's only
    variable, or ``text``. A string for a prompt with any other variable raises
    ``ValueError`` before the prompt is formatted: pass a dict of its variables."""

    structured_output: StructuredOutputMode = "auto"
    """How the output schema reaches the model (see :data:`StructuredOutputMode`)."""

    raise_on_error: bool = False
    """Raise model failures instead of returning the empty value."""

    timeout: float | None = Field(default=None, gt=0)
    """Seconds one extraction may wait for the model, every attempt included (a retry
    without the schema too), before it ends as ``error`` with a ``DeadlineExceededError``;
    ``None`` waits as long as the chat model's own client does. Async calls are
    cancelled. Sync calls run in a worker thread the caller stops waiting for; the
    abandoned request ends with the client's own timeout."""

    @model_validator(mode="before")
    @classmethod
    def _output_from_type_parameter(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("output") is None:
            parameter = _type_parameter(cls)
            if parameter is not None:
                return {**data, "output": parameter}
        return data

    @property
    def OutputType(self) -> Any:  # noqa: N802 - the Runnable interface's name
        """``list[O]`` when ``many=True``, else ``O | None``."""
        return list[self.output] if self.many else self.output | None  # type: ignore[name-defined]

    @classmethod
    def builder(cls, llm: Runnable[Any, Any]) -> LlmExtractorBuilder[BaseModel]:
        """Start building an extractor around ``llm``.

        Args:
            llm: Chat model to call.

        Returns:
            A builder; set at least ``prompt(...)`` and ``output(...)``.
        """
        return LlmExtractorBuilder(llm)

    @classmethod
    def from_llm(
        cls,
        llm: Runnable[Any, Any],
        *,
        prompt: PromptLike | None = None,
        output: type[P] | None = None,
        **fields: Any,
    ) -> LlmExtractor[P]:
        """Create an extractor from a chat model, a prompt and an output model.

        Args:
            llm: Chat model to call.
            prompt: A chat prompt, or the f-string text of one human message (required).
            output: Pydantic model of one extracted item (required).
            **fields: Other fields: ``many``, ``structured_output``, ``raise_on_error``,
                ``input_key``, ``timeout``, ``name``.

        Returns:
            The extractor.

        Raises:
            ValueError: If ``prompt`` or ``output`` is missing.
        """
        missing = [key for key, value in (("prompt", prompt), ("output", output)) if value is None]
        if missing:
            msg = f"LlmExtractor.from_llm(llm) needs {' and '.join(missing)}."
            raise ValueError(msg)
        assert prompt is not None  # noqa: S101 - checked above
        return LlmExtractor(llm=llm, prompt=as_chat_prompt(prompt), output=output, **fields)

    @property
    def empty_value(self) -> Any:
        """The value returned when nothing could be extracted: ``[]`` or ``None``."""
        return [] if self.many else None

    def resolved_structured_output(self) -> StructuredOutputMode:
        """Return the structured-output mode in effect, resolving ``auto``."""
        if self.structured_output == "auto":
            return detect_structured_output_mode(self.llm)
        return self.structured_output

    def invoke(
        self,
        input: ExtractorInput,  # noqa: A002
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> Any:
        """Extract from ``input``; see :meth:`invoke_with_result` for the method tag.

        Args:
            input: Text, or a dict of prompt variables.
            config: Runnable config (callbacks, tags, metadata, run name).
            **kwargs: ``max_items`` caps a list result.

        Returns:
            An ``O``, ``None``, or a ``list[O]``.
        """
        return self.invoke_with_result(input, config, **kwargs).value

    async def ainvoke(
        self,
        input: ExtractorInput,  # noqa: A002
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> Any:
        """Async :meth:`invoke`; the model is awaited, never called in the event loop."""
        return (await self.ainvoke_with_result(input, config, **kwargs)).value

    def invoke_with_result(
        self,
        input: ExtractorInput,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        max_items: int | None = None,
    ) -> ExtractionResult[Any]:
        """Extract from ``input`` and report how the run went.

        Args:
            input: Text, or a dict of prompt variables.
            config: Runnable config (callbacks, tags, metadata, run name).
            max_items: For list outputs, the most items to return; also sent to the
                model as ``maxItems`` in the schema.

        Returns:
            The value, the method tag and the raw reply.

        Raises:
            ValueError: If ``max_items`` is less than 1, or ``input`` is a string and the
                prompt has a variable other than ``input_key``.
            Exception: Whatever the model raised, when ``raise_on_error`` is set.
        """
        return run_as_chain(
            self,
            lambda child: self._extract(self._variables(input, max_items), child, max_items),
            input,
            config,
            output=_value,
            event=EXTRACTION_EVENT,
            event_data=lambda result: result.event_data(self.get_name()),
        )

    async def ainvoke_with_result(
        self,
        input: ExtractorInput,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        max_items: int | None = None,
    ) -> ExtractionResult[Any]:
        """Async :meth:`invoke_with_result`; the model is called through its async API."""
        return await arun_as_chain(
            self,
            lambda child: self._aextract(self._variables(input, max_items), child, max_items),
            input,
            config,
            output=_value,
            event=EXTRACTION_EVENT,
            event_data=lambda result: result.event_data(self.get_name()),
        )

    def _variables(self, input_: ExtractorInput, max_items: int | None) -> dict[str, Any]:
        if max_items is not None and max_items < 1:
            msg = f"max_items must be at least 1, got {max_items}."
            raise ValueError(msg)
        if isinstance(input_, dict):
            return dict(input_)
        if isinstance(input_, str):
            return {self._string_key(): input_}
        msg = (
            f"{self.get_name()} takes a string or a dict of prompt variables, got "
            f"{type(input_).__name__}."
        )
        raise TypeError(msg)

    def _string_key(self) -> str:
        """The prompt variable a plain string fills; raise if another would stay unfilled."""
        variables = self.prompt.input_variables
        key = self.input_key
        if key is None:
            key = variables[0] if len(variables) == 1 else "text"
        unfilled = [name for name in variables if name != key]
        if unfilled:
            raise ValueError(_unfilled_message(self.get_name(), key, variables, unfilled))
        return key

    def _extract(
        self, variables: dict[str, Any], config: RunnableConfig, max_items: int | None
    ) -> ExtractionResult[Any]:
        prompt_value: PromptValue = self.prompt.invoke(variables, config)
        options = self._call_options(max_items)
        try:
            answer = call_with_deadline(
                lambda: call_model(self.llm, prompt_value, config, **options),
                self.timeout,
                name=f"{self.get_name()}-model-call",
            )
        except Exception as exc:
            return self._failure(exc)
        return self._parse(answer, max_items)

    async def _aextract(
        self, variables: dict[str, Any], config: RunnableConfig, max_items: int | None
    ) -> ExtractionResult[Any]:
        prompt_value: PromptValue = await self.prompt.ainvoke(variables, config)
        try:
            answer = await acall_with_deadline(
                acall_model(self.llm, prompt_value, config, **self._call_options(max_items)),
                self.timeout,
            )
        except Exception as exc:
            return self._failure(exc)
        return self._parse(answer, max_items)

    def _call_options(self, max_items: int | None) -> dict[str, Any]:
        return {
            "structured_output": self.structured_output,
            "output": self.output,
            "many": self.many,
            "max_items": max_items,
            "owner": self.get_name(),
            "log": logger,
        }

    def _failure(self, exc: Exception) -> ExtractionResult[Any]:
        """Report a failed model call as ``error``, or re-raise it with ``raise_on_error``."""
        if self.raise_on_error:
            raise exc
        logger.warning(
            "%s: model call failed (%s: %s); returning %r.",
            self.get_name(),
            type(exc).__name__,
            exc,
            self.empty_value,
            # A failure other than the network's is likely a bug worth its traceback.
            exc_info=exc if failure_kind(exc) == "error" else None,
        )
        return ExtractionResult(
            self.empty_value, ExtractionMethod.ERROR, error=f"{type(exc).__name__}: {exc}"
        )

    def _parse(self, answer: ModelAnswer, max_items: int | None) -> ExtractionResult[Any]:
        reply = answer.reply
        method = ExtractionMethod.STRUCTURED if answer.structured else ExtractionMethod.TEXT
        if not self.many:
            return self._parse_one(reply, method)
        raw = reply.text
        try:
            items = self._items(reply)
        except JsonExtractionError as exc:
            return self._parse_error(raw, exc)
        values, errors = validate_items(items, self.output, distinct=True)
        self._log_dropped(items, errors)
        if items and not values:
            msg = f"none of the {len(items)} items of the reply is a valid {self.output.__name__}"
            return self._parse_error(raw, ValueError(msg), dropped=len(errors))
        if max_items is not None:
            values = values[:max_items]
        return ExtractionResult(values, method, raw, dropped=len(errors))

    def _items(self, reply: ModelReply) -> list[Any]:
        if reply.parsed is not None:
            return json_value_as_list(reply.parsed)
        items, truncated = decode_items(reply.text)
        if truncated:
            logger.warning(
                "%s: the model reply was cut off; kept its %d complete items. Raise the "
                "model's output token limit.",
                self.get_name(),
                len(items),
            )
        return items

    def _parse_one(self, reply: ModelReply, method: ExtractionMethod) -> ExtractionResult[Any]:
        try:
            value = reply.parsed
            if not isinstance(value, dict):
                self._warn_if_several(reply)
                value = extract_json(reply.text, shape="object")
            parsed = self.output.model_validate(value)
        except (JsonExtractionError, ValidationError) as exc:
            return self._parse_error(reply.text, exc)
        return ExtractionResult(parsed, method, reply.text)

    def _warn_if_several(self, reply: ModelReply) -> None:
        """Warn when a single-object extractor is answered with a list of objects."""
        count = _object_count(reply)
        if count > 1:
            logger.warning(
                "%s: the reply is a list of %d %s objects; only the first is read. Set "
                "many=True to extract them all.",
                self.get_name(),
                count,
                self.output.__name__,
            )

    def _log_dropped(self, items: list[Any], errors: list[tuple[int, ValidationError]]) -> None:
        for index, error in errors:
            logger.info(
                "%s: dropped item %d (%s): %s",
                self.get_name(),
                index,
                _summarise(error),
                escape_controls(str(items[index])[:_RAW_PREVIEW_CHARS]),
            )
        if errors:
            logger.warning(
                "%s: dropped %d of %d items that failed validation.",
                self.get_name(),
                len(errors),
                len(items),
            )

    def _parse_error(self, raw: str, exc: Exception, *, dropped: int = 0) -> ExtractionResult[Any]:
        logger.warning(
            "%s: could not parse the model reply (%s); returning %r. Raw reply starts with: %r",
            self.get_name(),
            exc,
            self.empty_value,
            raw[:_RAW_PREVIEW_CHARS],
        )
        return ExtractionResult(
            self.empty_value, ExtractionMethod.PARSE_ERROR, raw, error=str(exc), dropped=dropped
        )


class LlmExtractorBuilder(ComponentBuilder["LlmExtractor[O]"], Generic[O]):
    """Step-by-step construction of an :class:`LlmExtractor`.

    Example:
        ```python
        from langchain_core.language_models import FakeListChatModel
        from pydantic import BaseModel
        from cogito_lc import LlmExtractor


        class Invoice(BaseModel):
            number: str
            total: float


        llm = FakeListChatModel(responses=['Here it is: {"number": "A-17", "total": 99.5}'])
        extractor = (
            LlmExtractor.builder(llm)
            .prompt("Extract the invoice from: {text}")
            .output(Invoice)
            .raise_on_error()
            .name("invoice_extractor")
            .build()
        )
        extractor.invoke("Invoice A-17 over 99.50 EUR is due on 1 May.")
        # Invoice(number='A-17', total=99.5)
        ```
    """

    def __init__(self, llm: Runnable[Any, Any]) -> None:
        """Start a builder for ``llm``."""
        super().__init__(llm)

    def prompt_name(
        self, name: str, *, registry: PromptRegistry | None = None
    ) -> LlmExtractorBuilder[O]:
        """Use the prompt registered under ``name``.

        It is taken from ``registry``, else from the one given to :meth:`registry`,
        else from the default registry.
        """
        source = registry if registry is not None else self._fields.get("registry")
        return self._with(prompt=resolve_prompt(name, registry=source))

    def output(self, model: type[P], *, many: bool = False) -> LlmExtractorBuilder[P]:
        """Extract ``model`` instances; ``many=True`` for a list of them."""
        self._fields.update(output=model, many=many)
        return cast("LlmExtractorBuilder[P]", self)

    def input_key(self, key: str) -> LlmExtractorBuilder[O]:
        """Set the prompt variable a plain-string input fills."""
        return self._with(input_key=key)

    def raise_on_error(self, value: bool = True) -> LlmExtractorBuilder[O]:
        """Raise model failures instead of returning the empty value."""
        return self._with(raise_on_error=value)

    def timeout(self, seconds: float | None) -> LlmExtractorBuilder[O]:
        """Wait at most ``seconds`` for the model (``None``: the client's own timeout)."""
        return self._with(timeout=seconds)

    def _create(self, llm: Runnable[Any, Any] | None, **fields: Any) -> LlmExtractor[O]:
        """Create the extractor.

        Raises:
            ValueError: If ``prompt(...)`` or ``output(...)`` was not called.
        """
        missing = [key for key in ("prompt", "output") if key not in fields]
        if missing:
            calls = ", ".join(f"{key}(...)" for key in missing)
            msg = f"LlmExtractor.builder(llm) needs {calls} before build()."
            raise ValueError(msg)
        fields.pop("registry", None)
        assert llm is not None  # noqa: S101 - the builder is started with a chat model
        return cast("LlmExtractor[O]", LlmExtractor.from_llm(llm, **fields))


def decode_items(raw: str) -> tuple[list[Any], bool]:
    """Decode the JSON list in a model reply tolerantly (see :func:`extract_json_list`).

    A value that can hold the items (an object, or a list holding one) wins over
    brackets in prose before it, such as ``"on a [0, 1] scale"``.

    Args:
        raw: The reply text.

    Returns:
        The items, and whether the reply was cut off (then only its complete items).

    Raises:
        JsonExtractionError: If the reply holds no list, object or complete item.
    """
    try:
        return json_value_as_list(extract_json(raw, shape="any", prefer=_holds_objects)), False
    except TruncatedJsonError:
        items = salvage_json_array(raw)
        if not items:
            raise
        return items, True


def _object_count(reply: ModelReply) -> int:
    """How many objects the list a reply stands for holds (0 when it is not a list)."""
    value = reply.parsed
    if value is None:
        try:
            value = extract_json(reply.text, shape="any", prefer=_holds_objects)
        except JsonExtractionError:
            return 0
    if not isinstance(value, list):
        return 0
    return sum(isinstance(item, dict) for item in value)


def _holds_objects(value: Any) -> bool:
    """Whether a decoded value can hold the items (objects), not prose's brackets (``[0, 1]``)."""
    return isinstance(value, dict) or (
        isinstance(value, list) and any(isinstance(item, dict) for item in value)
    )


def validate_items(
    items: list[Any], output: type[P], *, distinct: bool = False
) -> tuple[list[P], list[tuple[int, ValidationError]]]:
    """Validate each item as ``output``, keeping the valid ones.

    Args:
        items: Decoded JSON items.
        output: Pydantic model of one item.
        distinct: Keep only the first of items that validate equal (a model that
            repeats itself), so repeats take no place under a cap on the items.

    Returns:
        The valid items in order, and the index and error of each dropped one.
    """
    values: list[P] = []
    errors: list[tuple[int, ValidationError]] = []
    for index, item in enumerate(items):
        try:
            value = output.model_validate(item)
        except ValidationError as exc:
            errors.append((index, exc))
            continue
        if not (distinct and value in values):
            values.append(value)
    return values, errors


def _type_parameter(cls: type[Any]) -> type[BaseModel] | None:
    """The pydantic model ``cls`` was parametrised with, as in ``LlmExtractor[Person]``."""
    metadata: dict[str, Any] = getattr(cls, "__pydantic_generic_metadata__", None) or {}
    arguments: tuple[Any, ...] = tuple(metadata.get("args") or ())
    if len(arguments) != 1:
        return None
    argument = arguments[0]
    return argument if isinstance(argument, type) and issubclass(argument, BaseModel) else None


def _unfilled_message(name: str, key: str, variables: list[str], unfilled: list[str]) -> str:
    """Why a plain-string input cannot fill the prompt, and what to pass instead."""
    if len(variables) == 1:
        return (
            f"{name}: input_key is {key!r}, but the prompt's only variable is "
            f"{variables[0]!r}; set input_key={variables[0]!r} or leave it unset."
        )
    example = ", ".join(f"{variable!r}: ..." for variable in variables)
    return (
        f"{name} got a plain string, but the prompt's variables are {variables} and a "
        f"string fills only input_key ({key!r}), leaving {unfilled} unfilled. Pass a dict "
        f"{{{example}}}, or bind the others with prompt.partial(...)."
    )


def _value(result: ExtractionResult[Any]) -> Any:
    return result.value


def _summarise(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(part) for part in error['loc']) or 'item'}: {error['msg']}"
        for error in exc.errors()
    )


is_schema_rejection = schema_may_be_rejected
"""Whether a failed call made with an output schema may succeed without it."""
