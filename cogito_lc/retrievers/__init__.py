"""Retrievers: ``RecallB`` (zero-LLM recall) and ``CogitoRetriever`` (two stages).

``CogitoRetriever`` is RecallB followed by a ``PointerFilter``. RecallB's private
machinery lives here too: query decomposition, rank fusion, lexical runs, sub-query
vectors, the vector cache and the search helpers. May import
:mod:`cogito_lc.document_compressors`, :mod:`cogito_lc.embeddings`,
:mod:`cogito_lc.prompts` and :mod:`cogito_lc._core`; knows nothing of extraction,
memory, the service or the CLI.
"""

from __future__ import annotations

from cogito_lc.retrievers._decompose import Decomposition, decompose_query
from cogito_lc.retrievers._fusion import document_key, reciprocal_rank_fusion
from cogito_lc.retrievers._lexical import Bm25Index, Bm25LexicalIndex
from cogito_lc.retrievers._recency import asks_about_present, recency_step
from cogito_lc.retrievers._vector_cache import VectorCache
from cogito_lc.retrievers.cogito_retriever import RETRIEVAL_EVENT, CogitoRetriever
from cogito_lc.retrievers.fts_index import SqliteLexicalIndex
from cogito_lc.retrievers.lexical_index import LexicalHit, LexicalIndex, lexical_terms
from cogito_lc.retrievers.lexical_sync import LexicalSync, lexical_sync_for
from cogito_lc.retrievers.pg_lexical_index import PostgresLexicalIndex
from cogito_lc.retrievers.recall_b import RecallB

__all__ = [
    "RETRIEVAL_EVENT",
    "Bm25Index",
    "Bm25LexicalIndex",
    "CogitoRetriever",
    "Decomposition",
    "LexicalHit",
    "LexicalIndex",
    "LexicalSync",
    "PostgresLexicalIndex",
    "RecallB",
    "SqliteLexicalIndex",
    "VectorCache",
    "asks_about_present",
    "decompose_query",
    "document_key",
    "lexical_sync_for",
    "lexical_terms",
    "recency_step",
    "reciprocal_rank_fusion",
]
