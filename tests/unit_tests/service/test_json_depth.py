"""The REST endpoints refuse a JSON body nested deeper than MAX_JSON_DEPTH, before parsing it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from cogito_lc import MemoryStore
from cogito_lc.service._guard import MAX_JSON_DEPTH
from cogito_lc.service.config import CogitoSettings
from cogito_lc.service.server import create_app

DEEP = b"[" * 10_000 + b"]" * 10_000
TOO_DEEP = f"deeper than {MAX_JSON_DEPTH} levels"
JSON = {"content-type": "application/json"}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    memory = MemoryStore(
        InMemoryVectorStore(DeterministicFakeEmbedding(size=16)), scope={"user_id": "agent"}
    )
    app = create_app(CogitoSettings(store_path=tmp_path / "store"), memory=memory)
    with TestClient(app, raise_server_exceptions=False, base_url="http://127.0.0.1") as test_client:
        yield test_client


@pytest.mark.parametrize("path", ["/store", "/query", "/recall_b", "/forget", "/recall/stream"])
def test_ten_thousand_nested_arrays_get_a_400_naming_the_depth(
    client: TestClient, path: str
) -> None:
    answer = client.post(path, content=DEEP, headers=JSON)
    assert answer.status_code == 400
    assert TOO_DEEP in answer.json()["detail"]


def test_a_deep_value_inside_an_object_and_a_body_without_content_type_too(
    client: TestClient,
) -> None:
    body = b'{"text": "x", "metadata": {"a": ' + DEEP + b"}}"
    inside = client.post("/store", content=body, headers=JSON)
    assert inside.status_code == 400
    assert TOO_DEEP in inside.json()["detail"]
    bare = client.post("/store", content=DEEP)  # FastAPI reads a body without a type as JSON
    assert bare.status_code == 400
    assert client.get("/memories").json()["total"] == 0


def test_brackets_in_strings_and_shallow_bodies_pass(client: TestClient) -> None:
    text = "[" * 10_000 + " a memory about brackets"
    stored = client.post("/store", json={"text": text})
    assert stored.status_code == 200, stored.text
    nested = {"text": "nested metadata", "metadata": {"a": [[[1]]]}}
    assert client.post("/store", json=nested).status_code != 400


def test_the_inspector_form_is_not_json(client: TestClient) -> None:
    answer = client.post("/ui/login", data={"token": "[" * 100, "nonce": "x"})
    assert answer.status_code == 403  # the form's nonce decides, not the JSON guard


@pytest.mark.parametrize(
    ("body", "content_type", "status", "says"),
    [
        (b'{"text": "caf\xe9"}', "application/json", 400, "not valid UTF-8 (byte 14)"),
        (b'{"text": "x", "n": ' + b"9" * 5000 + b"}", "application/json", 400, "string conversion"),
        (b'{"text": "x"}', "application/json; charset=latin-1", 415, "charset 'latin-1'"),
    ],
)
def test_a_body_that_cannot_be_read_as_json_says_why(
    client: TestClient, body: bytes, content_type: str, status: int, says: str
) -> None:
    response = client.post("/store", content=body, headers={"Content-Type": content_type})
    assert response.status_code == status, response.text
    assert says in response.json()["detail"]
