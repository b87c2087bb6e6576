"""The FTS5 index's postings in memory, for ranking a whole-index search without SQL.

FTS5's ``bm25()`` is evaluated row by row in SQL: a query made of common
words costs about a microsecond per matching row (several milliseconds at
10,000 memories). :class:`Postings` holds the same postings (term, row, count)
and row lengths in memory and ranks with numpy, to the number ``bm25()`` gives
(the formula and constants of :mod:`~cogito_lc.stores._fts_ranking`).
:class:`PostingsMirror` keeps them current with the index file for its owner,
:class:`~cogito_lc.stores.SqliteLexicalIndex`: read from the ``docs`` table
in the background, then updated with the owner's writes row by row.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from cogito_lc.stores._fts_ranking import K1, B, fts5_idf

__all__ = ["Change", "Postings", "PostingsMirror", "Row"]

logger = logging.getLogger(__name__)

Row = tuple[int, str]
"""A row of the index: its rowid and its terms, separated by single spaces."""


class Postings:
    """Term postings and row lengths of a lexical index, updated row by row.

    Example:
        ```python
        from cogito_lc.stores._fts_postings import Postings

        postings = Postings([(1, "billing port 8083"), (2, "search latency budget")])
        assert [rowid for rowid, _ in postings.top(["port", "latency"], k=2)] in ([1, 2], [2, 1])
        postings.remove([(1, "billing port 8083")])
        assert [rowid for rowid, _ in postings.top(["port"], k=2)] == []
        ```
    """

    def __init__(self, rows: Iterable[Row] = ()) -> None:
        self._postings: dict[str, dict[int, int]] = {}
        self._lengths = np.zeros(1024, dtype=np.float64)
        self._held = np.zeros(1024, dtype=np.bool_)
        self.rows = 0
        """How many rows the postings hold."""
        self.tokens = 0
        """How many terms those rows hold in all."""
        self.add(rows)

    def add(self, rows: Iterable[Row]) -> None:
        """Add these rows (a rowid already held is replaced)."""
        for rowid, terms in rows:
            if self.holds(rowid):
                self._drop(rowid)
            tokens = terms.split()
            self._grow(rowid)
            self._lengths[rowid] = len(tokens)
            self._held[rowid] = True
            self.rows += 1
            self.tokens += len(tokens)
            for term in tokens:
                held = self._postings.get(term)
                if held is None:
                    self._postings[term] = {rowid: 1}
                else:
                    held[rowid] = held.get(rowid, 0) + 1

    def remove(self, rows: Iterable[Row]) -> None:
        """Remove these rows, given with the terms they were added with (absent ones skipped)."""
        for rowid, terms in rows:
            if self.holds(rowid):
                self._drop(rowid, terms)

    def holds(self, rowid: int) -> bool:
        """Whether the row with this rowid is held."""
        return 0 <= rowid < len(self._held) and bool(self._held[rowid])

    def _drop(self, rowid: int, terms: str | None = None) -> None:
        tokens = terms.split() if terms is not None else self._terms_of(rowid)
        self.rows -= 1
        self.tokens -= int(self._lengths[rowid])
        self._lengths[rowid] = 0.0
        self._held[rowid] = False
        for term in set(tokens):
            held = self._postings.get(term)
            if held is not None:
                held.pop(rowid, None)
                if not held:
                    del self._postings[term]

    def _terms_of(self, rowid: int) -> list[str]:
        return [term for term, held in self._postings.items() if rowid in held]

    def top(self, terms: Sequence[str], k: int) -> list[tuple[int, float]]:
        """The ``k`` best rows for these distinct ``terms``: rowid and score, best first.

        Rows of equal score come in rowid order; rows holding no term are left out.
        """
        rowids, weights = self._scored(terms)
        if not len(rowids) or k < 1:
            return []
        totals = np.bincount(rowids, weights=weights)
        held = np.flatnonzero(totals)
        scores = totals[held]
        if len(held) > k:
            kth = np.partition(-scores, k - 1)[k - 1]
            kept = -scores <= kth  # every row tied with the k-th, for the rowid order below
            held, scores = held[kept], scores[kept]
        order = np.lexsort((held, -scores))[:k]
        return [(int(held[i]), float(scores[i])) for i in order]

    def _scored(
        self, terms: Sequence[str]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """Every posting of ``terms``: its rowid and its part of the row's score."""
        average = self.tokens / self.rows if self.rows else 0.0
        rowid_parts, weight_parts = [], []
        for term in terms:
            held = self._postings.get(term)
            if not held:
                continue
            rowids = np.fromiter(held.keys(), dtype=np.int64, count=len(held))
            counts = np.fromiter(held.values(), dtype=np.float64, count=len(held))
            norm = K1 * (1 - B + B * self._lengths[rowids] / average) if average else K1
            idf = fts5_idf(self.rows, len(held))
            rowid_parts.append(rowids)
            weight_parts.append(idf * ((counts * (K1 + 1)) / (counts + norm)))
        if not rowid_parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        return np.concatenate(rowid_parts), np.concatenate(weight_parts)

    def _grow(self, rowid: int) -> None:
        if rowid >= len(self._lengths):
            size = max(rowid + 1, 2 * len(self._lengths))
            grown = size - len(self._lengths)
            self._lengths = np.concatenate([self._lengths, np.zeros(grown)])
            self._held = np.concatenate([self._held, np.zeros(grown, dtype=np.bool_)])


READ_CHUNK = 100
"""Rows a background read takes at a time (under a millisecond of work)."""
READ_PAUSE = 0.003
"""Seconds a background read pauses between chunks, leaving the interpreter to searches."""

Change = tuple[bool, list[Row]]
"""Rows a committed write added (True) or removed (False)."""


