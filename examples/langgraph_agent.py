"""A LangGraph agent whose long-term memory is cogito-lc, through CogitoStore.

The agent has LangMem's two memory tools (``manage_memory``, ``search_memory``),
unchanged; CogitoStore answers them from a MemoryStore over embedded Chroma, so a
fact stored in one conversation thread is recalled (by RecallB) in another. The
chat model is a small rule-based stand-in for a tool-calling model, so the example
runs offline; swap in any chat model that supports tool calling.

    pip install 'cogito-lc[local,langgraph]' langmem
    python examples/langgraph_agent.py
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from typing import Any

from langchain_chroma import Chroma
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langmem import create_manage_memory_tool, create_search_memory_tool

from cogito_lc import CogitoStore, MemoryStore, local_embeddings

NAMESPACE = ("memories", "{langgraph_user_id}")


class RuleToolModel(BaseChatModel):
    """Stands in for a tool-calling model: "remember: X" stores X, a question searches."""

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
            if found is None:
                reply = AIMessage(content="Noted.")
            else:
                best = found[0]["value"]["content"] if found else "nothing"
                reply = AIMessage(content=f"From memory: {best}")
        else:
            text = str(last.content)
            if text.lower().startswith("remember:"):
                call = {"name": "manage_memory", "args": {"content": text.split(":", 1)[1].strip()}}
            else:
                call = {"name": "search_memory", "args": {"query": text, "limit": 3}}
            reply = AIMessage(content="", tool_calls=[{**call, "id": f"call-{len(messages)}"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def build_agent(store: CogitoStore) -> Any:
    tools = [create_manage_memory_tool(NAMESPACE), create_search_memory_tool(NAMESPACE)]
    model = RuleToolModel().bind_tools(tools)
    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=InMemorySaver(), store=store)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="cogito-langgraph-") as folder:
        memory = MemoryStore(
            Chroma("langgraph_agent", local_embeddings(), persist_directory=folder)
        )
        # ("memories", "<user>"): the second label is the memory's user_id scope.
        store = CogitoStore(memory, index={"fields": ["content"]}, scope_keys={"user_id": 1})
        agent = build_agent(store)
        turns = [
            ("thread-1", "remember: Billing runs on PostgreSQL 16 in eu-west-1."),
            ("thread-1", "remember: Money amounts in the billing API are integer cents."),
            ("thread-2", "how does the billing API represent money?"),
        ]
        for thread, text in turns:
            config = {"configurable": {"thread_id": thread, "langgraph_user_id": "alice"}}
            out = agent.invoke({"messages": [{"role": "user", "content": text}]}, config)
            print(f"{thread} | user: {text}")
            print(f"{thread} | agent: {out['messages'][-1].content}")
        held = memory.scoped({"user_id": "alice"}).count()
        print(f"alice's scope holds {held} memories")


if __name__ == "__main__":
    main()
