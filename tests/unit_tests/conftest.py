"""Unit-test fixtures: no network, deterministic embeddings and an ephemeral Chroma store."""

from __future__ import annotations

import hashlib
import math
import uuid
from collections.abc import Iterator

import pytest
import pytest_socket
from langchain_chroma import Chroma
from langchain_core.embeddings import Embeddings

from cogito_lc._core.text import tokenize

DIM = 64


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Unit tests connect nowhere: an attempt fails the test even if the code under test
    swallows the error. Creating a socket stays allowed (clients probe socket options
    when built); connecting does not, except over AF_UNIX (event-loop self-pipes)."""
    attempts: list[str] = []
    blocked_init = pytest_socket.SocketConnectBlockedError.__init__

    def record(
        self: pytest_socket.SocketConnectBlockedError, allowed: list[str], host: str | None
    ) -> None:
        attempts.append(str(host))
        blocked_init(self, allowed, host)

    monkeypatch.setattr(pytest_socket.SocketConnectBlockedError, "__init__", record)
    pytest_socket.socket_allow_hosts([], allow_unix_socket=True)  # lifted after each test
    yield
    assert not attempts, f"a unit test tried to connect to {attempts}: give it a fake transport"


class HashEmbeddings(Embeddings):
    """Bag-of-words hashing embeddings: texts sharing words get similar vectors.

    Deterministic and fast, with enough meaning for ranking tests; it counts
    every call and every text embedded so tests can assert on batching.
    """

    def __init__(self) -> None:
        self.document_calls: list[list[str]] = []
        self.query_calls: list[str] = []

    @staticmethod
    def vector(text: str) -> list[float]:
        vec = [0.0] * DIM
        for token in tokenize(text) or ["<empty>"]:
            digest = hashlib.sha256(token.encode()).digest()
            vec[digest[0] % DIM] += 1.0 if digest[1] % 2 else -1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.document_calls.append(list(texts))
        return [self.vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.query_calls.append(text)
        return self.vector(text)

    @property
    def embedded_texts(self) -> list[str]:
        return [t for call in self.document_calls for t in call] + self.query_calls

    def reset(self) -> None:
        self.document_calls.clear()
        self.query_calls.clear()


MEMORIES = {
    "m-auth": "Auth tokens expire after 3600 seconds; refresh tokens rotate on every use.",
    "m-db": "We chose PostgreSQL for billing because invoices need multi-row transactions.",
    "m-test": "The user prefers pytest fixtures over unittest setUp methods.",
    "m-lat": "The search latency budget is p95 under 250 ms.",
    "m-port": "The billing service listens on port 8083 in local development.",
    "m-deploy": "The March deploy broke because a migration added a NOT NULL column.",
}


@pytest.fixture
def embeddings() -> HashEmbeddings:
    return HashEmbeddings()


@pytest.fixture
def chroma(embeddings: HashEmbeddings) -> Iterator[Chroma]:
    store = Chroma(collection_name=f"unit-{uuid.uuid4().hex[:12]}", embedding_function=embeddings)
    yield store
    store.delete_collection()


@pytest.fixture
def filled_chroma(chroma: Chroma, embeddings: HashEmbeddings) -> Chroma:
    chroma.add_texts(
        list(MEMORIES.values()),
        ids=list(MEMORIES),
        metadatas=[{"topic": key.split("-")[1], "user_id": "alice"} for key in MEMORIES],
    )
    embeddings.reset()
    return chroma
