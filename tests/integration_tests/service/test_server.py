"""The memory service end to end: a real uvicorn process on loopback, driven over HTTP.

Every test talks to ``python -m cogito_lc.service.server`` with an embedded Chroma store in
a temporary directory and the offline MiniLM model. Loops are bounded in count,
and in time only as a guard against hangs; timings are reported by
``benchmarks/service.py``, never asserted here.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.config import SchemathesisConfig
from schemathesis.config._checks import NegativeDataRejectionConfig
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from tests.integration_tests.service_process import (
    ServiceProcess,
    _environment,
    checked_service,
    free_port,
    start_service,
)

TOKEN = "integration-test-token"  # noqa: S105 - a test value
LOAD_REQUESTS = 500
LOAD_CLIENTS = 8
HANG_GUARD_SECONDS = 600.0
"""Bound of every request loop: ten times what it takes on a 2-core machine."""
FUZZ_EXAMPLES = 25
"""Generated requests per operation and per mode (valid / invalid data)."""


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """One service for the module: token required, per-request scopes allowed."""
    root = tmp_path_factory.mktemp("service")
    settings = {"COGITO_ALLOW_REQUEST_SCOPE": "true", "COGITO_MAX_WRONG_TOKENS": "1000"}
    with checked_service(root / "store", token=TOKEN, settings=settings) as process:
        yield process


def _all_memories(client: httpx.Client) -> dict[str, str]:
    found: dict[str, str] = {}
    for offset in itertools.count(0, 200):
        page = client.get("/memories", params={"limit": 200, "offset": offset})
        assert page.status_code == 200, page.text
        found.update({m["id"]: m["text"] for m in page.json()["memories"]})
        if len(page.json()["memories"]) < 200:
            return found
    raise AssertionError  # pragma: no cover - itertools.count never ends


# -- round trip ------------------------------------------------------------------------


def test_round_trip_through_every_read_path(service: ServiceProcess) -> None:
    with service.client(user="round-trip") as client:
        stored = client.post("/store", json={"text": "Auth tokens expire after 3600 seconds."})
        assert stored.status_code == 200, stored.text
        memory_id = stored.json()["id"]
        again = client.post("/store", json={"text": "Auth tokens expire after 3600 seconds."})
        assert again.json()["id"] == memory_id  # idempotent: one memory, not two
        client.post("/store", json={"text": "We chose PostgreSQL for billing."})

        question = {"text": "how long do auth tokens last?", "limit": 1}
        for path in ("/query", "/recall_b", "/recall"):
            answer = client.post(path, json=question)
            assert answer.status_code == 200, answer.text
            assert [m["id"] for m in answer.json()["memories"]] == [memory_id], path
        assert client.post("/recall_b", json=question).json()["method"].startswith("decompose_")
        assert client.post("/recall", json=question).json()["method"] == "fallback_no_llm"

        record = client.get(f"/memories/{memory_id}").json()
        assert record["text"] == "Auth tokens expire after 3600 seconds."
        assert record["metadata"]["user_id"] == "round-trip"
        assert client.delete(f"/memories/{memory_id}").status_code == 200
        assert client.get(f"/memories/{memory_id}").status_code == 404
        assert client.get("/memories").json()["total"] == 1


def test_snapshot_and_calibration_without_a_model(service: ServiceProcess) -> None:
    with service.client(user="jobs") as client:
        assert client.get("/snapshot").status_code == 404
        client.post("/store", json={"text": "The billing service listens on port 8083."})
        built = client.post("/snapshot/build", json={"rebuild": True})
        assert built.status_code == 200, built.text
        assert built.json()["method"] == "grouped|fallback_no_llm"
        assert "port 8083" in built.json()["snapshot"]
        saved = client.get("/snapshot").json()
        assert saved["snapshot"] == built.json()["snapshot"]
        assert not saved["path"].startswith("/")  # no server path reaches a client
        calibrated = client.post("/calibrate", json={"dry_run": True})
        assert calibrated.status_code == 200, calibrated.text
        assert calibrated.json()["method"] == "fallback_no_llm"


# -- load -----------------------------------------------------------------------------


def _load_request(client: httpx.Client, i: int) -> dict[str, Any]:
    kind = ("store", "recall_b", "query", "store", "recall_b")[i % 5]
    if kind == "store":
        text = f"Load memory {i}: service s{i % 7} keeps its queue on port {9000 + i}."
        response = client.post("/store", json={"text": text})
        memory_id = response.json().get("id") if response.status_code == 200 else None
        return {"kind": kind, "status": response.status_code, "text": text, "id": memory_id}
    question = f"which port does service s{i % 7} use for its queue?"
    response = client.post(f"/{kind}", json={"text": question, "limit": 10})
    return {"kind": kind, "status": response.status_code}


def test_load_eight_clients_lose_no_acknowledged_write(service: ServiceProcess) -> None:
    counter = itertools.count()
    results: list[dict[str, Any]] = []
    lock = threading.Lock()
    deadline = time.monotonic() + HANG_GUARD_SECONDS

    def client_loop() -> None:
        with service.client(user="load") as client:
            while time.monotonic() < deadline:
                with lock:
                    i = next(counter)
                if i >= LOAD_REQUESTS:
                    return
                try:
                    outcome = _load_request(client, i)
                except httpx.HTTPError as exc:  # recorded, so the assertion shows it
                    outcome = {"kind": "error", "status": repr(exc)}
                with lock:
                    results.append(outcome)

    threads = [threading.Thread(target=client_loop) for _ in range(LOAD_CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(results) == LOAD_REQUESTS, "the load loop stopped at its hang guard"
    statuses = sorted({str(r["status"]) for r in results})
    assert statuses == ["200"], (statuses, service.log_tail())
    acknowledged = {r["id"]: r["text"] for r in results if r["kind"] == "store"}
    assert len(acknowledged) == 200
    with service.client(user="load") as client:
        assert _all_memories(client) == acknowledged
        assert client.get("/memories", params={"limit": 1}).json()["total"] == 200


# -- crash ------------------------------------------------------------------------------


def _write_stream(
    service: ServiceProcess, writer: int, acked: dict[str, str], lock: threading.Lock
) -> None:
    with service.client(timeout=30) as client:
        for i in range(500):
            text = f"crash writer {writer} wrote memory number {i}"
            try:
                response = client.post("/store", json={"text": text})
            except httpx.HTTPError:
                return  # the server is gone
            if response.status_code == 200:
                with lock:
                    acked[response.json()["id"]] = text


def _searchable(client: httpx.Client, memory_id: str, text: str) -> bool:
    """Whether ``/query`` with the memory's own text returns it among the first three."""
    hits = client.post("/query", json={"text": text, "limit": 3})
    assert hits.status_code == 200, hits.text
    return memory_id in [hit["id"] for hit in hits.json()["memories"]]


