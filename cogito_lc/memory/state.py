"""State stores: where snapshots and vocabulary maps are kept (a directory, or a database).

A :class:`StateStore` holds small named text documents (the snapshot, its
metadata, the vocabulary map) and writes them atomically. The embedded store
keeps them as files next to Chroma (:class:`DirectoryStateStore`, unchanged file
names and layout); a Postgres store keeps them in a table
(:class:`PostgresStateStore`), so every replica of the service serves what
another built. Another backend (a Chroma server, an object store) implements the
same four methods.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from cogito_lc.stores.postgres import PostgresDatabase
from cogito_lc.stores.qdrant import point_id

__all__ = [
    "SNAPSHOT_FILES",
    "ChromaStateStore",
    "DirectoryStateStore",
    "PostgresStateStore",
    "QdrantStateStore",
    "StateStore",
]

SNAPSHOT_FILES = ("snapshot.md", "snapshot.json")
"""The documents a scope's snapshot is saved as: its text, then its metadata."""


@runtime_checkable
class StateStore(Protocol):
    """Named text documents, written atomically; ``child`` gives a namespace inside."""

    def read(self, name: str) -> str | None:
        """The document ``name``, or None when there is none."""

    def write(self, documents: Mapping[str, str]) -> None:
        """Write these documents (name to text), each replaced whole, never half-written."""

    def delete(self, names: Sequence[str]) -> None:
        """Delete these documents (unknown names are ignored)."""

    def child(self, name: str) -> StateStore:
        """The state store of a namespace inside this one (e.g. one scope)."""

    def location(self, name: str) -> str:
        """Where the document ``name`` lives, for people (a path, a table row)."""


class DirectoryStateStore:
    """Documents as files in a directory, each replaced atomically (write, then rename).

    Example:
        ```python
        import tempfile

        from cogito_lc.memory.state import DirectoryStateStore

        state = DirectoryStateStore(tempfile.mkdtemp())
        state.child("scopes/a1").write({"snapshot.md": "# Memory"})
        assert state.child("scopes/a1").read("snapshot.md") == "# Memory"
        assert state.read("snapshot.md") is None
        ```
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def __repr__(self) -> str:
        return f"DirectoryStateStore({str(self.directory)!r})"

    def read(self, name: str) -> str | None:
        """The file ``name``, or None when there is none."""
        path = self.directory / name
        if not path.is_file():
            return None
        return path.read_text(encoding="utf-8")

    def write(self, documents: Mapping[str, str]) -> None:
        """Write each file to a temporary file of its own, then rename it over the old one.

        Each write has its own temporary file, so writers in other threads and
        processes never rename one another's, and a reader sees a whole file.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        for name, text in documents.items():
            _replace_file(self.directory / name, text)

    def delete(self, names: Sequence[str]) -> None:
        """Delete these files (missing ones are ignored)."""
        for name in names:
            (self.directory / name).unlink(missing_ok=True)

    def child(self, name: str) -> DirectoryStateStore:
        """The subdirectory ``name``."""
        return DirectoryStateStore(self.directory / name)

    def location(self, name: str) -> str:
        """The file's path."""
        return str(self.directory / name)


def _replace_file(path: Path, text: str) -> None:
    """Write ``text`` to a new temporary file beside ``path``, then rename it over ``path``.

    The temporary file's name is unique (made with ``x``, so never another writer's)
    and it is created like any other file, with the permissions the umask gives.
    """
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with tmp.open("x", encoding="utf-8") as file:
            file.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


_STATE_STEPS = [
    """
    CREATE TABLE IF NOT EXISTS cogito_state (
        name TEXT PRIMARY KEY,
        content TEXT NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )
    """
]


class PostgresStateStore:
    """Documents as rows of the ``cogito_state`` table, written in one transaction.

    Names are kept under a prefix (``<collection>/`` for a MemoryStore made by
    :meth:`~cogito_lc.MemoryStore.from_database_url`), so collections sharing a
    database keep their own state.

    Example:
        ```python
        # needs: a Postgres database
        from cogito_lc.stores.postgres import PostgresDatabase
        from cogito_lc.memory.state import PostgresStateStore

        state = PostgresStateStore(PostgresDatabase("postgresql://me:secret@db/app"), "notes/")
        state.write({"snapshot.md": "# Memory"})
        assert state.read("snapshot.md") == "# Memory"
        ```
    """

    def __init__(self, database: PostgresDatabase, prefix: str = "") -> None:
        self.database = database
        self.prefix = prefix
        database.migrate("state", _STATE_STEPS)

    def __repr__(self) -> str:
        return f"PostgresStateStore({self.database!r}, {self.prefix!r})"

    def read(self, name: str) -> str | None:
        """The row ``name`` (under the prefix), or None when there is none."""
        with self.database.connection() as conn:
            row = conn.execute(
                "SELECT content FROM cogito_state WHERE name = %s", (self.prefix + name,)
            ).fetchone()
        return None if row is None else str(row[0])

    def write(self, documents: Mapping[str, str]) -> None:
        """Upsert every row in one transaction: all are written, or none."""
        with self.database.transaction() as conn:
            for name, text in documents.items():
                conn.execute(
                    "INSERT INTO cogito_state (name, content) VALUES (%s, %s) "
                    "ON CONFLICT (name) DO UPDATE "
                    "SET content = EXCLUDED.content, updated_at = now()",
                    (self.prefix + name, text),
                )

    def delete(self, names: Sequence[str]) -> None:
        """Delete these documents (unknown names are ignored)."""
        with self.database.connection() as conn:
            conn.execute(
                "DELETE FROM cogito_state WHERE name = ANY(%s)",
                ([self.prefix + name for name in names],),
            )

    def child(self, name: str) -> PostgresStateStore:
        """The rows under ``<prefix><name>/``."""
        child = PostgresStateStore.__new__(PostgresStateStore)
        child.database = self.database
        child.prefix = f"{self.prefix}{name}/"
        return child

    def location(self, name: str) -> str:
        """``postgres:cogito_state/<prefix><name>``."""
        return f"postgres:cogito_state/{self.prefix}{name}"


