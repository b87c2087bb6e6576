"""The service on Postgres: two replicas on one database, start-up errors, a restart."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.integration_tests.conftest_pg import private_postgres, stop_postgres
from tests.integration_tests.service_process import ServiceProcess, start_service

PASSWORD = "pg-s3cret-never-shown"  # noqa: S105 - a test credential
TOKEN = "replica-token-0123456789abcdef"  # noqa: S105 - a test credential


def _with_password(pg_url: str) -> str:
    # pgserver trusts local socket connections, so a password is accepted and unused:
    # enough to check it is never shown.
    return pg_url.replace("postgres:@", f"postgres:{PASSWORD}@")


@pytest.fixture(scope="module")
def replicas(
    pg_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ServiceProcess, ServiceProcess]]:
    root = tmp_path_factory.mktemp("replicas")
    settings = {
        "COGITO_DATABASE_URL": _with_password(pg_url),
        "COGITO_COLLECTION": "replicated",
        "COGITO_ALLOW_REQUEST_SCOPE": "true",
    }
    first = start_service(root / "a" / "store", token=TOKEN, settings=settings, log_name="a.log")
    try:
        second = start_service(
            root / "b" / "store", token=TOKEN, settings=settings, log_name="b.log"
        )
    except BaseException:
        first.stop()
        raise
    yield first, second
    first.stop()
    second.stop()


def test_acknowledged_writes_are_read_by_the_other_replica(
    replicas: tuple[ServiceProcess, ServiceProcess],
) -> None:
    a, b = replicas
    with a.client(user="team") as on_a, b.client(user="team") as on_b:
        stored = on_a.post("/store", json={"text": "The billing service listens on port 8083."})
        assert stored.status_code == 200, stored.text
        memory_id = stored.json()["id"]
        assert on_b.get(f"/memories/{memory_id}").json()["text"].endswith("port 8083.")
        question = {"text": "which port does billing listen on?", "limit": 3}
        for path in ("/query", "/recall_b"):
            found = on_b.post(path, json=question)
            assert found.status_code == 200, found.text
            assert memory_id in [m["id"] for m in found.json()["memories"]], path
    with b.client(user="other-team") as stranger:
        assert stranger.get(f"/memories/{memory_id}").status_code == 404
        hits = stranger.post("/query", json={"text": "billing port", "limit": 5}).json()
        assert hits["memories"] == []


def test_same_text_through_both_replicas_is_one_memory(
    replicas: tuple[ServiceProcess, ServiceProcess],
) -> None:
    texts = [f"Replicated fact number {i} about queue q{i}." for i in range(12)]

    def store(args: tuple[ServiceProcess, str]) -> str:
        service, text = args
        with service.client(user="dedup") as client:
            response = client.post("/store", json={"text": text})
            assert response.status_code == 200, response.text
            return str(response.json()["id"])

    jobs = [(service, text) for text in texts for service in replicas]
    with ThreadPoolExecutor(max_workers=8) as pool:
        ids = list(pool.map(store, jobs))
    assert len(set(ids)) == len(texts)
    for service in replicas:
        with service.client(user="dedup") as client:
            assert client.get("/memories", params={"limit": 100}).json()["total"] == len(texts)


def test_snapshot_built_on_one_replica_is_served_by_the_other(
    replicas: tuple[ServiceProcess, ServiceProcess],
) -> None:
    a, b = replicas
    with a.client(user="snap") as on_a, b.client(user="snap") as on_b:
        assert on_b.get("/snapshot").status_code == 404
        on_a.post("/store", json={"text": "Deploys go out on Tuesdays after the freeze."})
        built = on_a.post("/snapshot/build", json={"rebuild": True})
        assert built.status_code == 200, built.text
        served = on_b.get("/snapshot")
        assert served.status_code == 200, served.text
        assert served.json()["snapshot"] == built.json()["snapshot"]
        assert "Tuesdays" in served.json()["snapshot"]


def test_the_password_never_appears(replicas: tuple[ServiceProcess, ServiceProcess]) -> None:
    for service in replicas:
        health = httpx.get(f"{service.base_url}/health", timeout=10)
        assert health.status_code == 200
        assert PASSWORD not in health.text
        assert PASSWORD not in service.log_tail(200_000)


def _serve(env_extra: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COGITO_")}
    env.update({"HOME": str(tmp_path), "HF_HUB_OFFLINE": "1", **env_extra})
    return subprocess.run(
        [sys.executable, "-m", "cogito_lc.cli", "serve", "--port", "1"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (f"postgresql://cogito:{PASSWORD}@127.0.0.1:1/app", "check the host and port"),
        ("NO_SUCH_DB", "create the database"),
    ],
)
def test_a_database_that_cannot_be_used_is_one_line_and_exit_1(
    pg_url: str, tmp_path: Path, url: str, expected: str
) -> None:
    if url == "NO_SUCH_DB":
        url = _with_password(pg_url).replace("/postgres?", "/no_such_db?")
    done = _serve({"COGITO_DATABASE_URL": url}, tmp_path)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "COGITO_DATABASE_URL" in done.stderr
    assert expected in done.stderr
    assert PASSWORD not in done.stderr + done.stdout


def test_database_restart_gives_503_then_recovers(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with private_postgres() as server:
        url = server.get_uri()
        service = start_service(
            tmp_path_factory.mktemp("restart") / "store", settings={"COGITO_DATABASE_URL": url}
        )
        try:
            with service.client(timeout=30) as client:
                assert client.post("/store", json={"text": "before the restart"}).status_code == 200
                stop_postgres(server.get_pid())
                question = {"text": "restart", "limit": 3}
                down = [client.post("/query", json=question) for _ in range(3)]
                assert {r.status_code for r in down} == {503}, [r.text for r in down]
                assert all(r.headers.get("Retry-After") for r in down)
                server.ensure_postgres_running()  # start it again on the same socket
                assert server.get_uri() == url
                deadline = time.monotonic() + 60
                status = 0
                while time.monotonic() < deadline and status != 200:
                    status = client.post("/store", json={"text": "after the restart"}).status_code
                    time.sleep(0.5)
                assert status == 200
                assert client.get("/health").json()["count"] == 2
        finally:
            service.stop()


class _AlternatingClients:
    """8 clients writing through both replicas in turn and reading each write on the other."""

    def __init__(self, services: list[ServiceProcess], kill_after: int) -> None:
        self.services = services
        self.kill_after = kill_after
        self.acknowledged: list[tuple[str, str, str]] = []
        self.figures = dict.fromkeys(
            ("writes_acknowledged", "read_on_other_replica", "cross_scope_reads"), 0
        )
        self.lock = threading.Lock()
        self.killed = threading.Event()

    def run(self, clients: int = 8, writes: int = 16) -> None:
        threads = [threading.Thread(target=self.client, args=(n, writes)) for n in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def client(self, number: int, writes: int) -> None:
        user = f"user-{number % 4}"
        for i in range(writes):
            writer, reader = self.services[(number + i) % 2], self.services[(number + i + 1) % 2]
            if self.killed.is_set():
                writer = reader = self.services[0]
            text = f"Client {number} write {i}: service s{number} listens on port {9000 + i}."
            memory_id = self.write(writer, user, text)
            if memory_id is not None:
                self.read_back(reader, user, f"user-{(number + 1) % 4}", memory_id, text)

    def write(self, service: ServiceProcess, user: str, text: str) -> str | None:
        try:
            with service.client(user=user, timeout=30) as http:
                response = http.post("/store", json={"text": text})
        except httpx.HTTPError:
            return None  # the killed replica: not acknowledged
        if response.status_code != 200:
            return None
        memory_id = str(response.json()["id"])
        with self.lock:
            self.acknowledged.append((memory_id, user, text))
            self.figures["writes_acknowledged"] += 1
            if self.figures["writes_acknowledged"] == self.kill_after:
                self.services[1].kill()  # SIGKILL mid-writes
                self.killed.set()
        return memory_id

    def read_back(
        self, service: ServiceProcess, user: str, stranger: str, memory_id: str, text: str
    ) -> None:
        try:
            with service.client(user=user, timeout=30) as http:
                read = http.get(f"/memories/{memory_id}")
                found = http.post("/query", json={"text": text, "limit": 3}).json()
            with service.client(user=stranger, timeout=30) as http:
                leaked = http.get(f"/memories/{memory_id}").status_code != 404
        except httpx.HTTPError:
            return  # the reader was the replica just killed
        with self.lock:
            if read.status_code == 200 and memory_id in [m["id"] for m in found["memories"]]:
                self.figures["read_on_other_replica"] += 1
            self.figures["cross_scope_reads"] += int(leaked)

    def lost(self) -> int:
        lost = 0
        for memory_id, user, text in self.acknowledged:
            with self.services[0].client(user=user, timeout=30) as http:
                record = http.get(f"/memories/{memory_id}")
            lost += int(record.status_code != 200 or record.json()["text"] != text)
        return lost


def test_eight_clients_across_replicas_and_a_killed_replica_lose_nothing(
    pg_url: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.mktemp("kill")
    settings = {
        "COGITO_DATABASE_URL": pg_url,
        "COGITO_COLLECTION": "kill_replica",
        "COGITO_ALLOW_REQUEST_SCOPE": "true",
    }
    services = [
        start_service(root / name / "store", token=TOKEN, settings=settings, log_name=f"{name}.log")
        for name in ("a", "b")
    ]
    run = _AlternatingClients(services, kill_after=40)
    try:
        run.run()
        lost = run.lost()
    finally:
        for service in services:
            service.stop()
    sys.stderr.write(f"\nreplicas: {run.figures}, lost acknowledged writes: {lost}\n")
    assert run.killed.is_set()
    assert run.figures["writes_acknowledged"] >= 100
    assert run.figures["cross_scope_reads"] == 0
    assert lost == 0
    # every write is read back on the other replica, but for reads cut off by the kill
    figures = run.figures
    assert figures["read_on_other_replica"] >= figures["writes_acknowledged"] - 8
