"""Postgres (pgvector) behind a ``langchain_postgres.PGVectorStore``: schema, pool, adapter.

:func:`open_postgres_store` connects to a database, creates or migrates the
memories table (idempotent, versioned in ``cogito_schema``, one replica at a time
under an advisory lock) and returns a ``PGVectorStore`` over it. The table has
the scope keys as real, indexed columns, an HNSW cosine index on the vector, a
generated ``tsvector`` column with a GIN index for full-text search, and an
insertion sequence for paging. :class:`PostgresAdapter` runs every operation
cogito-lc needs as SQL: filters are translated to a ``WHERE`` clause, new
memories are inserted with ``ON CONFLICT DO NOTHING`` so the primary key, not a
lock in one process, makes the same memory written twice one row.

The database URL's password is never shown: :func:`redact_url` is what logs,
errors and ``repr`` use.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit, urlunsplit

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from cogito_lc._core.breaker import CircuitBreaker
from cogito_lc._core.extras import require_extra
from cogito_lc._core.filters import split_values
from cogito_lc._core.metadata import SCOPE_KEYS
from cogito_lc._core.timestamps import parse_timestamp
from cogito_lc._core.where_sql import where_sql
from cogito_lc.stores._dimension import (
    StoredVector,
    checked_embeddings,
    dimension_mismatch,
    probe_dimension,
)
from cogito_lc.stores.base import (
    BatchedSearchAdapter,
    Run,
    ScopeCounts,
    ScoredDocument,
    StoreAdapter,
    StoredVectors,
    Vector,
    register_adapter,
    scope_keys,
)
from cogito_lc.stores.postgres_bm25 import (
    bm25_steps,
    check_bm25_statistics,
    scope_part,
    stats_table,
    text_index_statement,
)

__all__ = [
    "COLUMNS",
    "SCHEMA_VERSION",
    "SELECT_COLUMNS",
    "DatabaseSetupError",
    "DatabaseUnavailableError",
    "PostgresAdapter",
    "PostgresBinding",
    "PostgresDatabase",
    "StatementTimeoutError",
    "WriteLockTimeoutError",
    "open_postgres_store",
    "postgres_binding",
    "redact_url",
    "row_document",
    "split_vectors",
    "where_to_sql",
]

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 5
"""The version of the memories table layout this package creates and reads (2: BM25 statistics;
3: the text indexed as ``lexical_terms`` splits it; 4: the same words under any session
setting; 5: a word of 2047 bytes is left out, as longer ones were)."""

COLUMNS = (*SCOPE_KEYS, "kind", "source_id", "created_at")
"""Metadata keys held in their own text columns (the scope keys are indexed)."""

EXACT_SEARCH_ROWS = 20_000
"""A filtered search matching at most this many rows, and less than half the table, is
ranked exactly, not by HNSW (pgvector before 0.8 filters HNSW results after the scan and
can return fewer than k); one matching most of the table is searched through HNSW."""

_NAME_RE = re.compile(r"^[a-z_][a-z0-9_]{0,47}$")
_SETTING = "database_url (COGITO_DATABASE_URL)"
_SCHEMA_LOCK = "SELECT pg_advisory_xact_lock(hashtext('cogito_lc_schema'))"
"""Taken by whatever changes the schema: the extension, the tables, their migrations."""

_WRITE_LOCK = "SELECT pg_advisory_xact_lock(hashtext('cogito_lc_writes'), hashtext(%s))"
"""Taken by a check and the write it allows (a supersession, a forget), one per table."""
WRITE_LOCK_WAIT_S = 20.0
"""Seconds a write waits for another replica's check and write on the same table."""
WRITE_LOCK_LEASE_S = 15.0
"""Seconds the server keeps the write lock of a replica that stopped answering.

The holder's lock session says it is alive every fifth of this; a replica that
froze, lost its host or its network longer is ended by the server (its
``idle_in_transaction_session_timeout``), which releases the lock."""

_WAIT_SLICE = 0.2
"""Seconds a caller waits on the pool between two looks at the circuit breaker."""
_KEEPALIVE = {
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 3,
    "keepalives_count": 3,
    "tcp_user_timeout": 10_000,
}
"""TCP settings that notice a vanished server (no FIN: a network cut) in seconds, not minutes."""


@contextmanager
def _renewed(conn: Any, every: float, table: str) -> Iterator[None]:
    """Tell the server every ``every`` seconds that the lock session's replica is alive."""
    import psycopg

    done = threading.Event()

    def renew() -> None:
        try:
            while not done.wait(every):
                conn.execute("SELECT 1")
        except psycopg.Error:
            logger.exception(
                "the write lock of table %r was lost (its connection ended); another "
                "replica may check and write at the same time as this one",
                table,
            )

    renewer = threading.Thread(target=renew, name="cogito-write-lock", daemon=True)
    renewer.start()
    try:
        yield
    finally:
        done.set()
        renewer.join()


class DatabaseSetupError(RuntimeError):
    """The database cannot be used: unreachable, refused, or missing the vector extension."""


class WriteLockTimeoutError(TimeoutError):
    """Another replica held a table's write lock too long; the write may be retried."""


class DatabaseUnavailableError(RuntimeError):
    """The database stopped answering (restarting, network cut); retry shortly."""


class StatementTimeoutError(DatabaseUnavailableError):
    """A statement ran past ``statement_timeout`` or waited past ``lock_timeout``.

    The database answered: another transaction held the rows or lock the
    statement needed, or the statement is slow. Retry shortly.
    """


_OUTAGE_CLASSES = ("08", "53", "57P", "58", "XX")
"""SQLSTATE prefixes of a lost connection, a server shutting down or out of resources."""


