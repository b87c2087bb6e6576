"""PoolEmbeddings: announced texts get their base text's vector, the rest go to the model."""

from __future__ import annotations

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from cogito_lc.bench.pool_embeddings import PoolEmbeddings

BASES = ["Ana adopted a cat named Miso.", "Ben ran a half marathon in the rain."]


class CountingEmbeddings(DeterministicFakeEmbedding):
    calls: int = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return [self.embed_query(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        vector = np.asarray(super().embed_query(text))
        return (vector / np.linalg.norm(vector)).tolist()


def test_announced_texts_are_served_from_the_pool_near_their_base() -> None:
    model = CountingEmbeddings(size=64)
    pool = PoolEmbeddings.build(model, BASES)
    assert model.calls == 1
    texts = ["Note: Ana adopted a cat named Miso. It is grey.", "Ana, 2 May: Miso!"]
    pool.expect([(texts[0], 0), (texts[1], 0)])
    first, second = (np.asarray(v) for v in pool.embed_documents(texts))
    assert model.calls == 1, "no model call for announced texts"
    assert pool.served == 2
    base = pool.vectors[0]
    for vector in (first, second):
        assert np.linalg.norm(vector) == pytest.approx(1.0, rel=1e-5)
        assert float(vector @ base) > 0.9
    assert not np.allclose(first, second), "two memories never share a vector"


def test_other_texts_and_queries_go_to_the_model_in_one_call() -> None:
    model = CountingEmbeddings(size=64)
    pool = PoolEmbeddings.build(model, BASES)
    pool.expect([("announced", 1)])
    vectors = pool.embed_documents(["new one", "announced", "another"])
    assert model.calls == 2
    assert vectors[0] == model.embed_query("new one")
    assert vectors[2] == model.embed_query("another")
    assert pool.embed_query("a cat?") == model.embed_query("a cat?")
    pool.forget()
    assert pool.embed_documents(["announced"]) == [model.embed_query("announced")]


def test_an_empty_pool_names_the_argument() -> None:
    with pytest.raises(ValueError, match="vectors must be a non-empty 2-D array"):
        PoolEmbeddings(CountingEmbeddings(size=8), np.zeros((0, 8), dtype=np.float32))