def test_sigkill_mid_writes_keeps_every_acknowledged_write(tmp_path: Path) -> None:
    store = tmp_path / "store"
    first = start_service(store, log_name="before-kill.log")
    acked: dict[str, str] = {}
    lock = threading.Lock()
    writers = [
        threading.Thread(target=_write_stream, args=(first, w, acked, lock)) for w in range(4)
    ]
    for thread in writers:
        thread.start()
    deadline = time.monotonic() + HANG_GUARD_SECONDS
    while len(acked) < 60 and time.monotonic() < deadline and first.process.poll() is None:
        time.sleep(0.02)
    first.kill()  # SIGKILL while the writers are still sending
    for thread in writers:
        thread.join()
    assert len(acked) >= 60

    second = start_service(store, log_name="after-kill.log")
    try:
        with second.client() as client:
            for memory_id, text in acked.items():
                found = client.get(f"/memories/{memory_id}")
                assert found.status_code == 200, (memory_id, found.text)
                assert found.json()["text"] == text
            unsearchable = [
                memory_id
                for memory_id, text in acked.items()
                if not _searchable(client, memory_id, text)
            ]
            assert not unsearchable, (unsearchable, second.log_tail())
            count = client.get("/health").json()["count"]
            assert len(acked) <= count <= len(acked) + 4  # at most one unacknowledged per writer
            assert (
                client.post("/store", json={"text": "written after the restart"}).status_code == 200
            )
            recalled = client.post("/recall_b", json={"text": "crash writer 2 memory number 7"})
            assert recalled.status_code == 200
            assert recalled.json()["memories"]
            assert client.get("/health").json()["count"] == count + 1
    finally:
        second.stop()
    assert "Traceback" not in second.log_tail(100_000)