def _is_outage(error: Exception) -> bool:
    """Whether an operational error means the database is away, not that a statement failed.

    A statement over a limit (a word too long for a query, class 54), cancelled
    or waiting on a lock fails alone: the breaker stays closed for every other caller.
    """
    state = getattr(error, "sqlstate", None)
    return state is None or state.startswith(_OUTAGE_CLASSES)


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``***``.

    Example:
        ```python
        from cogito_lc.stores.postgres import redact_url

        assert redact_url("postgresql://me:s3cret@db:5432/app") == "postgresql://me:***@db:5432/app"
        assert redact_url("postgresql:///app?host=/tmp") == "postgresql:///app?host=/tmp"
        ```
    """
    parts = urlsplit(url)
    if parts.password is None:
        return _redact_query(url)
    user = parts.username or ""
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    netloc = f"{user}:***@{host}{port}"
    return _redact_query(urlunsplit(parts._replace(netloc=netloc)))


def _redact_query(url: str) -> str:
    return re.sub(r"(?i)(password=)[^&]*", r"\1***", url)


def _psycopg_url(url: str) -> str:
    return re.sub(r"^postgres(ql)?(\+\w+)?://", "postgresql://", url)


def _sqlalchemy_url(url: str) -> str:
    return re.sub(r"^postgres(ql)?(\+\w+)?://", "postgresql+psycopg://", url)


def _scrub(text: str, url: str) -> str:
    """``text`` with ``url`` redacted, and its password wherever it stands as a whole word.

    A password inside another word is left as it is: a short one (``p``) would
    otherwise blank letters of the driver's message (``***ort 9``).
    """
    text = text.replace(url, redact_url(url))
    for password in _passwords(url):
        text = re.sub(rf"(?<!\w){re.escape(password)}(?!\w)", "***", text)
    return text


def _passwords(url: str) -> set[str]:
    """The password of ``url`` (in its user info or query), as written and decoded."""
    parts = urlsplit(url)
    written = [parts.password or "", *parse_qs(parts.query).get("password", [])]
    return {form for value in written if value for form in (value, unquote(value))}


_RESERVED_SUFFIXES = (
    "_bm25",
    "_seq",
    "_pkey",
    "_embedding_hnsw",
    "_content_tsv",
    *(f"_{key}" for key in SCOPE_KEYS),
)
"""Endings of the names a collection's own tables and indexes take (``<collection>_bm25``)."""


def _quote(name: str) -> str:
    if not _NAME_RE.match(name):
        msg = (
            f"collection {name!r} is not a valid table name; use lower-case letters, digits "
            "and underscores (at most 48, not starting with a digit)."
        )
        raise ValueError(msg)
    if name.endswith(_RESERVED_SUFFIXES):
        msg = (
            f"collection {name!r} ends like the tables and indexes collections keep beside "
            f"their own ({', '.join(_RESERVED_SUFFIXES)}); choose a name without that ending."
        )
        raise ValueError(msg)
    return f'"{name}"'


_ATOMIC: ContextVar[tuple[PostgresDatabase, Any] | None] = ContextVar(
    "cogito_postgres_atomic", default=None
)
"""The database and connection of the :meth:`PostgresDatabase.atomic` block this thread is in."""


