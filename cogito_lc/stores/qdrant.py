"""Qdrant through ``langchain-qdrant``: embedded local mode (``path=``) or a Qdrant server.

:func:`open_qdrant_store` gives a :class:`CogitoQdrantVectorStore`, a
``QdrantVectorStore`` that keeps what cogito-lc promises of any store: a
document comes back with the id it was stored under (Qdrant point ids must be
UUIDs, so the point id is a UUID derived from the id and the id itself is kept
in the payload) and the metadata it was stored with (no ``_id`` or
``_collection_name`` keys added). :class:`QdrantAdapter` pushes scopes and
``where`` filters down as payload filters (with payload indexes on a server)
and searches every query vector in one ``query_batch_points`` call.
"""

from __future__ import annotations

import atexit
import json
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from cogito_lc._core.extras import require_extra
from cogito_lc._core.filters import where_predicate
from cogito_lc._core.metadata import SCOPE_KEYS
from cogito_lc.stores._dimension import StoredVector, checked_embeddings, probe_dimension
from cogito_lc.stores._qdrant_filters import QdrantFilter, where_to_qdrant
from cogito_lc.stores._qdrant_local import Ranked, local_count, local_nearest, prepare
from cogito_lc.stores.base import (
    BatchedSearchAdapter,
    Run,
    ScopeCounts,
    ScoredDocument,
    StoreAdapter,
    StoredVectors,
    Vector,
    cosine_scores,
    finite_score,
    register_adapter,
    scope_keys,
)

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

__all__ = [
    "ID_KEY",
    "SEQ_KEY",
    "QdrantAdapter",
    "open_qdrant_store",
    "point_id",
    "qdrant_store_class",
]

ID_KEY = "doc_id"
"""The payload key holding a document's own id (its point id is derived from it)."""
SEQ_KEY = "seq"
"""The payload key ordering documents by insertion (nanoseconds, unique per process)."""
_ID_NAMESPACE = uuid.UUID("5a0f2d4e-8c3b-4f6a-9d1e-c0917e5f1b2a")
_PAGE = 1_000
_CONTENT_KEY = "page_content"
"""Where the stores opened here keep a memory's text (``QdrantVectorStore``'s default)."""
_FACET_LIMIT = 1_000_000
"""Distinct values a facet may return (every scope, for the totals)."""


def point_id(doc_id: str | int) -> str:
    """The Qdrant point id of the document ``doc_id`` (a UUID derived from it).

    Example:
        ```python
        from cogito_lc.stores.qdrant import point_id

        assert point_id("m1") == point_id("m1") != point_id("m2")
        ```
    """
    return str(uuid.uuid5(_ID_NAMESPACE, str(doc_id)))


class _Sequence:
    """Insertion order: the wall clock in nanoseconds, never repeating in this process."""

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def seed(self, last: int) -> None:
        """Never give a value at or below ``last`` (the highest a collection holds)."""
        with self._lock:
            self._last = max(self._last, last)

    def take(self, count: int) -> list[int]:
        with self._lock:
            start = max(self._last + 1, time.time_ns())
            self._last = start + count - 1
        return list(range(start, start + count))


_SEQUENCE = _Sequence()


def qdrant_store_class() -> type[VectorStore]:
    """:class:`CogitoQdrantVectorStore` (defined on first use: ``langchain-qdrant`` is an extra)."""
    global _STORE_CLASS  # noqa: PLW0603 - built once, on first use
    with _STORE_CLASS_LOCK:
        if _STORE_CLASS is None:
            _STORE_CLASS = _define_store_class()
        return _STORE_CLASS


_STORE_CLASS: type[VectorStore] | None = None
_STORE_CLASS_LOCK = threading.Lock()


