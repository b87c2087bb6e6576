"""Answer questions from long-term memory: ``retriever | format_docs | prompt | llm``.

Usage:
    python examples/rag_chain.py ["question" ...]

Without questions, three from ``examples/data/questions.json`` are asked. The sample
memories in ``examples/data`` are stored in an embedded Chroma collection (local
all-MiniLM-L6-v2, offline). A CogitoRetriever recalls them in two stages (RecallB,
then the chat model picks the relevant ones by number), and the same chat model
reads them and answers. The memories it reads are the stored text, verbatim.

The example picks the first model it can reach:

1. Ollama at ``$OLLAMA_HOST`` (default ``http://localhost:11434``) with the model
   ``$COGITO_OLLAMA_MODEL`` (default ``qwen2.5:3b``; pull it with ``ollama pull``).
2. Any OpenAI-compatible endpoint (llama.cpp, LM Studio, vLLM, a gateway, OpenAI):
   ``$COGITO_FILTER_ENDPOINT`` or ``$OPENAI_BASE_URL`` for the base URL,
   ``$COGITO_FILTER_MODEL`` or ``$OPENAI_MODEL`` for the model name, and
   ``$COGITO_FILTER_TOKEN`` or ``$OPENAI_API_KEY`` for the key (optional locally).

``$COGITO_STRUCTURED_OUTPUT`` chooses how the filter's JSON schema reaches the model
(``auto``, ``json_schema``, ``json_object``, ``format``, ``none``); use
``json_object`` for llama-cpp-python's server.

Exit status: 0 after answering, 2 if no model is configured or reachable (the
message says what to set).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlparse

from langchain_chroma import Chroma
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough

from cogito_lc.cogito_retriever import RETRIEVAL_EVENT, CogitoRetriever
from cogito_lc.embeddings import local_embeddings
from cogito_lc.llm_extractor import StructuredOutputMode
from cogito_lc.loaders import markdown_memories

DATA = Path(__file__).resolve().parent / "data"
MAX_OUTPUT_TOKENS = 512

NEEDS = """\
No language model is reachable. Provide one of:

  * Ollama on its default port (http://localhost:11434, or set OLLAMA_HOST) with the
    model in COGITO_OLLAMA_MODEL (default qwen2.5:3b):  ollama pull qwen2.5:3b
  * an OpenAI-compatible endpoint:
      COGITO_FILTER_ENDPOINT (or OPENAI_BASE_URL)   base URL, e.g. http://127.0.0.1:8080/v1
      COGITO_FILTER_MODEL    (or OPENAI_MODEL)      model name
      COGITO_FILTER_TOKEN    (or OPENAI_API_KEY)    API key, if the endpoint needs one
"""

ANSWER_PROMPT = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            "Answer the question from the memories below only. Quote numbers and names "
            "exactly as they appear. If the memories do not answer it, say so.\n\n"
            "Memories:\n{context}",
        ),
        ("human", "{question}"),
    ]
)


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
    from langchain_ollama import ChatOllama

    return ChatOllama(model=model, base_url=host, temperature=0, num_predict=MAX_OUTPUT_TOKENS)


def openai_compatible_chat_model() -> Any | None:
    base_url = os.environ.get("COGITO_FILTER_ENDPOINT") or os.environ.get("OPENAI_BASE_URL")
    model = os.environ.get("COGITO_FILTER_MODEL") or os.environ.get("OPENAI_MODEL")
    if not base_url or not model:
        return None
    from langchain_openai import ChatOpenAI

    api_key = os.environ.get("COGITO_FILTER_TOKEN") or os.environ.get("OPENAI_API_KEY") or "unused"
    # langchain-openai sends max_completion_tokens; local servers such as
    # llama-cpp-python only honour max_tokens, so send that as well.
    is_openai = urlparse(base_url).hostname == "api.openai.com"
    extra_body = None if is_openai else {"max_tokens": MAX_OUTPUT_TOKENS}
    return ChatOpenAI(
        model=model,
        base_url=base_url,
        api_key=api_key,
        temperature=0,
        max_tokens=MAX_OUTPUT_TOKENS,
        extra_body=extra_body,
    )


def format_docs(docs: list[Document]) -> str:
    return "\n\n".join(f"- {doc.page_content}" for doc in docs) or "(no memories found)"


class RetrievalLog(BaseCallbackHandler):
    """Keeps the method tag and size of the last retrieval, from the retriever's event."""

    def __init__(self) -> None:
        self.last: dict[str, Any] = {}

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        if name == RETRIEVAL_EVENT:
            self.last = data


def questions(argv: list[str]) -> list[str]:
    if argv:
        return argv
    cases = json.loads((DATA / "questions.json").read_text(encoding="utf-8"))
    return [case["question"] for case in cases[:3]]


def main(argv: list[str]) -> int:
    llm = ollama_chat_model() or openai_compatible_chat_model()
    if llm is None:
        print(NEEDS, file=sys.stderr)
        return 2
    mode = cast("StructuredOutputMode", os.environ.get("COGITO_STRUCTURED_OUTPUT", "auto"))

    with tempfile.TemporaryDirectory(prefix="cogito-rag-") as tmp:
        store = Chroma(
            collection_name="cogito_rag",
            embedding_function=local_embeddings(),
            persist_directory=str(Path(tmp) / "chroma"),
        )
        memories = list(markdown_memories(DATA))
        store.add_documents(memories, ids=[m.id for m in memories])

        retriever = CogitoRetriever.from_llm(store, llm, k=4, structured_output=mode)
        chain = (
            {"context": retriever | format_docs, "question": RunnablePassthrough()}
            | ANSWER_PROMPT
            | llm
            | StrOutputParser()
        )

        log = RetrievalLog()
        print(f"model: {type(llm).__name__}   memories: {len(memories)}\n")
        for question in questions(argv):
            answer = chain.invoke(question, {"callbacks": [log]})
            print(f"Q: {question}")
            print(f"   [{log.last.get('method')}, {log.last.get('returned')} memories]")
            print(f"A: {answer.strip()}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
