"""Turn agent output into atomic memory facts with FactExtractor.

Usage:
    python examples/memory/fact_extraction.py [FILE]

FILE is a text file of agent output; without it a short architecture note is used.

The example picks the first model it can reach:

1. Ollama at ``$OLLAMA_HOST`` (default ``http://localhost:11434``) with the model
   ``$COGITO_OLLAMA_MODEL`` (default ``qwen2.5:3b``; pull it with ``ollama pull``).
2. Any OpenAI-compatible endpoint (llama.cpp, LM Studio, vLLM, a gateway, OpenAI):
   ``$COGITO_FILTER_ENDPOINT`` or ``$OPENAI_BASE_URL`` for the base URL,
   ``$COGITO_FILTER_MODEL`` or ``$OPENAI_MODEL`` for the model name, and
   ``$COGITO_FILTER_TOKEN`` or ``$OPENAI_API_KEY`` for the key (optional locally).

``$COGITO_STRUCTURED_OUTPUT`` chooses how the JSON schema reaches the model
(``auto``, ``json_schema``, ``json_object``, ``format``, ``none``); use
``json_object`` for llama-cpp-python's server.

Ollama needs ``pip install "cogito-lc[ollama]"``, an OpenAI-compatible endpoint
``pip install "cogito-lc[openai]"``.

Exit status: 0 after printing the facts, 1 if the model could not be reached
during extraction, 2 if no model is configured or reachable, or a client package
or setting is missing (the message says what to do).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import Any, cast, get_args
from urllib.parse import urlparse

from cogito_lc.fact_extractor import FactExtractionInput, FactExtractor
from cogito_lc.llm_extractor import ExtractionMethod, StructuredOutputMode

SAMPLE_OUTPUT = """\
Chose a monolithic architecture for the billing API. Microservices would require
separate deployments and inter-service networking that the team cannot operate at
current headcount. All timestamps are stored in UTC; the team prefers small pull
requests with a single reviewer. Deploys currently freeze on Fridays after 14:00
because the on-call rotation is short-staffed until May.
"""

NEEDS = """\
No language model is reachable. Provide one of:

  * Ollama on its default port (http://localhost:11434, or set OLLAMA_HOST) with the
    model in COGITO_OLLAMA_MODEL (default qwen2.5:3b):  ollama pull qwen2.5:3b
  * an OpenAI-compatible endpoint:
      COGITO_FILTER_ENDPOINT (or OPENAI_BASE_URL)   base URL, e.g. http://127.0.0.1:8080/v1
      COGITO_FILTER_MODEL    (or OPENAI_MODEL)      model name
      COGITO_FILTER_TOKEN    (or OPENAI_API_KEY)    API key, if the endpoint needs one
"""

MAX_OUTPUT_TOKENS = 1024


class SetupError(Exception):
    """Something the example needs is missing; the message says what to do."""


def client_module(name: str, extra: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        msg = f"{name} is not installed: pip install 'cogito-lc[{extra}]'"
        raise SetupError(msg) from exc


def ollama_chat_model() -> Any | None:
    host = os.environ.get("OLLAMA_HOST", "http://localhost:11434")
    if not host.startswith(("http://", "https://")):
        host = f"http://{host}"
    model = os.environ.get("COGITO_OLLAMA_MODEL", "qwen2.5:3b")
    try:
        with urllib.request.urlopen(f"{host}/api/tags", timeout=2) as response:  # noqa: S310
            installed = {entry["name"] for entry in json.load(response).get("models", [])}
    except (OSError, urllib.error.URLError, ValueError):
        return None
    if model not in installed and f"{model}:latest" not in installed:
        print(f"Ollama answers at {host} but has no model {model!r}: ollama pull {model}")
        return None
    chat_ollama = client_module("langchain_ollama", "ollama").ChatOllama
    return chat_ollama(model=model, base_url=host, temperature=0, num_predict=MAX_OUTPUT_TOKENS)


def openai_compatible_chat_model() -> Any | None:
    base_url = os.environ.get("COGITO_FILTER_ENDPOINT") or os.environ.get("OPENAI_BASE_URL")
    model = os.environ.get("COGITO_FILTER_MODEL") or os.environ.get("OPENAI_MODEL")
    if not base_url or not model:
        return None
    chat_openai = client_module("langchain_openai", "openai").ChatOpenAI
    api_key = os.environ.get("COGITO_FILTER_TOKEN") or os.environ.get("OPENAI_API_KEY") or "unused"
    # langchain-openai sends max_completion_tokens; local servers such as
    # llama-cpp-python only honour max_tokens, so send that as well.
    is_openai = urlparse(base_url).hostname == "api.openai.com"
    extra_body = None if is_openai else {"max_tokens": MAX_OUTPUT_TOKENS}
    return chat_openai(
        model=model,
        base_url=base_url,
        api_key=api_key,
        temperature=0,
        max_tokens=MAX_OUTPUT_TOKENS,
        extra_body=extra_body,
    )


def structured_output_mode() -> StructuredOutputMode:
    mode = os.environ.get("COGITO_STRUCTURED_OUTPUT", "auto")
    modes = get_args(StructuredOutputMode)
    if mode not in modes:
        msg = f"COGITO_STRUCTURED_OUTPUT={mode!r} is not one of {', '.join(modes)}"
        raise SetupError(msg)
    return cast("StructuredOutputMode", mode)


def main() -> int:
    text = Path(sys.argv[1]).read_text(encoding="utf-8") if len(sys.argv) > 1 else SAMPLE_OUTPUT
    try:
        mode = structured_output_mode()
        llm = ollama_chat_model() or openai_compatible_chat_model()
    except SetupError as exc:
        print(exc, file=sys.stderr)
        return 2
    if llm is None:
        print(NEEDS, file=sys.stderr)
        return 2
    extractor = FactExtractor.from_llm(llm, structured_output=mode)

    result = extractor.invoke_with_result(
        FactExtractionInput(text=text, context_hints=["project: billing API"], max_facts=5)
    )

    print(f"model: {type(llm).__name__}  method: {result.method.value}")
    for fact in result.value:
        print(f"- [{fact.kind.value:<11}] ({fact.importance:.2f}) {fact.content}")
    if not result.value:
        print("(no facts extracted)")
    if result.method is ExtractionMethod.ERROR:
        print(f"The model could not be reached: {result.error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
