"""The guards of ``/mcp`` in process: bad bodies, the guards' JSON-RPC errors, idle streams."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from langchain_chroma import Chroma
from pydantic import SecretStr

pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")

from cogito_lc import MemoryStore
from cogito_lc.service._guard import (
    JSONRPC_PATHS,
    ConcurrencyLimitMiddleware,
    body_problem,
    content_type_problem,
    json_too_deep,
)
from cogito_lc.service.config import CogitoSettings
from cogito_lc.service.mcp_server import MCP_PATH, McpEndpoint
from cogito_lc.service.server import create_app

TOKEN = "unit-mcp-guard-token-0123456789"  # noqa: S105 - a test value
HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Authorization": f"Bearer {TOKEN}",
    "Content-Type": "application/json",
}
TOOLS_LIST = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'


def test_the_mcp_path_is_answered_with_jsonrpc_errors() -> None:
    assert MCP_PATH in JSONRPC_PATHS


@pytest.mark.parametrize(
    ("body", "deep"),
    [
        (b"[" * 64 + b"]" * 64, False),
        (b"[" * 65 + b"]" * 65, True),
        (b'{"a":' * 65 + b"1" + b"}" * 65, True),
        (b'{"text": "' + b"[" * 1000 + b'"}', False),  # brackets in a string do not count
        (b'{"text": "\\"' + b"[" * 1000 + b'"}', False),  # nor after an escaped quote
        (b"[" * 100_000, True),  # unbalanced
    ],
)
def test_nesting_is_counted_before_parsing(body: bytes, deep: bool) -> None:
    assert json_too_deep(body, 64) is deep


@pytest.mark.parametrize(
    ("content_type", "refused"),
    [
        ("application/json", None),
        ("application/json; charset=utf-8", None),
        ('application/json; charset="UTF-8"', None),
        ("application/json; charset=latin-1", "charset 'latin-1' is not supported"),
        ("application/json;charset=utf-16", "charset 'utf-16' is not supported"),
        ("text/plain", "got Content-Type 'text/plain'"),
        (None, "got no Content-Type"),
    ],
)
def test_content_types(content_type: str | None, refused: str | None) -> None:
    _assert_names(content_type_problem(content_type), refused)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (TOOLS_LIST, None),
        (b'{"x":"\xff"}', "not valid UTF-8 (byte 7)"),
        ('{"x":"\u00e9"}'.encode("utf-16"), "not valid UTF-8 (byte 1)"),
        (b"[" * 10_000 + b"]" * 10_000, "deeper than 64 levels"),
        (b"{", "the body is not JSON: Expecting property name"),
        (b"9" * 5000, "not JSON the server can read"),
        (b'{"threshold": NaN}', "NaN is not a JSON number"),
        (b'{"limit": -Infinity}', "-Infinity is not a JSON number"),
        (b'{"threshold": 1e400}', "the number 1e400 is too large for a float"),
        (b'{"threshold": 1e308, "limit": 5}', None),
    ],
)
def test_body_problems_are_named(body: bytes, problem: str | None) -> None:
    _assert_names(body_problem(body), problem)


def _assert_names(found: str | None, expected: str | None) -> None:
    """No problem found when none is expected, else one naming ``expected``."""
    if expected is None:
        assert found is None
    else:
        assert found is not None
        assert expected in found


@pytest.fixture
def client(tmp_path: Path, chroma: Chroma) -> Any:
    settings = CogitoSettings(
        store_path=tmp_path / "store", api_token=SecretStr(TOKEN), max_body_bytes=32_768
    )
    app = create_app(settings, memory=MemoryStore(chroma, scope={"user_id": "agent"}))
    with TestClient(app, base_url="http://127.0.0.1:19420", raise_server_exceptions=True) as http:
        yield http


@pytest.mark.parametrize(
    ("body", "headers", "status", "code", "message"),
    [
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/list","x":"\xff"}', {}, 400, -32700, "UTF-8"),
        (
            '{"jsonrpc":"2.0","id":1,"method":"tools/list","x":"\u00e9"}'.encode("latin-1"),
            {"Content-Type": "application/json; charset=latin-1"},
            415,
            -32600,
            "charset",
        ),
        (b"[" * 10_000 + b"]" * 10_000, {}, 400, -32700, "deeper than 64"),
        (b"not json", {}, 400, -32700, "not JSON"),
        (
            b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"query",'
            b'"arguments":{"text":"x","threshold":NaN}}}',
            {},
            400,
            -32700,
            "NaN is not a JSON number",
        ),
        (b'{"jsonrpc":"2.0","id":1e400,"method":"tools/list"}', {}, 400, -32700, "1e400"),
        (b"x" * 40_000, {}, 413, -32600, "max_body_bytes"),
        (TOOLS_LIST, {"Authorization": "Bearer wrong"}, 401, -32600, "bearer token"),
        (TOOLS_LIST, {"X-Cogito-User": "bob"}, 403, -32600, "allow_request_scope"),
    ],
)
def test_bad_requests_get_jsonrpc_errors(
    client: Any, body: bytes, headers: dict[str, str], status: int, code: int, message: str
) -> None:
    answer = client.post(MCP_PATH, content=body, headers={**HEADERS, **headers})
    assert answer.status_code == status
    error = answer.json()
    assert error["jsonrpc"] == "2.0"
    assert error["error"]["code"] == code
    assert message in error["error"]["message"]
    assert error["detail"] == error["error"]["message"]  # as the REST errors


def test_a_good_body_still_reaches_the_tools(client: Any) -> None:
    answer = client.post(MCP_PATH, content=TOOLS_LIST, headers=HEADERS)
    assert answer.status_code == 200
    assert len(answer.json()["result"]["tools"]) == 10


def test_rest_errors_keep_their_shape(client: Any) -> None:
    answer = client.post("/store", content=b"x" * 40_000, headers=HEADERS)
    assert answer.status_code == 413
    assert set(answer.json()) == {"detail"}


class _Stream:
    """A session manager whose GET streams wait for the client to leave, as the SDK's do."""

    def __init__(self) -> None:
        self.ended = anyio.Event()

    async def handle_request(self, scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b": ping\n\n", "more_body": True})
        while (await receive())["type"] != "http.disconnect":
            pass
        self.ended.set()


