"""Versions over HTTP: supersession on /add and /flush, current-only reads, as_of, history, forget.

FastAPI's test client over an in-memory (or, for snapshots, a persistent) Chroma store
with hashing embeddings; the supersession judge runs on a scripted chat model.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from langchain_chroma import Chroma
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from cogito_lc import MemoryStore, SupersessionJudge
from cogito_lc.service.config import CogitoSettings
from cogito_lc.service.models import judge_from_settings
from cogito_lc.service.server import create_app
from tests.unit_tests.conftest import HashEmbeddings
from tests.unit_tests.fakes import ScriptedChatModel

AUSTIN = "I just moved to Austin, Texas, and I live downtown."
DENVER = "I live in Denver now, all settled in."
PHONE = "My phone number is 555-0101."
LUNCH = "Lunch today was a bowl of ramen."
SUPERSEDES_FIRST = '{"supersedes": [1], "repeats": []}'
READS = ("/query", "/recall_b", "/recall")
ALICE = {"X-Cogito-User": "alice"}
BOB = {"X-Cogito-User": "bob"}


def _judge(*replies: Any) -> SupersessionJudge:
    return SupersessionJudge.from_llm(ScriptedChatModel(replies=list(replies)))


class MovingJudgeModel(ScriptedChatModel):
    """A judge's model that knows one fact: a new home supersedes the old one."""

    replies: list[Any] = Field(default_factory=list)

    def _respond(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> ChatResult:
        self.calls.append({"messages": messages, "kwargs": kwargs})
        prompt = "\n".join(str(m.content) for m in messages)
        new = prompt.split("New memory:", 1)[1].split("\n", 1)[0]
        numbers = [
            int(line[1 : line.index("]")])
            for line in prompt.splitlines()
            if line.startswith("[") and "Austin" in line
        ]
        supersedes = numbers if "Denver" in new else []
        reply = json.dumps({"supersedes": supersedes, "repeats": []})
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])


def _settings(tmp_path: Path, **values: Any) -> CogitoSettings:
    return CogitoSettings(store_path=tmp_path / "store", allow_request_scope=True, **values)


@pytest.fixture
def memory(chroma: Chroma) -> MemoryStore:
    return MemoryStore(chroma, scope={"user_id": "agent"}, judge=_judge(SUPERSEDES_FIRST))


@pytest.fixture
def client(tmp_path: Path, memory: MemoryStore) -> Iterator[TestClient]:
    with TestClient(
        create_app(_settings(tmp_path), memory=memory), base_url="http://127.0.0.1"
    ) as test_client:
        yield test_client


def _ids(client: TestClient, path: str, body: dict[str, Any], **kwargs: Any) -> list[str]:
    response = client.post(path, json={"limit": 10, **body}, **kwargs)
    assert response.status_code == 200, response.text
    return [hit["id"] for hit in response.json()["memories"]]


def _listed(client: TestClient, **params: Any) -> list[str]:
    response = client.get("/memories", params={"limit": 200, **params})
    assert response.status_code == 200, response.text
    return [record["id"] for record in response.json()["memories"]]


def _moved(client: TestClient, **headers: str) -> tuple[str, str, dict[str, Any]]:
    """Austin, then Denver superseding it; the ids and Denver's /add answer."""
    old = client.post("/add", json={"text": AUSTIN}, headers=headers).json()
    new = client.post("/add", json={"text": DENVER}, headers=headers)
    assert new.status_code == 200, new.text
    return old["ids"][0], new.json()["ids"][0], new.json()


def test_add_supersedes_and_says_what_it_replaced(client: TestClient) -> None:
    first = client.post("/add", json={"text": AUSTIN}).json()
    assert first["supersession"] == "skipped_empty"  # nothing to supersede yet
    old, new, answer = _moved(client)
    assert answer["superseded"] == [old]
    assert answer["supersession"] == "judged"
    assert answer["repeated"] == []
    assert answer["forgotten"] == []
    assert answer["memories"] == [DENVER]
    record = client.get(f"/memories/{old}").json()
    assert record["text"] == AUSTIN  # kept verbatim, only marked
    assert record["metadata"]["superseded_by"] == new
    assert json.loads(client.get(f"/memories/{new}").json()["metadata"]["supersedes"]) == [old]


