"""Snapshots and calibration over HTTP, against a chat model server on 127.0.0.1."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from langchain_core.embeddings import Embeddings

from cogito_lc.service.config import CogitoSettings
from cogito_lc.service.models import memory_from_settings
from cogito_lc.service.server import create_app
from tests.integration_tests.model_server import ModelServer, model_server

MEMORIES = [
    "Auth tokens expire after 3600 seconds.",
    "Billing runs on PostgreSQL 16.",
    "Deploys go out on Tuesdays.",
]


@contextmanager
def _client(
    server: ModelServer, tmp_path: Path, minilm: Embeddings, **fields: Any
) -> Iterator[TestClient]:
    settings = CogitoSettings(
        llm_model="openai:m",
        filter_endpoint=f"{server.url}/v1",
        store_path=tmp_path / "store",
        supersession=False,
        **fields,
    )
    memory = memory_from_settings(settings, embeddings=minilm)
    memory.store_many(MEMORIES)
    app = create_app(settings, memory=memory)
    with TestClient(app, raise_server_exceptions=False, base_url="http://127.0.0.1") as client:
        yield client


def _timed(client: TestClient, path: str, body: dict[str, Any]) -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    response = client.post(path, json=body)
    assert response.status_code == 200, response.text
    return response.json(), time.monotonic() - started


def test_a_model_that_never_finishes_its_answer_is_given_up_on(
    tmp_path: Path, minilm: Embeddings
) -> None:
    # One byte at a time: the client's read timeout never fires, the step's deadline does.
    with (
        model_server(drip=0.1, delay=20) as server,
        _client(server, tmp_path, minilm, filter_timeout_ms=500) as client,
    ):
        calibrated, calibrate_s = _timed(client, "/calibrate", {})
        built, build_s = _timed(client, "/snapshot/build", {"rebuild": True})

    assert (calibrated["method"], calibrated["saved"]) == ("fallback_timeout", False)
    assert built["method"] == "grouped|fallback_timeout"
    bullets = [line[2:] for line in built["snapshot"].splitlines() if line.startswith("- ")]
    assert sorted(bullets) == sorted(MEMORIES)
    assert calibrate_s < 5
    assert build_s < 5


def test_snapshots_send_the_output_schema_as_the_setting_says(
    tmp_path: Path, minilm: Embeddings
) -> None:
    topics = json.dumps({"topics": [{"heading": "Platform", "items": [1, 2, 3]}]})
    with (
        model_server(reply=topics, refuse_json_schema=True) as server,
        _client(server, tmp_path, minilm, llm_structured_output="json_object") as client,
    ):
        built, _ = _timed(client, "/snapshot/build", {"rebuild": True})

    assert built["method"] == "pointer"
    assert [body["response_format"]["type"] for body in server.received] == ["json_object"]


def test_a_fresh_snapshot_is_served_while_a_calibration_waits_for_the_model(
    tmp_path: Path, minilm: Embeddings
) -> None:
    topics = json.dumps({"topics": [{"heading": "Platform", "items": [1, 2, 3]}]})
    with (
        model_server(reply=topics) as server,
        _client(server, tmp_path, minilm, filter_timeout_ms=30_000) as client,
        ThreadPoolExecutor(1) as pool,
    ):
        built, _ = _timed(client, "/snapshot/build", {})
        server.drip, server.delay = 0.1, 6.0  # the calibration holds the jobs lane 6 s
        calibrating = pool.submit(client.post, "/calibrate", json={})
        _wait_for(lambda: len(server.received) == 2)
        cached, cached_s = _timed(client, "/snapshot/build", {})
        calibrated = calibrating.result(timeout=60)

    assert (built["method"], built["saved"]) == ("pointer", True)
    assert cached["method"] == "cached"
    assert cached["snapshot"] == built["snapshot"]
    assert cached_s < 3
    assert calibrated.status_code == 200


def _wait_for(condition: Callable[[], bool], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the model server was never asked"
        time.sleep(0.05)
