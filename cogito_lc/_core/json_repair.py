"""Tolerant extraction of JSON values from the raw text of a language model.

Small local models rarely return bare JSON: they wrap it in Markdown code fences,
think aloud in ``<think>...</think>`` blocks, add prose before or after it, leave
trailing commas, or stop mid-array when the token budget runs out. The helpers
here recover the JSON value from such text. They are pure functions with no
dependency on LangChain, so any component that reads model output can use them.

Example:
    ```python
    from cogito_lc._core.json_repair import extract_json, extract_json_list

    extract_json('<think>hmm</think> Sure! {"a": 1,} Hope this helps.')
    # {'a': 1}
    extract_json_list('Answer: {"id": 3}')
    # [{'id': 3}]
    ```
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Literal

__all__ = [
    "JsonExtractionError",
    "TruncatedJsonError",
    "extract_json",
    "extract_json_list",
    "json_value_as_list",
    "remove_trailing_commas",
    "salvage_json_array",
    "strip_code_fences",
    "strip_reasoning",
]

JsonShape = Literal["any", "array", "object"]

_REASONING_BLOCK = re.compile(
    r"<(think|thinking|reasoning)>.*?</\1>",
    flags=re.DOTALL | re.IGNORECASE,
)
_UNCLOSED_REASONING = re.compile(r"^\s*<(think|thinking|reasoning)>", flags=re.IGNORECASE)
_STRAY_CLOSING_TAG = re.compile(
    r"^.*?</(think|thinking|reasoning)>", flags=re.DOTALL | re.IGNORECASE
)
_CODE_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_+-]*[ \t]*\r?\n?(.*?)```", flags=re.DOTALL)
_OPENERS: dict[JsonShape, str] = {"any": "[{", "array": "[", "object": "{"}
_MAX_START_POSITIONS = 64
_MAX_CUT_TOKEN_CHARS = 12
_LIST_WRAPPER_KEYS = ("items", "facts", "results", "data", "output", "values")


class JsonExtractionError(ValueError):
    """Raised when no JSON value of the requested shape can be found in a text.

    Example:
        ```python
        from cogito_lc._core.json_repair import JsonExtractionError, extract_json

        try:
            extract_json("I could not find anything.")
        except JsonExtractionError as exc:
            print(exc)
        # No JSON any value found in model output starting with 'I could not find anything.'
        ```
    """


class TruncatedJsonError(JsonExtractionError):
    """Raised when the JSON value in a text stops before its end.

    This happens when a model reaches its token limit mid-answer;
    :func:`salvage_json_array` recovers the complete leading items.

    Example:
        ```python
        from cogito_lc._core.json_repair import (
            TruncatedJsonError,
            extract_json_list,
            salvage_json_array,
        )

        reply = '[{"a": 1}, {"b": 2}, {"c": tr'
        try:
            extract_json_list(reply)
        except TruncatedJsonError:
            print(salvage_json_array(reply))
        # [{'a': 1}, {'b': 2}]
        ```
    """


def strip_reasoning(text: str) -> str:
    """Remove ``<think>``, ``<thinking>`` and ``<reasoning>`` blocks from model output.

    A block left open at the start (the model ran out of tokens while thinking)
    removes everything, and a stray closing tag (the opening tag was part of the
    prompt) removes everything before it.

    Args:
        text: Raw model output.

    Returns:
        The text without reasoning blocks.
    """
    cleaned = _REASONING_BLOCK.sub("", text)
    if _UNCLOSED_REASONING.match(cleaned):
        return ""
    return _STRAY_CLOSING_TAG.sub("", cleaned, count=1)


def strip_code_fences(text: str) -> list[str]:
    """Return the contents of the Markdown code fences in ``text``, in order.

    Args:
        text: Text that may contain fenced blocks such as ```` ```json ... ``` ````.

    Returns:
        The body of every fenced block; an empty list when there is none.
    """
    return [match.group(1) for match in _CODE_FENCE.finditer(text)]


def remove_trailing_commas(text: str) -> str:
    """Drop commas that directly precede a closing bracket or brace.

    Commas inside string literals are left untouched.

    Args:
        text: JSON-like text.

    Returns:
        The text without trailing commas.
    """
    out: list[str] = []
    in_string = False
    escaped = False
    for index, char in enumerate(text):
        if in_string:
            out.append(char)
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char == "," and _next_significant(text, index + 1) in {"]", "}"}:
            continue
        out.append(char)
    return "".join(out)


def extract_json(
    text: str, *, shape: JsonShape = "any", prefer: Callable[[Any], bool] | None = None
) -> Any:
    """Find and decode the first JSON value of the requested shape in model output.

    A reply that opens with a value of that shape is decoded as it stands, so
    markup inside its strings is kept. Otherwise reasoning blocks are removed
    first; fenced code blocks are searched before the surrounding text; prose
    before and after the value is ignored. Trailing commas are tolerated.

    Args:
        text: Raw model output.
        shape: ``"array"`` or ``"object"`` to accept only that kind of value,
            ``"any"`` for the first array or object found.
        prefer: When given, the first value it accepts wins over values before
            it (prose such as ``"on a [0, 1] scale"`` decodes too); the first
            value found is returned when it accepts none.

    Returns:
        The decoded value.

    Raises:
        TruncatedJsonError: If the first JSON value in the text is cut off.
        JsonExtractionError: If no JSON value of that shape can be decoded.
    """
    leading = _leading_value(text, _OPENERS[shape])
    if leading is not _MISSING and (prefer is None or prefer(leading)):
        return leading
    truncated = False
    fallback = leading
    for candidate in _candidates(text):
        try:
            value = _decode_first(candidate, _OPENERS[shape], prefer)
        except TruncatedJsonError:
            truncated = True
            continue
        if value is not _MISSING and (prefer is None or prefer(value)):
            return value
        if fallback is _MISSING:
            fallback = value
    if fallback is not _MISSING:
        return fallback
    preview = text[:80]
    if truncated:
        msg = f"The JSON {shape} value in model output starting with {preview!r} is cut off"
        raise TruncatedJsonError(msg)
    msg = f"No JSON {shape} value found in model output starting with {preview!r}"
    raise JsonExtractionError(msg)


def extract_json_list(text: str) -> list[Any]:
    """Decode model output that should be a JSON array, accepting common deviations.

    Besides everything :func:`extract_json` tolerates, a single object is returned
    as a one-element list, and an object wrapping one list (such as
    ``{"items": [...]}``) is unwrapped.

    Args:
        text: Raw model output.

    Returns:
        The decoded list.

    Raises:
        TruncatedJsonError: If the first JSON value in the text is cut off.
        JsonExtractionError: If neither an array nor an object can be decoded.
    """
    return json_value_as_list(extract_json(text, shape="any"))


def json_value_as_list(value: Any) -> list[Any]:
    """Return a decoded JSON value as the list it stands for.

    A list is returned as is, an object wrapping one list (such as ``{"items":
    [...]}``) is unwrapped, and any other object becomes a one-element list.

    Args:
        value: A decoded JSON value.

    Returns:
        The list.

    Raises:
        JsonExtractionError: If ``value`` is neither an array nor an object.
    """
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        return _unwrap_list(value)
    msg = f"Expected a JSON array or object, got {type(value).__name__}"
    raise JsonExtractionError(msg)


def salvage_json_array(text: str) -> list[Any]:
    """Recover the complete leading elements of a JSON array that was cut short.

    Used when a model stops mid-array because it reached its token limit. Inside an
    object that wraps the array (``{"items": [...``) the array is found as well.

    Args:
        text: Raw model output.

    Returns:
        The elements decoded before the text stopped making sense; an empty list
        when the text holds no array or not even one complete element.
    """
    cleaned = strip_reasoning(text)
    start = cleaned.find("[")
    if start < 0:
        return []
    decoder = json.JSONDecoder(parse_int=_bounded_int)
    items: list[Any] = []
    position = start + 1
    while True:
        position = _skip_separators(cleaned, position)
        if position >= len(cleaned) or cleaned[position] == "]":
            return items
        try:
            item, position = decoder.raw_decode(cleaned, position)
        except (json.JSONDecodeError, RecursionError):
            return items
        items.append(item)


class _Missing:
    pass


_MISSING: Any = _Missing()


def _leading_value(text: str, openers: str) -> Any:
    """The value a reply opens with, decoded before any clean-up.

    Reasoning tags and code fences inside its strings are text, not markup.
    """
    start = len(text) - len(text.lstrip())
    if start == len(text) or text[start] not in openers:
        return _MISSING
    value, error = _decode_at(text, start)
    return _MISSING if error is not None else value


def _candidates(text: str) -> list[str]:
    cleaned = strip_reasoning(text)
    return [*strip_code_fences(cleaned), cleaned]


def _decode_first(text: str, openers: str, prefer: Callable[[Any], bool] | None = None) -> Any:
    """Decode the first value starting at one of ``openers`` (that ``prefer`` accepts).

    Later start positions are tried only when an earlier one is not JSON, so prose
    such as ``[see below]`` is skipped. Start positions inside a bracketed span that
    failed to decode are not tried: the inner values of a malformed value are not
    the answer. A first value that runs to the end of the text without closing
    raises instead of yielding one of its inner values. With ``prefer``, values
    it refuses are passed over (not their inner values) for a later one it
    accepts, and the first value is returned when there is none.
    """
    starts = [index for index, char in enumerate(text) if char in openers]
    skip_before = 0
    first: Any = _MISSING
    for position, start in enumerate(starts[:_MAX_START_POSITIONS]):
        if start < skip_before:
            continue
        value, error = _decode_at(text, start)
        if error is None:
            if prefer is None or prefer(value):
                return value
            first = value if first is _MISSING else first
        elif position == 0 and _looks_cut_off(text, start, error):
            msg = "JSON value cut off at the end of the text"
            raise TruncatedJsonError(msg)
        skip_before = _span_end(text, start) or start
    return first


def _decode_at(text: str, start: int) -> tuple[Any, json.JSONDecodeError | None]:
    decoder = json.JSONDecoder(parse_int=_bounded_int)
    try:
        return _nested_decode(decoder, text, start), None
    except json.JSONDecodeError as exc:
        error = exc
    try:
        return _nested_decode(decoder, remove_trailing_commas(text[start:]), 0), None
    except json.JSONDecodeError:
        return _MISSING, error


def _nested_decode(decoder: json.JSONDecoder, text: str, start: int) -> Any:
    """The value at ``start``; nesting past Python's recursion limit fails as bad JSON does."""
    try:
        return decoder.raw_decode(text, start)[0]
    except RecursionError as exc:
        msg = "JSON value nested too deeply to decode"
        raise json.JSONDecodeError(msg, text, start) from exc


_MAX_INT_DIGITS = 4000  # below Python's int-conversion limit (4300 digits)


def _bounded_int(literal: str) -> int | float:
    """An int, or ``inf`` for a literal too long to convert (it is out of any range)."""
    digits = literal.lstrip("-")
    if len(digits) > _MAX_INT_DIGITS:
        return float("-inf") if literal.startswith("-") else float("inf")
    return int(literal)


def _looks_cut_off(text: str, start: int, error: json.JSONDecodeError) -> bool:
    """Whether decoding failed only because the text ends inside the value."""
    if not _is_unclosed(text, start):
        return False
    if error.msg.startswith("Unterminated string"):
        return True
    tail = text[error.pos :].strip()
    return len(tail) <= _MAX_CUT_TOKEN_CHARS and not any(char in tail for char in '[]{}",:')


def _is_unclosed(text: str, start: int) -> bool:
    """Whether the brackets opened at ``start`` are still open at the end of the text."""
    return _span_end(text, start) is None


def _span_end(text: str, start: int) -> int | None:
    """Return the index after the bracket closing the one at ``start``; ``None`` if unclosed."""
    depth = 0
    in_string = False
    escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return index + 1
    return None


def _unwrap_list(value: dict[str, Any]) -> list[Any]:
    list_values = [item for item in value.values() if isinstance(item, list)]
    if len(value) == 1 and len(list_values) == 1:
        return list(list_values[0])
    for key in _LIST_WRAPPER_KEYS:
        wrapped = value.get(key)
        if isinstance(wrapped, list):
            return list(wrapped)
    return [value]


def _next_significant(text: str, start: int) -> str:
    for char in text[start:]:
        if not char.isspace():
            return char
    return ""


def _skip_separators(text: str, position: int) -> int:
    while position < len(text) and (text[position].isspace() or text[position] == ","):
        position += 1
    return position
