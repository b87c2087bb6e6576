"""The local embeddings can be pickled, alone and inside a retriever."""

from __future__ import annotations

import pickle

from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

from cogito_lc import RecallB
from cogito_lc._core.model_lock import model_lock

NOTES = ["The billing service listens on port 8083.", "Deploys run on Tuesdays."]
QUERY = "which port does billing listen on?"


def test_pickled_local_embeddings_embed_the_same_vector(minilm: Embeddings) -> None:
    loaded = pickle.loads(pickle.dumps(minilm))  # noqa: S301 - our own bytes

    assert loaded.embed_query(QUERY) == minilm.embed_query(QUERY)
    assert loaded.embed_documents(NOTES) == minilm.embed_documents(NOTES)
    client = loaded._client  # type: ignore[attr-defined]
    assert model_lock(client) is model_lock(minilm._client)  # type: ignore[attr-defined]


def test_a_pickled_recall_b_over_the_local_embeddings_recalls_the_same(
    minilm: Embeddings,
) -> None:
    store = InMemoryVectorStore(embedding=minilm)
    store.add_texts(NOTES, ids=["port", "deploys"])
    recall = RecallB(vectorstore=store, k=1)

    loaded = pickle.loads(pickle.dumps(recall))  # noqa: S301 - our own bytes

    assert [d.id for d in loaded.invoke(QUERY)] == [d.id for d in recall.invoke(QUERY)] == ["port"]
