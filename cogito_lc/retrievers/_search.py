"""RecallB's searches and candidate vectors, over a store adapter.

:func:`search` runs one search per query vector (Chroma: one batched query;
see :mod:`cogito_lc.stores`) and returns the ranked runs and the
candidate pool (the stored documents). :func:`fill_vectors` then finds a
vector for every candidate in a bounded cache; misses are read from the store
where it keeps vectors (Chroma), else embedded once, in one batched call.
Cache entries are keyed by document id and a hash of the text, so an updated
memory is never scored with its old vector.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from cogito_lc.retrievers._fusion import document_key
from cogito_lc.retrievers._vector_cache import VectorCache
from cogito_lc.stores import Run, StoreAdapter, StoredVectors

__all__ = [
    "SearchResult",
    "add_vectors",
    "afill_vectors",
    "asearch",
    "confirm",
    "fill_vectors",
    "search",
    "settle",
]

logger = logging.getLogger(__name__)

Matrix = npt.NDArray[np.float32]


@dataclass
class SearchResult:
    """Ranked runs of document keys, the candidate pool and candidate vectors."""

    vector_runs: list[list[str]] = field(default_factory=list)
    pool: dict[str, Document] = field(default_factory=dict)
    vectors: dict[str, Matrix] = field(default_factory=dict)
    text_search: bool = False
    copied: set[str] = field(default_factory=set)
    """Keys of pool documents given from the cache's copies, not read from the store."""
    read: set[str] = field(default_factory=set)
    """Keys of pool documents the search read from the store now."""
    search_kwargs: dict[str, Any] = field(default_factory=dict)
    """The search's arguments (its filter), for checking the copies."""
    lexical_run: list[str] = field(default_factory=list)
    """Keys of the lexical run's documents, best first (see :func:`search`'s ``lexical``)."""
    lexical_stale: bool = False
    """Whether a lexical document was gone from the store or read there with other text."""

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
        self.read -= dropped
        self.copied -= dropped
        self.vector_runs = [[key for key in run if key not in dropped] for run in self.vector_runs]
        self.lexical_run = [key for key in self.lexical_run if key not in dropped]


def _cache_key(key: str, text: str) -> str:
    return key + ":" + hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def _stored_vectors(
    cache: VectorCache, lexical: Sequence[Document], *, copies: bool
) -> StoredVectors:
    """Ask the search for the vectors of candidates the cache holds none for.

    With ``copies``, candidates the cache keeps a copy of (with its vector) are
    not read: :func:`confirm` checks those a recall returns. The ``lexical``
    documents are read in the search's own read where the store can.
    """
    also = [doc.id for doc in lexical if doc.id]
    if not copies:
        return StoredVectors(known=cache.holds, also=also)
    return StoredVectors(known=cache.holds, copy=partial(_copy, cache), also=also)


def _copy(cache: VectorCache, doc_id: str) -> Document | None:
    document = cache.document(doc_id)
    if document is None or cache.get(_cache_key(doc_id, document.page_content)) is None:
        return None
    return cast("Document", document)


def _collect(
    runs: Sequence[Run],
    stored: StoredVectors,
    search_kwargs: dict[str, Any],
    lexical: Sequence[Document],
) -> SearchResult:
    result = SearchResult(search_kwargs=search_kwargs)
    for docs, by_text in runs:
        result.text_search = result.text_search or by_text
        result.read.update(result.add_run(docs))
    _add_lexical(result, stored, lexical)
    result.copied = {key for key in result.read if key in stored.copied}
    result.read -= result.copied
    if stored.found:
        result.vectors.update(
            (key, stored.found[doc.id])
            for key, doc in result.pool.items()
            if doc.id in stored.found
        )
    return result


