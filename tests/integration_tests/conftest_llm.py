"""Fixtures for tests that need a real local language model.

Import them from ``tests/integration_tests/conftest.py``::

    from tests.integration_tests.conftest_llm import llama_server, llm_chat_model  # noqa: F401

If ``llama-cpp-python[server]`` is not installed, every test that uses these
fixtures fails with an explanation, so a CI job cannot pass without exercising the
model. Set ``COGITO_SKIP_LLM_TESTS=1`` to skip them instead (for machines that
cannot build llama-cpp-python).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.integration_tests.llm_server import (
    LlamaServer,
    chat_model,
    llama_cpp_server_available,
    start_llama_server,
)

SKIP_LLM_TESTS_ENV_VAR = "COGITO_SKIP_LLM_TESTS"

_MISSING_SERVER = (
    "llama-cpp-python with its server extra is not installed, so the LLM integration "
    "tests cannot run. Install it with: pip install 'llama-cpp-python[server]' "
    f"(see the Makefile), or set {SKIP_LLM_TESTS_ENV_VAR}=1 to skip these tests."
)


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """A llama-cpp-python server on loopback serving Gemma 3 270M, for the whole session."""
    if os.environ.get(SKIP_LLM_TESTS_ENV_VAR) == "1":
        pytest.skip(f"{SKIP_LLM_TESTS_ENV_VAR}=1")
    if not llama_cpp_server_available():
        pytest.fail(_MISSING_SERVER, pytrace=False)
    server = start_llama_server(tmp_path_factory.mktemp("llama_server"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def llm_chat_model(llama_server: LlamaServer) -> Callable[..., Any]:
    """Factory for ``ChatOpenAI`` clients of :func:`llama_server` with a real token cap."""

    def make(*, max_tokens: int = 256, **kwargs: Any) -> Any:
        return chat_model(llama_server, max_tokens=max_tokens, **kwargs)

    return make
