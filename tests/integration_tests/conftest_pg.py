"""A private Postgres 16 with pgvector for the integration tier (pgserver, from PyPI)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def pg_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a Postgres server started in a temporary directory, deleted afterwards."""
    pgserver = pytest.importorskip("pgserver")
    server = pgserver.get_server(tmp_path_factory.mktemp("pg"), cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


@pytest.fixture
def pg_collection() -> str:
    """A fresh table name, so tests sharing the server never see each other's memories."""
    return f"it_{uuid.uuid4().hex[:12]}"
