from __future__ import annotations

import json
import logging
import time
import unicodedata
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_chroma import Chroma
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.vectorstores import InMemoryVectorStore

from cogito_lc import MemoryStore
from cogito_lc.memory.calibrate import VocabCalibrator, filter_vocab_map
from cogito_lc.retrievers.recall_b import RecallB
from tests.races import in_threads
from tests.unit_tests.conftest import HashEmbeddings
from tests.unit_tests.fakes import Gate, ScriptedChatModel, json_reply, offline_chat_openai

CORPUS = [
    "Search p95 latency budget is 250 ms.",
    "Throughput of the ingest worker is 4k events per second.",
    "Auth tokens expire after 3600 seconds.",
]


@pytest.fixture
def memory(embeddings: HashEmbeddings, tmp_path: Path) -> MemoryStore:
    store = Chroma("calib", embeddings, persist_directory=str(tmp_path / "store"))
    memory = MemoryStore(store)
    memory.store_many(CORPUS)
    return memory


def test_invented_terms_are_dropped(memory: MemoryStore) -> None:
    llm = json_reply({"How Fast": ["latency", "throughput", "warp factor"], "login": ["oauth"]})
    result = VocabCalibrator.from_llm(llm).calibrate(memory, dry_run=True)
    assert result.method == "calibrated"
    assert result.vocab_map == {"how fast": ["latency", "throughput"]}
    assert sorted(result.dropped) == ["oauth", "warp factor"]
    assert result.path is None


def test_saved_and_picked_up_by_new_retrievers(
    memory: MemoryStore, embeddings: HashEmbeddings
) -> None:
    result = VocabCalibrator.from_llm(json_reply({"how fast": ["latency"]})).calibrate(memory)
    assert result.path is not None
    assert json.loads(Path(result.path).read_text()) == {"how fast": ["latency"]}
    retriever = memory.as_retriever()
    assert isinstance(retriever, RecallB)
    assert retriever.vocab_map == {"how fast": ["latency"]}
    reopened = MemoryStore(Chroma("calib", embeddings, persist_directory=str(memory.data_dir)))
    assert reopened.vocab_map == {"how fast": ["latency"]}
    docs = retriever.invoke("how fast is search")
    assert docs[0].metadata["cogito"]["method"].endswith("_v")


def test_at_most_max_keys() -> None:
    raw = {f"phrase {i}": ["latency"] for i in range(100)}
    kept, _ = filter_vocab_map(raw, "latency", max_keys=60)
    assert len(kept) == 60


def test_terms_match_whole_words_only() -> None:
    kept, dropped = filter_vocab_map({"speed": ["ate", "latency"]}, "p95 latency")
    assert kept == {"speed": ["latency"]}
    assert dropped == ["ate"]


def test_no_llm_and_bad_output(memory: MemoryStore) -> None:
    assert VocabCalibrator.from_llm(None).calibrate(memory).method == "fallback_no_llm"
    bad = VocabCalibrator.from_llm(FakeListChatModel(responses=["no idea"])).calibrate(memory)
    assert bad.method == "fallback_parse_error"
    assert memory.vocab_map is None


def test_a_model_outlasting_the_timeout_leaves_the_map_as_it_was(memory: MemoryStore) -> None:
    memory.vocab_map = {"how fast": ["latency"]}
    gate = Gate(reply='{"login": ["auth"]}')
    calibrator = VocabCalibrator.from_llm(ScriptedChatModel(replies=[gate]), timeout=0.2)

    started = time.monotonic()
    result = calibrator.calibrate(memory)
    elapsed = time.monotonic() - started
    gate.release.set()

    assert gate.entered.is_set()
    assert elapsed < 5
    assert (result.method, result.vocab_map, result.path) == ("fallback_timeout", {}, None)
    assert memory.vocab_map == {"how fast": ["latency"]}


def test_a_failing_model_is_fallback_error(memory: MemoryStore) -> None:
    llm = ScriptedChatModel(replies=[ValueError("bad request")])
    result = VocabCalibrator.from_llm(llm, timeout=5).calibrate(memory)
    assert (result.method, result.vocab_map) == ("fallback_error", {})


