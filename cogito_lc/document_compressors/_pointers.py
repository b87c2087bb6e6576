r"""Pure helpers of the pointer components: render numbered candidates, parse integer pointers.

The model sees candidates as ``[1] text``, ``[2] text``, ... and answers with the
numbers of the relevant ones (the pointer filter) or of the ones a new memory
supersedes or repeats (the supersession judge). Nothing here calls a model or
touches a document beyond reading its ``page_content``.

Example:
    ```python
    from langchain_core.documents import Document
    from cogito_lc.document_compressors._pointers import parse_pointers, render_candidates

    block = render_candidates(
        [Document("Auth tokens expire\nafter 3600 s."), Document("We use PostgreSQL.")],
        max_candidates=50,
        snippet_chars=300,
        char_budget=6000,
    )
    block.text  # '[1] Auth tokens expire after 3600 s.\n[2] We use PostgreSQL.'
    parse_pointers("<think>...</think> [2, 2, 9, 1.0, true, 1]", block.shown).pointers
    # (2, 1)
    ```
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from langchain_core.documents import Document
from pydantic import BaseModel, Field, create_model

from cogito_lc._core.json_repair import (
    JsonExtractionError,
    TruncatedJsonError,
    extract_json,
    salvage_json_array,
)

__all__ = [
    "CandidateBlock",
    "ParsedPointers",
    "PointerParseError",
    "parse_pointers",
    "pointer_list_type",
    "pointer_model",
    "render_candidates",
    "snippet",
    "strip_echo",
    "valid_pointers",
]

MIN_ECHO_CHARS = 12
"""Shortest reply line :func:`strip_echo` may treat as a repeat of the prompt."""

_ELLIPSIS = "\u2026"
_FIRST_PREFIX = "[1] "
_POINTER_KEYS = ("ids", "indices", "indexes", "numbers", "candidates", "relevant", "items")


class PointerParseError(ValueError):
    """The model reply holds no JSON array of candidate numbers."""


@dataclass(frozen=True)
class CandidateBlock:
    """The rendered candidate list and how many candidates it shows."""

    text: str
    """Lines ``[n] snippet`` joined by newlines."""

    shown: int
    """Number of candidates rendered: the first ``shown`` documents, numbered 1..shown."""


@dataclass(frozen=True)
class ParsedPointers:
    """Valid pointers read from a model reply."""

    pointers: tuple[int, ...]
    """1-based candidate numbers, in the model's order, each once."""

    rejected: int
    """Items of the reply's array that were not kept (not an int, out of range, repeated)."""


def snippet(text: str, limit: int) -> str:
    """Collapse all whitespace (newlines included) in ``text`` and cut it to ``limit`` characters.

    Args:
        text: Document text.
        limit: Most characters returned; a cut text ends with an ellipsis.

    Returns:
        The one-line snippet.
    """
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return flat[: max(limit - 1, 0)].rstrip() + _ELLIPSIS


def render_candidates(
    documents: Sequence[Document], *, max_candidates: int, snippet_chars: int, char_budget: int
) -> CandidateBlock:
    """Number the leading documents as ``[1] text`` lines within a count and a character budget.

    Lines are added in order while the block (lines joined by newlines) stays within
    ``char_budget`` characters and at most ``max_candidates`` lines. The first
    candidate is always shown, cut shorter if it alone exceeds the budget.

    Args:
        documents: Candidates in stage-1 order.
        max_candidates: Most candidates rendered.
        snippet_chars: Most characters of one candidate's text.
        char_budget: Most characters of the whole block.

    Returns:
        The block and the number of candidates it shows.
    """
    lines: list[str] = []
    used = 0
    for number, document in enumerate(documents[:max_candidates], start=1):
        line = f"[{number}] {snippet(document.page_content, snippet_chars)}"
        cost = len(line) + (1 if lines else 0)
        if used + cost > char_budget:
            if lines:
                break
            line = _FIRST_PREFIX + snippet(
                document.page_content, max(char_budget - len(_FIRST_PREFIX), 1)
            )
            line = line[:char_budget]
            cost = len(line)
        lines.append(line)
        used += cost
    return CandidateBlock("\n".join(lines), len(lines))


@functools.lru_cache(maxsize=256)
def pointer_model(shown: int) -> type[BaseModel]:
    """Pydantic model of an answer naming candidates 1..``shown``: ``{"ids": [int, ...]}``.

    Its JSON schema (an object, since several servers need one at the root) bounds
    every number and the array's length, so constrained decoding cannot produce an
    out-of-range pointer.

    Args:
        shown: Number of candidates shown to the model.

    Returns:
        The model class, cached per ``shown``.
    """
    return create_model("CandidateNumbers", ids=(pointer_list_type(shown), ...))


