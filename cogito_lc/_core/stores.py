"""The store adapter: the one place that reaches beneath LangChain's vector-store API.

:func:`adapter_for` gives the richest adapter a store supports.
:class:`StoreAdapter` works with any LangChain vector store (id-based reads and
deletes, one search per query vector, relevance-scored search).
:class:`ChromaAdapter` pushes every operation down to the Chroma collection as a
``where`` filter: batched searches, pages, counts, stored vectors, cosine-scored
search and the search-index repair. Every access to ``langchain_chroma.Chroma``
internals (its collection and client) is here. :class:`InMemoryAdapter` lists,
counts and pages an ``InMemoryVectorStore`` by reading its documents in memory
and gives its cosine-scored search.

Methods take a Chroma-style ``where`` dict (see :mod:`cogito_lc._core.filters`);
adapters that cannot push it down apply it in code.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from itertools import chain
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import numpy.typing as npt
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from cogito_lc._core.filters import store_filter, where_predicate
from cogito_lc._core.timestamps import parse_timestamp

__all__ = [
    "SUPPORTED_FILTER_STORES",
    "BatchedSearchAdapter",
    "ChromaAdapter",
    "InMemoryAdapter",
    "Run",
    "ScoredDocument",
    "StoreAdapter",
    "StoredVectors",
    "adapter_for",
    "check_filterable",
    "cosine_scores",
    "filters_by_metadata",
    "is_chroma",
    "register_adapter",
]

SUPPORTED_FILTER_STORES = (
    "langchain_chroma.Chroma (a where dict), "
    "langchain_core.vectorstores.InMemoryVectorStore (a function of the Document) and "
    "a PGVectorStore made by MemoryStore.from_database_url (SQL)"
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

_SAME_VECTOR = 1e-5
_WIDE_CHECK = 100
"""Neighbours a second search asks for before calling a row unreachable."""
"""A search distance this small means an exact duplicate of the query vector."""


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
        or _registered_adapter(store) is not None
    )


AdapterFactory = Callable[[VectorStore], "StoreAdapter | None"]
"""Gives the adapter of a store it knows (one that filters by metadata), else None."""

_FACTORIES: list[AdapterFactory] = []


def register_adapter(factory: AdapterFactory) -> None:
    """Make :func:`adapter_for` ask ``factory`` (a database backend's module registers one)."""
    if factory not in _FACTORIES:
        _FACTORIES.append(factory)


def _registered_adapter(store: VectorStore) -> StoreAdapter | None:
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
    similarities: Vector = (matrix @ query_vector / norms).astype(np.float32)
    return similarities


def _matches(where: Mapping[str, Any] | None, metadata: Mapping[str, Any]) -> bool:
    return where is None or where_predicate(where)(metadata)


_PAGE = 1_000


def _created_by(metadata: Mapping[str, Any], when: datetime) -> bool:
    created = parse_timestamp(metadata.get("created_at"))
    return created is None or created <= when


def _finite(score: Any) -> float | None:
    number = float(score)
    return number if math.isfinite(number) else None


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
        return [doc for doc in self.store.get_by_ids(ids) if _matches(where, doc.metadata)]

    def page(self, where: Mapping[str, Any] | None, limit: int, offset: int) -> list[Document]:
        """A page of the documents that match ``where``, in insertion order."""
        self._unsupported(f"{type(self).__name__}.page")

    def count(self, where: Mapping[str, Any] | None = None) -> int:
        """How many documents match ``where``."""
        self._unsupported(f"{type(self).__name__}.count")

    def ids_in(self, where: Mapping[str, Any] | None) -> list[str]:
        """Every id of a document that matches ``where``."""
        self._unsupported(f"{type(self).__name__}.ids_in")

    def delete(self, ids: list[str]) -> None:
        """Delete documents by id."""
        if ids:
            self.store.delete(ids=ids)

    def add_new(self, documents: Sequence[Document]) -> set[str]:
        """Write documents whose ids are new; returns the ids written.

        Here every document is written (the caller checked the ids are new); a
        database adapter inserts only ids not held, so concurrent writers of
        the same id make one row, and returns the ids it inserted.
        """
        ids = [doc.id or "" for doc in documents]
        if documents:
            self.store.add_documents(list(documents), ids=ids)
        return set(ids)

    def persist_directory(self) -> Path | None:
        """The directory the store writes to, or None (not persistent, or not known)."""
        return None

    def set_metadata(self, updates: Mapping[str, Mapping[str, Any]]) -> list[Document]:
        """Set metadata keys on stored documents, leaving their text and other keys as stored.

        Args:
            updates: The keys to set, by document id; ids the store does not hold are skipped.

        Returns:
            The documents as they are now stored.

        Here each document is written again under its id (re-embedded, with the
        same text); adapters that can change metadata in place do so.
        """
        documents = self._merged(updates)
        if documents:
            self.store.add_documents(documents, ids=[doc.id or "" for doc in documents])
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

    def _merged(self, updates: Mapping[str, Mapping[str, Any]]) -> list[Document]:
        held = self.get(list(updates))
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
    """Whether :meth:`read_documents` reads documents by id (searches may then give copies)."""
    searches_within: bool = False
    """Whether :meth:`search_within` ranks a given set of ids exactly."""

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

        Only adapters that give a search the caller's copies (``StoredVectors.copy``)
        are asked; the others never give copies.
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

    def stored_vectors(self, texts: Mapping[str, str]) -> list[Any] | None:
        """The stored vectors of these documents (text by id), in order, or None.

        None when the store does not give its vectors, or one of the documents
        is missing or holds other text (it changed since it was found).
        """
        return None

    async def astored_vectors(self, texts: Mapping[str, str]) -> list[Any] | None:
        """Async :meth:`stored_vectors`."""
        return self.stored_vectors(texts)

    def scored_search(
        self, text: str, k: int, where: Mapping[str, Any] | None = None
    ) -> list[ScoredDocument]:
        """The ``k`` documents matching ``where`` nearest to ``text``, with the store's score.

        The score is the store's relevance score (``similarity_search_with_relevance_scores``).
        """
        pairs = self.store.similarity_search_with_relevance_scores(
            text, k=k, filter=store_filter(self.store, where)
        )
        return [(doc, _finite(score)) for doc, score in pairs]

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


class InMemoryAdapter(StoreAdapter):
    """An ``InMemoryVectorStore``: listing, counting and paging over its documents in memory."""

    def _matching(self, where: Mapping[str, Any] | None) -> list[Document]:
        held: InMemoryVectorStore = self.store  # type: ignore[assignment]
        return [
            Document(page_content=row["text"], metadata=dict(row["metadata"]), id=row["id"])
            for row in list(held.store.values())
            if _matches(where, row["metadata"])
        ]

    def page(self, where: Mapping[str, Any] | None, limit: int, offset: int) -> list[Document]:
        return self._matching(where)[offset : offset + limit]

    def count(self, where: Mapping[str, Any] | None = None) -> int:
        if where is None:
            held: InMemoryVectorStore = self.store  # type: ignore[assignment]
            return len(held.store)
        return len(self._matching(where))

    def ids_in(self, where: Mapping[str, Any] | None) -> list[str]:
        return [doc.id or "" for doc in self._matching(where)]

    def set_metadata(self, updates: Mapping[str, Mapping[str, Any]]) -> list[Document]:
        held: InMemoryVectorStore = self.store  # type: ignore[assignment]
        documents = self._merged(updates)
        for doc in documents:
            row = held.store[doc.id or ""]
            row["metadata"] = dict(doc.metadata)
        return documents

    def recent(self, limit: int) -> list[Document]:
        return self._matching(None)[-limit:] if limit > 0 else []

    def scored_search(
        self, text: str, k: int, where: Mapping[str, Any] | None = None
    ) -> list[ScoredDocument]:
        """The ``k`` documents matching ``where`` nearest to ``text``, scored by cosine similarity.

        (The store's own similarity; it gives no relevance scores.)
        """
        pairs = self.store.similarity_search_with_score(
            text, k=k, filter=store_filter(self.store, where)
        )
        return [(doc, _finite(score)) for doc, score in pairs]


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


class ChromaAdapter(BatchedSearchAdapter):
    """A ``langchain_chroma.Chroma`` store: every operation pushed down to its collection."""

    reads_by_id = True
    searches_within = True

    @property
    def collection(self) -> Any:
        """The chromadb collection behind the store."""
        return self.store._collection  # type: ignore[attr-defined]

    # -- reads and deletes ------------------------------------------------------

    def get(self, ids: list[str], where: Mapping[str, Any] | None = None) -> list[Document]:
        found = self._get_found(ids, {"where": where}, None)
        return [found[doc_id] for doc_id in dict.fromkeys(ids) if doc_id in found]

    def page(self, where: Mapping[str, Any] | None, limit: int, offset: int) -> list[Document]:
        raw = self.collection.get(
            where=where, limit=limit, offset=offset, include=["documents", "metadatas"]
        )
        return _documents(raw)

    def count(self, where: Mapping[str, Any] | None = None) -> int:
        if where is None:
            return int(self.collection.count())
        return len(self.ids_in(where))

    def ids_in(self, where: Mapping[str, Any] | None) -> list[str]:
        return list(self.collection.get(where=where, include=[])["ids"])

    def documents(
        self,
        where: Mapping[str, Any] | None = None,
        where_document: Mapping[str, Any] | None = None,
    ) -> list[Document]:
        """Every document matching ``where`` and ``where_document``, in insertion order."""
        raw = self.collection.get(
            where=where, where_document=where_document, include=["documents", "metadatas"]
        )
        return _documents(raw)

    def delete(self, ids: list[str]) -> None:
        if ids:
            self.collection.delete(ids=ids)

    def set_metadata(self, updates: Mapping[str, Mapping[str, Any]]) -> list[Document]:
        """Set the keys in place (``collection.update``): no re-embedding, text untouched."""
        documents = self._merged(updates)
        if documents:
            self.collection.update(
                ids=[doc.id for doc in documents], metadatas=[doc.metadata for doc in documents]
            )
        return documents

    def recent(self, limit: int) -> list[Document]:
        if limit <= 0:
            return []
        total = int(self.collection.count())
        return self.page(None, limit, max(0, total - limit))

    def persist_directory(self) -> Path | None:
        settings = self.store._client.get_settings()  # type: ignore[attr-defined]
        if not settings.is_persistent or not settings.persist_directory:
            return None
        return Path(settings.persist_directory)

    def is_remote(self) -> bool:
        """Whether the store is a Chroma server reached over HTTP (``chromadb.HttpClient``)."""
        settings = self.store._client.get_settings()  # type: ignore[attr-defined]
        return "fastapi" in str(settings.chroma_api_impl).lower()

    def side_collection(self, suffix: str) -> Any:
        """A collection beside the store's, on the same client, named ``<name><suffix>``."""
        client = self.store._client  # type: ignore[attr-defined]
        return client.get_or_create_collection(f"{self.collection.name}{suffix}")

    # -- searches -----------------------------------------------------------------

    def search_by_vectors(
        self,
        queries: Sequence[str],
        vectors: Vector,
        fetch_ks: Sequence[int],
        search_kwargs: Mapping[str, Any],
        stored: StoredVectors | None = None,
    ) -> list[Run]:
        """All query vectors in one collection query (``filter`` is the ``where`` dict).

        The query reads ids only; the documents found (each once, however many
        runs hold it) are then read in one ``get``, with their vectors when
        ``stored`` asks for them: far less than every run carrying its rows.
        Documents ``stored`` holds a copy of are not read (see
        :meth:`read_documents`); the ``stored.also`` ids are read in the same ``get``.
        """
        kwargs = dict(search_kwargs)
        where = kwargs.pop("filter", None)
        raw = self.collection.query(
            query_embeddings=vectors,
            n_results=max(fetch_ks),
            where=where,
            include=[],
            **kwargs,
        )
        run_ids = [ids[:fetch_k] for ids, fetch_k in zip(raw["ids"], fetch_ks, strict=True)]
        also = stored.also if stored is not None else ()
        unique = list(dict.fromkeys(chain(chain.from_iterable(run_ids), also)))
        found = self._read_found(unique, {"where": where, **kwargs}, stored)
        if stored is not None and also:
            stored.also_found = {i: found[i] for i in also if i in found}
        return [([found[i] for i in ids if i in found], False) for ids in run_ids]

    def search_within(
        self,
        ids: Sequence[str],
        vectors: Vector,
        fetch_ks: Sequence[int],
        search_kwargs: Mapping[str, Any],
        stored: StoredVectors | None = None,
    ) -> list[Run]:
        """Rank the documents with these ids (a small scope) exactly, in the collection's space.

        Their vectors are read in one ``get`` by id (the documents found are then
        read and matched against ``filter``): far cheaper than a filtered
        approximate search per query vector when the filter keeps a small share
        of a large collection.
        """
        if not ids:
            return [([], False) for _ in fetch_ks]
        kwargs = dict(search_kwargs)
        where = kwargs.pop("filter", None)
        raw = self.collection.get(ids=list(ids), include=["embeddings"], **kwargs)
        if not raw["ids"]:
            return [([], False) for _ in fetch_ks]
        distances = _distances(
            np.asarray(vectors, dtype=np.float32),
            np.asarray(raw["embeddings"], dtype=np.float32),
            self._space(),
        )
        run_ids = [
            [raw["ids"][i] for i in np.argsort(row, kind="stable")[:fetch_k]]
            for row, fetch_k in zip(distances, fetch_ks, strict=True)
        ]
        unique = list(dict.fromkeys(chain.from_iterable(run_ids)))
        read = stored
        if stored is not None:
            position = {doc_id: i for i, doc_id in enumerate(raw["ids"])}
            stored.found.update(
                (doc_id, np.asarray(raw["embeddings"][position[doc_id]], dtype=np.float32))
                for doc_id in unique
                if not stored.known(doc_id)
            )
            read = replace(stored, known=lambda _doc_id: True)
        found = self._read_found(unique, {"where": where, **kwargs}, read)
        return [([found[i] for i in run if i in found], False) for run in run_ids]

    def _space(self) -> str:
        """The collection's distance (``l2``, ``cosine`` or ``ip``), as its HNSW index ranks."""
        configuration = getattr(self.collection, "configuration_json", None) or {}
        space = (configuration.get("hnsw") or {}).get("space")
        metadata = self.collection.metadata or {}
        return str(space or metadata.get("hnsw:space") or "l2")

    def _read_found(
        self, ids: list[str], filters: Mapping[str, Any], stored: StoredVectors | None
    ) -> dict[str, Document]:
        """The documents with these ids still matching ``filters`` (a write may come between).

        Vectors are read only for documents whose vectors are not ``known``: with
        the rest in one ``get`` when they are most, else in a ``get`` of their own.
        """
        if stored is None:
            return self._read_vectors(ids, filters, stored)
        copies = {i: doc for i in ids if (doc := stored.copy(i)) is not None}
        stored.copied.update(copies)
        found = self._read_vectors([i for i in ids if i not in copies], filters, stored)
        return {**copies, **found}

    def _read_vectors(
        self, ids: list[str], filters: Mapping[str, Any], stored: StoredVectors | None
    ) -> dict[str, Document]:
        unknown = [] if stored is None else [i for i in ids if not stored.known(i)]
        if not unknown:
            return self._get_found(ids, filters, None)
        if len(unknown) * 2 >= len(ids):
            return self._get_found(ids, filters, stored)
        missing = set(unknown)
        found = self._get_found([i for i in ids if i not in missing], filters, None)
        return {**found, **self._get_found(unknown, filters, stored)}

    def _get_found(
        self, ids: list[str], filters: Mapping[str, Any], stored: StoredVectors | None
    ) -> dict[str, Document]:
        """The documents with these ids matching ``filters``' ``where``, checked here.

        Chroma evaluates a ``where`` beside ``ids`` over the whole collection
        (seconds at 100,000 memories), so the metadata read with the documents is
        matched in Python instead.
        """
        if not ids:
            return {}
        rest = {key: value for key, value in filters.items() if key != "where"}
        include = ["documents", "metadatas", *(["embeddings"] if stored is not None else [])]
        raw = self.collection.get(ids=ids, include=include, **rest)
        where = filters.get("where")
        matches = where_predicate(where) if where else None
        docs = {
            doc.id or "": doc for doc in _documents(raw) if matches is None or matches(doc.metadata)
        }
        if stored is not None:
            stored.found.update(
                (doc_id, np.asarray(vector, dtype=np.float32))
                for doc_id, vector in zip(raw["ids"], raw["embeddings"], strict=True)
                if doc_id in docs
            )
        return docs

    def read_documents(
        self, ids: Sequence[str], search_kwargs: Mapping[str, Any]
    ) -> dict[str, Document]:
        kwargs = dict(search_kwargs)
        where = kwargs.pop("filter", None)
        return self._get_found(list(ids), {"where": where, **kwargs}, None)

    def stored_vectors(self, texts: Mapping[str, str]) -> list[Any] | None:
        raw = self.collection.get(ids=list(texts), include=["embeddings", "documents"])
        found = {
            doc_id: emb
            for doc_id, emb, text in zip(
                raw["ids"], raw["embeddings"], raw["documents"], strict=True
            )
            if text == texts.get(doc_id)
        }
        if set(found) != set(texts):
            return None
        return [found[key] for key in texts]

    async def astored_vectors(self, texts: Mapping[str, str]) -> list[Any] | None:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self.stored_vectors, texts)

    def scored_search(
        self, text: str, k: int, where: Mapping[str, Any] | None = None
    ) -> list[ScoredDocument]:
        """The ``k`` documents matching ``where`` nearest to ``text``, scored by cosine similarity.

        The cosine is computed from the stored vectors, whatever distance the
        collection indexes by. Chroma answers a filtered query by scanning
        every matching row (about 25 ms at 10,000 rows on 2 cores, against
        1.5 ms for its vector index), so the index is asked first: when the
        ``k`` nearest documents of the whole collection all match ``where``,
        they are the answer. Otherwise (other documents are closer, or the
        collection is small) the filtered query runs. A store without
        embeddings gives its relevance scores instead.
        """
        embeddings = self.store.embeddings
        if embeddings is None:
            return super().scored_search(text, k, where)
        vector = embeddings.embed_query(text)
        rows = self._nearest(vector, k, where)
        if not len(rows["ids"]):
            return []
        cosines = cosine_scores(
            np.asarray(vector, dtype=np.float32), np.asarray(rows["embeddings"], dtype=np.float32)
        )
        return [
            (Document(page_content=text, metadata=dict(meta or {}), id=doc_id), _finite(cosine))
            for doc_id, text, meta, cosine in zip(
                rows["ids"], rows["documents"], rows["metadatas"], cosines.tolist(), strict=True
            )
            if text is not None
        ]

    def _nearest(
        self, vector: list[float], k: int, where: Mapping[str, Any] | None
    ) -> dict[str, list[Any]]:
        include = ["documents", "embeddings", "metadatas"]
        keys = ("ids", "documents", "embeddings", "metadatas")
        if where is not None:
            raw = self.collection.query(query_embeddings=[vector], n_results=k, include=include)
            inside = where_predicate(where)
            metadatas = raw["metadatas"][0]
            if len(metadatas) == k and all(inside(meta or {}) for meta in metadatas):
                return {key: raw[key][0] for key in keys}
        raw = self.collection.query(
            query_embeddings=[vector], n_results=k, where=where, include=include
        )
        return {key: raw[key][0] for key in keys}

    # -- the search-index repair ------------------------------------------------

    def unsearchable(
        self, *, recent: int | None = None, k: int = 3, page_size: int = 1000
    ) -> dict[str, Any]:
        """Stored vectors a search for themselves does not return among the ``k`` nearest.

        A vector is its own nearest neighbour (distance 0), so every stored row
        must come back when its own vector is searched, unless ``k`` exact
        duplicates crowd it out. Rows that do not are missing from the vector
        index or cut off from its graph.

        Args:
            recent: Check only the latest ``recent`` rows (rows come back in
                insertion order); ``None`` checks every row.
            k: How many nearest neighbours a row must be among.
            page_size: Rows read and searched per call.

        Returns:
            The unsearchable rows' vectors, by id.
        """
        found: dict[str, Any] = {}
        total = int(self.collection.count())
        start = 0 if recent is None else max(0, total - recent)
        for offset in range(start, total, page_size):
            page = self.collection.get(include=["embeddings"], limit=page_size, offset=offset)
            rows = {
                doc_id: vector
                for doc_id, vector in zip(page["ids"], page["embeddings"], strict=True)
                if vector is not None
            }
            found.update(self._not_found(rows, min(k, total)))
        return found

    def reindex(self, vectors: Mapping[str, Any], *, k: int = 3) -> list[str]:
        """Write these rows' vectors to the index again (text and metadata untouched).

        Returns:
            The ids a search for their own vector still does not find.
        """
        if not vectors:
            return []
        self.collection.update(ids=list(vectors), embeddings=list(vectors.values()))
        return list(self._not_found(vectors, min(k, int(self.collection.count()))))

    def _not_found(self, rows: Mapping[str, Any], k: int) -> dict[str, Any]:
        """The rows a search for their own vector misses, at ``k`` and again much wider.

        A near duplicate (not an exact one) can hide a row from a narrow
        approximate search; a row the wide search still misses is unreachable.
        """
        missed = self._missed_at(rows, k)
        total = int(self.collection.count())
        wide = min(total, max(_WIDE_CHECK, 10 * k))
        return self._missed_at(missed, wide) if missed and wide > k else missed

    def _missed_at(self, rows: Mapping[str, Any], k: int) -> dict[str, Any]:
        if not rows:
            return {}
        hits = self.collection.query(
            query_embeddings=list(rows.values()), n_results=k, include=["distances"]
        )
        missed: dict[str, Any] = {}
        for (doc_id, vector), ids, distances in zip(
            rows.items(), hits["ids"], hits["distances"], strict=True
        ):
            crowded_out = len(ids) == k and distances[-1] <= _SAME_VECTOR
            if doc_id not in ids and not crowded_out:
                missed[doc_id] = vector
        return missed