def test_terms_of_scripts_without_spaces_match_inside_words(
    embeddings: HashEmbeddings, tmp_path: Path
) -> None:
    memory = MemoryStore(Chroma("cjk", embeddings, persist_directory=str(tmp_path / "cjk")))
    memory.store_many(
        [
            "我们的数据库部署在杭州机房。",
            "会議の議事録はコンフルエンスに保存されています。",
            "배포 서버는 서울에서 운영됩니다.",
            "ฐานข้อมูลอยู่ที่กรุงเทพ",
        ]
    )
    llm = json_reply(
        {
            "where is the db": ["数据库", "杭州", "上海"],
            "minutes": ["議事録", "コンフルエンス"],
            "servers": ["서울"],
            "bangkok": ["กรุงเทพ"],
        }
    )
    result = VocabCalibrator.from_llm(llm).calibrate(memory, dry_run=True)
    assert result.vocab_map == {
        "where is the db": ["数据库", "杭州"],
        "minutes": ["議事録", "コンフルエンス"],
        "servers": ["서울"],
        "bangkok": ["กรุงเทพ"],
    }
    assert result.dropped == ["上海"]


def test_terms_match_other_normal_forms_and_case_foldings() -> None:
    corpus = unicodedata.normalize("NFD", "Le résumé est archivé.") + " HAUPTSTRASSE 5"
    raw = {"summary": ["résumé"], "street": ["Hauptstraße", "Hauptstr"]}
    kept, dropped = filter_vocab_map(raw, corpus)
    assert kept == {"summary": ["résumé"], "street": ["Hauptstraße"]}
    assert dropped == ["Hauptstr"]


@pytest.mark.parametrize(
    ("stored", "reply", "method", "reason"),
    [
        ([], {"how fast": ["latency"]}, "empty", "no_memories"),
        (CORPUS, {}, "empty", "no_terms"),
        (CORPUS, {"how fast": ["warp factor"]}, "empty", "all_dropped"),
        (CORPUS, {"how fast": ["latency"]}, "calibrated", ""),
        (CORPUS, None, "fallback_no_llm", "no_llm"),
    ],
    ids=["no-memories", "no-terms", "all-dropped", "calibrated", "no-llm"],
)
def test_the_result_says_why_no_map_was_built(
    embeddings: HashEmbeddings,
    tmp_path: Path,
    stored: list[str],
    reply: dict[str, list[str]] | None,
    method: str,
    reason: str,
) -> None:
    memory = MemoryStore(Chroma("why", embeddings, persist_directory=str(tmp_path / "why")))
    if stored:
        memory.store_many(stored)
    llm = None if reply is None else json_reply(reply)
    result = VocabCalibrator.from_llm(llm).calibrate(memory)
    assert (result.method, result.reason) == (method, reason)
    assert (result.path is None) == (method != "calibrated")


def _completion(content: str) -> dict[str, Any]:
    choice = {"index": 0, "message": {"role": "assistant", "content": content}}
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{**choice, "finish_reason": "stop"}],
    }


