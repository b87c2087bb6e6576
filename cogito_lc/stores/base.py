"""The store adapter: the one place that reaches beneath LangChain's vector-store API.

:class:`StoreAdapter` works with any LangChain vector store (id-based reads and
deletes, one search per query vector, relevance-scored search);
:class:`BatchedSearchAdapter` is the base of the adapters that search many query
vectors in one call. Each backend has its module beside this one
(:mod:`~cogito_lc.stores.chroma`, :mod:`~cogito_lc.stores.in_memory`,
:mod:`~cogito_lc.stores.postgres`); :func:`~cogito_lc.stores.adapters.adapter_for`
gives the richest adapter a store supports.

Methods take a Chroma-style ``where`` dict (see :mod:`cogito_lc._core.filters`);
adapters that cannot push it down apply it in code.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import numpy.typing as npt
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from cogito_lc._core.blas import one_blas_thread
from cogito_lc._core.filters import store_filter, where_predicate
from cogito_lc._core.metadata import SCOPE_KEYS
from cogito_lc._core.timestamps import parse_timestamp

__all__ = [
    "SUPPORTED_FILTER_STORES",
    "AdapterFactory",
    "BatchedSearchAdapter",
    "Run",
    "ScopeCounts",
    "ScoredDocument",
    "StoreAdapter",
    "StoredVectors",
    "Vector",
    "check_filterable",
    "cosine_scores",
    "filters_by_metadata",
    "finite_score",
    "is_chroma",
    "matches_where",
    "register_adapter",
    "registered_adapter",
    "scope_counts_of",
    "scope_keys",
    "unit_rows",
]

SUPPORTED_FILTER_STORES = (
    "langchain_chroma.Chroma (a where dict), "
    "langchain_core.vectorstores.InMemoryVectorStore (a function of the Document), "
    "a PGVectorStore made by MemoryStore.from_database_url (SQL) and "
    "a Qdrant store made by MemoryStore.from_qdrant (payload filters)"
)
"""The stores a scope or a ``where`` filter can be translated for, as named in errors."""

Vector = npt.NDArray[np.float32]

Run = tuple[list[Document], bool]
"""One ranked search run and whether it was searched by text (the store has no vector search)."""

ScoredDocument = tuple[Document, float | None]


@dataclass
class StoredVectors:
    """A search's request for the stored vectors of the documents it finds.

    Documents ``known`` (by id) are read without their vector; the vectors read
    land in :attr:`found`, by id.
    """

    known: Callable[[str], bool] = field(default=lambda _doc_id: False)
    """Whether the caller already holds this document's vector."""
    found: dict[str, Vector] = field(default_factory=dict)
    """The vectors read, by document id."""
    copy: Callable[[str], Document | None] = field(default=lambda _doc_id: None)
    """The caller's copy of this document (with its vector), or None: an adapter that
    reads documents after an ids-only search takes the copy instead of reading it."""
    copied: set[str] = field(default_factory=set)
    """The ids of the documents given as the caller's copies, not read: the caller
    checks those it returns (:meth:`StoreAdapter.read_documents`)."""
    also: Sequence[str] = ()
    """Ids of documents found elsewhere (a lexical run): an adapter that reads documents
    after an ids-only search reads these in the same call and puts them in :attr:`also_found`."""
    also_found: dict[str, Document] | None = None
    """The documents of :attr:`also` the store holds and the filter keeps, by id; None when
    the adapter did not read them (the caller keeps its own)."""


"""A document found by a search and its score (None when the store gives no finite score)."""


def is_chroma(store: VectorStore) -> bool:
    """Whether ``store`` is a ``langchain_chroma.Chroma`` (searched in one batched call)."""
    try:
        from langchain_chroma import Chroma
    except ImportError:  # pragma: no cover - langchain-chroma is a dependency
        return False
    return isinstance(store, Chroma)


def filters_by_metadata(store: VectorStore) -> bool:
    """Whether a ``where`` filter can be translated for ``store``'s search."""
    return (
        is_chroma(store)
        or isinstance(store, InMemoryVectorStore)
        or registered_adapter(store) is not None
    )


