from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import pytest
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore
from pydantic import ValidationError

from cogito_lc import METADATA_KEY, RecallB
from cogito_lc._core.timestamps import parse_since, parse_timestamp
from cogito_lc.document_compressors.pointer_filter import FILTER_EVENT, PointerFilter
from cogito_lc.retrievers.cogito_retriever import (
    CANDIDATES_EVENT,
    RETRIEVAL_EVENT,
    CogitoRetriever,
)
from tests.unit_tests.conftest import MEMORIES, HashEmbeddings
from tests.unit_tests.fakes import Recorder, ScriptedChatModel

CREATED = {
    "m-auth": "2026-01-10T09:00:00+00:00",
    "m-db": "2026-02-10T09:00:00Z",
    "m-test": "2026-03-10",
    "m-lat": "2026-04-10T11:00:00+02:00",
    "m-port": 1_781_000_000,  # epoch seconds, 2026-06-09
    "m-deploy": "not a date",
}


@pytest.fixture
def dated_chroma(embeddings: HashEmbeddings) -> Iterator[Chroma]:
    store = Chroma(collection_name=f"unit-{uuid.uuid4().hex[:12]}", embedding_function=embeddings)
    store.add_texts(
        list(MEMORIES.values()),
        ids=list(MEMORIES),
        metadatas=[{"user_id": "alice", "created_at": CREATED[key]} for key in MEMORIES],
    )
    yield store
    store.delete_collection()


def retriever(store: Chroma, llm: Any, **kwargs: Any) -> CogitoRetriever:
    return CogitoRetriever.from_llm(store, llm, **kwargs)


def numbers_of(llm: ScriptedChatModel, call: int = 0) -> dict[str, int]:
    """Map memory id -> number shown to the model, read from the prompt."""
    text = llm.prompt_text(call)
    by_text = {" ".join(v.split()): k for k, v in MEMORIES.items()}
    numbers = {}
    for line in text.splitlines():
        if line.startswith("[") and "] " in line:
            number, body = line[1:].split("] ", 1)
            numbers[by_text[body]] = int(number)
    return numbers


def test_filter_picks_stored_documents_by_number(filled_chroma: Chroma) -> None:
    llm = ScriptedChatModel(replies=["[3, 1]"])
    docs = retriever(filled_chroma, llm, k=5).invoke("which database did we choose for billing?")

    shown = {number: key for key, number in numbers_of(llm).items()}
    assert [d.id for d in docs] == [shown[3], shown[1]]
    stored = {d.id: d for d in filled_chroma.get_by_ids(list(MEMORIES))}
    for doc in docs:
        assert doc.page_content == stored[doc.id].page_content
        own = {k: v for k, v in doc.metadata.items() if k != METADATA_KEY}
        assert own == stored[doc.id].metadata
        details = doc.metadata[METADATA_KEY]
        assert details["method"].startswith("decompose_")
        assert details["method"].endswith("|filter")
        assert details["filter_method"] == "filter"
        assert {"score", "cosine", "rrf", "rank"} <= set(details)


def test_at_most_k_documents(filled_chroma: Chroma) -> None:
    llm = ScriptedChatModel(replies=["[1, 2, 3, 4, 5, 6]"])

    assert len(retriever(filled_chroma, llm, k=2).invoke("billing")) == 2
    assert len(retriever(filled_chroma, llm, k=4).invoke("billing", k=3)) == 3


def test_pool_is_what_recall_b_finds(filled_chroma: Chroma) -> None:
    llm = ScriptedChatModel(replies=["[]"])
    query = "how long do auth tokens last"

    assert retriever(filled_chroma, llm, pool_size=4).invoke(query) == []
    expected = [d.id for d in RecallB(vectorstore=filled_chroma, k=4).invoke(query)]
    shown = numbers_of(llm)
    assert sorted(shown, key=shown.__getitem__) == expected


@pytest.mark.parametrize(
    ("reply", "tag"),
    [
        (ConnectionRefusedError("refused"), "fallback_unreachable"),
        (TimeoutError("slow"), "fallback_timeout"),
        ("no numbers here", "fallback_parse_error"),
        (KeyError("bug"), "fallback_error"),
    ],
)
def test_fallbacks_return_stage1_order(filled_chroma: Chroma, reply: Any, tag: str) -> None:
    query = "how long do auth tokens last"
    recorder = Recorder()

    docs = retriever(filled_chroma, ScriptedChatModel(replies=[reply]), k=3).invoke(
        query, {"callbacks": [recorder]}
    )

    expected = [d.id for d in RecallB(vectorstore=filled_chroma, k=50).invoke(query)][:3]
    assert [d.id for d in docs] == expected
    (event,) = recorder.event_data(RETRIEVAL_EVENT)
    assert event["filter_method"] == tag
    assert event["method"] == f"{event['recall_method']}|{tag}"
    assert all(d.metadata[METADATA_KEY]["method"] == event["method"] for d in docs)


