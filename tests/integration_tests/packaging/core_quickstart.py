"""The offline quickstart a user of ``pip install cogito-lc`` (no extras) can run.

Run by ``test_wheel.py`` inside a fresh virtual environment with the built wheel and its
core dependencies only: deterministic embeddings, a scripted chat model, no network.
"""

from __future__ import annotations

import sys
import tempfile

from langchain_chroma import Chroma
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel
from langchain_core.vectorstores import InMemoryVectorStore

from cogito_lc import MemoryStore, PointerFilter, RecallB

TEXTS = [
    "Auth tokens expire after 3600 seconds.",
    "Billing uses PostgreSQL 16 for multi-row transactions.",
    "Deploys freeze on Fridays after 14:00 UTC.",
]
embeddings = DeterministicFakeEmbedding(size=64)

store = InMemoryVectorStore(embeddings)
store.add_texts(TEXTS, ids=["auth", "billing", "deploys"])
docs = RecallB(vectorstore=store, k=3).invoke("how long do auth tokens last?")
assert docs[0].id == "auth", [doc.id for doc in docs]
assert docs[0].metadata["cogito"]["method"].startswith("decompose_")

# The model answers with the number of a candidate; the stored Document comes back.
position = next(i for i, doc in enumerate(docs, start=1) if doc.id == "auth")
pointer_filter = PointerFilter.from_llm(FakeListChatModel(responses=[f"[{position}]"]))
best = pointer_filter.compress_documents(docs, "how long do auth tokens last?")
assert [doc.page_content for doc in best] == [TEXTS[0]], best

with tempfile.TemporaryDirectory() as directory:
    chroma = Chroma("packaging", embeddings, persist_directory=directory)
    memory = MemoryStore(chroma, scope={"user_id": "alice"})
    memory.store("Deploys freeze on Fridays after 14:00 UTC.")
    memory.store("The user prefers pytest fixtures over unittest setUp methods.")
    found = memory.as_retriever(k=1).invoke("when do deploys freeze?")
    assert [doc.page_content for doc in found] == [TEXTS[2]], found
    del memory, chroma

sys.stdout.write("quickstart ok\n")
