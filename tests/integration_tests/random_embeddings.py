"""Embeddings that give every distinct text its own random unit vector, fast and repeatable."""

from __future__ import annotations

import hashlib

import numpy as np
from langchain_core.embeddings import Embeddings

DIM = 64


class RandomEmbeddings(Embeddings):
    """A random unit vector per text, seeded by the text: no two texts share a vector."""

    @staticmethod
    def vector(text: str) -> list[float]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        values = np.random.default_rng(seed).standard_normal(DIM)
        return [float(v) for v in values / np.linalg.norm(values)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vector(text)
