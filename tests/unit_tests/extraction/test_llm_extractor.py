from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.language_models import BaseChatModel, FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables.retry import RunnableRetry
from langchain_ollama import ChatOllama
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field

from cogito_lc._core.json_repair import (
    JsonExtractionError,
    TruncatedJsonError,
    extract_json,
    extract_json_list,
    remove_trailing_commas,
    salvage_json_array,
    strip_reasoning,
)
from cogito_lc._core.structured_output import attempts
from cogito_lc.extraction.llm_extractor import (
    EXTRACTION_EVENT,
    ExtractionMethod,
    LlmExtractor,
    detect_structured_output_mode,
    is_schema_rejection,
    is_timeout_error,
    is_transport_error,
    reply_text,
    request_schema,
    structured_output_kwargs,
    with_model_name,
)
from cogito_lc.prompts import PromptRegistry
from tests.unit_tests.fakes import (
    BarrierChatModel,
    Gate,
    GateChatModel,
    Recorder,
    ScriptedChatModel,
    StatusError,
    offline_chat_openai,
)


class Person(BaseModel):
    name: str = Field(min_length=1)
    age: int


class Team(BaseModel):
    lead: Person
    members: list[Person]


def people_extractor(llm: BaseChatModel, **kwargs: Any) -> LlmExtractor[Person]:
    return LlmExtractor.from_llm(
        llm, output=Person, prompt="List the people in: {text}", many=True, **kwargs
    )


def sent_prompt(llm: ScriptedChatModel, call: int = 0) -> str:
    return "\n".join(str(m.content) for m in llm.calls[call]["messages"])


PEOPLE = [{"name": "Ada", "age": 36}, {"name": "Charles", "age": 79}]


def test_single_object_from_string_input() -> None:
    llm = ScriptedChatModel(replies=['{"name": "Ada", "age": 36}'])
    extractor = LlmExtractor.from_llm(llm, output=Person, prompt="Who is in {text}?")

    result = extractor.invoke_with_result("a note about Ada")

    assert result.value == Person(name="Ada", age=36)
    assert result.method is ExtractionMethod.TEXT
    assert result.raw == '{"name": "Ada", "age": 36}'
    assert sent_prompt(llm) == "Who is in a note about Ada?"


def test_dict_input_fills_several_variables() -> None:
    llm = ScriptedChatModel(replies=[json.dumps(PEOPLE)])
    extractor = LlmExtractor.from_llm(
        llm, output=Person, prompt="{instruction}\n\n{text}", many=True
    )

    people = extractor.invoke({"instruction": "Find people.", "text": "Ada met Charles."})

    assert [person.name for person in people] == ["Ada", "Charles"]
    assert sent_prompt(llm) == "Find people.\n\nAda met Charles."


@pytest.mark.parametrize(
    ("prompt", "input_key", "unfilled"),
    [
        ("{text} / {extra}", None, "['extra']"),
        ("Who in {doc} ({lang})?", None, "['doc', 'lang']"),
        ("Who in {doc} ({lang})?", "doc", "['lang']"),
    ],
)
def test_a_string_for_a_prompt_of_several_variables_is_refused_before_the_call(
    prompt: str, input_key: str | None, unfilled: str
) -> None:
    llm = FakeListChatModel(responses=['{"name": "Ada", "age": 36}'])
    extractor = LlmExtractor.from_llm(llm, output=Person, prompt=prompt, input_key=input_key)

    with pytest.raises(ValueError, match=r"input_key") as raised:
        extractor.invoke("Ada wrote the notes.")
    with pytest.raises(ValueError, match=r"input_key"):
        asyncio.run(extractor.ainvoke("Ada wrote the notes."))

    message = str(raised.value)
    assert f"leaving {unfilled} unfilled" in message
    assert "Pass a dict" in message
    assert llm.i == 0  # the model was not called


def test_an_input_key_that_is_not_the_prompts_variable_is_refused() -> None:
    llm = FakeListChatModel(responses=['{"name": "Ada", "age": 36}'])
    extractor = LlmExtractor.from_llm(
        llm, output=Person, prompt="Who is in {doc}?", input_key="text"
    )

    with pytest.raises(ValueError, match=r"input_key is 'text'.*set input_key='doc'"):
        extractor.invoke("Ada wrote the notes.")
    assert extractor.invoke({"doc": "Ada wrote the notes."}) == Person(name="Ada", age=36)


def test_rejects_unsupported_input_type() -> None:
    extractor = people_extractor(ScriptedChatModel(replies=["[]"]))

    with pytest.raises(TypeError, match="string or a dict"):
        extractor.invoke(42)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "reply",
    [
        json.dumps(PEOPLE),
        "```json\n" + json.dumps(PEOPLE) + "\n```",
        "<think>Two people, Ada and Charles. [maybe more?]</think>\n" + json.dumps(PEOPLE),
        "Sure! Here are the people:\n" + json.dumps(PEOPLE) + "\nLet me know if you need more.",
        '[{"name": "Ada", "age": 36,}, {"name": "Charles", "age": 79},]',
        '{"items": ' + json.dumps(PEOPLE) + "}",
        "<think>\nplan\n</think>\n\nText first.\n```\n" + json.dumps(PEOPLE, indent=2) + "\n```",
    ],
    ids=["bare", "fence", "think", "prose", "trailing-commas", "wrapped", "everything"],
)
def test_messy_list_replies_are_parsed(reply: str) -> None:
    result = people_extractor(ScriptedChatModel(replies=[reply])).invoke_with_result("x")

    assert result.value == [Person(**person) for person in PEOPLE]
    assert result.method is ExtractionMethod.TEXT


