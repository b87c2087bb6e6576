"""Find a chat model: Ollama first, then an OpenAI-compatible endpoint from the environment.

Environment:
    ``OLLAMA_HOST`` or ``COGITO_OLLAMA_URL`` (default ``http://localhost:11434``) and
    ``COGITO_OLLAMA_MODEL`` (default: the first model the server lists);
    ``COGITO_FILTER_ENDPOINT`` or ``OPENAI_BASE_URL``, ``COGITO_FILTER_MODEL`` or
    ``OPENAI_MODEL``, ``COGITO_FILTER_TOKEN`` or ``OPENAI_API_KEY``;
    ``COGITO_STRUCTURED_OUTPUT`` (``auto``, ``json_schema``, ``json_object``,
    ``format``, ``none``; use ``json_object`` for llama-cpp-python's server).

Needs no extra beyond the model's own (``ollama`` or ``openai``): a model whose
package is not installed is not found. Moved here from ``cogito_lc.service.discovery``
(that path needs the ``server`` extra and warns).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlparse

from cogito_lc._core.structured_output import StructuredOutputMode

__all__ = ["NEEDS", "FoundModel", "find_chat_model", "max_tokens_body"]

NEEDS = (
    "no language model is reachable: run Ollama on its default port with a model "
    "(ollama pull qwen2.5:3b), or set COGITO_FILTER_ENDPOINT (or OPENAI_BASE_URL) and "
    "COGITO_FILTER_MODEL (or OPENAI_MODEL) for an OpenAI-compatible endpoint."
)
"""What to do when :func:`find_chat_model` finds nothing."""

_MODES = {"auto", "langchain", "json_schema", "json_object", "format", "none"}


@dataclass
class FoundModel:
    """A chat model that answered, how to reach it, and how to send it a JSON schema."""

    llm: Any
    description: str
    structured_output: StructuredOutputMode


def _mode() -> StructuredOutputMode:
    mode = os.environ.get("COGITO_STRUCTURED_OUTPUT", "auto")
    if mode not in _MODES:
        msg = f"COGITO_STRUCTURED_OUTPUT={mode!r}; use one of {sorted(_MODES)}."
        raise ValueError(msg)
    return cast("StructuredOutputMode", mode)


def _ollama(max_tokens: int, timeout: float) -> FoundModel | None:
    host = os.environ.get("OLLAMA_HOST") or os.environ.get("COGITO_OLLAMA_URL")
    host = host or "http://localhost:11434"
    if not host.startswith(("http://", "https://")):
        host = f"http://{host}"
    try:
        with urllib.request.urlopen(f"{host}/api/tags", timeout=timeout) as response:  # noqa: S310
            installed = [entry["name"] for entry in json.load(response).get("models", [])]
    except (OSError, urllib.error.URLError, ValueError, KeyError):
        return None
    model = os.environ.get("COGITO_OLLAMA_MODEL") or (installed[0] if installed else None)
    if model is None:
        return None
    try:
        from langchain_ollama import ChatOllama
    except ImportError:
        return None
    llm = ChatOllama(model=model, base_url=host, temperature=0, num_predict=max_tokens)
    return FoundModel(llm, f"Ollama {model} at {host}", _mode())


def _openai_compatible(max_tokens: int, timeout: float) -> FoundModel | None:
    base_url = os.environ.get("COGITO_FILTER_ENDPOINT") or os.environ.get("OPENAI_BASE_URL")
    model = os.environ.get("COGITO_FILTER_MODEL") or os.environ.get("OPENAI_MODEL")
    if not base_url or not model:
        return None
    try:
        from langchain_openai import ChatOpenAI
    except ImportError:
        return None
    key = os.environ.get("COGITO_FILTER_TOKEN") or os.environ.get("OPENAI_API_KEY") or "unused"
    llm = ChatOpenAI(
        model=model,
        base_url=base_url,
        api_key=key,
        temperature=0,
        max_tokens=max_tokens,
        timeout=120.0,
        extra_body=max_tokens_body(base_url, max_tokens),
    )
    return FoundModel(llm, f"{model} at {base_url}", _mode())


def find_chat_model(*, max_tokens: int = 1024, timeout: float = 2.0) -> FoundModel | None:
    """The first chat model that can be reached, or None (see :data:`NEEDS`).

    Example:
        ```python
        # needs: a chat model server (Ollama, or an OpenAI-compatible endpoint)
        from cogito_lc.extraction.discovery import NEEDS, find_chat_model

        found = find_chat_model()
        print(found.description if found else NEEDS)
        ```
    """
    return _ollama(max_tokens, timeout) or _openai_compatible(max_tokens, timeout)


def max_tokens_body(base_url: str | None, max_tokens: int) -> dict[str, int] | None:
    """``max_tokens`` for the request body of an OpenAI-compatible server other than OpenAI.

    langchain-openai sends the cap as ``max_completion_tokens``, which servers such as
    llama-cpp-python ignore; they read ``max_tokens``. None for OpenAI itself (no
    ``base_url``, or api.openai.com), which takes the first.
    """
    if not base_url or urlparse(base_url).hostname == "api.openai.com":
        return None
    return {"max_tokens": max_tokens}
