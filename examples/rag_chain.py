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
   ``$COGITO_OLLAMA_MODEL`` (default: the first model the server lists).
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
import sys
import tempfile
from pathlib import Path
from typing import Any

from langchain_chroma import Chroma
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough

from cogito_lc import RETRIEVAL_EVENT, CogitoRetriever, local_embeddings, markdown_memories
from cogito_lc.extraction.discovery import NEEDS, find_chat_model

DATA = Path(__file__).resolve().parent / "data"
MAX_OUTPUT_TOKENS = 512

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
    found = find_chat_model(max_tokens=MAX_OUTPUT_TOKENS)
    if found is None:
        print(NEEDS, file=sys.stderr)
        return 2
    llm, mode = found.llm, found.structured_output

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
        print(f"model: {found.description}   memories: {len(memories)}\n")
        for question in questions(argv):
            answer = chain.invoke(question, {"callbacks": [log]})
            print(f"Q: {question}")
            print(f"   [{log.last.get('method')}, {log.last.get('returned')} memories]")
            print(f"A: {answer.strip()}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
