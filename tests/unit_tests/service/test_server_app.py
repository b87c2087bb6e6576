"""The HTTP app in process: schema, scopes, conflicts, error mapping, threads, guards.

The end-to-end tests over a real uvicorn process are in
``tests/integration_tests/service/test_server.py``; these use FastAPI's test client with
hashing embeddings and an in-memory Chroma store, to reach the failure paths.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import sys
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from fastapi import HTTPException
from fastapi.exceptions import RequestValidationError
from fastapi.testclient import TestClient
from langchain_chroma import Chroma
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from pydantic import ValidationError

from cogito_lc import FactExtractor, MemoryStore
from cogito_lc.embeddings import LazyEmbeddings
from cogito_lc.service._batch import PendingStore, StoreBatcher, store_batch
from cogito_lc.service._guard import ConcurrencyLimitMiddleware, token_matches
from cogito_lc.service._schemas import (
    USER_PATTERN,
    CalibrateRequest,
    SnapshotBuildRequest,
    request_models,
)
from cogito_lc.service.config import CogitoSettings, ConfigError
from cogito_lc.service.models import embeddings_from_settings
from cogito_lc.service.server import check_bind, create_app, main
from cogito_lc.service.ui._sessions import MAX_FAILED_LOGINS
from cogito_lc.stores import SqliteLexicalIndex, lexical_sync_for
from tests.unit_tests.conftest import HashEmbeddings

TOKEN = "unit-token"  # noqa: S105 - a test value


def _settings(tmp_path: Path, **values: Any) -> CogitoSettings:
    return CogitoSettings(store_path=tmp_path / "store", **values)


@pytest.fixture
def memory(chroma: Chroma) -> MemoryStore:
    return MemoryStore(chroma, scope={"user_id": "agent"})


@pytest.fixture
def client(tmp_path: Path, memory: MemoryStore) -> Iterator[TestClient]:
    app = create_app(_settings(tmp_path, allow_request_scope=True), memory=memory)
    with TestClient(app, raise_server_exceptions=False, base_url="http://127.0.0.1") as test_client:
        yield test_client


def test_openapi_lists_every_endpoint_with_strict_bodies(
    tmp_path: Path, memory: MemoryStore
) -> None:
    app = create_app(_settings(tmp_path, max_text_chars=500, api_token=TOKEN), memory=memory)
    schema = app.openapi()
    operations = {(m.upper(), p) for p, item in schema["paths"].items() for m in item}
    assert operations == {
        ("GET", "/health"),
        ("GET", "/snapshot"),
        ("POST", "/query"),
        ("POST", "/recall_b"),
        ("POST", "/recall"),
        ("POST", "/recall/stream"),
        ("POST", "/store"),
        ("POST", "/add"),
        ("POST", "/flush"),
        ("GET", "/memories"),
        ("GET", "/memories/{id}"),
        ("DELETE", "/memories/{id}"),
        ("GET", "/history/{id}"),
        ("POST", "/forget"),
        ("POST", "/snapshot/build"),
        ("POST", "/calibrate"),
    }
    components = schema["components"]["schemas"]
    for name in ("QueryRequest", "RecallRequest", "StoreRequest", "AddRequest", "ForgetRequest"):
        assert components[name]["additionalProperties"] is False
    assert components["ForgetRequest"]["oneOf"] == [{"required": ["query"]}, {"required": ["ids"]}]
    for name in ("query", "ids"):  # optional, never null: a null would pass as absent
        assert "anyOf" not in components["ForgetRequest"]["properties"][name]
    assert components["RecallRequest"]["properties"]["as_of"]["anyOf"][0]["format"] == ("date-time")
    listing = {p["name"] for p in schema["paths"]["/memories"]["get"]["parameters"]}
    assert {"include_superseded", "as_of"} <= listing
    assert components["StoreRequest"]["properties"]["text"]["maxLength"] == 500
    assert "HTTPBearer" in schema["components"]["securitySchemes"]
    assert "401" in schema["paths"]["/store"]["post"]["responses"]
    assert "security" not in schema["paths"]["/health"]["get"]


def test_health_reports_the_default_scope(client: TestClient) -> None:
    client.post("/store", json={"text": "Deploys freeze on Fridays."})
    client.post("/store", json={"text": "Other tenant."}, headers={"X-Cogito-User": "bob"})
    health = client.get("/health").json()
    assert health["status"] == "ok"
    assert health["count"] == 1
    assert health["calibrated"] is False
    assert health["snapshot"] is False


def test_per_request_scope_is_refused_when_not_allowed(tmp_path: Path, memory: MemoryStore) -> None:
    app = create_app(_settings(tmp_path), memory=memory)
    with TestClient(app, base_url="http://127.0.0.1") as test_client:
        header = test_client.post(
            "/store", json={"text": "x"}, headers={"X-Cogito-User": "mallory"}
        )
        body = test_client.post("/store", json={"text": "x", "user_id": "mallory"})
        listed = test_client.get("/memories", headers={"X-Cogito-User": "mallory"})
    for response in (header, body, listed):
        assert response.status_code == 403
        assert "allow_request_scope" in response.json()["detail"]
    assert memory.count() == 0


@pytest.mark.parametrize("user", ["zoë", "张三", "देवनागरी", "team_a:alice@example.com"])
def test_a_user_id_of_any_script_names_a_scope_in_the_body_and_the_header(
    client: TestClient, memory: MemoryStore, user: str
) -> None:
    stored = client.post("/store", json={"text": f"A note of {user}.", "user_id": user})
    assert stored.status_code == 200, stored.text
    encoded = {"X-Cogito-User": quote(user, safe="")}
    raw_utf8 = {"X-Cogito-User": user.encode()}  # the bytes themselves, as curl sends them
    for headers in (encoded, raw_utf8):
        listed = client.get("/memories", headers=headers)
        assert [m["text"] for m in listed.json()["memories"]] == [f"A note of {user}."]
    both = client.post("/store", json={"text": "Both name it.", "user_id": user}, headers=encoded)
    assert both.status_code == 200  # the header and the body name one scope
    assert memory.count() == 0  # nothing went to the default scope


@pytest.mark.parametrize("user", ["_x", "a b", "bob\n", "a%b", "🦄"])
def test_an_invalid_user_id_is_refused_with_what_a_user_id_holds(
    client: TestClient, user: str
) -> None:
    in_body = client.post("/store", json={"text": "x", "user_id": user})
    in_header = client.get("/memories", headers={"X-Cogito-User": quote(user, safe="")})
    for response, field in ((in_body, "user_id"), (in_header, "x-cogito-user")):
        assert response.status_code == 422
        error = response.json()["errors"][0]
        assert error["field"] == field
        assert "letter or digit (of any script)" in error["message"]


def test_openapi_publishes_the_user_id_pattern_and_the_encoded_header(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    user_id = schema["components"]["schemas"]["StoreRequest"]["properties"]["user_id"]
    assert user_id["anyOf"][0]["pattern"] == USER_PATTERN
    parameters = schema["paths"]["/memories"]["get"]["parameters"]
    header = next(p for p in parameters if p["name"] == "x-cogito-user")
    assert "zo%C3%AB" in header["description"]
    # An ASCII id: every header the schema allows is one the server takes; a
    # percent-encoded id is taken beyond it (no pattern can say "valid UTF-8 letters").
    assert header["schema"]["pattern"] == "^[A-Za-z0-9][A-Za-z0-9_.:@+-]*$"
    assert header["schema"]["maxLength"] == 128
    long_id = client.get("/memories", headers={"X-Cogito-User": "a" * 2000})
    assert long_id.status_code == 422
    assert "at most 128 characters" in long_id.text


def test_explicit_id_of_another_memory_is_a_conflict(client: TestClient) -> None:
    alice = {"X-Cogito-User": "alice"}
    first = client.post("/store", json={"text": "Alice's secret", "id": "m-1"}, headers=alice)
    assert first.status_code == 200
    again = client.post("/store", json={"text": "Alice's secret", "id": "m-1"}, headers=alice)
    assert again.status_code == 200  # the same memory again: idempotent
    changed = client.post("/store", json={"text": "Different", "id": "m-1"}, headers=alice)
    assert changed.status_code == 409
    stolen = client.post(
        "/store", json={"text": "Bob's text", "id": "m-1"}, headers={"X-Cogito-User": "bob"}
    )
    assert stolen.status_code == 409
    assert "secret" not in stolen.text
    assert client.get("/memories/m-1", headers=alice).json()["text"] == "Alice's secret"


@pytest.mark.parametrize("doc_id", ["ops/deploy-key", "a/b/", "with space", "x" * 256])
def test_any_id_the_library_holds_is_read_and_deleted_over_http(
    client: TestClient, memory: MemoryStore, doc_id: str
) -> None:
    memory.store("The deploy key rotates monthly.", id=doc_id)
    path = quote(doc_id, safe="")
    got = client.get(f"/memories/{path}")
    assert (got.status_code, got.json().get("id")) == (200, doc_id), got.text
    history = client.get(f"/history/{path}")
    assert [version["id"] for version in history.json()["versions"]] == [doc_id], history.text
    deleted = client.delete(f"/memories/{path}")
    assert deleted.json()["forgotten"] == [doc_id], deleted.text
    assert memory.get(doc_id) is None
    assert client.get(f"/memories/{path}").json()["detail"] != "Not Found"  # the memory's 404


def test_a_path_with_no_id_is_the_listing_or_not_found(
    client: TestClient, memory: MemoryStore
) -> None:
    memory.store("The deploy key rotates monthly.", id="a")
    listing = client.get("/memories/?limit=1", follow_redirects=False)
    assert listing.status_code == 307
    assert listing.headers["location"].endswith("/memories?limit=1")
    assert [m["id"] for m in client.get("/memories/?limit=1").json()["memories"]] == ["a"]
    assert client.get("/history/").status_code == 404
    assert client.delete("/memories/").status_code == 405  # the listing reads only
    assert memory.get("a") is not None


def test_ids_the_store_derives_from_a_given_one_are_read_and_forgotten_over_http(
    client: TestClient, memory: MemoryStore
) -> None:
    longest = "k" * 256
    first = memory.store("Alice lives in Austin.", id=longest)
    moved = memory.store("Alice lives in Denver.", supersedes=[longest])
    back = memory.store("Alice lives in Austin.", id=longest, supersedes=[moved.id or ""])
    assert back.id != first.id  # said again after it was superseded: a version of its own
    history = client.get(f"/history/{quote(back.id or '', safe='')}")
    assert [v["id"] for v in history.json()["versions"]] == [longest, moved.id, back.id]
    forgot = client.post("/forget", json={"ids": [back.id]})
    assert set(forgot.json()["ids"]) == {longest, moved.id, back.id}, forgot.text


def test_add_stores_facts_or_the_text_when_extraction_fails(tmp_path: Path, chroma: Chroma) -> None:
    facts = json.dumps([{"content": "Billing runs on PostgreSQL.", "kind": "decision"}])
    for reply, method, stored in (
        (facts, "facts", ["Billing runs on PostgreSQL."]),
        ("not json at all", "fallback_verbatim", ["We moved billing to Postgres last week."]),
    ):
        extractor = FactExtractor.from_llm(FakeListChatModel(responses=[reply]))
        memory = MemoryStore(chroma, extractor=extractor, scope={"user_id": method})
        with TestClient(
            create_app(_settings(tmp_path), memory=memory), base_url="http://127.0.0.1"
        ) as test_client:
            added = test_client.post(
                "/add", json={"text": "We moved billing to Postgres last week."}
            ).json()
        assert added["method"] == method
        assert added["memories"] == stored
        assert added["count"] == 1


def test_recall_reports_the_filter_method(client: TestClient) -> None:
    client.post("/store", json={"text": "Auth tokens expire after 3600 seconds."})
    client.post("/store", json={"text": "We chose PostgreSQL for billing."})
    service = client.app.state.service  # type: ignore[attr-defined]
    service.options.filter_llm = FakeListChatModel(responses=["[1]"] * 3)
    answer = client.post("/recall", json={"text": "auth token lifetime", "limit": 5}).json()
    assert answer["method"] == "filter"
    assert answer["recall_method"].startswith("decompose_")
    assert len(answer["memories"]) == 1


def test_store_failure_is_503_without_details(tmp_path: Path, embeddings: HashEmbeddings) -> None:
    store = Chroma(collection_name="vanishing-store", embedding_function=embeddings)
    app = create_app(_settings(tmp_path), memory=MemoryStore(store))
    with TestClient(app, raise_server_exceptions=False, base_url="http://127.0.0.1") as test_client:
        test_client.post("/store", json={"text": "Something."})
        store._client.delete_collection("vanishing-store")  # gone under the running service
        responses = [
            test_client.post("/query", json={"text": "something"}),
            test_client.post("/store", json={"text": "Something else."}),
            test_client.get("/memories"),
        ]
    for response in responses:
        assert response.status_code == 503
        assert response.json() == {"detail": "the memory store is unavailable; retry later"}


class _Unreachable(HashEmbeddings):
    def embed_query(self, text: str) -> list[float]:
        request = httpx.Request("POST", "http://127.0.0.1:9/api/embed")
        msg = "connection refused"
        raise httpx.ConnectError(msg, request=request)


def test_unreachable_model_is_502(tmp_path: Path) -> None:
    store = Chroma(collection_name="unreachable-embeddings", embedding_function=_Unreachable())
    memory = MemoryStore(store)
    app = create_app(_settings(tmp_path), memory=memory)
    with TestClient(app, raise_server_exceptions=False, base_url="http://127.0.0.1") as test_client:
        response = test_client.post("/query", json={"text": "anything"})
    store.delete_collection()
    assert response.status_code == 502
    assert "127.0.0.1:9" not in response.text


def test_an_embedding_model_without_its_extra_is_500_with_the_install_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "langchain_ollama", None)  # the ollama extra is missing
    settings = _settings(tmp_path, embed_model="ollama:nomic-embed-text")
    embeddings = LazyEmbeddings(partial(embeddings_from_settings, settings))
    store = Chroma("no-extra", embeddings, persist_directory=str(tmp_path / "chroma"))
    app = create_app(settings, memory=MemoryStore(store))
    with TestClient(app, raise_server_exceptions=False, base_url="http://127.0.0.1") as test_client:
        stored = test_client.post("/store", json={"text": "Auth tokens expire after 3600 s."})
        queried = test_client.post("/query", json={"text": "auth"})
    for response in (stored, queried):
        assert response.status_code == 500
        assert 'pip install "cogito-lc[ollama]"' in response.json()["detail"]
    index = lexical_sync_for(store).index  # type: ignore[union-attr]
    assert index.pending() == set()  # a write that could not embed is not left half done


def test_a_bug_is_500_without_traceback_or_message(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any) -> int:
        msg = "boom in /srv/secret/path"
        raise RuntimeError(msg)

    monkeypatch.setattr(client.app.state.service, "count", broken)  # type: ignore[attr-defined]
    response = client.get("/health")
    assert response.status_code == 500
    assert response.json() == {"detail": "internal server error"}


def test_blocking_work_runs_off_the_event_loop(
    client: TestClient, memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    real_store, real_count = memory.store_many_created, memory.count

    def on_loop() -> bool:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return False
        return True

    def store(*args: Any, **kwargs: Any) -> Any:
        seen.append(on_loop())
        return real_store(*args, **kwargs)

    def count(*args: Any, **kwargs: Any) -> int:
        seen.append(on_loop())
        return real_count(*args, **kwargs)

    monkeypatch.setattr(memory, "store_many_created", store)
    monkeypatch.setattr(memory, "count", count)
    assert client.post("/store", json={"text": "Off the loop."}).status_code == 200
    assert client.get("/memories").status_code == 200
    assert seen == [False, False]


def test_snapshot_build_takes_an_empty_body(client: TestClient) -> None:
    client.post("/store", json={"text": "The billing service listens on port 8083."})
    built = client.post("/snapshot/build")
    assert built.status_code == 200
    assert built.json()["method"] == "grouped|fallback_no_llm"
    assert built.json()["saved"] is False  # an in-memory store has nowhere to save it
    assert client.get("/snapshot").status_code == 404


def test_auth_applies_to_docs_and_schema_too(tmp_path: Path, memory: MemoryStore) -> None:
    app = create_app(_settings(tmp_path, api_token=TOKEN), memory=memory)
    with TestClient(app, base_url="http://127.0.0.1") as test_client:
        assert test_client.get("/health").status_code == 200
        assert test_client.get("/openapi.json").status_code == 401
        assert test_client.get("/docs").status_code == 401
        good = {"Authorization": f"Bearer {TOKEN}"}
        assert test_client.get("/openapi.json", headers=good).status_code == 200
        missing = test_client.post("/store", content=b"{not json")
        assert missing.status_code == 401  # before the body is even parsed


def test_token_matching() -> None:
    assert token_matches("Bearer abc", b"abc")
    assert token_matches("bearer abc", b"abc")
    assert not token_matches("Bearer abcd", b"abc")
    assert not token_matches("Basic abc", b"abc")
    assert not token_matches(None, b"abc")
    assert not token_matches("Bearer \udcff", b"abc")


async def test_busy_server_answers_503_with_retry_after() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:  # pragma: no cover - not reached
        raise AssertionError

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:  # pragma: no cover - not reached
        return {"type": "http.request", "body": b""}

    guard = ConcurrencyLimitMiddleware(app, max_requests=2)
    guard.in_flight = 2
    await guard({"type": "http", "path": "/query", "headers": []}, receive, send)
    assert sent[0]["status"] == 503
    assert (b"retry-after", b"1") in sent[0]["headers"]


def test_wrong_api_tokens_are_limited_per_client_and_counted_with_the_inspectors(
    tmp_path: Path, memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    token = f"{TOKEN}-0123456789"
    right = {"Authorization": f"Bearer {token}"}
    app = create_app(_settings(tmp_path, api_token=token), memory=memory)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert client.get("/memories").status_code == 401  # no token: no guess, not counted
        for guess in range(MAX_FAILED_LOGINS - 1):
            wrong = client.get("/memories", headers={"Authorization": f"Bearer guess{guess}"})
            assert wrong.status_code == 401
        page = client.get("/ui/login")
        nonce = re.search(r'name="nonce" value="([^"]+)"', page.text)
        assert nonce is not None
        login = client.post("/ui/login", data={"nonce": nonce.group(1), "token": "guess"})
        assert login.status_code == 401  # the tenth wrong token, at the inspector
        limited = client.get("/memories", headers=right)  # even the right token waits
        elsewhere = TestClient(app, base_url="http://127.0.0.1", client=("127.0.0.2", 5000))
        other = elsewhere.get("/memories", headers=right)
        now[0] += 61
        later = client.get("/memories", headers=right)
    assert limited.status_code == 429
    assert 0 < int(limited.headers["retry-after"]) <= 60
    assert "too many wrong tokens" in limited.json()["detail"]
    assert (other.status_code, later.status_code) == (200, 200)


def test_max_wrong_tokens_sets_the_limit(tmp_path: Path, memory: MemoryStore) -> None:
    token = f"{TOKEN}-0123456789"
    settings = _settings(tmp_path, api_token=token, max_wrong_tokens=2)
    with TestClient(create_app(settings, memory=memory), base_url="http://127.0.0.1") as client:
        answers = [
            client.get("/memories", headers={"Authorization": f"Bearer guess{i}"}).status_code
            for i in range(3)
        ]
    assert answers == [401, 401, 429]


def test_non_loopback_bind_needs_a_token() -> None:
    check_bind(CogitoSettings(host="127.0.0.1"))
    check_bind(CogitoSettings(host="0.0.0.0", api_token=f"{TOKEN}-0123456789"))  # noqa: S104
    with pytest.raises(ConfigError, match="COGITO_API_TOKEN"):
        check_bind(CogitoSettings(host="0.0.0.0"))  # noqa: S104


def test_main_exits_with_the_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"port": 1,}', encoding="utf-8")
    with pytest.raises(SystemExit) as exited:
        main(["--config", str(bad)])
    assert exited.value.code == 2
    assert "line 1" in capsys.readouterr().err


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_main_exits_with_the_install_line_of_a_missing_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "langchain_ollama", None)  # the ollama extra is missing
    config = tmp_path / "cogito.json"
    values = {"store_path": str(tmp_path / "store"), "embed_model": "ollama:nomic-embed-text"}
    config.write_text(json.dumps(values), encoding="utf-8")
    with pytest.raises(SystemExit) as exited:
        main(["--config", str(config), "--port", str(_free_port())])
    assert exited.value.code == 1
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1
    assert error[0].startswith("cogito-lc-server: error: embed_model='ollama:nomic-embed-text'")
    assert error[0].endswith(
        'pip install "cogito-lc[ollama]" (module langchain_ollama is not installed)'
    )


# -- group commit of /store -------------------------------------------------------------


def test_store_batch_answers_each_request_on_its_own(
    chroma: Chroma, embeddings: HashEmbeddings
) -> None:
    alice = MemoryStore(chroma, scope={"user_id": "alice"})
    bob = MemoryStore(chroma, scope={"user_id": "bob"})
    alice.store("Alice's original", id="taken")
    embeddings.reset()
    results = store_batch(
        [
            PendingStore(alice, "First memory."),
            PendingStore(bob, "Bob's memory."),
            PendingStore(alice, "Second memory.", "mine", {"topic": "x"}),
            PendingStore(alice, "Clashing text.", "mine"),  # same id, other text: 409
            PendingStore(bob, "Steal it.", "taken"),  # another scope's id: 409
            PendingStore(alice, "First memory."),  # duplicate text: the same memory
        ]
    )
    ok = [r for r in results if not isinstance(r, Exception)]
    assert [r.document.page_content for r in ok] == [
        "First memory.",
        "Bob's memory.",
        "Second memory.",
        "First memory.",
    ]
    assert [r.created for r in ok] == [True, True, True, False]  # the repeat wrote nothing
    for conflict in (results[3], results[4]):
        assert isinstance(conflict, HTTPException)
        assert conflict.status_code == 409
    assert ok[0].document.id == ok[3].document.id
    assert len(embeddings.document_calls) == 2  # one embeddings call per scope
    assert alice.count() == 3
    assert bob.count() == 1
    assert alice.get("taken").page_content == "Alice's original"  # type: ignore[union-attr]


def test_store_batch_tells_a_memory_stored_before_from_a_new_one(chroma: Chroma) -> None:
    memory = MemoryStore(chroma, scope={"user_id": "alice"})
    memory.store("Held by its text.")
    memory.store("Held by its id.", id="kept")
    memory.store("Old wording.", id="edited")
    memory.update("edited", "New wording.")  # "Old wording." may be stored anew, at its next id
    results = store_batch(
        [
            PendingStore(memory, "Held by its text."),
            PendingStore(memory, "Held by its id.", "kept"),
            PendingStore(memory, "Brand new."),
            PendingStore(memory, "Old wording."),
        ]
    )
    created = [r.created for r in results if not isinstance(r, Exception)]
    assert created == [False, False, True, True], results
    again = store_batch([PendingStore(memory, "Old wording."), PendingStore(memory, "Brand new.")])
    assert [getattr(r, "created", r) for r in again] == [False, False]
    assert memory.count() == 5


def test_store_batch_keeps_texts_differing_only_in_whitespace_apart(chroma: Chroma) -> None:
    memory = MemoryStore(chroma, scope={"user_id": "alice"})
    results = store_batch(
        [
            PendingStore(memory, "line 1\n\nline 2"),
            PendingStore(memory, "line 1 line 2"),
            PendingStore(memory, "line 1\n\nline 2"),
        ]
    )
    stored = [r for r in results if not isinstance(r, Exception)]
    assert [(r.document.page_content, r.created) for r in stored] == [
        ("line 1\n\nline 2", True),
        ("line 1 line 2", True),
        ("line 1\n\nline 2", False),
    ]
    assert stored[0].document.id == stored[2].document.id != stored[1].document.id
    assert memory.count() == 2


async def test_concurrent_stores_are_written_in_few_batches(chroma: Chroma) -> None:
    memory = MemoryStore(chroma, scope={"user_id": "agent"})
    sizes: list[int] = []

    async def run(func: Any, batch: list[PendingStore]) -> Any:
        sizes.append(len(batch))
        await asyncio.sleep(0.01)  # a write in progress while more requests arrive
        return func(batch)

    batcher = StoreBatcher(run, max_batch=8)
    docs = await asyncio.gather(
        *(batcher.submit(PendingStore(memory, f"Memory number {i}.")) for i in range(20))
    )
    assert [r.document.page_content for r in docs] == [f"Memory number {i}." for i in range(20)]
    assert all(r.created for r in docs)
    assert sizes == [8, 8, 4]  # all 20 arrived before the first write began
    assert memory.count() == 20


async def test_a_failed_batch_fails_each_waiting_request(chroma: Chroma) -> None:
    memory = MemoryStore(chroma, scope={"user_id": "agent"})

    async def run(func: Any, batch: list[PendingStore]) -> Any:
        raise HTTPException(503, "the memory store is unavailable; retry later")

    batcher = StoreBatcher(run)
    results = await asyncio.gather(
        *(batcher.submit(PendingStore(memory, f"m {i}")) for i in range(3)),
        return_exceptions=True,
    )
    assert all(isinstance(r, HTTPException) and r.status_code == 503 for r in results)
    assert memory.count() == 0


def test_store_answers_whether_it_wrote_the_memory(client: TestClient) -> None:
    first = client.post("/store", json={"text": "Tokens expire after 3600 s."}).json()
    again = client.post("/store", json={"text": "Tokens expire after 3600 s."}).json()
    assert first["created"] is True
    assert again == {**first, "created": False}
    elsewhere = client.post(
        "/store", json={"text": "Tokens expire after 3600 s."}, headers={"X-Cogito-User": "bob"}
    ).json()
    assert elsewhere["created"] is True  # another scope's memory


def test_query_never_returns_another_scopes_nearer_memory(client: TestClient) -> None:
    alice, bob = {"X-Cogito-User": "alice"}, {"X-Cogito-User": "bob"}
    client.post("/store", json={"text": "The vault code is 4711."}, headers=alice)
    client.post("/store", json={"text": "Vault doors close at six."}, headers=alice)
    client.post("/store", json={"text": "Bob likes green tea."}, headers=bob)
    question = {"text": "what is the vault code?", "limit": 2}
    bob_hits = client.post("/query", json=question, headers=bob).json()["memories"]
    assert [hit["text"] for hit in bob_hits] == ["Bob likes green tea."]  # filtered path
    alice_hits = client.post("/query", json=question, headers=alice).json()["memories"]
    assert {hit["text"] for hit in alice_hits} == {
        "The vault code is 4711.",
        "Vault doors close at six.",
    }


# -- one bad request fails only itself ---------------------------------------------------

POISON = '{"text": "poison", "metadata": {"k": "\\ud800"}}'
"""A body whose metadata holds a lone surrogate (valid JSON, not valid Unicode)."""


async def test_a_poison_write_fails_only_itself_among_concurrent_writes(
    tmp_path: Path, memory: MemoryStore
) -> None:
    app = create_app(_settings(tmp_path), memory=memory)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        good = [client.post("/store", json={"text": f"Good memory {i}."}) for i in range(8)]
        poison = client.post("/store", content=POISON, headers={"Content-Type": "application/json"})
        *answers, refused = await asyncio.gather(*good, poison)
    assert [a.status_code for a in answers] == [200] * 8, [a.text for a in answers]
    assert refused.status_code == 422, refused.text
    assert "metadata" in refused.json()["detail"]
    assert "surrogate" in refused.json()["detail"]
    stored = {doc.page_content for doc in memory.list(limit=50)}
    assert stored == {f"Good memory {i}." for i in range(8)}


def test_store_batch_writes_items_one_by_one_when_the_batch_fails(
    chroma: Chroma, embeddings: HashEmbeddings
) -> None:
    memory = MemoryStore(chroma, scope={"user_id": "agent"})
    items = [PendingStore(memory, f"Neighbour {i}.") for i in range(4)]
    items.insert(2, PendingStore(memory, "poison", metadata={"k": "\ud800"}))
    results = store_batch(items)
    refused = results.pop(2)
    assert isinstance(refused, ValueError)
    assert "metadata['k']" in str(refused)
    assert [getattr(r, "document", r).page_content for r in results] == [
        f"Neighbour {i}." for i in range(4)
    ]
    assert memory.count() == 4


async def test_an_invalid_item_never_joins_a_batch(chroma: Chroma) -> None:
    memory = MemoryStore(chroma, scope={"user_id": "agent"}, max_text_chars=20)
    batches: list[int] = []

    async def run(func: Any, batch: list[PendingStore]) -> Any:
        batches.append(len(batch))
        return func(batch)

    batcher = StoreBatcher(run)
    bad = [
        PendingStore(memory, "x" * 21),
        PendingStore(memory, "fine", "id\ud800"),
        PendingStore(memory, "fine", metadata={"k": "\udfff"}),
    ]
    for item in bad:
        with pytest.raises(RequestValidationError):
            await batcher.submit(item)
    assert batches == []
    assert (await batcher.submit(PendingStore(memory, "fine"))).document.page_content == "fine"


# -- bad input is a 422 naming the field, never a 500 ------------------------------------


def _raw_post(client: TestClient, path: str, body: str, **headers: str) -> httpx.Response:
    return client.post(
        path, content=body.encode(), headers={"Content-Type": "application/json", **headers}
    )


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/store", POISON, "metadata"),
        ("/store", '{"text": "t", "metadata": {"k\\ud800": "v"}}', "metadata"),
        ("/store", '{"text": "t\\udc00"}', "text"),
        ("/store", '{"text": "t", "id": "a\\ud800"}', "id"),
        ("/store", '{"text": "t", "user_id": "b\\ud800"}', "user_id"),
        ("/add", '{"text": "t", "context_hints": ["\\ud800"]}', "context_hints.0"),
        ("/query", '{"text": "\\ud800"}', "text"),
        ("/recall_b", '{"text": "q\\ud800"}', "text"),
        ("/recall", '{"text": "q", "since": "2026\\ud800"}', "since"),
        ("/recall", '{"text": "q", "since": "0001-01-01T00:00:00+01:00"}', "since"),
        ("/recall", '{"text": "q", "since": "9999-12-31T23:59:59-01:00"}', "since"),
        ("/query", '{"text": "q", "threshold": NaN}', "threshold"),
        ("/query", '{"text": "q", "limit": 1e400}', "limit"),
        ("/calibrate", '{"user_id": "b\\ud800"}', "user_id"),
        ("/store", '{"text": "a\\u0000b"}', "text"),
        ("/store", '{"text": "t", "metadata": {"k": "v\\u0000"}}', "metadata"),
        ("/store", '{"text": "t", "supersedes": ["a\\u0000"]}', "supersedes"),
        ("/forget", '{"ids": ["a\\u0000"]}', "ids"),
        ("/forget", '{"query": "phone", "reason": "gdpr\\u0000"}', "reason"),
        (
            "/flush",
            '{"session_id": "s", "messages": [{"role": "user", "content": "x\\u0000"}]}',
            "messages.0.content",
        ),
    ],
)
def test_bad_input_is_422_naming_the_field(
    client: TestClient, path: str, body: str, field: str
) -> None:
    response = _raw_post(client, path, body)
    assert response.status_code == 422, response.text
    assert field in [error["field"] for error in response.json()["errors"]]
    assert response.json()["detail"].startswith(f"{field}:")


def test_out_of_range_since_says_what_is_wrong(client: TestClient) -> None:
    response = client.post("/recall", json={"text": "q", "since": "0001-01-01T00:00:00+01:00"})
    assert "outside the years 1 to 9999" in response.json()["detail"]


def test_out_of_range_stored_timestamps_are_not_timestamps() -> None:
    from datetime import datetime, timedelta, timezone

    from cogito_lc._core.timestamps import parse_timestamp

    early = datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1)))
    assert parse_timestamp(early) is None
    assert parse_timestamp("9999-12-31T23:59:59-01:00") is None


def test_memory_store_rejects_a_lone_surrogate_in_metadata(memory: MemoryStore) -> None:
    with pytest.raises(ValueError, match=r"metadata\['k'\] holds a lone surrogate"):
        memory.store("text", metadata={"k": "a\ud800"})
    with pytest.raises(ValueError, match="metadata key 'k\\\\udfff' holds a lone surrogate"):
        memory.store("text", metadata={"k\udfff": "v"})
    assert memory.count() == 0


# -- patterns match the whole value -------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"text": "t", "id": "abc\n"}, "id"),
        ({"text": "t", "user_id": "bob\n"}, "user_id"),
        ({"text": "t", "metadata": {"topic\n": "v"}}, "metadata"),
    ],
)
def test_a_trailing_newline_does_not_match_a_pattern(
    client: TestClient, body: dict[str, Any], field: str
) -> None:
    response = client.post("/store", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["field"] == field


def test_every_scoped_body_pattern_matches_the_whole_value() -> None:
    with_text = [
        (model, {"query": "t"} if "text" not in model.model_fields else {"text": "t"})
        for model in vars(request_models(100, 50)).values()
    ]
    without_text = [(model, {}) for model in (SnapshotBuildRequest, CalibrateRequest)]
    for model, body in [*with_text, *without_text]:
        with pytest.raises(ValidationError, match="user_id"):
            model.model_validate({**body, "user_id": "bob\n"})
        assert model.model_validate({**body, "user_id": "bob"}).user_id == "bob"
    with pytest.raises(ValidationError, match="id"):
        request_models(100, 50).store.model_validate({"text": "t", "id": "abc\n"})


# -- error messages -----------------------------------------------------------------------


def test_a_422_echoes_at_most_a_few_hundred_characters(client: TestClient) -> None:
    response = client.post("/recall", json={"text": "q", "since": "9" * 5000})
    assert response.status_code == 422
    assert len(response.text) < 1000
    assert "is not an ISO 8601 timestamp" in response.json()["detail"]


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_json_without_its_content_type_is_told_which_to_send(
    client: TestClient, content_type: str | None
) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    response = client.post("/store", content=b'{"text": "hello"}', headers=headers)
    assert response.status_code == 422
    assert "Content-Type: application/json" in response.json()["detail"]
    assert response.json()["errors"][0]["field"] == "body"


def test_405_allows_every_method_of_the_path(client: TestClient) -> None:
    response = client.options("/memories/abc")
    assert response.status_code == 405
    assert response.headers["allow"] == "DELETE, GET"
    assert client.post("/health").headers["allow"] == "GET, HEAD"


def test_head_health_is_200(client: TestClient) -> None:
    response = client.head("/health")
    assert response.status_code == 200
    assert response.content == b""


def test_two_scope_headers_are_refused(tmp_path: Path, memory: MemoryStore) -> None:
    twice = [("X-Cogito-User", "alice"), ("X-Cogito-User", "bob")]
    for allowed in (True, False):
        app = create_app(_settings(tmp_path, allow_request_scope=allowed), memory=memory)
        with TestClient(app, base_url="http://127.0.0.1") as test_client:
            response = test_client.get("/memories", headers=twice)
            assert response.status_code == 400
            assert "X-Cogito-User was sent 2 times" in response.json()["detail"]
    header = app.openapi()["paths"]["/memories"]["get"]["parameters"]
    assert not any(p["name"] == "x-cogito-user" for p in header)  # scopes off: not declared
    scoped = create_app(_settings(tmp_path, allow_request_scope=True), memory=memory).openapi()
    described = {p["name"]: p for p in scoped["paths"]["/store"]["post"]["parameters"]}
    assert "at most once" in described["x-cogito-user"]["description"]


def test_a_store_the_schema_lets_through_but_the_store_refuses_is_a_422(
    tmp_path: Path, chroma: Chroma
) -> None:
    memory = MemoryStore(chroma, scope={"user_id": "agent"}, max_text_chars=20)
    app = create_app(_settings(tmp_path, max_text_chars=500), memory=memory)
    with TestClient(app, raise_server_exceptions=False, base_url="http://127.0.0.1") as test_client:
        response = test_client.post("/store", json={"text": "a text of thirty characters.."})
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["field"] == "text"
    assert "at most 20 characters" in response.json()["detail"]


@pytest.mark.parametrize("path", ["/query", "/recall", "/recall_b"])
def test_a_reference_l2_threshold_says_what_to_send_instead(client: TestClient, path: str) -> None:
    response = client.post(path, json={"text": "q", "threshold": 400.0})
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["field"] == "threshold"
    assert "write threshold: 0.3" in response.json()["detail"]


def test_the_published_threshold_range_is_kept(client: TestClient) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    floors = [
        option
        for schema in schemas.values()
        for option in schema.get("properties", {}).get("threshold", {}).get("anyOf", [])
        if option.get("type") == "number"
    ]
    assert floors
    assert all((f["minimum"], f["maximum"]) == (-1.0, 1.0) for f in floors)


def test_start_up_reads_the_lexical_postings_of_a_persistent_store(
    tmp_path: Path, embeddings: HashEmbeddings
) -> None:
    directory = str(tmp_path / "chroma")
    MemoryStore(Chroma("warm", embeddings, persist_directory=directory)).store("kiln at 1200 C")
    store = Chroma("warm", embeddings, persist_directory=directory)  # as a restarted server
    index = lexical_sync_for(store).index  # type: ignore[union-attr]
    assert isinstance(index, SqliteLexicalIndex)
    assert not index.postings_ready
    app = create_app(_settings(tmp_path), memory=MemoryStore(store))
    with TestClient(app, base_url="http://127.0.0.1"):
        assert index.postings_ready


@pytest.mark.parametrize("method", ["GET /memories", "DELETE /memories", "GET /history"])
def test_an_id_holding_a_nul_in_the_path_is_422_naming_it(client: TestClient, method: str) -> None:
    verb, path = method.split()
    response = client.request(verb, f"{path}/a%00b")
    assert response.status_code == 422, response.text
    assert response.json()["detail"].startswith("id:")
    assert "NUL" in response.json()["detail"]


@pytest.mark.parametrize(
    ("path", "body", "field", "says"),
    [
        ("/store", {"text": " \n"}, "text", "must contain a character that is not whitespace"),
        ("/forget", {"query": "\t"}, "query", "must contain a character that is not whitespace"),
        ("/store", {"text": "x", "id": "two words"}, "id", "letters, digits and ._:@+-"),
    ],
)
def test_a_pattern_is_said_in_words(
    client: TestClient, path: str, body: dict[str, str], field: str, says: str
) -> None:
    response = client.post(path, json=body)
    assert response.status_code == 422, response.text
    assert response.json()["detail"] == f"{field}: {says}" or says in response.json()["detail"]
    assert "String should match pattern" not in response.json()["detail"]


@pytest.mark.parametrize(
    ("method", "path", "field", "says"),
    [
        ("POST", "/query?limit=1", "limit", "unknown query parameter; this route takes none"),
        ("DELETE", "/memories/m1?reason=gdpr", "reason", "unknown query parameter"),
        ("GET", "/memories?limit=1&limit=3", "limit", "given more than once"),
        ("GET", "/memories?limt=1", "limt", "accepted: as_of, include_superseded, limit, offset"),
    ],
)
def test_a_query_parameter_a_route_does_not_take_is_a_422_naming_it(
    client: TestClient, method: str, path: str, field: str, says: str
) -> None:
    response = client.request(method, path, json={"text": "x"} if method == "POST" else None)
    assert response.status_code == 422, response.text
    assert [error["field"] for error in response.json()["errors"]] == [field]
    assert says in response.json()["detail"]


def test_the_openapi_document_says_no_request_string_holds_a_nul(
    tmp_path: Path, memory: MemoryStore
) -> None:
    schema = create_app(_settings(tmp_path), memory=memory).openapi()
    components = schema["components"]["schemas"]
    content = components["SessionMessage"]["properties"]["content"]
    assert content["not"] == {"pattern": "\\u0000"}
    assert re.search(content["not"]["pattern"], "a\x00b")  # the pattern finds a NUL
    path_id = schema["paths"]["/memories/{id}"]["get"]["parameters"][0]
    assert path_id["name"] == "id"
    assert path_id["schema"]["not"] == {"pattern": "\\u0000"}
    assert "not" not in components["MemoryRecord"]["properties"]["text"]  # answers: unchanged


# -- DNS rebinding -------------------------------------------------------------------------

LOOPBACK_NAMES = ["127.0.0.1:19420", "localhost", "LocalHost:8000", "[::1]:19420", "127.0.0.2"]


@pytest.mark.parametrize("path", ["/memories", "/health", "/ui/login", "/mcp"])
def test_a_loopback_server_answers_no_foreign_host_name(
    tmp_path: Path, memory: MemoryStore, path: str
) -> None:
    memory.store("Alice's home address is 12 Elm Street.")
    app = create_app(_settings(tmp_path), memory=memory)
    with TestClient(app, base_url="http://rebound.example:19420") as rebound:
        answer = rebound.get(path)
        assert answer.status_code == 421
        assert "allowed_hosts" in answer.text
        assert "Elm Street" not in answer.text
        deleted = rebound.delete(f"/memories/{memory.list()[0].id}")
        assert deleted.status_code == 421
    assert memory.count() == 1


def test_loopback_names_and_allowed_hosts_are_answered(tmp_path: Path, memory: MemoryStore) -> None:
    app = create_app(_settings(tmp_path, allowed_hosts=["Memory.Internal"]), memory=memory)
    with TestClient(app) as client:
        for host in [*LOOPBACK_NAMES, "memory.internal", "memory.internal:443"]:
            assert client.get("/memories", headers={"Host": host}).status_code == 200, host
        assert client.get("/memories", headers={"Host": "memory.internal.evil"}).status_code == 421


def test_a_server_bound_beyond_loopback_answers_any_host_name(
    tmp_path: Path, memory: MemoryStore
) -> None:
    token = "a-long-enough-random-token"  # noqa: S105
    app = create_app(_settings(tmp_path, host="0.0.0.0", api_token=token), memory=memory)  # noqa: S104
    with TestClient(app, base_url="http://memory.example.com") as client:
        answer = client.get("/memories", headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 200


@pytest.mark.parametrize("token", [None, "short-token"])
def test_the_app_factory_refuses_what_the_server_script_refuses(
    tmp_path: Path, memory: MemoryStore, token: str | None
) -> None:
    with pytest.warns(UserWarning, match="shorter") if token else contextlib.nullcontext():
        settings = _settings(tmp_path, host="0.0.0.0", api_token=token)  # noqa: S104
    with pytest.raises(ConfigError) as by_script:
        check_bind(settings)
    with pytest.raises(ConfigError) as by_factory:
        create_app(settings, memory=memory)
    assert str(by_factory.value) == str(by_script.value)


@pytest.mark.parametrize(
    ("server", "client"),
    [(("192.0.2.2", 19420), ("192.0.2.7", 50000)), (("127.0.0.1", 19420), ("192.0.2.7", 50000))],
)
def test_without_a_token_a_connection_not_over_loopback_is_refused_whatever_its_host(
    tmp_path: Path, memory: MemoryStore, server: tuple[str, int], client: tuple[str, int]
) -> None:
    app = create_app(_settings(tmp_path), memory=memory)
    base_url = f"http://{server[0]}:{server[1]}"
    with TestClient(app, base_url=base_url, client=client) as stranger:
        loopback = {"Host": "127.0.0.1"}
        stored = stranger.post("/store", json={"text": "from afar"}, headers=loopback)
        listed = stranger.get("/memories", headers=loopback)
    assert (stored.status_code, listed.status_code) == (403, 403)
    assert "COGITO_API_TOKEN" in listed.json()["detail"]
    assert memory.count() == 0


def test_with_a_token_a_connection_from_afar_is_answered(
    tmp_path: Path, memory: MemoryStore
) -> None:
    app = create_app(_settings(tmp_path, api_token=f"{TOKEN}-0123456789"), memory=memory)
    headers = {"Host": "127.0.0.1", "Authorization": f"Bearer {TOKEN}-0123456789"}
    with TestClient(app, base_url="http://192.0.2.2", client=("192.0.2.7", 50000)) as client:
        assert client.get("/memories", headers=headers).status_code == 200


# What a browser sends for a page elsewhere: a no-cors fetch without a body, and a form.
NO_CORS_FETCH = {"Origin": "http://localhost:19540"}
TEXT_FORM = {"Origin": "https://evil.example", "Content-Type": "text/plain"}


@pytest.mark.parametrize("path", ["/snapshot/build", "/calibrate", "/store", "/forget"])
@pytest.mark.parametrize("headers", [NO_CORS_FETCH, TEXT_FORM, {"Origin": "null"}])
def test_a_page_elsewhere_cannot_change_anything_through_its_visitors_browser(
    tmp_path: Path, memory: MemoryStore, path: str, headers: dict[str, str]
) -> None:
    memory.store("Billing runs on postgres.")
    app = create_app(_settings(tmp_path), memory=memory)
    with TestClient(app, base_url="http://127.0.0.1:19420") as browser:
        answer = browser.post(path, headers=headers)
        deleted = browser.delete(f"/memories/{memory.list()[0].id}", headers=headers)
        snapshot = browser.get("/snapshot")
    assert (answer.status_code, deleted.status_code) == (403, 403), answer.text
    web_page = headers["Origin"] != "null"  # only a page on a host can be allowed by name
    assert ("allowed_hosts" in answer.json()["detail"]) == web_page
    assert "COGITO_API_TOKEN" in answer.json()["detail"]
    assert snapshot.status_code == 404  # no snapshot was built
    assert memory.count() == 1


def test_with_a_token_any_client_sending_it_may_write_whatever_its_origin(
    tmp_path: Path, memory: MemoryStore
) -> None:
    app = create_app(_settings(tmp_path, api_token=TOKEN), memory=memory)
    extension = {"Authorization": f"Bearer {TOKEN}", "Origin": "chrome-extension://abcdefghij"}
    page = {"Origin": "https://evil.example", "Content-Type": "text/plain"}
    with TestClient(app, base_url="http://127.0.0.1:19420") as client:
        body = {"text": "Billing runs on postgres."}
        stored = client.post("/store", json=body, headers=extension)
        built = client.post("/snapshot/build", json={}, headers=extension)
        forged = client.post("/snapshot/build", headers=page)
    assert (stored.status_code, built.status_code, forged.status_code) == (200, 200, 401)
    assert memory.count() == 1


def test_a_form_without_a_body_and_without_an_origin_is_refused(
    tmp_path: Path, memory: MemoryStore
) -> None:
    memory.store("Billing runs on postgres.")
    app = create_app(_settings(tmp_path), memory=memory)
    with TestClient(app, base_url="http://127.0.0.1:19420") as client:
        for content_type in ["text/plain", "application/x-www-form-urlencoded"]:
            form = client.post("/snapshot/build", headers={"Content-Type": content_type})
            assert form.status_code == 422
            assert "Content-Type: application/json" in form.json()["detail"]
        assert client.get("/snapshot").status_code == 404
        assert client.post("/snapshot/build").status_code == 200  # no body, no Content-Type


def test_the_servers_own_pages_and_clients_without_an_origin_still_write(
    tmp_path: Path, memory: MemoryStore
) -> None:
    app = create_app(_settings(tmp_path, allowed_hosts=["memory.internal"]), memory=memory)
    with TestClient(app, base_url="http://127.0.0.1:19420") as client:
        body = {"text": "Billing runs on postgres."}
        own = client.post("/store", json=body, headers={"Origin": "http://127.0.0.1:19420"})
        proxied = client.post("/store", json=body, headers={"Origin": "https://memory.internal"})
        plain = client.post("/snapshot/build", json={})
    assert (own.status_code, proxied.status_code, plain.status_code) == (200, 200, 200)


@pytest.mark.parametrize("name", ["", "memory.internal:8080", "http://memory.internal", "a b"])
def test_allowed_hosts_must_be_bare_names(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValidationError, match="allowed_hosts"):
        _settings(tmp_path, allowed_hosts=[name])


@pytest.mark.parametrize(
    ("host", "status"),
    [("localhost.", 200), ("localhost.:19420", 200), ("memory.internal.", 200), (":19420", 421)],
)
def test_a_host_name_with_a_final_dot_is_that_name_and_an_empty_one_is_refused(
    tmp_path: Path, memory: MemoryStore, host: str, status: int
) -> None:
    app = create_app(_settings(tmp_path, allowed_hosts=["memory.internal."]), memory=memory)
    with TestClient(app) as client:
        assert client.get("/memories", headers={"Host": host}).status_code == status


def test_a_configured_vocab_map_wins_over_a_calibrated_one(tmp_path: Path, chroma: Chroma) -> None:
    memory = MemoryStore(chroma, scope={"user_id": "agent"}, data_dir=tmp_path / "data")
    memory.vocab_map = {"calibrated": ["earlier"]}  # a map the store calibrated before
    configured = {"how fast": ["latency"]}
    calibrated = json.dumps({"database": ["postgres"]})
    app = create_app(
        _settings(tmp_path, vocab_map=configured, allow_request_scope=True), memory=memory
    )
    with TestClient(app, base_url="http://127.0.0.1") as test_client:
        test_client.post("/store", json={"text": "Billing runs on postgres."})
        service = test_client.app.state.service  # type: ignore[attr-defined]
        service.options.extract_llm = FakeListChatModel(responses=[calibrated])
        answer = test_client.post("/calibrate", json={}).json()
        view = service.view("agent")
        other = service.view("bob")
    assert other.memory.vocab_map == configured
    assert (answer["vocab_map"], answer["saved"], answer["in_use"]) == (
        {"database": ["postgres"]},
        True,
        False,
    )
    assert view.memory.vocab_map == configured  # recall keeps the configured map


def test_a_calibrated_map_is_in_use_without_a_configured_one(
    tmp_path: Path, chroma: Chroma
) -> None:
    memory = MemoryStore(chroma, scope={"user_id": "agent"}, data_dir=tmp_path / "data")
    app = create_app(_settings(tmp_path), memory=memory)
    with TestClient(app, base_url="http://127.0.0.1") as test_client:
        test_client.post("/store", json={"text": "Billing runs on postgres."})
        service = test_client.app.state.service  # type: ignore[attr-defined]
        reply = json.dumps({"database": ["postgres"]})
        service.options.extract_llm = FakeListChatModel(responses=[reply, reply])
        dry = test_client.post("/calibrate", json={"dry_run": True}).json()
        answer = test_client.post("/calibrate", json={}).json()
    assert (dry["saved"], dry["in_use"]) == (False, False)
    assert (answer["saved"], answer["in_use"]) == (True, True)


def test_calibrate_answers_why_it_built_no_map(tmp_path: Path, chroma: Chroma) -> None:
    memory = MemoryStore(chroma, scope={"user_id": "agent"}, data_dir=tmp_path / "data")
    app = create_app(_settings(tmp_path), memory=memory)
    with TestClient(app, base_url="http://127.0.0.1") as test_client:
        without_model = test_client.post("/calibrate", json={}).json()
        service = test_client.app.state.service  # type: ignore[attr-defined]
        reply = json.dumps({"database": ["mysql"]})
        service.options.extract_llm = FakeListChatModel(responses=[reply])
        empty_scope = test_client.post("/calibrate", json={}).json()
        test_client.post("/store", json={"text": "Billing runs on postgres."})
        all_dropped = test_client.post("/calibrate", json={}).json()
    assert (without_model["method"], without_model["reason"]) == ("fallback_no_llm", "no_llm")
    assert (empty_scope["method"], empty_scope["reason"]) == ("empty", "no_memories")
    assert (all_dropped["method"], all_dropped["reason"]) == ("empty", "all_dropped")
    assert all_dropped["dropped"] == ["mysql"]


def test_store_after_an_update_answers_the_memory_it_stored(client: TestClient) -> None:
    first = client.post("/store", json={"text": "My phone is 555-0101."}).json()
    service = client.app.state.service  # type: ignore[attr-defined]
    service.memory.update(first["id"], "My phone number is redacted.")
    again = client.post("/store", json={"text": "My phone is 555-0101."}).json()
    assert again["text"] == "My phone is 555-0101."
    assert again["id"] != first["id"]
    assert client.get(f"/memories/{again['id']}").json()["text"] == "My phone is 555-0101."
    assert client.get(f"/memories/{first['id']}").json()["text"] == "My phone number is redacted."
