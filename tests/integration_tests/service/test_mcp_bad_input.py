"""``/mcp`` of a real uvicorn service on 127.0.0.1 under bad input and abandoned streams.

Every malformed body gets a 4xx with a JSON-RPC error naming the problem (never a
500, never a traceback in the server log); ``GET /mcp`` event streams are closed
after ``mcp_stream_idle_timeout_ms`` and bounded by ``mcp_max_streams_per_token``;
control characters in memories come back byte for byte, over MCP and REST.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")

from tests.integration_tests.service_process import ServiceProcess, start_service

TOKEN = "integration-mcp-bad-input-0123456789"  # noqa: S105 - a test value
MAX_BODY = 65_536
IDLE_MS = 1_500
MAX_STREAMS = 2
HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Authorization": f"Bearer {TOKEN}",
    "Content-Type": "application/json",
}
TOOLS_LIST = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    root = tmp_path_factory.mktemp("mcp-bad-input")
    process = start_service(
        root / "store",
        token=TOKEN,
        settings={
            "COGITO_MAX_BODY_BYTES": str(MAX_BODY),
            "COGITO_MCP_STREAM_IDLE_TIMEOUT_MS": str(IDLE_MS),
            "COGITO_MCP_MAX_STREAMS_PER_TOKEN": str(MAX_STREAMS),
            "COGITO_MAX_CONCURRENT_REQUESTS": str(MAX_STREAMS),
        },
    )
    yield process
    process.stop()


@pytest.fixture
def client(service: ServiceProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=service.base_url, timeout=30) as http:
        yield http


def _latin1_body() -> bytes:
    return '{"jsonrpc":"2.0","id":1,"method":"tools/list","x":"caf\u00e9"}'.encode("latin-1")


def _streamed(size: int) -> Iterator[bytes]:
    yield b'{"jsonrpc":"2.0","id":1,"method":"tools/list","x":"'
    for _ in range(size // 8192 + 1):
        yield b"a" * 8192
    yield b'"}'


BAD_BODIES: dict[str, tuple[Any, dict[str, str], int, str]] = {
    "invalid UTF-8": (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list","x":"\xff"}',
        {},
        400,
        "not valid UTF-8",
    ),
    "latin-1 charset": (
        _latin1_body(),
        {"Content-Type": "application/json; charset=latin-1"},
        415,
        "charset 'latin-1' is not supported",
    ),
    "10,000 nested arrays": (b"[" * 10_000 + b"]" * 10_000, {}, 400, "deeper than 64 levels"),
    "not JSON": (b"hello, server", {}, 400, "the body is not JSON"),
    "a number too long": (b"1" * 5_000, {}, 400, "not JSON the server can read"),
    "text/plain": (TOOLS_LIST, {"Content-Type": "text/plain"}, 415, "Content-Type: application"),
    "oversized": (b'{"x":"' + b"a" * (MAX_BODY + 10) + b'"}', {}, 413, "max_body_bytes"),
}


@pytest.mark.parametrize("name", list(BAD_BODIES))
def test_a_bad_body_gets_a_jsonrpc_error_with_a_4xx(client: httpx.Client, name: str) -> None:
    body, headers, status, message = BAD_BODIES[name]
    answer = client.post("/mcp", content=body, headers={**HEADERS, **headers})
    assert answer.status_code == status, answer.text
    error = answer.json()
    assert error["jsonrpc"] == "2.0"
    assert error["id"] is None
    assert message in error["error"]["message"]
    assert error["error"]["code"] == (-32700 if status == 400 else -32600)


def test_a_streamed_body_over_the_limit_gets_a_jsonrpc_413(client: httpx.Client) -> None:
    # No Content-Length: the limit is met while the body is read.
    answer = client.post("/mcp", content=_streamed(MAX_BODY), headers=HEADERS)
    assert answer.status_code == 413
    assert "max_body_bytes" in answer.json()["error"]["message"]


def test_after_the_bad_bodies_the_endpoint_serves_and_the_log_is_clean(
    service: ServiceProcess, client: httpx.Client
) -> None:
    for body, headers, _, _ in BAD_BODIES.values():
        client.post("/mcp", content=body, headers={**HEADERS, **headers})
    answer = client.post("/mcp", content=TOOLS_LIST, headers=HEADERS)
    assert answer.status_code == 200
    assert "store" in {tool["name"] for tool in answer.json()["result"]["tools"]}
    log = service.log_tail(1_000_000)
    assert "Traceback" not in log, log[-8000:]
    assert "Error handling POST request" not in log, log[-8000:]


def _open_stream(
    stack: ExitStack, http: httpx.Client, authorization: str = f"Bearer {TOKEN}"
) -> httpx.Response:
    headers = {**HEADERS, "Accept": "text/event-stream", "Authorization": authorization}
    return stack.enter_context(http.stream("GET", "/mcp", headers=headers))


def test_event_streams_are_bounded_and_closed_when_idle(
    service: ServiceProcess,
) -> None:
    # A read timeout well over the idle timeout: a stream that is never closed fails here.
    timeout = httpx.Timeout(30, read=IDLE_MS / 1000 + 10)
    with httpx.Client(base_url=service.base_url, timeout=timeout) as http, ExitStack() as stack:
        started = time.monotonic()
        streams = [_open_stream(stack, http) for _ in range(MAX_STREAMS)]
        assert [stream.status_code for stream in streams] == [200] * MAX_STREAMS
        over = http.get("/mcp", headers={**HEADERS, "Accept": "text/event-stream"})
        assert over.status_code == 429
        assert "mcp_max_streams_per_token" in over.json()["error"]["message"]
        assert over.headers["retry-after"]
        respelled = _open_stream(stack, http, f"bEARER  {TOKEN}")  # the same token
        assert respelled.status_code == 429
        # as many streams as max_concurrent_requests: other requests are still served
        assert http.post("/mcp", content=TOOLS_LIST, headers=HEADERS).status_code == 200
        for stream in streams:
            assert b"".join(stream.iter_bytes()) == b""  # closed by the server, no event
        assert time.monotonic() - started < IDLE_MS / 1000 + 5
        again = _open_stream(stack, http)  # the closed streams no longer count
        assert again.status_code == 200


def test_control_characters_come_back_byte_for_byte(
    service: ServiceProcess, client: httpx.Client
) -> None:
    text = "US\x1f red \x1b[31mALERT\x1b[0m bidi \u202egnp.exe\u202c bell\x07 end"
    metadata = {"note": "tab\there \x1b]0;title\x07 \u202e", "plain": "ok"}
    stored = client.post(
        "/store",
        json={"text": text, "metadata": metadata},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert stored.status_code == 200, stored.text
    assert stored.json()["text"] == text
    memory_id = stored.json()["id"]
    record = client.get(f"/memories/{memory_id}", headers={"Authorization": f"Bearer {TOKEN}"})
    assert record.json()["text"] == text
    assert {key: record.json()["metadata"][key] for key in metadata} == metadata

    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "history", "arguments": {"id": memory_id}},
    }
    answer = client.post("/mcp", content=json.dumps(call).encode(), headers=HEADERS)
    assert answer.status_code == 200, answer.text
    version = answer.json()["result"]["structuredContent"]["versions"][0]
    assert version["text"] == text
    assert {key: version["metadata"][key] for key in metadata} == metadata
    refused = client.post(
        "/store", json={"text": "NUL\x00"}, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert refused.status_code == 422, refused.text  # no store can hold it: Postgres refuses it
    assert refused.json()["detail"].startswith("text: Value error, text holds a NUL character")