def _define_store_class() -> type[VectorStore]:
    from langchain_qdrant import QdrantVectorStore
    from qdrant_client import models

    class CogitoQdrantVectorStore(QdrantVectorStore):
        """A ``QdrantVectorStore`` whose documents keep their ids and metadata as stored.

        Any string id is accepted (the point id is :func:`point_id` of it); every
        point carries its insertion order in the payload (``seq``).
        """

        def add_texts(  # type: ignore[override]
            self,
            texts: Iterable[str],
            metadatas: list[dict[str, Any]] | None = None,
            ids: Sequence[str | int] | None = None,
            batch_size: int = 64,
            **kwargs: Any,
        ) -> list[str | int]:
            texts = list(texts)
            given = list(ids) if ids else [None] * len(texts)
            doc_ids: list[str | int] = [uuid.uuid4().hex if i is None else i for i in given]
            metas = metadatas or [{} for _ in texts]
            seqs: list[int] | None = kwargs.pop("seqs", None)  # places kept by a rewrite
            for start in range(0, len(texts), batch_size):
                stop = start + batch_size
                places = (
                    _SEQUENCE.take(len(texts[start:stop])) if seqs is None else seqs[start:stop]
                )
                points = self._points(
                    texts[start:stop], metas[start:stop], doc_ids[start:stop], places
                )
                self.client.upsert(self.collection_name, points=points, wait=True, **kwargs)
            return doc_ids

        def _points(
            self,
            texts: list[str],
            metadatas: list[dict[str, Any]],
            ids: list[str | int],
            seqs: list[int],
        ) -> list[Any]:
            vectors = self._require_embeddings("add_texts").embed_documents(texts)
            return [
                models.PointStruct(
                    id=point_id(doc_id),
                    vector={self.vector_name: vector} if self.vector_name else vector,
                    payload={
                        self.content_payload_key: text,
                        self.metadata_payload_key: dict(metadata or {}),
                        ID_KEY: str(doc_id),
                        SEQ_KEY: seq,
                    },
                )
                for text, metadata, doc_id, vector, seq in zip(
                    texts, metadatas, ids, vectors, seqs, strict=True
                )
            ]

        def get_by_ids(self, ids: Sequence[str | int], /) -> list[Document]:
            points = self.client.retrieve(
                self.collection_name, [point_id(i) for i in ids], with_payload=True
            )
            return [self._document(point) for point in points]

        def delete(  # type: ignore[override]
            self, ids: list[str | int] | None = None, **kwargs: Any
        ) -> bool | None:
            if not ids:
                return None
            result = self.client.delete(
                self.collection_name, points_selector=[point_id(i) for i in ids], wait=True
            )
            return bool(result.status == models.UpdateStatus.COMPLETED)

        def _document(self, point: Any) -> Document:
            return point_document(point, self.content_payload_key, self.metadata_payload_key)

        @classmethod
        def _document_from_point(
            cls,
            scored_point: Any,
            collection_name: str,
            content_payload_key: str,
            metadata_payload_key: str,
        ) -> Document:
            return point_document(scored_point, content_payload_key, metadata_payload_key)

    return CogitoQdrantVectorStore


def point_document(
    point: Any, content_key: str = "page_content", metadata_key: str = "metadata"
) -> Document:
    """The document stored in a Qdrant point, with its own id (the point id if it has none)."""
    payload = point.payload or {}
    return Document(
        page_content=payload.get(content_key) or "",
        metadata=dict(payload.get(metadata_key) or {}),
        id=str(payload.get(ID_KEY, point.id)),
    )


def _is_cogito_qdrant(store: VectorStore) -> bool:
    return _STORE_CLASS is not None and isinstance(store, _STORE_CLASS)


# -- opening a store -----------------------------------------------------------------


@dataclass(frozen=True)
class _Where:
    """A ``where`` filter with its Qdrant form and its predicate, each made once."""

    pushed: QdrantFilter
    matches: Callable[[Mapping[str, Any]], bool] | None
    """The filter checked in code; None keeps every document."""

    @classmethod
    def of(cls, where: Mapping[str, Any] | None, payload_key: str) -> _Where:
        predicate = None if where is None else where_predicate(where)
        return cls(where_to_qdrant(where, payload_key), predicate)

    def holds(self, document: Document) -> bool:
        """Whether the document matches (checked in code: a read by id takes no filter)."""
        return self.matches is None or self.matches(document.metadata)

    def keeps(self, document: Document) -> bool:
        """Whether a document Qdrant found under the pushed filter matches."""
        return self.pushed.exact or self.holds(document)


