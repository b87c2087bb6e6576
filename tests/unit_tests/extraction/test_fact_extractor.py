from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import httpx
import pytest
from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import FakeListChatModel
from langchain_core.prompts import ChatPromptTemplate
from langchain_openai import ChatOpenAI
from pydantic import ValidationError

from cogito_lc.extraction.fact_extractor import (
    Fact,
    FactExtractionInput,
    FactExtractor,
    FactExtractorBuilder,
    FactKind,
    FactListOutputParser,
    render_context_section,
)
from cogito_lc.extraction.llm_extractor import ExtractionMethod
from cogito_lc.prompts import PromptRegistry, PromptVariablesError
from cogito_lc.prompts import registry as prompts
from tests.unit_tests.fakes import (
    AsyncOnlyChatModel,
    Gate,
    Recorder,
    ScriptedChatModel,
    offline_chat_openai,
)

# The default prompt as the specification gives it, except that the reply is the object
# the structured-output schema describes ({"items": [...]}) rather than a bare array.
SPEC_PROMPT = """\
You are extracting reusable memory facts from an AI agent's completed work.

{context_section}

Agent output:
---
{text}
---

Extract up to {max_facts} atomic facts that would be useful for future agents working
on similar tasks. Each fact must be:
- Self-contained (understandable without this output)
- Specific (not "used best practices" — name which ones)
- Actionable (tells a future agent something concrete)

Classify each fact as one of:
- "rule"        — a standing decision that must always be followed
- "preference"  — a softer guideline; follow unless there is a reason not to
- "context"     — situational information that informs decisions
- "decision"    — a past choice with rationale (informative, not prescriptive for future)
- "observation" — an ongoing state worth being aware of

Return a JSON object only, no prose, with the facts in its "items" array:
{"items": [
  { "content": "...", "kind": "rule|preference|context|decision|observation", \
"importance": 0.0–1.0 }
]}

If the output contains no useful facts, return an empty list: {"items": []}"""  # noqa: RUF001


def spec_prompt(text: str, max_facts: int, context_section: str | None) -> str:
    """The specified prompt; ``None`` removes the section together with its line."""
    prompt = SPEC_PROMPT.replace("{text}", text).replace("{max_facts}", str(max_facts))
    if context_section is None:
        return prompt.replace("{context_section}\n\n", "")
    return prompt.replace("{context_section}", context_section)


DECISION_TEXT = (
    "Chose monolithic architecture for the API service. Microservices would require "
    "separate deployments and inter-service networking that the team cannot operate at "
    "current headcount."
)


def facts_json(*facts: tuple[str, str, float]) -> str:
    return json.dumps(
        [{"content": content, "kind": kind, "importance": imp} for content, kind, imp in facts]
    )


def test_fact_kind_values_are_snake_case() -> None:
    assert [kind.value for kind in FactKind] == [
        "rule",
        "preference",
        "context",
        "decision",
        "observation",
    ]
    fact = Fact(content="Use UTC timestamps.", kind=FactKind.RULE, importance=0.9)
    assert fact.model_dump(mode="json") == {
        "content": "Use UTC timestamps.",
        "kind": "rule",
        "importance": 0.9,
    }


@pytest.mark.parametrize(("given", "clamped"), [(1.7, 1.0), (-0.3, 0.0), (0.42, 0.42), (1, 1.0)])
def test_importance_is_clamped(given: float, clamped: float) -> None:
    assert Fact(content="x", kind="context", importance=given).importance == clamped


def test_fact_validation() -> None:
    assert Fact(content="  padded  ", kind=" Decision ").content == "padded"
    assert Fact(content="x", kind="DECISION").kind is FactKind.DECISION
    assert Fact(content="x", kind="rule").importance == 0.5
    for bad in (
        {"content": "", "kind": "rule"},
        {"content": "   ", "kind": "rule"},
        {"kind": "rule"},
        {"content": "x", "kind": "guideline"},
        {"content": "x", "kind": "rule", "importance": float("nan")},
        {"content": "x", "kind": "rule", "importance": "very"},
    ):
        with pytest.raises(ValidationError):
            Fact.model_validate(bad)


