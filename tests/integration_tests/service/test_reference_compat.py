"""A user of the reference design switches by changing the install line.

The reference README's example ``.cogito.json`` is loaded as written by a real
``cogito-lc server`` process (the reference's command name), and its quickstart
runs against it unchanged: the curl call, the request bodies of its HTTP API
section, ``recall`` through the CLI and the session-start snippet. The one edit
is the port: the server listens on a free port instead of 19420, so that test
runs cannot collide.

The example's gateway (``http://your-gateway/``) does not exist, so model stages
report the reference's own fallback tags, as the reference does without a
reachable filter model.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration_tests.service_process import (
    _OFFLINE_ENV,
    ServiceProcess,
    _wait_ready,
    free_port,
)

REFERENCE_CONFIG = {
    "filter_endpoint": "http://your-gateway/",
    "filter_token": "your-token",
    "filter_model": "anthropic/claude-haiku-4-5",
}
"""The ``.cogito.json`` of the reference README's Quick Start, step 3."""

REFERENCE_URL = "http://127.0.0.1:19420"

QUICKSTART_CURL = """curl -X POST http://127.0.0.1:19420/recall \\
  -H "Content-Type: application/json" \\
  -d '{"text": "auth architecture decisions"}'"""
"""Quick Start, step 5."""

SESSION_START = """
import urllib.request, json
resp = urllib.request.urlopen("http://127.0.0.1:19420/snapshot")
snapshot = json.loads(resp.read())["snapshot"]
"""
"""Setup Recommendations, "Session start pattern"."""

STORE_BODY = {
    "text": "Switched from JWT to session tokens on 2026-03-27 due to compliance requirement"
}
"""``POST /store`` of the HTTP API section (its ``id`` is optional and left out)."""


@pytest.fixture(scope="module")
def reference_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("reference")


@pytest.fixture(scope="module")
def reference_server(reference_home: Path) -> Iterator[ServiceProcess]:
    """``cogito-lc server`` in a project folder that holds the reference's config file."""
    tmp_path = reference_home
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    (project / ".cogito.json").write_text(json.dumps(REFERENCE_CONFIG), encoding="utf-8")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("COGITO_") and key != "ANTHROPIC_API_KEY"
    }
    env.update({**_OFFLINE_ENV, "HOME": str(home)})
    port = free_port()
    log_path = tmp_path / "server.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "cogito_lc.cli", "server", "--port", str(port)],
            cwd=project,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    service = ServiceProcess(process, f"http://127.0.0.1:{port}", log_path, None)
    try:
        _wait_ready(service, 180.0)
        yield service
    finally:
        service.stop()


def _on(service: ServiceProcess, text: str) -> str:
    return text.replace(REFERENCE_URL, service.base_url)


def _curl(command: str) -> tuple[int, Any]:
    """Run a curl command line in a shell; without curl, send the same request with httpx."""
    if shutil.which("curl"):
        done = subprocess.run(
            ["bash", "-c", f"{command} --silent --write-out '\\n%{{http_code}}'"],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        body, _, status = done.stdout.rpartition("\n")
        return int(status), json.loads(body)
    method, url, headers, data = "GET", "", {}, None
    words = iter(shlex.split(command.replace("\\\n", " "))[1:])
    for word in words:
        if word == "-X":
            method = next(words)
        elif word == "-H":
            name, _, value = next(words).partition(":")
            headers[name.strip()] = value.strip()
        elif word == "-d":
            data = next(words)
        else:
            url = word
    response = httpx.request(method, url, headers=headers, content=data, timeout=120)
    return response.status_code, response.json()


def test_reference_quickstart_runs_unchanged(
    reference_server: ServiceProcess, reference_home: Path, tmp_path: Path
) -> None:
    service = reference_server
    # The store is where the reference keeps it: ~/.cogito/store.
    assert (reference_home / "home" / ".cogito" / "store").is_dir()
    with httpx.Client(base_url=service.base_url, timeout=120) as client:
        health = client.get("/health").json()
        assert {"status", "count", "version", "calibrated", "snapshot"} <= set(health)
        assert health["status"] == "ok"

        stored = client.post("/store", json=STORE_BODY)
        assert stored.status_code == 200
        assert stored.json()["text"] == STORE_BODY["text"]
        assert set(stored.json()) == {"id", "text", "created"}  # the reference's, and one more
        assert stored.json()["created"] is True

    status, answer = _curl(_on(service, QUICKSTART_CURL))
    assert status == 200
    assert answer["memories"][0]["text"] == STORE_BODY["text"]
    assert {"text", "score"} <= set(answer["memories"][0])
    # The example gateway does not exist: the reference's own fallback tag.
    assert answer["method"] == "fallback_unreachable"

    with httpx.Client(base_url=service.base_url, timeout=120) as client:
        query = client.post("/query", json={"text": "query string", "limit": 5}).json()
        assert {"text", "score"} <= set(query["memories"][0])

        recall_b = client.post("/recall_b", json={"text": "query string", "limit": 50}).json()
        assert recall_b["method"].startswith("decompose_")
        assert recall_b["memories"]

        # Extraction goes to the same (absent) gateway; the text is kept verbatim.
        added = client.post("/add", json={"text": "free-form text to remember"}).json()
        assert added["count"] == 1
        assert added["memories"] == ["free-form text to remember"]

        assert client.get("/snapshot").status_code == 404  # none built yet, as in the reference

    # `cogito snapshot` and `cogito recall` of the reference talk to the running server;
    # cogito-lc's commands do so with --server (or COGITO_SERVER).
    cli_env = {**os.environ, "HOME": str(tmp_path), "COGITO_SERVER": service.base_url}
    outputs = []
    for args in (["snapshot"], ["recall", "what did we decide about the auth architecture"]):
        done = subprocess.run(
            [sys.executable, "-m", "cogito_lc.cli", *args],
            capture_output=True,
            text=True,
            env=cli_env,
            cwd=tmp_path,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert all("Switched from JWT to session tokens" in output for output in outputs)

    namespace: dict[str, Any] = {}
    exec(_on(service, SESSION_START), namespace)  # noqa: S102 - the reference's snippet
    assert "Switched from JWT to session tokens" in namespace["snapshot"]


def test_reference_l2_threshold_in_a_request_names_the_field(
    reference_server: ServiceProcess,
) -> None:
    """``POST /recall`` of the HTTP API section sends ``"threshold": 400`` (an L2 cutoff).

    cogito-lc's thresholds are cosine similarities (-1..1): the request is
    refused with 422 naming the field and what to send instead, not run with a
    meaningless floor.
    """
    body = {"text": "query string", "limit": 50, "threshold": 400}
    with httpx.Client(base_url=reference_server.base_url, timeout=120) as client:
        response = client.post("/recall", json=body)
        assert response.status_code == 422
        assert [e["field"] for e in response.json()["errors"]] == ["threshold"]
        assert "write threshold: 0.3" in response.json()["errors"][0]["message"]
        body.pop("threshold")
        assert client.post("/recall", json=body).status_code == 200
