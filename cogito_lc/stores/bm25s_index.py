"""Corpus-wide BM25 (bm25s) for RecallB's lexical run.

Vector search misses memories that share a rare word with the query (a name,
an error code, a port number) but little meaning. RecallB therefore fuses one
BM25 run over the whole corpus, besides the BM25 run over its candidate pool.
:class:`Bm25Index` is an immutable bm25s index; :class:`Bm25LexicalIndex` is the
in-memory :class:`~cogito_lc.stores.LexicalIndex` over it (rebuilt once per
write batch, on the write path). :class:`ChromaBm25Source` keeps one index per
filter for a Chroma store, rebuilt when the collection changes: RecallB uses it
only for a ``where_document`` filter, which the lexical indexes do not take.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import bm25s
import numpy as np
import numpy.typing as npt
from langchain_core.documents import Document

from cogito_lc._core.filters import where_predicate
from cogito_lc._core.identity import document_key
from cogito_lc.stores.base import detached
from cogito_lc.stores.chroma import ChromaAdapter
from cogito_lc.stores.lexical_index import LexicalHit, lexical_terms

__all__ = ["Bm25Index", "Bm25LexicalIndex", "ChromaBm25Source", "LexicalHits"]


class LexicalHits:
    """BM25 scores of one query over an index: its top documents and any document's score."""

    def __init__(self, index: Bm25Index, scores: npt.NDArray[np.float32]) -> None:
        self._index = index
        self._scores = scores

    def top(self, k: int) -> list[Document]:
        """The ``k`` best-scoring documents; documents scoring 0 are left out."""
        if not len(self._scores):
            return []
        count = min(k, len(self._scores))
        top = np.argpartition(-self._scores, count - 1)[:count]
        top = top[np.argsort(-self._scores[top], kind="stable")]
        return [self._index.documents[i] for i in top if self._scores[i] > 0]

    def score(self, key: str) -> float:
        """The score of the document with this key (0.0 when it is not in the index)."""
        position = self._index.position(key)
        return 0.0 if position is None else float(self._scores[position])

    def scores(self, keys: Sequence[str]) -> dict[str, float]:
        """The score of each document with these keys (0.0 when not in the index)."""
        return {key: self.score(key) for key in keys}

    def ranked(self, k: int, mask: npt.NDArray[np.bool_] | None = None) -> list[LexicalHit]:
        """The ``k`` best documents with their scores, only where ``mask`` is true."""
        scores = self._scores if mask is None else np.where(mask, self._scores, 0.0)
        if not len(scores):
            return []
        count = min(k, len(scores))
        top = np.argpartition(-scores, count - 1)[:count]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(self._index.documents[i], float(scores[i])) for i in top if scores[i] > 0]


class Bm25Index:
    """An immutable BM25 index over a list of documents.

    Example:
        ```python
        from langchain_core.documents import Document

        from cogito_lc.stores import Bm25Index

        index = Bm25Index([Document(page_content="billing runs on port 8083", id="m1")])
        assert [d.id for d in index.search("which port does billing use", k=3)] == ["m1"]
        ```
    """

    def __init__(self, documents: Sequence[Document]) -> None:
        self.documents = list(documents)
        self._positions = {document_key(d): i for i, d in enumerate(self.documents)}
        self._index: bm25s.BM25 | None = None
        if self.documents:
            tokens = bm25s.tokenize(
                [d.page_content for d in self.documents], stopwords="en", show_progress=False
            )
            if tokens.vocab:  # no indexable word at all (e.g. only "a" or "0"): every score is 0
                self._index = bm25s.BM25()
                self._index.index(tokens, show_progress=False)

    def __len__(self) -> int:
        return len(self.documents)

    def position(self, key: str) -> int | None:
        """Where the document with this key sits in :attr:`documents`, or None."""
        return self._positions.get(key)

    def hits(self, query: str) -> LexicalHits:
        """Score every indexed document against ``query``."""
        words = lexical_terms(query)
        if self._index is None or not words:
            return LexicalHits(self, np.zeros(len(self.documents), dtype=np.float32))
        return LexicalHits(self, np.asarray(self._index.get_scores(words), dtype=np.float32))

    def search(self, query: str, k: int) -> list[Document]:
        """The ``k`` best-scoring documents for ``query``; documents scoring 0 are left out."""
        return self.hits(query).top(k)