class PostgresDatabase:
    """A connection pool to one Postgres database with the ``vector`` extension.

    The pool fails fast while the database is away: a connection that cannot be
    made, or a connection lost mid-statement, opens :attr:`breaker`; callers then
    get :class:`DatabaseUnavailableError` at once, while a background probe
    reconnects every half second and, once the database answers, puts a fresh,
    filled pool in place before closing the breaker (no restart, and no request
    pays the reconnection).

    Args:
        url: A ``postgresql://`` URL (a ``+psycopg`` driver suffix is accepted).
        max_size: The most connections the pool opens.
        timeout: Seconds to connect, and to wait for a pooled connection, before
            giving up (at least 2 s for connecting, as libpq).
        statement_timeout: Seconds a statement may run before the server cancels
            it (schema migrations and the start-up check of the BM25 counters
            excepted); None: the server's setting.

    Raises:
        DatabaseSetupError: On an unreachable database, wrong credentials or a
            ``vector`` extension that is missing and cannot be created; the
            message names the setting and the fix, never the password.
    """

    def __init__(
        self,
        url: str,
        *,
        max_size: int = 8,
        timeout: float = 2.0,
        statement_timeout: float | None = 30.0,
    ) -> None:
        require_extra("postgres", "The Postgres store")

        self._url = url
        self.safe_url = redact_url(url)
        """The URL with its password replaced by ``***``."""
        self.timeout = timeout
        self.max_size = max_size
        self.statement_timeout = statement_timeout
        self.breaker = CircuitBreaker("database", self._recover)
        """Open while the database is unavailable (see the class description)."""
        self._check_and_prepare()
        self.pool = self._new_pool()
        self.vector_version = self._vector_version()

    def __repr__(self) -> str:
        return f"PostgresDatabase({self.safe_url!r})"

    @property
    def sqlalchemy_url(self) -> str:
        """The URL for SQLAlchemy (``postgresql+psycopg://``), password included."""
        return _sqlalchemy_url(self._url)

    @property
    def connect_timeout(self) -> int:
        """Seconds to connect before giving up (libpq counts whole seconds, at least 2)."""
        return max(2, round(self.timeout))

    def _new_pool(self) -> Any:
        from psycopg_pool import ConnectionPool

        return ConnectionPool(
            _psycopg_url(self._url),
            min_size=1,
            max_size=self.max_size,
            timeout=self.timeout,
            kwargs={"autocommit": True, "connect_timeout": self.connect_timeout, **_KEEPALIVE},
            connection_class=_connection_class(self._connect_failed),
            configure=partial(_configure, statement_timeout=self.statement_timeout),
            check=ConnectionPool.check_connection,
            open=True,
            name="cogito-lc",
        )

    def _reason(self, error: Exception) -> str:
        return _scrub(" ".join(str(error).split()), self._url) or type(error).__name__

    def _connect_failed(self, error: Exception) -> None:
        """A pool connection attempt failed: the database is away, fail fast from now on."""
        self.breaker.trip(self._reason(error))

    def _recover(self) -> None:
        """The breaker's probe: raise while the database is away, else swap in a fresh pool."""
        import psycopg

        with psycopg.connect(
            _psycopg_url(self._url), autocommit=True, connect_timeout=self.connect_timeout
        ) as conn:
            conn.execute("SELECT 1")
        pool = self._new_pool()
        try:
            pool.wait(timeout=self.timeout)
        except Exception:
            pool.close()
            raise
        old, self.pool = self.pool, pool
        # Connections still out of the old pool are closed when they come back.
        threading.Thread(target=old.close, kwargs={"timeout": 5}, daemon=True).start()
        logger.info("database %s answers again: the pool was refilled", self.safe_url)

    def _check_and_prepare(self) -> None:
        import psycopg

        try:
            conn = psycopg.connect(
                _psycopg_url(self._url), autocommit=True, connect_timeout=self.connect_timeout
            )
        except psycopg.Error as error:
            raise DatabaseSetupError(self._describe_connect(error)) from None
        with conn:
            try:
                # Under the schema lock: replicas starting together on a new database
                # would otherwise race to create it (a unique violation for all but one).
                with conn.transaction():
                    conn.execute(_SCHEMA_LOCK)
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.Error as error:
                reason = _scrub(str(error).strip().splitlines()[0], self._url)
                msg = (
                    f"the database at {self.safe_url} ({_SETTING}) has no 'vector' extension "
                    f"and it cannot be created ({reason}); install pgvector on the server and "
                    "run 'CREATE EXTENSION vector;' as a user allowed to, then start again."
                )
                raise DatabaseSetupError(msg) from None

    def _describe_connect(self, error: Exception) -> str:
        reason = _scrub(" ".join(str(error).split()), self._url)
        lowered = reason.lower()
        if "password authentication failed" in lowered or "authentication" in lowered:
            fix = "check the user name and password in the URL"
        elif "does not exist" in lowered:
            fix = "create the database or fix its name in the URL"
        else:
            fix = "check the host and port in the URL and that Postgres is running and reachable"
        return f"cannot connect to the database at {self.safe_url} ({_SETTING}): {reason}; {fix}."

    def _vector_version(self) -> tuple[int, ...]:
        with self.connection() as conn:
            row = conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            ).fetchone()
        text = str(row[0]) if row else "0"
        return tuple(int(part) for part in re.findall(r"\d+", text))

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """A pooled connection (autocommit), or the one of the :meth:`atomic` block around.

        Raises:
            DatabaseUnavailableError: At once while the breaker is open; else when
                no connection comes within ``timeout`` or the database is lost
                mid-statement (which opens the breaker).
        """
        held = self._atomic_connection()
        if held is not None:
            yield held
            return
        import psycopg
        from psycopg.errors import LockNotAvailable, QueryCanceled

        pool, conn = self._getconn()
        try:
            with conn:
                yield conn
        except psycopg.OperationalError as error:
            if isinstance(error, (QueryCanceled, LockNotAvailable)):
                raise self._timed_out(error) from None
            if not _is_outage(error):
                raise  # a statement that failed alone: its own error, not "unavailable"
            self.breaker.trip(self._reason(error))
            raise self._unavailable(error) from None
        finally:
            pool.putconn(conn)

    def _getconn(self) -> tuple[Any, Any]:
        """A connection and its pool, waiting in short slices so an opened breaker ends the wait."""
        import psycopg
        from psycopg_pool import PoolTimeout

        deadline = time.monotonic() + self.timeout
        while True:
            if self.breaker.is_open:
                raise self._unavailable(None)
            pool = self.pool
            wait = min(_WAIT_SLICE, deadline - time.monotonic())
            try:
                return pool, pool.getconn(timeout=max(wait, 0.01))
            except PoolTimeout as error:
                if time.monotonic() >= deadline:
                    raise self._unavailable(error) from None
            except psycopg.OperationalError as error:  # the pool was just replaced and closed
                if pool is self.pool:
                    raise self._unavailable(error) from None

    def _timed_out(self, error: Exception) -> StatementTimeoutError:
        msg = (
            f"a statement on the database at {self.safe_url} ran past its time limit "
            f"({self._reason(error)}): another transaction held what it needed, or it is "
            "slow; retry shortly"
        )
        return StatementTimeoutError(msg)

    def _unavailable(self, error: Exception | None) -> DatabaseUnavailableError:
        reason = self.breaker.reason if error is None else self._reason(error)
        msg = f"the database at {self.safe_url} is not answering: {reason}"
        return DatabaseUnavailableError(msg)

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """A pooled connection inside one transaction (the :meth:`atomic` block's, in one)."""
        held = self._atomic_connection()
        if held is not None:
            yield held
            return
        with self.connection() as conn, conn.transaction():
            yield conn

    def _atomic_connection(self) -> Any | None:
        """The connection of this database's :meth:`atomic` block this thread is in, if any."""
        held = _ATOMIC.get()
        return held[1] if held is not None and held[0] is self else None

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """Run every statement of this thread inside the block in one transaction.

        Committed at the end, rolled back if the block raises or the replica dies
        in it. Nested blocks join the outer one.
        """
        if self._atomic_connection() is not None:
            yield
            return
        with self.connection() as conn, conn.transaction():
            token = _ATOMIC.set((self, conn))
            try:
                yield
            finally:
                _ATOMIC.reset(token)

    def migrate(self, component: str, steps: Sequence[str]) -> None:
        """Bring ``component`` to ``len(steps)``: run each SQL step not yet applied.

        Runs under an advisory lock, so replicas starting together apply each
        step once; the version reached is kept in ``cogito_schema``.
        """
        with self.transaction() as conn:
            conn.execute("SET LOCAL statement_timeout = 0")  # an index build takes its time
            conn.execute(_SCHEMA_LOCK)
            conn.execute(
                "CREATE TABLE IF NOT EXISTS cogito_schema "
                "(component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
            )
            row = conn.execute(
                "SELECT version FROM cogito_schema WHERE component = %s", (component,)
            ).fetchone()
            current = int(row[0]) if row else 0
            if current > len(steps):
                msg = (
                    f"{component} in {self.safe_url} is at schema version {current}, newer "
                    f"than this cogito-lc ({len(steps)}); upgrade cogito-lc."
                )
                raise DatabaseSetupError(msg)
            for step in steps[current:]:
                conn.execute(step)
            conn.execute(
                "INSERT INTO cogito_schema (component, version) VALUES (%s, %s) "
                "ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version",
                (component, len(steps)),
            )

    def close(self) -> None:
        """Stop probing and close the pool."""
        self.breaker.stop()
        self.pool.close()