def test_extraction_input_defaults_and_bounds() -> None:
    request = FactExtractionInput(text="t")

    assert (request.context_hints, request.max_facts) == ([], 7)
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        FactExtractionInput(text="t", max_facts=0)


def test_render_context_section() -> None:
    assert render_context_section([]) == ""
    assert render_context_section(["  ", ""]) == ""
    assert render_context_section(["project: stev API", " goal: billing v2 "]) == (
        "Context:\n- project: stev API\n- goal: billing v2\n\n"
    )


def test_extracts_a_rule_from_an_architectural_decision() -> None:
    reply = facts_json(
        ("The API service is a monolith; do not split it into microservices.", "rule", 0.9),
        ("Microservices need separate deployments the team cannot operate.", "context", 0.6),
    )
    llm = ScriptedChatModel(replies=[reply])

    facts = FactExtractor.from_llm(llm).invoke(DECISION_TEXT)

    rules = [fact for fact in facts if fact.kind is FactKind.RULE]
    assert len(rules) == 1
    assert "monolith" in rules[0].content
    assert all(isinstance(fact, Fact) for fact in facts)
    assert DECISION_TEXT in llm.prompt()


def test_empty_array_returns_no_facts() -> None:
    result = FactExtractor.from_llm(ScriptedChatModel(replies=["[]"])).invoke_with_result(
        DECISION_TEXT
    )

    assert result.value == []
    assert result.method is ExtractionMethod.TEXT


def test_malformed_json_returns_empty_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    raw = (
        '[{"content": "The API is a monolith because the team is small and deploys '
        'happen once a week from a single pipeline that nobody wants to split", '
        '"kind": "rule", importance: high}, {"content": "Timestamps are UTC", '
        '"kind": "rule", "importance": 0.5}]'
    )
    assert len(raw) > 200
    extractor = FactExtractor.from_llm(ScriptedChatModel(replies=[raw]))

    with caplog.at_level(logging.WARNING):
        result = extractor.invoke_with_result(DECISION_TEXT)

    assert result.value == []
    assert result.method is ExtractionMethod.PARSE_ERROR
    assert result.raw == raw
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.name for r in warnings] == ["cogito_lc.extraction.llm_extractor"]
    message = warnings[0].getMessage()
    assert "could not parse the model reply" in message
    assert repr(raw[:200]) in message
    assert raw[:201] not in message


def test_at_most_max_facts_are_returned() -> None:
    reply = facts_json(*[(f"Fact number {i}.", "observation", 0.5) for i in range(10)])
    llm = ScriptedChatModel(replies=[reply])

    facts = FactExtractor.from_llm(llm).invoke(FactExtractionInput(text="t", max_facts=3))

    assert [fact.content for fact in facts] == [
        "Fact number 0.",
        "Fact number 1.",
        "Fact number 2.",
    ]
    assert "Extract up to 3 atomic facts" in llm.prompt()


def test_max_facts_reaches_the_schema_in_structured_mode() -> None:
    reply = json.dumps({"items": json.loads(facts_json(("a", "rule", 1), ("b", "rule", 1)))})
    llm = ScriptedChatModel(replies=[reply])
    extractor = FactExtractor.from_llm(llm, structured_output="json_object")

    result = extractor.invoke_with_result({"text": "t", "max_facts": 1})

    assert result.method is ExtractionMethod.STRUCTURED
    assert [fact.content for fact in result.value] == ["a"]
    schema = llm.calls[0]["kwargs"]["response_format"]["schema"]
    array = schema["properties"]["items"]
    assert array["maxItems"] == 1
    assert array["items"]["properties"]["kind"]["enum"] == [kind.value for kind in FactKind]
    assert array["items"]["required"] == ["content", "kind", "importance"]


@pytest.mark.parametrize("max_facts", [0, -3])
def test_max_facts_below_one_is_a_value_error(max_facts: int) -> None:
    llm = ScriptedChatModel(replies=["[]"])
    extractor = FactExtractor.from_llm(llm)
    request = FactExtractionInput(text="t")

    with pytest.raises(ValueError, match="max_facts"):
        extractor.invoke({"text": "t", "max_facts": max_facts})
    with pytest.raises(ValueError, match="max_facts"):
        FactExtractionInput(text="t", max_facts=max_facts)
    with pytest.raises(ValueError, match="max_facts"):
        request.max_facts = max_facts
    assert llm.calls == []


