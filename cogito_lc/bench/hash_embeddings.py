"""A cheap, deterministic embedding for measuring indexes rather than an embedding model.

:class:`HashEmbeddings` hashes each word (and each pair of neighbouring words) into
one of ``size`` signed buckets and normalises the sum: texts sharing words get
similar vectors, as with a real model, at a few microseconds per text and with no
model to load. Its search quality means nothing; the scale benchmark uses it to fill
a store with a million memories and labels every figure taken with it.
"""

from __future__ import annotations

import hashlib
import itertools
import re

import numpy as np
from langchain_core.embeddings import Embeddings

__all__ = ["HashEmbeddings"]

_WORD = re.compile(r"\w+")


class HashEmbeddings(Embeddings):
    """Deterministic feature-hashing embeddings (words and word pairs), L2-normalised.

    Example:
        ```python
        from cogito_lc.bench.hash_embeddings import HashEmbeddings

        embeddings = HashEmbeddings(size=64)
        a, b, c = embeddings.embed_documents(
            ["the billing service runs on port 8083", "billing runs on port 8083", "I like cats"]
        )
        dot = lambda x, y: sum(p * q for p, q in zip(x, y))
        assert len(a) == 64 and dot(a, b) > dot(a, c)
        assert embeddings.embed_query("I like cats") == c
        ```
    """

    def __init__(self, size: int = 384) -> None:
        if size < 8:
            msg = f"size must be >= 8, got {size}."
            raise ValueError(msg)
        self.size = size

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed each text."""
        return [self._embed(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        """Embed a query (the same function as documents)."""
        return self._embed(text)

    def _embed(self, text: str) -> list[float]:
        words = _WORD.findall(text.lower())
        features = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
        vector = np.zeros(self.size, dtype=np.float32)
        for feature in features:
            value = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "big")
            vector[value % self.size] += 1.0 if value >> 63 else -1.0
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:
            vector[0] = 1.0
            norm = 1.0
        normalised: list[float] = (vector / norm).tolist()
        return normalised
