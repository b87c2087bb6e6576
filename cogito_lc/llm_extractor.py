"""``LlmExtractor[O]``: a runnable that turns text into pydantic objects with a chat model.

The extractor formats a prompt, calls a chat model and parses the reply into a
pydantic model ``O`` (or a list of them). Where the chat model supports JSON-schema
constrained output it is used, so the model cannot emit invalid JSON; otherwise
the reply is parsed tolerantly (code fences, ``<think>`` blocks, prose around the
JSON, trailing commas, a single object where a list was asked, a list cut short).

How each run went is reported as a ``method``:

- ``structured``: the model was called with a JSON schema and its reply parsed.
- ``text``: the model was called without a schema and its reply parsed.
- ``parse_error``: the reply could not be parsed; the empty value is returned.
- ``error``: the model could not be reached (connection refused, timeout, HTTP 5xx
  or 429); the empty value is returned unless ``raise_on_error=True``.
- ``skipped``: no model call was needed (used by components built on the extractor).

Callers read it from :meth:`LlmExtractor.invoke_with_result`, which returns an
:class:`ExtractionResult`; tracing and dashboards receive it as the custom event
``cogito_lc.extraction`` (see :data:`EXTRACTION_EVENT`), dispatched inside every
run and visible to callback handlers' ``on_custom_event`` and to ``astream_events``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, Literal, TypeVar, cast

from langchain_core.callbacks import adispatch_custom_event, dispatch_custom_event
from langchain_core.messages import BaseMessage
from langchain_core.prompt_values import PromptValue
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import (
    Runnable,
    RunnableBinding,
    RunnableConfig,
    RunnableSerializable,
)
from langchain_core.runnables.config import (
    ensure_config,
    get_async_callback_manager_for_config,
    get_callback_manager_for_config,
    patch_config,
)
from langchain_core.utils.json_schema import dereference_refs
from pydantic import BaseModel, ConfigDict, ValidationError

from cogito_lc._json import (
    JsonExtractionError,
    TruncatedJsonError,
    extract_json,
    extract_json_list,
    salvage_json_array,
)
from cogito_lc.prompts import PromptLike, PromptRegistry, as_chat_prompt, resolve_prompt

__all__ = [
    "EXTRACTION_EVENT",
    "ExtractionMethod",
    "ExtractionResult",
    "ExtractorInput",
    "LlmExtractor",
    "LlmExtractorBuilder",
    "StructuredOutputMode",
    "arun_traced",
    "detect_structured_output_mode",
    "is_transport_error",
    "request_schema",
    "run_traced",
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

StructuredOutputMode = Literal["auto", "json_schema", "json_object", "format", "none"]
"""How the JSON schema of the output reaches the chat model.

- ``auto``: ``format`` for ``ChatOllama``, ``json_schema`` for ``ChatOpenAI`` and
  other OpenAI chat models, ``none`` for everything else.
