"""Start the memory service as a real uvicorn process on a free loopback port.

Used by the service tests and the service benchmark. The process gets a
private ``HOME`` and working directory (so no developer config file is read),
an embedded Chroma store in the given directory and the offline MiniLM model.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

STARTUP_TIMEOUT = 180.0
"""Seconds to wait for the service to answer ``/health`` (model loading included)."""

_OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "ANONYMIZED_TELEMETRY": "False",
}


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class ServiceProcess:
    """A running ``python -m cogito_lc.service.server``."""

    process: subprocess.Popen[bytes]
    base_url: str
    log_path: Path
    token: str | None

    @property
    def pid(self) -> int:
        return self.process.pid

    def headers(self, user: str | None = None) -> dict[str, str]:
        """Headers with the bearer token and, if given, the request scope."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        if user is not None:
            headers["X-Cogito-User"] = user
        return headers

    def client(self, *, user: str | None = None, timeout: float = 60.0) -> httpx.Client:
        """An HTTP client for the service, authenticated and scoped to ``user``."""
        return httpx.Client(base_url=self.base_url, headers=self.headers(user), timeout=timeout)

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-chars:]

    def kill(self) -> None:
        """SIGKILL: no shutdown handler runs."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM (graceful shutdown), then SIGKILL if it hangs."""
        if self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()


def _environment(store: Path, port: int, settings: Mapping[str, str]) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("COGITO_")}
    env.update(_OFFLINE_ENV)
    env.update(
        {
            "HOME": str(store.parent),
            "COGITO_HOST": "127.0.0.1",
            "COGITO_PORT": str(port),
            "COGITO_STORE_PATH": str(store),
        }
    )
    env.update(settings)
    return env


def _wait_ready(service: ServiceProcess, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if service.process.poll() is not None:
            msg = f"the service exited with {service.process.returncode}:\n{service.log_tail()}"
            raise RuntimeError(msg)
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{service.base_url}/health", timeout=2).status_code == 200:
                return
        time.sleep(0.25)
    service.kill()
    msg = f"the service did not answer /health within {timeout:.0f} s:\n{service.log_tail()}"
    raise RuntimeError(msg)


def start_service(
    store: Path,
    *,
    token: str | None = None,
    settings: Mapping[str, str] | None = None,
    log_name: str = "service.log",
    timeout: float = STARTUP_TIMEOUT,
) -> ServiceProcess:
    """Start the service on ``store`` and return once ``/health`` answers 200.

    Args:
        store: Directory of the embedded Chroma store (created if missing).
        token: ``COGITO_API_TOKEN`` to require, or None.
        settings: More ``COGITO_*`` variables.
        log_name: File name of the process log, next to ``store``.
        timeout: Seconds to wait for the service.
    """
    extra = dict(settings or {})
    if token is not None:
        extra["COGITO_API_TOKEN"] = token
    store.mkdir(parents=True, exist_ok=True)
    log_path = store.parent / log_name
    port = free_port()
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "cogito_lc.service.server", "--log-level", "warning"],
            cwd=store.parent,
            env=_environment(store, port, extra),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    service = ServiceProcess(process, f"http://127.0.0.1:{port}", log_path, token)
    _wait_ready(service, timeout)
    return service


@contextlib.contextmanager
def checked_service(
    store: Path, *, token: str | None = None, settings: Mapping[str, str] | None = None
) -> Iterator[ServiceProcess]:
    """A service (:func:`start_service`) stopped on exit, whose log must show no traceback."""
    process = start_service(store, token=token, settings=settings)
    try:
        yield process
    finally:
        process.stop()
    log = process.log_tail(1_000_000)
    assert "Traceback" not in log, log[log.index("Traceback") - 2000 :][:8000]
