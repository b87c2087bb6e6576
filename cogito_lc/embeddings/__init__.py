"""Offline local embeddings (all-MiniLM-L6-v2 shipped in a PyPI package), loaded lazily on request.

Needs the ``local`` extra. May import only :mod:`cogito_lc._core`.
"""

from __future__ import annotations

from cogito_lc.embeddings.lazy import LazyEmbeddings
from cogito_lc.embeddings.local import LOCAL_MODEL_NAME, local_embeddings, local_model_path

__all__ = ["LOCAL_MODEL_NAME", "LazyEmbeddings", "local_embeddings", "local_model_path"]