def open_qdrant_store(
    embeddings: Embeddings,
    *,
    path: str | Path | None = None,
    url: str | None = None,
    api_key: str | None = None,
    collection: str = "cogito_memory",
    client: QdrantClient | None = None,
) -> VectorStore:
    """A :class:`CogitoQdrantVectorStore` over the collection ``collection``, created if needed.

    Exactly one of ``client``, ``url`` (a Qdrant server) and ``path`` (embedded
    local mode, kept on disk) may be given; none gives an in-memory local
    Qdrant. A new collection is sized from ``embeddings`` and ranks by cosine;
    on a server the scope keys and the insertion order get payload indexes.

    Args:
        embeddings: The embedding model.
        path: A directory for embedded local mode.
        url: A Qdrant server URL (``http://localhost:6333``).
        api_key: The server's API key, if it has one.
        collection: The collection name.
        client: A ``QdrantClient`` made by the caller. In local mode the store
            calls it one call at a time (local mode is not thread-safe), under a
            lock every store over that client shares; calls the caller makes
            itself from other threads are not covered.

    Raises:
        ValueError: If more than one of ``client``, ``url`` and ``path`` is given,
            or the collection holds vectors of another size.

    Example:
        ```python
        from langchain_core.embeddings import DeterministicFakeEmbedding

        from cogito_lc.stores.qdrant import open_qdrant_store

        store = open_qdrant_store(DeterministicFakeEmbedding(size=8))  # in memory
        store.add_texts(["billing runs on port 8083"], ids=["m1"])
        assert store.get_by_ids(["m1"])[0].id == "m1"
        ```
    """
    require_extra("qdrant", "The Qdrant store")
    if sum(given is not None for given in (client, url, path)) > 1:
        msg = "open_qdrant_store takes one of client=, url= or path=; pass only one."
        raise ValueError(msg)
    client = _client(path, url, api_key) if client is None else _locked(client)
    store_embeddings = _ensure_collection(client, collection, embeddings)
    return qdrant_store_class()(  # type: ignore[call-arg]
        client=client,
        collection_name=collection,
        embedding=store_embeddings,
        # langchain-qdrant's own check embeds a probe: skipped when ours waits for first use
        validate_collection_config=store_embeddings is embeddings,
    )


