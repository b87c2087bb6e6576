"""Streaming recall: stage 1 as soon as it is ready, then the result or the fallback tag."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from langchain_chroma import Chroma

from cogito_lc import MemoryStore
from cogito_lc.service._service import MemoryService, ServiceOptions
from cogito_lc.service.config import CogitoSettings
from cogito_lc.service.server import create_app
from tests.unit_tests.conftest import MEMORIES
from tests.unit_tests.fakes import Gate, ScriptedChatModel

QUERY = "how long do auth tokens last"


@pytest.fixture
def memory(chroma: Chroma) -> MemoryStore:
    store = MemoryStore(chroma, scope={"user_id": "agent"})
    for memory_id, text in MEMORIES.items():
        store.store(text, id=memory_id)
    return store


def _service(memory: MemoryStore, llm: Any) -> MemoryService:
    return MemoryService(memory, ServiceOptions(filter_llm=llm, filter_timeout=30))


async def _collect(service: MemoryService, **kwargs: Any) -> list[tuple[str, dict[str, Any]]]:
    arguments = {"limit": 3, "threshold": None, "since": None, **kwargs}
    return [
        event
        async for event in service.recall_stream(
            service.view(None),
            QUERY,
            arguments["limit"],
            arguments["threshold"],
            arguments["since"],
        )
    ]


async def test_candidates_then_the_filtered_result(memory: MemoryStore) -> None:
    service = _service(memory, ScriptedChatModel(replies=["[2]"]))
    events = await _collect(service)

    assert [name for name, _ in events] == ["candidates", "result"]
    candidates, result = events[0][1], events[1][1]
    stage1, recall_method = service.recall_b(service.view(None), QUERY, 3, None)
    assert [hit.id for hit in candidates["memories"]] == [hit.id for hit in stage1]
    assert candidates["recall_method"] == recall_method
    assert result["method"] == "filter"
    assert [hit.id for hit in result["memories"]] == [stage1[1].id]
    assert result["memories"][0].text == stage1[1].text


async def test_a_failing_model_streams_the_fallback_tag(memory: MemoryStore) -> None:
    service = _service(memory, ScriptedChatModel(replies=[ConnectionRefusedError("down")]))
    events = await _collect(service)

    assert [name for name, _ in events] == ["candidates", "result"]
    assert events[1][1]["method"] == "fallback_unreachable"
    assert [h.id for h in events[1][1]["memories"]] == [h.id for h in events[0][1]["memories"]]


async def test_closing_the_stream_cancels_the_model_call(memory: MemoryStore) -> None:
    gate = Gate()
    service = _service(memory, ScriptedChatModel(replies=[gate]))
    stream = service.recall_stream(service.view(None), QUERY, 3, None, None)

    name, _ = await stream.__anext__()
    assert name == "candidates"
    for _ in range(500):  # the model call starts right after stage 1
        if gate.entered.is_set():
            break
        await asyncio.sleep(0.01)
    assert gate.entered.is_set()
    await stream.aclose()  # what the server does when the client goes away
    await asyncio.sleep(0.05)

    assert gate.cancelled
    assert not gate.finished.is_set()


def _server_sent(text: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    return events


@pytest.fixture
def client(tmp_path: Path, memory: MemoryStore) -> Iterator[TestClient]:
    settings = CogitoSettings(store_path=tmp_path / "store", allow_request_scope=True)
    with TestClient(
        create_app(settings, memory=memory), base_url="http://127.0.0.1"
    ) as test_client:
        yield test_client


def test_recall_stream_endpoint_answers_server_sent_events(client: TestClient) -> None:
    body = {"text": QUERY, "limit": 3}
    with client.stream("POST", "/recall/stream", json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = _server_sent(response.read().decode())

    assert [name for name, _ in events] == ["candidates", "result"]
    recall_b = client.post("/recall_b", json=body).json()
    assert events[0][1] == {"memories": recall_b["memories"], "recall_method": recall_b["method"]}
    assert events[1][1] == client.post("/recall", json=body).json()
    assert events[1][1]["method"] == "fallback_no_llm"


def test_recall_stream_validates_like_recall(client: TestClient) -> None:
    assert client.post("/recall/stream", json={"text": " "}).status_code == 422
    assert client.post("/recall/stream", json={"text": "x", "since": "soon"}).status_code == 422
    scoped = client.post(
        "/recall/stream", json={"text": "x", "user_id": "a"}, headers={"X-Cogito-User": "b"}
    )
    assert scoped.status_code == 403
    with client.stream(
        "POST", "/recall/stream", json={"text": QUERY}, headers={"X-Cogito-User": "nobody"}
    ) as response:
        events = _server_sent(response.read().decode())
    assert events[0][1]["memories"] == []
    assert events[1][1]["memories"] == []


def test_an_as_of_before_every_memory_is_refused_as_recall_refuses_it(client: TestClient) -> None:
    body = {"text": QUERY, "as_of": "2001-01-01T00:00:00Z"}
    recall = client.post("/recall", json=body)
    assert recall.status_code == 422
    with client.stream("POST", "/recall/stream", json=body) as response:
        events = _server_sent(response.read().decode())
    assert events[-1][0] == "error"
    assert events[-1][1]["status"] == 422
    assert "before every memory" in events[-1][1]["detail"]
