"""Dependencies behind circuit breakers: 503 with Retry-After at once, naming them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from langchain_chroma import Chroma

from cogito_lc import MemoryStore
from cogito_lc._core.breaker import CircuitBreaker, CircuitOpenError
from cogito_lc.service._dependencies import (
    CHROMA,
    DATABASE,
    Dependency,
    dependencies_of,
    is_chroma_down,
)
from cogito_lc.service._service import http_error_for
from cogito_lc.service.config import CogitoSettings
from cogito_lc.service.server import create_app


def _raised_by_chromadb(error: Exception) -> Exception:
    """``error`` raised from code of a ``chromadb`` module, as the chromadb client raises it."""
    namespace: dict[str, Any] = {"__name__": "chromadb.api.fastapi", "error": error}
    exec("def request():\n    raise error\n", namespace)  # noqa: S102 - a fixed snippet
    try:
        namespace["request"]()
    except Exception as exc:
        return exc
    raise AssertionError


def test_a_chroma_server_that_does_not_answer_is_503_with_retry_after() -> None:
    error = _raised_by_chromadb(httpx.ConnectError("[Errno 111] Connection refused"))
    assert is_chroma_down(error)
    answer = http_error_for(error)  # type: ignore[arg-type]
    assert answer is not None
    assert answer.status_code == 503
    assert answer.headers == {"Retry-After": "2"}
    assert "Chroma server" in answer.detail


def test_a_model_server_that_does_not_answer_stays_502() -> None:
    error = httpx.ConnectError("[Errno 111] Connection refused")  # not from chromadb
    assert not is_chroma_down(error)
    answer = http_error_for(error)
    assert answer is not None
    assert answer.status_code == 502


class _ApiStatusError(Exception):
    """As the openai and Ollama clients raise an HTTP error: its status on the exception."""

    def __init__(self, status_code: int) -> None:
        super().__init__(f"Error code: {status_code}")
        self.status_code = status_code


@pytest.mark.parametrize(("status", "expected"), [(503, 502), (500, 502), (429, 502), (401, None)])
def test_a_model_api_answering_an_error_status_is_502_when_it_may_answer_later(
    status: int, expected: int | None
) -> None:
    error = RuntimeError("embedding failed")
    error.__cause__ = _ApiStatusError(status)  # wrapped, as LangChain integrations do
    answer = http_error_for(error)
    assert (answer and answer.status_code) == expected


def test_an_open_breaker_is_503_naming_the_dependency() -> None:
    answer = http_error_for(CircuitOpenError(DATABASE, "connection refused"))
    assert answer is not None
    assert answer.status_code == 503
    assert answer.headers == {"Retry-After": "2"}
    assert answer.detail == "the database is unavailable; retry shortly"


def test_an_embedded_store_has_no_dependency(chroma: Chroma) -> None:
    assert dependencies_of(chroma) == []


class _Down:
    """A dependency that stays down until ``up`` is set."""

    def __init__(self) -> None:
        self.up = False

    def probe(self) -> None:
        if not self.up:
            msg = "connection refused"
            raise ConnectionError(msg)


@pytest.fixture
def down() -> _Down:
    return _Down()


@pytest.fixture
def app_client(tmp_path: Path, chroma: Chroma, down: _Down) -> Iterator[tuple[TestClient, Any]]:
    memory = MemoryStore(chroma, scope={"user_id": "agent"})
    app = create_app(CogitoSettings(store_path=tmp_path / "store"), memory=memory)
    service = app.state.service
    breaker = CircuitBreaker(CHROMA, down.probe, interval=0.01)
    service.dependencies = [Dependency(CHROMA, breaker, is_chroma_down, owned=True)]
    with TestClient(app, raise_server_exceptions=False, base_url="http://127.0.0.1") as client:
        yield client, service
    assert not breaker.is_open  # the app's shutdown stopped the probe


def test_requests_are_503_at_once_while_a_dependency_is_away(
    app_client: tuple[TestClient, Any], down: _Down
) -> None:
    client, service = app_client
    assert client.post("/store", json={"text": "Deploys freeze on Fridays."}).status_code == 200
    service.dependencies[0].breaker.trip("connection refused")
    for method, path, body in [
        ("GET", "/health", None),
        ("POST", "/store", {"text": "Written while away."}),
        ("POST", "/query", {"text": "deploys"}),
        ("GET", "/memories", None),
    ]:
        started = time.monotonic()
        response = client.request(method, path, json=body)
        assert time.monotonic() - started < 0.5
        assert response.status_code == 503, (path, response.text)
        assert response.headers["Retry-After"] == "2"
        assert response.json()["detail"] == "the Chroma server is unavailable; retry shortly"
    down.up = True
    deadline = time.monotonic() + 5
    while client.get("/health").status_code != 200 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert client.get("/health").json()["count"] == 1  # the write refused was not stored


def test_a_failure_the_service_sees_opens_the_breaker(app_client: tuple[TestClient, Any]) -> None:
    _, service = app_client
    error = _raised_by_chromadb(httpx.ConnectError("[Errno 111] Connection refused"))
    answer = service.error_for(error)
    assert answer.status_code == 503
    assert service.dependencies[0].breaker.is_open
    assert service.error_for(ValueError("a bug")) is None  # not a dependency failure


def test_a_sqlalchemy_connection_error_opens_the_database_breaker() -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    from cogito_lc.service._dependencies import _engine_outage

    lost = sqlalchemy.exc.OperationalError("SELECT 1", {}, ConnectionError("refused"))
    assert _engine_outage(lost)
    cancelled = type("QueryCanceled", (Exception,), {})("canceling statement due to timeout")
    timed_out = sqlalchemy.exc.OperationalError("SELECT 1", {}, cancelled)
    timed_out.__cause__ = cancelled
    assert not _engine_outage(timed_out)