def _distances(queries: Vector, matrix: Vector, space: str) -> Vector:
    """Each query's distance to each row, as Chroma's HNSW index measures it (smaller is nearer)."""
    if space == "cosine":
        distances: Vector = 1.0 - _unit_rows(queries) @ _unit_rows(matrix).T
    elif space == "ip":
        distances = 1.0 - queries @ matrix.T
    else:
        distances = (queries**2).sum(axis=1)[:, None] - 2 * queries @ matrix.T
        distances += (matrix**2).sum(axis=1)
    return distances.astype(np.float32)


def _unit_rows(matrix: Vector) -> Vector:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)


def _documents(raw: Any) -> list[Document]:
    return [
        Document(page_content=text, metadata=dict(meta or {}), id=doc_id)
        for doc_id, text, meta in zip(raw["ids"], raw["documents"], raw["metadatas"], strict=True)
        if text is not None
    ]


def adapter_for(store: VectorStore) -> StoreAdapter:
    """The richest adapter ``store`` supports.

    Example:
        ```python
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_core.vectorstores import InMemoryVectorStore

        from cogito_lc._core.stores import InMemoryAdapter, adapter_for

        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
        store.add_texts(["a note for alice"], metadatas=[{"user_id": "alice"}], ids=["n1"])
        adapter = adapter_for(store)
        assert isinstance(adapter, InMemoryAdapter)
        assert adapter.count({"user_id": "alice"}) == 1
        ```
    """
    if is_chroma(store):
        return ChromaAdapter(store)
    if isinstance(store, InMemoryVectorStore):
        return InMemoryAdapter(store)
    return _registered_adapter(store) or StoreAdapter(store)
