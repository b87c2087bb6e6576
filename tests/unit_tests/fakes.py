"""The fakes the unit tests share: scripted chat models and a recording callback handler."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import httpx
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel, FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_openai import ChatOpenAI
from pydantic import Field, PrivateAttr


class StatusError(Exception):
    """An HTTP error as client libraries raise them: with a ``status_code``."""

    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


@dataclass
class Gate:
    """A reply that blocks until released: the model is still working when it is waited on."""

    reply: str = "[1]"
    entered: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)
    cancelled: bool = False


class ScriptedChatModel(BaseChatModel):
    """Replies with the scripted items in turn (the last one repeats).

    An item is a reply string, an exception to raise, or a :class:`Gate` to block on.
    Every call's messages and keyword arguments are recorded. Subclasses change how a
    reply is made by overriding :meth:`_respond`.
    """

    replies: list[Any]
    calls: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _upcoming(self) -> Any:
        return self.replies[min(len(self.calls) + 1, len(self.replies)) - 1]

    def _next(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> Any:
        self.calls.append({"messages": messages, "kwargs": kwargs})
        reply = self.replies[min(len(self.calls), len(self.replies)) - 1]
        if isinstance(reply, BaseException):
            raise reply
        return reply

    def _respond(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> ChatResult:
        reply = self._next(messages, kwargs)
        if isinstance(reply, Gate):
            reply.entered.set()
            reply.release.wait(timeout=60)
            reply.finished.set()
            reply = reply.reply
        return _result(reply)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._respond(messages, kwargs)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        if not isinstance(self._upcoming(), Gate):
            return self._respond(messages, kwargs)
        gate: Gate = self._next(messages, kwargs)
        gate.entered.set()
        try:
            while not gate.release.is_set():
                await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            gate.cancelled = True
            raise
        gate.finished.set()
        return _result(gate.reply)

    def prompt_text(self, call: int = 0) -> str:
        return "\n".join(str(m.content) for m in self.calls[call]["messages"])

    def prompt(self, call: int = 0) -> str:
        """Alias of :meth:`prompt_text`."""
        return self.prompt_text(call)


class AsyncOnlyChatModel(BaseChatModel):
    """Replies only through the async API (the sync one fails the test); counts calls in flight."""

    reply: str
    in_flight: int = 0
    most_in_flight: int = 0

    @property
    def _llm_type(self) -> str:
        return "async-only"

    def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
        msg = "the async path must await the model, not call it synchronously"
        raise AssertionError(msg)

    async def _agenerate(self, *args: Any, **kwargs: Any) -> ChatResult:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await asyncio.sleep(0.05)
        self.in_flight -= 1
        return _result(self.reply)


class GateChatModel(AsyncOnlyChatModel):
    """Async-only model whose calls finish only once ``expected`` calls are in flight.

    Each call answers a one-person list named after the last word of the prompt.
    """

    reply: str = ""
    expected: int
    _arrived: int = PrivateAttr(default=0)
    _gate: asyncio.Event | None = PrivateAttr(default=None)

    async def _agenerate(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> ChatResult:
        if self._gate is None:
            self._gate = asyncio.Event()
        self._arrived += 1
        if self._arrived == self.expected:
            self._gate.set()
        await self._gate.wait()
        return _result(json.dumps([{"name": _last_word(messages), "age": 1}]))


class BarrierChatModel(BaseChatModel):
    """Sync model whose calls finish only once ``parties`` threads are inside it.

    Each call answers a one-person list named after the last word of the prompt.
    """

    parties: int
    _barrier: threading.Barrier | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any) -> None:
        self._barrier = threading.Barrier(self.parties, timeout=60)

    @property
    def _llm_type(self) -> str:
        return "barrier"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        assert self._barrier is not None
        self._barrier.wait()
        return _result(json.dumps([{"name": _last_word(messages), "age": 2}]))


def offline_chat_openai(
    handler: Callable[[httpx.Request], httpx.Response] | None = None, **fields: Any
) -> ChatOpenAI:
    """A ``ChatOpenAI`` that never opens a socket.

    Requests go to ``handler``; without one they fail as an unreachable server does
    (``httpx.ConnectError``). ``http_socket_options=()`` skips langchain-openai's probe
    of the socket options it would set, which creates a socket.
    """
    transport = httpx.MockTransport(handler or _unreachable)
    settings: dict[str, Any] = {
        "model": "m",
        "api_key": "k",
        "base_url": "http://127.0.0.1:9/v1",
        "max_retries": 0,
        "http_socket_options": (),
        "http_client": httpx.Client(transport=transport),
        "http_async_client": httpx.AsyncClient(transport=transport),
    }
    return ChatOpenAI(**{**settings, **fields})


def _unreachable(request: httpx.Request) -> httpx.Response:
    msg = "[Errno 111] Connection refused"
    raise httpx.ConnectError(msg, request=request)


def json_reply(value: Any) -> FakeListChatModel:
    """A chat model that answers ``value`` as JSON."""
    return FakeListChatModel(responses=[json.dumps(value)])


def _last_word(messages: list[BaseMessage]) -> str:
    return str(messages[-1].content).rsplit(" ", 1)[-1]


def _result(text: str) -> ChatResult:
    return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


class Recorder(BaseCallbackHandler):
    """Records run starts (kind, name, parent), chain outputs and custom events."""

    def __init__(self) -> None:
        self.runs: dict[UUID, tuple[str, str, UUID | None]] = {}
        self.chain_outputs: dict[UUID, Any] = {}
        self.events: list[tuple[str, Any, UUID]] = []

    def on_chain_start(
        self,
        serialized: Any,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self.runs[run_id] = ("chain", str(kwargs.get("name")), parent_run_id)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.chain_outputs[run_id] = outputs

    def on_retriever_start(
        self,
        serialized: Any,
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self.runs[run_id] = ("retriever", str(kwargs.get("name")), parent_run_id)

    def on_chat_model_start(
        self,
        serialized: Any,
        messages: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self.runs[run_id] = ("chat_model", str(kwargs.get("name")), parent_run_id)

    def on_custom_event(
        self,
        name: str,
        data: Any,
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        self.events.append((name, data, run_id))

    def event_data(self, name: str) -> list[Any]:
        return [data for event, data, _ in self.events if event == name]

    def run_ids(self, kind: str, name: str) -> list[UUID]:
        return [rid for rid, (k, n, _) in self.runs.items() if k == kind and n == name]

    def run_named(self, name: str) -> UUID:
        """The first chain run called ``name``."""
        return self.run_ids("chain", name)[0]

    @property
    def chains(self) -> dict[UUID, tuple[str, UUID | None]]:
        """Chain runs: name and parent."""
        return {rid: (n, parent) for rid, (k, n, parent) in self.runs.items() if k == "chain"}

    @property
    def chat_model_parents(self) -> list[UUID | None]:
        """Parent run of each chat model call, in order."""
        return [parent for k, _, parent in self.runs.values() if k == "chat_model"]

    def names(self) -> list[str]:
        """Each run's label (its name; ``chat_model`` for a chat model call), in order."""
        return [_label(kind, name) for kind, name, _ in self.runs.values()]

    def lineage(self, label: str) -> list[str]:
        """Labels from the first run labelled ``label`` up to the root."""
        run_id: UUID | None = next(
            rid for rid, (k, n, _) in self.runs.items() if _label(k, n) == label
        )
        labels = []
        while run_id is not None:
            kind, name, run_id = self.runs[run_id]
            labels.append(_label(kind, name))
        return labels

    def ancestors(self, run_id: UUID) -> list[UUID]:
        chain: list[UUID] = []
        parent = self.runs[run_id][2]
        while parent is not None and parent in self.runs:
            chain.append(parent)
            parent = self.runs[parent][2]
        return chain


def _label(kind: str, name: str) -> str:
    return "chat_model" if kind == "chat_model" else name