class ChromaStateStore:
    """Documents in a collection of their own beside the memories, on a Chroma server.

    A service whose memories live on a Chroma server (``COGITO_CHROMA_HOST``)
    keeps its snapshots and vocabulary maps there too, so no local directory is
    needed and every process using the server sees what another built. Each
    write is one ``upsert`` of every document (one record batch in Chroma).

    Example:
        ```python
        import chromadb

        from cogito_lc.memory.state import ChromaStateStore

        collection = chromadb.EphemeralClient().get_or_create_collection("notes-state")
        state = ChromaStateStore(collection)
        state.child("scopes/a1").write({"snapshot.md": "# Memory"})
        assert state.child("scopes/a1").read("snapshot.md") == "# Memory"
        assert state.read("snapshot.md") is None
        ```
    """

    def __init__(self, collection: Any, prefix: str = "") -> None:
        self.collection = collection
        self.prefix = prefix

    def __repr__(self) -> str:
        return f"ChromaStateStore({self.collection.name!r}, {self.prefix!r})"

    def read(self, name: str) -> str | None:
        """The document ``name`` (under the prefix), or None when there is none."""
        found = self.collection.get(ids=[self.prefix + name], include=["documents"])
        documents = found.get("documents") or []
        return str(documents[0]) if documents and documents[0] is not None else None

    def write(self, documents: Mapping[str, str]) -> None:
        """Upsert every document in one call."""
        if not documents:
            return
        self.collection.upsert(
            ids=[self.prefix + name for name in documents],
            documents=list(documents.values()),
            embeddings=[[0.0]] * len(documents),
        )

    def delete(self, names: Sequence[str]) -> None:
        """Delete these documents (unknown names are ignored)."""
        if names:
            self.collection.delete(ids=[self.prefix + name for name in names])

    def child(self, name: str) -> ChromaStateStore:
        """The documents under ``<prefix><name>/``."""
        return ChromaStateStore(self.collection, f"{self.prefix}{name}/")

    def location(self, name: str) -> str:
        """``chroma:<collection>/<prefix><name>``."""
        return f"chroma:{self.collection.name}/{self.prefix}{name}"


class QdrantStateStore:
    """Documents in a collection of their own beside the memories, on a Qdrant server.

    A service whose memories live on a Qdrant server (``COGITO_QDRANT_URL``) keeps
    its snapshots, vocabulary maps and forget audit records there too, so every
    replica sees what another wrote. Each document is one point (a one-number
    vector, the text in the payload); a write is one ``upsert``.

    Example:
        ```python
        from qdrant_client import QdrantClient

        from cogito_lc.memory.state import QdrantStateStore

        state = QdrantStateStore(QdrantClient(location=":memory:"), "notes-state")
        state.child("scopes/a1").write({"snapshot.md": "# Memory"})
        assert state.child("scopes/a1").read("snapshot.md") == "# Memory"
        assert state.read("snapshot.md") is None
        ```
    """

    def __init__(self, client: Any, collection: str, prefix: str = "") -> None:
        self.client = client
        self.collection = collection
        self.prefix = prefix
        if not prefix:  # a child shares its parent's collection, made already
            _ensure_state_collection(client, collection)

    def __repr__(self) -> str:
        return f"QdrantStateStore({self.collection!r}, {self.prefix!r})"

    def read(self, name: str) -> str | None:
        """The document ``name`` (under the prefix), or None when there is none."""
        found = self.client.retrieve(self.collection, [point_id(self.prefix + name)])
        return str(found[0].payload["text"]) if found else None

    def write(self, documents: Mapping[str, str]) -> None:
        """Upsert every document in one call."""
        from qdrant_client import models

        if not documents:
            return
        points = [
            models.PointStruct(
                id=point_id(self.prefix + name),
                vector=[1.0],
                payload={"name": self.prefix + name, "text": text},
            )
            for name, text in documents.items()
        ]
        self.client.upsert(self.collection, points=points, wait=True)

    def delete(self, names: Sequence[str]) -> None:
        """Delete these documents (unknown names are ignored)."""
        if names:
            ids = [point_id(self.prefix + name) for name in names]
            self.client.delete(self.collection, points_selector=ids, wait=True)

    def child(self, name: str) -> QdrantStateStore:
        """The documents under ``<prefix><name>/``."""
        return QdrantStateStore(self.client, self.collection, f"{self.prefix}{name}/")

    def location(self, name: str) -> str:
        """``qdrant:<collection>/<prefix><name>``."""
        return f"qdrant:{self.collection}/{self.prefix}{name}"


def _ensure_state_collection(client: Any, collection: str) -> None:
    from qdrant_client import models

    if client.collection_exists(collection):
        return
    try:
        client.create_collection(
            collection, vectors_config=models.VectorParams(size=1, distance=models.Distance.DOT)
        )
    except Exception:  # another replica made it first
        if not client.collection_exists(collection):
            raise