def pointer_list_type(shown: int) -> Any:
    """Annotated type of an array of candidate numbers, each from 1 to ``shown``.

    The array holds at most ``shown`` numbers, so its JSON schema bounds both every
    number and the length.

    Args:
        shown: Number of candidates shown to the model.

    Returns:
        ``list[int]`` annotated with the bounds, for a pydantic model's field.
    """
    pointer = Annotated[int, Field(ge=1, le=shown)]
    return Annotated[list[pointer], Field(max_length=shown)]


def parse_pointers(raw: str, shown: int, *, prompt_text: str = "") -> ParsedPointers:
    """Read the candidate numbers from a model reply, keeping only valid ones.

    Tolerates ``<think>`` blocks, code fences, prose around the array, an object
    wrapping it (``{"ids": [...]}``) and an array cut off at the end. Lines that
    repeat the prompt (a small model echoing ``[1] text`` or the prompt's example
    arrays) are ignored. Keeps items that are ints (not bools, floats or strings)
    between 1 and ``shown``, the first occurrence of each, in the model's order.

    Args:
        raw: The model's reply.
        shown: Number of candidates shown to the model.
        prompt_text: The prompt the model saw, to recognise echoed lines.

    Returns:
        The valid pointers; an empty tuple when the model answered ``[]``.

    Raises:
        PointerParseError: If the reply holds no array, or a non-empty array without a
            single valid pointer.
    """
    items = _reply_items(strip_echo(raw, prompt_text))
    pointers = valid_pointers(items, shown)
    if items and not pointers:
        preview = str(items)[:80]
        msg = f"the reply's array {preview} has no candidate number between 1 and {shown}"
        raise PointerParseError(msg)
    return ParsedPointers(pointers, len(items) - len(pointers))


def valid_pointers(items: Sequence[Any], shown: int) -> tuple[int, ...]:
    """Keep the items that are candidate numbers: ints from 1 to ``shown``, each once.

    Bools, floats (even ``1.0``), strings and every other type are dropped, never
    mapped; the first occurrence of a number keeps its place in the model's order.

    Args:
        items: The items of an array in the model's reply.
        shown: Number of candidates shown to the model.

    Returns:
        The valid 1-based candidate numbers, in the model's order.
    """
    pointers: list[int] = []
    seen: set[int] = set()
    for item in items:
        if type(item) is int and 1 <= item <= shown and item not in seen:
            seen.add(item)
            pointers.append(item)
    return tuple(pointers)


def strip_echo(raw: str, prompt_text: str) -> str:
    """Drop the lines of ``raw`` that repeat a line of ``prompt_text`` or its start.

    Only lines of at least :data:`MIN_ECHO_CHARS` characters (whitespace collapsed)
    count, so a short answer such as ``[2, 1]`` is never taken for an echo; nor is
    a reply of one line, which is the answer even when it matches an example line
    of a prompt (``{"ids": [2]}``), as it is with the default prompts.

    Args:
        raw: The model's reply.
        prompt_text: The prompt the model saw.

    Returns:
        The reply without echoed lines.
    """
    prompt_lines = {_flat(line) for line in prompt_text.splitlines()}
    prompt_lines = {line for line in prompt_lines if len(line) >= MIN_ECHO_CHARS}
    if not prompt_lines or len([line for line in raw.splitlines() if line.strip()]) < 2:
        return raw
    kept = [line for line in raw.splitlines() if not _is_echo(_flat(line), prompt_lines)]
    return "\n".join(kept)


def _flat(text: str) -> str:
    return " ".join(text.split())


def _is_echo(line: str, prompt_lines: set[str]) -> bool:
    if len(line) < MIN_ECHO_CHARS:
        return False
    return line in prompt_lines or any(prompt.startswith(line) for prompt in prompt_lines)


def _reply_items(raw: str) -> list[Any]:
    try:
        value = extract_json(raw, shape="any", prefer=_names_pointers)
    except TruncatedJsonError as exc:
        return _salvaged(raw, exc)
    except JsonExtractionError as exc:
        msg = f"no JSON array in the reply ({exc})"
        raise PointerParseError(msg) from exc
    return _as_list(value)


def _names_pointers(value: Any) -> bool:
    """Whether a decoded value is the answer's object (``{"ids": [...]}``), not prose's brackets."""
    return isinstance(value, dict) and any(
        isinstance(value.get(key), list) for key in _POINTER_KEYS
    )


def _salvaged(raw: str, cause: Exception) -> list[Any]:
    items = salvage_json_array(raw)
    if not items:
        raise PointerParseError(str(cause)) from cause
    return items


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        for key in _POINTER_KEYS:
            if isinstance(value.get(key), list):
                return list(value[key])
        for item in value.values():
            if isinstance(item, list):
                return list(item)
    msg = f"the reply is a JSON {type(value).__name__} without an array of candidate numbers"
    raise PointerParseError(msg)
