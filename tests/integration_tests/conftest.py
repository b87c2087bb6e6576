"""Integration fixtures: real all-MiniLM-L6-v2 embeddings (offline) and embedded Chroma."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_chroma import Chroma
from langchain_core.embeddings import Embeddings

from cogito_lc.embeddings import local_embeddings
from tests.integration_tests.backends import backend  # noqa: F401
from tests.integration_tests.conftest_llm import llama_server, llm_chat_model  # noqa: F401
from tests.integration_tests.conftest_pg import (  # noqa: F401
    close_postgres_memories,
    pg_collection,
    pg_url,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

EXAMPLES_DATA = Path(__file__).resolve().parents[2] / "examples" / "data"


@pytest.fixture(scope="session")
def minilm() -> Embeddings:
    return local_embeddings()


@pytest.fixture
def chroma_dir(tmp_path: Path) -> Path:
    return tmp_path / "chroma"


@pytest.fixture
def persistent_chroma(minilm: Embeddings, chroma_dir: Path) -> Iterator[Chroma]:
    store = Chroma(
        collection_name=f"it-{uuid.uuid4().hex[:12]}",
        embedding_function=minilm,
        persist_directory=str(chroma_dir),
    )
    yield store
    store.delete_collection()