# -- bad input ----------------------------------------------------------------------------

BAD_BODIES: list[tuple[str, str, Any, str]] = [
    ("empty text", "/store", {"text": ""}, "text"),
    ("blank text", "/store", {"text": " \n\t "}, "text"),
    ("missing text", "/recall_b", {"limit": 3}, "text"),
    ("text of the wrong type", "/store", {"text": 42}, "text"),
    ("limit as a string", "/query", {"text": "x", "limit": "5"}, "limit"),
    ("limit as a boolean", "/query", {"text": "x", "limit": True}, "limit"),
    ("negative limit", "/recall_b", {"text": "x", "limit": -1}, "limit"),
    ("limit over 200", "/recall", {"text": "x", "limit": 201}, "limit"),
    ("unknown field", "/store", {"text": "x", "colour": "blue"}, "colour"),
    ("reserved metadata key", "/store", {"text": "x", "metadata": {"user_id": "eve"}}, "metadata"),
    ("nested metadata", "/store", {"text": "x", "metadata": {"k": {"a": 1}}}, "metadata"),
    ("text over max_text_chars", "/store", {"text": "x" * 100_001}, "text"),
    ("bad since", "/recall", {"text": "x", "since": "last tuesday"}, "since"),
    ("body not an object", "/add", [1, 2, 3], "body"),
]


@pytest.mark.parametrize(
    ("path", "body", "field"), [case[1:] for case in BAD_BODIES], ids=[c[0] for c in BAD_BODIES]
)
def test_invalid_body_is_422_naming_the_field(
    service: ServiceProcess, path: str, body: Any, field: str
) -> None:
    with service.client(user="bad-input") as client:
        response = client.post(path, json=body)
    assert response.status_code == 422, response.text
    fields = [error["field"] for error in response.json()["errors"]]
    assert field in fields
    assert field in response.json()["detail"]
    assert "Traceback" not in response.text


def test_malformed_json_is_422(service: ServiceProcess) -> None:
    response = httpx.post(
        f"{service.base_url}/store",
        content=b'{"text": "unfinished',
        headers={**service.headers(), "Content-Type": "application/json"},
    )
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "body"


def test_two_megabyte_body_is_413_declared_or_streamed(service: ServiceProcess) -> None:
    body = b'{"text": "' + b"a" * 2_000_000 + b'"}'
    headers = {**service.headers(), "Content-Type": "application/json"}
    declared = httpx.post(f"{service.base_url}/store", content=body, headers=headers)
    assert declared.status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams
        for start in range(0, len(body), 65_536):
            yield body[start : start + 65_536]

    streamed = httpx.post(f"{service.base_url}/store", content=chunks(), headers=headers)
    assert streamed.status_code == 413
    with service.client(user="bad-input") as client:
        assert client.get("/health").json()["status"] == "ok"


