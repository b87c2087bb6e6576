"""SqliteLexicalIndex: a durable BM25 index in SQLite FTS5, updated write by write."""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from langchain_core.documents import Document

from cogito_lc._core.filters import equality_clauses
from cogito_lc._core.metadata import SCOPE_KEYS
from cogito_lc.stores._fts_postings import Change, Postings, PostingsMirror
from cogito_lc.stores._fts_ranking import CorpusStats, bm25_scorer, rarest_terms
from cogito_lc.stores._where_sql import where_sql
from cogito_lc.stores.lexical_index import LexicalHit, lexical_terms

__all__ = ["SqliteLexicalIndex", "is_corruption"]

logger = logging.getLogger(__name__)

# Values always go in as parameters; the SQL text formats in only "?" placeholders, the
# index's own column names (checked identifiers) and conditions built the same way
# (``where_sql``): hence the S608 exemptions below.
_SCHEMA_VERSION = "3"
_FTS_TABLE = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(terms, content='docs', "
    "content_rowid='rowid', tokenize=\"ascii tokenchars '_'\")"
)
"""The full-text table over ``docs.terms``, the terms :func:`lexical_terms` gave: the
``ascii`` tokenizer takes each as it is (``unicode61`` would fold some again, the final
sigma of Greek words among them, so the file's counts missed terms every other index holds)."""
_TERM_COUNT = "(CASE WHEN {0} = '' THEN 0 ELSE length({0}) - length(replace({0}, ' ', '')) + 1 END)"
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PLAIN_KEY = re.compile(r'^[^"\\]*$')
_BATCH = 500
POSTING_BUDGET = 10_000
"""Postings a search reads before it takes its candidates from the rarest terms only."""
CANDIDATES = 200
"""How many candidates, at least, a search over the rarest terms scores with every term."""
_STATS_CACHE = 64
SECURE_DELETE = sqlite3.sqlite_version_info >= (3, 42, 0)
"""Whether FTS5 here removes a deleted document's postings from the index itself
(``secure-delete``, SQLite 3.42); before, a forget merges the index (``optimize``)."""
REBUILD_SPACING = 20.0
"""After another process writes, the in-memory postings are read again only once this
many times the last read's duration has passed since it; searches use SQL meanwhile."""


