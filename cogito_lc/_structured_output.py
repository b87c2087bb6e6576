"""Send a JSON schema for the reply to a chat model, in the form its server expects.

Example:
    ```python
    from pydantic import BaseModel
    from cogito_lc._structured_output import structured_call_kwargs


    class Person(BaseModel):
        name: str


    structured_call_kwargs("format", Person, many=False)
    # {'format': {'properties': {'name': {'type': 'string'}}, 'required': ['name'],
    #             'type': 'object', 'additionalProperties': False}}
    ```
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.runnables import Runnable, RunnableBinding
from langchain_core.utils.json_schema import dereference_refs
from pydantic import BaseModel

__all__ = [
    "LIST_WRAPPER_KEY",
    "StructuredOutputMode",
    "detect_structured_output_mode",
    "request_schema",
    "structured_call_kwargs",
    "structured_output_kwargs",
]

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

LIST_WRAPPER_KEY = "items"
"""Key under which a list is requested, since several servers need an object root."""

_DROPPED_SCHEMA_KEYS = frozenset({"title", "default", "$defs", "definitions"})


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
        "properties": {LIST_WRAPPER_KEY: array},
        "required": [LIST_WRAPPER_KEY],
        "additionalProperties": False,
    }


def structured_output_kwargs(
    mode: StructuredOutputMode, schema: dict[str, Any], *, name: str
) -> dict[str, Any]:
    """Build the chat model call arguments that send ``schema`` the way ``mode`` says.

    Args:
        mode: A resolved mode; ``auto`` must be resolved first, for example with
            :func:`detect_structured_output_mode`.
        schema: The JSON schema of the reply. ``json_schema`` servers (OpenAI)
            expect an object at the root.
        name: Schema name, sent with the ``json_schema`` mode.

    Returns:
        Keyword arguments for the chat model's ``invoke``; empty for ``none``.

    Raises:
        ValueError: If ``mode`` is ``auto``.
    """
    if mode == "auto":
        msg = "Resolve structured_output='auto' with detect_structured_output_mode(llm) first."
        raise ValueError(msg)
    if mode == "none":
        return {}
    if mode == "format":
        return {"format": schema}
    if mode == "json_object":
        return {"response_format": {"type": "json_object", "schema": schema}}
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
        mode: A resolved mode (not ``auto``).
        output: Pydantic model of one item.
        many: Whether a list of items is asked for.
        max_items: Upper bound on the list length, if any.

    Returns:
        Keyword arguments for the chat model's ``invoke``; empty for ``none``.

    Raises:
        ValueError: If ``mode`` is ``auto``.
    """
    if mode == "none":
        return {}
    schema = request_schema(output, many=many, max_items=max_items)
    name = output.__name__ + ("List" if many else "")
    return structured_output_kwargs(mode, schema, name=name)


def _tighten(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_tighten(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    tight = {key: value for key, value in schema.items() if key not in _DROPPED_SCHEMA_KEYS}
    for key in ("items", "anyOf", "allOf", "oneOf", "additionalProperties"):
        if key in tight:
            tight[key] = _tighten(tight[key])
    properties = tight.get("properties")
    if isinstance(properties, dict):
        tight["properties"] = {name: _tighten(sub) for name, sub in properties.items()}
        tight["required"] = list(properties)
        tight.setdefault("additionalProperties", False)
    return tight