def test_prompt_sent_to_the_model_is_the_specified_prompt() -> None:
    with_hints = ScriptedChatModel(replies=["[]"])
    without_hints = ScriptedChatModel(replies=["[]"])

    FactExtractor.from_llm(with_hints).invoke(
        FactExtractionInput(text=DECISION_TEXT, context_hints=["project: stev API", "goal: v2"])
    )
    FactExtractor.from_llm(without_hints).invoke(DECISION_TEXT)

    assert [m.type for m in with_hints.calls[0]["messages"]] == ["human"]
    assert with_hints.prompt() == spec_prompt(
        DECISION_TEXT, 7, "Context:\n- project: stev API\n- goal: v2"
    )
    assert without_hints.prompt() == spec_prompt(DECISION_TEXT, 7, None)


def test_multi_line_hints_stay_on_one_bullet() -> None:
    assert render_context_section(["project:\n  billing   API"]) == (
        "Context:\n- project: billing API\n\n"
    )


def test_context_hints_appear_in_the_prompt_sent_to_the_model() -> None:
    llm = ScriptedChatModel(replies=["[]"])
    hints = ["project: stev API", "goal: billing v2", "team: platform"]

    FactExtractor.from_llm(llm).invoke(FactExtractionInput(text=DECISION_TEXT, context_hints=hints))

    sent = llm.prompt()
    assert (
        "Context:\n- project: stev API\n- goal: billing v2\n- team: platform\n\nAgent output:"
        in (sent)
    )


def test_context_section_disappears_without_hints() -> None:
    llm = ScriptedChatModel(replies=["[]"])

    FactExtractor.from_llm(llm).invoke(DECISION_TEXT)

    sent = llm.prompt()
    assert "Context" not in sent
    assert "\n\n\n" not in sent
    assert "completed work.\n\nAgent output:\n---\n" in sent


def test_builder_prompt_override_reaches_the_model() -> None:
    llm = ScriptedChatModel(replies=["[]"])
    extractor = (
        FactExtractor.builder(llm)
        .prompt("Billing facts only (max {max_facts}):\n{context_section}{text}")
        .build()
    )

    extractor.invoke(FactExtractionInput(text="Invoices are monthly.", context_hints=["b"]))

    assert llm.prompt() == "Billing facts only (max 7):\nContext:\n- b\n\nInvoices are monthly."


def test_from_llm_prompt_override_may_use_only_text() -> None:
    llm = ScriptedChatModel(replies=["[]"])
    template = ChatPromptTemplate.from_messages(
        [("system", "You distil billing facts."), ("human", "{text}")]
    )

    FactExtractor.from_llm(llm, prompt=template).invoke("Invoices are monthly.")

    messages = llm.calls[0]["messages"]
    assert [(m.type, m.content) for m in messages] == [
        ("system", "You distil billing facts."),
        ("human", "Invoices are monthly."),
    ]


def test_override_without_text_fails_at_build() -> None:
    builder = FactExtractor.builder(ScriptedChatModel(replies=["[]"]))

    with pytest.raises(PromptVariablesError, match=r"missing \['text'\], unexpected \['body'\]"):
        builder.prompt("Facts in {body}").build()


def test_prompt_precedence_builder_over_registry_over_builtin() -> None:
    registry = PromptRegistry()
    builtin_llm = ScriptedChatModel(replies=["[]"])
    FactExtractor.builder(builtin_llm).registry(registry).build().invoke("t1")

    registry.register("fact_extraction", "Registered: {text}", replace=True)
    registered_llm = ScriptedChatModel(replies=["[]"])
    FactExtractor.builder(registered_llm).registry(registry).build().invoke("t2")

    explicit_llm = ScriptedChatModel(replies=["[]"])
    (
        FactExtractor.builder(explicit_llm)
        .registry(registry)
        .prompt("Explicit: {text}")
        .build()
        .invoke("t3")
    )

    assert builtin_llm.prompt().startswith("You are extracting reusable memory facts")
    assert registered_llm.prompt() == "Registered: t2"
    assert explicit_llm.prompt() == "Explicit: t3"