def test_no_llm_is_fallback_no_llm(filled_chroma: Chroma) -> None:
    docs = CogitoRetriever(recall_b=RecallB(vectorstore=filled_chroma), k=2).invoke("billing")

    assert len(docs) == 2
    assert all(d.metadata[METADATA_KEY]["method"].endswith("|fallback_no_llm") for d in docs)


# --- filter_when ------------------------------------------------------------------------


def cogito_margin() -> float:
    default = CogitoRetriever.model_fields["confidence_margin"].default
    assert isinstance(default, float)
    return default


def test_low_confidence_skips_the_model_when_stage1_is_sure(filled_chroma: Chroma) -> None:
    llm = ScriptedChatModel(replies=["[2]"])
    query = MEMORIES["m-port"]

    docs = retriever(filled_chroma, llm, filter_when="low_confidence", k=3).invoke(query)

    assert llm.calls == []
    assert docs[0].id == "m-port"
    assert docs[0].metadata[METADATA_KEY]["method"].endswith("|skipped_confident")
    scores = [d.metadata[METADATA_KEY]["score"] for d in docs]
    assert scores[0] - scores[1] > cogito_margin()


def test_low_confidence_calls_the_model_when_the_top_two_are_close(
    filled_chroma: Chroma,
) -> None:
    llm = ScriptedChatModel(replies=["[2]"])

    docs = retriever(
        filled_chroma, llm, filter_when="low_confidence", confidence_margin=1.0
    ).invoke(MEMORIES["m-port"])

    assert len(llm.calls) == 1
    assert len(docs) == 1
    assert docs[0].metadata[METADATA_KEY]["method"].endswith("|filter")


@pytest.mark.parametrize(
    ("query", "routed"),
    [
        ("When did the March deploy break?", True),
        ("How many tokens rotate on every use?", True),
        ("what did we do before the migration", True),
        ("What was the first database we chose?", True),
        ("which port does billing listen on", False),
        ("who prefers pytest fixtures", False),
        ("whenever possible use fixtures", False),
    ],
)
def test_routed_calls_the_model_only_for_temporal_and_counting_questions(
    filled_chroma: Chroma, query: str, routed: bool
) -> None:
    llm = ScriptedChatModel(replies=["[1]"])
    cogito = retriever(filled_chroma, llm, filter_when="routed")

    docs = cogito.invoke(query)

    assert cogito.is_routed(query) is routed
    assert len(llm.calls) == int(routed)
    tag = "filter" if routed else "skipped_unrouted"
    assert docs[0].metadata[METADATA_KEY]["filter_method"] == tag


def test_route_keywords_are_configurable(filled_chroma: Chroma) -> None:
    cogito = retriever(filled_chroma, None, filter_when="routed", route_keywords=("port number",))

    assert cogito.is_routed("What is the PORT   number?")
    assert not cogito.is_routed("when was it")


# --- since ------------------------------------------------------------------------------


def test_since_keeps_memories_created_at_or_after_it(dated_chroma: Chroma) -> None:
    cogito = retriever(dated_chroma, None, since="2026-03-10", k=10)

    ids = {d.id for d in cogito.invoke("billing tokens latency port deploy pytest")}

    assert ids == {"m-test", "m-lat", "m-port"}


def test_since_per_call_and_offsets(dated_chroma: Chroma) -> None:
    cogito = retriever(dated_chroma, None, k=10)
    query = "billing tokens latency port deploy pytest"

    later = {d.id for d in cogito.invoke(query, since="2026-04-10T09:00:00Z")}
    assert later == {"m-lat", "m-port"}  # 11:00+02:00 is 09:00 UTC: at, not before
    assert {d.id for d in cogito.invoke(query, since="2026-04-10T09:00:01Z")} == {"m-port"}
    assert len(cogito.invoke(query)) == 6


def test_nothing_after_since_skips_the_model(dated_chroma: Chroma) -> None:
    llm = ScriptedChatModel(replies=["[1]"])
    recorder = Recorder()

    docs = retriever(dated_chroma, llm, since="2030-01-01").invoke(
        "billing", {"callbacks": [recorder]}
    )

    assert docs == []
    assert llm.calls == []
    (event,) = recorder.event_data(RETRIEVAL_EVENT)
    assert event["filter_method"] == "skipped_empty"
    assert event["pool"] > 0
    assert event["eligible"] == 0


@pytest.mark.parametrize("value", ["last tuesday", "2026-13-01", ""])
def test_a_bad_since_is_a_clear_error(filled_chroma: Chroma, value: str) -> None:
    with pytest.raises(ValidationError, match="since"):
        retriever(filled_chroma, None, since=value)
    with pytest.raises(ValueError, match="since"):
        retriever(filled_chroma, None).invoke("billing", since=value)


