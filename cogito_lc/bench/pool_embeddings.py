"""Embeddings from a precomputed pool: a real model's vectors for millions of memories, cheaply.

The scale benchmark builds its memories from a few thousand base texts (see
:mod:`cogito_lc.bench.scale_corpus`). :class:`PoolEmbeddings` embeds each base text
once with a real model; a memory the caller announced with :meth:`expect` then gets
its base text's vector plus a small offset hashed from its own text (so no two
memories share a vector, which a vector index handles badly). Anything not announced,
queries included, goes to the model. Vectors keep the model's geometry (clusters,
dimension), so the vector index is measured as with the model, without paying for
one model call per memory.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt
from langchain_core.embeddings import Embeddings

from cogito_lc.bench.hash_embeddings import HashEmbeddings

__all__ = ["PoolEmbeddings"]


class PoolEmbeddings(Embeddings):
    """A model's embeddings, with announced texts served from a pool of precomputed vectors.

    Example:
        ```python
        from langchain_core.embeddings import DeterministicFakeEmbedding

        from cogito_lc.bench.pool_embeddings import PoolEmbeddings

        model = DeterministicFakeEmbedding(size=16)
        pool = PoolEmbeddings.build(model, ["Ana adopted a cat.", "Ben runs marathons."])
        pool.expect([("Note: Ana adopted a cat. It is grey.", 0)])
        [served] = pool.embed_documents(["Note: Ana adopted a cat. It is grey."])
        assert pool.served == 1 and len(served) == 16
        assert pool.embed_query("a cat?") == model.embed_query("a cat?")
        ```
    """

    def __init__(
        self, model: Embeddings, vectors: npt.NDArray[np.float32], *, offset: float = 0.25
    ) -> None:
        if vectors.ndim != 2 or not len(vectors):
            msg = "vectors must be a non-empty 2-D array (one row per base text)."
            raise ValueError(msg)
        self.model = model
        self.vectors = vectors
        self.offset = offset
        self._hash = HashEmbeddings(size=vectors.shape[1])
        self._expected: dict[str, int] = {}
        self.served = 0
        """How many texts were served from the pool (not the model)."""

    @classmethod
    def build(
        cls, model: Embeddings, base_texts: list[str], *, batch_size: int = 256
    ) -> PoolEmbeddings:
        """Embed the base texts with the model, in batches, and wrap it."""
        rows: list[list[float]] = []
        for start in range(0, len(base_texts), batch_size):
            rows.extend(model.embed_documents(base_texts[start : start + batch_size]))
        return cls(model, np.asarray(rows, dtype=np.float32))

    def expect(self, entries: Iterable[tuple[str, int]]) -> None:
        """Announce texts about to be embedded and the base text each was built from."""
        for text, base in entries:
            self._expected[text] = base % len(self.vectors)

    def forget(self) -> None:
        """Drop the announced texts (call after each write, to keep memory flat)."""
        self._expected.clear()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Pool vectors for announced texts; the model for the rest (one batched call)."""
        missing = [text for text in texts if text not in self._expected]
        from_model = iter(self.model.embed_documents(missing) if missing else [])
        out: list[list[float]] = []
        for text in texts:
            base = self._expected.get(text)
            out.append(next(from_model) if base is None else self._pooled(text, base))
        return out

    def embed_query(self, text: str) -> list[float]:
        """Queries always go to the model."""
        return self.model.embed_query(text)

    def _pooled(self, text: str, base: int) -> list[float]:
        self.served += 1
        jitter = np.asarray(self._hash.embed_query(text), dtype=np.float32)
        vector = self.vectors[base] + self.offset * jitter
        normalised: list[float] = (vector / float(np.linalg.norm(vector))).tolist()
        return normalised