def _endpoint(manager: Any, **options: Any) -> McpEndpoint:
    endpoint = McpEndpoint(lambda: None, allowed=False, **options)  # type: ignore[arg-type,return-value]
    endpoint._manager = manager
    return endpoint


def _get(authorization: str | None = "Bearer a") -> dict[str, Any]:
    headers = [] if authorization is None else [(b"authorization", authorization.encode())]
    return {"type": "http", "method": "GET", "path": MCP_PATH, "headers": headers}


async def test_an_idle_stream_is_closed_and_its_response_ended() -> None:
    manager = _Stream()
    endpoint = _endpoint(manager, stream_idle_timeout=0.2)
    sent: list[dict[str, Any]] = []

    async def never() -> dict[str, Any]:
        await anyio.sleep_forever()
        raise AssertionError

    async def send(message: Any) -> None:
        sent.append(message)

    with anyio.fail_after(5):
        await endpoint(_get("a"), never, send)
    assert manager.ended.is_set()
    assert sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
    assert endpoint.open_streams == 0


async def test_open_streams_are_bounded_however_the_token_is_spelled() -> None:
    manager = _Stream()
    endpoint = _endpoint(manager, stream_idle_timeout=60, max_streams=2)
    leave = anyio.Event()
    statuses: list[int] = []

    async def until_left() -> Any:
        await leave.wait()
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            for authorization in ("Bearer a", "bEARER  a"):
                group.start_soon(endpoint, _get(authorization), until_left, send)
            await anyio.wait_all_tasks_blocked()
            for spelled in ("BEARER a ", "Bearer b", None):  # one server, one token
                await endpoint(_get(spelled), until_left, send)
            leave.set()
    assert sorted(statuses) == [200, 200, 429, 429, 429]
    assert endpoint.open_streams == 0


async def test_open_event_streams_do_not_turn_other_requests_away() -> None:
    streaming = anyio.Event()
    leave = anyio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        if scope["method"] == "GET":
            streaming.set()
            await leave.wait()
        await send({"type": "http.response.body", "body": b""})

    statuses: list[int] = []

    async def send(message: Any) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    async def receive() -> Any:  # pragma: no cover - not read
        return {"type": "http.request", "body": b""}

    guard = ConcurrencyLimitMiddleware(app, max_requests=1)
    post = {"type": "http", "method": "POST", "path": MCP_PATH, "headers": []}
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(guard, _get(), receive, send)
            await streaming.wait()
            await guard(post, receive, send)
            await guard({**post, "path": "/store"}, receive, send)
            leave.set()
    assert statuses == [200, 200, 200]
