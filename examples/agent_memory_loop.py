"""An agent turn loop with long-term memory: recall before answering, extract after.

Each turn: RecallB finds the memories relevant to the user's message (no LLM),
the reader model answers with them in context, then FactExtractor distils the
exchange into atomic facts that MemoryStore writes verbatim for later turns.
Without a chat model the loop still runs: answers are the recalled memories
and writes are stored verbatim (``fallback_no_llm``).

    python examples/agent_memory_loop.py
"""

from __future__ import annotations

import tempfile

from langchain_chroma import Chroma
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate

from cogito_lc import FactExtractor, MemoryStore, local_embeddings
from cogito_lc.extraction.discovery import NEEDS, find_chat_model

TURNS = [
    "Our billing service uses PostgreSQL 16 and invoices must be sent in EUR.",
    "For the billing API, let's always return money amounts as integer cents.",
    "Remind me: how should the billing API return money amounts?",
]

ANSWER = ChatPromptTemplate.from_template(
    "You are a helpful engineering assistant.\nWhat you remember:\n{memories}\n\n"
    "User: {message}\nAnswer in one or two sentences."
)


def main() -> None:
    found = find_chat_model(max_tokens=256)
    print(f"model: {found.description}" if found else f"no model ({NEEDS})")
    with tempfile.TemporaryDirectory(prefix="cogito-loop-") as folder:
        memory = MemoryStore(
            Chroma("agent_loop", local_embeddings(), persist_directory=folder),
            extractor=FactExtractor.from_llm(found.llm, structured_output=found.structured_output)
            if found
            else None,
            scope={"user_id": "dev", "agent_id": "assistant"},
        )
        recall = memory.as_retriever(k=3)
        reader = ANSWER | found.llm | StrOutputParser() if found else None
        for turn, message in enumerate(TURNS, start=1):
            recalled = recall.invoke(message) if memory.count() else []
            context = "\n".join(f"- {doc.page_content}" for doc in recalled) or "- (nothing yet)"
            if reader is not None:
                answer = reader.invoke({"memories": context, "message": message}).strip()
                written = memory.add(f"User: {message}\nAssistant: {answer}", max_facts=3)
            else:
                answer = "(no model: the recalled memories above are the answer)"
                written = memory.add(message)
            print(f"\nturn {turn}: {message}\n  recalled:\n{context}\n  answer: {answer}")
            print(f"  stored {written.count} memories ({written.method})")


if __name__ == "__main__":
    main()
