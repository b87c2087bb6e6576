"""LexicalSync: a lexical index kept in step with its vector store."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore

from cogito_lc._core.filters import equality_predicate
from cogito_lc.stores.adapters import adapter_for
from cogito_lc.stores.base import StoreAdapter, Vector
from cogito_lc.stores.bm25s_index import Bm25LexicalIndex
from cogito_lc.stores.chroma import ChromaAdapter
from cogito_lc.stores.in_memory import InMemoryAdapter
from cogito_lc.stores.lexical_index import LexicalHit, LexicalIndex
from cogito_lc.stores.postgres import PostgresAdapter
from cogito_lc.stores.postgres_lexical import PostgresLexicalIndex
from cogito_lc.stores.qdrant import QdrantAdapter
from cogito_lc.stores.sqlite_fts import SqliteLexicalIndex, is_corruption

__all__ = ["LexicalSync", "lexical_index_path", "lexical_sync_for"]

logger = logging.getLogger(__name__)

_PAGE = 5_000
_ANSWERS_KEPT = 64
_FOLLOWED = (ChromaAdapter, InMemoryAdapter, PostgresAdapter, QdrantAdapter)
_T = TypeVar("_T")


class LexicalSync:
    """A lexical index and the vector store it mirrors, kept consistent.

    Writers (:class:`~cogito_lc.MemoryStore`) call :meth:`mark_pending` before
    the vector-store write and :meth:`upsert` or :meth:`delete` after it, so the
    lexical index changes in the same call and a crash between the two writes
    leaves the touched ids recorded (in a durable index). Readers
    (:class:`~cogito_lc.RecallB`) call :meth:`search` and :meth:`scores`.

    Before the first read, interrupted writes are re-synced from the vector
    store and an index that was missing or unreadable is rebuilt from it. After
    that, at most once per ``check_interval`` seconds the document counts of
    the two are compared, on a thread of its own so that no read waits for it;
    when they differ (a write made to the vector store
    directly, or by a process that died mid-write), the ids are compared and the
    index reconciled, with a warning logged. A change of text under an existing
    id made outside MemoryStore keeps the count: :meth:`reindex` rebuilds all.

    Example:
        ```python
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_core.vectorstores import InMemoryVectorStore

        from cogito_lc.stores import LexicalSync

        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
        store.add_texts(["billing runs on port 8083"], ids=["m1"])  # outside any sync
        sync = LexicalSync(store)
        assert [d.id for d, _ in sync.search("port 8083", k=3)] == ["m1"]
        ```
    """

    def __init__(
        self,
        store: VectorStore,
        index: LexicalIndex | None = None,
        *,
        check_interval: float = 1.0,
    ) -> None:
        self.adapter: StoreAdapter = adapter_for(store)
        if not isinstance(self.adapter, _FOLLOWED):
            msg = (
                f"LexicalSync needs a store it can list and count ({type(store).__name__} "
                "is not one); pass RecallB(lexical_index=...) an index you keep yourself."
            )
            raise TypeError(msg)
        self.index: LexicalIndex = index if index is not None else _default_index(self.adapter)
        self.check_interval = check_interval
        self._lock = threading.RLock()
        self._started = False
        self._checked_at = float("-inf")
        self._due_now = False
        self._checking = threading.Lock()
        """Held while a periodic check runs on its thread."""
        self._version = 0
        self._underway: set[str] = set()
        """Ids marked pending by this process whose index write has not come yet."""
        self._answers: dict[tuple[Any, ...], tuple[int, Any]] = {}

    @property
    def version(self) -> int:
        """How many writes reached the index through this object (it only grows)."""
        return self._version

    def written_since(self, version: int, ids: Sequence[str]) -> bool:
        """Whether a write reached the index since ``version``, or one of ``ids`` is under way.

        An id under way is marked pending: its vector-store write or delete has begun.
        """
        if self._version != version or not self._underway.isdisjoint(ids):
            return True
        return not self.index.pending().isdisjoint(ids)

    # -- writes -------------------------------------------------------------------

    def mark_pending(self, ids: Sequence[str]) -> None:
        """Record the ids a vector-store write is about to touch (before it)."""
        self._underway.update(ids)
        self._guarded(lambda: self.index.mark_pending(ids))

    def upsert(self, documents: Sequence[Document]) -> None:
        """Add or replace these documents in the index (after the vector-store write)."""
        self._guarded(lambda: self.index.upsert(documents))
        self._written([doc.id for doc in documents if doc.id is not None])

    def delete(self, ids: Sequence[str]) -> None:
        """Remove these documents from the index (after the vector-store delete)."""
        self._guarded(lambda: self.index.delete(ids))
        self._written(ids)

    def _written(self, ids: Sequence[str]) -> None:
        self._version += 1  # first: a reader never sees neither the new version nor the ids
        self._underway.difference_update(ids)

    def reindex(self) -> int:
        """Rebuild the whole index from the vector store; returns how many documents it holds."""
        with self._lock:
            self.index.reindex(self._all_documents())
            self._version += 1
            self._started = True
            self._checked_at = time.monotonic()
            return self.index.count()

    def check_now(self) -> None:
        """Compare the index with the vector store on the next read (after direct writes)."""
        self._due_now = True

    # -- reads --------------------------------------------------------------------

    def search(self, query: str, k: int, where: Any = None) -> list[LexicalHit]:
        """The ``k`` best documents for ``query`` matching ``where``, best first.

        ``where`` is a Chroma-style filter, or the store's own filter form
        (a function of the Document for an ``InMemoryVectorStore``).
        """
        self.ensure_current()
        predicate = equality_predicate(where)
        mirrors = getattr(self.index, "mirrors_store", False)  # SQL filters cost nothing more
        if predicate is not None and not mirrors and self.covers_all(where):
            # Every document matched the scope at the last check: search unfiltered
            # (cheaper) and check the scope here, so a later write elsewhere never leaks.
            hits = self._guarded(lambda: self.index.search(query, k, None))
            return [hit for hit in hits if predicate(hit[0].metadata)]
        return self._guarded(lambda: self.index.search(query, k, where))

    def search_with_vectors(
        self, query: str, k: int, where: Any = None
    ) -> tuple[list[LexicalHit], dict[str, Vector]]:
        """:meth:`search`, and each hit's stored vector by id.

        The vectors come where the index reads them in the same statement (a
        Postgres table); none otherwise.
        """
        index = self.index
        if not isinstance(index, PostgresLexicalIndex):
            return self.search(query, k, where), {}
        self.ensure_current()
        return self._guarded(lambda: index.search_with_vectors(query, k, where))

    def scores(self, query: str, ids: Sequence[str], where: Any = None) -> dict[str, float]:
        """The score of each of these documents for ``query``, in ``where``'s corpus."""
        return self._guarded(lambda: self.index.scores(query, ids, where))

    def covers_all(self, where: Mapping[str, Any] | None) -> bool:
        """Whether ``where`` matches every document of the index (cached until a write)."""
        self.ensure_current()
        if not where:
            return True
        if getattr(self.index, "mirrors_store", False):
            return self._covers_all(where)  # other replicas write too: never cached
        key = ("covers", repr(sorted(where.items())))
        return bool(self._until_write(key, lambda: self._covers_all(where)))

    def ids_within(self, where: Mapping[str, Any], limit: int) -> list[str] | None:
        """The ids of the documents matching ``where`` when at most ``limit`` do, else None.

        Cached until a write; None when the index cannot list a filter's ids.
        """
        self.ensure_current()
        listing = getattr(self.index, "ids_within", None)
        if listing is None or getattr(self.index, "mirrors_store", False):
            return None
        key = ("within", repr(sorted(where.items())), limit)
        ids: list[str] | None = self._until_write(key, lambda: listing(where, limit))
        return ids

    def _until_write(self, key: tuple[Any, ...], compute: Callable[[], _T]) -> _T:
        """``compute()``, remembered under ``key`` until the next write (a bounded number)."""
        version = self._version  # before computing: a write meanwhile outdates the answer
        cached = self._answers.get(key)
        if cached is not None and cached[0] == version:
            answer: _T = cached[1]
            return answer
        answer = self._guarded(compute)
        if len(self._answers) >= _ANSWERS_KEPT:
            self._answers.clear()
        self._answers[key] = (version, answer)
        return answer

    def _covers_all(self, where: Mapping[str, Any]) -> bool:
        quick = getattr(self.index, "covers_all", None)
        answer = quick(where) if quick is not None else None
        if answer is not None:
            return bool(answer)
        return self.index.count(where) == self.index.count()

    # -- consistency ----------------------------------------------------------------

    def warm_up(self) -> None:
        """Start up now and read what the index ranks from in memory, before the first search.

        A :class:`~cogito_lc.stores.SqliteLexicalIndex` reads its postings
        (about 80 ms per 10,000 memories) that the first search would read otherwise.
        """
        self.ensure_current()
        load = getattr(self.index, "load_postings", None)
        if load is not None:
            self._guarded(load)

    def ensure_current(self) -> None:
        """Start up (recover, rebuild) once, then check the counts at most once per interval.

        After start-up the periodic check runs on a thread of its own, so a read never
        waits for it (counting a million memories takes about 2 s on Chroma); a
        ``check_interval`` of 0 or :meth:`check_now` makes the next read check first.
        """
        if getattr(self.index, "mirrors_store", False):
            return  # the index is the store's own table (Postgres): always in step
        if self._started and not self._due_now and self.check_interval > 0:
            if time.monotonic() - self._checked_at >= self.check_interval:
                self._check_in_background()
            return
        with self._lock:
            if not self._started:
                self._start()
            elif self._due_now or time.monotonic() - self._checked_at >= self.check_interval:
                self._due_now = False
                self.reconcile()

    def _check_in_background(self) -> None:
        """Start a check unless one runs (never waiting, even for a reconcile under way)."""
        if not self._checking.acquire(blocking=False):
            return
        self._checked_at = time.monotonic()
        threading.Thread(
            target=self._background_check, name="cogito-lexical-check", daemon=True
        ).start()

    def _background_check(self) -> None:
        """Reconcile when the counts differ; a failure is logged and retried at the next check."""
        try:
            if self.adapter.count() != self._guarded(self.index.count):
                self.reconcile()
        except Exception:
            logger.exception("lexical index: the periodic count check failed")
        finally:
            self._checking.release()

    def _start(self) -> None:
        reason = getattr(self.index, "rebuild_reason", None)
        stored = self.adapter.count()
        if reason and stored:
            logger.warning(
                "lexical index %s is %s: building it from the %d memories in the vector store",
                getattr(self.index, "path", type(self.index).__name__),
                "not there yet" if reason == "missing" else "unreadable (moved aside)",
                stored,
            )
            self.reindex()
            return
        if (
            stored
            and not reason
            and self._guarded(self.index.count) == 0
            and not (self._guarded(self.index.pending))
        ):
            logger.info("lexical index: building it from the %d memories in the store", stored)
            self.reindex()
            return
        self._recover_pending()
        self._started = True
        self.reconcile()

    def _recover_pending(self) -> None:
        pending = sorted(self._guarded(self.index.pending))
        if not pending:
            return
        present = self.adapter.get(pending)
        gone = sorted(set(pending) - {doc.id for doc in present})
        self._guarded(lambda: self.index.upsert(present))
        self._guarded(lambda: self.index.delete(gone))
        self._version += 1
        logger.warning(
            "lexical index: %d writes were interrupted before reaching it; re-synced from the "
            "vector store (%d present, %d deleted)",
            len(pending),
            len(present),
            len(gone),
        )

    def reconcile(self) -> tuple[int, int]:
        """Make the index hold exactly the vector store's ids when the counts differ.

        Returns:
            How many documents were added to and removed from the index.
        """
        with self._lock:
            self._checked_at = time.monotonic()
            if self.adapter.count() == self._guarded(self.index.count):
                return 0, 0
            stored = set(self.adapter.ids_in(None))
            held = self._guarded(self.index.ids)
            missing = sorted(stored - held)
            extra = set(held - stored)
            added = self._copy(missing)
            if extra:  # re-read: a concurrent writer may have added them since
                extra -= {doc.id for doc in self.adapter.get(sorted(extra))}
                self._guarded(lambda: self.index.delete(sorted(extra)))
            self._version += 1
            if added or extra:  # equal ids: the counts differed by writes in progress
                logger.warning(
                    "lexical index out of step with the vector store (written outside "
                    "MemoryStore, or a write was interrupted): added %d, removed %d",
                    added,
                    len(extra),
                )
            return added, len(extra)

    def _copy(self, ids: Sequence[str]) -> int:
        copied = 0
        for start in range(0, len(ids), _PAGE):
            documents = self.adapter.get(list(ids[start : start + _PAGE]))
            self._guarded(partial(self.index.upsert, documents))
            copied += len(documents)
        return copied

    def _all_documents(self) -> Iterator[Document]:
        offset = 0
        while True:
            page = self.adapter.page(None, _PAGE, offset)
            yield from page
            if len(page) < _PAGE:
                return
            offset += _PAGE

    def _guarded(self, action: Callable[[], _T]) -> _T:
        """Run ``action`` on the index; a corrupt database is moved aside and rebuilt once."""
        try:
            return action()
        except sqlite3.DatabaseError as error:
            index = self.index
            if not isinstance(index, SqliteLexicalIndex) or not is_corruption(error):
                raise
            with self._lock:
                index.reset(error)
                self.reindex()
            return action()


