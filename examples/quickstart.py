"""Quickstart: zero-LLM recall over embedded Chroma, offline.

python examples/quickstart.py
"""

from __future__ import annotations

from langchain_chroma import Chroma

from cogito_lc import RecallB, local_embeddings

store = Chroma(collection_name="quickstart", embedding_function=local_embeddings())
store.add_texts(
    [
        "Auth tokens expire after 3600 seconds; refresh tokens rotate on every use.",
        "We chose PostgreSQL 16 for billing because invoices need multi-row transactions.",
        "The user prefers pytest fixtures over unittest setUp methods.",
    ],
    ids=["auth", "billing-db", "testing-style"],
)

retriever = RecallB(vectorstore=store, k=2)
for doc in retriever.invoke("how long do auth tokens last?"):
    print(doc.id, "|", doc.page_content, "|", doc.metadata["cogito"]["method"])
store.delete_collection()