def test_reads_return_current_memories_unless_asked(client: TestClient) -> None:
    old, new, _ = _moved(client)
    question = {"text": "where do I live"}
    for path in READS:
        assert _ids(client, path, question) == [new], path
        both = _ids(client, path, {**question, "include_superseded": True})
        assert set(both) == {old, new}, path
    assert set(_listed(client)) == {old, new}  # a listing shows every version by default
    assert _listed(client, include_superseded="false") == [new]
    listed = client.get("/memories", params={"include_superseded": "false"}).json()
    assert listed["total"] == 1


def test_as_of_reads_what_was_current_then(client: TestClient, memory: MemoryStore) -> None:
    old_doc = memory.store(AUSTIN, created_at="2026-01-01T00:00:00Z")
    new_doc = memory.store(DENVER, created_at="2026-03-01T00:00:00Z", supersedes=[old_doc.id or ""])
    question = {"text": "where do I live", "as_of": "2026-02-01T00:00:00Z"}
    for path in READS:
        assert _ids(client, path, question) == [old_doc.id], path
        later = {**question, "as_of": "2026-03-02T00:00:00Z"}
        assert _ids(client, path, later) == [new_doc.id], path
    assert _listed(client, as_of="2026-02-01T00:00:00Z") == [old_doc.id]
    streamed = client.post("/recall/stream", json=question).text
    assert old_doc.id in streamed
    assert new_doc.id not in streamed


@pytest.mark.parametrize("as_of", ["future", "last tuesday"])
def test_a_bad_as_of_is_a_422_naming_it_on_every_read(client: TestClient, as_of: str) -> None:
    client.post("/store", json={"text": AUSTIN})
    when = (
        (datetime.now(timezone.utc) + timedelta(days=1)).isoformat() if as_of == "future" else as_of
    )
    for path in (*READS, "/recall/stream"):
        response = client.post(path, json={"text": "where", "as_of": when})
        assert response.status_code == 422, (path, response.text)
        assert response.json()["errors"][0]["field"] == "as_of", path
        assert response.json()["detail"].startswith("as_of:"), path
    listed = client.get("/memories", params={"as_of": when})
    assert listed.status_code == 422, listed.text
    assert listed.json()["errors"][0]["field"] == "as_of"


