"""The service on embedded Qdrant (``COGITO_VECTOR_STORE=qdrant``): the API, MCP and a SIGKILL.

A real uvicorn process keeps its memories in Qdrant's local mode under
``store_path``, with the SQLite lexical index beside them.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

pytest.importorskip("qdrant_client")

from tests.integration_tests.service_process import checked_service, start_service

TOKEN = "qdrant-token-0123456789abcdef"  # noqa: S105 - a test credential
SETTINGS = {"COGITO_VECTOR_STORE": "qdrant", "COGITO_ALLOW_REQUEST_SCOPE": "true"}


def test_store_recall_delete_and_scopes(tmp_path: Path) -> None:
    with checked_service(tmp_path / "store", token=TOKEN, settings=SETTINGS) as service:
        with service.client(user="alice") as alice, service.client(user="bob") as bob:
            texts = [
                "Auth tokens expire after 3600 seconds.",
                "The billing service listens on port 8083.",
                "We chose PostgreSQL 16 for billing.",
            ]
            ids = [alice.post("/store", json={"text": t}).json()["id"] for t in texts]
            bob.post("/store", json={"text": "Bob's production region is us-east-2."})
            found = alice.post("/recall_b", json={"text": "which port does billing use?"}).json()[
                "memories"
            ]
            assert found[0]["id"] == ids[1]
            assert found[0]["text"] == texts[1]
            assert all(hit["id"] != "" for hit in found)
            bob_found = bob.post("/recall_b", json={"text": "billing port"}).json()["memories"]
            assert {hit["text"] for hit in bob_found} == {"Bob's production region is us-east-2."}
            assert alice.delete(f"/memories/{ids[1]}").status_code in {200, 204}
            again = alice.post("/recall_b", json={"text": "port 8083"}).json()["memories"]
            assert ids[1] not in {hit["id"] for hit in again}
            assert alice.get(f"/memories/{ids[1]}").status_code == 404
        health = httpx.get(f"{service.base_url}/health", timeout=10).json()
        assert health["status"] == "ok"


def test_no_acknowledged_write_is_lost_to_a_sigkill(tmp_path: Path) -> None:
    store = tmp_path / "store"
    service = start_service(store, token=TOKEN, settings=SETTINGS)
    acknowledged: dict[str, str] = {}

    def write(i: int) -> None:
        with service.client(user="team", timeout=30) as client:
            text = f"Deploy note {i}: build {i * 7}."
            try:
                answer = client.post("/store", json={"text": text})
            except httpx.HTTPError:
                return
            if answer.status_code == 200:
                acknowledged[answer.json()["id"]] = text

    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(write, i) for i in range(60)]
        while len(acknowledged) < 30 and not all(f.done() for f in futures):
            time.sleep(0.02)
        service.kill()
    assert len(acknowledged) >= 30
    with (
        checked_service(store, token=TOKEN, settings=SETTINGS) as restarted,
        restarted.client(user="team") as client,
    ):
        missing = [
            doc_id
            for doc_id in acknowledged
            if client.get(f"/memories/{doc_id}").status_code != 200
        ]
        assert missing == []
        doc_id, text = next(iter(acknowledged.items()))
        hits = client.post("/recall_b", json={"text": text}).json()["memories"]
        assert (hits[0]["id"], hits[0]["text"]) == (doc_id, text)