def test_since_of_the_wrong_type_is_a_type_error(filled_chroma: Chroma) -> None:
    with pytest.raises(TypeError, match="since must be an ISO 8601 string"):
        retriever(filled_chroma, None).invoke("billing", since=1234)


def test_timestamp_parsing() -> None:
    utc = timezone.utc
    assert parse_since("2026-03-01") == datetime(2026, 3, 1, tzinfo=utc)
    assert parse_since(" 2026-03-01T09:00:00Z ") == datetime(2026, 3, 1, 9, tzinfo=utc)
    assert parse_since(datetime(2026, 3, 1, 9)) == datetime(2026, 3, 1, 9, tzinfo=utc)
    assert parse_timestamp("2026-03-01T11:00:00+02:00") == datetime(2026, 3, 1, 9, tzinfo=utc)
    assert parse_timestamp(0) == datetime(1970, 1, 1, tzinfo=utc)
    assert parse_timestamp(True) is None
    assert parse_timestamp(float("nan")) is None
    assert parse_timestamp(1e300) is None
    assert parse_timestamp(None) is None
    assert parse_timestamp("soon") is None


# --- arguments ---------------------------------------------------------------------------


def test_bad_arguments(filled_chroma: Chroma) -> None:
    cogito = retriever(filled_chroma, None)

    with pytest.raises(TypeError, match="query must be a str"):
        cogito.invoke(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="k must be >= 1"):
        cogito.invoke("billing", k=0)
    with pytest.raises(TypeError, match="did you mean 'since'"):
        cogito.invoke("billing", sinse="2026-01-01")
    with pytest.raises(ValidationError, match="pool_size"):
        retriever(filled_chroma, None, pool_size=101)
    with pytest.raises(TypeError, match="did you mean 'filter_when'"):
        CogitoRetriever(recall_b=RecallB(vectorstore=filled_chroma), filter_wen="always")


def test_from_llm_routes_keywords_to_the_filter(filled_chroma: Chroma) -> None:
    cogito = CogitoRetriever.from_llm(
        RecallB(vectorstore=filled_chroma, k=3),
        None,
        k=4,
        timeout=3,
        top_n=2,
        structured_output="none",
        prompt="{query} -> {candidates}",
    )

    assert cogito.k == 4
    assert (cogito.pointer_filter.timeout, cogito.pointer_filter.top_n) == (3, 2)
    assert cogito.pointer_filter.prompt.input_variables == ["candidates", "query"]
    with pytest.raises(TypeError, match="did you mean 'timeout'"):
        CogitoRetriever.from_llm(filled_chroma, None, timeut=3)
    with pytest.raises(TypeError, match="VectorStore or a RecallB"):
        CogitoRetriever.from_llm("not a store", None)  # type: ignore[arg-type]


def test_filter_top_n_caps_k(filled_chroma: Chroma) -> None:
    llm = ScriptedChatModel(replies=["[1, 2, 3, 4]"])

    assert len(retriever(filled_chroma, llm, k=4, top_n=2).invoke("billing")) == 2


def test_pool_larger_than_what_the_filter_shows_warns(filled_chroma: Chroma) -> None:
    with pytest.warns(UserWarning, match="max_candidates"):
        retriever(filled_chroma, None, pool_size=80)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        retriever(filled_chroma, None, pool_size=80, keep_unranked=True)


def test_works_with_a_store_other_than_chroma(embeddings: HashEmbeddings) -> None:
    store = InMemoryVectorStore(embedding=embeddings)
    store.add_texts(list(MEMORIES.values()), ids=list(MEMORIES))
    recall_b = RecallB(vectorstore=store, lexical_index=None)
    llm = ScriptedChatModel(replies=["[1]"])

    docs = CogitoRetriever.from_llm(recall_b, llm).invoke("auth tokens expire")

    assert [d.id for d in docs] == [
        next(k for k, n in numbers_of(llm).items() if n == 1),
    ]


# --- callbacks, async, chains ------------------------------------------------------------


def test_callbacks_reach_both_stages(filled_chroma: Chroma) -> None:
    recorder = Recorder()
    llm = ScriptedChatModel(replies=["[1]"])

    retriever(filled_chroma, llm).invoke("billing database", {"callbacks": [recorder]})

    (top,) = recorder.run_ids("retriever", "CogitoRetriever")
    (stage1,) = recorder.run_ids("retriever", "RecallB")
    (stage2,) = recorder.run_ids("chain", "PointerFilter")
    (chat,) = [rid for rid, (kind, _, _) in recorder.runs.items() if kind == "chat_model"]
    assert recorder.runs[stage1][2] == top
    assert recorder.runs[stage2][2] == top
    assert recorder.ancestors(chat)[-1] == top
    assert stage2 in recorder.ancestors(chat)
    assert [d["method"] for d in recorder.event_data(FILTER_EVENT)] == ["filter"]
    (event,) = recorder.event_data(RETRIEVAL_EVENT)
    assert event["method"].endswith("|filter")