def _add_lexical(result: SearchResult, stored: StoredVectors, lexical: Sequence[Document]) -> None:
    """Add the lexical run: the store's documents where the search read them, else the index's.

    A document the store no longer holds (or that left the filter) is dropped,
    and one read there with other text is given as read; either marks the index stale.
    """
    read = stored.also_found
    if read is None:
        result.lexical_run = result.add_run(lexical, vector_run=False)
        return
    kept = [read[doc.id] if doc.id else doc for doc in lexical if not doc.id or doc.id in read]
    result.lexical_stale = any(
        doc.id not in read or read[doc.id].page_content != doc.page_content
        for doc in lexical
        if doc.id
    )
    result.lexical_run = result.add_run(kept, vector_run=False)
    result.read.update(document_key(doc) for doc in kept if doc.id in read)


def search(
    store: StoreAdapter,
    queries: Sequence[str],
    vectors: Matrix,
    *,
    fetch_ks: Sequence[int],
    search_kwargs: dict[str, Any],
    cache: VectorCache,
    copies: bool = False,
    within: Sequence[str] | None = None,
    lexical: Sequence[Document] | Callable[[], Sequence[Document]] = (),
) -> SearchResult:
    """Run one search per query vector, fetching ``fetch_ks[i]`` documents for query ``i``.

    Where the store reads vectors with the documents, those of candidates the
    cache holds none for are kept in the result (and given to the cache by
    :func:`fill_vectors`). With ``copies``, a store that searches ids first
    takes the cache's copies of the documents found instead of reading them
    (see :func:`confirm`). With ``within`` (the ids of a small scope), a store
    that can ranks exactly those documents instead of searching its index.
    The ``lexical`` run's documents (from a lexical index) join the pool as
    :attr:`SearchResult.lexical_run`, read with the searched ones where the store
    reads documents after an ids-only search. Given as a function, the lexical run
    is asked for after the vector searches (it runs beside them meanwhile); only
    for a store that does not read documents by id.
    """
    _check_deferred(store, lexical)
    stored = _stored_vectors(cache, () if callable(lexical) else lexical, copies=copies)
    if within is not None and store.searches_within:
        runs = store.search_within(within, vectors, fetch_ks, search_kwargs, stored)
    else:
        runs = store.search_by_vectors(queries, vectors, fetch_ks, search_kwargs, stored)
    return _collect(runs, stored, search_kwargs, lexical() if callable(lexical) else lexical)


async def asearch(
    store: StoreAdapter,
    queries: Sequence[str],
    vectors: Matrix,
    *,
    fetch_ks: Sequence[int],
    search_kwargs: dict[str, Any],
    cache: VectorCache,
    copies: bool = False,
    within: Sequence[str] | None = None,
    lexical: Sequence[Document] | Callable[[], Awaitable[Sequence[Document]]] = (),
) -> SearchResult:
    """Async :func:`search`: sub-searches run concurrently."""
    _check_deferred(store, lexical)
    stored = _stored_vectors(cache, () if callable(lexical) else lexical, copies=copies)
    if within is not None and store.searches_within:
        loop = asyncio.get_running_loop()
        runs = await loop.run_in_executor(
            None, store.search_within, within, vectors, fetch_ks, search_kwargs, stored
        )
    else:
        runs = await store.asearch_by_vectors(queries, vectors, fetch_ks, search_kwargs, stored)
    corpus_top = await lexical() if callable(lexical) else lexical
    return _collect(runs, stored, search_kwargs, corpus_top)


def _check_deferred(store: StoreAdapter, lexical: object) -> None:
    """Refuse a lexical run given as a function to a store that reads documents by id.

    Such a store reads the lexical run's documents in its own search call, so it
    needs them before the search starts.
    """
    if callable(lexical) and store.reads_by_id:
        msg = (
            f"{type(store).__name__} reads the lexical run's documents with its search: "
            "pass them as a list (run the lexical search first), not as a function."
        )
        raise ValueError(msg)


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


def _remember_read(result: SearchResult, cache: VectorCache) -> None:
    for key in result.read:
        cache.remember(key, result.pool[key])