def test_default_registry_override_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = PromptRegistry()
    registry.register("fact_extraction", "Default registry: {text}", replace=True)
    monkeypatch.setattr(prompts, "_default", registry)
    llm = ScriptedChatModel(replies=["[]"])

    FactExtractor.from_llm(llm).invoke("t")
    FactExtractor.from_llm(llm, prompt="Mine: {text}").invoke("t")

    assert [llm.prompt(0), llm.prompt(1)] == ["Default registry: t", "Mine: t"]


def test_unknown_kinds_and_missing_content_are_dropped(caplog: pytest.LogCaptureFixture) -> None:
    reply = json.dumps(
        [
            {"content": "Deploys happen on Tuesdays.", "kind": "rule", "importance": 0.8},
            {"content": "Something vague.", "kind": "guideline", "importance": 0.5},
            {"kind": "context", "importance": 0.5},
            {"content": "", "kind": "context"},
            {"content": "Staging mirrors production.", "kind": "Observation", "importance": 3},
            {"content": "Prefer small PRs.", "kind": "preference", "importance": -1},
        ]
    )

    with caplog.at_level(logging.INFO, logger="cogito_lc.extraction.llm_extractor"):
        result = FactExtractor.from_llm(ScriptedChatModel(replies=[reply])).invoke_with_result("t")

    assert [(f.content, f.kind, f.importance) for f in result.value] == [
        ("Deploys happen on Tuesdays.", FactKind.RULE, 0.8),
        ("Staging mirrors production.", FactKind.OBSERVATION, 1.0),
        ("Prefer small PRs.", FactKind.PREFERENCE, 0.0),
    ]
    assert result.dropped == 3
    dropped_logs = [r for r in caplog.records if "dropped item" in r.getMessage()]
    assert len(dropped_logs) == 3


def test_a_repeated_fact_does_not_count_towards_max_facts() -> None:
    tokens = ("Tokens expire after 3600 s.", "rule", 0.9)
    reply = facts_json(tokens, tokens, tokens, ("Deploys freeze on Fridays.", "rule", 0.8))
    extractor = FactExtractor.from_llm(ScriptedChatModel(replies=[reply]))

    facts = extractor.invoke(FactExtractionInput(text="t", max_facts=2))

    assert [fact.content for fact in facts] == [tokens[0], "Deploys freeze on Fridays."]
    parsed = FactListOutputParser(max_facts=2).parse(reply)
    assert [fact.content for fact in parsed] == [tokens[0], "Deploys freeze on Fridays."]


def test_a_fact_repeated_with_another_kind_is_kept() -> None:
    reply = facts_json(
        ("Deploys freeze on Fridays.", "rule", 0.8), ("Deploys freeze on Fridays.", "decision", 0.8)
    )
    facts = FactExtractor.from_llm(ScriptedChatModel(replies=[reply])).invoke("t")
    assert [fact.kind.value for fact in facts] == ["rule", "decision"]


def test_dropped_entries_do_not_count_towards_max_facts() -> None:
    reply = json.dumps(
        [
            {"content": "", "kind": "rule"},
            {"content": "a", "kind": "rule"},
            {"content": "b", "kind": "bogus"},
            {"content": "c", "kind": "context"},
            {"content": "d", "kind": "context"},
        ]
    )
    extractor = FactExtractor.from_llm(ScriptedChatModel(replies=[reply]))

    facts = extractor.invoke(FactExtractionInput(text="t", max_facts=2))

    assert [fact.content for fact in facts] == ["a", "c"]


@pytest.mark.parametrize(
    "wrap",
    [
        lambda body: f"```json\n{body}\n```",
        lambda body: f"<think>The user wants facts. Maybe [1]?</think>\n{body}",
        lambda body: f"Here are the facts you asked for:\n\n{body}\n\nHope this helps!",
        lambda body: f"<think>ok</think>Sure.\n```\n{body[:-1]},]\n```\nDone.",
    ],
    ids=["fence", "think", "prose", "all-with-trailing-comma"],
)
def test_fences_think_blocks_and_prose_around_the_json(wrap: Any) -> None:
    body = facts_json(("The API is a monolith.", "decision", 0.7))

    facts = FactExtractor.from_llm(ScriptedChatModel(replies=[wrap(body)])).invoke("t")

    assert facts == [Fact(content="The API is a monolith.", kind="decision", importance=0.7)]


