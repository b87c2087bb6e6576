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
from array import array
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from cogito_lc.stores._fts_ranking import K1, B, fts5_idf

__all__ = ["Change", "Postings", "PostingsMirror", "Row"]

logger = logging.getLogger(__name__)

_Ints = npt.NDArray[np.int64]

FOLD_AT = 65_536
"""The least recently added postings that are folded into the arrays."""

Row = tuple[int, str]
"""A row of the index: its rowid and its terms, separated by single spaces."""


class Postings:
    """Term postings and row lengths of a lexical index, updated row by row.

    Postings are held compactly: the bulk in arrays, grouped by term (4-byte
    rowids and counts, about 8 bytes a posting), and the rows added since the
    arrays were last built in a small mapping, folded into the arrays once it
    holds a sixteenth as many postings (or when removed rows leave a quarter of
    the arrays dead). About 31 MB per 100,000 memories of LoCoMo-sized text,
    term table included, where one Python mapping per term took 113 MB.

    Example:
        ```python
        from cogito_lc.stores._fts_postings import Postings

        postings = Postings([(1, "billing port 8083"), (2, "search latency budget")])
        assert [rowid for rowid, _ in postings.top(["port", "latency"], k=2)] in ([1, 2], [2, 1])
        postings.remove([(1, "billing port 8083")])
        assert [rowid for rowid, _ in postings.top(["port"], k=2)] == []
        ```
    """

    def __init__(self, rows: Iterable[Row] = (), *, fold_at: int = FOLD_AT) -> None:
        """Hold ``rows``; ``fold_at``: the least added postings worth a rebuild of the arrays."""
        self._fold_at = fold_at
        self._terms: dict[str, int] = {}
        self._starts = np.zeros(1, dtype=np.int64)
        self._rowids = np.zeros(0, dtype=np.int32)
        self._counts = np.zeros(0, dtype=np.int32)
        self._dead = np.zeros(1024, dtype=np.bool_)
        self._dead_postings = 0
        """Postings of removed rows still in the arrays (at most; counted by row length)."""
        self._recent: dict[str, dict[int, int]] = {}
        self._recent_rows: dict[int, str] = {}
        self._recent_postings = 0
        self._lengths = np.zeros(1024, dtype=np.float64)
        self._held = np.zeros(1024, dtype=np.bool_)
        self.rows = 0
        """How many rows the postings hold."""
        self.tokens = 0
        """How many terms those rows hold in all."""
        self._add_in_bulk(rows)

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (the term table and recent rows not counted)."""
        arrays = (self._starts, self._rowids, self._counts, self._dead, self._lengths, self._held)
        return sum(array.nbytes for array in arrays)

    def add(self, rows: Iterable[Row]) -> None:
        """Add these rows (a rowid already held is replaced)."""
        for rowid, terms in rows:
            if self.holds(rowid):
                self._drop(rowid)
            self._recent_rows[rowid] = terms
            for term in self._count_in(rowid, terms):
                held = self._recent.setdefault(term, {})
                self._recent_postings += rowid not in held
                held[rowid] = held.get(rowid, 0) + 1
        if self._recent_postings >= max(self._fold_at, len(self._rowids) // 16):
            self._fold()

    def _count_in(self, rowid: int, terms: str) -> list[str]:
        """Hold the row's length and count it; its terms."""
        tokens = terms.split()
        self._grow(rowid)
        self._lengths[rowid] = len(tokens)
        self._held[rowid] = True
        self.rows += 1
        self.tokens += len(tokens)
        return tokens

    def _add_in_bulk(self, rows: Iterable[Row]) -> None:
        """Add rows straight into the arrays, one rebuild for them all."""
        term_ids: array[int] = array("q")
        rowids: array[int] = array("q")
        terms_index = self._terms
        for rowid, terms in rows:
            if self.holds(rowid):  # a replacement: the rows before it go in first
                self._fold_in(term_ids, rowids)
                term_ids, rowids = array("q"), array("q")
                self.add([(rowid, terms)])
                continue
            tokens = self._count_in(rowid, terms)
            term_ids.extend([terms_index.setdefault(term, len(terms_index)) for term in tokens])
            rowids.extend([rowid] * len(tokens))
        self._fold_in(term_ids, rowids)

    def _fold_in(self, term_ids: array[int], rowids: array[int]) -> None:
        """Rebuild the arrays with these postings (one per term occurrence) added."""
        if not rowids:
            return
        width = len(self._held)
        keys = np.frombuffer(term_ids, np.int64) * width + np.frombuffer(rowids, np.int64)
        unique, counts = np.unique(keys, return_counts=True)
        self._fold((unique // width, unique % width, counts.astype(np.int64)))

    def remove(self, rows: Iterable[Row]) -> None:
        """Remove these rows, given with the terms they were added with (absent ones skipped)."""
        for rowid, _terms in rows:
            if self.holds(rowid):
                self._drop(rowid)
        if self._dead_postings > max(self._fold_at, len(self._rowids) // 4):
            self._fold()

    def holds(self, rowid: int) -> bool:
        """Whether the row with this rowid is held."""
        return 0 <= rowid < len(self._held) and bool(self._held[rowid])

    def _drop(self, rowid: int) -> None:
        length = int(self._lengths[rowid])
        self.rows -= 1
        self.tokens -= length
        self._lengths[rowid] = 0.0
        self._held[rowid] = False
        terms = self._recent_rows.pop(rowid, None)
        if terms is None:  # in the arrays: its postings there are skipped until the next fold
            self._dead[rowid] = True
            self._dead_postings += max(length, 1)
            return
        for term in set(terms.split()):
            held = self._recent[term]
            self._recent_postings -= held.pop(rowid, None) is not None
            if not held:
                del self._recent[term]

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

    def document_frequency(self, terms: Sequence[str]) -> dict[str, int]:
        """How many rows hold each of ``terms`` (a term no row holds is left out).

        The numbers FTS5's ``fts5vocab`` table gives, without reading the term's
        postings from the file.
        """
        held = {term: len(self._postings_of(term)[0]) for term in terms}
        return {term: rows for term, rows in held.items() if rows}

    def _postings_of(self, term: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """The live postings of ``term``: rowids and counts."""
        index = self._terms.get(term)
        if index is None:
            rowids = np.zeros(0, dtype=np.int64)
            counts = np.zeros(0, dtype=np.float64)
        else:
            start, stop = self._starts[index], self._starts[index + 1]
            rowids = self._rowids[start:stop].astype(np.int64)
            counts = self._counts[start:stop].astype(np.float64)
            if self._dead_postings:
                alive = ~self._dead[rowids]
                rowids, counts = rowids[alive], counts[alive]
        recent = self._recent.get(term)
        if recent:
            rowids = np.concatenate([rowids, np.fromiter(recent.keys(), np.int64, len(recent))])
            counts = np.concatenate([counts, np.fromiter(recent.values(), np.float64, len(recent))])
        return rowids, counts

    def _scored(
        self, terms: Sequence[str]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """Every posting of ``terms``: its rowid and its part of the row's score."""
        average = self.tokens / self.rows if self.rows else 0.0
        rowid_parts, weight_parts = [], []
        for term in terms:
            rowids, counts = self._postings_of(term)
            if not len(rowids):
                continue
            norm = K1 * (1 - B + B * self._lengths[rowids] / average) if average else K1
            idf = fts5_idf(self.rows, len(rowids))
            rowid_parts.append(rowids)
            weight_parts.append(idf * ((counts * (K1 + 1)) / (counts + norm)))
        if not rowid_parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        return np.concatenate(rowid_parts), np.concatenate(weight_parts)

    def _fold(self, extra: tuple[_Ints, _Ints, _Ints] | None = None) -> None:
        """Rebuild the arrays from their live postings, the recent rows and ``extra``.

        ``extra``: more postings, as term indices, rowids and counts.
        """
        if not self._recent_postings and not self._dead_postings and extra is None:
            return
        terms, rowids, counts = self._live_arrays()
        if extra is not None:
            terms.append(extra[0])
            rowids.append(extra[1])
            counts.append(extra[2])
        for term, held in self._recent.items():
            index = self._terms.setdefault(term, len(self._terms))
            terms.append(np.full(len(held), index, dtype=np.int64))
            rowids.append(np.fromiter(held.keys(), np.int64, len(held)))
            counts.append(np.fromiter(held.values(), np.int64, len(held)))
        term_ids = np.concatenate(terms)
        order = np.argsort(term_ids, kind="stable")
        self._starts = np.searchsorted(term_ids[order], np.arange(len(self._terms) + 1))
        self._rowids = np.concatenate(rowids)[order].astype(np.int32)
        self._counts = np.concatenate(counts)[order].astype(np.int32)
        self._dead[:] = False
        self._dead_postings = 0
        self._recent, self._recent_rows, self._recent_postings = {}, {}, 0

    def _live_arrays(self) -> tuple[list[_Ints], list[_Ints], list[_Ints]]:
        """The arrays' postings as (term index, rowid, count) parts, dead rows left out."""
        lengths = np.diff(self._starts)
        term_ids = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
        rowids = self._rowids.astype(np.int64)
        alive = ~self._dead[rowids]
        return [term_ids[alive]], [rowids[alive]], [self._counts[alive].astype(np.int64)]

    def _grow(self, rowid: int) -> None:
        if rowid >= len(self._lengths):
            size = max(rowid + 1, 2 * len(self._lengths))
            grown = size - len(self._lengths)
            self._lengths = np.concatenate([self._lengths, np.zeros(grown)])
            self._held = np.concatenate([self._held, np.zeros(grown, dtype=np.bool_)])
            self._dead = np.concatenate([self._dead, np.zeros(grown, dtype=np.bool_)])


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
        return self.if_current(conn) is not None

    def if_current(self, conn: sqlite3.Connection) -> Postings | None:
        """The postings if read and current with the file, else None (no read is started)."""
        if self._postings is not None and self._version == _data_version(conn):
            return self._postings
        return None

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
            postings = Postings(self._paced(cursor, first, reading))
        except sqlite3.Error as error:
            logger.warning("lexical postings not read (%s); FTS5 ranks", error)
        finally:
            reader.close()
            self._finish(reading, postings, time.monotonic() - start)

    def _paced(self, cursor: sqlite3.Cursor, first: list[Row], reading: _Reading) -> Iterator[Row]:
        """The rows of ``cursor`` after ``first``, a chunk at a time, until the read is dropped."""
        yield from first
        while self._reading is reading and (rows := cursor.fetchmany(READ_CHUNK)):
            yield from rows
            time.sleep(READ_PAUSE)

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