class PostingsMirror:
    """The postings of an index file, kept current with it.

    The owner calls every method while holding ``lock`` (the lock its writes
    hold for a whole transaction) and reports each committed write's row
    changes (:meth:`record`). :meth:`current` gives the postings when they are
    current with the file (no other connection has written since they were
    read). The first time, it reads them at once (:meth:`load`; a file the
    owner has just created starts empty, :meth:`start_empty`). After that, when
    another connection has written, it starts reading them again on a thread
    with a connection of its own, in paced chunks, at most once per ``spacing``
    times the last read's duration, and the owner ranks in SQL meanwhile. Such
    a read's snapshot starts while the owner holds the lock, so the writes
    committed after it are exactly those recorded while it runs: they are
    replayed on the read postings before they are used.
    """

    def __init__(
        self, path: Path, lock: threading.RLock, *, timeout: float, spacing: float
    ) -> None:
        self._path = path
        self._lock = lock
        self._timeout = timeout
        self._spacing = spacing
        self._postings: Postings | None = None
        self._version = -1
        self._reading: _Reading | None = None
        self._last_read = (float("-inf"), 0.0)
        self._read_once = False

    def current(self, conn: sqlite3.Connection) -> Postings | None:
        """The postings if current with the file, else None (and a read is started)."""
        version = _data_version(conn)
        if self._postings is not None and self._version == version:
            return self._postings
        if not self._read_once:
            return self.load(conn)
        read_at, seconds = self._last_read
        if self._reading is None and time.monotonic() - read_at >= self._spacing * seconds:
            self._start(version)
        return None

    def is_current(self, conn: sqlite3.Connection) -> bool:
        """Whether the postings are read and current with the file."""
        return self._postings is not None and self._version == _data_version(conn)

    def start_empty(self, conn: sqlite3.Connection) -> None:
        """Start from no postings if the file holds no rows (the owner just created it)."""
        if conn.execute("SELECT NOT EXISTS (SELECT 1 FROM docs)").fetchone()[0]:
            self._install(Postings(), _data_version(conn), 0.0)

    def replace(self, rows: Iterable[Row], conn: sqlite3.Connection) -> None:
        """Start from exactly these rows: the owner has just replaced the file's content."""
        self._reading = None
        self._install(Postings(rows), _data_version(conn), 0.0)

    def load(self, conn: sqlite3.Connection) -> Postings:
        """Read the postings now, in this thread, and use them from now on."""
        self._reading = None
        version = _data_version(conn)
        start = time.monotonic()
        postings = Postings(conn.execute("SELECT rowid, terms FROM docs"))
        self._install(postings, version, time.monotonic() - start)
        return postings

    def record(self, changes: Sequence[Change], conn: sqlite3.Connection) -> None:
        """Apply a committed write's row changes (and keep them for a read under way).

        Postings already behind another connection's write are dropped instead:
        they are read again at the next search.
        """
        if self._reading is not None:
            self._reading.replay.extend(changes)
        if self._postings is not None and self._version != _data_version(conn):
            self._postings = None
        if self._postings is not None:
            _apply(self._postings, changes)

    def drop(self) -> None:
        """Forget the postings and any read under way (the file was replaced or closed)."""
        self._postings = None
        self._reading = None

    def _start(self, version: int) -> None:
        reader = sqlite3.connect(self._path, timeout=self._timeout, check_same_thread=False)
        try:
            reader.execute("BEGIN")
            cursor = reader.execute("SELECT rowid, terms FROM docs")
            first = cursor.fetchmany(1)  # the read's snapshot starts here
        except sqlite3.Error as error:
            reader.close()
            logger.warning("lexical postings not read (%s); FTS5 ranks", error)
            self._last_read = (time.monotonic(), 1.0)
            return
        reading = _Reading(version)
        self._reading = reading
        thread = threading.Thread(
            target=self._read,
            args=(reader, cursor, first, reading),
            name="cogito-lexical-postings",
            daemon=True,
        )
        thread.start()

    def _read(
        self,
        reader: sqlite3.Connection,
        cursor: sqlite3.Cursor,
        first: list[Row],
        reading: _Reading,
    ) -> None:
        """Read the rows a few at a time, pausing between, so searches keep their pace."""
        start = time.monotonic()
        postings: Postings | None = None
        try:
            postings = Postings(first)
            while (rows := cursor.fetchmany(READ_CHUNK)) and self._reading is reading:
                postings.add(rows)
                time.sleep(READ_PAUSE)
        except sqlite3.Error as error:
            logger.warning("lexical postings not read (%s); FTS5 ranks", error)
        finally:
            reader.close()
            self._finish(reading, postings, time.monotonic() - start)

    def _finish(self, reading: _Reading, postings: Postings | None, seconds: float) -> None:
        with self._lock:
            if self._reading is not reading:
                return  # dropped meanwhile
            self._reading = None
            self._last_read = (time.monotonic(), seconds)
            if postings is not None:
                _apply(postings, reading.replay)
                self._install(postings, reading.version, seconds)

    def _install(self, postings: Postings, version: int, seconds: float) -> None:
        self._read_once = True
        self._postings = postings
        self._version = version
        self._last_read = (time.monotonic(), seconds)
        logger.debug("lexical postings read: %d rows in %.3f s", postings.rows, seconds)


class _Reading:
    """A read of the postings under way: the file's version then, and the writes since."""

    def __init__(self, version: int) -> None:
        self.version = version
        self.replay: list[Change] = []


def _apply(postings: Postings, changes: Iterable[Change]) -> None:
    for added, rows in changes:
        if added:
            postings.add(rows)
        else:
            postings.remove(rows)


def _data_version(conn: sqlite3.Connection) -> int:
    """A number that changes when another connection commits to the file."""
    return int(conn.execute("PRAGMA data_version").fetchone()[0])
