"""The MCP tools end to end, with the official SDK's clients and langchain-mcp-adapters.

- ``cogito-lc mcp`` as a real subprocess, driven by the SDK's stdio client;
- the service's ``/mcp`` on a real uvicorn process on 127.0.0.1, driven by the SDK's
  streamable-HTTP client: token required, scopes kept apart, the same memories as REST;
- ``load_mcp_tools`` inside a LangChain agent whose fake chat model calls the tools.

Every process uses an embedded Chroma store in a temporary directory and the offline
MiniLM model.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from tests.integration_tests.service_process import ServiceProcess, checked_service

TOKEN = "integration-mcp-token-0123456789"  # noqa: S105 - a test value
TIMEOUT = 300.0
"""Guard against hangs (model loading included), never a speed assertion."""


def _text(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def _call(session: ClientSession, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(name, arguments)
    assert not result.isError, _text(result)
    assert result.structuredContent is not None
    return result.structuredContent


# -- stdio: cogito-lc mcp ------------------------------------------------------------


def _stdio_server(tmp_path: Path, user: str) -> StdioServerParameters:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {key: value for key, value in os.environ.items() if not key.startswith("COGITO_")}
    env.update(
        {
            "HOME": str(home),
            "COGITO_STORE_PATH": str(tmp_path / "store"),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "ANONYMIZED_TELEMETRY": "False",
        }
    )
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "cogito_lc.cli", "--user", user, "mcp"],
        env=env,
        cwd=tmp_path,
    )


@asynccontextmanager
async def stdio_session(tmp_path: Path, user: str) -> AsyncIterator[ClientSession]:
    with anyio.fail_after(TIMEOUT):
        async with (
            stdio_client(_stdio_server(tmp_path, user)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


async def test_stdio_cogito_lc_mcp_stores_and_recalls_in_its_scope(tmp_path: Path) -> None:
    text = "The staging database password rotates every 30 days."
    async with stdio_session(tmp_path, "alice") as session:
        tools = {tool.name for tool in (await session.list_tools()).tools}
        assert {"recall", "recall_b", "store", "delete_memory"} <= tools
        stored = await _call(session, "store", {"text": text, "metadata": {"topic": "ops"}})
        await _call(session, "store", {"text": "Deploys to production happen on Tuesdays."})
        repeated = await _call(session, "store", {"text": text})
        assert (stored["created"], repeated["created"]) == (True, False)
        assert repeated["id"] == stored["id"]
        found = await _call(session, "recall_b", {"text": "how often does the password rotate"})
        assert found["memories"][0]["id"] == stored["id"]
        assert found["memories"][0]["text"] == text
        vector = await _call(session, "query", {"text": "staging password rotation", "limit": 1})
        assert vector["memories"][0]["text"] == text

        refused = await session.call_tool("store", {"text": text, "scope": "bob"})
        assert refused.isError
        assert "scope: Extra inputs are not permitted" in _text(refused)

    async with stdio_session(tmp_path, "bob") as session:  # same store, another scope
        page = await _call(session, "list_memories", {})
        assert page["total"] == 0
        gone = await session.call_tool("delete_memory", {"id": stored["id"]})
        assert gone.isError
        assert "no memory with this id" in _text(gone)

    async with stdio_session(tmp_path, "alice") as session:  # persisted, untouched by bob
        page = await _call(session, "list_memories", {})
        assert page["total"] == 2
        assert {memory["text"] for memory in page["memories"]} >= {text}


# -- streamable HTTP: the service's /mcp ----------------------------------------------


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """One service: token required, per-request scopes allowed."""
    root = tmp_path_factory.mktemp("mcp-service")
    with checked_service(
        root / "store", token=TOKEN, settings={"COGITO_ALLOW_REQUEST_SCOPE": "true"}
    ) as process:
        yield process


@asynccontextmanager
async def http_session(
    service: ServiceProcess, *, user: str | None = None, token: str | None = TOKEN
) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if user is not None:
        headers["X-Cogito-User"] = user
    with anyio.fail_after(TIMEOUT):
        async with (
            httpx.AsyncClient(headers=headers, timeout=120) as http,
            streamable_http_client(f"{service.base_url}/mcp", http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            yield session


def _initialize_body() -> dict[str, Any]:
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


def test_http_mcp_requires_the_token_and_checks_the_scope_header(
    service: ServiceProcess,
) -> None:
    accept = {"Accept": "application/json, text/event-stream"}
    url = f"{service.base_url}/mcp"
    missing = httpx.post(url, json=_initialize_body(), headers=accept, timeout=30)
    assert missing.status_code == 401
    wrong = httpx.post(
        url,
        json=_initialize_body(),
        headers={**accept, "Authorization": "Bearer not-the-token"},
        timeout=30,
    )
    assert wrong.status_code == 401
    good = {**accept, "Authorization": f"Bearer {TOKEN}"}
    twice = httpx.post(
        url,
        json=_initialize_body(),
        headers=[*good.items(), ("X-Cogito-User", "alice"), ("X-Cogito-User", "bob")],
        timeout=30,
    )
    assert twice.status_code == 400
    invalid = httpx.post(
        url, json=_initialize_body(), headers={**good, "X-Cogito-User": "two words"}, timeout=30
    )
    assert invalid.status_code == 422
    ok = httpx.post(url, json=_initialize_body(), headers=good, timeout=30)
    assert ok.status_code == 200
    assert ok.json()["result"]["serverInfo"]["name"] == "cogito-lc"


async def test_http_client_with_a_wrong_token_is_refused(service: ServiceProcess) -> None:
    with pytest.raises(BaseException) as caught:
        async with http_session(service, token="not-the-token"):  # noqa: S106
            pass
    assert "401" in repr(caught.value) or "Unauthorized" in repr(caught.value)


async def test_http_scopes_are_kept_apart_and_match_rest(service: ServiceProcess) -> None:
    text = "Alice's VPN certificate expires on 2027-03-01."
    async with http_session(service, user="alice-mcp") as alice:
        stored = await _call(alice, "store", {"text": text})
        found = await _call(alice, "recall_b", {"text": "when does the VPN certificate expire"})
        assert found["memories"][0] == {
            "id": stored["id"],
            "text": text,
            "score": found["memories"][0]["score"],
        }
        recalled = await _call(alice, "recall", {"text": "VPN certificate"})
        assert recalled["memories"][0]["text"] == text
        assert recalled["method"] == "fallback_no_llm"

    async with http_session(service, user="bob-mcp") as bob:
        assert (await _call(bob, "list_memories", {}))["total"] == 0
        found = await _call(bob, "recall_b", {"text": "VPN certificate"})
        assert found["memories"] == []
        refused = await bob.call_tool("delete_memory", {"id": stored["id"]})
        assert refused.isError
        assert "no memory with this id in this scope" in _text(refused)

    with service.client(user="alice-mcp") as rest:  # the same service and store as REST
        record = rest.get(f"/memories/{stored['id']}")
        assert record.status_code == 200
        assert record.json()["text"] == text
    with service.client(user="bob-mcp") as rest:
        assert rest.get(f"/memories/{stored['id']}").status_code == 404


async def test_http_history_forget_and_as_of_act_as_rest(service: ServiceProcess) -> None:
    austin = "Hana lives in Austin, Texas."
    denver = "Hana moved to Denver; she lives there now."
    with service.client(user="hana-mcp") as rest:
        old = rest.post("/store", json={"text": austin}).json()["id"]
        new = rest.post("/store", json={"text": denver, "supersedes": [old]}).json()["id"]
        created = rest.get(f"/memories/{old}").json()["metadata"]["created_at"]
    async with http_session(service, user="hana-mcp") as hana:
        history = await _call(hana, "history", {"id": old})
        assert [v["text"] for v in history["versions"]] == [austin, denver]
        assert history["current"] == new
        current = await _call(hana, "recall_b", {"text": "where does Hana live"})
        assert [m["id"] for m in current["memories"]] == [new]
        then = await _call(hana, "query", {"text": "where does Hana live", "as_of": created})
        assert [m["id"] for m in then["memories"]] == [old]
        future = await hana.call_tool("recall", {"text": "where", "as_of": "2999-01-01T00:00:00Z"})
        assert future.isError
        assert "invalid arguments: as_of" in _text(future)
    async with http_session(service, user="ivan-mcp") as ivan:
        for tool, arguments, says in (
            ("history", {"id": old}, "no memory with this id in this scope"),
            ("forget", {"ids": [new]}, f'no memory of this scope has these ids: ["{new}"]'),
        ):
            refused = await ivan.call_tool(tool, arguments)
            assert refused.isError, tool
            assert says in _text(refused)
    async with http_session(service, user="hana-mcp") as hana:
        forgot = await _call(hana, "forget", {"ids": [new], "reason": "asked"})
        assert set(forgot["ids"]) == {old, new}
        assert forgot["audit"]["scope"] == {"user_id": "hana-mcp"}
        left = await _call(hana, "recall_b", {"text": "Austin Denver", "include_superseded": True})
        assert left["memories"] == []
    with service.client(user="hana-mcp") as rest:
        assert rest.get(f"/history/{old}").status_code == 404
        assert rest.get("/memories").json()["total"] == 0


# -- langchain-mcp-adapters in a LangChain agent --------------------------------------


class ScriptedToolCaller(GenericFakeChatModel):
    """A fake chat model that answers with scripted messages and accepts bound tools."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


