"""Real clients of CogitoStore: a LangGraph agent and LangMem's memory tools, unchanged.

The chat model is a rule-based fake that calls tools like a tool-calling model;
the store, the embeddings (all-MiniLM-L6-v2) and Chroma are real.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("langgraph.store.base")
pytest.importorskip("langmem")

from langchain_chroma import Chroma
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langmem import create_manage_memory_tool, create_search_memory_tool

from cogito_lc import MemoryStore
from cogito_lc.langgraph import CogitoStore

NAMESPACE = ("memories", "{langgraph_user_id}")


class RuleToolModel(BaseChatModel):
    """Calls tools like a tool-calling model, by rules.

    "remember: X" -> ``manage_memory(content=X)``; any other question ->
    ``search_memory(query=question)``; after a tool result -> an answer quoting
    the first memory found (or "Noted.").
    """

    @property
    def _llm_type(self) -> str:
        return "rule-tool-model"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, BaseMessage]:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            found = json.loads(str(last.content)) if last.name == "search_memory" else None
            answer = found[0]["value"]["content"] if found else "Noted."
            if found == []:
                answer = "I have no memory of that."
            reply = AIMessage(content=answer)
        else:
            text = str(last.content)
            if text.lower().startswith("remember:"):
                call = {"name": "manage_memory", "args": {"content": text.split(":", 1)[1].strip()}}
            else:
                call = {"name": "search_memory", "args": {"query": text}}
            reply = AIMessage(content="", tool_calls=[{**call, "id": f"call-{len(messages)}"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


@pytest.fixture
def store(persistent_chroma: Chroma) -> CogitoStore:
    memory = MemoryStore(persistent_chroma, scope={"agent_id": "assistant"})
    return CogitoStore(memory, index={"fields": ["content"]}, scope_keys={"user_id": 1})


def agent(store: CogitoStore) -> Any:
    tools = [create_manage_memory_tool(NAMESPACE), create_search_memory_tool(NAMESPACE)]
    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda state: {"messages": [RuleToolModel().invoke(state["messages"])]})
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=InMemorySaver(), store=store)


def ask(app: Any, text: str, thread: str, user: str) -> list[BaseMessage]:
    config = {"configurable": {"thread_id": thread, "langgraph_user_id": user}}
    return list(app.invoke({"messages": [{"role": "user", "content": text}]}, config)["messages"])


def test_an_agent_stores_in_one_thread_and_recalls_in_another(store: CogitoStore) -> None:
    app = agent(store)
    fact = "Alice's production database is PostgreSQL 16 on db-7."
    ask(app, "remember: Alice deploys with Helm charts.", "thread-1", "alice")
    stored = ask(app, f"remember: {fact}", "thread-1", "alice")
    assert stored[-1].content == "Noted."

    recalled = ask(app, "which database does production run on?", "thread-2", "alice")
    assert len(recalled) == 4  # a new thread: question, tool call, tool result, answer
    assert recalled[-1].content == fact
    assert json.loads(str(recalled[-2].content))[0]["namespace"] == ["memories", "alice"]

    other_user = ask(app, "which database does production run on?", "thread-3", "bob")
    assert other_user[-1].content == "I have no memory of that."
    # The memories are plain cogito-lc memories in Alice's scope.
    alice = store.memory.scoped({"user_id": "alice"})
    assert sorted(doc.page_content for doc in alice.list()) == [
        "Alice deploys with Helm charts.",
        fact,
    ]


async def test_the_agent_runs_async(store: CogitoStore) -> None:
    app = agent(store)
    config = {"configurable": {"thread_id": "a-1", "langgraph_user_id": "carol"}}
    await app.ainvoke(
        {"messages": [{"role": "user", "content": "remember: Carol is on call."}]}, config
    )
    config = {"configurable": {"thread_id": "a-2", "langgraph_user_id": "carol"}}
    out = await app.ainvoke({"messages": [{"role": "user", "content": "who is on call?"}]}, config)
    assert out["messages"][-1].content == "Carol is on call."


def test_langmem_tools_create_update_delete_and_search(store: CogitoStore) -> None:
    manage = create_manage_memory_tool(NAMESPACE, store=store)
    search = create_search_memory_tool(NAMESPACE, store=store)
    config = {"configurable": {"langgraph_user_id": "dana"}}

    created = manage.invoke({"content": "Dana prefers tabs over spaces."}, config)
    key = created.removeprefix("created memory ").strip()
    manage.invoke({"content": "Dana reviews pull requests on Tuesdays."}, config)
    item = store.get(("memories", "dana"), key)
    assert item is not None
    assert item.value == {"content": "Dana prefers tabs over spaces."}

    found = json.loads(search.invoke({"query": "tabs or spaces?"}, config))
    assert found[0]["key"] == key
    assert found[0]["value"] == {"content": "Dana prefers tabs over spaces."}
    assert len(found) == 2

    manage.invoke({"id": key, "content": "Dana prefers spaces now.", "action": "update"}, config)
    updated = store.get(("memories", "dana"), key)
    assert updated is not None
    assert updated.value == {"content": "Dana prefers spaces now."}
    assert updated.created_at == item.created_at
    first = json.loads(search.invoke({"query": "spaces", "limit": 1}, config))
    assert [hit["key"] for hit in first] == [key]

    manage.invoke({"id": key, "action": "delete"}, config)
    assert store.get(("memories", "dana"), key) is None
    left = json.loads(search.invoke({"query": "tabs or spaces?"}, config))
    assert [hit["value"]["content"] for hit in left] == ["Dana reviews pull requests on Tuesdays."]
    none = json.loads(
        search.invoke({"query": "tabs"}, {"configurable": {"langgraph_user_id": "x"}})
    )
    assert none == []
