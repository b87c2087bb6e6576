"""Corpus-wide BM25 (bm25s) for RecallB's lexical run.

Vector search misses memories that share a rare word with the query (a name,
an error code, a port number) but little meaning. RecallB therefore fuses one
BM25 run over the whole corpus, besides the BM25 run over its candidate pool.
:class:`Bm25Index` is that index; :class:`ChromaBm25Source` keeps one per
metadata filter for a Chroma store, rebuilt when the collection changes (checked
at most once a second; call ``RecallB.refresh_lexical_index()`` after a write
that must be searchable lexically at once), so a scoped retriever only ever sees
its own scope's documents.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import bm25s
import numpy as np
import numpy.typing as npt
from langchain_core.documents import Document

from cogito_lc._core.stores import ChromaAdapter
from cogito_lc.retrievers._fusion import document_key

__all__ = ["Bm25Index", "ChromaBm25Source", "LexicalHits"]


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


class Bm25Index:
    """An immutable BM25 index over a list of documents.

    Example:
        ```python
        from langchain_core.documents import Document

        from cogito_lc.retrievers import Bm25Index

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
        words = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
        if self._index is None or not words:
            return LexicalHits(self, np.zeros(len(self.documents), dtype=np.float32))
        return LexicalHits(self, np.asarray(self._index.get_scores(words), dtype=np.float32))

    def search(self, query: str, k: int) -> list[Document]:
        """The ``k`` best-scoring documents for ``query``; documents scoring 0 are left out."""
        return self.hits(query).top(k)


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
