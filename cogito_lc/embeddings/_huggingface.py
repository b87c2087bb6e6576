"""The Hugging Face embeddings :func:`~cogito_lc.embeddings.local_embeddings` returns.

Imported only when the ``local`` extra (``langchain_huggingface``) is installed.
"""

from __future__ import annotations

from cogito_lc._core.extras import missing_extra
from cogito_lc._core.model_lock import model_lock

try:
    from langchain_huggingface import HuggingFaceEmbeddings
except ImportError as exc:  # pragma: no cover - exercised on an install without the extra
    error = missing_extra("local", "Local embeddings (all-MiniLM-L6-v2)", exc.name)
    raise error from exc

__all__ = ["LockedHuggingFaceEmbeddings"]


class LockedHuggingFaceEmbeddings(HuggingFaceEmbeddings):
    """Embeddings whose model is used by one thread at a time (servers call it concurrently).

    The lock is the process's lock of the loaded model (:func:`model_lock`), so
    it is never part of the object. :func:`~cogito_lc.embeddings.local_embeddings`
    has it pickled as the call that made it: unpickling gives the bundled model of
    this process for the same device, loaded once and shared, with its lock.
    """

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with model_lock(self._client):
            return super().embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        with model_lock(self._client):
            return super().embed_query(text)
