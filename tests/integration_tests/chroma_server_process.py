"""Start a real Chroma server (``chroma run``, shipped with chromadb) on a free loopback port."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.integration_tests.service_process import free_port

STARTUP_TIMEOUT = 60.0


@dataclass
class ChromaServer:
    """A running ``chroma run`` process."""

    process: subprocess.Popen[bytes]
    host: str
    port: int
    log_path: Path

    def client(self):  # type: ignore[no-untyped-def]
        import chromadb

        return chromadb.HttpClient(host=self.host, port=self.port)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)


def _chroma_command() -> list[str]:
    beside = Path(sys.executable).with_name("chroma")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("chroma")
    if found is None:
        msg = "the `chroma` command (installed with chromadb) is not on PATH"
        raise RuntimeError(msg)
    return [found]


@contextlib.contextmanager
def chroma_server(directory: Path) -> Iterator[ChromaServer]:
    """Run ``chroma run --path directory`` on 127.0.0.1 until the block ends."""
    directory.mkdir(parents=True, exist_ok=True)
    server = start_chroma_process(directory, free_port(), directory.parent / "chroma-server.log")
    try:
        yield server
    finally:
        server.stop()


def start_chroma_process(directory: Path, port: int, log_path: Path) -> ChromaServer:
    """Start ``chroma run`` on ``directory`` at 127.0.0.1:``port`` and wait until it answers."""
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [
                *_chroma_command(),
                "run",
                "--path",
                str(directory),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server = ChromaServer(process, "127.0.0.1", port, log_path)
    _wait_ready(server)
    return server


def _wait_ready(server: ChromaServer) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    url = f"http://{server.host}:{server.port}/api/v2/heartbeat"
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            log = server.log_path.read_text(errors="replace")[-2000:]
            msg = f"chroma run exited with {server.process.returncode}:\n{log}"
            raise RuntimeError(msg)
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    server.stop()
    msg = f"chroma run did not answer {url} within {STARTUP_TIMEOUT:.0f} s"
    raise RuntimeError(msg)