def test_single_object_where_list_was_asked() -> None:
    reply = 'Found one: {"name": "Ada", "age": 36}'

    assert people_extractor(ScriptedChatModel(replies=[reply])).invoke("x") == [
        Person(name="Ada", age=36)
    ]


def test_nested_models_are_validated() -> None:
    reply = json.dumps({"lead": PEOPLE[0], "members": PEOPLE})
    extractor = LlmExtractor.from_llm(
        ScriptedChatModel(replies=[reply]), output=Team, prompt="{text}"
    )

    team = extractor.invoke("x")

    assert isinstance(team, Team)
    assert team.members[1].name == "Charles"


def test_invalid_items_are_dropped_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    reply = json.dumps([PEOPLE[0], {"name": "", "age": 3}, {"age": 5}, "Bob", PEOPLE[1]])

    with caplog.at_level(logging.INFO, logger="cogito_lc.extraction.llm_extractor"):
        result = people_extractor(ScriptedChatModel(replies=[reply])).invoke_with_result("x")

    assert [person.name for person in result.value] == ["Ada", "Charles"]
    assert result.dropped == 3
    assert any("dropped 3 of 5 items" in record.getMessage() for record in caplog.records)


def test_malformed_reply_returns_empty_and_warns_with_raw_preview(
    caplog: pytest.LogCaptureFixture,
) -> None:
    raw = "I could not find any people, sorry. " + "x" * 300 + " {broken"
    llm = ScriptedChatModel(replies=[raw])

    with caplog.at_level(logging.WARNING, logger="cogito_lc.extraction.llm_extractor"):
        result = people_extractor(llm).invoke_with_result("x")

    assert result.value == []
    assert result.method is ExtractionMethod.PARSE_ERROR
    assert result.raw == raw
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    message = warnings[0].getMessage()
    assert repr(raw[:200]) in message
    assert raw[:201] not in message


def test_malformed_single_object_returns_none() -> None:
    extractor = LlmExtractor.from_llm(
        ScriptedChatModel(replies=['{"name": "Ada"}']), output=Person, prompt="{text}"
    )

    result = extractor.invoke_with_result("x")

    assert result.value is None
    assert result.method is ExtractionMethod.PARSE_ERROR


