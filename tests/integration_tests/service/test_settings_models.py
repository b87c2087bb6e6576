"""The models the settings build, against a chat model server on 127.0.0.1."""

from __future__ import annotations

import time
from pathlib import Path

from langchain_core.embeddings import Embeddings

from cogito_lc.service.config import CogitoSettings
from cogito_lc.service.models import chat_model_from_settings, memory_from_settings
from tests.integration_tests.model_server import model_server

FACTS = '{"items": [{"content": "Billing uses PostgreSQL 16.", "kind": "decision"}]}'


def _openai_settings(url: str, tmp_path: Path, **fields: object) -> CogitoSettings:
    return CogitoSettings(
        filter_model="openai:m",
        filter_endpoint=f"{url}/v1",
        store_path=tmp_path / "store",
        **fields,  # type: ignore[arg-type]
    )


def test_add_stores_the_text_verbatim_when_extraction_outlasts_the_timeout(
    tmp_path: Path, minilm: Embeddings
) -> None:
    with model_server(reply=FACTS, delay=3) as server:
        settings = _openai_settings(server.url, tmp_path, filter_timeout_ms=500)
        memory = memory_from_settings(settings, embeddings=minilm)

        started = time.monotonic()
        result = memory.add("We chose PostgreSQL 16 for billing: invoices need transactions.")
        elapsed = time.monotonic() - started

    assert elapsed < 2.5
    assert result.method == "fallback_verbatim"
    assert result.extraction == "error"
    assert len(server.received) == 1


def test_add_extracts_facts_from_a_model_answering_in_time(
    tmp_path: Path, minilm: Embeddings
) -> None:
    with model_server(reply=FACTS) as server:
        memory = memory_from_settings(_openai_settings(server.url, tmp_path), embeddings=minilm)
        result = memory.add("We chose PostgreSQL 16 for billing: invoices need transactions.")

    assert result.method == "facts"
    assert [doc.page_content for doc in result.memories] == ["Billing uses PostgreSQL 16."]


def test_the_clients_do_not_retry_past_the_timeout(tmp_path: Path) -> None:
    settings = _openai_settings("http://127.0.0.1:9", tmp_path)

    llm = chat_model_from_settings(settings)

    assert llm is not None
    assert llm.max_retries == 0  # type: ignore[attr-defined]


def test_an_openai_compatible_server_gets_the_token_cap_as_max_tokens(tmp_path: Path) -> None:
    with model_server(reply="ok") as server:
        settings = _openai_settings(server.url, tmp_path, llm_max_tokens=321)
        llm = chat_model_from_settings(settings)
        assert llm is not None
        llm.invoke("hello")

    assert server.received[0]["max_tokens"] == 321  # what llama-cpp-python reads


def test_ollama_gets_the_token_cap_as_num_predict(tmp_path: Path) -> None:
    with model_server(reply="ok") as server:
        settings = CogitoSettings(
            filter_model="ollama:m",
            ollama_url=server.url,
            llm_max_tokens=321,
            store_path=tmp_path / "store",
        )
        llm = chat_model_from_settings(settings)
        assert llm is not None
        llm.invoke("hello")

    assert server.received[0]["options"]["num_predict"] == 321


def test_the_token_cap_defaults_to_1024() -> None:
    assert CogitoSettings().llm_max_tokens == 1024
