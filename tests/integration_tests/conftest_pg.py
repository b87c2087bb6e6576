"""A private Postgres 16 with pgvector for the integration tier (pgserver, from PyPI)."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


@contextmanager
def private_postgres() -> Iterator[Any]:
    """A pgserver instance in a fresh directory, stopped and deleted afterwards.

    The directory is traversable by every user: run as root, pgserver runs
    Postgres as its own ``pgserver`` user, which must reach the data directory
    (pytest's own temporary directories are private to their owner).
    """
    pgserver = pytest.importorskip("pgserver")
    parent = Path(tempfile.mkdtemp(prefix="cogito-pg-"))
    parent.chmod(0o755)
    server = pgserver.get_server(parent / "data", cleanup_mode="delete")
    try:
        yield server
    finally:
        server.cleanup()
        shutil.rmtree(parent, ignore_errors=True)


def stop_postgres(pid: int | None) -> None:
    """Fast shutdown of the postmaster (SIGINT), as an operator's restart does."""
    assert pid is not None
    os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    pytest.fail("Postgres did not stop within 30 s")


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """The URL of a private Postgres server for the whole session."""
    with private_postgres() as server:
        yield server.get_uri()


@pytest.fixture
def pg_collection() -> str:
    """A fresh table name, so tests sharing the server never see each other's memories."""
    return f"it_{uuid.uuid4().hex[:12]}"


def close_postgres_memory(memory: Any) -> None:
    """Give back the connections of a MemoryStore made by ``from_database_url``.

    The tests share one server with a bounded number of connections; a store
    left open keeps its pool's connections until the process ends.
    """
    from cogito_lc.stores.postgres import postgres_binding

    binding = postgres_binding(memory.vectorstore)
    if binding is None:
        return
    binding.database.close()
    if binding.engine is not None:
        binding.engine._run_as_sync(binding.engine.close())


_OPEN_MEMORIES: list[Any] = []


def closed_after_test(memory: Any) -> Any:
    """``memory`` (made by ``from_database_url``), closed when the running test ends."""
    _OPEN_MEMORIES.append(memory)
    return memory


@pytest.fixture(autouse=True)
def close_postgres_memories() -> Iterator[None]:
    """Close the stores the test gave to :func:`closed_after_test`."""
    yield
    while _OPEN_MEMORIES:
        close_postgres_memory(_OPEN_MEMORIES.pop())
