"""Send a JSON schema for the reply to a chat model, and read the reply back.

In ``auto`` mode a chat model that implements LangChain's ``with_structured_output``
(and whose declared profile does not rule it out) is asked through it, with
``include_raw=True`` so a reply its own parser rejects is still parsed tolerantly.
The explicit modes send the schema in the form a particular server expects.

Example:
    ```python
    from pydantic import BaseModel
    from cogito_lc._core.structured_output import structured_call_kwargs


    class Person(BaseModel):
        name: str


    structured_call_kwargs("format", Person, many=False)
    # {'format': {'properties': {'name': {'type': 'string'}}, 'required': ['name'],
    #             'type': 'object', 'additionalProperties': False}}
    ```
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable, RunnableBinding
from langchain_core.runnables.base import RunnableBindingBase
from langchain_core.runnables.fallbacks import RunnableWithFallbacks
from langchain_core.runnables.retry import RunnableRetry
from langchain_core.utils.json_schema import dereference_refs
from pydantic import BaseModel

__all__ = [
    "LIST_WRAPPER_KEY",
    "Attempt",
    "ModelReply",
    "StructuredOutputMode",
    "attempts",
    "detect_structured_output_mode",
    "read_reply",
    "reply_text",
    "request_schema",
    "structured_call_kwargs",
    "structured_output_kwargs",
    "supports_with_structured_output",
]

logger = logging.getLogger(__name__)

StructuredOutputMode = Literal["auto", "langchain", "json_schema", "json_object", "format", "none"]
"""How the JSON schema of the output reaches the chat model.

- ``auto``: ``langchain`` for a chat model that implements ``with_structured_output``
  unless its ``profile`` declares neither structured output nor tool calling; for a
  model bound with call arguments (``llm.bind(...)``, which ``with_structured_output``
  would drop) ``format`` for ``ChatOllama`` and ``json_schema`` for OpenAI chat
  models; ``none`` for everything else.
- ``langchain``: the model's own ``with_structured_output(schema, include_raw=True)``;
  a reply its parser rejects is parsed tolerantly.
