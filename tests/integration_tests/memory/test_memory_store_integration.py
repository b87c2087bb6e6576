"""MemoryStore on real embedded Chroma with real embeddings, across processes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from langchain_chroma import Chroma
from langchain_core.embeddings import Embeddings

from cogito_lc import MemoryStore
from tests.integration_tests.conftest import EXAMPLES_DATA

WRITER = textwrap.dedent(
    """
    import sys
    from langchain_chroma import Chroma
    from cogito_lc import MemoryStore
    from cogito_lc.embeddings import local_embeddings

    store = Chroma("persisted", local_embeddings(), persist_directory=sys.argv[1])
    memory = MemoryStore(store, scope={"user_id": "alice"})
    ids = memory.store_many([f"Persisted memory number {i} about ledger {i}." for i in range(20)])
    memory.store("Auth tokens expire after 3600 seconds.", metadata={"topic": "auth"})
    print(len(ids))
    """
)


def test_writes_survive_the_process_and_reopen(tmp_path: Path, minilm: Embeddings) -> None:
    directory = tmp_path / "store"
    done = subprocess.run(
        [sys.executable, "-c", WRITER, str(directory)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert done.stdout.strip().splitlines()[-1] == "20"
    reopened = MemoryStore(
        Chroma("persisted", minilm, persist_directory=str(directory)), scope={"user_id": "alice"}
    )
    assert reopened.count() == 21
    found = reopened.as_retriever(k=1).invoke("how long do auth tokens last?")
    assert found[0].page_content == "Auth tokens expire after 3600 seconds."
    assert found[0].metadata["topic"] == "auth"


def test_seed_the_sample_corpus_and_recall(persistent_chroma: Chroma) -> None:
    memory = MemoryStore(persistent_chroma, scope={"user_id": "demo"})
    summary = memory.seed(EXAMPLES_DATA, progress=False)
    assert summary.failed == []
    assert summary.stored == memory.count() == summary.chunks
    again = memory.seed(EXAMPLES_DATA, progress=False)
    assert (again.stored, again.skipped) == (0, summary.chunks)
    docs = memory.as_retriever(k=3).invoke("Which AWS region does production run in?")
    assert any("eu-west-1 (Ireland)" in d.page_content for d in docs)