class SqliteLexicalIndex:
    """A BM25 index of memories in an SQLite FTS5 table, persisted in one file.

    Every write is a transaction: documents are added, replaced and deleted one
    batch at a time and never rebuilt on the read path. Ranking is FTS5's
    ``bm25()`` over :func:`~cogito_lc.stores.lexical_terms`, so any query text
    is searched as plain words (each term is quoted, no FTS5 syntax reaches the
    parser). The scope keys (``user_id``, ``agent_id``, ``run_id``) are columns
    with their own SQL indexes; other metadata is filtered with ``json_extract``.
    The database runs in WAL mode with a busy timeout, so several processes on
    one machine can read and write the same file.

    An unfiltered search (a scope that holds every memory is searched
    unfiltered by :class:`~cogito_lc.stores.LexicalSync`) is ranked over the
    index's postings held in memory (``postings_in_memory``, on by default): the
    same ``bm25()`` numbers, exact at any size, in well under a millisecond at
    10,000 memories where FTS5 takes several (it scores every matching row in
    SQL). The first such search reads the postings from the file (about 80 ms
    per 10,000 memories, about 0.3 MB of memory per 1,000; :meth:`load_postings` reads
    them ahead; a file this object created starts with none); they then follow
    this object's own writes row by row. After another process writes to the
    file they are read again on a thread, in paced chunks, at most once per
    ``REBUILD_SPACING`` times the last read's duration; until they are
    current, and for filtered searches, FTS5 ranks (:attr:`postings_ready`
    tells which).

    An FTS5 query's cost is bounded: when its terms hold more than
    ``posting_budget`` postings in all, the candidates come from the rarest terms
    that fit the budget (the best ``max(CANDIDATES, 20 * k)`` of them) and are
    then scored with every query term, to the number ``bm25()`` gives. Results
    are exact below the budget; above it a document that holds none of the rare
    terms is not considered (``benchmarks/scale.py`` reports how much of the
    exact top 10 a bounded search keeps).

    A file that is not a readable index (corrupt, another format) is moved aside
    with an error logged and a fresh index is started; :attr:`rebuild_reason` then
    tells the owner (:class:`~cogito_lc.stores.LexicalSync`) to fill it from
    the vector store.

    Example:
        ```python
        import tempfile
        from pathlib import Path

        from langchain_core.documents import Document

        from cogito_lc.stores import SqliteLexicalIndex

        index = SqliteLexicalIndex(Path(tempfile.mkdtemp()) / "lexical.sqlite3")
        index.upsert([
            Document(page_content="billing runs on port 8083", id="m1", metadata={"user_id": "a"}),
            Document(page_content="search latency budget", id="m2", metadata={"user_id": "b"}),
        ])
        [(doc, score)] = index.search('port "8083" OR (billing', k=3, where={"user_id": "a"})
        assert doc.id == "m1" and score > 0
        index.close()
        ```
    """

    def __init__(
        self,
        path: str | Path,
        *,
        columns: Sequence[str] = SCOPE_KEYS,
        timeout: float = 30.0,
        posting_budget: int = POSTING_BUDGET,
        postings_in_memory: bool = True,
    ) -> None:
        bad = [c for c in columns if not _IDENTIFIER.match(c)]
        if bad:
            msg = f"columns must be plain identifiers (letters, digits, _), got {bad}."
            raise ValueError(msg)
        self.path = Path(path)
        self.columns = tuple(columns)
        self.timeout = timeout
        self.posting_budget = posting_budget
        self.postings_in_memory = postings_in_memory
        self.rebuild_reason: str | None = None
        """Why the index must be filled from the vector store (``"missing"``: no file was
        there; ``"unreadable"``: the file was moved aside), or None."""
        self._lock = threading.RLock()
        self._stats_cache: dict[tuple[str, ...], tuple[tuple[int, int], CorpusStats]] = {}
        self._writes = 0
        self._changes: list[Change] = []
        self._conn = self._open()
        self._postings = PostingsMirror(
            self.path, self._lock, timeout=timeout, spacing=REBUILD_SPACING
        )
        if self.rebuild_reason is not None:
            self._postings.start_empty(self._conn)

    # -- opening and recovery -----------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        if not self.path.exists():
            self.rebuild_reason = "missing"
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return self._connect()
        except sqlite3.DatabaseError as error:
            if not is_corruption(error):
                raise
            self._move_aside(error)
            self.rebuild_reason = "unreadable"
            return self._connect()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, timeout=self.timeout, check_same_thread=False, isolation_level=None
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed
            self._create(conn)
            if SECURE_DELETE:
                conn.execute("INSERT INTO fts (fts, rank) VALUES ('secure-delete', 1)")
            conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_vocab USING fts5vocab(main, fts, row)"
            )
            conn.execute("SELECT count(*) FROM docs").fetchone()
            conn.execute("SELECT rowid FROM fts WHERE fts MATCH '\"x\"' LIMIT 1").fetchall()
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def _create(self, conn: sqlite3.Connection) -> None:
        scope_columns = "".join(f", m_{c} ANY" for c in self.columns)
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS docs (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL "
                f"UNIQUE, text TEXT NOT NULL, terms TEXT NOT NULL, metadata TEXT NOT NULL"
                f"{scope_columns})"
            )
            for column in self.columns:
                conn.execute(f"CREATE INDEX IF NOT EXISTS docs_{column} ON docs (m_{column})")
            conn.execute(_FTS_TABLE)
            conn.execute("CREATE TABLE IF NOT EXISTS pending (id TEXT PRIMARY KEY)")
            conn.execute(
                "INSERT OR IGNORE INTO meta VALUES ('version', ?), ('columns', ?)",
                (_SCHEMA_VERSION, json.dumps(self.columns)),
            )
            _create_stats(conn)
            self._check_meta(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _check_meta(self, conn: sqlite3.Connection) -> None:
        """Raise ``DatabaseError`` for a file written with another schema or other columns."""
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("version") == "1":
            _upgrade_from_1(conn)
            meta["version"] = "2"
        if meta.get("version") == "2":
            _upgrade_from_2(conn)
            meta["version"] = _SCHEMA_VERSION
        expected = {"version": _SCHEMA_VERSION, "columns": json.dumps(self.columns)}
        if {key: meta.get(key) for key in expected} != expected:
            msg = f"lexical index was written with {meta}, expected {expected}"
            raise _IncompatibleIndexError(msg)

    def _move_aside(self, error: BaseException) -> None:
        aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
        logger.error(
            "lexical index %s is unreadable (%s); moved to %s, rebuilding from the vector store",
            self.path,
            error,
            aside.name,
        )
        for suffix in ("", "-wal", "-shm"):
            part = Path(f"{self.path}{suffix}")
            if part.exists():
                part.replace(Path(f"{aside}{suffix}"))

    def reset(self, error: BaseException) -> None:
        """Move an index that failed while in use aside and start an empty one.

        Args:
            error: The failure, for the log line.
        """
        with self._lock:
            self._conn.close()
            self._move_aside(error)
            self.rebuild_reason = "unreadable"
            self._stats_cache.clear()
            self._postings.drop()
            self._conn = self._connect()
            self._postings.start_empty(self._conn)

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._postings.drop()
            self._conn.close()

    def load_postings(self) -> None:
        """Read the postings into memory now (else the first unfiltered search reads them).

        Nothing to do with ``postings_in_memory`` off.
        """
        if not self.postings_in_memory:
            return
        with self._lock:
            self._postings.load(self._conn)

    @property
    def postings_ready(self) -> bool:
        """Whether unfiltered searches rank over the in-memory postings now."""
        with self._lock:
            return self.postings_in_memory and self._postings.is_current(self._conn)

    def _in_memory(self) -> Postings | None:
        if not self.postings_in_memory:
            return None
        return self._postings.current(self._conn)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._writes += 1
            self._changes = []
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._changes = []
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            self._apply_changes()

    def _apply_changes(self) -> None:
        """Give the committed transaction's row changes to the in-memory postings."""
        changes, self._changes = self._changes, []
        self._postings.record(changes, self._conn)

    # -- writes ---------------------------------------------------------------------

    def upsert(self, documents: Sequence[Document]) -> None:
        """Add these documents, replacing any held under the same ids, in one transaction."""
        rows = {doc.id: doc for doc in documents if doc.id}
        if not rows:
            return
        with self._transaction() as conn:
            self._remove(conn, list(rows))
            for doc_id, doc in rows.items():
                self._insert(conn, doc_id, doc)
            self._clear_pending(conn, list(rows))

    def _insert(self, conn: sqlite3.Connection, doc_id: str, doc: Document) -> None:
        terms = " ".join(lexical_terms(doc.page_content))
        scope = [_column_value(doc.metadata.get(c)) for c in self.columns]
        marks = ", ?" * len(self.columns)
        names = "".join(f", m_{c}" for c in self.columns)
        sql = f"INSERT INTO docs (id, text, terms, metadata{names}) VALUES (?, ?, ?, ?{marks})"  # noqa: S608
        cursor = conn.execute(
            sql,
            (doc_id, doc.page_content, terms, json.dumps(doc.metadata, default=str), *scope),
        )
        conn.execute("INSERT INTO fts (rowid, terms) VALUES (?, ?)", (cursor.lastrowid, terms))
        self._changes.append((True, [(int(cast("int", cursor.lastrowid)), terms)]))

    def _remove(self, conn: sqlite3.Connection, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), _BATCH):
            chunk = list(ids[start : start + _BATCH])
            marks = ", ".join("?" * len(chunk))
            select = f"SELECT rowid, terms FROM docs WHERE id IN ({marks})"  # noqa: S608
            held = conn.execute(select, chunk).fetchall()
            conn.executemany("INSERT INTO fts (fts, rowid, terms) VALUES ('delete', ?, ?)", held)
            self._changes.append((False, held))
            conn.execute(f"DELETE FROM docs WHERE id IN ({marks})", chunk)  # noqa: S608

    def _clear_pending(self, conn: sqlite3.Connection, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), _BATCH):
            chunk = list(ids[start : start + _BATCH])
            marks = ", ".join("?" * len(chunk))
            conn.execute(f"DELETE FROM pending WHERE id IN ({marks})", chunk)  # noqa: S608

    def delete(self, ids: Sequence[str]) -> None:
        """Remove the documents with these ids in one transaction (unknown ids are ignored).

        Their text leaves the file too: FTS5 deletes their postings for real
        (``secure-delete``; with SQLite before 3.42, a merge of the index after the
        delete), the pages freed are zeroed, and the write-ahead log is emptied.
        """
        if not ids:
            return
        with self._transaction() as conn:
            self._remove(conn, list(ids))
            self._clear_pending(conn, list(ids))
            if not SECURE_DELETE:
                conn.execute("INSERT INTO fts (fts) VALUES ('optimize')")
        self._empty_log()

    def _empty_log(self) -> None:
        """Copy the write-ahead log into the file and truncate it (old page images go).

        Without waiting: while another connection reads, the log is left to a later
        checkpoint (a forget never waits for a search).
        """
        with self._lock:
            self._conn.execute("PRAGMA busy_timeout = 0")
            try:
                busy, _, _ = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            finally:
                self._conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
        if busy:
            logger.info(
                "the lexical index's write-ahead log %s-wal is read by another connection: "
                "it is emptied at a later checkpoint",
                self.path,
            )

    def mark_pending(self, ids: Sequence[str]) -> None:
        """Record, durably, the ids a vector-store write is about to touch."""
        if not ids:
            return
        with self._transaction() as conn:
            conn.executemany("INSERT OR IGNORE INTO pending VALUES (?)", [(i,) for i in ids])

    def pending(self) -> set[str]:
        """The ids marked pending and not yet written."""
        with self._lock:
            return {row[0] for row in self._conn.execute("SELECT id FROM pending")}

    def reindex(self, documents: Iterable[Document]) -> None:
        """Replace the whole content of the index with ``documents`` in one transaction."""
        with self._lock:
            with self._transaction() as conn:
                conn.execute("DELETE FROM docs")
                conn.execute("INSERT INTO fts (fts) VALUES ('delete-all')")
                conn.execute("DELETE FROM pending")
                seen: set[str] = set()
                for doc in documents:
                    if doc.id and doc.id not in seen:
                        seen.add(doc.id)
                        self._insert(conn, doc.id, doc)
                rows = [row for _, added in self._changes for row in added]
                self._changes = []
            self._postings.replace(rows, self._conn)
            self.rebuild_reason = None

    # -- reads ----------------------------------------------------------------------

    def search(
        self, query: str, k: int, where: Mapping[str, Any] | None = None
    ) -> list[LexicalHit]:
        """The ``k`` best documents for ``query`` matching ``where``, best first."""
        terms = list(dict.fromkeys(lexical_terms(query)))
        if not terms:
            return []
        condition, params = self._where(where)
        with self._lock:
            postings = self._in_memory() if condition == "1" else None
            if postings is not None:
                ranked = postings.top(terms, k)
                rows = self._columns(ranked)
                return [_hit(doc_id, text, meta, score) for doc_id, text, meta, _, score in rows]
            stats = self._stats(terms)
            held = [term for term in terms if stats.document_frequency.get(term)]
            if not held:
                return []
            if sum(stats.document_frequency.values()) <= self.posting_budget:
                rows = self._ranked(held, condition, params, k)
                return [_hit(doc_id, text, meta, score) for doc_id, text, meta, _, score in rows]
            rare = rarest_terms(stats.document_frequency, self.posting_budget)
            rows = self._ranked(rare, condition, params, max(CANDIDATES, 20 * k))
        score = bm25_scorer(held, stats)
        scored = [
            (score(doc_terms), doc_id, text, meta) for doc_id, text, meta, doc_terms, _ in rows
        ]
        scored.sort(key=lambda row: -row[0])
        return [_hit(doc_id, text, meta, score) for score, doc_id, text, meta in scored[:k]]

    def _ranked(
        self, terms: Sequence[str], condition: str, params: list[Any], limit: int
    ) -> list[tuple[str, str, str, str, float]]:
        """The ``limit`` best rows for ``terms`` by ``bm25()``: id, text, metadata, terms, score.

        Ranks on row ids alone and reads the columns of the winners only: a sort
        that carries every matching row's text costs more than the ranking.
        """
        if condition == "1":
            sql = "SELECT rowid, -bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT ?"
        else:
            sql = (
                "SELECT d.rowid, -bm25(fts) FROM fts JOIN docs d ON d.rowid = fts.rowid "  # noqa: S608
                f"WHERE fts MATCH ? AND {condition} ORDER BY bm25(fts) LIMIT ?"
            )
        ranked = self._conn.execute(sql, [_match_expression(terms), *params, limit]).fetchall()
        return self._columns(ranked)

    def _columns(
        self, ranked: Sequence[tuple[int, float]]
    ) -> list[tuple[str, str, str, str, float]]:
        """Id, text, metadata and terms of these ranked rows, with their scores, in order."""
        if not ranked:
            return []
        marks = ", ".join("?" * len(ranked))
        columns = {
            row[0]: row[1:]
            for row in self._conn.execute(
                f"SELECT rowid, id, text, metadata, terms FROM docs WHERE rowid IN ({marks})",  # noqa: S608
                [rowid for rowid, _ in ranked],
            )
        }
        return [(*columns[rowid], score) for rowid, score in ranked if rowid in columns]

    def _stats(self, terms: Sequence[str]) -> CorpusStats:
        """The corpus statistics for ``terms``, read again only after a write.

        A write through this connection or any other (``PRAGMA data_version``)
        makes the next read go to the database; a recall reads them once for its
        search and its scores.
        """
        key = tuple(terms)
        state = (self._writes, self._conn.execute("PRAGMA data_version").fetchone()[0])
        cached = self._stats_cache.get(key)
        if cached is not None and cached[0] == state:
            return cached[1]
        stats = self._read_stats(terms)
        if len(self._stats_cache) >= _STATS_CACHE:
            self._stats_cache.clear()
        self._stats_cache[key] = (state, stats)
        return stats

    def _read_stats(self, terms: Sequence[str]) -> CorpusStats:
        """The statistics from the postings in memory when current, else from the file.

        ``fts5vocab`` counts a term's rows by reading its postings: about 0.1 ms
        a term at 100,000 memories, where the postings in memory hold the count.
        """
        in_memory = self._stats_in_memory(terms)
        if in_memory is not None:
            return in_memory
        rows, tokens = self._conn.execute("SELECT rows, tokens FROM stats").fetchone()
        marks = ", ".join("?" * len(terms))
        frequency = self._conn.execute(
            f"SELECT term, doc FROM temp.fts_vocab WHERE term IN ({marks})",  # noqa: S608
            list(terms),
        ).fetchall()
        return CorpusStats(rows=rows, tokens=tokens, document_frequency=dict(frequency))

    def _stats_in_memory(self, terms: Sequence[str]) -> CorpusStats | None:
        """The statistics the postings in memory give, or None when they are not current."""
        postings = self._postings.if_current(self._conn) if self.postings_in_memory else None
        if postings is None:
            return None
        return CorpusStats(
            rows=postings.rows,
            tokens=postings.tokens,
            document_frequency=postings.document_frequency(terms),
        )

    def scores(
        self, query: str, ids: Sequence[str], where: Mapping[str, Any] | None = None
    ) -> dict[str, float]:
        """The score of each of these documents for ``query`` (0.0 when it shares no word).

        ``where`` is accepted for the protocol: FTS5's statistics are the whole index's.
        """
        found = dict.fromkeys(ids, 0.0)
        terms = list(dict.fromkeys(lexical_terms(query)))
        if not terms or not found:
            return found
        keys = list(found)
        with self._lock:
            score = bm25_scorer(terms, self._stats(terms))
            for start in range(0, len(keys), _BATCH):
                chunk = keys[start : start + _BATCH]
                rows = self._conn.execute(
                    f"SELECT id, terms FROM docs WHERE id IN ({', '.join('?' * len(chunk))})",  # noqa: S608
                    chunk,
                ).fetchall()
                found.update({doc_id: score(held) for doc_id, held in rows})
        return found

    def count(self, where: Mapping[str, Any] | None = None) -> int:
        """How many documents matching ``where`` the index holds."""
        condition, params = self._where(where)
        with self._lock:
            sql = f"SELECT count(*) FROM docs d WHERE {condition}"  # noqa: S608
            row = self._conn.execute(sql, params)
            return int(row.fetchone()[0])

    def covers_all(self, where: Mapping[str, Any]) -> bool | None:
        """Whether every document matches ``where``, read from the column indexes.

        Answers in a few index lookups for equalities on the indexed columns
        (a scope), joined by ``$and``: every document matches when a column's
        smallest and largest values are the value and none is missing. None for
        any other filter (count instead).
        """
        clauses = equality_clauses(where)
        if clauses is None or any(key not in self.columns for key, _ in clauses):
            return None
        with self._lock:
            for key, value in clauses:
                column = f"m_{key}"
                # one aggregate per statement: SQLite reads a lone min() or max() from
                # the index in one lookup, but scans the table for both at once
                low, high = (
                    self._conn.execute(f"SELECT {bound}({column}) FROM docs").fetchone()[0]  # noqa: S608
                    for bound in ("min", "max")
                )
                missing = self._conn.execute(
                    f"SELECT EXISTS (SELECT 1 FROM docs WHERE {column} IS NULL)"  # noqa: S608
                ).fetchone()[0]
                if missing or low != _column_value(value) or high != _column_value(value):
                    return False
        return True

    def ids(self) -> set[str]:
        """The ids of every document the index holds."""
        with self._lock:
            return {row[0] for row in self._conn.execute("SELECT id FROM docs")}

    def ids_within(self, where: Mapping[str, Any], limit: int) -> list[str] | None:
        """The ids of the documents matching ``where``, or None when more than ``limit`` do."""
        condition, params = self._where(where)
        sql = f"SELECT id FROM docs d WHERE {condition} LIMIT ?"  # noqa: S608
        with self._lock:
            ids = [row[0] for row in self._conn.execute(sql, [*params, limit + 1])]
        return ids if len(ids) <= limit else None

    def _where(self, where: Mapping[str, Any] | None) -> tuple[str, list[Any]]:
        if not where:
            return "1", []
        return where_sql(where, self._column)

    def _column(self, key: str) -> tuple[str, list[Any]]:
        if key in self.columns:
            return f"d.m_{key}", []
        if not _PLAIN_KEY.match(key):
            msg = f"metadata key {key!r} cannot be filtered in the lexical index (quote or \\)."
            raise ValueError(msg)
        return "json_extract(d.metadata, ?)", [f'$."{key}"']