def _configure(conn: Any, *, statement_timeout: float | None) -> None:
    from pgvector.psycopg import register_vector  # type: ignore[import-untyped]

    register_vector(conn)
    if statement_timeout is not None:
        conn.execute(f"SET statement_timeout = {max(1, round(statement_timeout * 1000))}")


def _connection_class(on_error: Callable[[Exception], None]) -> type[Any]:
    """A connection class that reports each failed connection attempt to ``on_error``."""
    import psycopg

    class _Connection(psycopg.Connection[Any]):
        @classmethod
        def connect(cls, *args: Any, **kwargs: Any) -> Any:
            try:
                return super().connect(*args, **kwargs)
            except psycopg.OperationalError as error:
                on_error(error)
                raise

    return _Connection


def _memories_steps(table: str, dimension: int) -> list[str]:
    name = _quote(table)
    columns = ",\n".join(f'"{column}" TEXT' for column in COLUMNS)
    create = f"""
        CREATE TABLE IF NOT EXISTS {name} (
            id TEXT PRIMARY KEY,
            content TEXT NOT NULL,
            embedding vector({dimension}) NOT NULL,
            {columns},
            langchain_metadata JSONB,
            seq BIGSERIAL,
            content_tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', content)) STORED
        )"""
    indexes = [
        f"CREATE INDEX IF NOT EXISTS {table}_embedding_hnsw ON {name} "
        "USING hnsw (embedding vector_cosine_ops)",
        text_index_statement(table),
        f"CREATE INDEX IF NOT EXISTS {table}_seq ON {name} (seq)",
        *(f'CREATE INDEX IF NOT EXISTS {table}_{key} ON {name} ("{key}")' for key in SCOPE_KEYS),
    ]
    return [";\n".join([create, *indexes]), *bm25_steps(table)]


def _held_dimension(database: PostgresDatabase, table: str) -> int | None:
    """The dimension of the table's ``embedding`` vector column (None: no such table or size)."""
    with database.connection() as conn:
        row = conn.execute(
            "SELECT a.atttypmod FROM pg_attribute AS a JOIN pg_type AS t ON t.oid = a.atttypid "
            "WHERE a.attrelid = to_regclass(%s) AND a.attname = 'embedding' "
            "AND NOT a.attisdropped AND t.typname = 'vector'",
            (_quote(table),),
        ).fetchone()
    return int(row[0]) if row is not None and int(row[0]) > 0 else None


def _sample(database: PostgresDatabase, table: str) -> StoredVector | None:
    """One stored memory's text and vector (None: the table holds none)."""
    with database.connection() as conn:
        row = conn.execute(
            f"SELECT content, embedding::text FROM {_quote(table)} "  # noqa: S608 - quoted name
            "WHERE embedding IS NOT NULL LIMIT 1"
        ).fetchone()
    if row is None:
        return None
    return StoredVector(str(row[0]), [float(x) for x in str(row[1]).strip("[]").split(",")])


def _write_text_index_directly(database: PostgresDatabase, table: str) -> None:
    """Turn the text index's pending list off where an earlier release left it on.

    Every search of a GIN index reads its whole list of pending entries (up to
    4 MB by default, until a vacuum merges it): in a table written on every turn,
    each query term's lookup read some 90 pages (0.5 ms) instead of 4. New
    tables are created without the list; an existing index is changed and its
    list emptied once. Not a schema step: the layout is the same, and an earlier
    release still opens the table.
    """
    index = f'"{table}_content_tsv"'
    with database.transaction() as conn:
        row = conn.execute(
            "SELECT reloptions FROM pg_class WHERE oid = %s::regclass", [index]
        ).fetchone()
        if row is None or "fastupdate=off" in (row[0] or []):
            return
        conn.execute("SET LOCAL statement_timeout = 0")  # the list is merged into the index
        conn.execute(_SCHEMA_LOCK)
        conn.execute(f"ALTER INDEX {index} SET (fastupdate = off)")
        conn.execute("SELECT gin_clean_pending_list(%s::regclass)", [index])
    logger.info("%s: the text index now takes writes directly (no pending list)", table)


@dataclass
class PostgresBinding:
    """Where a ``PGVectorStore`` made by :func:`open_postgres_store` keeps its rows."""

    database: PostgresDatabase
    table: str
    embeddings: Embeddings
    engine: Any = field(repr=False, default=None)


_BINDINGS: weakref.WeakKeyDictionary[VectorStore, PostgresBinding] = weakref.WeakKeyDictionary()
_BINDINGS_LOCK = threading.Lock()


def postgres_binding(store: VectorStore) -> PostgresBinding | None:
    """The database and table of a store made by :func:`open_postgres_store`, else None."""
    with _BINDINGS_LOCK:
        try:
            return _BINDINGS.get(store)
        except TypeError:
            return None