def test_every_endpoint_but_health_requires_the_token(service: ServiceProcess) -> None:
    schema = httpx.get(f"{service.base_url}/openapi.json", headers=service.headers()).json()
    routes = [
        (method.upper(), path.replace("{id}", "some-id"))
        for path, item in schema["paths"].items()
        for method in item
    ]
    assert len(routes) == 16
    wrong = [
        {},
        {"Authorization": "Bearer wrong-token"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": f"Bearer {TOKEN}x"},
    ]
    for method, path in routes:
        for headers in wrong:
            response = httpx.request(method, f"{service.base_url}{path}", headers=headers)
            expected = 200 if path == "/health" else 401
            assert response.status_code == expected, (method, path, headers, response.text)
    assert httpx.get(f"{service.base_url}/openapi.json").status_code == 401


def test_errors_never_reveal_server_paths(service: ServiceProcess) -> None:
    store_dir = str(service.log_path.parent)
    with service.client(user="bad-input") as client:
        responses = [
            client.get("/memories/not-there"),
            client.post("/store", json={"text": ""}),
            client.get("/snapshot"),
            client.post(
                "/store", content=b"\xff\xfe", headers={"Content-Type": "application/json"}
            ),
        ]
    for response in responses:
        assert 400 <= response.status_code < 500
        assert store_dir not in response.text
        assert "Traceback" not in response.text


# -- isolation -----------------------------------------------------------------------------


def test_two_scopes_cannot_read_find_or_delete_each_other(service: ServiceProcess) -> None:
    with service.client(user="alice") as alice, service.client(user="bob") as bob:
        secret = alice.post("/store", json={"text": "Alice's vault code is 4711."}).json()
        own = bob.post("/store", json={"text": "Bob parks his bike at gate 3."}).json()
        body_scoped = httpx.post(
            f"{service.base_url}/store",
            json={"text": "Alice prefers window seats.", "user_id": "alice"},
            headers=service.headers(),
        ).json()

        question = {"text": "what is the vault code?", "limit": 50}
        for path in ("/query", "/recall_b", "/recall"):
            found = {m["id"] for m in bob.post(path, json=question).json()["memories"]}
            assert found == {own["id"]}, path
        assert set(_all_memories(bob)) == {own["id"]}
        assert bob.get(f"/memories/{secret['id']}").status_code == 404
        assert bob.delete(f"/memories/{secret['id']}").status_code == 404
        taken = bob.post("/store", json={"text": "overwrite", "id": secret["id"]})
        assert taken.status_code == 409
        assert "4711" not in taken.text

        snapshot = bob.post("/snapshot/build", json={"rebuild": True}).json()["snapshot"]
        assert "4711" not in snapshot
        assert set(_all_memories(alice)) == {secret["id"], body_scoped["id"]}
        assert (
            alice.get(f"/memories/{secret['id']}").json()["text"] == "Alice's vault code is 4711."
        )
        assert alice.get("/snapshot").status_code == 404

        mixed = httpx.post(
            f"{service.base_url}/query",
            json={"text": "vault", "user_id": "alice"},
            headers=service.headers("bob"),
        )
        assert mixed.status_code == 403


# -- generated bad input --------------------------------------------------------------------


# Invalid data can be longer than the body limit (a string just over a field's maxLength
# in escaped surrogates is 12 bytes a character): 413 is then the right rejection.
_OVERSIZE_IS_A_REJECTION = SchemathesisConfig.from_dict(
    {
        "checks": {
            "negative_data_rejection": {
                "expected-statuses": [
                    *NegativeDataRejectionConfig._DEFAULT_EXPECTED_STATUSES,
                    "413",
                ]
            }
        }
    }
)


def _as_of_of(case: Any) -> Any:
    """The ``as_of`` a generated request carries, in its body or its query string."""
    for part in (case.body, case.query):
        if isinstance(part, dict) and part.get("as_of") is not None:
            return part["as_of"]
    return None


def _non_ascii_user_id(case: Any) -> bool:
    """Whether a generated body names a ``user_id`` beyond ASCII.

    Its pattern's ``\\p{L}``, ``\\p{M}`` and ``\\p{N}`` classes follow the generator's
    Unicode tables, which differ from Python's for some code points.
    """
    user_id = case.body.get("user_id") if isinstance(case.body, dict) else None
    return isinstance(user_id, str) and not user_id.isascii()


def _refusable_fields(case: Any) -> set[str]:
    """The fields a schema-valid request may still be refused for (see :func:`_call_refusable`)."""
    fields = {"as_of"} if _as_of_of(case) is not None else set()
    return fields | ({"user_id"} if _non_ascii_user_id(case) else set())


def _call_refusable(case: Any, service: ServiceProcess) -> None:
    """A schema-valid ``as_of`` may still be refused: a time in the future, or one before
    every memory of the scope, which no JSON Schema can say; so may a ``user_id`` of a
    letter whose Unicode category the generator reads otherwise. Such a request must get
    a 422 naming only those fields; every other check runs as for any request."""
    response = case.call_and_validate(
        base_url=service.base_url,
        headers=service.headers(),
        excluded_checks=[positive_data_acceptance],
    )
    if response.status_code == 422:
        fields = {error["field"] for error in response.json()["errors"]}
        assert fields <= _refusable_fields(case), response.text
    else:
        assert response.status_code < 500, response.text


def _fuzz_operation(operation: Any, mode: GenerationMode, service: ServiceProcess) -> bool:
    """Run generated requests; False when no request of this mode can be generated."""

    @settings(
        max_examples=FUZZ_EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate],
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case: Any) -> None:
        if mode is GenerationMode.POSITIVE and _refusable_fields(case):
            _call_refusable(case, service)
            return
        case.call_and_validate(base_url=service.base_url, headers=service.headers())

    try:
        run()
    except Unsatisfiable:
        return False
    return True


