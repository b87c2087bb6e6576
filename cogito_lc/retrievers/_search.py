"""RecallB's searches and candidate vectors, over a store adapter.

:func:`search` runs one search per query vector (Chroma: one batched query;
see :mod:`cogito_lc._core.stores`) and returns the ranked runs and the
candidate pool (the stored documents). :func:`fill_vectors` then finds a
vector for every candidate in a bounded cache; misses are read from the store
where it keeps vectors (Chroma), else embedded once, in one batched call.
Cache entries are keyed by document id and a hash of the text, so an updated
memory is never scored with its old vector.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from cogito_lc._core.stores import Run, StoreAdapter, StoredVectors
from cogito_lc.retrievers._fusion import document_key
from cogito_lc.retrievers._vector_cache import VectorCache

__all__ = ["SearchResult", "afill_vectors", "asearch", "fill_vectors", "search"]

Matrix = npt.NDArray[np.float32]


@dataclass
class SearchResult:
    """Ranked runs of document keys, the candidate pool and candidate vectors."""

    vector_runs: list[list[str]] = field(default_factory=list)
    pool: dict[str, Document] = field(default_factory=dict)
    vectors: dict[str, Matrix] = field(default_factory=dict)
    text_search: bool = False

    def add_run(self, documents: Sequence[Document], *, vector_run: bool = True) -> list[str]:
        """Add a ranked run's documents to the pool; returns the run's keys.

        Vector runs are also kept in :attr:`vector_runs`, in search order.
        """
        run = []
        for doc in documents:
            key = document_key(doc)
            self.pool.setdefault(key, doc)
            run.append(key)
        if vector_run:
            self.vector_runs.append(run)
        return run

    def keep(self, predicate: Callable[[Mapping[str, Any]], bool]) -> None:
        """Drop pool documents whose metadata fail ``predicate``, from the pool and every run."""
        dropped = {key for key, doc in self.pool.items() if not predicate(doc.metadata)}
        if not dropped:
            return
        for key in dropped:
            del self.pool[key]
        self.vector_runs = [[key for key in run if key not in dropped] for run in self.vector_runs]


def _cache_key(key: str, text: str) -> str:
    return key + ":" + hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def _stored_vectors(cache: VectorCache) -> StoredVectors:
    """Ask the search for the vectors of candidates the cache holds none for."""
    return StoredVectors(known=cache.holds)


def _collect(runs: Sequence[Run], stored: StoredVectors) -> SearchResult:
    result = SearchResult()
    for docs, by_text in runs:
        result.text_search = result.text_search or by_text
        result.add_run(docs)
    if stored.found:
        result.vectors.update(
            (key, stored.found[doc.id])
            for key, doc in result.pool.items()
            if doc.id in stored.found
        )
    return result


def search(
    store: StoreAdapter,
    queries: Sequence[str],
    vectors: Matrix,
    *,
    fetch_ks: Sequence[int],
    search_kwargs: dict[str, Any],
    cache: VectorCache,
) -> SearchResult:
    """Run one search per query vector, fetching ``fetch_ks[i]`` documents for query ``i``.

    Where the store reads vectors with the documents, those of candidates the
    cache holds none for are kept in the result (and given to the cache by
    :func:`fill_vectors`).
    """
    stored = _stored_vectors(cache)
    runs = store.search_by_vectors(queries, vectors, fetch_ks, search_kwargs, stored)
    return _collect(runs, stored)


async def asearch(
    store: StoreAdapter,
    queries: Sequence[str],
    vectors: Matrix,
    *,
    fetch_ks: Sequence[int],
    search_kwargs: dict[str, Any],
    cache: VectorCache,
) -> SearchResult:
    """Async :func:`search`: sub-searches run concurrently."""
    stored = _stored_vectors(cache)
    runs = await store.asearch_by_vectors(queries, vectors, fetch_ks, search_kwargs, stored)
    return _collect(runs, stored)


def _from_cache(result: SearchResult, cache: VectorCache) -> dict[str, str]:
    """Fill vectors from the cache; return the texts still missing, by key.

    Vectors the search read from the store go into the cache.
    """
    missing: dict[str, str] = {}
    for key, doc in result.pool.items():
        cache_key = _cache_key(key, doc.page_content)
        cached = cache.get(cache_key)
        if cached is not None:
            result.vectors.setdefault(key, cached)
        elif key in result.vectors:
            cache.put(cache_key, result.vectors[key], group=key)
        else:
            missing[key] = doc.page_content
    return missing


def _store_vectors(
    result: SearchResult, cache: VectorCache, missing: dict[str, str], embedded: Sequence[Any]
) -> None:
    for (key, text), vector in zip(missing.items(), embedded, strict=True):
        array = np.asarray(vector, dtype=np.float32)
        result.vectors[key] = array
        cache.put(_cache_key(key, text), array, group=key)


def fill_vectors(
    store: StoreAdapter, embeddings: Embeddings, result: SearchResult, cache: VectorCache
) -> None:
    """Give every pool document a vector: stored, cached, or embedded once in a batch."""
    missing = _from_cache(result, cache)
    if not missing:
        return
    vectors = store.stored_vectors(missing)
    if vectors is None:
        vectors = embeddings.embed_documents(list(missing.values()))
    _store_vectors(result, cache, missing, vectors)


async def afill_vectors(
    store: StoreAdapter, embeddings: Embeddings, result: SearchResult, cache: VectorCache
) -> None:
    """Async :func:`fill_vectors`."""
    missing = _from_cache(result, cache)
    if not missing:
        return
    vectors = await store.astored_vectors(missing)
    if vectors is None:
        vectors = await embeddings.aembed_documents(list(missing.values()))
    _store_vectors(result, cache, missing, vectors)