def test_reply_cut_off_mid_list_keeps_complete_items(caplog: pytest.LogCaptureFixture) -> None:
    reply = '{"items": [{"name": "Ada", "age": 36}, {"name": "Charles", "age": 79}, {"name": "Bo'

    with caplog.at_level(logging.WARNING, logger="cogito_lc.extraction.llm_extractor"):
        result = people_extractor(ScriptedChatModel(replies=[reply])).invoke_with_result("x")

    assert [person.name for person in result.value] == ["Ada", "Charles"]
    assert result.method is ExtractionMethod.TEXT
    assert any("cut off" in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize(
    ("reply", "warned"),
    [(json.dumps(PEOPLE), True), (json.dumps(PEOPLE[:1]), False), (json.dumps(PEOPLE[0]), False)],
    ids=["several", "one in a list", "object"],
)
def test_a_list_for_a_single_object_keeps_the_first_and_warns(
    reply: str, warned: bool, caplog: pytest.LogCaptureFixture
) -> None:
    extractor = LlmExtractor.from_llm(
        FakeListChatModel(responses=[reply]), output=Person, prompt="Who is in: {text}"
    )

    with caplog.at_level(logging.WARNING, logger="cogito_lc.extraction.llm_extractor"):
        result = extractor.invoke_with_result("Ada met Charles.")

    assert result.value == Person(**PEOPLE[0])
    assert result.method is ExtractionMethod.TEXT
    hints = [r.getMessage() for r in caplog.records if "many=True" in r.getMessage()]
    assert len(hints) == int(warned)
    if warned:
        assert "list of 2 Person objects" in hints[0]


def test_max_items_truncates_and_reaches_the_schema() -> None:
    reply = json.dumps([{"name": f"P{i}", "age": i} for i in range(10)])
    llm = ScriptedChatModel(replies=[reply])
    extractor = people_extractor(llm, structured_output="json_object")

    result = extractor.invoke_with_result("x", max_items=3)

    assert [person.name for person in result.value] == ["P0", "P1", "P2"]
    assert result.method is ExtractionMethod.STRUCTURED
    response_format = llm.calls[0]["kwargs"]["response_format"]
    assert response_format["type"] == "json_object"
    assert response_format["schema"]["properties"]["items"]["maxItems"] == 3


@pytest.mark.parametrize(
    ("mode", "key"),
    [("json_object", "response_format"), ("json_schema", "response_format"), ("format", "format")],
)
def test_structured_modes_send_the_schema(mode: str, key: str) -> None:
    llm = ScriptedChatModel(replies=[json.dumps({"items": PEOPLE})])

    result = people_extractor(llm, structured_output=mode).invoke_with_result("x")

    assert result.method is ExtractionMethod.STRUCTURED
    assert len(result.value) == 2
    sent = llm.calls[0]["kwargs"][key]
    schema = {
        "json_object": lambda: sent["schema"],
        "json_schema": lambda: sent["json_schema"]["schema"],
        "format": lambda: sent,
    }[mode]()
    assert schema == request_schema(Person, many=True)


def test_text_mode_sends_no_schema() -> None:
    llm = ScriptedChatModel(replies=["[]"])

    result = people_extractor(llm, structured_output="none").invoke_with_result("x")

    assert result.method is ExtractionMethod.TEXT
    assert llm.calls[0]["kwargs"] == {}


def test_request_schema_is_closed_and_inlined() -> None:
    schema = request_schema(Team, many=True, max_items=4)
    text = json.dumps(schema)

    assert "$ref" not in text
    assert "$defs" not in text
    assert '"title"' not in text
    array = schema["properties"]["items"]
    assert array["maxItems"] == 4
    team = array["items"]
    assert team["additionalProperties"] is False
    assert team["required"] == ["lead", "members"]
    assert team["properties"]["lead"]["required"] == ["name", "age"]
    assert team["properties"]["members"]["items"]["additionalProperties"] is False


def test_request_schema_for_single_object_is_the_model() -> None:
    schema = request_schema(Person, many=False)

    assert schema["type"] == "object"
    assert set(schema["properties"]) == {"name", "age"}


@pytest.mark.parametrize("status", [400, 422])
def test_rejected_schema_is_retried_as_text(status: int, caplog: pytest.LogCaptureFixture) -> None:
    llm = ScriptedChatModel(replies=[StatusError(status), json.dumps(PEOPLE)])

    with caplog.at_level(logging.WARNING, logger="cogito_lc.extraction.llm_extractor"):
        result = people_extractor(llm, structured_output="json_schema").invoke_with_result("x")

    assert result.method is ExtractionMethod.TEXT
    assert len(result.value) == 2
    assert "response_format" in llm.calls[0]["kwargs"]
    assert llm.calls[1]["kwargs"] == {}
    assert any("rejected the output schema" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    "error",
    [
        ConnectionRefusedError("connection refused"),
        TimeoutError("timed out"),
        StatusError(503),
        StatusError(429),
    ],
    ids=["refused", "timeout", "5xx", "429"],
)
def test_transport_error_returns_empty_by_default(
    error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    llm = ScriptedChatModel(replies=[error])

    with caplog.at_level(logging.WARNING, logger="cogito_lc.extraction.llm_extractor"):
        result = people_extractor(llm).invoke_with_result("x")

    assert result.value == []
    assert result.method is ExtractionMethod.ERROR
    assert result.raw is None
    assert type(error).__name__ in (result.error or "")
    assert any("model call failed" in r.getMessage() for r in caplog.records)


def test_transport_error_raises_with_raise_on_error() -> None:
    error = ConnectionRefusedError("connection refused")
    extractor = people_extractor(ScriptedChatModel(replies=[error]), raise_on_error=True)

    with pytest.raises(ConnectionRefusedError) as excinfo:
        extractor.invoke("x")
    assert excinfo.value is error


@pytest.mark.parametrize("mode", ["none", "json_object"])
@pytest.mark.parametrize(
    "error", [StatusError(401), RuntimeError("model crashed"), ValueError("bad reply")]
)
async def test_any_model_failure_gives_error_and_a_warning(
    mode: str, error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    llm = ScriptedChatModel(replies=[error])
    extractor = people_extractor(llm, structured_output=mode)

    with caplog.at_level(logging.WARNING, logger="cogito_lc.extraction.llm_extractor"):
        result = extractor.invoke_with_result("x")
        async_result = await extractor.ainvoke_with_result("x")

    for outcome in (result, async_result):
        assert outcome.value == []
        assert outcome.method is ExtractionMethod.ERROR
        assert type(error).__name__ in (outcome.error or "")
    assert len(llm.calls) == 2
    assert sum("model call failed" in r.getMessage() for r in caplog.records) == 2


@pytest.mark.parametrize(
    "error", [StatusError(401), RuntimeError("model crashed"), ValueError("bad reply")]
)
def test_any_model_failure_raises_with_raise_on_error(error: Exception) -> None:
    llm = ScriptedChatModel(replies=[error])
    extractor = people_extractor(llm, structured_output="none", raise_on_error=True)

    with pytest.raises(type(error)) as excinfo:
        extractor.invoke("x")
    assert excinfo.value is error


def test_a_server_error_is_not_retried_without_the_schema() -> None:
    llm = ScriptedChatModel(replies=[StatusError(503)])

    result = people_extractor(llm, structured_output="json_object").invoke_with_result("x")

    assert result.method is ExtractionMethod.ERROR
    assert [bool(call["kwargs"]) for call in llm.calls] == [True]


def test_transport_error_on_single_output_returns_none() -> None:
    extractor = LlmExtractor.from_llm(
        ScriptedChatModel(replies=[TimeoutError()]), output=Person, prompt="{text}"
    )

    assert extractor.invoke("x") is None


class _WrappedError(Exception):
    pass


def _wrapped(cause: BaseException) -> Exception:
    wrapped = _WrappedError("client failure")
    wrapped.__cause__ = cause
    return wrapped


def test_is_transport_error_classification() -> None:
    assert is_transport_error(ConnectionRefusedError())
    assert is_transport_error(TimeoutError())
    assert is_transport_error(StatusError(500))
    assert is_transport_error(StatusError(408))
    assert is_transport_error(_wrapped(ConnectionResetError()))
    assert is_transport_error(httpx.ConnectError("refused"))
    assert is_transport_error(httpx.ReadTimeout("slow"))
    assert not is_transport_error(ValueError("bug"))
    assert not is_transport_error(StatusError(400))
    assert not is_transport_error(StatusError(401))
    assert not is_transport_error(_wrapped(KeyError("x")))


def test_is_timeout_error_classification() -> None:
    assert is_timeout_error(TimeoutError())
    assert is_timeout_error(httpx.ReadTimeout("slow"))
    assert is_timeout_error(StatusError(408))
    assert is_timeout_error(_wrapped(asyncio.TimeoutError()))
    assert not is_timeout_error(ConnectionRefusedError())
    assert not is_timeout_error(StatusError(503))


@pytest.mark.parametrize(
    ("status", "rejected"), [(400, True), (422, True), (500, False), (503, False), (401, False)]
)
def test_is_schema_rejection(status: int, rejected: bool) -> None:
    assert is_schema_rejection(_wrapped(StatusError(status))) is rejected
    assert not is_schema_rejection(ConnectionRefusedError())


LLAMA_CPP_REFUSAL = (
    "1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}"
)


@pytest.mark.parametrize(
    ("message", "requests", "method"),
    [
        (LLAMA_CPP_REFUSAL, 2, ExtractionMethod.TEXT),
        ("Internal Server Error: model runner crashed", 1, ExtractionMethod.ERROR),
    ],
    ids=["names the schema", "outage"],
)
def test_a_500_is_retried_without_the_schema_only_when_it_names_the_schema(
    message: str, requests: int, method: ExtractionMethod
) -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        if "response_format" in bodies[-1]:
            error = {"message": message, "type": "internal_server_error"}
            return httpx.Response(500, json={"error": error})
        if message != LLAMA_CPP_REFUSAL:
            return httpx.Response(500, json={"error": {"message": message}})
        return httpx.Response(200, json=_completion(json.dumps(PEOPLE)))

    extractor = people_extractor(_openai(handler), structured_output="json_schema")
    result = extractor.invoke_with_result("Ada and Charles")

    assert len(bodies) == requests
    assert result.method is method


def test_structured_output_kwargs_for_every_mode() -> None:
    schema = {"type": "array", "items": {"type": "integer"}}

    assert structured_output_kwargs("none", schema, name="Ids") == {}
    assert structured_output_kwargs("format", schema, name="Ids") == {"format": schema}
    assert structured_output_kwargs("json_object", schema, name="Ids") == {
        "response_format": {"type": "json_object", "schema": schema}
    }
    assert structured_output_kwargs("json_schema", schema, name="Ids") == {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "Ids", "schema": schema, "strict": False},
        }
    }
    with pytest.raises(ValueError, match="auto"):
        structured_output_kwargs("auto", schema, name="Ids")


def test_only_the_json_object_mode_lists_the_values_of_a_bounded_integer() -> None:
    bounded = {"type": "integer", "minimum": 1, "maximum": 3}
    schema = {
        "type": "object",
        "properties": {
            "ids": {"type": "array", "items": bounded},
            "wide": {"type": "integer", "minimum": 0, "maximum": 1000},
            "open": {"type": "integer", "minimum": 1},
            "share": {"type": "number", "minimum": 0, "maximum": 1},
        },
    }

    sent = structured_output_kwargs("json_object", schema, name="Ids")["response_format"]
    properties = sent["schema"]["properties"]
    assert properties["ids"]["items"] == {**bounded, "enum": [1, 2, 3]}
    assert "enum" not in properties["wide"]  # too wide to write out
    assert "enum" not in properties["open"]
    assert "enum" not in properties["share"]
    assert "enum" not in schema["properties"]["ids"]["items"]  # the caller's copy is kept
    for mode in ("json_schema", "format"):  # Gemini, for one, refuses an integer enum
        assert "enum" not in json.dumps(structured_output_kwargs(mode, schema, name="Ids"))


def test_reply_text_of_messages_and_strings() -> None:
    assert reply_text(AIMessage(content=[{"type": "text", "text": "[1]"}])) == "[1]"
    assert reply_text("[2]") == "[2]"


def test_model_call_nests_under_the_extractor_run_and_event_reports_method() -> None:
    recorder = Recorder()
    extractor = people_extractor(ScriptedChatModel(replies=[json.dumps(PEOPLE)]))

    people = extractor.invoke("x", {"callbacks": [recorder], "run_name": "people"})

    run_id = recorder.run_named("people")
    assert recorder.chains[run_id][1] is None
    assert recorder.chat_model_parents == [run_id]
    assert recorder.chain_outputs[run_id] == people
    assert recorder.events == [
        (
            EXTRACTION_EVENT,
            {"name": "LlmExtractor", "method": "text", "count": 2, "dropped": 0, "error": None},
            run_id,
        )
    ]


async def test_async_run_nests_and_reports_parse_error() -> None:
    recorder = Recorder()
    extractor = people_extractor(ScriptedChatModel(replies=["no json at all"]))

    result = await extractor.ainvoke_with_result("x", {"callbacks": [recorder]})

    run_id = recorder.run_named("LlmExtractor")
    assert result.method is ExtractionMethod.PARSE_ERROR
    assert recorder.chat_model_parents == [run_id]
    assert [(name, data["method"]) for name, data, _ in recorder.events] == [
        (EXTRACTION_EVENT, "parse_error")
    ]


async def test_astream_events_expose_the_method() -> None:
    extractor = people_extractor(ScriptedChatModel(replies=[json.dumps(PEOPLE)]))

    custom = [
        event
        async for event in extractor.astream_events("x", version="v2")
        if event["event"] == "on_custom_event"
    ]

    assert [(event["name"], event["data"]["method"]) for event in custom] == [
        (EXTRACTION_EVENT, "text")
    ]


async def test_async_transport_error_with_and_without_raise() -> None:
    quiet = people_extractor(ScriptedChatModel(replies=[ConnectionResetError("reset")]))
    loud = people_extractor(
        ScriptedChatModel(replies=[ConnectionResetError("reset")]), raise_on_error=True
    )

    assert (await quiet.ainvoke_with_result("x")).method is ExtractionMethod.ERROR
    with pytest.raises(ConnectionResetError):
        await loud.ainvoke("x")


async def test_concurrent_async_calls_are_in_flight_together() -> None:
    extractor = people_extractor(GateChatModel(expected=3))

    results = await asyncio.wait_for(
        asyncio.gather(*(extractor.ainvoke(name) for name in ("Ada", "Bo", "Cy"))), timeout=60
    )

    assert [[person.name for person in people] for people in results] == [["Ada"], ["Bo"], ["Cy"]]


def test_batch_runs_model_calls_concurrently_in_order() -> None:
    extractor = people_extractor(BarrierChatModel(parties=3))

    results = extractor.batch(["Ada", "Bo", "Cy"], {"max_concurrency": 3})

    assert [[person.name for person in people] for people in results] == [["Ada"], ["Bo"], ["Cy"]]


async def test_abatch_returns_one_result_per_input() -> None:
    llm = ScriptedChatModel(replies=[json.dumps(PEOPLE[:1])])

    results = await people_extractor(llm).abatch(["a", "b"])

    assert results == [[Person(**PEOPLE[0])], [Person(**PEOPLE[0])]]
    assert len(llm.calls) == 2


# --- timeout ---------------------------------------------------------------------------


def test_sync_timeout_stops_waiting_for_a_model_that_is_still_working() -> None:
    gate = Gate(reply=json.dumps(PEOPLE))
    extractor = people_extractor(ScriptedChatModel(replies=[gate]), timeout=0.05)

    result = extractor.invoke_with_result("Ada and Bo")

    model_was_done = gate.finished.is_set()
    gate.release.set()
    assert not model_was_done
    assert result.method is ExtractionMethod.ERROR
    assert result.value == []
    assert result.error == "DeadlineExceededError: no result within 0.05 s"
    assert gate.finished.wait(10)


def test_timeout_covers_the_retry_without_the_schema() -> None:
    gate = Gate(reply=json.dumps(PEOPLE))
    llm = ScriptedChatModel(replies=[StatusError(400), gate])
    extractor = people_extractor(llm, structured_output="json_schema", timeout=0.2)

    result = extractor.invoke_with_result("Ada and Bo")

    gate.release.set()
    assert len(llm.calls) == 2
    assert result.method is ExtractionMethod.ERROR
    assert result.error == "DeadlineExceededError: no result within 0.2 s"


async def test_async_timeout_cancels_the_model_call() -> None:
    gate = Gate(reply=json.dumps(PEOPLE))
    extractor = people_extractor(ScriptedChatModel(replies=[gate]), timeout=0.05)

    result = await asyncio.wait_for(extractor.ainvoke_with_result("Ada and Bo"), 10)

    assert result.method is ExtractionMethod.ERROR
    assert result.error == "DeadlineExceededError: no result within 0.05 s"  # as in sync
    assert gate.cancelled
    assert not gate.finished.is_set()


def test_timeout_with_raise_on_error_raises_a_timeout_error() -> None:
    gate = Gate(reply=json.dumps(PEOPLE))
    extractor = people_extractor(
        ScriptedChatModel(replies=[gate]), timeout=0.05, raise_on_error=True
    )

    with pytest.raises(TimeoutError, match=r"no result within 0\.05 s"):
        extractor.invoke("Ada and Bo")
    gate.release.set()


def test_model_answering_within_the_timeout_is_used() -> None:
    extractor = people_extractor(ScriptedChatModel(replies=[json.dumps(PEOPLE)]), timeout=30)

    result = extractor.invoke_with_result("Ada and Bo")

    assert result.method is not ExtractionMethod.ERROR
    assert [person.name for person in result.value] == [person["name"] for person in PEOPLE]


def test_builder_builds_an_equivalent_extractor() -> None:
    llm = ScriptedChatModel(replies=[json.dumps(PEOPLE)])
    extractor = (
        LlmExtractor.builder(llm)
        .prompt("People in {text}")
        .output(Person, many=True)
        .structured_output("none")
        .input_key("text")
        .name("people")
        .build()
    )

    assert extractor.get_name() == "people"
    assert extractor.many is True
    assert [person.name for person in extractor.invoke("x")] == ["Ada", "Charles"]


def test_builder_requires_prompt_and_output() -> None:
    with pytest.raises(ValueError, match=r"prompt\(\.\.\.\), output\(\.\.\.\)"):
        LlmExtractor.builder(ScriptedChatModel(replies=["[]"])).build()


def test_builder_prompt_name_uses_the_registry() -> None:
    registry = PromptRegistry()
    registry.register("people", "Registered {text}")
    llm = ScriptedChatModel(replies=["[]"])

    extractor = (
        LlmExtractor.builder(llm)
        .prompt_name("people", registry=registry)
        .output(Person, many=True)
        .build()
    )
    extractor.invoke("x")

    assert sent_prompt(llm) == "Registered x"


def test_auto_mode_detection() -> None:
    openai = offline_chat_openai(model="m")
    ollama = ChatOllama(model="m")

    assert detect_structured_output_mode(openai) == "langchain"
    assert detect_structured_output_mode(openai.with_config(tags=["t"])) == "langchain"
    # Bound call arguments would be lost by with_structured_output: send the schema as one.
    assert detect_structured_output_mode(openai.bind(stop=["\n\n"])) == "json_schema"
    assert detect_structured_output_mode(ollama.bind(stop=["\n\n"])) == "format"
    assert detect_structured_output_mode(ollama) == "langchain"
    assert detect_structured_output_mode(ScriptedChatModel(replies=[])) == "none"
    extractor = people_extractor(ollama)
    assert extractor.resolved_structured_output() == "langchain"


def test_with_model_name_on_real_chat_models() -> None:
    openai = offline_chat_openai(model="a")
    ollama = ChatOllama(model="a")

    renamed_openai = with_model_name(openai, "b")
    renamed_bound = with_model_name(ollama.bind(stop=["x"]), "c")

    assert isinstance(renamed_openai, ChatOpenAI)
    assert (openai.model_name, renamed_openai.model_name) == ("a", "b")
    assert renamed_bound.bound.model == "c"  # type: ignore[attr-defined]
    assert ollama.model == "a"


def test_with_model_name_without_a_model_field() -> None:
    with pytest.raises(ValueError, match="no 'model' or 'model_name' field"):
        with_model_name(ScriptedChatModel(replies=[]), "x")
    with pytest.raises(ValueError, match="non-empty"):
        with_model_name(ChatOllama(model="a"), "")


def _completion(content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _openai(handler: Any) -> ChatOpenAI:
    return offline_chat_openai(handler, base_url="http://llm.invalid/v1")


@pytest.mark.parametrize("mode", ["json_schema", "json_object"])
def test_chat_openai_request_carries_the_schema(mode: str) -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json=_completion(json.dumps({"items": PEOPLE})))

    result = people_extractor(_openai(handler), structured_output=mode).invoke_with_result(
        "x", max_items=5
    )

    assert result.method is ExtractionMethod.STRUCTURED
    assert [person.name for person in result.value] == ["Ada", "Charles"]
    response_format = bodies[0]["response_format"]
    assert response_format["type"] == mode
    schema = (
        response_format["json_schema"]["schema"]
        if mode == "json_schema"
        else response_format["schema"]
    )
    assert schema == request_schema(Person, many=True, max_items=5)


def test_chat_openai_server_error_is_a_transport_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, json={"error": {"message": "overloaded"}})

    result = people_extractor(_openai(handler)).invoke_with_result("x")

    assert result.method is ExtractionMethod.ERROR
    assert result.value == []