def test_an_as_of_the_store_refuses_after_validation_is_a_422(
    client: TestClient, memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.store(AUSTIN)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        msg = "as_of=2001-01-01T00:00:00+00:00 is before every memory in scope"
        raise ValueError(msg)

    monkeypatch.setattr(MemoryStore, "search", refuse)
    response = client.post("/query", json={"text": "where", "as_of": "2001-01-01T00:00:00Z"})
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["field"] == "as_of"
    assert "before every memory" in response.json()["detail"]


def test_supersession_can_be_turned_off_per_request(client: TestClient) -> None:
    client.post("/add", json={"text": AUSTIN})
    kept = client.post("/add", json={"text": DENVER, "supersede": False}).json()
    assert kept["superseded"] == []
    assert kept["supersession"] is None
    assert len(_ids(client, "/query", {"text": "where do I live"})) == 2


def test_history_is_the_chain_oldest_first_and_404_elsewhere(client: TestClient) -> None:
    old, new, _ = _moved(client, **ALICE)
    for member in (old, new):
        answer = client.get(f"/history/{member}", headers=ALICE)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert [v["id"] for v in body["versions"]] == [old, new]
        assert [v["text"] for v in body["versions"]] == [AUSTIN, DENVER]
        assert body["current"] == new
        assert body["id"] == member
    for path, headers in (
        (f"/history/{old}", BOB),
        (f"/history/{old}", {}),
        ("/history/nope", ALICE),
    ):
        refused = client.get(path, headers=headers)
        assert refused.status_code == 404, (path, headers)
        assert AUSTIN not in refused.text


def test_forget_by_ids_removes_every_version_from_every_read(client: TestClient) -> None:
    old, new, _ = _moved(client, **ALICE)
    lunch = client.post("/store", json={"text": LUNCH}, headers=ALICE).json()["id"]
    answer = client.post("/forget", json={"ids": [new], "reason": "user asked"}, headers=ALICE)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert set(body["ids"]) == {old, new}
    assert body["count"] == 2
    assert body["method"] == "ids"
    audit = body["audit"]
    assert set(audit["ids"]) == {old, new}
    assert audit["scope"] == {"user_id": "alice"}
    assert audit["reason"] == "user asked"
    assert audit["event"] == "forget"
    assert "Austin" not in json.dumps(audit)
    assert "Denver" not in json.dumps(audit)
    for gone in (old, new):
        assert client.get(f"/memories/{gone}", headers=ALICE).status_code == 404
        assert client.get(f"/history/{gone}", headers=ALICE).status_code == 404
    question = {"text": "Austin Denver where do I live", "include_superseded": True}
    for path in READS:
        assert set(_ids(client, path, question, headers=ALICE)) <= {lunch}, path
    past = {"text": "where do I live", "as_of": "2026-01-01T00:00:00Z"}
    for path in READS:
        response = client.post(path, json=past, headers=ALICE)
        assert response.status_code in {200, 422}, response.text
        assert old not in response.text
    listed = client.get("/memories", headers=ALICE).json()
    assert [m["id"] for m in listed["memories"]] == [lunch]
    assert listed["total"] == 1


def test_forget_by_query_and_what_it_refuses(client: TestClient, memory: MemoryStore) -> None:
    phone = client.post("/store", json={"text": PHONE}, headers=ALICE).json()["id"]
    bobs = client.post("/store", json={"text": PHONE}, headers=BOB).json()["id"]
    client.post("/store", json={"text": LUNCH}, headers=ALICE)
    answer = client.post("/forget", json={"query": "my phone number"}, headers=ALICE).json()
    assert answer["ids"] == [phone]
    assert answer["method"] == "matched"
    assert client.get(f"/memories/{bobs}", headers=BOB).status_code == 200  # another scope
    nothing = client.post("/forget", json={"query": "my phone number"}, headers=ALICE)
    assert nothing.status_code == 404
    assert nothing.json()["detail"] == "no memory in this scope matches the query"
    theirs = client.post("/forget", json={"ids": [bobs]}, headers=ALICE)
    assert theirs.status_code == 404
    assert "555" not in theirs.text
    assert memory.get(bobs, scope={"user_id": "bob"}) is not None
    for body, field in (
        ({}, "query"),
        ({"query": "x", "ids": ["y"]}, "ids"),
        ({"ids": []}, "ids"),
        ({"query": None}, "query"),
        ({"query": " "}, "query"),
        ({"ids": ["a"], "reason": ""}, "reason"),
        ({"ids": ["a"], "colour": "red"}, "colour"),
    ):
        refused = client.post("/forget", json=body, headers=ALICE)
        assert refused.status_code == 422, (body, refused.text)
        assert refused.json()["errors"][0]["field"] == field, body


def test_delete_forgets_every_version_and_keeps_an_audit(tmp_path: Path) -> None:
    chroma = Chroma("versions-delete", HashEmbeddings(), persist_directory=str(tmp_path / "c"))
    memory = MemoryStore(chroma, scope={"user_id": "agent"}, judge=_judge(SUPERSEDES_FIRST))
    with TestClient(
        create_app(_settings(tmp_path), memory=memory), base_url="http://127.0.0.1"
    ) as client:
        old, new, _ = _moved(client)
        client.post("/store", json={"text": LUNCH})
        assert client.post("/snapshot/build", json={"rebuild": True}).json()["saved"] is True
        assert client.get("/snapshot").status_code == 200
        deleted = client.delete(f"/memories/{old}")
        assert deleted.status_code == 200, deleted.text
        assert deleted.json()["id"] == old
        assert set(deleted.json()["forgotten"]) == {old, new}
        assert client.get(f"/memories/{new}").status_code == 404
        assert client.get("/snapshot").status_code == 404  # it held their text
        assert client.delete(f"/memories/{old}").status_code == 404
    audits = [json.loads(p.read_text()) for p in (tmp_path / "c").glob("forget-audit-*.json")]
    assert [set(record["ids"]) for record in audits] == [{old, new}]
    assert audits[0]["reason"] == "delete"


def test_a_forget_request_sent_to_add_forgets_instead_of_storing(client: TestClient) -> None:
    phone = client.post("/store", json={"text": PHONE}).json()["id"]
    client.post("/store", json={"text": LUNCH})
    answer = client.post("/add", json={"text": "Please forget my phone number."}).json()
    assert answer["method"] == "forgotten"
    assert answer["forgotten"] == [phone]
    assert answer["count"] == 0
    assert all("555" not in m["text"] for m in client.get("/memories").json()["memories"])


def test_flush_supersedes_and_honours_forget_requests(
    client: TestClient, memory: MemoryStore
) -> None:
    model = MovingJudgeModel()
    memory.judge = SupersessionJudge.from_llm(model)
    chat = [
        {"role": "user", "content": AUSTIN},
        {"role": "user", "content": PHONE},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "Please forget my phone number."},
        {"role": "user", "content": DENVER},
    ]
    answer = client.post("/flush", json={"messages": chat, "session_id": "s1", "window_size": 1})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    texts = {m["id"]: m["text"] for m in client.get("/memories").json()["memories"]}
    assert set(texts.values()) == {f"user: {AUSTIN}", "assistant: Noted.", f"user: {DENVER}"}
    assert body["windows"] == 4  # the forget request is no window of its own
    assert len(body["forgotten"]) == 1
    assert body["forgotten"][0] not in texts
    austin = next(i for i, t in texts.items() if AUSTIN in t)
    denver = next(i for i, t in texts.items() if DENVER in t)
    assert body["superseded"] == [austin]
    assert body["ids"][-1] == denver
    assert "judged" in body["supersession"].split(",")
    assert austin not in _ids(client, "/query", {"text": "where do I live"})
    assert model.calls  # the store's judge was asked