- ``json_schema``: ``response_format={"type": "json_schema", ...}`` (OpenAI, vLLM,
  LM Studio, llama.cpp's ``llama-server``).
- ``json_object``: ``response_format={"type": "json_object", "schema": ...}``
  (llama-cpp-python's server, which turns the schema into a grammar).
- ``format``: Ollama's ``format=<schema>``.
- ``none``: no schema; the reply is parsed tolerantly.

If a call with a schema fails with HTTP 400, 422 or 5xx (llama-cpp-python's server
answers 500 to a ``json_schema`` response format), it is retried once without the
schema and reported as ``text``.
"""

ExtractorInput = str | dict[str, Any]

_RAW_PREVIEW_CHARS = 200
_SCHEMA_REJECTED_STATUSES = frozenset({400, 422})
_SERVER_ERROR_STATUS = 500
_RETRYABLE_STATUSES = frozenset({408, 429})
_TRANSPORT_ERROR_NAMES = frozenset(
    {
        "APIConnectionError",
        "APITimeoutError",
        "ConnectError",
        "ConnectTimeout",
        "NetworkError",
        "PoolTimeout",
        "ReadError",
        "ReadTimeout",
        "RemoteProtocolError",
        "TimeoutException",
        "TransportError",
        "WriteTimeout",
    }
)
_LIST_WRAPPER_KEY = "items"


class ExtractionMethod(str, Enum):
    """How an extraction run went."""

    STRUCTURED = "structured"
    """The model was called with a JSON schema and its reply parsed."""

    TEXT = "text"
    """The model was called without a schema and its reply parsed."""

    PARSE_ERROR = "parse_error"
    """The reply could not be parsed; the empty value was returned."""

    ERROR = "error"
    """The model could not be reached; the empty value was returned."""

    SKIPPED = "skipped"
    """No model call was needed, for example because the input text was empty."""


@dataclass(frozen=True)
class ExtractionResult(Generic[T]):
    """The value of an extraction run together with how it was obtained.

    Example:
        ```python
        result = extractor.invoke_with_result("Invoices are sent monthly.")
        if result.method == ExtractionMethod.PARSE_ERROR:
            print(result.raw)
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


def is_transport_error(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it wraps) means the model could not be reached.

    Connection failures, timeouts, HTTP 5xx, 408 and 429 count; bad requests,
    authentication failures and programming errors do not. Client libraries are
    recognised by their exception names, so none of them has to be installed.

    Args:
        exc: The exception raised by a chat model call.

    Returns:
        ``True`` for a transport failure worth retrying later.
    """
    for error in _exception_chain(exc):
        if isinstance(error, (OSError, TimeoutError, asyncio.TimeoutError)):
            return True
        if any(cls.__name__ in _TRANSPORT_ERROR_NAMES for cls in type(error).__mro__):
            return True
        status = _status_code(error)
        if status is not None and (status >= 500 or status in _RETRYABLE_STATUSES):
            return True
    return False


def with_model_name(llm: Runnable[Any, Any], model: str) -> Runnable[Any, Any]:
    """Return a copy of ``llm`` that uses the model ``model``.

    Works for chat models with a ``model`` or ``model_name`` field (``ChatOllama``,
    ``ChatOpenAI`` and most others), also when wrapped by ``.bind(...)``.

    Args:
        llm: A chat model, possibly bound.
        model: Model name, such as ``"qwen2.5:3b"``.

    Returns:
        The reconfigured copy; ``llm`` itself is unchanged.

    Raises:
        ValueError: If ``model`` is empty or the chat model has no model-name field.
    """
    if not model:
        msg = "model must be a non-empty model name."
        raise ValueError(msg)
    if isinstance(llm, RunnableBinding):
        return llm.model_copy(update={"bound": with_model_name(llm.bound, model)})
    fields = type(llm).model_fields if isinstance(llm, BaseModel) else {}
    for field_name in ("model_name", "model"):
        if field_name in fields:
            return cast(
                "Runnable[Any, Any]", cast("BaseModel", llm).model_copy(update={field_name: model})
            )
    msg = (
        f"{type(llm).__name__} has no 'model' or 'model_name' field; set the model on "
        "the chat model itself instead of calling model()."
    )
    raise ValueError(msg)


def detect_structured_output_mode(llm: Runnable[Any, Any]) -> StructuredOutputMode:
    """Pick the structured-output mode for ``llm`` as ``auto`` does.

    Args:
        llm: A chat model, possibly bound.

    Returns:
        ``format`` for Ollama, ``json_schema`` for OpenAI chat models, else ``none``.
    """
    model = llm
    while isinstance(model, RunnableBinding):
        model = model.bound
    class_names = {cls.__name__ for cls in type(model).__mro__}
    if "ChatOllama" in class_names:
        return "format"
    if "BaseChatOpenAI" in class_names:
        return "json_schema"
    return "none"


def request_schema(
    output: type[BaseModel], *, many: bool, max_items: int | None = None
) -> dict[str, Any]:
    """Build the JSON schema sent to the model for ``output``.

    References are inlined, titles and defaults removed, and every object closed
    (``additionalProperties: false``, all properties required) so grammar-based
    decoders stay tight. A list is wrapped in an object under ``items`` because
    several servers only accept an object at the root.

    Args:
        output: Pydantic model of one item.
        many: Whether a list of items is asked for.
        max_items: Upper bound on the list length, if any.

    Returns:
        The schema.
    """
    item: dict[str, Any] = _tighten(dereference_refs(output.model_json_schema()))
    if not many:
        return item
    array: dict[str, Any] = {"type": "array", "items": item}
    if max_items is not None:
        array["maxItems"] = max_items
    return {
        "type": "object",
        "properties": {_LIST_WRAPPER_KEY: array},
        "required": [_LIST_WRAPPER_KEY],
        "additionalProperties": False,
    }


class LlmExtractor(RunnableSerializable[ExtractorInput, Any], Generic[O]):
    """Extract a pydantic model ``O``, or a list of them, from text with a chat model.

    Input is a string (bound to the prompt variable ``input_key``) or a dict of
    prompt variables. Output is an ``O`` or ``None``, or a ``list[O]`` when
    ``many=True``. Parse failures never raise; transport failures raise only with
    ``raise_on_error=True``. Use :meth:`invoke_with_result` to learn how a run went.

    Example:
        ```python
        from pydantic import BaseModel
        from langchain_ollama import ChatOllama
        from cogito_lc import LlmExtractor


        class Person(BaseModel):
            name: str
            role: str


        extractor = (
            LlmExtractor.builder(ChatOllama(model="qwen2.5:3b"))
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
    """Whether to extract a list of ``output`` items instead of one."""

    input_key: str | None = None
    """Prompt variable a plain-string input fills; by default the prompt's only
    variable, or ``text``."""

    structured_output: StructuredOutputMode = "auto"
    """How the output schema reaches the model (see :data:`StructuredOutputMode`)."""

    raise_on_error: bool = False
    """Raise transport failures instead of returning the empty value."""

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
        output: type[P],
        prompt: PromptLike,
        many: bool = False,
        structured_output: StructuredOutputMode = "auto",
        raise_on_error: bool = False,
    ) -> LlmExtractor[P]:
        """Create an extractor from a chat model, an output model and a prompt.

        Args:
            llm: Chat model to call.
            output: Pydantic model of one extracted item.
            prompt: A chat prompt, or the f-string text of one human message.
            many: Extract a list of items.
            structured_output: How the output schema reaches the model.
            raise_on_error: Raise transport failures instead of returning empty.

        Returns:
            The extractor.
        """
        return LlmExtractor(
            llm=llm,
            prompt=as_chat_prompt(prompt),
            output=output,
            many=many,
            structured_output=structured_output,
            raise_on_error=raise_on_error,
        )

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
            Exception: Transport failures when ``raise_on_error`` is set; bad
                requests, authentication and programming errors always.
        """
        variables = self._variables(input)
        return run_traced(
            self,
            input,
            config,
            lambda child: self._extract(variables, child, max_items),
            event=True,
        )

    async def ainvoke_with_result(
        self,
        input: ExtractorInput,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        max_items: int | None = None,
    ) -> ExtractionResult[Any]:
        """Async :meth:`invoke_with_result`."""
        variables = self._variables(input)
        return await arun_traced(
            self,
            input,
            config,
            lambda child: self._aextract(variables, child, max_items),
            event=True,
        )

    def _variables(self, input_: ExtractorInput) -> dict[str, Any]:
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
        if self.input_key is not None:
            return self.input_key
        variables = self.prompt.input_variables
        return variables[0] if len(variables) == 1 else "text"

    def _call_kwargs(self, mode: StructuredOutputMode, max_items: int | None) -> dict[str, Any]:
        if mode == "none":
            return {}
        schema = request_schema(self.output, many=self.many, max_items=max_items)
        if mode == "format":
            return {"format": schema}
        if mode == "json_object":
            return {"response_format": {"type": "json_object", "schema": schema}}
        name = self.output.__name__ + ("List" if self.many else "")
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": False},
            }
        }

    def _attempts(self, max_items: int | None) -> Iterator[tuple[bool, dict[str, Any]]]:
        mode = self.resolved_structured_output()
        if mode != "none":
            yield True, self._call_kwargs(mode, max_items)
        yield False, {}

    def _extract(
        self, variables: dict[str, Any], config: RunnableConfig, max_items: int | None
    ) -> ExtractionResult[Any]:
        prompt_value = self.prompt.invoke(variables, config)
        for structured, kwargs in self._attempts(max_items):
            try:
                reply = self.llm.invoke(prompt_value, config, **kwargs)
            except Exception as exc:
                failure = self._failure(exc, structured=structured)
                if failure is None:
                    continue
                return failure
            return self._parse(_reply_text(reply), structured=structured, max_items=max_items)
        msg = "unreachable: the unstructured attempt always returns"
        raise AssertionError(msg)

    async def _aextract(
        self, variables: dict[str, Any], config: RunnableConfig, max_items: int | None
    ) -> ExtractionResult[Any]:
        prompt_value: PromptValue = await self.prompt.ainvoke(variables, config)
        for structured, kwargs in self._attempts(max_items):
            try:
                reply = await self.llm.ainvoke(prompt_value, config, **kwargs)
            except Exception as exc:
                failure = self._failure(exc, structured=structured)
                if failure is None:
                    continue
                return failure
            return self._parse(_reply_text(reply), structured=structured, max_items=max_items)
        msg = "unreachable: the unstructured attempt always returns"
        raise AssertionError(msg)

    def _failure(self, exc: Exception, *, structured: bool) -> ExtractionResult[Any] | None:
        """Classify a failed model call: ``None`` means retry without a schema."""
        if structured and _may_reject_schema(_status_code_in_chain(exc)):
            logger.warning(
                "%s: the model server rejected the output schema (%s); retrying without "
                "it. Set structured_output='none' or the mode your server supports.",
                self.get_name(),
                exc,
            )
            return None
        if not is_transport_error(exc) or self.raise_on_error:
            raise exc
        logger.warning(
            "%s: model call failed (%s: %s); returning %r.",
            self.get_name(),
            type(exc).__name__,
            exc,
            self.empty_value,
        )
        return ExtractionResult(
            self.empty_value, ExtractionMethod.ERROR, error=f"{type(exc).__name__}: {exc}"
        )

    def _parse(self, raw: str, *, structured: bool, max_items: int | None) -> ExtractionResult[Any]:
        method = ExtractionMethod.STRUCTURED if structured else ExtractionMethod.TEXT
        if not self.many:
            return self._parse_one(raw, method)
        try:
            items = extract_json_list(raw)
        except TruncatedJsonError as exc:
            items = salvage_json_array(raw)
            if not items:
                return self._parse_error(raw, exc)
            logger.warning(
                "%s: the model reply was cut off; kept its %d complete items. Raise the "
                "model's output token limit.",
                self.get_name(),
                len(items),
            )
        except JsonExtractionError as exc:
            return self._parse_error(raw, exc)
        values, dropped = self._validate_items(items)
        if max_items is not None:
            values = values[:max_items]
        return ExtractionResult(values, method, raw, dropped=dropped)

    def _parse_one(self, raw: str, method: ExtractionMethod) -> ExtractionResult[Any]:
        try:
            value = self.output.model_validate(extract_json(raw, shape="object"))
        except (JsonExtractionError, ValidationError) as exc:
            return self._parse_error(raw, exc)
        return ExtractionResult(value, method, raw)

    def _validate_items(self, items: list[Any]) -> tuple[list[O], int]:
        values: list[O] = []
        for index, item in enumerate(items):
            try:
                values.append(self.output.model_validate(item))
            except ValidationError as exc:  # noqa: PERF203
                logger.info(
                    "%s: dropped item %d (%s): %s",
                    self.get_name(),
                    index,
                    _summarise(exc),
                    str(item)[:_RAW_PREVIEW_CHARS],
                )
        dropped = len(items) - len(values)
        if dropped:
            logger.warning(
                "%s: dropped %d of %d items that failed validation.",
                self.get_name(),
                dropped,
                len(items),
            )
        return values, dropped

    def _parse_error(self, raw: str, exc: Exception) -> ExtractionResult[Any]:
        logger.warning(
            "%s: could not parse the model reply (%s); returning %r. Raw reply starts with: %r",
            self.get_name(),
            exc,
            self.empty_value,
            raw[:_RAW_PREVIEW_CHARS],
        )
        return ExtractionResult(self.empty_value, ExtractionMethod.PARSE_ERROR, raw, error=str(exc))


class LlmExtractorBuilder(Generic[O]):
    """Step-by-step construction of an :class:`LlmExtractor`.

    Example:
        ```python
        extractor = (
            LlmExtractor.builder(llm)
            .prompt("Extract the invoice from: {text}")
            .output(Invoice)
            .raise_on_error()
            .build()
        )
        ```
    """

    def __init__(self, llm: Runnable[Any, Any]) -> None:
        """Start a builder for ``llm``."""
        self._settings: dict[str, Any] = {"llm": llm}

    def _with(self, **settings: Any) -> LlmExtractorBuilder[O]:
        self._settings.update(settings)
        return self

    def prompt(self, template: PromptLike) -> LlmExtractorBuilder[O]:
        """Use ``template``: a chat prompt, or the f-string text of one human message."""
        return self._with(prompt=as_chat_prompt(template))

    def prompt_name(
        self, name: str, *, registry: PromptRegistry | None = None
    ) -> LlmExtractorBuilder[O]:
        """Use the prompt registered under ``name`` (default registry unless given)."""
        return self._with(prompt=resolve_prompt(name, registry=registry))

    def output(self, model: type[P], *, many: bool = False) -> LlmExtractorBuilder[P]:
        """Extract ``model`` instances; ``many=True`` for a list of them."""
        self._settings.update(output=model, many=many)
        return cast("LlmExtractorBuilder[P]", self)

    def model(self, name: str) -> LlmExtractorBuilder[O]:
        """Set the model name on the chat model (see :func:`with_model_name`)."""
        return self._with(llm=with_model_name(self._settings["llm"], name))

    def structured_output(self, mode: StructuredOutputMode) -> LlmExtractorBuilder[O]:
        """Choose how the output schema reaches the model."""
        return self._with(structured_output=mode)

    def input_key(self, key: str) -> LlmExtractorBuilder[O]:
        """Set the prompt variable a plain-string input fills."""
        return self._with(input_key=key)

    def raise_on_error(self, value: bool = True) -> LlmExtractorBuilder[O]:
        """Raise transport failures instead of returning the empty value."""
        return self._with(raise_on_error=value)

    def name(self, name: str) -> LlmExtractorBuilder[O]:
        """Set the run name shown in traces."""
        return self._with(name=name)

    def build(self) -> LlmExtractor[O]:
        """Create the extractor.

        Raises:
            ValueError: If ``prompt(...)`` or ``output(...)`` was not called.
        """
        missing = [key for key in ("prompt", "output") if key not in self._settings]
        if missing:
            calls = ", ".join(f"{key}(...)" for key in missing)
            msg = f"LlmExtractor.builder(llm) needs {calls} before build()."
            raise ValueError(msg)
        return LlmExtractor(**self._settings)


def run_traced(
    runnable: Runnable[Any, Any],
    input_: Any,
    config: RunnableConfig | None,
    extract: Callable[[RunnableConfig], ExtractionResult[T]],
    *,
    event: bool | Callable[[ExtractionResult[T]], bool],
) -> ExtractionResult[T]:
    """Run ``extract`` as one traced run of ``runnable``, with child runs nested under it.

    Args:
        runnable: The component whose run this is.
        input_: Input recorded on the run.
        config: Caller's config.
        extract: Does the work, given the config for child runs.
        event: Whether to dispatch :data:`EXTRACTION_EVENT` with the result, or a
            predicate on the result deciding it.

    Returns:
        The result of ``extract``; its value is recorded as the run's output.
    """
    config = ensure_config(config)
    run_manager = get_callback_manager_for_config(config).on_chain_start(
        None,
        input_,
        name=config.get("run_name") or runnable.get_name(),
        run_id=config.pop("run_id", None),
    )
    child = patch_config(config, callbacks=run_manager.get_child())
    try:
        result = extract(child)
        if event(result) if callable(event) else event:
            dispatch_custom_event(EXTRACTION_EVENT, _event_data(runnable, result), config=child)
    except BaseException as exc:
        run_manager.on_chain_error(exc)
        raise
    run_manager.on_chain_end(result.value)
    return result


async def arun_traced(
    runnable: Runnable[Any, Any],
    input_: Any,
    config: RunnableConfig | None,
    extract: Callable[[RunnableConfig], Awaitable[ExtractionResult[T]]],
    *,
    event: bool | Callable[[ExtractionResult[T]], bool],
) -> ExtractionResult[T]:
    """Async :func:`run_traced`."""
    config = ensure_config(config)
    run_manager = await get_async_callback_manager_for_config(config).on_chain_start(
        None,
        input_,
        name=config.get("run_name") or runnable.get_name(),
        run_id=config.pop("run_id", None),
    )
    child = patch_config(config, callbacks=run_manager.get_child())
    try:
        result = await extract(child)
        if event(result) if callable(event) else event:
            await adispatch_custom_event(
                EXTRACTION_EVENT, _event_data(runnable, result), config=child
            )
    except BaseException as exc:
        await run_manager.on_chain_error(exc)
        raise
    await run_manager.on_chain_end(result.value)
    return result


def _event_data(runnable: Runnable[Any, Any], result: ExtractionResult[Any]) -> dict[str, Any]:
    value = result.value
    count = len(value) if isinstance(value, list) else int(value is not None)
    return {
        "name": runnable.get_name(),
        "method": result.method.value,
        "count": count,
        "dropped": result.dropped,
        "error": result.error,
    }


def _reply_text(reply: Any) -> str:
    if isinstance(reply, BaseMessage):
        return str(reply.text)
    return str(reply)


def _exception_chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _status_code(error: BaseException) -> int | None:
    for holder in (error, getattr(error, "response", None)):
        status = getattr(holder, "status_code", None)
        if isinstance(status, int):
            return status
    return None


def _status_code_in_chain(exc: BaseException) -> int | None:
    for error in _exception_chain(exc):
        status = _status_code(error)
        if status is not None:
            return status
    return None


def _may_reject_schema(status: int | None) -> bool:
    return status is not None and (
        status in _SCHEMA_REJECTED_STATUSES or status >= _SERVER_ERROR_STATUS
    )


def _summarise(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(part) for part in error['loc']) or 'item'}: {error['msg']}"
        for error in exc.errors()
    )


def _tighten(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_tighten(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    tight = {
        key: value
        for key, value in schema.items()
        if key not in {"title", "default", "$defs", "definitions"}
    }
    for key in ("items", "anyOf", "allOf", "oneOf", "additionalProperties"):
        if key in tight:
            tight[key] = _tighten(tight[key])
    properties = tight.get("properties")
    if isinstance(properties, dict):
        tight["properties"] = {name: _tighten(sub) for name, sub in properties.items()}
        tight["required"] = list(properties)
        tight.setdefault("additionalProperties", False)
    return tight
