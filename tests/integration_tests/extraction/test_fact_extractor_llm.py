"""FactExtractor and LlmExtractor against a real model behind an OpenAI-compatible server.

The model is Gemma 3 270M, a tiny base model: these tests check types, bounds, the
absence of exceptions and that constrained decoding yields valid JSON, not that the
facts are wise.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
from collections.abc import Callable
from typing import Any

import openai
import pytest
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from cogito_lc.extraction.fact_extractor import Fact, FactExtractionInput, FactExtractor, FactKind
from cogito_lc.extraction.llm_extractor import ExtractionMethod, ExtractionResult, LlmExtractor

DECISION_TEXT = (
    "Chose monolithic architecture for the API service. Microservices would require "
    "separate deployments and inter-service networking that the team cannot operate at "
    "current headcount. All timestamps are stored in UTC."
)
KINDS = {kind.value for kind in FactKind}

ChatModelFactory = Callable[..., Any]


def assert_valid_facts(facts: list[Fact], max_facts: int) -> None:
    assert isinstance(facts, list)
    assert len(facts) <= max_facts
    for fact in facts:
        assert isinstance(fact, Fact)
        assert isinstance(fact.kind, FactKind)
        assert fact.content.strip()
        assert 0.0 <= fact.importance <= 1.0


def assert_structured_or_only_placeholders(
    result: ExtractionResult[list[Fact]], items: list[dict[str, Any]]
) -> None:
    """A schema-bound reply gives a Fact per item, less placeholders ("...") dropped.

    A tiny model often copies the prompt's example; a reply of placeholders only
    is a parse error, so that a store keeps the text itself.
    """
    placeholders = [item for item in items if not any(c.isalnum() for c in item["content"])]
    assert result.dropped == len(placeholders)
    assert len(result.value) == len(items) - len(placeholders)
    if items and not result.value:
        assert result.method is ExtractionMethod.PARSE_ERROR
    else:
        assert result.method is ExtractionMethod.STRUCTURED


@pytest.mark.requires_llm
def test_token_cap_is_honoured_by_the_server(llm_chat_model: ChatModelFactory) -> None:
    reply = llm_chat_model(max_tokens=12).invoke(
        "Write a very long story about a dragon who learns to program computers."
    )

    assert reply.usage_metadata is not None
    assert 0 < reply.usage_metadata["output_tokens"] <= 12


SAMPLES = [
    FactExtractionInput(text=DECISION_TEXT, context_hints=["project: stev API"], max_facts=3),
    FactExtractionInput(text=DECISION_TEXT, max_facts=3),
    FactExtractionInput(text="Deploys freeze on Fridays after 14:00 until May.", max_facts=2),
]


@pytest.mark.requires_llm
def test_json_schema_constrained_decoding_yields_parseable_facts(
    llm_chat_model: ChatModelFactory,
) -> None:
    extractor = FactExtractor.from_llm(
        llm_chat_model(max_tokens=512), structured_output="json_object"
    )

    results = [extractor.invoke_with_result(sample) for sample in SAMPLES]

    for sample, result in zip(SAMPLES, results, strict=True):
        assert result.raw is not None
        payload = json.loads(result.raw)
        assert set(payload) == {"items"}
        assert len(payload["items"]) <= sample.max_facts
        for item in payload["items"]:
            assert set(item) == {"content", "kind", "importance"}
            assert item["kind"] in KINDS
            assert isinstance(item["importance"], (int, float))
        assert_structured_or_only_placeholders(result, payload["items"])
        assert_valid_facts(result.value, sample.max_facts)


@pytest.mark.requires_llm
def test_default_mode_falls_back_to_text_when_the_server_rejects_json_schema(
    llm_chat_model: ChatModelFactory, caplog: pytest.LogCaptureFixture
) -> None:
    extractor = FactExtractor.from_llm(llm_chat_model(max_tokens=256))

    with caplog.at_level(logging.WARNING, logger="cogito_lc.extraction.llm_extractor"):
        result = extractor.invoke_with_result(FactExtractionInput(text=DECISION_TEXT, max_facts=4))

    assert result.method in {ExtractionMethod.TEXT, ExtractionMethod.PARSE_ERROR}
    assert any("rejected the output schema" in r.getMessage() for r in caplog.records)
    assert_valid_facts(result.value, 4)


@pytest.mark.requires_llm
async def test_concurrent_async_extractions(llm_chat_model: ChatModelFactory) -> None:
    extractor = FactExtractor.from_llm(
        llm_chat_model(max_tokens=384), structured_output="json_object"
    )
    inputs = [
        FactExtractionInput(text=DECISION_TEXT, max_facts=2),
        FactExtractionInput(text="Deploys freeze on Fridays after 14:00.", max_facts=2),
    ]

    results = await asyncio.gather(*(extractor.ainvoke_with_result(i) for i in inputs))

    for result in results:
        assert result.raw is not None
        assert_structured_or_only_placeholders(result, json.loads(result.raw)["items"])
        assert_valid_facts(result.value, 2)


class TicketSummary(BaseModel):
    title: str
    priority: int
    labels: list[str]


@pytest.mark.requires_llm
def test_llm_extractor_single_object_with_constrained_decoding(
    llm_chat_model: ChatModelFactory,
) -> None:
    extractor = LlmExtractor.from_llm(
        llm_chat_model(max_tokens=256),
        output=TicketSummary,
        prompt="Summarise this support ticket as JSON with title, priority (1-5) and "
        "labels:\n{text}",
        structured_output="json_object",
    )

    result = extractor.invoke_with_result(
        "The checkout page returns HTTP 500 for every customer since the 10:00 deploy."
    )

    assert result.method is ExtractionMethod.STRUCTURED
    assert isinstance(result.value, TicketSummary)
    assert all(isinstance(label, str) for label in result.value.labels)


def _unused_loopback_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_connection_refused_is_reported_or_raised() -> None:
    llm = ChatOpenAI(
        model="absent",
        base_url=f"http://127.0.0.1:{_unused_loopback_port()}/v1",
        api_key="unused",
        max_retries=0,
        timeout=10,
    )

    result = FactExtractor.from_llm(llm).invoke_with_result(DECISION_TEXT)

    assert result.value == []
    assert result.method is ExtractionMethod.ERROR
    with pytest.raises(openai.APIConnectionError):
        FactExtractor.builder(llm).raise_on_error().build().invoke(DECISION_TEXT)