def open_postgres_store(
    url: str | PostgresDatabase,
    embeddings: Embeddings,
    *,
    collection: str = "cogito_memory",
) -> VectorStore:
    """A ``PGVectorStore`` over the memories table ``collection``, created if needed.

    Args:
        url: The database URL, or an open :class:`PostgresDatabase`.
        embeddings: The embedding model (its dimension sizes a new table).
        collection: The table name.

    Raises:
        DatabaseSetupError: If the database cannot be used (see
            :class:`PostgresDatabase`).
        ValueError: If the table holds vectors of another size than the model's, or
            made by another model (for embeddings built on first use, raised by each
            use of the store instead).
    """
    from langchain_postgres import PGEngine, PGVectorStore

    database = url if isinstance(url, PostgresDatabase) else PostgresDatabase(url)
    _quote(collection)
    held = _held_dimension(database, collection)
    holder = f"the Postgres table {collection!r}"
    if held is None:
        probed = probe_dimension(embeddings)
        database.migrate(f"memories:{collection}", _memories_steps(collection, probed))
        made = _held_dimension(database, collection) or probed  # another replica's, if first
        if made != probed:
            raise ValueError(dimension_mismatch(holder, made, probed))
    else:
        database.migrate(f"memories:{collection}", _memories_steps(collection, held))
        sample = _sample(database, collection)
        embeddings = checked_embeddings(embeddings, held, holder, sample)
    _write_text_index_directly(database, collection)
    with database.transaction() as conn:
        conn.execute("SET LOCAL statement_timeout = 0")  # a rebuild reads the whole table
        check_bm25_statistics(conn, collection)
    engine = PGEngine.from_connection_string(
        database.sqlalchemy_url,
        pool_pre_ping=True,
        pool_timeout=database.timeout,
        connect_args={"connect_timeout": database.connect_timeout},
    )
    store = PGVectorStore.create_sync(
        engine,
        embeddings,
        collection,
        id_column="id",
        content_column="content",
        embedding_column="embedding",
        metadata_columns=list(COLUMNS),
        metadata_json_column="langchain_metadata",
    )
    with _BINDINGS_LOCK:
        _BINDINGS[store] = PostgresBinding(database, collection, embeddings, engine)
    return store


# -- filters -----------------------------------------------------------------------

