"""Outages fail fast: Postgres or a Chroma server stopped and started under writes.

Two service replicas (real uvicorn processes) share one dependency; clients write
through both while it is stopped and started again. While it is away every
request is answered 503 with ``Retry-After`` within 2 s and ``/health`` names it
within 1 s; it comes back without a restart, the first write after that is as
fast as any other, and every write answered 200 is read back afterwards.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.integration_tests.chroma_server_process import (
    ChromaServer,
    chroma_server,
    start_chroma_process,
)
from tests.integration_tests.conftest_pg import private_postgres, stop_postgres
from tests.integration_tests.service_process import ServiceProcess, checked_service

DOWN_ANSWER_S = 2.0
"""Most seconds a request may take while the dependency is away."""
HEALTH_ANSWER_S = 1.0
"""Most seconds ``/health`` may take to say the dependency is away."""
FIRST_WRITE_S = 1.0
"""Most seconds the first write after recovery may take (or twice a usual write, if slower)."""
DOWN_FOR_S = 3.0
"""How long the dependency stays away while clients keep writing."""
UP_FOR_S = 2.0
"""How long clients write before the dependency goes away."""
WRITERS = 4


@dataclass
class Answer:
    """One ``/store`` request as a client saw it."""

    replica: int
    started: float
    seconds: float
    status: int | str
    retry_after: str | None
    text: str
    memory_id: str | None = None


@dataclass
class Writers:
    """Clients writing distinct memories through both replicas until stopped."""

    replicas: list[ServiceProcess]
    answers: list[Answer] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    counter: Iterator[int] = field(default_factory=itertools.count)

    def run(self) -> None:
        clients = [replica.client(timeout=10) for replica in self.replicas]
        try:
            while not self.stop.is_set():
                number = next(self.counter)
                replica = number % len(self.replicas)
                self.record(
                    replica, clients[replica], f"Outage drill write {number}: port {number}."
                )
                time.sleep(0.02)
        finally:
            for client in clients:
                client.close()

    def record(self, replica: int, client: httpx.Client, text: str) -> None:
        started = time.monotonic()
        try:
            response = client.post("/store", json={"text": text})
        except httpx.HTTPError as exc:  # a hang shows up here as a client timeout
            answer = Answer(
                replica, started, time.monotonic() - started, type(exc).__name__, None, text
            )
        else:
            answer = Answer(
                replica,
                started,
                time.monotonic() - started,
                response.status_code,
                response.headers.get("Retry-After"),
                text,
                response.json().get("id") if response.status_code == 200 else None,
            )
        with self.lock:
            self.answers.append(answer)


@dataclass
class Drill:
    """What the drill measured, for the assertions and the report line."""

    stopping_at: float = 0.0
    down_at: float = 0.0
    up_at: float = 0.0
    health_down: list[tuple[int, float, str]] = field(default_factory=list)
    recovered_after: list[float] = field(default_factory=list)
    first_writes: list[float] = field(default_factory=list)


def _health_while_down(replicas: list[ServiceProcess]) -> list[tuple[int, float, str]]:
    found = []
    for replica in replicas:
        started = time.monotonic()
        response = httpx.get(f"{replica.base_url}/health", timeout=10)
        seconds = time.monotonic() - started
        assert response.headers.get("Retry-After"), response.headers
        found.append((response.status_code, seconds, response.json()["detail"]))
    return found


def _wait_healthy(replica: ServiceProcess, since: float, timeout: float = 15.0) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{replica.base_url}/health", timeout=5).status_code == 200:
                return time.monotonic() - since
        time.sleep(0.05)
    pytest.fail(f"{replica.base_url} did not recover within {timeout:.0f} s:\n{replica.log_tail()}")


def _first_write(replica: ServiceProcess, text: str) -> float:
    with replica.client(timeout=10) as client:
        started = time.monotonic()
        response = client.post("/store", json={"text": text})
        seconds = time.monotonic() - started
    assert response.status_code == 200, response.text
    return seconds


def _drill(
    replicas: list[ServiceProcess], stop: Callable[[], None], start: Callable[[], None]
) -> tuple[Drill, Writers]:
    drill = Drill()
    writers = Writers(replicas)
    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        running = [pool.submit(writers.run) for _ in range(WRITERS)]
        try:
            time.sleep(UP_FOR_S)
            drill.stopping_at = time.monotonic()
            stop()
            drill.down_at = time.monotonic()
            drill.health_down = _health_while_down(replicas)  # at once: no time to notice
            time.sleep(DOWN_FOR_S)
            writers.stop.set()
            for future in running:
                future.result()
            start()
            drill.up_at = time.monotonic()
            drill.recovered_after = [_wait_healthy(r, drill.up_at) for r in replicas]
            drill.first_writes = [
                _first_write(r, f"First write after the outage through replica {n}.")
                for n, r in enumerate(replicas)
            ]
        finally:
            writers.stop.set()
    return drill, writers


def _lost(replicas: list[ServiceProcess], answers: list[Answer]) -> int:
    lost = 0
    clients = [replica.client(timeout=10) for replica in replicas]
    try:
        for answer in answers:
            if answer.status != 200:
                continue
            reader = clients[(answer.replica + 1) % len(clients)]  # the other replica
            record = reader.get(f"/memories/{answer.memory_id}")
            lost += int(record.status_code != 200 or record.json()["text"] != answer.text)
    finally:
        for client in clients:
            client.close()
    return lost


def _check(name: str, drill: Drill, writers: Writers, replicas: list[ServiceProcess]) -> None:
    answers = writers.answers
    during = [a for a in answers if drill.down_at + 0.3 <= a.started <= drill.up_at]
    refused = [a for a in answers if a.status == 503]
    lost = _lost(replicas, answers)
    slowest_down = max((a.seconds for a in during), default=0.0)
    sys.stderr.write(
        f"\n{name}: {len(answers)} writes, {sum(a.status == 200 for a in answers)} acknowledged, "
        f"{len(refused)} answered 503; slowest answer while down {slowest_down:.3f} s, slowest "
        f"overall {max(a.seconds for a in answers):.3f} s; /health while down "
        f"{[(s, round(t, 3)) for s, t, _ in drill.health_down]}; healthy again "
        f"{[round(t, 2) for t in drill.recovered_after]} s after the restart; first writes "
        f"{[round(t, 3) for t in drill.first_writes]} s; lost {lost}\n"
    )
    assert {a.status for a in answers} <= {200, 503}, [
        a for a in answers if a.status not in {200, 503}
    ]
    assert during, "no write was tried while the dependency was away"
    assert all(a.status == 503 for a in during), [a for a in during if a.status != 503]
    assert all(a.retry_after for a in refused)
    assert slowest_down < DOWN_ANSWER_S
    edge = [a.seconds for a in answers if a.started + a.seconds >= drill.stopping_at]
    assert max(edge) < DOWN_ANSWER_S  # no hang while it was going away either
    for status, seconds, detail in drill.health_down:
        assert status == 503
        assert seconds < HEALTH_ANSWER_S
        assert name in detail
    before = sorted(a.seconds for a in answers if a.status == 200 and a.started < drill.stopping_at)
    usual = before[len(before) // 2] if before else 0.0  # the median write before the outage
    assert all(t < max(FIRST_WRITE_S, 2 * usual) for t in drill.first_writes), (
        drill.first_writes,
        usual,
    )
    assert sum(a.status == 200 for a in answers) >= WRITERS
    assert lost == 0


@contextlib.contextmanager
def _replicas(root: Path, settings: dict[str, str]) -> Iterator[list[ServiceProcess]]:
    with contextlib.ExitStack() as stack, ThreadPoolExecutor(max_workers=2) as pool:
        starting = [
            pool.submit(
                stack.enter_context, checked_service(root / name / "store", settings=settings)
            )
            for name in ("a", "b")
        ]
        yield [future.result() for future in starting]


def test_postgres_outage_fails_fast_and_recovers(tmp_path: Path) -> None:
    with private_postgres() as server:
        settings = {
            "COGITO_DATABASE_URL": server.get_uri(),
            "COGITO_COLLECTION": "outage",
        }
        with _replicas(tmp_path, settings) as replicas:
            drill, writers = _drill(
                replicas,
                lambda: stop_postgres(server.get_pid()),
                server.ensure_postgres_running,
            )
            _check("database", drill, writers, replicas)


def test_chroma_server_outage_fails_fast_and_recovers(tmp_path: Path) -> None:
    directory = tmp_path / "chroma"
    restarted: list[ChromaServer] = []
    with chroma_server(directory) as server:
        settings = {
            "COGITO_CHROMA_HOST": server.host,
            "COGITO_CHROMA_PORT": str(server.port),
            "COGITO_COLLECTION": "outage",
        }
        try:
            with _replicas(tmp_path, settings) as replicas:
                drill, writers = _drill(
                    replicas,
                    server.stop,
                    lambda: restarted.append(
                        start_chroma_process(directory, server.port, server.log_path)
                    ),
                )
                _check("Chroma server", drill, writers, replicas)
        finally:
            for again in restarted:
                again.stop()
