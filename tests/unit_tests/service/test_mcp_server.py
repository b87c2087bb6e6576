"""The MCP tools in process, through the SDK's client session over memory streams.

Real protocol messages (initialize, tools/list, tools/call) without a network; the
stdio and streamable-HTTP transports are tested end to end in
``tests/integration_tests/service/test_mcp.py``.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from langchain_chroma import Chroma
from pydantic import SecretStr

pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")

from mcp import ClientSession
from mcp.server.fastmcp import FastMCP
from mcp.shared.memory import create_connected_server_and_client_session
from mcp.types import CallToolResult, TextContent

from cogito_lc import FactExtractor, MemoryStore
from cogito_lc.service._service import MemoryService, ServiceOptions
from cogito_lc.service.config import CogitoSettings
from cogito_lc.service.mcp_server import (
    ScopeError,
    create_mcp_server,
    request_scope,
)
from cogito_lc.service.server import create_app
from tests.unit_tests.fakes import Gate, ScriptedChatModel

TOKEN = "unit-mcp-token-0123456789"  # noqa: S105 - a test value
TOOLS = {
    "recall",
    "recall_b",
    "query",
    "store",
    "add",
    "snapshot",
    "list_memories",
    "history",
    "forget",
    "delete_memory",
}


@pytest.fixture
def memory(chroma: Chroma) -> MemoryStore:
    return MemoryStore(chroma, scope={"user_id": "agent"})


@pytest.fixture
def server(memory: MemoryStore) -> FastMCP[Any]:
    service = MemoryService(memory, ServiceOptions())
    return create_mcp_server(service, max_text_chars=200, max_query_chars=50)


@asynccontextmanager
async def connect(server: FastMCP[Any]) -> AsyncIterator[ClientSession]:
    """A client session over memory streams (entered and left in the test's own task)."""
    async with create_connected_server_and_client_session(server) as client:
        yield client


def _text(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def _call(session: ClientSession, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(name, arguments)
    assert not result.isError, _text(result)
    assert result.structuredContent is not None
    assert json.loads(_text(result)) == result.structuredContent
    return result.structuredContent


async def test_ten_tools_with_strict_schemas_and_the_service_limits(
    server: FastMCP[Any],
) -> None:
    async with connect(server) as session:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(listed) == TOOLS
        for tool in listed.values():
            assert tool.inputSchema["additionalProperties"] is False, tool.name
            assert "user_id" not in tool.inputSchema["properties"], tool.name
            assert "ctx" not in tool.inputSchema["properties"], tool.name
            assert tool.description, tool.name
        recall = listed["recall"].inputSchema
        assert recall["required"] == ["text"]
        assert recall["properties"]["text"]["maxLength"] == 50
        assert recall["properties"]["text"]["description"].startswith("What to look for")
        assert listed["store"].inputSchema["properties"]["text"]["maxLength"] == 200
        assert listed["delete_memory"].annotations is not None
        assert listed["delete_memory"].annotations.destructiveHint is True
        assert listed["recall_b"].annotations is not None
        assert listed["recall_b"].annotations.readOnlyHint is True


async def test_results_carry_verbatim_text_and_ids(
    server: FastMCP[Any], memory: MemoryStore
) -> None:
    async with connect(server) as session:
        text = "Auth tokens expire after 3600 s; refresh them with POST /auth/refresh."
        stored = await _call(session, "store", {"text": text, "metadata": {"topic": "auth"}})
        assert stored["text"] == text
        doc = memory.get(stored["id"])
        assert doc is not None
        assert doc.page_content == text
        assert doc.metadata["topic"] == "auth"

        again = await _call(session, "store", {"text": text})
        assert again["id"] == stored["id"]  # idempotent, as /store
        await _call(session, "store", {"text": "The staging database lives in eu-west-1."})

        for tool in ("recall_b", "recall", "query"):
            found = await _call(session, tool, {"text": "when do auth tokens expire", "limit": 5})
            assert found["memories"][0] == {
                "id": stored["id"],
                "text": text,
                "score": found["memories"][0]["score"],
            }, tool
        recall = await _call(session, "recall", {"text": "auth tokens"})
        assert recall["method"] == "fallback_no_llm"

        page = await _call(session, "list_memories", {"limit": 1, "offset": 0})
        assert page["total"] == 2
        assert len(page["memories"]) == 1

        deleted = await _call(session, "delete_memory", {"id": stored["id"]})
        assert deleted == {"id": stored["id"], "deleted": True, "forgotten": [stored["id"]]}
        assert memory.get(stored["id"]) is None


async def test_add_without_a_model_stores_the_text_verbatim(server: FastMCP[Any]) -> None:
    async with connect(server) as session:
        text = "We moved the nightly backups to 02:00 UTC."
        added = await _call(session, "add", {"text": text, "context_hints": ["ops"]})
        assert added["memories"] == [text]
        assert len(added["ids"]) == 1
        assert added["count"] == 1


async def test_snapshot_of_an_in_memory_store_is_built_not_saved(server: FastMCP[Any]) -> None:
    async with connect(server) as session:
        await _call(session, "store", {"text": "Deploys happen on Tuesdays."})
        built = await _call(session, "snapshot", {"rebuild": True})
        assert built["count"] == 1
        assert built["sampled"] == 1
        assert built["saved"] is False
        assert built["path"] is None
        assert built["snapshot"].strip()


@pytest.mark.parametrize(
    ("tool", "arguments", "field", "says"),
    [
        ("recall", {}, "text", "Field required"),
        ("recall", {"text": "x", "user_id": "bob"}, "user_id", "Extra inputs are not permitted"),
        ("recall_b", {"text": "x", "k": 3}, "k", "Extra inputs are not permitted"),
        ("query", {"text": "x" * 51}, "text", "at most 50 characters"),
        ("recall_b", {"text": " \n\t"}, "text", "not whitespace"),
        ("recall_b", {"text": "x", "limit": 0}, "limit", "greater than or equal to 1"),
        ("recall_b", {"text": "x", "limit": "5"}, "limit", "valid integer"),
        ("query", {"text": "x", "threshold": 1.5}, "threshold", "threshold"),
        ("recall", {"text": "x", "since": "yesterday"}, "since", "ISO 8601"),
        ("store", {"text": "x", "id": "two words"}, "id", "letter or digit"),
        ("store", {"text": "x", "id": "abc\n"}, "id", "letter or digit"),
        ("store", {"text": "x", "metadata": {"user_id": "bob"}}, "metadata", "reserved"),
        ("store", {"text": "x", "metadata": {"a": [1]}}, "metadata", "must be a string"),
        ("add", {"text": "x", "context_hints": "ops"}, "context_hints", "valid list"),
        ("list_memories", {"limit": 201}, "limit", "less than or equal to 200"),
        ("list_memories", {"offset": -1}, "offset", "greater than or equal to 0"),
        ("list_memories", {"offset": 5.5}, "offset", "valid integer"),
        ("list_memories", {"offset": "5"}, "offset", "valid integer"),
        ("delete_memory", {}, "id", "Field required"),
        ("snapshot", {"rebuild": "yes"}, "rebuild", "valid boolean"),
        ("store", {"text": "port\x00 8083"}, "text", "NUL character"),
        ("store", {"text": "x", "metadata": {"team": "\x00"}}, "metadata", "NUL character"),
        ("forget", {"ids": ["a\x00"]}, "ids", "NUL character"),
        ("recall", {"text": "x", "since": "null"}, "since", "ISO 8601"),
        ("query", {"text": "x", "as_of": "null"}, "as_of", "ISO 8601"),
        ("store", {"text": "x", "metadata": '{"team": "ops"}'}, "metadata", "a JSON object"),
        ("store", {"text": "x", "supersedes": '["a"]'}, "supersedes", "valid list"),
        ("forget", {"query": None, "ids": ["a"]}, "query", "must not be null; leave it out"),
        ("forget", {"query": "x", "ids": None}, "ids", "must not be null; leave it out"),
    ],
)
async def test_bad_arguments_are_tool_errors_naming_the_field(
    server: FastMCP[Any],
    memory: MemoryStore,
    tool: str,
    arguments: dict[str, Any],
    field: str,
    says: str,
) -> None:
    async with connect(server) as session:
        result = await session.call_tool(tool, arguments)
        assert result.isError
        message = _text(result)
        assert f"invalid arguments: {field}" in message or f"; {field}:" in message, message
        assert says in message, message
        assert "errors.pydantic.dev" not in message
        assert memory.count() == 0


async def test_string_arguments_are_kept_as_sent(server: FastMCP[Any], memory: MemoryStore) -> None:
    async with connect(server) as session:
        stored = await _call(session, "store", {"text": "Port 8083.", "id": "null"})
        assert stored["id"] == "null"
        assert [doc.id for doc in memory.list()] == ["null"]


async def test_a_whole_float_is_a_page_size_and_offset(server: FastMCP[Any]) -> None:
    async with connect(server) as session:
        await _call(session, "store", {"text": "Port 8083."})
        page = await _call(session, "list_memories", {"limit": 5.0, "offset": 1.0})
        assert (page["limit"], page["offset"], page["total"]) == (5, 1, 1)
        assert page["memories"] == []


async def test_a_missing_memory_is_a_short_tool_error(server: FastMCP[Any]) -> None:
    async with connect(server) as session:
        result = await session.call_tool("delete_memory", {"id": "no-such-memory"})
        assert result.isError
        assert _text(result).endswith("no memory with this id in this scope")


async def test_an_unexpected_failure_reveals_nothing(
    server: FastMCP[Any], memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with connect(server) as session:

        def broken(*args: Any, **kwargs: Any) -> Any:
            msg = "secret detail /srv/data/chroma.sqlite3"
            raise RuntimeError(msg)

        monkeypatch.setattr(MemoryStore, "list", broken)
        result = await session.call_tool("list_memories", {})
        assert result.isError
        assert "secret" not in _text(result)
        assert "internal error" in _text(result)


@pytest.mark.parametrize(
    ("values", "allowed", "status"),
    [
        (["alice", "bob"], True, 400),
        (["alice"], False, 403),
        (["two words"], True, 422),
        (["alice\n"], True, 422),
        (["a" * 129], True, 422),
    ],
)
def test_refused_scope_headers(values: list[str], allowed: bool, status: int) -> None:
    with pytest.raises(ScopeError) as caught:
        request_scope(values, allowed=allowed)
    assert caught.value.status == status
    assert "X-Cogito-User" in caught.value.detail or "scopes" in caught.value.detail


def test_accepted_scope_headers() -> None:
    assert request_scope([], allowed=False) is None
    assert request_scope(["alice@example.com"], allowed=True) == "alice@example.com"
    assert request_scope(["zo%C3%AB"], allowed=True) == "zoë"
    assert request_scope(["张三".encode().decode("latin-1")], allowed=True) == "张三"


def test_without_the_extra_the_import_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "cogito_lc.service.mcp_server")
    monkeypatch.setitem(sys.modules, "mcp.server.fastmcp", None)
    with pytest.raises(ImportError, match=r"cogito-lc\[mcp\]"):
        importlib.import_module("cogito_lc.service.mcp_server")


def _initialize() -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }


def test_the_service_mounts_the_tools_behind_its_guards(
    tmp_path: Path, memory: MemoryStore
) -> None:
    settings = CogitoSettings(store_path=tmp_path / "store", api_token=SecretStr(TOKEN))
    app = create_app(settings, memory=memory)
    accept = {"Accept": "application/json, text/event-stream"}
    good = {**accept, "Authorization": f"Bearer {TOKEN}"}
    with TestClient(app, base_url="http://127.0.0.1:19420") as client:
        assert client.post("/mcp", json=_initialize(), headers=accept).status_code == 401
        scoped = client.post("/mcp", json=_initialize(), headers={**good, "X-Cogito-User": "bob"})
        assert scoped.status_code == 403
        assert "allow_request_scope" in scoped.json()["detail"]
        answer = client.post("/mcp", json=_initialize(), headers=good)
        assert answer.status_code == 200
        assert answer.json()["result"]["serverInfo"]["name"] == "cogito-lc"
        assert "/mcp" not in client.get("/openapi.json", headers=good).json()["paths"]
    with TestClient(app, base_url="http://rebound.example:19420") as client:
        rebound = client.post("/mcp", json=_initialize(), headers=good)
        assert rebound.status_code == 421  # DNS rebinding: a loopback server answers loopback names


def test_mcp_answers_the_host_names_and_origins_every_endpoint_does(
    tmp_path: Path, memory: MemoryStore
) -> None:
    settings = CogitoSettings(
        store_path=tmp_path / "store", api_token=SecretStr(TOKEN), allowed_hosts=["mem.internal"]
    )
    app = create_app(settings, memory=memory)
    good = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {TOKEN}"}
    with TestClient(app, base_url="http://127.0.0.1:19420") as client:
        for host in ["LOCALHOST:19420", "localhost.:19420", "127.0.0.2:19420", "[::1]:19420"]:
            answer = client.post("/mcp", json=_initialize(), headers={**good, "Host": host})
            assert answer.status_code == 200, (host, answer.text)
        for origin in ["http://localhost:3000", "https://127.0.0.1", "https://mem.internal"]:
            answer = client.post("/mcp", json=_initialize(), headers={**good, "Origin": origin})
            assert answer.status_code == 200, (origin, answer.text)
        for origin in ["https://evil.example", "null", "http://mem.internal.evil:80"]:
            answer = client.post("/mcp", json=_initialize(), headers={**good, "Origin": origin})
            assert answer.status_code == 403, origin
            assert answer.json()["error"]["code"] == -32600
            assert repr(origin) in answer.json()["detail"]


async def test_a_client_that_leaves_mid_add_leaves_every_fact_or_none(
    memory: MemoryStore,
) -> None:
    facts = [
        {"content": f"Fact number {n} holds.", "kind": "rule", "importance": 0.5} for n in range(3)
    ]
    gate = Gate(reply=json.dumps(facts))
    memory.extractor = FactExtractor.from_llm(ScriptedChatModel(replies=[gate]))
    server = create_mcp_server(MemoryService(memory, ServiceOptions()))
    async with connect(server) as session:
        with anyio.move_on_after(0.5) as waited:
            await session.call_tool("add", {"text": "Three facts, said slowly."})
        assert waited.cancelled_caught  # the client gave up while the model was working
        assert gate.entered.is_set()
        assert memory.count() == 0
        gate.release.set()
        for _ in range(200):
            if memory.count() == len(facts):
                break
            await anyio.sleep(0.02)
    assert sorted(doc.page_content for doc in memory.list(limit=10)) == [
        f["content"] for f in facts
    ]


# -- versions: history, forget, as_of -----------------------------------------------------

AUSTIN = "I just moved to Austin, Texas, and I live downtown."
DENVER = "I live in Denver now, all settled in."


async def test_history_forget_and_current_reads(server: FastMCP[Any], memory: MemoryStore) -> None:
    old = memory.store(AUSTIN, created_at="2026-01-01T00:00:00Z")
    new = memory.store(DENVER, created_at="2026-03-01T00:00:00Z", supersedes=[old.id or ""])
    lunch = memory.store("Lunch today was a bowl of ramen.")
    async with connect(server) as session:
        history = await _call(session, "history", {"id": old.id})
        assert [v["id"] for v in history["versions"]] == [old.id, new.id]
        assert history["current"] == new.id
        for tool in ("recall", "recall_b", "query"):
            current = await _call(session, tool, {"text": "where do I live", "limit": 2})
            assert old.id not in [m["id"] for m in current["memories"]], tool
            both = await _call(
                session, tool, {"text": "where do I live", "include_superseded": True}
            )
            assert {old.id, new.id} <= {m["id"] for m in both["memories"]}, tool
            then = await _call(
                session, tool, {"text": "where do I live", "as_of": "2026-02-01T00:00:00Z"}
            )
            assert [m["id"] for m in then["memories"]] == [old.id], tool
        page = await _call(session, "list_memories", {"include_superseded": False})
        assert {m["id"] for m in page["memories"]} == {new.id, lunch.id}
        assert page["total"] == 2

        forgotten = await _call(session, "forget", {"ids": [new.id], "reason": "asked"})
        assert set(forgotten["ids"]) == {old.id, new.id}
        assert forgotten["audit"]["reason"] == "asked"
        assert "Austin" not in json.dumps(forgotten)
        gone = await session.call_tool("history", {"id": old.id})
        assert gone.isError
        assert "no memory with this id" in _text(gone)
        nothing = await session.call_tool("forget", {"query": "where I live in Austin"})
        assert nothing.isError
        assert "no memory in this scope matches" in _text(nothing)
    assert memory.get(lunch.id or "") is not None


@pytest.mark.parametrize(
    ("tool", "arguments", "field", "says"),
    [
        ("recall", {"text": "x", "as_of": "2999-01-01T00:00:00Z"}, "as_of", "in the future"),
        ("recall_b", {"text": "x", "as_of": "soon"}, "as_of", "ISO 8601"),
        ("query", {"text": "x", "as_of": "2999-01-01"}, "as_of", "in the future"),
        ("list_memories", {"as_of": "2999-01-01"}, "as_of", "in the future"),
        ("query", {"text": "x", "include_superseded": "yes"}, "include_superseded", "boolean"),
        ("forget", {}, "query", "exactly one"),
        ("forget", {"query": "x", "ids": ["a"]}, "ids", "not both"),
        ("forget", {"ids": []}, "ids", "at least 1"),
        ("forget", {"query": " "}, "query", "not whitespace"),
        ("history", {}, "id", "Field required"),
        ("add", {"text": "x", "supersede": "no"}, "supersede", "boolean"),
    ],
)
async def test_version_arguments_are_tool_errors_naming_the_field(
    server: FastMCP[Any], tool: str, arguments: dict[str, Any], field: str, says: str
) -> None:
    async with connect(server) as session:
        result = await session.call_tool(tool, arguments)
    assert result.isError
    message = _text(result)
    assert f"invalid arguments: {field}" in message or f"; {field}:" in message, message
    assert says in message, message


async def test_add_reports_supersession_and_forget_requests(memory: MemoryStore) -> None:
    from cogito_lc import SupersessionJudge

    memory.judge = SupersessionJudge.from_llm(
        ScriptedChatModel(replies=['{"supersedes": [1], "repeats": []}'])
    )
    server = create_mcp_server(MemoryService(memory, ServiceOptions()))
    async with connect(server) as session:
        old = await _call(session, "add", {"text": AUSTIN})
        new = await _call(session, "add", {"text": DENVER})
        assert new["superseded"] == old["ids"]
        assert new["supersession"] == "judged"
        kept = await _call(session, "add", {"text": "Boston now.", "supersede": False})
        assert kept["supersession"] is None
        assert kept["superseded"] == []
        memory.store("My phone number is 555-0101.")
        forgot = await _call(session, "add", {"text": "Please forget my phone number."})
        assert forgot["method"] == "forgotten"
        assert len(forgot["forgotten"]) == 1
    assert all("555" not in doc.page_content for doc in memory.list())