def test_chat_openai_connection_refused_raises_with_raise_on_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        msg = "connection refused"
        raise httpx.ConnectError(msg, request=request)

    quiet = people_extractor(_openai(handler))
    loud = people_extractor(_openai(handler), raise_on_error=True)

    assert quiet.invoke_with_result("x").method is ExtractionMethod.ERROR
    with pytest.raises(Exception, match="Connection error") as excinfo:
        loud.invoke("x")
    assert is_transport_error(excinfo.value)


@pytest.mark.parametrize("status", [422, 500])
def test_chat_openai_rejecting_json_schema_falls_back_to_text(status: int) -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        bodies.append(body)
        if "response_format" in body:
            return httpx.Response(status, json={"error": {"message": "bad response_format"}})
        return httpx.Response(200, json=_completion(json.dumps(PEOPLE)))

    result = people_extractor(_openai(handler)).invoke_with_result("x")

    assert result.method is ExtractionMethod.TEXT
    assert len(result.value) == 2
    assert ["response_format" in body for body in bodies] == [True, False]


def test_chat_ollama_request_carries_the_schema_as_format() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        line = {
            "model": "m",
            "created_at": "2025-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": json.dumps({"items": PEOPLE})},
            "done": True,
            "done_reason": "stop",
        }
        return httpx.Response(200, content=json.dumps(line) + "\n")

    llm = ChatOllama(
        model="m",
        base_url="http://ollama.invalid:11434",
        client_kwargs={"transport": httpx.MockTransport(handler)},
    )

    result = people_extractor(llm).invoke_with_result("x", max_items=2)

    assert result.method is ExtractionMethod.STRUCTURED
    assert len(result.value) == 2
    sent = dict(bodies[0]["format"])
    assert sent.pop("title") == "PersonList"
    assert sent == request_schema(Person, many=True, max_items=2)