def test_chat_openai_in_auto_mode_is_sent_the_schema(
    memory: MemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json=_completion('{"phrases": {"how fast": ["latency"]}}'))

    calibrator = VocabCalibrator.from_llm(offline_chat_openai(handler))
    with caplog.at_level(logging.WARNING):
        result = calibrator.calibrate(memory, dry_run=True)

    assert not caplog.records
    assert len(bodies) == 1
    schema = bodies[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["phrases"]["type"] == "object"
    assert result.method == "calibrated"
    assert result.vocab_map == {"how fast": ["latency"]}


@pytest.mark.parametrize(
    "reply",
    [{"phrases": {"how fast": ["latency"]}}, {"how fast": ["latency"]}],
    ids=["wrapped", "bare map"],
)
def test_a_wrapped_or_a_bare_map_is_read(memory: MemoryStore, reply: dict[str, Any]) -> None:
    result = VocabCalibrator.from_llm(json_reply(reply)).calibrate(memory, dry_run=True)

    assert result.vocab_map == {"how fast": ["latency"]}


def test_a_phrase_named_like_the_wrapper_is_a_phrase(memory: MemoryStore) -> None:
    reply = {"phrases": ["latency"], "login": ["auth"]}
    result = VocabCalibrator.from_llm(json_reply(reply)).calibrate(memory, dry_run=True)

    assert result.vocab_map == {"phrases": ["latency"], "login": ["auth"]}


def test_the_model_sees_the_newest_current_memories(
    embeddings: HashEmbeddings, tmp_path: Path
) -> None:
    store = Chroma("sample", embeddings, persist_directory=str(tmp_path / "sample"))
    memory = MemoryStore(store)
    old = memory.store("The user lives in Austinville.")
    memory.store("The user lives in Denverton.", supersedes=[old.id])
    memory.store_many([f"Routine note number {i} about the build." for i in range(20)])
    memory.store_many([f"The frobnicator service handles job {i}." for i in range(5)])
    reply = {"background worker": ["frobnicator"], "home town": ["Austinville", "Denverton"]}

    newest = VocabCalibrator.from_llm(json_reply(reply), sample_size=10)
    every = VocabCalibrator.from_llm(json_reply(reply), sample_size=100)

    assert newest.calibrate(memory, dry_run=True).vocab_map == {
        "background worker": ["frobnicator"]
    }
    current = every.calibrate(memory, dry_run=True)
    assert current.vocab_map == {
        "background worker": ["frobnicator"],
        "home town": ["Denverton"],
    }
    assert current.dropped == ["Austinville"]  # only a superseded memory says it


def test_calibrations_in_threads_each_save_a_whole_map(tmp_path: Path) -> None:
    memory = MemoryStore(InMemoryVectorStore(HashEmbeddings()), data_dir=tmp_path)
    memory.store_many([f"term{i} appears in memory {i}." for i in range(40)])
    big = {f"phrase {i}": [f"term{i}"] for i in range(40)}
    small = {"phrase 1": ["term1"]}

    def calibrate(reply: dict[str, Any]) -> None:
        calibrator = VocabCalibrator.from_llm(FakeListChatModel(responses=[json.dumps(reply)]))
        for _ in range(60):
            assert calibrator.calibrate(memory).method == "calibrated"

    assert in_threads(lambda: calibrate(big), lambda: calibrate(small)) == [None, None]
    saved = json.loads((tmp_path / "vocab_map.json").read_text())
    assert saved in (big, small)
    assert memory.vocab_map == saved


def _expanded(retriever: Any, query: str) -> str:
    return " ".join(retriever.decompose(query).queries)


def test_a_forget_takes_the_terms_only_it_held_out_of_the_map(
    memory: MemoryStore, embeddings: HashEmbeddings
) -> None:
    memory.store("Latency alerts page the on-call engineer.")
    reply = {"how fast": ["latency", "p95"], "login": ["tokens"]}
    VocabCalibrator.from_llm(json_reply(reply)).calibrate(memory)
    retriever = memory.as_retriever()
    assert "p95" in _expanded(retriever, "how fast is search")

    forgotten = memory.list(limit=1)[0]
    assert "p95" in forgotten.page_content
    memory.forget(ids=[forgotten.id or ""])

    kept = {"how fast": ["latency"], "login": ["tokens"]}
    assert memory.vocab_map == kept
    assert json.loads((Path(str(memory.data_dir)) / "vocab_map.json").read_text()) == kept
    assert "p95" not in _expanded(retriever, "how fast is search")
    reopened = MemoryStore(Chroma("calib", embeddings, persist_directory=str(memory.data_dir)))
    assert reopened.vocab_map == kept
    assert "p95" not in _expanded(reopened.as_retriever(), "how fast is search")


def test_a_forget_by_query_in_a_view_cleans_the_maps_holding_its_terms(
    memory: MemoryStore,
) -> None:
    alice = memory.scoped({"user_id": "alice"})
    alice.store("My locker code is 4471 zorblax.")
    reply = {"locker": ["zorblax"], "login": ["tokens"]}
    VocabCalibrator.from_llm(json_reply(reply)).calibrate(alice)
    VocabCalibrator.from_llm(json_reply(reply)).calibrate(memory)
    other = memory.scoped({"user_id": "alice"})  # another object over alice's scope
    alice_recall = other.as_retriever()

    alice.forget("my locker code")

    assert memory.vocab_map == {"login": ["tokens"]}
    assert alice.vocab_map is None
    assert other.vocab_map is None
    assert "zorblax" not in _expanded(alice_recall, "what is the locker code")
    data_dir = Path(str(memory.data_dir))
    assert [p for p in data_dir.rglob("vocab_map.json") if "zorblax" in p.read_text()] == []


def test_deleting_a_scope_deletes_the_map_built_from_it(memory: MemoryStore) -> None:
    alice = memory.scoped({"user_id": "alice"})
    alice.store("My locker code is 4471 zorblax.")
    VocabCalibrator.from_llm(json_reply({"locker": ["zorblax"]})).calibrate(alice)
    assert alice.state is not None
    assert alice.state.read("vocab_map.json") is not None

    memory.delete_scope({"user_id": "alice"})

    assert alice.state.read("vocab_map.json") is None
    assert alice.vocab_map is None


def test_a_calibration_finding_no_memories_deletes_the_saved_map(memory: MemoryStore) -> None:
    VocabCalibrator.from_llm(json_reply({"how fast": ["latency"]})).calibrate(memory)
    memory.vectorstore.delete([doc.id or "" for doc in memory.list()])  # not through forget

    result = VocabCalibrator.from_llm(json_reply({"x": ["y"]})).calibrate(memory)

    assert result.reason == "no_memories"
    assert memory.vocab_map is None
    assert not (Path(str(memory.data_dir)) / "vocab_map.json").exists()
