"""Scripted chat models and a recording callback handler for the filter and retriever tests."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field


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
    Every call's messages and keyword arguments are recorded.
    """

    replies: list[Any]
    calls: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _next(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> Any:
        self.calls.append({"messages": messages, "kwargs": kwargs})
        reply = self.replies[min(len(self.calls), len(self.replies)) - 1]
        if isinstance(reply, BaseException):
            raise reply
        return reply

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self._next(messages, kwargs)
        if isinstance(reply, Gate):
            reply.entered.set()
            reply.release.wait(timeout=60)
            reply.finished.set()
            reply = reply.reply
        return _result(reply)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self._next(messages, kwargs)
        if isinstance(reply, Gate):
            reply.entered.set()
            try:
                while not reply.release.is_set():
                    await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                reply.cancelled = True
                raise
            reply.finished.set()
            reply = reply.reply
        return _result(reply)

    def prompt_text(self, call: int = 0) -> str:
        return "\n".join(str(m.content) for m in self.calls[call]["messages"])


def _result(text: str) -> ChatResult:
    return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


class Recorder(BaseCallbackHandler):
    """Records run starts (name, kind, parent) and custom events."""

    def __init__(self) -> None:
        self.runs: dict[UUID, tuple[str, str, UUID | None]] = {}
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

    def ancestors(self, run_id: UUID) -> list[UUID]:
        chain: list[UUID] = []
        parent = self.runs[run_id][2]
        while parent is not None and parent in self.runs:
            chain.append(parent)
            parent = self.runs[parent][2]
        return chain
