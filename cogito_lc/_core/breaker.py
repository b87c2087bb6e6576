"""A circuit breaker for a dependency that can go away (a database, a store server).

After a failure the breaker *opens*: callers check it first and fail at once
instead of waiting for timeouts, and a background thread probes the dependency
until it answers again, then *closes* the breaker. The probe is also where the
caller refills what the outage broke (a connection pool), so the first request
after recovery is as fast as any other.

Example:
    ```python
    import time

    from cogito_lc._core.breaker import CircuitBreaker, CircuitOpenError

    answers = iter([False, True])

    def probe() -> None:
        if not next(answers):
            raise ConnectionError("still down")

    breaker = CircuitBreaker("database", probe, interval=0.01)
    breaker.check()  # closed: nothing happens
    breaker.trip("connection refused")
    try:
        breaker.check()
    except CircuitOpenError as exc:
        assert exc.name == "database" and "refused" in str(exc)
    deadline = time.monotonic() + 5
    while breaker.is_open and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not breaker.is_open  # the second probe answered
    breaker.stop()
    ```
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

__all__ = ["CircuitBreaker", "CircuitOpenError"]

logger = logging.getLogger(__name__)


class CircuitOpenError(RuntimeError):
    """The dependency failed recently and is being probed; retry shortly.

    Args:
        name: The dependency's name (``"database"``, ``"chroma"``).
        reason: Why the breaker opened.
    """

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name} is unavailable: {reason}")
        self.name = name
        """The dependency's name."""
        self.reason = reason
        """Why the breaker opened."""


class CircuitBreaker:
    """Opens on a failure, probes in the background, closes when the probe passes.

    Thread-safe. While open, :meth:`check` raises :class:`CircuitOpenError` at
    once; one daemon thread per open period calls ``probe`` right away, then
    every ``interval`` seconds, until it returns without raising.

    Args:
        name: The dependency's name, used in errors and logs.
        probe: Checks the dependency (and restores what callers need, such as a
            connection pool); raises while the dependency is unavailable. It
            should bound its own time (connect timeouts).
        interval: Seconds between two probes.
    """

    def __init__(self, name: str, probe: Callable[[], None], *, interval: float = 0.5) -> None:
        self.name = name
        self.interval = interval
        self._probe = probe
        self._lock = threading.Lock()
        self._open = False
        self._reason = ""
        self._opened_at = 0.0
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()

    def __repr__(self) -> str:
        state = "open" if self._open else "closed"
        return f"CircuitBreaker({self.name!r}, {state})"

    @property
    def is_open(self) -> bool:
        """True while the dependency is considered unavailable."""
        return self._open

    @property
    def reason(self) -> str:
        """Why the breaker last opened ('' if it never did)."""
        return self._reason

    def check(self) -> None:
        """Return if the breaker is closed.

        Raises:
            CircuitOpenError: If it is open.
        """
        if self._open:
            raise CircuitOpenError(self.name, self._reason)

    def trip(self, reason: str) -> None:
        """Open the breaker (if closed) and start probing the dependency."""
        with self._lock:
            if self._open or self._stopped.is_set():
                return
            self._open = True
            self._reason = reason
            self._opened_at = time.monotonic()
            self._thread = threading.Thread(
                target=self._probe_until_closed, name=f"breaker-{self.name}", daemon=True
            )
            self._thread.start()
        logger.warning(
            "%s unavailable (%s): failing fast until it answers again", self.name, reason
        )

    def stop(self) -> None:
        """Stop probing and close the breaker for good (the dependency is being shut down)."""
        self._stopped.set()
        with self._lock:
            self._open = False
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def _probe_until_closed(self) -> None:
        while not self._stopped.is_set():
            if self._probe_once():
                with self._lock:
                    self._open = False
                    down = time.monotonic() - self._opened_at
                logger.warning("%s answers again after %.1f s", self.name, down)
                return
            self._stopped.wait(self.interval)

    def _probe_once(self) -> bool:
        try:
            self._probe()
        # Any failure, BaseExceptions too (a probe's SystemExit or CancelledError): a
        # probe thread that died would leave the breaker open for good.
        except BaseException as exc:  # the dependency is still away
            logger.debug("%s probe failed: %s: %s", self.name, type(exc).__name__, exc)
            return False
        return True
