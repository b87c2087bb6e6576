"""Shared argument checks that raise errors naming the argument and the fix."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.documents import Document
from pydantic import model_validator

__all__ = [
    "RejectUnknownFields",
    "check_documents",
    "check_query",
    "check_similarity_floor",
    "check_unicode",
    "echo",
    "reject_unknown_kwargs",
]

ECHO_MAX_CHARS = 60
"""Most characters of a user's input an error message repeats."""


def check_similarity_floor(value: float, *, name: str) -> float:
    """``value`` if it is a cosine-similarity floor (-1..1); else an error naming the fix.

    cogito-ergo's thresholds were L2 distances (``400``, ``250``); they have no
    cosine equivalent, so the error says what to write instead.

    Example:
        ```python
        from cogito_lc._core.validation import check_similarity_floor

        assert check_similarity_floor(0.3, name="threshold") == 0.3
        ```
    """
    if not -1.0 <= value <= 1.0:
        msg = (
            f"{name} is a cosine-similarity floor between -1 and 1 (1: identical); "
            "cogito-ergo's L2 distance cutoffs such as 400 have no equivalent here: "
            f"write {name}: 0.3 (for example) to drop weak matches, "
            "or leave the key out for no floor."
        )
        raise ValueError(msg)
    return value


def echo(value: Any, *, limit: int = ECHO_MAX_CHARS) -> str:
    """``repr(value)`` for an error message, cut to ``limit`` characters.

    Example:
        ```python
        from cogito_lc._core.validation import echo

        assert echo("x" * 100, limit=10) == "'xxxxxxxx…"
        ```
    """
    shown = repr(value)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def check_unicode(value: str, *, name: str) -> str:
    r"""Return ``value`` if it is text every store takes; raise ``ValueError`` naming ``name``.

    A lone surrogate (``"\ud800"``, which JSON can carry) cannot be encoded as
    UTF-8, so no store, tokenizer or model can take it; a NUL character
    (``"\u0000"``) cannot be stored in a Postgres text or JSON column.

    Example:
        ```python
        from cogito_lc._core.validation import check_unicode

        assert check_unicode("café", name="text") == "café"
        ```
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        msg = (
            f"{name} holds a lone surrogate (U+{ord(value[exc.start]):04X} at position "
            f"{exc.start}), which is not valid Unicode text; send UTF-8 text"
        )
        raise ValueError(msg) from None
    if "\x00" in value:
        msg = (
            f"{name} holds a NUL character (U+0000 at position {value.index(chr(0))}), which "
            "a database cannot store as text; remove it"
        )
        raise ValueError(msg)
    return value


def reject_unknown_kwargs(owner: str, given: Iterable[str], known: Iterable[str]) -> None:
    """Raise ``TypeError`` naming each unknown keyword and the closest known one."""
    known_list = sorted(known)
    unknown = sorted(set(given) - set(known_list))
    if not unknown:
        return
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, known_list, n=1)
        hints.append(f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name))
    msg = (
        f"{owner} got unknown keyword argument(s): {', '.join(hints)}. "
        f"Accepted: {', '.join(known_list)}."
    )
    raise TypeError(msg)


class RejectUnknownFields:
    """Mixin for pydantic models: an unknown field raises ``TypeError`` naming the closest one.

    Put it before the pydantic base class. Pydantic's own ``extra="forbid"`` error
    lists the unknown key only; this one also suggests the field that was meant.

    Example:
        ```python
        from pydantic import BaseModel
        from cogito_lc._core.validation import RejectUnknownFields


        class Settings(RejectUnknownFields, BaseModel):
            top_n: int = 5


        try:
            Settings(topn=3)
        except TypeError as exc:
            print(exc)
        # Settings got unknown keyword argument(s): 'topn' (did you mean 'top_n'?). Accepted: top_n.
        ```
    """

    @model_validator(mode="before")
    @classmethod
    def _reject_unknown_fields(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            fields: Iterable[str] = getattr(cls, "model_fields", {}).keys()
            reject_unknown_kwargs(cls.__name__, data.keys(), fields)
        return data


def check_query(query: Any, *, name: str = "query") -> str:
    """Return ``query`` if it is a non-blank string; raise a clear error otherwise."""
    if not isinstance(query, str):
        msg = f"{name} must be a str, got {type(query).__name__}; pass the query text."
        raise TypeError(msg)
    if not query.strip():
        msg = f"{name} is empty or whitespace; pass a non-empty query string."
        raise ValueError(msg)
    return query


def check_documents(documents: Any, *, name: str = "documents") -> list[Document]:
    """Return ``documents`` as a list if every item is a ``Document``; raise otherwise."""
    if isinstance(documents, (str, bytes)) or not isinstance(documents, Iterable):
        msg = f"{name} must be a list of Document, got {type(documents).__name__}."
        raise TypeError(msg)
    docs = list(documents)
    for index, doc in enumerate(docs):
        if not isinstance(doc, Document):
            msg = (
                f"{name}[{index}] must be a langchain_core.documents.Document, "
                f"got {type(doc).__name__}; wrap text as Document(page_content=...)."
            )
            raise TypeError(msg)
    return docs


def check_positive_int(value: Any, *, name: str) -> int:
    """Return ``value`` if it is an int >= 1; raise a clear error otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"{name} must be an int >= 1, got {type(value).__name__}."
        raise TypeError(msg)
    if value < 1:
        msg = f"{name} must be >= 1, got {value}."
        raise ValueError(msg)
    return value