_SIMPLE = {"$eq": "=", "$ne": "<>", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_OPERATORS = frozenset({*_SIMPLE, "$in", "$nin"})


def where_to_sql(where: Mapping[str, Any] | None) -> tuple[str, list[Any]]:
    """A Postgres condition over the memories table equal to the ``where`` filter.

    Matches like :func:`cogito_lc._core.filters.where_predicate`: a memory
    without the key matches only ``$ne`` and ``$nin``; a value of another type
    never matches. Keys in :data:`COLUMNS` use their column (and its index).

    Example:
        ```python
        from cogito_lc.stores.postgres import where_to_sql

        sql, params = where_to_sql({"$and": [{"user_id": "a"}, {"n": {"$gt": 2}}]})
        assert params[0] == "a" and '("user_id" = %s)' in sql
        assert "jsonb_typeof" in sql  # a number compares only with numbers
        assert where_to_sql(None) == ("TRUE", [])
        ```
    """
    if where is None:
        return "TRUE", []
    return where_sql(where, _comparison)


def _comparison(key: str, condition: Any) -> tuple[str, list[Any]]:
    op, _, values = split_values(key, condition, _OPERATORS)
    if key in COLUMNS:
        return _column_comparison(f'"{key}"', op, values)
    return _json_comparison(key, op, values)


def _column_comparison(expr: str, op: str, values: list[Any]) -> tuple[str, list[Any]]:
    texts = [v for v in values if isinstance(v, str)]
    if op == "$in":
        return (f"({expr} = ANY(%s))", [texts]) if texts else ("FALSE", [])
    if op == "$nin":
        return f"({expr} IS NULL OR NOT ({expr} = ANY(%s)))", [texts]
    if not texts:  # a text column never equals or orders against a number
        return ("TRUE", []) if op == "$ne" else ("FALSE", [])
    if op == "$ne":
        return f"({expr} IS NULL OR {expr} <> %s)", texts
    return f"({expr} {_SIMPLE[op]} %s)", texts


def _json_comparison(key: str, op: str, values: list[Any]) -> tuple[str, list[Any]]:
    expr = "(langchain_metadata -> %s)"
    encoded = [json.dumps(v) for v in values]
    if op == "$in":
        return f"({expr} = ANY(%s::jsonb[]))", [key, encoded]
    if op == "$nin":
        return f"({expr} IS NULL OR NOT ({expr} = ANY(%s::jsonb[])))", [key, key, encoded]
    if op == "$ne":
        return f"({expr} IS NULL OR {expr} <> %s::jsonb)", [key, key, encoded[0]]
    if op == "$eq":
        return f"({expr} = %s::jsonb)", [key, encoded[0]]
    kind = "string" if isinstance(values[0], str) else "number"
    return (
        f"(jsonb_typeof({expr}) = '{kind}' AND {expr} {_SIMPLE[op]} %s::jsonb)",
        [key, key, encoded[0]],
    )


# -- the adapter -------------------------------------------------------------------------

_WRITTEN = ("id", "content", "embedding", *(f'"{c}"' for c in COLUMNS), "langchain_metadata")
"""The columns a write sets (``seq`` aside)."""
SELECT_COLUMNS = ", ".join(["id", "content", *(f'"{c}"' for c in COLUMNS), "langchain_metadata"])


def metadata_json(metadata: Mapping[str, Any]) -> str:
    """``metadata`` as JSON whose floats Postgres keeps as floats.

    Postgres holds a JSON number as an exact numeric and prints it without an
    exponent: ``1e+16`` (as :func:`json.dumps` writes it) would come back as the
    int ``10000000000000000``. A whole float is written with a decimal point
    instead (``10000000000000000.0``), which Postgres keeps, so it reads back a float.

    Example:
        ```python
        from cogito_lc.stores.postgres import metadata_json

        assert metadata_json({"n": 1e16, "r": 0.5}) == '{"n": 10000000000000000.0, "r": 0.5}'
        ```
    """
    pairs = (f"{json.dumps(key)}: {_json_value(value)}" for key, value in metadata.items())
    return "{" + ", ".join(pairs) + "}"


def _json_value(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return f"{int(value)}.0"
    if isinstance(value, Mapping):
        return metadata_json(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_json_value(item) for item in value) + "]"
    return json.dumps(value)


def row_document(row: Sequence[Any]) -> Document:
    """The memory of a row selected as :data:`SELECT_COLUMNS`."""
    doc_id, content = row[0], row[1]
    metadata: dict[str, Any] = dict(row[2 + len(COLUMNS)] or {})
    columns = zip(COLUMNS, row[2 : 2 + len(COLUMNS)], strict=True)
    metadata.update({column: value for column, value in columns if value is not None})
    return Document(page_content=content, metadata=metadata, id=doc_id)


class PostgresAdapter(BatchedSearchAdapter):
    """A store made by :func:`open_postgres_store`: every operation one SQL statement.

    Filters go into the ``WHERE`` clause (scope keys hit their indexes); a
    filtered search small enough is ranked exactly, a larger one through HNSW
    with a wide candidate list (and iterative scans on pgvector 0.8+).
    """

    def __init__(self, store: VectorStore, binding: PostgresBinding) -> None:
        super().__init__(store)
        self.binding = binding
        self.database = binding.database
        self.table = _quote(binding.table)

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """The table's write lock, held in a transaction of its own by every replica.

        A transaction-level advisory lock: released when the transaction ends,
        and by the server when the connection is lost, so a crashed replica
        never leaves it held. A replica that froze or lost its network holding
        it loses it after ``WRITE_LOCK_LEASE_S``; a live one renews it meanwhile.

        Raises:
            WriteLockTimeoutError: If another replica held it for ``WRITE_LOCK_WAIT_S`` (or the
                database's shorter ``statement_timeout``).
        """
        import psycopg

        wait = min(WRITE_LOCK_WAIT_S, self.database.statement_timeout or WRITE_LOCK_WAIT_S)
        lease = WRITE_LOCK_LEASE_S
        # Rolled back at the end: it writes nothing. Idle longer than the lease (the
        # replica froze or is cut off), the server ends it, and the lock goes with it.
        with self.database.connection() as conn, conn.transaction(force_rollback=True):
            conn.execute(f"SET LOCAL lock_timeout = '{int(wait * 1000)}ms'")
            conn.execute(f"SET LOCAL idle_in_transaction_session_timeout = '{int(lease * 1000)}ms'")
            try:
                conn.execute(_WRITE_LOCK, [self.binding.table])
            except (psycopg.errors.LockNotAvailable, psycopg.errors.QueryCanceled):
                msg = (
                    f"another writer held the write lock of table {self.binding.table!r} for "
                    f"{wait:g} s (a supersession or forget under way on another replica); "
                    "retry the write."
                )
                raise WriteLockTimeoutError(msg) from None
            with _renewed(conn, lease / 5, self.binding.table):
                yield

    def atomic(self) -> AbstractContextManager[object]:
        """One transaction for the block's statements (see :meth:`PostgresDatabase.atomic`)."""
        return self.database.atomic()

    # -- reads and deletes ------------------------------------------------------

    def check_filters_by_metadata(self, purpose: str) -> None:
        return None

    def get(self, ids: list[str], where: Mapping[str, Any] | None = None) -> list[Document]:
        ids = [i for i in ids if "\x00" not in i]  # text columns hold no NUL: never stored
        if not ids:
            return []
        sql, params = where_to_sql(where)
        with self.database.connection() as conn:
            rows = conn.execute(
                f"SELECT {SELECT_COLUMNS} FROM {self.table} WHERE id = ANY(%s) AND {sql}",  # noqa: S608
                [list(ids), *params],
            ).fetchall()
        found = {row[0]: row_document(row) for row in rows}
        return [found[i] for i in dict.fromkeys(ids) if i in found]

    def page(self, where: Mapping[str, Any] | None, limit: int, offset: int) -> list[Document]:
        sql, params = where_to_sql(where)
        with self.database.connection() as conn:
            rows = conn.execute(
                f"SELECT {SELECT_COLUMNS} FROM {self.table} WHERE {sql} "  # noqa: S608
                "ORDER BY seq LIMIT %s OFFSET %s",
                [*params, limit, offset],
            ).fetchall()
        return [row_document(row) for row in rows]

    def count(self, where: Mapping[str, Any] | None = None) -> int:
        sql, params = where_to_sql(where)
        with self.database.connection() as conn:
            row = conn.execute(
                f"SELECT count(*) FROM {self.table} WHERE {sql}",  # noqa: S608
                params,
            ).fetchone()
        return int(row[0]) if row else 0

    def scope_counts(
        self,
        keys: Sequence[str],
        where: Mapping[str, Any] | None = None,
        *,
        limit: int | None = None,
    ) -> ScopeCounts:
        """Counted in one ``GROUP BY`` over the scope columns; only ``limit`` rows come back."""
        names = scope_keys(keys, limit)
        sql, params = where_to_sql(where)
        columns = ", ".join(f'"{key}"' for key in names)
        present = " AND ".join(f'"{key}" IS NOT NULL' for key in names)
        order = ", ".join(f'"{key}" COLLATE "C"' for key in names)
        with self.database.connection() as conn:
            rows = conn.execute(
                f"SELECT {columns}, count(*), count(*) OVER (), sum(count(*)) OVER () "  # noqa: S608
                f"FROM {self.table} WHERE {present} AND {sql} GROUP BY {columns} "
                f"ORDER BY {order} LIMIT %s",
                [*params, None if limit is None else max(limit, 1)],
            ).fetchall()
        width = len(names)
        counts = {tuple(row[:width]): int(row[width]) for row in rows[:limit]}
        scopes, documents = (int(rows[0][width + 1]), int(rows[0][width + 2])) if rows else (0, 0)
        return ScopeCounts(counts=counts, scopes=scopes, documents=documents)

    def ids_in(self, where: Mapping[str, Any] | None) -> list[str]:
        sql, params = where_to_sql(where)
        with self.database.connection() as conn:
            rows = conn.execute(
                f"SELECT id FROM {self.table} WHERE {sql} ORDER BY seq",  # noqa: S608
                params,
            ).fetchall()
        return [row[0] for row in rows]

    def delete(self, ids: list[str], where: Mapping[str, Any] | None = None) -> None:
        if not ids:
            return
        sql, params = where_to_sql(where)
        with self.database.connection() as conn:
            conn.execute(
                f"DELETE FROM {self.table} WHERE id = ANY(%s) AND {sql}",  # noqa: S608
                [list(ids), *params],
            )

    def set_metadata(
        self, updates: Mapping[str, Mapping[str, Any]], where: Mapping[str, Any] | None = None
    ) -> list[Document]:
        """Merge the keys into each row's JSON metadata in one transaction (text untouched)."""
        if any(key in COLUMNS for keys in updates.values() for key in keys):
            msg = f"set_metadata sets JSON metadata keys only, not the columns {COLUMNS}."
            raise ValueError(msg)
        sql, params = where_to_sql(where)
        with self.database.transaction() as conn:
            for doc_id in sorted(updates):  # one lock order: concurrent updates never deadlock
                conn.execute(
                    f"UPDATE {self.table} SET langchain_metadata = "  # noqa: S608
                    "coalesce(langchain_metadata, '{}'::jsonb) || %s::jsonb "
                    f"WHERE id = %s AND {sql}",
                    [metadata_json(updates[doc_id]), doc_id, *params],
                )
        return self.get(list(updates), where)

    def created_by(self, where: Mapping[str, Any] | None, when: datetime) -> bool:
        sql, params = where_to_sql(where)
        with self.database.connection() as conn:
            rows = conn.execute(
                f"SELECT created_at FROM {self.table} WHERE {sql} "  # noqa: S608
                "ORDER BY created_at LIMIT 1",
                params,
            ).fetchall()
        if not rows:
            return False
        first = parse_timestamp(rows[0][0])
        return first is None or first <= when

    def recent(self, limit: int) -> list[Document]:
        if limit <= 0:
            return []
        with self.database.connection() as conn:
            rows = conn.execute(
                f"SELECT {SELECT_COLUMNS} FROM {self.table} ORDER BY seq DESC LIMIT %s",  # noqa: S608
                [limit],
            ).fetchall()
        return [row_document(row) for row in reversed(rows)]

    def vectors_for(self, documents: Sequence[Document]) -> list[list[float]] | None:
        """The documents embedded now, before the write lock other replicas wait on."""
        return self._embedded(documents)

    def replace(self, document: Document, vector: Sequence[float] | None = None) -> None:
        """Write ``document`` over the row holding its id (an upsert), with ``vector`` if given."""
        [embedded] = [list(vector)] if vector is not None else self._embedded([document])
        row = self._row(document, embedded)
        updated = ", ".join(f"{name} = EXCLUDED.{name}" for name in _WRITTEN[1:])
        with self.database.connection() as conn:
            conn.execute(
                f"INSERT INTO {self.table} ({', '.join(_WRITTEN)}) "  # noqa: S608
                f"VALUES ({', '.join(['%s'] * len(row))}) ON CONFLICT (id) DO UPDATE SET {updated}",
                row,
            )

    def _embedded(self, documents: Sequence[Document]) -> list[list[float]]:
        return self.binding.embeddings.embed_documents([d.page_content for d in documents])

    def add_new(
        self, documents: Sequence[Document], vectors: Sequence[Sequence[float]] | None = None
    ) -> set[str]:
        """Insert these documents in one statement; ids already held are left as they are.

        Returns:
            The ids inserted (a concurrent writer may have inserted the others).
        """
        if not documents:
            return set()
        if vectors is None:
            vectors = self._embedded(documents)
        placeholders = ", ".join(["%s"] * (len(_WRITTEN) + 1))
        with self.database.connection() as conn:
            seqs = self._next_seqs(conn, len(documents))
            rows = [
                [*self._row(doc, vector), seq]
                for doc, vector, seq in zip(documents, vectors, seqs, strict=True)
            ]
            rows.sort(key=lambda row: str(row[0]))  # one lock order: batches never deadlock
            values = ", ".join([f"({placeholders})"] * len(rows))
            found = conn.execute(
                f"INSERT INTO {self.table} ({', '.join(_WRITTEN)}, seq) VALUES {values} "  # noqa: S608
                "ON CONFLICT (id) DO NOTHING RETURNING id",
                [value for row in rows for value in row],
            ).fetchall()
        return {row[0] for row in found}

    @staticmethod
    def _row(document: Document, vector: Sequence[float]) -> list[Any]:
        """The values of :data:`_WRITTEN` for ``document`` and its vector."""
        columns = [_as_text(document.metadata.get(c)) for c in COLUMNS]
        extra = {k: v for k, v in document.metadata.items() if k not in COLUMNS}
        vector_array = np.asarray(vector, dtype=np.float32)
        return [document.id, document.page_content, vector_array, *columns, metadata_json(extra)]

    def _next_seqs(self, conn: Any, count: int) -> list[int]:
        """``count`` values of the table's insertion order, ascending: one per document."""
        found = conn.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, 'seq')) FROM generate_series(1, %s)",
            (self.table, count),
        ).fetchall()
        return sorted(int(row[0]) for row in found)

    # -- searches -----------------------------------------------------------------

    def search_by_vectors(
        self,
        queries: Sequence[str],
        vectors: Vector,
        fetch_ks: Sequence[int],
        search_kwargs: Mapping[str, Any],
        stored: StoredVectors | None = None,
    ) -> list[Run]:
        """All query vectors searched in one round trip, the ``filter`` keyword in ``WHERE``.

        With ``stored``, the rows' vectors are read with them (in binary) and those
        of documents it does not know land in ``stored.found``.
        """
        found = self._nearest_many(
            list(vectors), list(fetch_ks), search_kwargs.get("filter"), stored
        )
        return [([doc for doc, _ in hits], False) for hits in found]

    def stored_vectors(
        self, texts: Mapping[str, str], where: Mapping[str, Any] | None = None
    ) -> list[Any] | None:
        """The vectors read by id, in binary: parsing their text costs more than reading them."""
        if not texts:
            return []
        sql, params = where_to_sql(where)
        with self.database.connection() as conn:
            rows = conn.execute(
                f"SELECT id, content, embedding FROM {self.table} "  # noqa: S608
                f"WHERE id = ANY(%s) AND {sql}",
                [list(texts), *params],
                binary=True,
            ).fetchall()
        found = {row[0]: row[2] for row in rows if texts.get(row[0]) == row[1]}
        if set(found) != set(texts):
            return None
        return [np.asarray(found[key], dtype=np.float32) for key in texts]

    def query_vector(self, text: str) -> list[float] | None:
        """``text`` embedded now, before the write lock other replicas wait on."""
        return self.binding.embeddings.embed_query(text)

    def scored_search(
        self,
        text: str,
        k: int,
        where: Mapping[str, Any] | None = None,
        vector: Sequence[float] | None = None,
    ) -> list[ScoredDocument]:
        """The ``k`` nearest memories matching ``where``, scored by cosine similarity."""
        embedded = self.query_vector(text) if vector is None else vector
        return self._nearest(np.asarray(embedded, dtype=np.float32), k, where)

    def _nearest(self, vector: Any, k: int, where: Any) -> list[ScoredDocument]:
        return self._nearest_many([vector], [k], where)[0]

    def _nearest_many(
        self,
        vectors: Sequence[Any],
        ks: Sequence[int],
        where: Any,
        stored: StoredVectors | None = None,
    ) -> list[list[ScoredDocument]]:
        sql, params = where_to_sql(where)
        columns = SELECT_COLUMNS if stored is None else f"{SELECT_COLUMNS}, embedding"
        found: list[list[ScoredDocument]] = []
        with self.database.connection() as conn:
            plan = _SearchPlan() if where is None else self._filtered_plan(conn, where, sql, params)
            statement = (
                f"SELECT {columns}, embedding <=> %s AS distance "  # noqa: S608
                f"FROM {self.table} WHERE {sql} ORDER BY {plan.order} LIMIT %s"
            )
            # Settings, searches and commit sent at once: one round trip.
            with conn.pipeline(), conn.transaction():
                for setting in plan.settings:
                    conn.execute(setting)
                cursors = []
                for query, k in zip(_vectors(vectors), ks, strict=True):
                    if plan.wide_hnsw:  # each search's own list: a wider one costs more
                        conn.execute(f"SET LOCAL hnsw.ef_search = {_candidate_list(k)}")
                    arguments = [query, *params, query, k]
                    cursors.append(conn.execute(statement, arguments, binary=stored is not None))
            for cursor in cursors:
                rows = cursor.fetchall()
                if stored is not None:
                    rows, read = split_vectors(rows)
                    stored.found.update(
                        (doc_id, vector)
                        for doc_id, vector in read.items()
                        if not stored.known(doc_id)
                    )
                found.append([(row_document(row[:-1]), 1.0 - float(row[-1])) for row in rows])
        return found

    def _filtered_plan(self, conn: Any, where: Any, sql: str, params: list[Any]) -> _SearchPlan:
        """How to search with a filter ``where`` (``sql`` and ``params`` in SQL)."""
        if self.database.vector_version >= (0, 8):
            return _SearchPlan(settings=("SET LOCAL hnsw.iterative_scan = strict_order",))
        matching, held = self._matching_and_held(conn, where, sql, params)
        if matching <= EXACT_SEARCH_ROWS and 2 * matching < held:
            return _SearchPlan(order=_EXACT_ORDER)
        # Most rows match (or too many to rank exactly): HNSW, a wide candidate list.
        return _SearchPlan(wide_hnsw=True)

    def _matching_and_held(
        self, conn: Any, where: Any, sql: str, params: list[Any]
    ) -> tuple[int, int]:
        """The rows matching ``where`` (``sql`` and ``params`` in SQL) and the rows held.

        As far as a search plan needs them: a filter on scope keys alone is answered
        by the BM25 counters, one row per scope, kept in the transaction of every
        write; another is counted from the rows, each count stopping where the
        plan's choice no longer changes.
        """
        if scope_part(where) == where:
            statement = (
                f"SELECT coalesce(sum(rows) FILTER (WHERE {sql}), 0), "  # noqa: S608
                f'coalesce(sum(rows), 0) FROM "{stats_table(self.binding.table)}"'
            )
        else:
            statement = (
                f"SELECT (SELECT count(*) FROM (SELECT 1 FROM {self.table} WHERE {sql} "  # noqa: S608
                f"LIMIT %s) AS matching), (SELECT count(*) FROM (SELECT 1 FROM {self.table} "
                "LIMIT %s) AS held)"
            )
            params = [*params, EXACT_SEARCH_ROWS + 1, 2 * EXACT_SEARCH_ROWS + 2]
        row = conn.execute(statement, params).fetchone()
        return (int(row[0]), int(row[1])) if row is not None else (0, 0)


