"""Chroma server mode: the store, recall and the service over a real ``chroma run`` process.

``COGITO_CHROMA_HOST``/``COGITO_CHROMA_PORT`` point the service at a Chroma server
instead of the embedded store; here a real one runs on a free loopback port.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_chroma import Chroma
from langchain_core.embeddings import Embeddings

from cogito_lc import MemoryStore, RecallB
from tests.integration_tests.chroma_server_process import ChromaServer, chroma_server
from tests.integration_tests.service_process import start_service

MEMORIES = [
    "Auth tokens expire after 3600 seconds.",
    "The billing service listens on port 8083.",
    "We chose PostgreSQL for the billing ledger.",
    "Deploys are frozen on Fridays after 3 pm.",
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    with chroma_server(tmp_path_factory.mktemp("chroma-server") / "db") as running:
        yield running


def _remote(server: ChromaServer, embeddings: Embeddings, collection: str) -> Chroma:
    return Chroma(
        collection_name=collection,
        embedding_function=embeddings,
        client=server.client(),
        collection_metadata={"hnsw:space": "cosine"},
    )


def test_memory_store_and_recall_over_a_chroma_server(
    server: ChromaServer, minilm: Embeddings
) -> None:
    memory = MemoryStore(_remote(server, minilm, f"mem-{uuid.uuid4().hex[:8]}"))
    alice = memory.scoped({"user_id": "alice"})
    ids = alice.store_many(MEMORIES)
    assert alice.store(MEMORIES[0]).id == ids[0]  # dedup: one memory
    memory.store("Alice's tokens are a secret of bob's.", scope={"user_id": "bob"})
    assert alice.count() == len(MEMORIES)

    recall = alice.as_retriever(k=2)
    assert isinstance(recall, RecallB)
    top = recall.invoke("how long do auth tokens last?")
    assert top[0].id == ids[0]
    assert top[0].page_content == MEMORIES[0]
    assert all(doc.metadata["user_id"] == "alice" for doc in top)

    alice.delete(ids[1])
    assert alice.get(ids[1]) is None
    ports = recall.invoke("which port does billing listen on?")
    assert ids[1] not in {doc.id for doc in ports}


def test_a_write_through_one_client_is_recalled_through_another(
    server: ChromaServer, minilm: Embeddings
) -> None:
    collection = f"shared-{uuid.uuid4().hex[:8]}"
    writer = MemoryStore(_remote(server, minilm, collection), scope={"user_id": "team"})
    reader = MemoryStore(_remote(server, minilm, collection), scope={"user_id": "team"})
    recall = reader.as_retriever(k=1)
    recall.invoke("warm up the reader's indexes")
    written = writer.store("The on-call rota changes every Monday at 9 am.")
    found = recall.invoke("when does the on-call rota change?")
    assert [doc.id for doc in found] == [written.id]
    assert found[0].page_content == written.page_content


def test_the_service_runs_on_a_chroma_server(server: ChromaServer, tmp_path: Path) -> None:
    settings = {
        "COGITO_CHROMA_HOST": server.host,
        "COGITO_CHROMA_PORT": str(server.port),
        "COGITO_COLLECTION": f"svc-{uuid.uuid4().hex[:8]}",
        "COGITO_ALLOW_REQUEST_SCOPE": "true",
    }
    service = start_service(tmp_path / "store", settings=settings)
    try:
        with service.client(user="remote") as client:
            ids = [client.post("/store", json={"text": text}).json()["id"] for text in MEMORIES]
            question = {"text": "how long do auth tokens last?", "limit": 1}
            for path in ("/query", "/recall_b", "/recall"):
                answer = client.post(path, json=question)
                assert answer.status_code == 200, answer.text
                assert [m["id"] for m in answer.json()["memories"]] == [ids[0]], path
            assert client.get(f"/memories/{ids[1]}").json()["text"] == MEMORIES[1]
        with service.client(user="someone-else") as other:
            assert other.get(f"/memories/{ids[1]}").status_code == 404
        collection = server.client().get_collection(settings["COGITO_COLLECTION"])
        assert collection.count() == len(MEMORIES)  # the memories live in the server
    finally:
        service.stop()
    assert "Traceback" not in service.log_tail(1_000_000)


def test_snapshots_live_on_the_server_not_in_a_local_directory(
    server: ChromaServer, tmp_path: Path
) -> None:
    settings = {
        "COGITO_CHROMA_HOST": server.host,
        "COGITO_CHROMA_PORT": str(server.port),
        "COGITO_COLLECTION": f"snap-{uuid.uuid4().hex[:8]}",
        "COGITO_ALLOW_REQUEST_SCOPE": "true",
    }
    first = start_service(tmp_path / "first", settings=settings, log_name="first.log")
    try:
        with first.client(user="jobs") as client:
            client.post("/store", json={"text": "The billing service listens on port 8083."})
            built = client.post("/snapshot/build", json={"rebuild": True})
            assert built.status_code == 200, built.text
            snapshot = built.json()["snapshot"]
            assert "port 8083" in snapshot
    finally:
        first.stop()
    assert not any((tmp_path / "first").rglob("snapshot*")), "nothing saved beside the process"
    second = start_service(tmp_path / "second", settings=settings, log_name="second.log")
    try:
        with second.client(user="jobs") as client:
            served = client.get("/snapshot")
            assert served.status_code == 200, served.text
            assert served.json()["snapshot"] == snapshot
    finally:
        second.stop()


def test_a_memory_store_on_a_server_keeps_its_state_there(
    server: ChromaServer, minilm: Embeddings
) -> None:
    from cogito_lc.memory.state import ChromaStateStore

    memory = MemoryStore(_remote(server, minilm, f"state-{uuid.uuid4().hex[:8]}"))
    assert isinstance(memory.state, ChromaStateStore)
    memory.state.child("scopes/x").write({"vocab.json": "{}"})
    again = MemoryStore(_remote(server, minilm, memory.vectorstore._collection.name))
    assert again.state is not None
    assert again.state.child("scopes/x").read("vocab.json") == "{}"