def test_transport_error_without_raise_on_error_returns_empty(
    caplog: pytest.LogCaptureFixture,
) -> None:
    llm = ScriptedChatModel(replies=[ConnectionRefusedError("[Errno 111] Connection refused")])

    with caplog.at_level(logging.WARNING, logger="cogito_lc.extraction.llm_extractor"):
        result = FactExtractor.from_llm(llm).invoke_with_result(DECISION_TEXT)

    assert result.value == []
    assert result.method is ExtractionMethod.ERROR
    assert any("Connection refused" in r.getMessage() for r in caplog.records)


def test_transport_error_with_raise_on_error_raises() -> None:
    llm = ScriptedChatModel(replies=[TimeoutError("read timed out")])
    extractor = FactExtractor.builder(llm).raise_on_error().build()

    with pytest.raises(TimeoutError, match="read timed out"):
        extractor.invoke(DECISION_TEXT)


@pytest.mark.parametrize("text", ["", "   ", "\n\t "])
def test_blank_text_returns_empty_without_calling_the_model(text: str) -> None:
    llm = ScriptedChatModel(replies=[facts_json(("x", "rule", 1.0))])

    result = FactExtractor.from_llm(llm).invoke_with_result(text)

    assert result.value == []
    assert result.method is ExtractionMethod.SKIPPED
    assert llm.calls == []


def test_plain_string_and_model_input_are_equivalent() -> None:
    reply = facts_json(("Tokens expire after 3600 seconds.", "context", 0.6))
    extractor = FactExtractor.from_llm(FakeListChatModel(responses=[reply]))

    assert extractor.invoke("auth notes") == extractor.invoke(
        FactExtractionInput(text="auth notes")
    )


def test_rejects_unsupported_input_type() -> None:
    with pytest.raises(TypeError, match="FactExtractionInput"):
        FactExtractor.from_llm(ScriptedChatModel(replies=["[]"])).invoke(3)  # type: ignore[arg-type]


async def test_async_invoke_and_batch() -> None:
    reply = facts_json(("Use Postgres 16.", "decision", 0.5))
    llm = ScriptedChatModel(replies=[reply])
    extractor = FactExtractor.from_llm(llm)

    single = await extractor.ainvoke(FactExtractionInput(text="db notes", context_hints=["h"]))
    many = await extractor.abatch(["a", "b"])
    skipped = await extractor.ainvoke_with_result(" ")

    assert single == [Fact(content="Use Postgres 16.", kind="decision", importance=0.5)]
    assert many == [single, single]
    assert skipped.method is ExtractionMethod.SKIPPED
    assert len(llm.calls) == 3
    assert "Context:\n- h\n\n" in llm.prompt(0)


async def test_async_path_awaits_the_model_without_blocking_the_loop() -> None:
    llm = AsyncOnlyChatModel(reply=facts_json(("Use Postgres 16.", "decision", 0.5)))
    extractor = FactExtractor.from_llm(llm)

    results = await asyncio.wait_for(
        asyncio.gather(*(extractor.ainvoke(f"notes {i}") for i in range(4))), timeout=30
    )

    assert [len(facts) for facts in results] == [1, 1, 1, 1]
    assert llm.most_in_flight == 4


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
async def test_model_call_is_nested_under_the_extractor_run(use_async: bool) -> None:
    recorder = Recorder()
    extractor = FactExtractor.from_llm(ScriptedChatModel(replies=[facts_json(("a", "rule", 1.0))]))
    config: Any = {"callbacks": [recorder]}

    if use_async:
        result = await extractor.ainvoke_with_result("notes", config)
    else:
        result = extractor.invoke_with_result("notes", config)

    assert result.method is ExtractionMethod.TEXT
    assert recorder.lineage("chat_model") == ["chat_model", "LlmExtractor", "FactExtractor"]
    assert [(name, data["method"], data["count"]) for name, data, _ in recorder.events] == [
        ("cogito_lc.extraction", "text", 1)
    ]


def test_skipped_run_is_traced_and_reported() -> None:
    recorder = Recorder()

    FactExtractor.from_llm(ScriptedChatModel(replies=["[]"])).invoke(
        "  ", {"callbacks": [recorder]}
    )

    assert recorder.names() == ["FactExtractor"]
    assert [(data["name"], data["method"]) for _, data, _ in recorder.events] == [
        ("FactExtractor", "skipped")
    ]


