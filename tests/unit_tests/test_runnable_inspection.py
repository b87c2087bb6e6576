"""Every public Runnable can be inspected the way LangChain tooling inspects it.

Input and output JSON schemas, graphs (alone and inside a chain) and ``as_tool``
are what LangServe, LangGraph Studio and agent frameworks call before running
anything; each must work on every Python the package supports.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any

import pytest
from langchain_chroma import Chroma
from langchain_core.language_models import FakeListChatModel
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.tools import BaseTool
from pydantic import BaseModel

import cogito_lc
from cogito_lc import (
    CogitoRetriever,
    FactExtractor,
    FactListOutputParser,
    LlmExtractor,
    PointerFilter,
    PointerOutputParser,
    RecallB,
    SnapshotBuilder,
    SupersessionJudge,
)


class Person(BaseModel):
    name: str


def _llm() -> FakeListChatModel:
    return FakeListChatModel(responses=["[]"])


FACTORIES: dict[str, Callable[[Chroma], Runnable[Any, Any]]] = {
    "CogitoRetriever": lambda store: CogitoRetriever(
        recall_b=RecallB(vectorstore=store), pointer_filter=PointerFilter.from_llm(_llm())
    ),
    "FactExtractor": lambda _: FactExtractor.from_llm(_llm()),
    "FactListOutputParser": lambda _: FactListOutputParser(),
    "LlmExtractor": lambda _: LlmExtractor.from_llm(_llm(), output=Person, prompt="{text}"),
    "PointerFilter": lambda _: PointerFilter.from_llm(_llm()),
    "PointerOutputParser": lambda _: PointerOutputParser(shown=5),
    "RecallB": lambda store: RecallB(vectorstore=store),
    "SnapshotBuilder": lambda _: SnapshotBuilder.from_llm(None),
    "SupersessionJudge": lambda _: SupersessionJudge.from_llm(_llm()),
}

# Runnables an agent can call as a tool without extra arguments: a string or typed fields.
TOOLS = {"CogitoRetriever", "PointerFilter", "RecallB"}


def _public_runnables() -> list[str]:
    return sorted(
        name
        for name in cogito_lc.__all__
        if inspect.isclass(obj := getattr(cogito_lc, name)) and issubclass(obj, Runnable)
    )


def test_every_public_runnable_is_inspected() -> None:
    assert _public_runnables() == sorted(FACTORIES)


@pytest.fixture(params=_public_runnables())
def runnable(request: pytest.FixtureRequest, chroma: Chroma) -> Runnable[Any, Any]:
    return FACTORIES[request.param](chroma)


def test_input_and_output_schemas(runnable: Runnable[Any, Any]) -> None:
    for schema in (runnable.get_input_jsonschema(), runnable.get_output_jsonschema()):
        assert json.loads(json.dumps(schema)) == schema
        assert schema.get("title")
    runnable.get_config_jsonschema()


def test_graph_alone_and_in_a_chain(runnable: Runnable[Any, Any]) -> None:
    graph = runnable.get_graph()
    chain = RunnableLambda(lambda value: value, name="Before") | runnable
    chained = chain.get_graph()

    assert runnable.get_name() in {node.name for node in graph.nodes.values()}
    assert {"Before", runnable.get_name()} <= {node.name for node in chained.nodes.values()}
    assert json.dumps(chained.to_json(), default=str)


@pytest.mark.parametrize("name", sorted(TOOLS))
@pytest.mark.filterwarnings("ignore::langchain_core._api.beta_decorator.LangChainBetaWarning")
def test_as_tool(name: str, chroma: Chroma) -> None:
    tool = FACTORIES[name](chroma).as_tool(name=f"{name.lower()}_tool", description=f"{name}.")

    assert isinstance(tool, BaseTool)
    assert tool.args
    assert tool.tool_call_schema.model_json_schema()


def test_pointer_filter_input_schema_names_its_fields() -> None:
    schema = PointerFilter.from_llm(_llm()).get_input_jsonschema()
    schema = schema["$defs"][schema["$ref"].rsplit("/", 1)[-1]]

    assert schema["required"] == ["query", "documents"]
    assert schema["properties"]["query"] == {"title": "Query", "type": "string"}


@pytest.mark.filterwarnings("ignore::langchain_core._api.beta_decorator.LangChainBetaWarning")
def test_pointer_filter_as_tool_runs() -> None:
    from langchain_core.documents import Document

    tool = PointerFilter.from_llm(FakeListChatModel(responses=['{"ids": [2]}'])).as_tool(
        name="pick", description="Pick the relevant documents."
    )
    docs = [Document("a"), Document("b")]

    picked = tool.invoke({"query": "b?", "documents": docs})

    assert [doc.page_content for doc in picked] == ["b"]
    assert picked[0].metadata["cogito"]["filter_method"] == "filter"
    assert docs[1].metadata == {}  # the given documents are not changed