AdapterFactory = Callable[[VectorStore], "StoreAdapter | None"]
"""Gives the adapter of a store it knows (one that filters by metadata), else None."""

_FACTORIES: list[AdapterFactory] = []


def register_adapter(factory: AdapterFactory) -> None:
    """Make :func:`adapter_for` ask ``factory`` (a database backend's module registers one)."""
    if factory not in _FACTORIES:
        _FACTORIES.append(factory)


def registered_adapter(store: VectorStore) -> StoreAdapter | None:
    """The adapter a registered factory gives ``store``, or None."""
    for factory in _FACTORIES:
        adapter = factory(store)
        if adapter is not None:
            return adapter
    return None


def check_filterable(store: VectorStore, purpose: str) -> None:
    """Raise a clear error unless ``store``'s search can be filtered by metadata.

    Args:
        store: The vector store.
        purpose: What needs the filter, for the message (e.g. ``"a scope"``).

    Raises:
        ValueError: If no translation of a ``where`` filter is known for the store.
    """
    if filters_by_metadata(store):
        return
    msg = (
        f"{purpose} needs a vector store whose search can be filtered by metadata; "
        f"{type(store).__name__} is not one cogito-lc can translate a filter for. "
        f"Supported: {SUPPORTED_FILTER_STORES}."
    )
    raise ValueError(msg)


def cosine_scores(query_vector: Vector, matrix: Vector) -> Vector:
    """Cosine similarity of ``query_vector`` to each row of ``matrix`` (0 for a zero vector)."""
    norms = np.linalg.norm(matrix, axis=1) * float(np.linalg.norm(query_vector))
    norms[norms == 0] = 1.0
    with one_blas_thread():
        similarities: Vector = (matrix @ query_vector / norms).astype(np.float32)
    return similarities


def unit_rows(matrix: Vector) -> Vector:
    """``matrix`` with each row scaled to unit length (a zero row stays zero), as float32."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)


def matches_where(where: Mapping[str, Any] | None, metadata: Mapping[str, Any]) -> bool:
    """Whether ``metadata`` matches the ``where`` filter (no filter: always)."""
    return where is None or where_predicate(where)(metadata)


_PAGE = 1_000


def detached(documents: Iterable[Document]) -> list[Document]:
    """Copies of ``documents`` to hand a store, so the ones a caller gets back are never held.

    A store such as ``InMemoryVectorStore`` keeps a written document's metadata
    dict itself: a caller editing the document returned by a write would
    otherwise change the stored memory (its scope, its versions). Metadata
    values are scalars, so a copy of the dict is a copy of the record.
    """
    return [
        Document(page_content=doc.page_content, metadata=dict(doc.metadata), id=doc.id)
        for doc in documents
    ]


def _created_by(metadata: Mapping[str, Any], when: datetime) -> bool:
    created = parse_timestamp(metadata.get("created_at"))
    return created is None or created <= when


def finite_score(score: Any) -> float | None:
    """``score`` as a float, or None when the store gave no finite number."""
    number = float(score)
    return number if math.isfinite(number) else None


ScopeValues = tuple[str, ...]
"""The values of the scope keys asked for, in their order: one scope."""


@dataclass(frozen=True)
class ScopeCounts:
    """How many documents each scope holds (:meth:`StoreAdapter.scope_counts`)."""

    counts: dict[ScopeValues, int]
    """Documents by scope, the first ``limit`` scopes in the order of their values
    (compared as Unicode code points, key by key)."""
    scopes: int
    """Distinct scopes in all; ``counts`` holds at most ``limit`` of them."""
    documents: int
    """Documents counted in all, in every scope (also those past ``limit``)."""


def scope_keys(keys: Sequence[str], limit: int | None = None) -> tuple[str, ...]:
    """The scope keys of a :meth:`~StoreAdapter.scope_counts`, checked with its ``limit``.

    Raises:
        ValueError: If ``keys`` is not one or more of ``SCOPE_KEYS``, none twice, or
            ``limit`` is negative.
    """
    names = tuple(keys)
    if not names or len(set(names)) != len(names) or not set(names) <= set(SCOPE_KEYS):
        msg = f"scope counts group by one or more distinct keys of {list(SCOPE_KEYS)}, got {names}."
        raise ValueError(msg)
    if limit is not None and limit < 0:
        msg = f"limit must be None or at least 0, got {limit}."
        raise ValueError(msg)
    return names


def _scope_values(metadata: Mapping[str, Any], keys: Sequence[str]) -> ScopeValues | None:
    """The scope of a document's metadata (as text), or None when it lacks one of the keys."""
    values = [metadata.get(key) for key in keys]
    if any(value is None for value in values):
        return None
    return tuple(str(value) for value in values)


