"""Retrievers: ``RecallB`` (zero-LLM recall) and ``CogitoRetriever`` (two stages).

``CogitoRetriever`` is RecallB followed by a ``PointerFilter``. RecallB's private
machinery lives here too: query decomposition, rank fusion, lexical runs, sub-query
vectors, the vector cache and the search helpers. The indexes it searches live in
:mod:`cogito_lc.stores`. May import :mod:`cogito_lc.document_compressors`,
:mod:`cogito_lc.embeddings`, :mod:`cogito_lc.stores`, :mod:`cogito_lc.prompts` and
:mod:`cogito_lc._core`; knows nothing of extraction, memory, the service or the CLI.
"""

from __future__ import annotations

from typing import Any

from cogito_lc import _deprecated
from cogito_lc.retrievers._decompose import Decomposition, decompose_query
from cogito_lc.retrievers._fusion import document_key, reciprocal_rank_fusion
from cogito_lc.retrievers._recency import asks_about_present, recency_step
from cogito_lc.retrievers._vector_cache import VectorCache
from cogito_lc.retrievers.cogito_retriever import RETRIEVAL_EVENT, CogitoRetriever
from cogito_lc.retrievers.recall_b import RecallB

__all__ = [
    "RETRIEVAL_EVENT",
    "CogitoRetriever",
    "Decomposition",
    "RecallB",
    "VectorCache",
    "asks_about_present",
    "decompose_query",
    "document_key",
    "recency_step",
    "reciprocal_rank_fusion",
]


def __getattr__(name: str) -> Any:
    """The lexical engines that moved to :mod:`cogito_lc.stores`, with a warning."""
    return _deprecated.moved_attribute(__name__, name)