_EXACT_ORDER = "(embedding <=> %s) + 0"
"""An order the HNSW index cannot serve: the matching rows are ranked exactly."""


@dataclass(frozen=True)
class _SearchPlan:
    """How a search runs: its order, the settings sent first, and the HNSW candidate list.

    With ``wide_hnsw``, each search gets a list widened for its ``k``: pgvector
    before 0.8 filters after the scan.
    """

    order: str = "embedding <=> %s"
    settings: tuple[str, ...] = ()
    wide_hnsw: bool = False


def _candidate_list(k: int) -> int:
    """The HNSW candidate list (``hnsw.ef_search``) a filtered search for ``k`` rows gets."""
    return min(1000, max(100, k * 10))


def split_vectors(rows: Sequence[Sequence[Any]]) -> tuple[list[tuple[Any, ...]], dict[str, Vector]]:
    """Rows selected as ``SELECT_COLUMNS, embedding, <score>``, split.

    Returns:
        The rows without their embedding, and each row's vector (float32) by id.
    """
    vectors = {row[0]: np.asarray(row[-2], dtype=np.float32) for row in rows}
    return [(*row[:-2], row[-1]) for row in rows], vectors


def _vectors(vectors: Sequence[Any]) -> list[Any]:
    return [np.asarray(vector, dtype=np.float32) for vector in vectors]


def _as_text(value: Any) -> str | None:
    return None if value is None else str(value)


def _postgres_adapter(store: VectorStore) -> StoreAdapter | None:
    binding = postgres_binding(store)
    return None if binding is None else PostgresAdapter(store, binding)


register_adapter(_postgres_adapter)