async def test_langchain_agent_stores_and_recalls_through_load_mcp_tools(
    service: ServiceProcess,
) -> None:
    from langchain.agents import create_agent
    from langchain_mcp_adapters.tools import load_mcp_tools

    fact = "The on-call rotation hands over every Monday at 09:00 CET."
    script = iter(
        [
            AIMessage(
                content="",
                tool_calls=[{"name": "store", "args": {"text": fact}, "id": "call-store"}],
            ),
            AIMessage(
                content="",
                tool_calls=[
                    {
                        "name": "recall_b",
                        "args": {"text": "when does on-call hand over", "limit": 3},
                        "id": "call-recall",
                    },
                    {"name": "recall_b", "args": {"limit": 3}, "id": "call-bad"},
                ],
            ),
            AIMessage(content="On-call hands over on Mondays at 09:00 CET."),
        ]
    )
    async with http_session(service, user="agent-mcp") as session:
        tools = await load_mcp_tools(session)
        assert {tool.name for tool in tools} >= {"recall", "recall_b", "store", "add"}
        agent = create_agent(ScriptedToolCaller(messages=script), tools)
        with anyio.fail_after(TIMEOUT):
            state = await agent.ainvoke({"messages": [("user", "Remember the on-call rule.")]})

    results = {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}
    assert set(results) == {"call-store", "call-recall", "call-bad"}
    stored = json.loads(_content_text(results["call-store"]))
    assert stored["text"] == fact
    recalled = json.loads(_content_text(results["call-recall"]))
    assert recalled["memories"][0] == {
        "id": stored["id"],
        "text": fact,
        "score": recalled["memories"][0]["score"],
    }
    assert results["call-bad"].status == "error"
    assert "text: Field required" in _content_text(results["call-bad"])
    assert state["messages"][-1].content == "On-call hands over on Mondays at 09:00 CET."
    with service.client(user="agent-mcp") as rest:
        assert rest.get(f"/memories/{stored['id']}").json()["text"] == fact


def _content_text(message: ToolMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    parts = [part["text"] if isinstance(part, dict) else str(part) for part in content]
    return "".join(parts)


# -- streamed recall on the same service ----------------------------------------------


def test_recall_stream_over_real_http_sends_stage_one_then_the_result(
    service: ServiceProcess,
) -> None:
    with service.client(user="stream-it") as rest:
        rest.post("/store", json={"text": "Backups run nightly at 02:00 UTC."})
        rest.post("/store", json={"text": "The VPN gateway is vpn.example.com."})
        body = {"text": "when do backups run", "limit": 2}
        with rest.stream("POST", "/recall/stream", json=body) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            lines = [line for line in response.iter_lines() if line]
        recall = rest.post("/recall", json=body).json()
    names = [line.removeprefix("event: ") for line in lines if line.startswith("event: ")]
    data = [json.loads(line.removeprefix("data: ")) for line in lines if line.startswith("data: ")]
    assert names == ["candidates", "result"]
    assert data[0]["memories"][0]["text"] == "Backups run nightly at 02:00 UTC."
    assert data[1] == recall