class _LockedClient:
    """A local-mode ``QdrantClient`` called by one thread at a time.

    Local mode keeps its points in Python structures and one SQLite connection
    with no locks of its own: concurrent writes and reads corrupt it.
    """

    def __init__(self, client: QdrantClient, lock: threading.RLock | None = None) -> None:
        self._wrapped = client
        self._lock = lock or threading.RLock()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._wrapped, name)
        if not callable(value):
            return value

        def locked(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return value(*args, **kwargs)

        return locked


_LOCAL_CLIENTS: dict[str, _LockedClient] = {}
_LOCAL_CLIENTS_LOCK = threading.Lock()
_CALLERS_LOCKS: weakref.WeakKeyDictionary[QdrantClient, threading.RLock] = (
    weakref.WeakKeyDictionary()
)


def _locked(client: QdrantClient) -> QdrantClient:
    """A caller's ``client`` as the stores over it call it: one call at a time if local.

    Every store opened over the same local-mode client shares one lock; the
    caller's own calls through its reference to ``client`` are not covered.
    """
    if isinstance(client, _LockedClient) or not is_local(client):
        return client
    with _LOCAL_CLIENTS_LOCK:
        lock = _CALLERS_LOCKS.setdefault(client, threading.RLock())
    return _LockedClient(client, lock)  # type: ignore[return-value]


def _client(path: str | Path | None, url: str | None, api_key: str | None) -> QdrantClient:
    from qdrant_client import QdrantClient

    if url is not None:
        return QdrantClient(url=url, api_key=api_key, timeout=5)
    if path is None:
        return _LockedClient(QdrantClient(location=":memory:"))  # type: ignore[return-value]
    directory = Path(path).resolve()
    with _LOCAL_CLIENTS_LOCK:  # local mode locks its directory: one client per process
        held = _LOCAL_CLIENTS.get(str(directory))
        if held is not None and not held._client.closed:
            return held  # type: ignore[return-value]
        directory.mkdir(parents=True, exist_ok=True)
        client = _LockedClient(QdrantClient(path=str(directory)))
        _LOCAL_CLIENTS[str(directory)] = client
    atexit.register(_close, weakref.ref(client))  # before interpreter teardown breaks close()
    return client  # type: ignore[return-value]


def _close(client: weakref.ref[_LockedClient]) -> None:
    held = client()
    if held is not None:
        held.close()


def _ensure_collection(client: QdrantClient, collection: str, embeddings: Embeddings) -> Embeddings:
    """Create the collection if needed; the embeddings the store should use.

    An existing collection of one unnamed cosine vector, the kind made here, is
    checked against a model built on first use when the store first uses it.
    """
    from qdrant_client import models

    store_embeddings = embeddings
    if not client.collection_exists(collection):
        size = probe_dimension(embeddings)
        try:
            client.create_collection(
                collection,
                vectors_config=models.VectorParams(size=size, distance=models.Distance.COSINE),
            )
        except Exception:  # another replica made it first
            if not client.collection_exists(collection):
                raise
    else:
        store_embeddings = _check_dimension(client, collection, embeddings)
        _SEQUENCE.seed(_highest_seq(client, collection))
    if is_local(client):
        return store_embeddings  # local mode scans its points; payload indexes do nothing there
    client.create_payload_index(collection, SEQ_KEY, models.PayloadSchemaType.INTEGER)
    for key in SCOPE_KEYS:
        client.create_payload_index(collection, f"metadata.{key}", models.PayloadSchemaType.KEYWORD)
    return store_embeddings


def _highest_seq(client: QdrantClient, collection: str) -> int:
    from qdrant_client import models

    points, _ = client.scroll(
        collection, limit=1, order_by=models.OrderBy(key=SEQ_KEY, direction="desc")
    )
    return int((points[0].payload or {}).get(SEQ_KEY, 0)) if points else 0


def _check_dimension(client: QdrantClient, collection: str, embeddings: Embeddings) -> Embeddings:
    """Check the model against the collection's vectors: now, or by the embeddings returned."""
    from qdrant_client import models

    vectors = client.get_collection(collection).config.params.vectors
    if not isinstance(vectors, models.VectorParams) or vectors.distance != models.Distance.COSINE:
        return embeddings  # not made here: langchain-qdrant checks it, with the model
    holder = f"the Qdrant collection {collection!r}"
    return checked_embeddings(embeddings, vectors.size, holder, _sample(client, collection))


def _sample(client: QdrantClient, collection: str) -> StoredVector | None:
    """One stored memory's text and vector (None: the collection holds none)."""
    points, _ = client.scroll(collection, limit=1, with_payload=[_CONTENT_KEY], with_vectors=True)
    if not points or not isinstance(points[0].vector, list):
        return None
    text = (points[0].payload or {}).get(_CONTENT_KEY)
    vector = [float(x) for x in points[0].vector if isinstance(x, (int, float))]
    return StoredVector(text, vector) if isinstance(text, str) else None


def _filter_key(where: Mapping[str, Any] | None, payload_key: str) -> str | None:
    """``where`` on the metadata under ``payload_key``, as text (None: no filter, or not JSON)."""
    if where is None:
        return None
    try:
        return f"{payload_key} {json.dumps(where, sort_keys=True)}"
    except (TypeError, ValueError):
        return None


def is_local(client: QdrantClient) -> bool:
    """Whether ``client`` is Qdrant's embedded local mode (no server)."""
    return type(client._client).__name__ == "QdrantLocal"


# -- the adapter ---------------------------------------------------------------------


class QdrantAdapter(BatchedSearchAdapter):
    """A store made by :func:`open_qdrant_store`: filters pushed down as payload filters."""

    def __init__(self, store: VectorStore) -> None:
        super().__init__(store)
        self.client: QdrantClient = store.client  # type: ignore[attr-defined]
        self.collection: str = store.collection_name  # type: ignore[attr-defined]
        self._content_key: str = store.content_payload_key  # type: ignore[attr-defined]
        self._metadata_key: str = store.metadata_payload_key  # type: ignore[attr-defined]
        self._vector_name: str = store.vector_name  # type: ignore[attr-defined]

    searches_within = True

    @property
    def filtered_search_scans(self) -> bool:  # type: ignore[override]
        """Local mode checks a filter on every point in Python; a server uses its indexes."""
        return is_local(self.client)

    def check_filters_by_metadata(self, purpose: str) -> None:
        return None

    def _where(self, where: Mapping[str, Any] | None) -> _Where:
        return _Where.of(where, self._metadata_key)

    def _document(self, point: Any) -> Document:
        return point_document(point, self._content_key, self._metadata_key)

    # -- reads and deletes ------------------------------------------------------

    checks_by_id = True

    def read_documents(
        self, ids: Sequence[str], search_kwargs: Mapping[str, Any]
    ) -> dict[str, Document]:
        """Read by id with the pushed filter (a recall confirms its lexical run's documents)."""
        found = self._retrieve(list(ids), self._where(search_kwargs.get("filter")), vectors=False)
        return {doc_id: document for doc_id, (document, _) in found.items()}

    def get(self, ids: list[str], where: Mapping[str, Any] | None = None) -> list[Document]:
        if not ids:
            return []
        found = self._retrieve(ids, self._where(where), vectors=False)
        return [found[i][0] for i in dict.fromkeys(ids) if i in found]

    def _retrieve(
        self, ids: Sequence[str], where: _Where, *, vectors: bool
    ) -> dict[str, tuple[Document, Any]]:
        points = self.client.retrieve(
            self.collection, [point_id(i) for i in ids], with_payload=True, with_vectors=vectors
        )
        found = {}
        for point in points:
            document = self._document(point)
            if where.holds(document):
                found[document.id or ""] = (document, self._vector(point) if vectors else None)
        return found

    def _vector(self, point: Any) -> Any:
        vector = point.vector
        return vector.get(self._vector_name) if isinstance(vector, dict) else vector

    def page(self, where: Mapping[str, Any] | None, limit: int, offset: int) -> list[Document]:
        if limit <= 0:
            return []
        found: list[Document] = []
        for document in self._in_order(self._where(where), "asc"):
            if offset > 0:
                offset -= 1
                continue
            found.append(document)
            if len(found) >= limit:
                break
        return found

    def _in_order(self, where: _Where, direction: str) -> Iterable[Document]:
        """Every document matching ``where`` in insertion order, read a page at a time."""
        from qdrant_client import models

        start: int | None = None
        seen: set[Any] = set()  # points at ``start`` already given (another may share its value)
        while True:
            order = models.OrderBy(key=SEQ_KEY, direction=direction, start_from=start)
            points, _ = self.client.scroll(
                self.collection,
                scroll_filter=where.pushed.filter,
                limit=_PAGE,
                order_by=order,
                with_payload=True,
            )
            fresh = [point for point in points if point.id not in seen]
            for point in fresh:
                document = self._document(point)
                if where.keeps(document):
                    yield document
            if len(points) < _PAGE or not fresh:
                return
            start = _seq(points[-1])
            seen = {point.id for point in points if _seq(point) == start}

    def count(self, where: Mapping[str, Any] | None = None) -> int:
        found = self._where(where)
        if not found.pushed.exact:
            return len(self.ids_in(where))
        key = self._filter_key(where)
        if is_local(self.client) and (where is None or key is not None):
            with self._local_lock():
                counted = local_count(
                    self.client,
                    self.collection,
                    keep=self._ordered_payload_test(found),
                    keep_key=f"ordered {key}",
                )
            if counted is not None:
                return counted
        ordered = _ordered_points(found.pushed.filter)  # as ids_in and page see them
        result = self.client.count(self.collection, count_filter=ordered, exact=True)
        return int(result.count)

    def warm_up(self, where: Mapping[str, Any] | None = None) -> None:
        """In local mode: ready the vectors read from disk, and the points of ``where``.

        The points counted (the lexical index's check) are found and remembered too.
        """
        if not is_local(self.client):
            return
        translated = self._where(where)
        with self._local_lock():
            prepare(
                self.client,
                self.collection,
                self._vector_name,
                keep=self._payload_test(translated),
                keep_key=self._filter_key(where),
            )
        self.count()

    def _local_lock(self) -> AbstractContextManager[Any]:
        """The lock of the adapter's wrapper of a local-mode client (none for a bare client)."""
        return getattr(self.client, "_lock", None) or nullcontext()

    def _filter_key(self, where: Mapping[str, Any] | None) -> str | None:
        """``where`` as the text local mode's remembered filter masks are kept under."""
        return _filter_key(where, self._metadata_key)

    def _ordered_payload_test(self, found: _Where) -> Callable[[Mapping[str, Any]], bool]:
        """Whether a point carries an insertion order and matches (``_ordered_points``)."""
        matches = self._payload_test(found)

        def test(payload: Mapping[str, Any]) -> bool:
            order = payload.get(SEQ_KEY)
            if isinstance(order, bool) or not isinstance(order, int | float) or order < 0:
                return False
            return matches is None or matches(payload)

        return test

    def scope_counts(
        self,
        keys: Sequence[str],
        where: Mapping[str, Any] | None = None,
        *,
        limit: int | None = None,
    ) -> ScopeCounts:
        """One key is counted by Qdrant's facet (an index on a server); several, page by page."""
        names = scope_keys(keys, limit)
        found = self._where(where)
        if len(names) != 1 or not found.pushed.exact:
            return super().scope_counts(names, where, limit=limit)
        hits = self.client.facet(
            self.collection,
            key=f"{self._metadata_key}.{names[0]}",
            facet_filter=_ordered_points(found.pushed.filter),
            limit=_FACET_LIMIT,
            exact=True,
        ).hits
        counted = sorted((str(hit.value), int(hit.count)) for hit in hits)
        shown = counted if limit is None else counted[:limit]
        return ScopeCounts(
            counts={(value,): count for value, count in shown},
            scopes=len(counted),
            documents=sum(count for _, count in counted),
        )

    def ids_in(self, where: Mapping[str, Any] | None) -> list[str]:
        return [doc.id or "" for doc in self._in_order(self._where(where), "asc")]

    def delete(self, ids: list[str], where: Mapping[str, Any] | None = None) -> None:
        if ids and where is not None:
            ids = [doc.id or "" for doc in self.get(ids, where)]
        if ids:
            self.client.delete(
                self.collection, points_selector=[point_id(i) for i in ids], wait=True
            )

    def add_new(
        self, documents: Sequence[Document], vectors: Sequence[Sequence[float]] | None = None
    ) -> set[str]:
        """Write the documents whose ids the collection does not hold; returns those ids.

        Points are inserted only where none exists (``INSERT_ONLY``), so a
        concurrent writer of the same id never overwrites the first one's point.
        """
        del vectors  # vectors_for gives none here
        from qdrant_client import models

        held = set(
            self._retrieve([doc.id or "" for doc in documents], self._where(None), vectors=False)
        )
        new = [doc for doc in documents if doc.id not in held]
        if new:
            self.store.add_texts(
                [doc.page_content for doc in new],
                [dict(doc.metadata) for doc in new],
                ids=[doc.id or "" for doc in new],
                update_mode=models.UpdateMode.INSERT_ONLY,
            )
        return {doc.id or "" for doc in new}

    def replace(self, document: Document, vector: Sequence[float] | None = None) -> None:
        """Write ``document`` over the point holding its id, in that point's place in order."""
        del vector  # vectors_for gives none here
        doc_id = document.id or ""
        held = self.client.retrieve(self.collection, [point_id(doc_id)], with_payload=[SEQ_KEY])
        self.store.add_texts(
            [document.page_content],
            [dict(document.metadata)],
            ids=[doc_id],
            **({"seqs": [_seq(held[0])]} if held else {}),
        )

    def set_metadata(
        self, updates: Mapping[str, Mapping[str, Any]], where: Mapping[str, Any] | None = None
    ) -> list[Document]:
        """Set the keys in place (``set_payload``): no re-embedding, text untouched."""
        from qdrant_client import models

        held = [doc.id or "" for doc in self.get(list(updates), where)]
        operations = [
            models.SetPayloadOperation(
                set_payload=models.SetPayload(
                    payload=dict(updates[doc_id]),
                    key=self._metadata_key,  # merged into the metadata, other keys kept
                    filter=models.Filter(must=[models.HasIdCondition(has_id=[point_id(doc_id)])]),
                )
            )
            for doc_id in held
        ]
        if operations:  # a point deleted meanwhile matches no filter: skipped, no error
            self.client.batch_update_points(self.collection, operations, wait=True)
        return self.get(held, where)

    def recent(self, limit: int) -> list[Document]:
        if limit <= 0:
            return []
        found: list[Document] = []
        for document in self._in_order(self._where(None), "desc"):
            found.append(document)
            if len(found) >= limit:
                break
        return found[::-1]

    def persist_directory(self) -> Path | None:
        location = getattr(self.client._client, "location", None)
        if not is_local(self.client) or not location or location == ":memory:":
            return None
        return Path(location)

    # -- searches -----------------------------------------------------------------

    def search_by_vectors(
        self,
        queries: Sequence[str],
        vectors: Vector,
        fetch_ks: Sequence[int],
        search_kwargs: Mapping[str, Any],
        stored: StoredVectors | None = None,
    ) -> list[Run]:
        """Every query vector in one ``query_batch_points`` call, ``filter`` pushed down."""
        found = self._nearest_many(
            list(vectors), list(fetch_ks), search_kwargs.get("filter"), stored
        )
        return [([doc for doc, _ in hits], False) for hits in found]

    def _nearest_many(
        self,
        vectors: Sequence[Any],
        ks: Sequence[int],
        where: Mapping[str, Any] | None,
        stored: StoredVectors | None = None,
    ) -> list[list[ScoredDocument]]:

        translated = self._where(where)
        if is_local(self.client):
            with self._local_lock():  # rank and read as one
                ranked = local_nearest(
                    self.client,
                    self.collection,
                    self._vector_name,
                    vectors,
                    ks,
                    keep=self._payload_test(translated),
                    keep_key=self._filter_key(where),
                )
                if ranked is not None:
                    return self._ranked_hits(ranked, translated, stored)
        if not translated.pushed.exact:
            return [
                self._nearest_checked(vector, k, translated, stored)
                for vector, k in zip(vectors, ks, strict=True)
            ]
        requests = [
            self._query(vector, k, translated, with_vector=stored is not None)
            for vector, k in zip(vectors, ks, strict=True)
        ]
        responses = self.client.query_batch_points(self.collection, requests=requests)
        return [self._hits(response.points, translated, stored) for response in responses]

    def _query(
        self, vector: Any, k: int, translated: _Where, *, with_vector: bool, offset: int = 0
    ) -> Any:
        from qdrant_client import models

        return models.QueryRequest(
            query=np.asarray(vector, dtype=np.float32).tolist(),
            filter=translated.pushed.filter,
            limit=k,
            offset=offset,
            with_payload=True,
            with_vector=with_vector,
            using=self._vector_name or None,
        )

    def _nearest_checked(
        self, vector: Any, k: int, translated: _Where, stored: StoredVectors | None
    ) -> list[ScoredDocument]:
        """The ``k`` nearest under a filter Qdrant keeps a superset of: read on until ``k`` pass."""
        hits: list[ScoredDocument] = []
        offset, size = 0, max(k, 1) * 4
        while len(hits) < k:
            request = self._query(
                vector, size, translated, with_vector=stored is not None, offset=offset
            )
            [response] = self.client.query_batch_points(self.collection, requests=[request])
            hits.extend(self._hits(response.points, translated, stored))
            if len(response.points) < size:
                break
            offset += size
        return hits[:k]

    def _payload_test(self, translated: _Where) -> Callable[[Mapping[str, Any]], bool] | None:
        """Whether a point's payload matches the filter (None: every point does)."""
        matches, key = translated.matches, self._metadata_key
        if matches is None:
            return None
        return lambda payload: matches(payload.get(key) or {})

    def _ranked_hits(
        self, ranked: list[Ranked], translated: _Where, stored: StoredVectors | None
    ) -> list[list[ScoredDocument]]:
        """The points ranked outside the client, read in one ``retrieve`` and scored."""
        from qdrant_client import models

        wanted = list(dict.fromkeys(point for run in ranked for point, _ in run))
        points = self.client.retrieve(
            self.collection, wanted, with_payload=True, with_vectors=stored is not None
        )
        by_id = {point.id: point for point in points}
        runs = [
            [
                models.ScoredPoint(
                    id=point, version=0, score=score, payload=held.payload, vector=held.vector
                )
                for point, score in run
                if (held := by_id.get(point)) is not None
            ]
            for run in ranked
        ]
        return [self._hits(run, translated, stored) for run in runs]

    def _hits(
        self, points: Sequence[Any], translated: _Where, stored: StoredVectors | None
    ) -> list[ScoredDocument]:
        hits: list[ScoredDocument] = []
        for point in points:
            document = self._document(point)
            if not translated.keeps(document):
                continue
            if stored is not None and not stored.known(document.id or ""):
                stored.found[document.id or ""] = np.asarray(self._vector(point), dtype=np.float32)
            hits.append((document, finite_score(point.score)))
        return hits

    def search_within(
        self,
        ids: Sequence[str],
        vectors: Vector,
        fetch_ks: Sequence[int],
        search_kwargs: Mapping[str, Any],
        stored: StoredVectors | None = None,
    ) -> list[Run]:
        """Rank the documents with these ids (a small scope) exactly: one read by id, then numpy."""
        found = self._retrieve(list(ids), self._where(search_kwargs.get("filter")), vectors=True)
        if not found:
            return [([], False) for _ in fetch_ks]
        keys = list(found)
        matrix = np.asarray([found[key][1] for key in keys], dtype=np.float32)
        similarities = [
            cosine_scores(query, matrix) for query in np.asarray(vectors, dtype=np.float32)
        ]
        if stored is not None:
            stored.found.update(
                (key, matrix[i]) for i, key in enumerate(keys) if not stored.known(key)
            )
        return [
            ([found[keys[i]][0] for i in np.argsort(-row, kind="stable")[:fetch_k]], False)
            for row, fetch_k in zip(similarities, fetch_ks, strict=True)
        ]

    def stored_vectors(
        self, texts: Mapping[str, str], where: Mapping[str, Any] | None = None
    ) -> list[Any] | None:
        """The stored vectors (unit length: Qdrant normalises for cosine), read by id."""
        if not texts:
            return []
        found = self._retrieve(list(texts), self._where(where), vectors=True)
        if set(found) != set(texts) or any(
            found[key][0].page_content != text for key, text in texts.items()
        ):
            return None
        return [np.asarray(found[key][1], dtype=np.float32) for key in texts]

    def query_vector(self, text: str) -> list[float] | None:
        embeddings = self.store.embeddings
        return None if embeddings is None else embeddings.embed_query(text)

    def scored_search(
        self,
        text: str,
        k: int,
        where: Mapping[str, Any] | None = None,
        vector: Sequence[float] | None = None,
    ) -> list[ScoredDocument]:
        """The ``k`` nearest memories matching ``where``, scored by cosine similarity."""
        if vector is None:
            vector = self.query_vector(text)
        if vector is None:
            return super().scored_search(text, k, where)
        if where is not None and self.filtered_search_scans:
            # Local mode checks a filter point by point: when the k nearest of the
            # whole collection all match, they are the answer (as for Chroma).
            [nearest] = self._nearest_many([vector], [k], None)
            inside = where_predicate(where)
            if len(nearest) == k and all(inside(doc.metadata) for doc, _ in nearest):
                return nearest
        return self._nearest_many([vector], [k], where)[0]


def _seq(point: Any) -> int:
    return int((point.payload or {}).get(SEQ_KEY, 0))


def _ordered_points(pushed: Any) -> Any:
    """``pushed`` kept to the points that carry an insertion order (those cogito-lc wrote)."""
    from qdrant_client import models

    has_order = models.FieldCondition(key=SEQ_KEY, range=models.Range(gte=0))
    return models.Filter(must=[has_order, *([pushed] if pushed is not None else [])])


def _qdrant_adapter(store: VectorStore) -> StoreAdapter | None:
    return QdrantAdapter(store) if _is_cogito_qdrant(store) else None


register_adapter(_qdrant_adapter)
