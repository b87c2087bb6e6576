"""POST /flush: the end-of-session flush over HTTP (no model configured: windows verbatim)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from langchain_chroma import Chroma

from cogito_lc import MemoryStore
from cogito_lc.service.config import CogitoSettings
from cogito_lc.service.server import create_app

CHAT = [
    {"role": "user", "content": "Our staging cluster runs in eu-west-1."},
    {"role": "assistant", "content": "Noted."},
    {"role": "user", "content": "Deploys freeze on Fridays."},
]


@pytest.fixture
def memory(chroma: Chroma) -> MemoryStore:
    return MemoryStore(chroma, scope={"user_id": "agent"})


@pytest.fixture
def client(tmp_path: Path, memory: MemoryStore) -> Iterator[TestClient]:
    settings = CogitoSettings(store_path=tmp_path / "store", allow_request_scope=True)
    with TestClient(
        create_app(settings, memory=memory), base_url="http://127.0.0.1"
    ) as test_client:
        yield test_client


def test_flush_stores_the_windows_once_in_the_scope(
    client: TestClient, memory: MemoryStore
) -> None:
    body = {"messages": CHAT, "session_id": "chat-7", "window_size": 2}
    first = client.post("/flush", json=body, headers={"X-Cogito-User": "alice"})
    assert first.status_code == 200, first.text
    answer = first.json()
    assert answer["windows"] == 2
    assert answer["count"] == 2
    assert answer["verbatim_windows"] == 2
    assert answer["methods"] == ["fallback_no_llm", "fallback_no_llm"]
    assert answer["memories"][1] == "user: Deploys freeze on Fridays."
    record = client.get(f"/memories/{answer['ids'][1]}", headers={"X-Cogito-User": "alice"})
    assert record.json()["metadata"]["source"] == "session:chat-7"
    assert client.get(f"/memories/{answer['ids'][1]}").status_code == 404  # another scope

    again = client.post("/flush", json=body, headers={"X-Cogito-User": "alice"}).json()
    assert again["count"] == 0
    assert again["skipped_same_id"] == 2
    assert memory.count(scope={"user_id": "alice"}) == 2


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"messages": CHAT}, "session_id"),
        ({"messages": [], "session_id": "s"}, "messages"),
        ({"messages": [{"role": "User!", "content": "x"}], "session_id": "s"}, "messages.0.role"),
        ({"messages": [{"role": "user"}], "session_id": "s"}, "messages.0.content"),
        ({"messages": [{"role": "user", "content": 1}], "session_id": "s"}, "messages.0.content"),
        ({"messages": CHAT, "session_id": "two words"}, "session_id"),
        ({"messages": CHAT, "session_id": "s", "window_size": 0}, "window_size"),
        ({"messages": CHAT, "session_id": "s", "extra": 1}, "extra"),
    ],
)
def test_a_malformed_transcript_is_a_422_naming_the_field(
    client: TestClient, memory: MemoryStore, body: dict[str, object], field: str
) -> None:
    response = client.post("/flush", json=body)
    assert response.status_code == 422
    assert field in [error["field"] for error in response.json()["errors"]]
    assert memory.count() == 0


def test_an_integral_float_window_size_is_accepted(client: TestClient) -> None:
    body = {"messages": CHAT, "session_id": "s", "window_size": 2.0}  # JSON Schema: an integer
    assert client.post("/flush", json=body).json()["windows"] == 2
    body["window_size"] = 2.5
    assert client.post("/flush", json=body).status_code == 422