def _default_index(adapter: StoreAdapter) -> LexicalIndex:
    if isinstance(adapter, PostgresAdapter):
        return PostgresLexicalIndex(adapter)
    path = lexical_index_path(adapter)
    return Bm25LexicalIndex() if path is None else SqliteLexicalIndex(path)


def lexical_index_path(adapter: StoreAdapter) -> Path | None:
    """Where the lexical index of a persistent Chroma or local Qdrant collection lives, or None.

    One file per collection in the persist directory:
    ``cogito-lexical-<collection>.sqlite3``.
    """
    if isinstance(adapter, ChromaAdapter):
        name = adapter.collection.name
    elif isinstance(adapter, QdrantAdapter):
        name = adapter.collection
    else:
        return None
    directory = adapter.persist_directory()
    if directory is None:
        return None
    return directory / f"cogito-lexical-{name}.sqlite3"


_SYNCS: weakref.WeakKeyDictionary[VectorStore, LexicalSync] = weakref.WeakKeyDictionary()
_SYNCS_LOCK = threading.Lock()


def lexical_sync_for(store: VectorStore) -> LexicalSync | None:
    """The one :class:`LexicalSync` of ``store`` in this process (None if it cannot have one).

    Every RecallB and MemoryStore over the same store object shares it, so a
    write through one is searchable by all at once. A persistent Chroma store
    gets a :class:`~cogito_lc.stores.SqliteLexicalIndex` in its persist
    directory; a Postgres store made by ``MemoryStore.from_database_url`` gets a
    :class:`~cogito_lc.stores.PostgresLexicalIndex`; a Qdrant store made by
    :func:`~cogito_lc.stores.qdrant.open_qdrant_store` gets the SQLite index in
    its local directory; a Chroma or Qdrant store without one and an ``InMemoryVectorStore`` get a
    :class:`~cogito_lc.stores.Bm25LexicalIndex`; other stores get None.
    """
    with _SYNCS_LOCK:
        try:
            found = _SYNCS.get(store)
        except TypeError:  # not hashable or not weak-referenceable
            return None
        if found is not None:
            return found
        if not isinstance(adapter_for(store), _FOLLOWED):
            return None
        sync = LexicalSync(store)
        _SYNCS[store] = sync
        return sync