# Tolerant JSON helpers shared by the extractors.

json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
prose = st.text(
    alphabet=st.characters(blacklist_characters="[]{}<>`\"'\\", blacklist_categories=("Cs",)),
    max_size=40,
)


@given(
    value=st.lists(st.dictionaries(st.text(max_size=8), json_values, max_size=3), max_size=4),
    before=prose,
    after=prose,
    fenced=st.booleans(),
)
def test_extract_json_list_recovers_any_list_around_prose(
    value: list[Any], before: str, after: str, fenced: bool
) -> None:
    body = json.dumps(value, indent=1)
    if fenced:
        body = f"```json\n{body}\n```"

    assert extract_json_list(f"{before}{body}{after}") == value


@given(value=json_values)
def test_remove_trailing_commas_keeps_valid_json_intact(value: Any) -> None:
    text = json.dumps(value)

    assert json.loads(remove_trailing_commas(text)) == value


def test_trailing_comma_inside_strings_is_kept() -> None:
    assert extract_json('{"a": "x,]", "b": [1, 2,],}') == {"a": "x,]", "b": [1, 2]}


def test_strip_reasoning_variants() -> None:
    assert strip_reasoning("<think>a [1]</think>[2]") == "[2]"
    assert strip_reasoning("<THINKING>\nx\n</THINKING> ok") == " ok"
    assert strip_reasoning("plan... </think> [3]") == " [3]"
    assert strip_reasoning("<think> never closed [4]") == ""