def test_sync_batch_keeps_input_order() -> None:
    extractor = FactExtractor.from_llm(
        FakeListChatModel(responses=[facts_json(("one", "rule", 1.0))])
    )

    results = extractor.batch(["a", " ", "c"])

    assert [[fact.content for fact in facts] for facts in results] == [["one"], [], ["one"]]


def test_model_sets_the_model_name_on_the_chat_model() -> None:
    llm = offline_chat_openai(model="base")

    extractor = FactExtractor.builder(llm).model("qwen2.5:3b").build()

    assert isinstance(extractor.extractor.llm, ChatOpenAI)
    assert extractor.extractor.llm.model_name == "qwen2.5:3b"
    assert llm.model_name == "base"


def test_builder_prompt_template_and_model_reach_the_server() -> None:
    bodies: list[dict[str, Any]] = []
    items = json.loads(facts_json(("Invoices are monthly.", "rule", 0.7)))

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        completion = {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": json.dumps({"items": items})},
                    "finish_reason": "stop",
                }
            ],
        }
        return httpx.Response(200, json=completion)

    llm = offline_chat_openai(handler, model="base", base_url="http://llm.invalid/v1")
    extractor = (
        FactExtractor.builder(llm)
        .prompt("Billing facts (max {max_facts}) in: {text}")
        .model("billing-model")
        .build()
    )

    result = extractor.invoke_with_result(FactExtractionInput(text="Invoices go out monthly."))

    assert result.method is ExtractionMethod.STRUCTURED
    assert result.value == [Fact(content="Invoices are monthly.", kind="rule", importance=0.7)]
    (body,) = bodies
    assert body["model"] == "billing-model"
    assert body["messages"] == [
        {"role": "user", "content": "Billing facts (max 7) in: Invoices go out monthly."}
    ]
    assert body["response_format"]["type"] == "json_schema"


def test_model_on_a_chat_model_without_model_field_is_an_error() -> None:
    with pytest.raises(ValueError, match="no 'model' or 'model_name' field"):
        FactExtractor.builder(ScriptedChatModel(replies=["[]"])).model("x").build()


def test_builder_type_and_prompt_property() -> None:
    builder = FactExtractor.builder(ScriptedChatModel(replies=["[]"]))

    assert isinstance(builder, FactExtractorBuilder)
    extractor = builder.structured_output("none").build()
    assert extractor.prompt.metadata == {"prompt_name": "fact_extraction", "prompt_version": "2"}
    assert extractor.extractor.resolved_structured_output() == "none"


INVALID_ONLY_REPLIES = [
    '[{"content": "X happened.", "kind": "fact"}]',
    "[1, 2, 3]",
    '["a plain string"]',
    '{"items": [{"kind": "rule"}]}',
]


@pytest.mark.parametrize("reply", INVALID_ONLY_REPLIES)
def test_a_reply_whose_items_are_all_dropped_is_a_parse_error(reply: str) -> None:
    result = FactExtractor.from_llm(FakeListChatModel(responses=[reply])).invoke_with_result(
        DECISION_TEXT
    )

    assert result.value == []
    assert result.method is ExtractionMethod.PARSE_ERROR
    assert result.dropped >= 1
    assert "valid Fact" in (result.error or "")


FRIDAY_RULE = '{"content": "Deploys freeze on Fridays.", "kind": "rule", "importance": 0.9}'


@pytest.mark.parametrize(
    ("reply", "facts"),
    [
        pytest.param("[" * 5000 + "]" * 5000, 0, id="nested past the recursion limit"),
        pytest.param('{"items": ' + "[" * 5000, 0, id="nested and cut off"),
        pytest.param(
            f'{{"items": [{FRIDAY_RULE}, {{"content": "b", "importance": {"9" * 5000}',
            1,
            id="cut off in an integer too long to convert",
        ),
    ],
)
async def test_a_runaway_reply_is_salvaged_or_a_parse_error_never_an_exception(
    reply: str, facts: int
) -> None:
    extractor = FactExtractor.from_llm(FakeListChatModel(responses=[reply]))
    friday = Fact(content="Deploys freeze on Fridays.", kind="rule", importance=0.9)
    expected = ([friday], ExtractionMethod.TEXT) if facts else ([], ExtractionMethod.PARSE_ERROR)

    for result in (
        extractor.invoke_with_result(DECISION_TEXT),
        await extractor.ainvoke_with_result(DECISION_TEXT),
    ):
        assert (result.value, result.method) == expected
    if facts:
        assert FactListOutputParser().parse(reply) == [friday]
    else:
        with pytest.raises(OutputParserException):
            FactListOutputParser().parse(reply)