def scope_counts_of(
    metadatas: Iterable[Mapping[str, Any]], keys: Sequence[str], limit: int | None = None
) -> ScopeCounts:
    """The documents of each scope among these metadata dicts (:meth:`StoreAdapter.scope_counts`).

    Example:
        ```python
        from cogito_lc.stores.base import scope_counts_of

        rows = [{"user_id": "b"}, {"user_id": "a"}, {"user_id": "b"}, {"kind": "fact"}]
        found = scope_counts_of(rows, ["user_id"], limit=1)
        assert found.counts == {("a",): 1} and found.scopes == 2 and found.documents == 3
        ```
    """
    counted: Counter[ScopeValues] = Counter()
    for metadata in metadatas:
        values = _scope_values(metadata, keys)
        if values is not None:
            counted[values] += 1
    first = sorted(counted) if limit is None else sorted(counted)[:limit]
    return ScopeCounts(
        counts={values: counted[values] for values in first},
        scopes=len(counted),
        documents=sum(counted.values()),
    )


class StoreAdapter:
    """Any LangChain vector store: id-based reads and deletes, searches through its API.

    Listing, counting and deleting by ``where`` filter need an adapter that
    filters by metadata (:class:`ChromaAdapter`, :class:`InMemoryAdapter`); here
    they raise ``NotImplementedError``.
    """

    def __init__(self, store: VectorStore) -> None:
        self.store = store

    # -- reads and deletes ------------------------------------------------------

    def check_filters_by_metadata(self, purpose: str) -> None:
        """Raise ``NotImplementedError`` unless the adapter lists, counts and pages by filter.

        Args:
            purpose: What needs it, for the message (e.g. ``"MemoryStore.count"``).
        """
        if not filters_by_metadata(self.store):
            self._unsupported(purpose)

    def get(self, ids: list[str], where: Mapping[str, Any] | None = None) -> list[Document]:
        """The documents with these ids that match ``where``."""
        return [doc for doc in self.store.get_by_ids(ids) if matches_where(where, doc.metadata)]

    def page(self, where: Mapping[str, Any] | None, limit: int, offset: int) -> list[Document]:
        """A page of the documents that match ``where``, in insertion order."""
        self._unsupported(f"{type(self).__name__}.page")

    def count(self, where: Mapping[str, Any] | None = None) -> int:
        """How many documents match ``where``."""
        self._unsupported(f"{type(self).__name__}.count")

    def scope_counts(
        self,
        keys: Sequence[str],
        where: Mapping[str, Any] | None = None,
        *,
        limit: int | None = None,
    ) -> ScopeCounts:
        """How many documents matching ``where`` each scope holds, a scope being values of ``keys``.

        A document lacking one of ``keys`` is in no scope and is not counted.
        Values are compared as text. Here the documents are read page by page
        (:meth:`page`); adapters that can count in the store do so.

        Args:
            keys: The scope keys to group by (of ``user_id``, ``agent_id``, ``run_id``).
            where: Only documents matching it are counted.
            limit: At most this many scopes in :attr:`ScopeCounts.counts` (the first in
                the order of their values); None: every scope.

        Raises:
            ValueError: If ``keys`` is not one or more distinct scope keys, or ``limit``
                is negative.
        """
        names = scope_keys(keys, limit)
        return scope_counts_of(self._metadatas(where), names, limit)

    def _metadatas(self, where: Mapping[str, Any] | None) -> Iterable[Mapping[str, Any]]:
        """The metadata of every document matching ``where``, read page by page."""
        offset = 0
        while True:
            page = self.page(where, _PAGE, offset)
            yield from (doc.metadata for doc in page)
            if len(page) < _PAGE:
                return
            offset += _PAGE

    def ids_in(self, where: Mapping[str, Any] | None) -> list[str]:
        """Every id of a document that matches ``where``."""
        self._unsupported(f"{type(self).__name__}.ids_in")

    def delete(self, ids: list[str], where: Mapping[str, Any] | None = None) -> None:
        """Delete the documents with these ids that match ``where`` (all of them without)."""
        if ids and where is not None:
            ids = [doc.id for doc in self.get(ids, where) if doc.id]
        if ids:
            self.store.delete(ids=ids)

    def vectors_for(self, documents: Sequence[Document]) -> list[list[float]] | None:
        """The vectors :meth:`add_new` would embed for ``documents``, embedded now.

        For a write under :meth:`exclusive`: embedded before it, so no other
        process waits on the model. None here: this store embeds in :meth:`add_new`.
        """
        del documents
        return None

    def replace(self, document: Document, vector: Sequence[float] | None = None) -> None:
        """Write ``document`` over the one holding its id, embedded again unless ``vector``.

        ``vector`` comes from :meth:`vectors_for`; None here, where the store embeds.
        """
        del vector  # vectors_for gives none here
        self.store.add_documents(detached([document]), ids=[document.id or ""])

    def add_new(
        self, documents: Sequence[Document], vectors: Sequence[Sequence[float]] | None = None
    ) -> set[str]:
        """Write documents whose ids are new; returns the ids written.

        Here every document is written (the caller checked the ids are new); a
        database adapter inserts only ids not held, so concurrent writers of
        the same id make one row, and returns the ids it inserted. ``vectors``
        (from :meth:`vectors_for`, in order) spare embedding them again.
        """
        del vectors  # vectors_for gives none here
        ids = [doc.id or "" for doc in documents]
        if documents:
            self.store.add_documents(detached(documents), ids=ids)
        return set(ids)

    def refused_input(self, error: Exception) -> bool:
        """Whether :meth:`add_new` raised ``error`` to refuse its input, writing nothing."""
        return isinstance(error, (ValueError, TypeError))

    def persist_directory(self) -> Path | None:
        """The directory the store writes to, or None (not persistent, or not known)."""
        return None

    def exclusive(self) -> contextlib.AbstractContextManager[object]:
        """A lock every process over this store takes for a check and the write it allows.

        Nothing here: a store only one process writes needs none, and threads
        share a lock of their own. A database several replicas write takes a
        lock there (:class:`~cogito_lc.stores.postgres.PostgresAdapter`).
        """
        return contextlib.nullcontext()

    def atomic(self) -> contextlib.AbstractContextManager[object]:
        """One transaction for this thread's writes inside the block, where the store has them.

        Nothing here: a store one process writes completes a step cut short at
        its next start, before it serves anyone. A database several replicas
        write commits the steps together or not at all
        (:class:`~cogito_lc.stores.postgres.PostgresAdapter`), so no replica ever
        sees half of them.
        """
        return contextlib.nullcontext()

    def set_metadata(
        self, updates: Mapping[str, Mapping[str, Any]], where: Mapping[str, Any] | None = None
    ) -> list[Document]:
        """Set metadata keys on stored documents, leaving their text and other keys as stored.

        Args:
            updates: The keys to set, by document id; ids the store does not hold are skipped.
            where: Only documents matching it are changed (a database routes the
                statement by it).

        Returns:
            The documents as they are now stored.

        Here each document is written again under its id (re-embedded, with the
        same text); adapters that can change metadata in place do so.
        """
        documents = self._merged(updates, where)
        if documents:
            self.store.add_documents(detached(documents), ids=[doc.id or "" for doc in documents])
        return documents

    def recent(self, limit: int) -> list[Document]:
        """The latest ``limit`` documents written, oldest first (none where unknown)."""
        return []

    def created_by(self, where: Mapping[str, Any] | None, when: datetime) -> bool:
        """Whether a document matching ``where`` was created at or before ``when``.

        True where the store cannot tell (it cannot list by filter).
        """
        if not filters_by_metadata(self.store):
            return True
        offset = 0
        while True:
            page = self.page(where, _PAGE, offset)
            if any(_created_by(doc.metadata, when) for doc in page):
                return True
            if len(page) < _PAGE:
                return False
            offset += _PAGE

    def _merged(
        self, updates: Mapping[str, Mapping[str, Any]], where: Mapping[str, Any] | None = None
    ) -> list[Document]:
        held = self.get(list(updates), where)
        return [
            Document(
                page_content=doc.page_content,
                metadata={**doc.metadata, **updates[doc.id or ""]},
                id=doc.id,
            )
            for doc in held
        ]

    # -- searches -----------------------------------------------------------------

    def search_by_vectors(
        self,
        queries: Sequence[str],
        vectors: Vector,
        fetch_ks: Sequence[int],
        search_kwargs: Mapping[str, Any],
        stored: StoredVectors | None = None,
    ) -> list[Run]:
        """One ranked run per query vector (a row of ``vectors``), ``fetch_ks[i]`` for query ``i``.

        A store without vector search is searched with the query text instead.
        ``search_kwargs`` go to every search as they are. When ``stored`` is given,
        an adapter that can read the found documents' vectors with them puts
        those it was not told are known in ``stored.found`` (here: none).
        """
        return [
            self._run(text, vector, fetch_k, search_kwargs)
            for text, vector, fetch_k in zip(queries, vectors, fetch_ks, strict=True)
        ]

    reads_by_id: bool = False
    """Whether a search reads the lexical run's documents by id itself (and may give the
    caller's copies, :attr:`StoredVectors.copy`)."""
    checks_by_id: bool = False
    """Whether :meth:`read_documents` reads documents by id: a recall then confirms the
    documents it did not read from the store (a lexical run's) before returning them."""
    searches_within: bool = False
    """Whether :meth:`search_within` ranks a given set of ids exactly."""
    filtered_search_scans: bool = False
    """Whether a filtered search scans every matching row (so an unfiltered search with
    the filter checked on its results is cheaper when the filter keeps every row)."""

    def search_within(
        self,
        ids: Sequence[str],
        vectors: Vector,
        fetch_ks: Sequence[int],
        search_kwargs: Mapping[str, Any],
        stored: StoredVectors | None = None,
    ) -> list[Run]:
        """Like :meth:`search_by_vectors`, ranking exactly the documents with these ids."""
        msg = f"{type(self).__name__} cannot rank a set of ids; use search_by_vectors."
        raise NotImplementedError(msg)

    def read_documents(
        self, ids: Sequence[str], search_kwargs: Mapping[str, Any]
    ) -> dict[str, Document]:
        """The stored documents with these ids still matching ``search_kwargs``' filter, by id.

        Only adapters that set :attr:`checks_by_id` are asked.
        """
        msg = f"{type(self).__name__} gives no document copies to check; nothing calls this."
        raise NotImplementedError(msg)

    async def asearch_by_vectors(
        self,
        queries: Sequence[str],
        vectors: Vector,
        fetch_ks: Sequence[int],
        search_kwargs: Mapping[str, Any],
        stored: StoredVectors | None = None,
    ) -> list[Run]:
        """Async :meth:`search_by_vectors`: the searches run concurrently."""
        runs = await asyncio.gather(
            *(
                self._arun(text, vector, fetch_k, search_kwargs)
                for text, vector, fetch_k in zip(queries, vectors, fetch_ks, strict=True)
            )
        )
        return list(runs)

    def _run(self, text: str, vector: Vector, fetch_k: int, kwargs: Mapping[str, Any]) -> Run:
        try:
            docs = self.store.similarity_search_by_vector(vector.tolist(), k=fetch_k, **kwargs)
        except NotImplementedError:
            return self.store.similarity_search(text, k=fetch_k, **kwargs), True
        return docs, False

    async def _arun(
        self, text: str, vector: Vector, fetch_k: int, kwargs: Mapping[str, Any]
    ) -> Run:
        try:
            docs = await self.store.asimilarity_search_by_vector(
                vector.tolist(), k=fetch_k, **kwargs
            )
        except NotImplementedError:
            return await self.store.asimilarity_search(text, k=fetch_k, **kwargs), True
        return docs, False

    def stored_vectors(
        self, texts: Mapping[str, str], where: Mapping[str, Any] | None = None
    ) -> list[Any] | None:
        """The stored vectors of these documents (text by id), in order, or None.

        None when the store does not give its vectors, or one of the documents
        is missing or holds other text (it changed since it was found).
        ``where`` is the filter the documents were found with: a database
        adapter puts it in its statement (a sharded database routes by it).
        """
        return None

    async def astored_vectors(
        self, texts: Mapping[str, str], where: Mapping[str, Any] | None = None
    ) -> list[Any] | None:
        """Async :meth:`stored_vectors`."""
        return self.stored_vectors(texts, where)

    def query_vector(self, text: str) -> list[float] | None:
        """The vector :meth:`scored_search` would embed ``text`` to, embedded now.

        For a search under :meth:`exclusive`: embedded before it, so no other
        process waits on the model. None here: this store embeds in the search.
        """
        del text
        return None

    def scored_search(
        self,
        text: str,
        k: int,
        where: Mapping[str, Any] | None = None,
        vector: Sequence[float] | None = None,
    ) -> list[ScoredDocument]:
        """The ``k`` documents matching ``where`` nearest to ``text``, with the store's score.

        The score is the store's relevance score (``similarity_search_with_relevance_scores``).
        ``vector`` is ``text``'s from :meth:`query_vector` (None here, where the store embeds).
        """
        del vector  # query_vector gives none here
        pairs = self.store.similarity_search_with_relevance_scores(
            text, k=k, filter=store_filter(self.store, where)
        )
        return [(doc, finite_score(score)) for doc, score in pairs]

    def warm_up(self, where: Mapping[str, Any] | None = None) -> None:
        """Load now what the first search in ``where`` would load (nothing for this store)."""

    # -- the search-index repair ------------------------------------------------

    def unsearchable(
        self, *, recent: int | None = None, k: int = 3, page_size: int = 1000
    ) -> dict[str, Any]:
        """Stored vectors a search for themselves does not find (none for this store)."""
        return {}

    def reindex(self, vectors: Mapping[str, Any], *, k: int = 3) -> list[str]:
        """Index these vectors again; returns the ids still not found (none for this store)."""
        return []

    def _unsupported(self, purpose: str) -> NoReturn:
        msg = (
            f"{purpose} needs a vector store that filters by metadata; "
            f"{type(self.store).__name__} does not. Supported: {SUPPORTED_FILTER_STORES}."
        )
        raise NotImplementedError(msg)


class BatchedSearchAdapter(StoreAdapter):
    """A store that searches every query vector in one call: async runs it in a thread."""

    async def asearch_by_vectors(
        self,
        queries: Sequence[str],
        vectors: Vector,
        fetch_ks: Sequence[int],
        search_kwargs: Mapping[str, Any],
        stored: StoredVectors | None = None,
    ) -> list[Run]:
        """Async :meth:`search_by_vectors` (the one query runs in a worker thread)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            None, self.search_by_vectors, queries, vectors, fetch_ks, search_kwargs, stored
        )

    async def astored_vectors(
        self, texts: Mapping[str, str], where: Mapping[str, Any] | None = None
    ) -> list[Any] | None:
        """Async :meth:`stored_vectors` (the read runs in a worker thread)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self.stored_vectors, texts, where)