def test_shape_filter_skips_other_values() -> None:
    assert extract_json('[1] then {"a": 2}', shape="object") == {"a": 2}
    assert extract_json('{"a": [5]}', shape="array") == [5]


def test_unwraps_one_list_valued_key_or_known_wrappers() -> None:
    assert extract_json_list('{"facts": [1, 2], "note": "x"}') == [1, 2]
    assert extract_json_list('{"whatever": [3]}') == [3]
    assert extract_json_list('{"a": 1, "b": [2]}') == [{"a": 1, "b": [2]}]


def test_no_json_raises() -> None:
    with pytest.raises(JsonExtractionError, match="No JSON"):
        extract_json_list("nothing to see here")
    with pytest.raises(JsonExtractionError):
        extract_json_list("42")


def test_cut_off_value_raises_truncated_and_salvages_items() -> None:
    text = '[{"a": 1}, {"b": 2}, {"c": tr'

    with pytest.raises(TruncatedJsonError):
        extract_json_list(text)
    assert salvage_json_array(text) == [{"a": 1}, {"b": 2}]
    assert salvage_json_array("no array") == []


def test_unclosed_bracket_in_prose_is_not_mistaken_for_truncation() -> None:
    assert extract_json_list('Note [see the list below: [{"a": 1}]') == [{"a": 1}]


