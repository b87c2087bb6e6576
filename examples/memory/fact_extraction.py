"""Turn agent output into atomic memory facts with FactExtractor.

Usage:
    python examples/memory/fact_extraction.py [FILE]

FILE is a text file of agent output; without it a short architecture note is used.

The example picks the first model it can reach:

1. Ollama at ``$OLLAMA_HOST`` (default ``http://localhost:11434``) with the model
   ``$COGITO_OLLAMA_MODEL`` (default: the first model the server lists).
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

import sys
from pathlib import Path

from cogito_lc import ExtractionMethod, FactExtractionInput, FactExtractor
from cogito_lc.extraction.discovery import NEEDS, find_chat_model

SAMPLE_OUTPUT = """\
Chose a monolithic architecture for the billing API. Microservices would require
separate deployments and inter-service networking that the team cannot operate at
current headcount. All timestamps are stored in UTC; the team prefers small pull
requests with a single reviewer. Deploys currently freeze on Fridays after 14:00
because the on-call rotation is short-staffed until May.
"""

MAX_OUTPUT_TOKENS = 1024


def main() -> int:
    text = Path(sys.argv[1]).read_text(encoding="utf-8") if len(sys.argv) > 1 else SAMPLE_OUTPUT
    try:
        found = find_chat_model(max_tokens=MAX_OUTPUT_TOKENS)
    except ValueError as exc:  # an invalid COGITO_STRUCTURED_OUTPUT
        print(exc, file=sys.stderr)
        return 2
    if found is None:
        print(NEEDS, file=sys.stderr)
        return 2
    extractor = FactExtractor.from_llm(found.llm, structured_output=found.structured_output)

    result = extractor.invoke_with_result(
        FactExtractionInput(text=text, context_hints=["project: billing API"], max_facts=5)
    )

    print(f"model: {found.description}  method: {result.method.value}")
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