def _store_vectors(
    result: SearchResult, cache: VectorCache, missing: dict[str, str], embedded: Sequence[Any]
) -> None:
    for (key, text), vector in zip(missing.items(), embedded, strict=True):
        array = np.asarray(vector, dtype=np.float32)
        result.vectors[key] = array
        cache.put(_cache_key(key, text), array, group=key)


def add_vectors(result: SearchResult, read: Mapping[str, tuple[str, Matrix]]) -> None:
    """Give pool documents the vectors read elsewhere (by id, with the text they were read with).

    A vector read with other text than the pool's document (written in between) is not taken.
    """
    for key, doc in result.pool.items():
        entry = read.get(doc.id or "")
        if entry is not None and entry[0] == doc.page_content:
            result.vectors.setdefault(key, entry[1])


def fill_vectors(
    store: StoreAdapter,
    embeddings: Embeddings,
    result: SearchResult,
    cache: VectorCache,
    where: Mapping[str, Any] | None = None,
) -> None:
    """Give every pool document a vector: stored, cached, or embedded once in a batch.

    ``where`` is the filter the pool was found with (the store's read names it).
    """
    missing = _from_cache(result, cache)
    if missing:
        vectors = store.stored_vectors(missing, where)
        if vectors is None:
            vectors = embeddings.embed_documents(list(missing.values()))
        _store_vectors(result, cache, missing, vectors)
    _remember_read(result, cache)


async def afill_vectors(
    store: StoreAdapter,
    embeddings: Embeddings,
    result: SearchResult,
    cache: VectorCache,
    where: Mapping[str, Any] | None = None,
) -> None:
    """Async :func:`fill_vectors`."""
    missing = _from_cache(result, cache)
    if missing:
        vectors = await store.astored_vectors(missing, where)
        if vectors is None:
            vectors = await embeddings.aembed_documents(list(missing.values()))
        _store_vectors(result, cache, missing, vectors)
    _remember_read(result, cache)


def confirm(
    store: StoreAdapter, documents: Sequence[Document], result: SearchResult, cache: VectorCache
) -> bool:
    """Whether the ranked ``documents`` not read from the store now still read the same there.

    Those are the cache's copies and the lexical index's documents. A copy that
    changed or left the filter since it was kept is dropped from the cache.
    Stores that cannot read documents by id are not asked (they give no copies).
    """
    stale = _stale(store, documents, result)
    for doc_id in stale:
        cache.forget_document(doc_id)
    if stale:
        logger.debug("%d recalled documents changed in the store: recalling again", len(stale))
    return not stale


def settle(
    store: StoreAdapter,
    documents: Sequence[Document],
    result: SearchResult,
    written_meanwhile: Callable[[Sequence[str]], bool] | None = None,
) -> list[Document]:
    """``documents`` without those the store no longer holds as they are (see :func:`confirm`).

    ``written_meanwhile`` tells, once they are known, whether such documents were
    written or forgotten through the lexical index's owner while the recall ran
    (logged as such); otherwise they were changed outside it, and a warning says
    how to index them again.
    """
    stale = _stale(store, documents, result)
    if stale and written_meanwhile is not None and written_meanwhile(sorted(stale)):
        logger.info("%d memories changed or forgotten during this recall are left out", len(stale))
    elif stale:
        logger.warning(
            "%d memories changed in the vector store outside MemoryStore are left out of this "
            "recall; call RecallB.lexical_sync.reindex() to index them again",
            len(stale),
        )
    return [doc for doc in documents if doc.id not in stale]


def _stale(store: StoreAdapter, documents: Sequence[Document], result: SearchResult) -> set[str]:
    if not store.checks_by_id:
        return set()
    ids = [doc.id for doc in documents if doc.id is not None and doc.id not in result.read]
    if not ids:
        return set()
    fresh = store.read_documents(ids, result.search_kwargs)
    return {doc_id for doc_id in ids if not _same(fresh.get(doc_id), result.pool[doc_id])}


def _same(fresh: Document | None, copy: Document) -> bool:
    return (
        fresh is not None
        and fresh.page_content == copy.page_content
        and fresh.metadata == copy.metadata
    )