def test_generated_requests_find_no_server_error_or_schema_violation(
    service: ServiceProcess,
) -> None:
    """Schemathesis against the service's own OpenAPI schema, valid and invalid data.

    Its default checks run on every response: no 5xx, status codes, content types,
    headers and bodies as documented, valid data accepted, invalid data rejected,
    and operations that declare the bearer token refuse requests without it.
    """
    schema = schemathesis.openapi.from_url(
        f"{service.base_url}/openapi.json",
        config=_OVERSIZE_IS_A_REJECTION,
        headers=service.headers(),
    )
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 16
    unsatisfiable = [
        (operation.label, mode)
        for operation in operations
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
        if not _fuzz_operation(operation, mode, service)
    ]
    # No invalid request exists for an operation without inputs.
    assert unsatisfiable == [("GET /health", GenerationMode.NEGATIVE)]


# -- binding --------------------------------------------------------------------------------


def test_non_loopback_bind_without_token_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cogito_lc.service.server", "--host", "0.0.0.0"],  # noqa: S104
        cwd=tmp_path,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "COGITO_STORE_PATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "COGITO_API_TOKEN" in done.stderr
    assert "0.0.0.0" in done.stderr  # noqa: S104


def _network_address() -> str | None:
    """This machine's address on its default route (no packet is sent), or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("203.0.113.1", 9))
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if address.startswith("127.") else address


def _factory(tmp_path: Path, host: str, port: int, **settings: str) -> subprocess.Popen[str]:
    """``uvicorn --factory cogito_lc.service.server:create_app`` bound to ``host``."""
    env = _environment(tmp_path / "store", port, settings)
    command = [sys.executable, "-m", "uvicorn", "--factory", "--host", host, "--port", str(port)]
    return subprocess.Popen(
        [*command, "--log-level", "warning", "cogito_lc.service.server:create_app"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_the_factory_refuses_a_non_loopback_host_without_a_token(tmp_path: Path) -> None:
    process = _factory(tmp_path, "127.0.0.1", free_port(), COGITO_HOST="0.0.0.0")  # noqa: S104
    output, _ = process.communicate(timeout=120)
    assert process.returncode != 0
    assert "host='0.0.0.0' is not a loopback address: set COGITO_API_TOKEN" in output


def test_the_factory_on_every_address_answers_only_loopback_without_a_token(
    tmp_path: Path,
) -> None:
    address = _network_address()
    if address is None:
        pytest.skip("this machine has no network address besides loopback")
    port = free_port()
    process = _factory(tmp_path, "0.0.0.0", port)  # noqa: S104 - as a deployment might
    try:
        deadline = time.monotonic() + HANG_GUARD_SECONDS
        while process.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            time.sleep(0.25)
        loopback = {"Host": "127.0.0.1"}
        afar = httpx.post(
            f"http://{address}:{port}/store", json={"text": "from afar"}, headers=loopback
        )
        named = httpx.get(f"http://{address}:{port}/memories")
        near = httpx.get(f"http://127.0.0.1:{port}/memories")
    finally:
        process.terminate()
        process.communicate(timeout=60)
    assert (afar.status_code, named.status_code) == (403, 403), afar.text
    assert "COGITO_API_TOKEN" in afar.json()["detail"]
    assert near.status_code == 200
    assert near.json()["total"] == 0


# -- one bad request fails only itself; bad input is a 422, never a 500 -----------------------

POISON = b'{"text": "poison", "metadata": {"k": "\\ud800"}}'


def test_a_poison_write_fails_none_of_eight_concurrent_writes(service: ServiceProcess) -> None:
    user = "poison-scope"
    texts = [f"Concurrent good write {i} of eight." for i in range(8)]
    answers: dict[str, httpx.Response] = {}
    start = threading.Barrier(len(texts) + 1)

    def post(name: str, body: bytes) -> None:
        with service.client(user=user) as client:
            start.wait(timeout=60)
            answers[name] = client.post(
                "/store", content=body, headers={"Content-Type": "application/json"}
            )

    bodies = {text: httpx.Request("POST", "/", json={"text": text}).content for text in texts}
    threads = [threading.Thread(target=post, args=item) for item in bodies.items()]
    threads.append(threading.Thread(target=post, args=("poison", POISON)))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=HANG_GUARD_SECONDS)
    poison = answers.pop("poison")
    assert poison.status_code == 422, poison.text
    assert poison.json()["errors"][0]["field"] == "metadata"
    assert {text: r.status_code for text, r in answers.items()} == dict.fromkeys(texts, 200)
    with service.client(user=user) as client:
        assert set(_all_memories(client).values()) == set(texts)


@pytest.mark.parametrize(
    "since", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "9" * 5000]
)
def test_a_since_out_of_range_or_too_long_is_a_short_422(
    service: ServiceProcess, since: str
) -> None:
    with service.client(user="since-range") as client:
        response = client.post("/recall", json={"text": "anything", "since": since})
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["field"] == "since"
    assert len(response.text) < 1000


def test_trailing_newlines_do_not_match_id_or_user_patterns(service: ServiceProcess) -> None:
    with service.client(user="newline") as client:
        by_id = client.post("/store", json={"text": "t", "id": "abc\n"})
        by_user = client.post("/store", json={"text": "t", "user_id": "bob\n"})
    assert (by_id.status_code, by_user.status_code) == (422, 422)
    assert by_id.json()["errors"][0]["field"] == "id"
    assert by_user.json()["errors"][0]["field"] == "user_id"


def test_methods_content_type_and_scope_header_errors(service: ServiceProcess) -> None:
    with service.client() as client:
        assert client.head("/health").status_code == 200
        options = client.options("/memories/some-id")
        assert (options.status_code, options.headers["allow"]) == (405, "DELETE, GET")
        plain = client.post(
            "/store", content=b'{"text": "x"}', headers={"Content-Type": "text/plain"}
        )
        assert plain.status_code == 422
        assert "Content-Type: application/json" in plain.json()["detail"]
        twice = client.get(
            "/memories", headers=[("X-Cogito-User", "alice"), ("X-Cogito-User", "mallory")]
        )
        assert twice.status_code == 400, twice.text