class _IncompatibleIndexError(sqlite3.DatabaseError):
    """The file is an index of another schema version or with other columns."""


_CORRUPT_CODES = frozenset({11, 26})  # SQLITE_CORRUPT, SQLITE_NOTADB
_CORRUPT_WORDS = ("malformed", "not a database", "no such table", "no such column", "corrupt")


def is_corruption(error: sqlite3.DatabaseError) -> bool:
    """Whether ``error`` means the index file is damaged (not busy, locked or misused).

    Example:
        ```python
        import sqlite3

        from cogito_lc.stores.sqlite_fts import is_corruption

        assert is_corruption(sqlite3.DatabaseError("file is not a database"))
        assert not is_corruption(sqlite3.OperationalError("database is locked"))
        ```
    """
    if isinstance(error, _IncompatibleIndexError):
        return True
    if isinstance(error, (sqlite3.ProgrammingError, sqlite3.InterfaceError)):
        return False
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in _CORRUPT_CODES:
        return True
    return any(word in str(error).lower() for word in _CORRUPT_WORDS)


def _column_value(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    return value if isinstance(value, (str, int, float)) else None


def _match_expression(terms: Sequence[str]) -> str:
    """Terms as an FTS5 expression: each quoted as a string, joined by OR."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def _hit(doc_id: str, text: str, metadata: str, score: float) -> LexicalHit:
    return Document(page_content=text, metadata=json.loads(metadata), id=doc_id), float(score)


def _create_stats(conn: sqlite3.Connection) -> None:
    """The corpus totals BM25 needs, kept current by triggers on ``docs``."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS stats (id INTEGER PRIMARY KEY CHECK (id = 1), "
        "rows INTEGER NOT NULL, tokens INTEGER NOT NULL)"
    )
    conn.execute("INSERT OR IGNORE INTO stats VALUES (1, 0, 0)")
    added, removed = _TERM_COUNT.format("NEW.terms"), _TERM_COUNT.format("OLD.terms")
    conn.execute(
        "CREATE TRIGGER IF NOT EXISTS docs_counted AFTER INSERT ON docs BEGIN "  # noqa: S608
        f"UPDATE stats SET rows = rows + 1, tokens = tokens + {added}; END"
    )
    conn.execute(
        "CREATE TRIGGER IF NOT EXISTS docs_uncounted AFTER DELETE ON docs BEGIN "  # noqa: S608
        f"UPDATE stats SET rows = rows - 1, tokens = tokens - {removed}; END"
    )


def _upgrade_from_1(conn: sqlite3.Connection) -> None:
    """Count the totals of an index written before they were kept."""
    conn.execute(
        "UPDATE stats SET rows = (SELECT count(*) FROM docs), "  # noqa: S608
        f"tokens = (SELECT coalesce(sum({_TERM_COUNT.format('terms')}), 0) FROM docs)"
    )
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'version'")
    logger.info("lexical index upgraded to schema version 2")


def _upgrade_from_2(conn: sqlite3.Connection) -> None:
    """Index the stored terms again with the tokenizer that takes them as they are."""
    conn.execute("DROP TABLE fts")
    conn.execute(_FTS_TABLE)
    conn.execute("INSERT INTO fts (fts) VALUES ('rebuild')")
    conn.execute("UPDATE meta SET value = ? WHERE key = 'version'", (_SCHEMA_VERSION,))
    logger.info("lexical index upgraded to schema version %s", _SCHEMA_VERSION)