MARKUP_FACTS = [
    "Qwen3 wraps its reasoning in <think>...</think> tags; strip them before parsing.",
    "The parser must drop everything before </think> in replies.",
    "An empty answer is written ```[]``` in the docs.",
]


@pytest.mark.parametrize("wrapped", [False, True], ids=["array", "items object"])
def test_markup_inside_a_fact_is_kept_verbatim(wrapped: bool) -> None:
    items = [{"content": text, "kind": "rule", "importance": 0.9} for text in MARKUP_FACTS]
    reply = json.dumps({"items": items} if wrapped else items)

    result = FactExtractor.from_llm(FakeListChatModel(responses=[reply])).invoke_with_result(
        DECISION_TEXT
    )

    assert result.method is ExtractionMethod.TEXT
    assert [fact.content for fact in result.value] == MARKUP_FACTS
    assert [fact.content for fact in FactListOutputParser().parse(reply)] == MARKUP_FACTS


@pytest.mark.parametrize("reply", ["[]", '{"items": []}'])
def test_an_explicit_empty_answer_is_not_a_parse_error(reply: str) -> None:
    result = FactExtractor.from_llm(FakeListChatModel(responses=[reply])).invoke_with_result(
        DECISION_TEXT
    )

    assert (result.value, result.method, result.dropped) == ([], ExtractionMethod.TEXT, 0)