@pytest.mark.parametrize(
    "text",
    [
        '[{"a": 1}, {"b": oops}]',
        '{"items": [{"a": 1}], "note": oops}',
        'Sure: [{"name": "Ada", "age": 36} {"name": "Bo", "age": 5}]',
    ],
)
def test_inner_values_of_a_malformed_value_are_not_returned(text: str) -> None:
    with pytest.raises(JsonExtractionError):
        extract_json_list(text)


def test_prose_brackets_before_the_json_are_still_skipped() -> None:
    assert extract_json_list('See [the notes] and {the list}: [{"a": 1}]') == [{"a": 1}]


def test_malformed_list_reply_is_a_parse_error_not_a_partial_list() -> None:
    reply = '[{"name": "Ada", "age": 36, oops}, {"name": "Bo", "age": 5}]'

    result = people_extractor(ScriptedChatModel(replies=[reply])).invoke_with_result("x")

    assert result.method is ExtractionMethod.PARSE_ERROR
    assert result.value == []


@pytest.mark.parametrize("max_items", [0, -1])
def test_max_items_below_one_is_a_value_error(max_items: int) -> None:
    llm = ScriptedChatModel(replies=["[]"])

    with pytest.raises(ValueError, match="max_items"):
        people_extractor(llm).invoke("x", max_items=max_items)
    assert llm.calls == []


def test_huge_integer_in_the_reply_does_not_escape_as_an_exception() -> None:
    from cogito_lc._core.json_repair import extract_json

    value = extract_json("[" + "9" * 5000 + ", 2]")
    assert value[1] == 2
    assert value[0] == float("inf")


# Structured output through LangChain's own with_structured_output.


class ToolCallingChatModel(ScriptedChatModel):
    """A chat model of no known vendor that implements tool calling, as partner models do.

    It answers every call that binds a tool with a call of that tool whose arguments
    are the scripted reply; without a tool it answers the reply as text.
    """

    bound_tools: list[dict[str, Any]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        from langchain_core.utils.function_calling import convert_to_openai_tool

        self.bound_tools.extend(convert_to_openai_tool(tool) for tool in tools)
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], **kwargs)

    def _respond(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> ChatResult:
        if not kwargs.get("tools"):
            return super()._respond(messages, kwargs)
        self.calls.append({"messages": messages, "kwargs": kwargs})
        reply = self.replies[min(len(self.calls), len(self.replies)) - 1]
        name = kwargs["tools"][0]["function"]["name"]
        call = {"name": name, "args": json.loads(reply), "id": "call-1", "type": "tool_call"}
        message = AIMessage(content="", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=message)])