- ``json_schema``: ``response_format={"type": "json_schema", ...}`` (OpenAI, vLLM,
  LM Studio, llama.cpp's ``llama-server``).
- ``json_object``: ``response_format={"type": "json_object", "schema": ...}``
  (llama-cpp-python's server, which turns the schema into a grammar). Its grammar
  skips ``minimum`` and ``maximum``, so a bounded integer also lists its values
  (``enum``) in this mode.
- ``format``: Ollama's ``format=<schema>``.
- ``none``: no schema; the reply is parsed tolerantly.

If a call with a schema fails with HTTP 400 or 422, or with a 5xx whose message names
the response format, schema or grammar (llama-cpp-python's server answers 500 to a
``json_schema`` response format), it is retried once without the schema and reported
as ``text``. Any other 5xx is an outage and is not retried.
"""

LIST_WRAPPER_KEY = "items"
"""Key under which a list is requested, since several servers need an object root."""

_DROPPED_SCHEMA_KEYS = frozenset({"title", "default", "$defs", "definitions"})
_LISTED_INTEGERS = 256
"""The widest integer range :func:`_listed_bounds` writes out as an ``enum``."""


@dataclass(frozen=True)
class Attempt:
    """One way to call the model: the runnable to invoke and its call arguments.

    Example:
        ```python
        from langchain_core.language_models import FakeListChatModel
        from pydantic import BaseModel
        from cogito_lc._core.structured_output import attempts


        class Person(BaseModel):
            name: str


        llm = FakeListChatModel(responses=['{"name": "Ada"}'])
        [attempt.structured for attempt in attempts(llm, "json_object", Person, many=False)]
        # [True, False]
        ```
    """

    runnable: Runnable[Any, Any]
    """The chat model, or the runnable ``with_structured_output`` returned."""

    kwargs: dict[str, Any]
    """Keyword arguments for ``invoke``."""

    structured: bool
    """Whether the call carries the output schema."""


@dataclass(frozen=True)
class ModelReply:
    """What a model call returned, as text and, when LangChain decoded it, as JSON.

    Example:
        ```python
        from langchain_core.messages import AIMessage
        from cogito_lc._core.structured_output import read_reply

        output = {"raw": AIMessage('{"a": 1}'), "parsed": {"a": 1}, "parsing_error": None}
        reply = read_reply(output)
        reply.text, reply.parsed
        # ('{"a": 1}', {'a': 1})
        ```
    """

    text: str
    """The reply text (a tool call's arguments when the reply came as a tool call)."""

    parsed: Any = None
    """The JSON value the model's structured-output parser decoded; ``None`` if it did not."""


def supports_with_structured_output(model: Any) -> bool:
    """Whether ``model`` implements LangChain's ``with_structured_output``.

    A chat model implements it when it overrides it or ``bind_tools`` (the base
    implementation calls ``bind_tools``), unless its ``profile`` declares that it
    supports neither native structured output nor tool calling.

    Args:
        model: A chat model, not bound.

    Returns:
        ``True`` if asking through ``with_structured_output`` is expected to work.
    """
    if not isinstance(model, BaseChatModel):
        return False
    cls = type(model)
    implemented = (
        cls.with_structured_output is not BaseChatModel.with_structured_output
        or cls.bind_tools is not BaseChatModel.bind_tools
    )
    profile = getattr(model, "profile", None)
    if implemented and isinstance(profile, dict):
        declared = [profile.get(key) for key in ("structured_output", "tool_calling")]
        if all(value is False for value in declared):
            return False
    return implemented


def detect_structured_output_mode(llm: Runnable[Any, Any]) -> StructuredOutputMode:
    """Pick the structured-output mode for ``llm`` as ``auto`` does.

    Args:
        llm: A chat model, possibly bound.

    Returns:
        ``langchain``, ``format``, ``json_schema`` or ``none`` (see
        :data:`StructuredOutputMode`).
    """
    model, has_call_arguments = _unbind(llm)
    if not has_call_arguments and supports_with_structured_output(model):
        return "langchain"
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

    References are inlined, titles and defaults removed, descriptions cut to their
    first paragraph (a docstring's code examples are not sent), and every object
    closed (``additionalProperties: false``, all properties required) so
    grammar-based decoders stay tight. A list is wrapped in an object under
    ``items`` because several servers only accept an object at the root.

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
        "properties": {LIST_WRAPPER_KEY: array},
        "required": [LIST_WRAPPER_KEY],
        "additionalProperties": False,
    }


def structured_output_kwargs(
    mode: StructuredOutputMode, schema: dict[str, Any], *, name: str
) -> dict[str, Any]:
    """Build the chat model call arguments that send ``schema`` the way ``mode`` says.

    Args:
        mode: ``json_schema``, ``json_object``, ``format`` or ``none``; ``auto`` must
            be resolved first, and ``langchain`` does not use call arguments.
        schema: The JSON schema of the reply. ``json_schema`` servers (OpenAI)
            expect an object at the root.
        name: Schema name, sent with the ``json_schema`` mode.

    Returns:
        Keyword arguments for the chat model's ``invoke``; empty for ``none``.

    Raises:
        ValueError: If ``mode`` is ``auto`` or ``langchain``.
    """
    if mode == "auto":
        msg = "Resolve structured_output='auto' with detect_structured_output_mode(llm) first."
        raise ValueError(msg)
    if mode == "langchain":
        msg = "structured_output='langchain' calls llm.with_structured_output(); use attempts()."
        raise ValueError(msg)
    if mode == "none":
        return {}
    if mode == "format":
        return {"format": schema}
    if mode == "json_object":
        return {"response_format": {"type": "json_object", "schema": _listed_bounds(schema)}}
    return {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": False},
        }
    }


def structured_call_kwargs(
    mode: StructuredOutputMode,
    output: type[BaseModel],
    *,
    many: bool,
    max_items: int | None = None,
) -> dict[str, Any]:
    """Build the call arguments that send the schema of ``output`` (see :func:`request_schema`).

    Args:
        mode: A mode that uses call arguments (not ``auto`` or ``langchain``).
        output: Pydantic model of one item.
        many: Whether a list of items is asked for.
        max_items: Upper bound on the list length, if any.

    Returns:
        Keyword arguments for the chat model's ``invoke``; empty for ``none``.

    Raises:
        ValueError: If ``mode`` is ``auto`` or ``langchain``.
    """
    if mode == "none":
        return {}
    schema = request_schema(output, many=many, max_items=max_items)
    return structured_output_kwargs(mode, schema, name=schema_name(output, many=many))


def schema_name(output: type[BaseModel], *, many: bool) -> str:
    """Name of the requested schema: the model's name, with ``List`` for a list."""
    return output.__name__ + ("List" if many else "")


def attempts(
    llm: Runnable[Any, Any],
    mode: StructuredOutputMode,
    output: type[BaseModel],
    *,
    many: bool,
    max_items: int | None = None,
    owner: str = "model",
) -> Iterator[Attempt]:
    """Yield the ways to call ``llm``: with the output schema (unless ``none``), then without.

    The caller tries the next attempt only when the server rejected the schema.

    Args:
        llm: Chat model, possibly bound.
        mode: Structured-output mode; ``auto`` is resolved here.
        output: Pydantic model of one item.
        many: Whether a list of items is asked for.
        max_items: Upper bound on the list length, if any.
        owner: Name of the calling component, for log messages.

    Yields:
        The structured attempt, if any, then the plain one.
    """
    if mode == "auto":
        mode = detect_structured_output_mode(llm)
    if mode == "langchain":
        structured = _with_structured_output(
            llm, output, many=many, max_items=max_items, owner=owner
        )
        if structured is not None:
            yield Attempt(structured, {}, structured=True)
    elif mode != "none":
        kwargs = structured_call_kwargs(mode, output, many=many, max_items=max_items)
        yield Attempt(llm, kwargs, structured=True)
    yield Attempt(llm, {}, structured=False)


def read_reply(output: Any) -> ModelReply:
    """Read what an :class:`Attempt` returned.

    That is a message, a string, or the dict of
    ``with_structured_output(..., include_raw=True)``.

    Args:
        output: The value the attempt's runnable returned.

    Returns:
        The reply text, and the decoded value when the model's own parser succeeded.
    """
    if isinstance(output, dict) and "raw" in output:
        parsed = output.get("parsed") if output.get("parsing_error") is None else None
        return ModelReply(_message_text(output["raw"]), parsed)
    return ModelReply(reply_text(output))


def reply_text(reply: Any) -> str:
    """Return the text of a chat model reply (a message) or of a plain LLM reply (a string).

    Args:
        reply: What the model's ``invoke`` returned.

    Returns:
        The reply text.
    """
    if isinstance(reply, BaseMessage):
        return str(reply.text)
    return str(reply)


def _message_text(message: Any) -> str:
    """The answer a structured-output call's raw message holds.

    The tool call's arguments come before any text beside them: the call was made
    through the tool, and models often write a preamble or their reasoning too.
    """
    if isinstance(message, AIMessage) and message.tool_calls:
        return json.dumps(message.tool_calls[0]["args"])
    text = reply_text(message)
    if text.strip() or not isinstance(message, AIMessage):
        return text
    if message.invalid_tool_calls:
        return str(message.invalid_tool_calls[0].get("args") or "")
    return text


def _unbind(llm: Runnable[Any, Any]) -> tuple[Runnable[Any, Any], bool]:
    """Return the chat model inside ``llm``'s wrappers, and whether any binds call arguments.

    Bindings (``bind``, ``with_config``), ``with_retry()`` and ``with_fallbacks()``
    are seen through; of fallbacks, the first model answers for the mode.
    """
    model = llm
    has_call_arguments = False
    while True:
        if isinstance(model, RunnableBindingBase):
            has_call_arguments = has_call_arguments or bool(model.kwargs)
            model = model.bound
        elif isinstance(model, RunnableWithFallbacks):
            model = model.runnable
        else:
            return model, has_call_arguments


def _with_structured_output(
    llm: Runnable[Any, Any],
    output: type[BaseModel],
    *,
    many: bool,
    max_items: int | None,
    owner: str,
) -> Runnable[Any, Any] | None:
    schema = {
        "title": schema_name(output, many=many),
        **request_schema(output, many=many, max_items=max_items),
    }
    return _structured(llm, schema, owner)


def _structured(llm: Runnable[Any, Any], schema: Any, owner: str) -> Runnable[Any, Any] | None:
    """``llm`` asking with ``schema``, in the same retries and fallbacks; None if it cannot."""
    if isinstance(llm, RunnableRetry):
        inner = _structured(llm.bound, schema, owner)
        return None if inner is None else llm.model_copy(update={"bound": inner})
    if isinstance(llm, RunnableWithFallbacks):
        members = [_structured(m, schema, owner) for m in (llm.runnable, *llm.fallbacks)]
        if any(member is None for member in members):
            return None
        first, *rest = members
        return llm.model_copy(update={"runnable": first, "fallbacks": rest})
    configs = []
    model = llm
    while isinstance(model, RunnableBinding):
        configs.append(model.config)
        model = model.bound
    if isinstance(model, RunnableRetry | RunnableWithFallbacks):
        inner = _structured(model, schema, owner)
        return None if inner is None else _configured(inner, configs)
    try:
        structured: Runnable[Any, Any] = model.with_structured_output(  # type: ignore[attr-defined]
            schema, include_raw=True
        )
    except Exception as exc:  # any refusal means: ask without a schema
        logger.warning(
            "%s: %s.with_structured_output() could not take the output schema (%s: %s); "
            "no request was sent with it, so the model is asked without a schema. Set "
            "structured_output to json_schema, json_object or format to send the schema "
            "in the request instead.",
            owner,
            type(model).__name__,
            type(exc).__name__,
            exc,
        )
        return None
    return _configured(structured, configs)


def _configured(runnable: Runnable[Any, Any], configs: list[Any]) -> Runnable[Any, Any]:
    """``runnable`` with the configs of the bindings it was taken out of, innermost first."""
    for config in reversed(configs):
        if config:
            runnable = runnable.with_config(config)
    return runnable


def _first_paragraph(text: str) -> str:
    return text.strip().split("\n\n", 1)[0].strip()


def _listed_bounds(schema: Any) -> Any:
    """``schema`` with each integer bounded on both sides also listing its values (``enum``).

    For grammars that skip ``minimum`` and ``maximum`` (llama-cpp-python's server):
    a model told to name candidate 4 of 2 otherwise can. Other modes get the schema
    as it is, since some servers refuse an integer ``enum`` (Gemini).
    """
    if isinstance(schema, list):
        return [_listed_bounds(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    listed = {key: _listed_bounds(value) for key, value in schema.items()}
    low, high = schema.get("minimum"), schema.get("maximum")
    if (
        schema.get("type") == "integer"
        and "enum" not in schema
        and type(low) is int
        and type(high) is int
        and 0 <= high - low < _LISTED_INTEGERS
    ):
        listed["enum"] = list(range(low, high + 1))
    return listed


def _tighten(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_tighten(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    tight = {key: value for key, value in schema.items() if key not in _DROPPED_SCHEMA_KEYS}
    if isinstance(tight.get("description"), str):
        tight["description"] = _first_paragraph(tight["description"])
    for key in ("items", "anyOf", "allOf", "oneOf", "additionalProperties"):
        if key in tight:
            tight[key] = _tighten(tight[key])
    properties = tight.get("properties")
    if isinstance(properties, dict):
        tight["properties"] = {name: _tighten(sub) for name, sub in properties.items()}
        tight["required"] = list(properties)
        tight.setdefault("additionalProperties", False)
    return tight