class Bm25LexicalIndex:
    """An in-memory :class:`~cogito_lc.stores.LexicalIndex` over bm25s.

    For vector stores that keep nothing on disk (an ``InMemoryVectorStore``, a
    Chroma store without a persist directory). Each write (one batch of
    documents) rebuilds the bm25s index once, on the write path; searches only
    read it. A ``where`` filter is applied to the scores (the statistics are
    those of the whole index).

    Example:
        ```python
        from langchain_core.documents import Document

        from cogito_lc.stores import Bm25LexicalIndex

        index = Bm25LexicalIndex()
        index.upsert([Document(page_content="billing runs on port 8083", id="m1")])
        assert [d.id for d, _ in index.search("port 8083", k=3)] == ["m1"]
        ```
    """

    def __init__(self, documents: Iterable[Document] = ()) -> None:
        self._documents: dict[str, Document] = {}
        self._lock = threading.Lock()
        self._index = Bm25Index([])
        self._masks: dict[Any, npt.NDArray[np.bool_]] = {}
        self._last: tuple[Bm25Index, str, LexicalHits] | None = None
        self.reindex(documents)

    def _rebuild(self) -> None:
        index = Bm25Index(list(self._documents.values()))
        self._index, self._masks = index, {}

    def upsert(self, documents: Sequence[Document]) -> None:
        """Add copies of these documents (replacing same ids) and rebuild the index once.

        Copies: the writer hands the same documents back to its caller, whose
        edits must not change what the index filters by.
        """
        if not documents:
            return
        with self._lock:
            self._documents.update({doc.id: doc for doc in detached(documents) if doc.id})
            self._rebuild()

    def delete(self, ids: Sequence[str]) -> None:
        """Remove these documents and rebuild the index once (if any was held)."""
        with self._lock:
            removed = [self._documents.pop(i, None) for i in ids]
            if any(doc is not None for doc in removed):
                self._rebuild()

    def reindex(self, documents: Iterable[Document]) -> None:
        """Replace the whole content of the index."""
        with self._lock:
            self._documents = {doc.id: doc for doc in documents if doc.id}
            self._rebuild()

    def mark_pending(self, ids: Sequence[str]) -> None:
        """Nothing to record: an in-memory index does not outlive a crash."""

    def pending(self) -> set[str]:
        """Always empty (see :meth:`mark_pending`)."""
        return set()

    def search(
        self,
        query: str,
        k: int,
        where: Mapping[str, Any] | Callable[[Document], bool] | None = None,
    ) -> list[LexicalHit]:
        """The ``k`` best documents for ``query`` matching ``where``, best first.

        ``where`` may also be a function of the Document (the filter form of an
        ``InMemoryVectorStore``).
        """
        index, masks = self._index, self._masks
        mask = None
        if where:
            key: Any = where if callable(where) else json.dumps(where, sort_keys=True, default=str)
            mask = masks.get(key)
            if mask is None:
                mask = _mask(index.documents, where)
                masks[key] = mask
        return self._hits(index, query).ranked(k, mask)

    def scores(
        self, query: str, ids: Sequence[str], where: Mapping[str, Any] | None = None
    ) -> dict[str, float]:
        """The score of each of these documents for ``query`` (0.0 when it shares no word).

        ``where`` is accepted for the protocol; the statistics are the whole index's.
        """
        return self._hits(self._index, query).scores(ids)

    def _hits(self, index: Bm25Index, query: str) -> LexicalHits:
        """``query``'s scores over ``index``, kept for the next call (a recall asks twice)."""
        last = self._last
        if last is not None and last[0] is index and last[1] == query:
            return last[2]
        hits = index.hits(query)
        self._last = (index, query, hits)
        return hits

    def count(self, where: Mapping[str, Any] | None = None) -> int:
        """How many documents matching ``where`` the index holds."""
        documents = list(self._index.documents)
        if not where:
            return len(documents)
        matches = where_predicate(where)
        return sum(1 for d in documents if matches(d.metadata))

    def ids(self) -> set[str]:
        """The ids of every document the index holds."""
        return {document_key(d) for d in self._index.documents}


def _mask(
    documents: Sequence[Document], where: Mapping[str, Any] | Callable[[Document], bool]
) -> npt.NDArray[np.bool_]:
    if callable(where):
        return np.fromiter((bool(where(d)) for d in documents), bool, len(documents))
    matches = where_predicate(where)
    return np.fromiter((matches(d.metadata) for d in documents), bool, len(documents))


class ChromaBm25Source:
    """BM25 indexes over a Chroma store, one per metadata filter, kept fresh.

    An index is rebuilt when the collection's document count has changed,
    checked at most once per ``refresh_interval`` seconds, or after
    :meth:`invalidate`. At most ``max_indexes`` filters are kept (least
    recently used dropped first).
    """

    def __init__(
        self, store: ChromaAdapter, *, max_indexes: int = 16, refresh_interval: float = 1.0
    ) -> None:
        self._store = store
        self._max_indexes = max_indexes
        self._refresh_interval = refresh_interval
        self._indexes: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def invalidate(self) -> None:
        """Drop every index; the next search rebuilds from the collection."""
        with self._lock:
            self._indexes.clear()

    def index_for(
        self, where: dict[str, Any] | None = None, where_document: dict[str, Any] | None = None
    ) -> Bm25Index:
        """The current index of the documents matching ``where`` and ``where_document``."""
        return self._entry(where, where_document).index

    def covers_all(
        self, where: dict[str, Any] | None = None, where_document: dict[str, Any] | None = None
    ) -> bool:
        """Whether the filter matched every document of the collection at the last check."""
        entry = self._entry(where, where_document)
        return entry.count == len(entry.index)

    def _entry(self, where: dict[str, Any] | None, where_document: dict[str, Any] | None) -> _Entry:
        key = json.dumps([where, where_document], sort_keys=True, default=str)
        with self._lock:
            entry = self._indexes.get(key)
        now = time.monotonic()
        if entry is not None and now - entry.checked_at < self._refresh_interval:
            return entry
        count = self._store.count()
        if entry is None or entry.count != count:
            entry = _Entry(count, Bm25Index(self._store.documents(where, where_document)), now)
        entry.checked_at = now
        with self._lock:
            self._indexes[key] = entry
            self._indexes.move_to_end(key)
            while len(self._indexes) > self._max_indexes:
                self._indexes.popitem(last=False)
        return entry


@dataclass
class _Entry:
    count: int
    index: Bm25Index
    checked_at: float