def test_a_tool_calling_model_of_any_vendor_gets_the_schema() -> None:
    llm = ToolCallingChatModel(replies=[json.dumps({"items": PEOPLE})])

    result = people_extractor(llm).invoke_with_result("x", max_items=5)

    assert detect_structured_output_mode(llm) == "langchain"
    assert result.method is ExtractionMethod.STRUCTURED
    assert [person.name for person in result.value] == ["Ada", "Charles"]
    parameters = llm.bound_tools[0]["function"]["parameters"]
    assert llm.bound_tools[0]["function"]["name"] == "PersonList"
    assert parameters["properties"] == request_schema(Person, many=True, max_items=5)["properties"]
    assert json.loads(result.raw or "") == {"items": PEOPLE}


def test_a_model_with_retries_or_fallbacks_gets_the_schema_and_keeps_them() -> None:
    reply = json.dumps({"items": PEOPLE})
    primary = ToolCallingChatModel(replies=[reply])
    failing = ToolCallingChatModel(replies=[reply]).bind(stop=["x"]).with_config(tags=["t"])
    wrapped = [
        primary.with_retry(stop_after_attempt=2),
        primary.with_config(tags=["outer"]).with_retry(),
        primary.with_fallbacks([ToolCallingChatModel(replies=[reply])]),
        ToolCallingChatModel(replies=[reply]).with_fallbacks([failing]).with_retry(),
    ]
    for llm in wrapped:
        assert detect_structured_output_mode(llm) == "langchain"
        result = people_extractor(llm).invoke_with_result("x")
        assert result.method is ExtractionMethod.STRUCTURED
        assert [person.name for person in result.value] == ["Ada", "Charles"]
    retrying = primary.with_retry(stop_after_attempt=2)
    [attempt, _] = attempts(retrying, "auto", Person, many=True)
    assert isinstance(attempt.runnable, RunnableRetry)
    assert attempt.runnable.max_attempt_number == 2


def test_a_fallback_that_cannot_take_the_schema_asks_every_model_without_it() -> None:
    reply = json.dumps(PEOPLE)
    llm = ToolCallingChatModel(replies=[reply]).with_fallbacks([ScriptedChatModel(replies=[reply])])
    result = people_extractor(llm).invoke_with_result("x")
    assert result.method is ExtractionMethod.TEXT
    assert len(result.value) == 2


def test_a_profile_without_structured_output_or_tools_gets_no_schema() -> None:
    llm = ToolCallingChatModel(
        replies=[json.dumps(PEOPLE)], profile={"structured_output": False, "tool_calling": False}
    )

    result = people_extractor(llm).invoke_with_result("x")

    assert detect_structured_output_mode(llm) == "none"
    assert result.method is ExtractionMethod.TEXT
    assert llm.bound_tools == []
    assert len(result.value) == 2


def test_a_reply_the_model_parser_rejects_is_parsed_tolerantly() -> None:
    bodies: list[dict[str, Any]] = []
    reply = "<think>two people</think> Here you go: " + json.dumps({"items": PEOPLE}) + " Bye!"

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json=_completion(reply))

    result = people_extractor(_openai(handler)).invoke_with_result("x")

    assert result.method is ExtractionMethod.STRUCTURED
    assert [person.name for person in result.value] == ["Ada", "Charles"]
    assert result.raw == reply
    assert len(bodies) == 1
    assert bodies[0]["response_format"]["type"] == "json_schema"


class Documented(BaseModel):
    """A person, as the reply should describe them.

    Example:
        ```python
        Documented(name="Ada")
        ```
    """

    name: str = Field(description="Full name.")


def test_the_schema_sent_carries_no_docstring_example() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json=_completion('{"name": "Ada"}'))

    extractor = LlmExtractor.from_llm(_openai(handler), output=Documented, prompt="{text}")
    assert extractor.invoke("x") == Documented(name="Ada")

    sent = json.dumps(bodies[0]["response_format"])
    assert "```" not in sent
    assert "Example" not in sent
    schema = bodies[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["name"]["description"] == "Full name."
    assert request_schema(Documented, many=False)["description"] == (
        "A person, as the reply should describe them."
    )


def test_output_type_is_inferred_from_the_type_parameter() -> None:
    llm = ScriptedChatModel(replies=['{"name": "Ada", "age": 36}'])

    extractor = LlmExtractor[Person](llm=llm, prompt=ChatPromptTemplate.from_template("{text}"))

    assert extractor.output is Person
    assert extractor.invoke("x") == Person(name="Ada", age=36)


def test_output_schema_is_typed() -> None:
    llm = ScriptedChatModel(replies=["[]"])
    one = LlmExtractor.from_llm(llm, output=Person, prompt="{text}")
    many = people_extractor(llm)

    one_schema = one.get_output_jsonschema()
    many_schema = many.get_output_jsonschema()

    assert one_schema["anyOf"] == [{"$ref": "#/$defs/Person"}, {"type": "null"}]
    assert many_schema["type"] == "array"
    assert many_schema["items"] == {"$ref": "#/$defs/Person"}
    assert set(many_schema["$defs"]["Person"]["properties"]) == {"name", "age"}