@pytest.mark.parametrize(
    "error", [RuntimeError("CUDA out of memory"), ValueError("unexpected reply"), KeyError("x")]
)
async def test_any_model_failure_returns_empty_with_a_warning(
    error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    extractor = FactExtractor.from_llm(ScriptedChatModel(replies=[error]))

    with caplog.at_level(logging.WARNING, logger="cogito_lc.extraction.llm_extractor"):
        result = extractor.invoke_with_result(DECISION_TEXT)
        async_result = await extractor.ainvoke_with_result(DECISION_TEXT)
        facts = extractor.invoke(DECISION_TEXT)

    assert facts == []
    for outcome in (result, async_result):
        assert outcome.value == []
        assert outcome.method is ExtractionMethod.ERROR
        assert type(error).__name__ in (outcome.error or "")
    assert sum("model call failed" in r.getMessage() for r in caplog.records) == 3


@pytest.mark.parametrize("error", [RuntimeError("CUDA out of memory"), ValueError("bad")])
def test_any_model_failure_raises_with_raise_on_error(error: Exception) -> None:
    extractor = FactExtractor.from_llm(ScriptedChatModel(replies=[error]), raise_on_error=True)

    with pytest.raises(type(error)) as excinfo:
        extractor.invoke(DECISION_TEXT)
    assert excinfo.value is error


def test_fact_list_output_parser_composes_with_a_prompt_and_a_model() -> None:
    reply = (
        '<think>two facts</think>```json\n{"items": [{"content": "Deploys freeze on Fridays.", '
        '"kind": "rule", "importance": 0.9}, {"content": "", "kind": "rule"},]}\n```'
    )
    chain = (
        ChatPromptTemplate.from_template("Facts in {text}")
        | FakeListChatModel(responses=[reply])
        | FactListOutputParser()
    )

    assert chain.invoke({"text": "No deploys on Fridays."}) == [
        Fact(content="Deploys freeze on Fridays.", kind="rule", importance=0.9)
    ]
    assert chain.get_output_jsonschema()["items"] == {"$ref": "#/$defs/Fact"}


def test_fact_list_output_parser_accepts_a_bare_array_and_caps_the_count() -> None:
    parser = FactListOutputParser(max_facts=1)

    assert parser.parse(facts_json(("A.", "rule", 0.5), ("B.", "context", 0.5))) == [
        Fact(content="A.", kind="rule", importance=0.5)
    ]
    assert parser.parse("[]") == []
    assert '"items"' in parser.get_format_instructions()


@pytest.mark.parametrize("reply", ["no json here", *INVALID_ONLY_REPLIES])
def test_fact_list_output_parser_raises_output_parser_exception(reply: str) -> None:
    with pytest.raises(OutputParserException):
        FactListOutputParser().parse(reply)


def test_prompt_template_is_a_deprecated_alias_of_prompt() -> None:
    llm = ScriptedChatModel(replies=["[]"])

    with pytest.warns(DeprecationWarning, match=r"prompt_template\(\) is deprecated"):
        builder = FactExtractor.builder(llm).prompt_template("Old verb: {text}")
    builder.build().invoke("t")

    assert llm.prompt() == "Old verb: t"


def test_a_null_importance_is_the_default_not_a_dropped_fact() -> None:
    reply = '[{"content": "Deploys freeze on Fridays.", "kind": "rule", "importance": null}]'

    result = FactExtractor.from_llm(FakeListChatModel(responses=[reply])).invoke_with_result(
        DECISION_TEXT
    )

    assert result.value == [Fact(content="Deploys freeze on Fridays.", kind="rule", importance=0.5)]
    assert (result.method, result.dropped) == (ExtractionMethod.TEXT, 0)


async def test_keyword_options_are_refused_not_ignored() -> None:
    extractor = FactExtractor.from_llm(FakeListChatModel(responses=["[]"]))

    with pytest.raises(TypeError, match=r"\['max_facts'\].*in the input"):
        extractor.invoke(DECISION_TEXT, max_facts=1)
    with pytest.raises(TypeError, match="mxa_facts"):
        await extractor.ainvoke(DECISION_TEXT, mxa_facts=1)
    assert extractor.invoke({"text": DECISION_TEXT, "max_facts": 1}) == []


@pytest.mark.parametrize("content", ["...", "…", " - ", "?!"])
def test_a_placeholder_fact_is_dropped_so_the_text_is_not_lost(content: str) -> None:
    reply = json.dumps({"items": [{"content": content, "kind": "rule", "importance": 0.0}]})

    result = FactExtractor.from_llm(FakeListChatModel(responses=[reply])).invoke_with_result(
        DECISION_TEXT
    )

    assert result.value == []
    assert result.method is ExtractionMethod.PARSE_ERROR


BRACKETS_IN_PROSE = [
    'Importance is on a [0, 1] scale. Facts:\n{"items": [%s]}',
    "Per the output [1], the facts are:\n[%s]",
    "Kinds [rule, decision] apply. [%s]",
]


@pytest.mark.parametrize("template", BRACKETS_IN_PROSE)
def test_brackets_in_prose_before_the_facts_are_not_taken_for_them(template: str) -> None:
    fact = {"content": "Deploys freeze on Fridays.", "kind": "rule", "importance": 0.9}
    reply = template % json.dumps(fact)

    result = FactExtractor.from_llm(FakeListChatModel(responses=[reply])).invoke_with_result(
        DECISION_TEXT
    )

    assert result.method is ExtractionMethod.TEXT
    assert [fact.content for fact in result.value] == ["Deploys freeze on Fridays."]


def test_a_misspelt_key_of_a_dict_input_is_refused_with_the_closest_name() -> None:
    extractor = FactExtractor.from_llm(FakeListChatModel(responses=["[]"]))

    with pytest.raises(ValueError, match=r"'max_fact'.*did you mean 'max_facts'"):
        extractor.invoke({"text": DECISION_TEXT, "max_fact": 2})


def test_timeout_ends_a_slow_extraction_as_error() -> None:
    gate = Gate(reply='{"items": []}')
    built = FactExtractor.builder(ScriptedChatModel(replies=[gate])).timeout(0.05).build()
    for extractor in (
        FactExtractor.from_llm(ScriptedChatModel(replies=[gate]), timeout=0.05),
        built,
    ):
        result = extractor.invoke_with_result("We chose PostgreSQL 16 for billing.")

        assert result.method is ExtractionMethod.ERROR
        assert result.value == []
        assert result.error == "DeadlineExceededError: no result within 0.05 s"
    gate.release.set()
