"""A bad input is the error of a traced run, as for LangChain's own Runnables.

Tracers and ``astream_events`` see the component's run start and end in the
error the caller gets (same type and message), sync and async.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.language_models import FakeListChatModel
from langchain_core.runnables import Runnable
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler
from pydantic import BaseModel, ValidationError

from cogito_lc import FactExtractor, LlmExtractor, PointerFilter, SupersessionJudge


class Person(BaseModel):
    name: str


def _llm() -> FakeListChatModel:
    return FakeListChatModel(responses=["[]"])


CASES: list[tuple[str, Runnable[Any, Any], Any, type[Exception], str]] = [
    (
        "PointerFilter",
        PointerFilter.from_llm(_llm()),
        {"query": "  ", "documents": []},
        ValueError,
        "query",
    ),
    ("FactExtractor", FactExtractor.from_llm(_llm()), 42, TypeError, "got int"),
    (
        "LlmExtractor",
        LlmExtractor.from_llm(_llm(), output=Person, prompt="Who is in {text}?"),
        3.5,
        TypeError,
        "got float",
    ),
    (
        "SupersessionJudge",
        SupersessionJudge.from_llm(_llm()),
        {"memory": " ", "candidates": []},
        ValidationError,
        "memory",
    ),
]


def _call(component: Runnable[Any, Any], value: Any, mode: str, config: Any) -> Any:
    if mode == "sync":
        return component.invoke(value, config)
    return asyncio.run(component.ainvoke(value, config))


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(("name", "component", "value", "error", "match"), CASES)
def test_a_bad_input_is_recorded_as_the_runs_error(
    name: str,
    component: Runnable[Any, Any],
    value: Any,
    error: type[Exception],
    match: str,
    mode: str,
) -> None:
    tracer = RunCollectorCallbackHandler()
    with pytest.raises(error, match=match) as raised:
        _call(component, value, mode, {"callbacks": [tracer]})
    assert [run.name for run in tracer.traced_runs] == [name]
    run = tracer.traced_runs[0]
    assert run.error is not None
    assert str(raised.value).splitlines()[0] in run.error
    assert not run.child_runs  # checked before any model call


def test_astream_events_shows_the_run_that_failed_on_its_input() -> None:
    component = PointerFilter.from_llm(_llm())

    seen: list[tuple[str, str]] = []

    async def events() -> None:
        stream = component.astream_events({"query": "  ", "documents": []}, version="v2")
        async for event in stream:  # kept up to the error, which ends the stream
            seen.append((event["event"], event["name"]))  # noqa: PERF401

    with pytest.raises(ValueError, match="query"):
        asyncio.run(events())
    assert seen == [("on_chain_start", "PointerFilter")]
