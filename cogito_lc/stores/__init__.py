"""Storage: the vector-store adapters and the lexical engines beside them.

One module per backend adapter (:mod:`~cogito_lc.stores.chroma` for Chroma,
embedded or a server; :mod:`~cogito_lc.stores.postgres` for Postgres with
pgvector; :mod:`~cogito_lc.stores.qdrant` for Qdrant, embedded or a server;
:mod:`~cogito_lc.stores.in_memory` for LangChain's
``InMemoryVectorStore``; :mod:`~cogito_lc.stores.base` for any other LangChain
vector store) and one per lexical engine (:mod:`~cogito_lc.stores.sqlite_fts`,
SQLite FTS5 with its postings in memory; :mod:`~cogito_lc.stores.postgres_lexical`,
BM25 in Postgres; :mod:`~cogito_lc.stores.bm25s_index`, bm25s in memory), behind
the :class:`StoreAdapter` and :class:`LexicalIndex` protocols the retrievers use.
:class:`LexicalSync` keeps a lexical index in step with its vector store.

May import :mod:`cogito_lc.prompts` and :mod:`cogito_lc._core`; knows nothing of
retrieval, extraction, memory, the service or the CLI.
"""

from __future__ import annotations

from cogito_lc.stores.adapters import adapter_for
from cogito_lc.stores.base import (
    SUPPORTED_FILTER_STORES,
    BatchedSearchAdapter,
    Run,
    ScoredDocument,
    StoreAdapter,
    StoredVectors,
    Vector,
    check_filterable,
    cosine_scores,
    filters_by_metadata,
    is_chroma,
    register_adapter,
)
from cogito_lc.stores.bm25s_index import Bm25Index, Bm25LexicalIndex
from cogito_lc.stores.chroma import ChromaAdapter
from cogito_lc.stores.in_memory import InMemoryAdapter
from cogito_lc.stores.lexical_index import (
    LEXICAL_STOP_WORDS,
    LexicalHit,
    LexicalIndex,
    lexical_terms,
)
from cogito_lc.stores.lexical_sync import LexicalSync, lexical_sync_for
from cogito_lc.stores.postgres import (
    DatabaseUnavailableError,
    StatementTimeoutError,
    WriteLockTimeoutError,
)
from cogito_lc.stores.postgres_lexical import PostgresLexicalIndex
from cogito_lc.stores.qdrant import QdrantAdapter, open_qdrant_store
from cogito_lc.stores.sqlite_fts import SqliteLexicalIndex

__all__ = [
    "LEXICAL_STOP_WORDS",
    "SUPPORTED_FILTER_STORES",
    "BatchedSearchAdapter",
    "Bm25Index",
    "Bm25LexicalIndex",
    "ChromaAdapter",
    "DatabaseUnavailableError",
    "InMemoryAdapter",
    "LexicalHit",
    "LexicalIndex",
    "LexicalSync",
    "PostgresLexicalIndex",
    "QdrantAdapter",
    "Run",
    "ScoredDocument",
    "SqliteLexicalIndex",
    "StatementTimeoutError",
    "StoreAdapter",
    "StoredVectors",
    "Vector",
    "WriteLockTimeoutError",
    "adapter_for",
    "check_filterable",
    "cosine_scores",
    "filters_by_metadata",
    "is_chroma",
    "lexical_sync_for",
    "lexical_terms",
    "open_qdrant_store",
    "register_adapter",
]
