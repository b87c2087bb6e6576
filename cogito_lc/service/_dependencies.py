"""The servers a memory service depends on, each behind a circuit breaker.

A Postgres database (``database_url``) brings its own breaker
(:attr:`PostgresDatabase.breaker <cogito_lc.stores.postgres.PostgresDatabase.breaker>`:
its pool trips it); a Chroma server (``chroma_host``) gets one here, probed with
the client's heartbeat, and bounded HTTP timeouts (the chromadb client waits
forever by default). The service checks the breakers before each request, so
while a dependency is away every request is answered 503 with ``Retry-After`` at
once, and trips them on the failures it sees.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.vectorstores import VectorStore

from cogito_lc._core.breaker import CircuitBreaker
from cogito_lc._core.transport import TRANSPORT_ERROR_NAMES, exception_chain
from cogito_lc.stores.postgres import postgres_binding

__all__ = [
    "CHROMA_CONNECT_TIMEOUT",
    "CHROMA_REQUEST_TIMEOUT",
    "DATABASE",
    "Dependency",
    "dependencies_of",
    "is_chroma_down",
    "is_database_down",
]

logger = logging.getLogger(__name__)

DATABASE = "database"
"""The name of the Postgres dependency (the 503 detail says "the database is unavailable")."""
CHROMA = "Chroma server"
"""The name of the Chroma server dependency."""
CHROMA_CONNECT_TIMEOUT = 2.0
"""Seconds to connect to a Chroma server before the request fails (503)."""
CHROMA_REQUEST_TIMEOUT = 15.0
"""Seconds a Chroma server may take to answer a request."""

_DATABASE_DOWN = frozenset(
    {"DatabaseUnavailableError", "OperationalError", "PoolTimeout", "InterfaceError"}
)
_NOT_AN_OUTAGE = frozenset({"QueryCanceled", "LockNotAvailable"})


def is_database_down(exc: BaseException) -> bool:
    """A Postgres that stopped answering (restart, network cut): the next try may work."""
    for item in exception_chain(exc):
        module = type(item).__module__
        postgres = module.startswith(("psycopg", "sqlalchemy", "cogito_lc.stores.postgres"))
        if postgres and type(item).__name__ in _DATABASE_DOWN:
            return True
    return False


def _engine_outage(exc: BaseException) -> bool:
    """A connection error of the SQLAlchemy engine (the pool trips the breaker on its own)."""
    chain = list(exception_chain(exc))
    if any(type(item).__name__ in _NOT_AN_OUTAGE for item in chain):
        return False  # a cancelled statement: the server answered
    return any(
        type(item).__module__.startswith("sqlalchemy")
        and type(item).__name__ in {"OperationalError", "InterfaceError"}
        for item in chain
    )


def _raised_in(exc: BaseException, package: str) -> bool:
    traceback = exc.__traceback__
    while traceback is not None:
        if str(traceback.tb_frame.f_globals.get("__name__", "")).startswith(package):
            return True
        traceback = traceback.tb_next
    return False


def is_chroma_down(exc: BaseException) -> bool:
    """A Chroma server that did not answer: a transport error raised inside the chromadb client."""
    for item in exception_chain(exc):
        transport = isinstance(item, (ConnectionError, TimeoutError)) or any(
            cls.__name__ in TRANSPORT_ERROR_NAMES for cls in type(item).__mro__
        )
        if transport and _raised_in(item, "chromadb."):
            return True
    return False


@dataclass
class Dependency:
    """A server the service needs, its breaker, and how to tell its failures."""

    name: str
    """How errors and ``/health`` name it (``database``, ``Chroma server``)."""
    breaker: CircuitBreaker
    """Open while it is away."""
    is_failure: Callable[[BaseException], bool]
    """Whether an exception means it is away."""
    owned: bool = False
    """The service made the breaker (and stops it on shutdown)."""

    def note(self, exc: BaseException) -> None:
        """Open the breaker if ``exc`` says the dependency is away."""
        if self.is_failure(exc):
            self.breaker.trip(f"{type(exc).__name__}: {exc}"[:300])


def dependencies_of(vectorstore: VectorStore) -> list[Dependency]:
    """The dependencies of a service over ``vectorstore`` (none for an embedded store)."""
    binding = postgres_binding(vectorstore)
    if binding is not None:
        breaker = binding.database.breaker
        return [Dependency(DATABASE, breaker, _engine_outage)]
    client = _chroma_server_client(vectorstore)
    if client is not None:
        _bound_chroma_timeouts(client)
        breaker = CircuitBreaker(CHROMA, client.heartbeat)
        return [Dependency(CHROMA, breaker, is_chroma_down, owned=True)]
    return []


def _chroma_server_client(vectorstore: VectorStore) -> Any:
    """The chromadb client of a ``langchain_chroma.Chroma`` on a Chroma server, else None."""
    client = getattr(vectorstore, "_client", None)
    server = getattr(client, "_server", None)
    if server is None or type(server).__module__ != "chromadb.api.fastapi":
        return None
    return client


def _bound_chroma_timeouts(client: Any) -> None:
    """Give the chromadb HTTP session finite timeouts (it has none, and no setting for one)."""
    import httpx

    session = getattr(client._server, "_session", None)  # no public setting
    if not isinstance(session, httpx.Client):
        logger.info("the chromadb client has no httpx session: its timeouts are left as they are")
        return
    session.timeout = httpx.Timeout(CHROMA_REQUEST_TIMEOUT, connect=CHROMA_CONNECT_TIMEOUT)
