"""The circuit breaker: fails fast while open, probes in the background, closes on success."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from cogito_lc._core.breaker import CircuitBreaker, CircuitOpenError


def _wait_closed(breaker: CircuitBreaker, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while breaker.is_open and time.monotonic() < deadline:
        time.sleep(0.005)


class _Dependency:
    """A probe target that is down until told otherwise, counting the probes."""

    def __init__(self) -> None:
        self.up = threading.Event()
        self.probes = 0

    def probe(self) -> None:
        self.probes += 1
        if not self.up.is_set():
            msg = "connection refused"
            raise ConnectionError(msg)


def test_a_closed_breaker_lets_calls_through() -> None:
    breaker = CircuitBreaker("database", lambda: None)
    breaker.check()
    assert not breaker.is_open
    assert breaker.reason == ""


def test_an_open_breaker_fails_fast_until_the_probe_passes() -> None:
    dependency = _Dependency()
    breaker = CircuitBreaker("database", dependency.probe, interval=0.01)
    breaker.trip("connection refused")
    with pytest.raises(CircuitOpenError) as caught:
        breaker.check()
    assert caught.value.name == "database"
    assert "refused" in str(caught.value)
    time.sleep(0.1)
    assert breaker.is_open
    assert dependency.probes >= 2  # probed again and again while down
    dependency.up.set()
    _wait_closed(breaker)
    assert not breaker.is_open
    breaker.check()
    breaker.stop()


def test_tripping_an_open_breaker_starts_no_second_probe() -> None:
    dependency = _Dependency()
    name = f"chroma-{uuid.uuid4().hex[:8]}"  # no other test's probe thread has this name
    breaker = CircuitBreaker(name, dependency.probe, interval=0.01)
    for _ in range(20):
        breaker.trip("refused")
    probes = [t for t in threading.enumerate() if t.name == f"breaker-{name}"]
    assert len(probes) == 1
    assert breaker.reason == "refused"  # the first reason is kept
    dependency.up.set()
    _wait_closed(breaker)
    assert not breaker.is_open
    dependency.up.clear()
    breaker.trip("refused again")  # a new outage: a new probe
    assert breaker.is_open
    assert breaker.reason == "refused again"
    dependency.up.set()
    _wait_closed(breaker)
    assert not breaker.is_open
    breaker.stop()


def test_stop_ends_probing_and_closes_for_good() -> None:
    dependency = _Dependency()
    breaker = CircuitBreaker("database", dependency.probe, interval=0.01)
    breaker.trip("refused")
    breaker.stop()
    assert not breaker.is_open
    probes = dependency.probes
    time.sleep(0.05)
    assert dependency.probes == probes
    breaker.trip("refused")  # a stopped breaker stays closed
    assert not breaker.is_open


@pytest.mark.parametrize("error", [SystemExit(1), KeyboardInterrupt()])
def test_a_probe_raising_a_base_exception_keeps_probing_until_it_passes(
    error: BaseException,
) -> None:
    calls: list[int] = []

    def probe() -> None:
        calls.append(1)
        if len(calls) < 3:
            raise error

    breaker = CircuitBreaker(f"model-{uuid.uuid4().hex[:6]}", probe, interval=0.01)
    breaker.trip("timed out")
    _wait_closed(breaker)

    assert not breaker.is_open
    assert len(calls) == 3
    breaker.stop()