def test_a_service_with_a_model_judges_by_default(tmp_path: Path, chroma: Chroma) -> None:
    settings = _settings(
        tmp_path, filter_model="openai:gemma-3-270m", filter_endpoint="http://127.0.0.1:9/v1"
    )
    judge = judge_from_settings(settings)
    assert judge is not None
    assert judge.structured_output == settings.llm_structured_output
    assert judge.timeout == settings.filter_timeout_ms / 1000
    assert judge_from_settings(settings.model_copy(update={"supersession": False})) is None
    assert judge_from_settings(_settings(tmp_path)) is None
    memory = MemoryStore(chroma, scope={"user_id": "agent"})
    app = create_app(settings, memory=memory)
    service = app.state.service
    assert isinstance(memory.judge, SupersessionJudge)
    assert service.view("carol").memory.judge is memory.judge  # every scope judges alike
    off = MemoryStore(chroma, scope={"user_id": "agent"})
    create_app(settings.model_copy(update={"supersession": False}), memory=off)
    assert off.judge is None


def test_supersession_setting_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from cogito_lc.service.config import load_settings

    monkeypatch.setenv("COGITO_SUPERSESSION", "false")
    assert load_settings().supersession is False
    monkeypatch.setenv("COGITO_SUPERSESSION", "true")
    assert load_settings().supersession is True


def test_store_can_name_what_a_memory_supersedes(client: TestClient) -> None:
    old = client.post("/store", json={"text": AUSTIN}, headers=ALICE).json()["id"]
    new = client.post(
        "/store", json={"text": DENVER, "supersedes": [old, old]}, headers=ALICE
    )  # a repeated id is one
    assert new.status_code == 200, new.text
    new_id = new.json()["id"]
    history = client.get(f"/history/{old}", headers=ALICE).json()
    assert [v["id"] for v in history["versions"]] == [old, new_id]
    assert _ids(client, "/query", {"text": "where do I live"}, headers=ALICE) == [new_id]
    again = client.post("/store", json={"text": "Boston.", "supersedes": [old]}, headers=ALICE)
    assert again.status_code == 404  # no longer current
    theirs = client.post("/store", json={"text": "Mine.", "supersedes": [new_id]}, headers=BOB)
    assert theirs.status_code == 404  # another scope's memory
    assert (
        client.get(f"/memories/{new_id}", headers=ALICE).json()["metadata"].get("superseded_by")
        is None
    )
    for body, field in (
        ({"text": "x", "supersedes": []}, "supersedes"),
        ({"text": "x", "supersedes": "abc"}, "supersedes"),
        ({"text": "", "supersedes": [new_id]}, "text"),
    ):
        refused = client.post("/store", json=body, headers=ALICE)
        assert refused.status_code == 422, refused.text
        assert refused.json()["errors"][0]["field"] == field
    bobs = client.post("/store", json={"text": "Bob's place."}, headers=BOB).json()["id"]
    taken = client.post(
        "/store", json={"text": "Other.", "id": old, "supersedes": [bobs]}, headers=BOB
    )
    assert taken.status_code == 409  # the id is alice's memory
    assert "Austin" not in taken.text