async def test_async_retrieval_matches_sync(filled_chroma: Chroma) -> None:
    recorder = Recorder()
    query = "which database did we choose for billing?"
    sync_llm = ScriptedChatModel(replies=["[2, 1]"])
    async_llm = ScriptedChatModel(replies=["[2, 1]"])

    expected = retriever(filled_chroma, sync_llm, k=5).invoke(query)
    docs = await retriever(filled_chroma, async_llm, k=5).ainvoke(query, {"callbacks": [recorder]})

    assert [d.id for d in docs] == [d.id for d in expected]
    assert recorder.run_ids("retriever", "RecallB")
    assert recorder.run_ids("chain", "PointerFilter")
    (event,) = recorder.event_data(RETRIEVAL_EVENT)
    assert event["returned"] == 2


async def test_async_fallback(filled_chroma: Chroma) -> None:
    llm = ScriptedChatModel(replies=[ConnectionRefusedError()])

    docs = await retriever(filled_chroma, llm, k=2).ainvoke("billing")

    assert [d.metadata[METADATA_KEY]["filter_method"] for d in docs] == ["fallback_unreachable"] * 2


def test_rag_chain(filled_chroma: Chroma) -> None:
    filter_llm = ScriptedChatModel(replies=["[1]"])
    reader = FakeListChatModel(responses=["Auth tokens last 3600 seconds."])
    prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    seen: list[str] = []

    def format_docs(docs: list[Document]) -> str:
        text = "\n\n".join(doc.page_content for doc in docs)
        seen.append(text)
        return text

    chain = (
        {
            "context": retriever(filled_chroma, filter_llm, k=3) | RunnableLambda(format_docs),
            "question": RunnableLambda(lambda question: question),
        }
        | prompt
        | reader
        | StrOutputParser()
    )

    answer = chain.invoke("how long do auth tokens last?")

    assert answer == "Auth tokens last 3600 seconds."
    assert seen == [MEMORIES["m-auth"]]


def test_batch(filled_chroma: Chroma) -> None:
    cogito = retriever(filled_chroma, FakeListChatModel(responses=["[1]"]), k=1)

    results = cogito.batch(["billing database", "auth tokens"])

    assert [len(docs) for docs in results] == [1, 1]


def test_pointer_filter_default_has_no_model(filled_chroma: Chroma) -> None:
    cogito = CogitoRetriever(recall_b=RecallB(vectorstore=filled_chroma))

    assert isinstance(cogito.pointer_filter, PointerFilter)
    assert cogito.pointer_filter.llm is None


async def test_astream_events_show_the_candidates_before_the_final_order(
    filled_chroma: Chroma,
) -> None:
    query = "how long do auth tokens last"
    llm = ScriptedChatModel(replies=["[3]"])
    events = [
        (event["name"], event["data"])
        async for event in retriever(filled_chroma, llm, k=3).astream_events(query, version="v2")
        if event["event"] == "on_custom_event"
        and event["name"] in {CANDIDATES_EVENT, RETRIEVAL_EVENT}
    ]

    assert [name for name, _ in events] == [CANDIDATES_EVENT, RETRIEVAL_EVENT]
    candidates, final = events[0][1], events[1][1]
    stage1 = [d.id for d in RecallB(vectorstore=filled_chroma, k=50).invoke(query)][:3]
    assert candidates["ids"] == stage1
    assert [d.id for d in candidates["documents"]] == stage1
    assert candidates["recall_method"] == final["recall_method"]
    assert final["filter_method"] == "filter"


def test_the_candidates_event_comes_before_the_retrieval_event(filled_chroma: Chroma) -> None:
    recorder = Recorder()
    llm = ScriptedChatModel(replies=["[1]"])

    retriever(filled_chroma, llm, k=2).invoke("billing", {"callbacks": [recorder]})

    (candidates,) = recorder.event_data(CANDIDATES_EVENT)
    assert len(candidates["ids"]) == 2
    names = [name for name, _, _ in recorder.events]
    assert names.index(CANDIDATES_EVENT) < names.index(RETRIEVAL_EVENT)
    assert candidates["pool"] >= 2
    for doc in candidates["documents"]:  # as stage 1 gave them, not tagged by stage 2 since
        assert "filter_method" not in doc.metadata[METADATA_KEY]
        assert "|" not in doc.metadata[METADATA_KEY]["method"]
