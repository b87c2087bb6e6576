"""The adapter of ``langchain_chroma.Chroma``, embedded or a Chroma server.

Every operation is pushed down to the Chroma collection as a ``where`` filter:
batched searches, pages, counts, stored vectors, cosine-scored search and the
search-index repair. Every access to ``langchain_chroma.Chroma`` internals (its
collection and client) is here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.documents import Document

from cogito_lc._core.blas import one_blas_thread
from cogito_lc._core.filters import where_predicate
from cogito_lc.stores._dimension import StoredVector, checked_embeddings
from cogito_lc.stores.base import (
    BatchedSearchAdapter,
    Run,
    ScoredDocument,
    StoredVectors,
    Vector,
    cosine_scores,
    finite_score,
    unit_rows,
)

__all__ = ["ChromaAdapter", "with_fitting_model"]

_SAME_VECTOR = 1e-5
"""A search distance this small means an exact duplicate of the query vector."""
_WIDE_CHECK = 100
"""Neighbours a second search asks for before calling a row unreachable."""
_METADATA_PAGE = 5_000
"""Rows one read of metadata only (scope counts) takes."""


class ChromaAdapter(BatchedSearchAdapter):
    """A ``langchain_chroma.Chroma`` store: every operation pushed down to its collection."""

    reads_by_id = True
    checks_by_id = True
    searches_within = True
    filtered_search_scans = True

    @property
    def collection(self) -> Any:
        """The chromadb collection behind the store."""
        return self.store._collection  # type: ignore[attr-defined]

    # -- reads and deletes ------------------------------------------------------

    def refused_input(self, error: Exception) -> bool:
        """Whether Chroma refused the input (its ``InvalidArgumentError`` too), writing nothing."""
        from chromadb.errors import InvalidArgumentError

        return super().refused_input(error) or isinstance(error, InvalidArgumentError)

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

    def _metadatas(self, where: Mapping[str, Any] | None) -> Iterable[Mapping[str, Any]]:
        """The metadata of the matching rows, read page by page without their text."""
        offset = 0
        while True:
            raw = self.collection.get(
                where=where, limit=_METADATA_PAGE, offset=offset, include=["metadatas"]
            )
            yield from (meta or {} for meta in raw["metadatas"] or [])
            if len(raw["ids"]) < _METADATA_PAGE:
                return
            offset += _METADATA_PAGE

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

    def delete(self, ids: list[str], where: Mapping[str, Any] | None = None) -> None:
        if ids:
            self.collection.delete(ids=ids, where=where)

    def set_metadata(
        self, updates: Mapping[str, Mapping[str, Any]], where: Mapping[str, Any] | None = None
    ) -> list[Document]:
        """Set the keys in place (``collection.update``): no re-embedding, text untouched."""
        documents = self._merged(updates, where)
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

    def stored_vectors(
        self, texts: Mapping[str, str], where: Mapping[str, Any] | None = None
    ) -> list[Any] | None:
        """The vectors read by id; ``where`` adds nothing here (one collection, no shards)."""
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
        if vector is None:
            vector = self.query_vector(text)
        if vector is None:
            return super().scored_search(text, k, where)
        rows = self._nearest(list(vector), k, where)
        if not len(rows["ids"]):
            return []
        cosines = cosine_scores(
            np.asarray(vector, dtype=np.float32), np.asarray(rows["embeddings"], dtype=np.float32)
        )
        return [
            (
                Document(page_content=text, metadata=dict(meta or {}), id=doc_id),
                finite_score(cosine),
            )
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
            found.update(self._not_found(rows, min(k, total), total))
        return found

    def reindex(self, vectors: Mapping[str, Any], *, k: int = 3) -> list[str]:
        """Write these rows' vectors to the index again (text and metadata untouched).

        Returns:
            The ids a search for their own vector still does not find.
        """
        if not vectors:
            return []
        self.collection.update(ids=list(vectors), embeddings=list(vectors.values()))
        total = int(self.collection.count())
        return list(self._not_found(vectors, min(k, total), total))

    def _not_found(self, rows: Mapping[str, Any], k: int, total: int) -> dict[str, Any]:
        """The rows a search for their own vector misses, at ``k`` and again much wider.

        A near duplicate (not an exact one) can hide a row from a narrow
        approximate search; a row the wide search still misses is unreachable.
        ``total``: the rows in the collection (counting a million takes seconds).
        """
        missed = self._missed_at(rows, k)
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
    with one_blas_thread():
        return _products(queries, matrix, space)


def _products(queries: Vector, matrix: Vector, space: str) -> Vector:
    if space == "cosine":
        distances: Vector = 1.0 - unit_rows(queries) @ unit_rows(matrix).T
    elif space == "ip":
        distances = 1.0 - queries @ matrix.T
    else:
        distances = (queries**2).sum(axis=1)[:, None] - 2 * queries @ matrix.T
        distances += (matrix**2).sum(axis=1)
    return distances.astype(np.float32)


def _documents(raw: Any) -> list[Document]:
    return [
        Document(page_content=text, metadata=dict(meta or {}), id=doc_id)
        for doc_id, text, meta in zip(raw["ids"], raw["documents"], raw["metadatas"], strict=True)
        if text is not None
    ]


def with_fitting_model(store: Any, embeddings: Any, holder: str) -> Any:
    """``store`` (a ``Chroma``), using ``embeddings`` checked against its stored vectors.

    The model must give vectors of their size, and embed a stored memory's text
    as it was embedded. A collection holding no vector yet takes any model.
    Embeddings built on their first use are checked then (see
    :func:`~cogito_lc.stores._dimension.checked_embeddings`).

    Raises:
        ValueError: If the collection holds vectors of another size than the model's,
            or made by another model.
    """
    held = store._collection.get(limit=1, include=["embeddings", "documents"])
    vectors = held["embeddings"]
    if vectors is None or len(vectors) == 0:
        return store
    vector = [float(x) for x in vectors[0]]
    sample = StoredVector((held["documents"] or [None])[0] or "", vector)
    store._embedding_function = checked_embeddings(embeddings, len(vector), holder, sample)
    return store