def test_a_404_for_named_ids_names_those_not_found_and_nothing_of_other_scopes(
    client: TestClient,
) -> None:
    old = client.post("/store", json={"text": AUSTIN}, headers=ALICE).json()["id"]
    bobs = client.post("/store", json={"text": PHONE}, headers=BOB).json()["id"]
    expected = {
        bobs: f'supersedes names memories that are not current in this scope: ["{bobs}"]',
        "never-stored": (
            'supersedes names memories that are not current in this scope: ["never-stored"]'
        ),
    }
    for missing, detail in expected.items():
        refused = client.post(
            "/store", json={"text": DENVER, "supersedes": [old, missing]}, headers=ALICE
        )
        assert refused.status_code == 404
        assert refused.json() == {"detail": detail}  # the same for another scope's id
        forget = client.post("/forget", json={"ids": [missing, old]}, headers=ALICE)
        assert forget.status_code == 404
        assert forget.json() == {"detail": f'no memory of this scope has these ids: ["{missing}"]'}
    assert client.get(f"/memories/{old}", headers=ALICE).status_code == 200  # nothing forgotten
    assert _ids(client, "/query", {"text": "where do I live"}, headers=ALICE) == [old]


def test_forget_takes_a_repeated_id_once(client: TestClient) -> None:
    phone = client.post("/store", json={"text": PHONE}).json()["id"]
    answer = client.post("/forget", json={"ids": [phone, phone]})
    assert answer.status_code == 200, answer.text
    assert answer.json()["ids"] == [phone]


def test_asking_for_supersession_without_a_model_says_so(tmp_path: Path, chroma: Chroma) -> None:
    memory = MemoryStore(chroma, scope={"user_id": "agent"})
    with TestClient(
        create_app(_settings(tmp_path), memory=memory), base_url="http://127.0.0.1"
    ) as client:
        client.post("/store", json={"text": AUSTIN})
        default = client.post("/add", json={"text": DENVER}).json()
        assert default["supersession"] is None  # no model: no judge asked
        asked = client.post("/add", json={"text": "Boston now.", "supersede": True}).json()
        assert asked["supersession"] == "fallback_no_llm"
        assert asked["superseded"] == []
        chat = {"messages": [{"role": "user", "content": "x"}], "session_id": "s"}
        refused = client.post("/flush", json={**chat, "supersede": "yes"})
        assert refused.status_code == 422
        assert refused.json()["errors"][0]["field"] == "supersede"
    assert memory.count() == 3


def test_listing_refuses_unknown_query_parameters(client: TestClient) -> None:
    for query in ("?=0.0", "?limt=5", "?limit=5&colour=red"):
        response = client.get(f"/memories{query}")
        assert response.status_code == 422, query
    assert client.get("/memories?limit=5&include_superseded=false").status_code == 200


def test_store_cannot_supersede_a_memory_of_a_narrower_scope(
    client: TestClient, memory: MemoryStore
) -> None:
    helpdesk = memory.store(AUSTIN, scope={"user_id": "alice", "agent_id": "helpdesk"})
    refused = client.post(
        "/store", json={"text": DENVER, "supersedes": [helpdesk.id]}, headers=ALICE
    )
    assert refused.status_code == 409, refused.text
    assert "narrower scope" in refused.json()["detail"]
    listed = client.get("/memories", headers=ALICE).json()["memories"]
    assert [record["id"] for record in listed] == [helpdesk.id]
