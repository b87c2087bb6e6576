"""RecallB with real all-MiniLM-L6-v2 embeddings over embedded, persistent Chroma."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from cogito_lc import METADATA_KEY, RecallB
from tests.integration_tests.conftest import EXAMPLES_DATA


def sample_memories() -> list[Document]:
    docs = []
    for path in sorted(EXAMPLES_DATA.glob("*.md")):
        for block in path.read_text().split("\n\n"):
            text = block.strip()
            if text and not text.startswith("#"):
                docs.append(
                    Document(
                        page_content=text,
                        metadata={"source": path.name},
                        id=f"{path.stem}-{len(docs)}",
                    )
                )
    return docs


@pytest.fixture
def sample_store(persistent_chroma: Chroma) -> Chroma:
    docs = sample_memories()
    persistent_chroma.add_documents(docs, ids=[d.id for d in docs])
    return persistent_chroma


QUESTIONS = json.loads((EXAMPLES_DATA / "questions.json").read_text())


@pytest.mark.parametrize("case", QUESTIONS, ids=[q["question"] for q in QUESTIONS])
def test_sample_questions_find_their_memory(sample_store: Chroma, case: dict[str, str]) -> None:
    docs = RecallB(vectorstore=sample_store, k=3).invoke(case["question"])
    assert any(case["expected_substring"] in d.page_content for d in docs), [
        d.page_content for d in docs
    ]


def test_documents_come_back_verbatim(sample_store: Chroma) -> None:
    stored = {d.id: d for d in sample_memories()}
    for doc in RecallB(vectorstore=sample_store, k=10).invoke("billing service invoices"):
        assert doc.id in stored
        assert doc.page_content == stored[doc.id].page_content
        meta = {k: v for k, v in doc.metadata.items() if k != METADATA_KEY}
        assert meta == stored[doc.id].metadata


async def test_async_matches_sync_on_real_embeddings(sample_store: Chroma) -> None:
    retriever = RecallB(vectorstore=sample_store, k=5)
    query = "what broke the production deploy in March?"
    assert [d.id for d in await retriever.ainvoke(query)] == [d.id for d in retriever.invoke(query)]


def test_where_filter_confines_every_run(sample_store: Chroma) -> None:
    retriever = RecallB(
        vectorstore=sample_store, k=10, search_kwargs={"filter": {"source": "preferences.md"}}
    )
    docs = retriever.invoke("auth tokens postgres latency budget")
    assert docs
    assert {d.metadata["source"] for d in docs} == {"preferences.md"}


def test_store_opened_again_from_disk_in_another_process(
    sample_store: Chroma, chroma_dir: Path
) -> None:
    collection = sample_store._collection.name
    script = textwrap.dedent(
        f"""
        from langchain_chroma import Chroma
        from cogito_lc import RecallB
        from cogito_lc.embeddings import local_embeddings
        store = Chroma(collection_name={collection!r}, embedding_function=local_embeddings(),
                       persist_directory={str(chroma_dir)!r})
        print(RecallB(vectorstore=store, k=1).invoke("how long do auth tokens last?")[0].id)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300
    )
    expected = RecallB(vectorstore=sample_store, k=1).invoke("how long do auth tokens last?")
    assert out.stdout.strip().splitlines()[-1] == expected[0].id


def test_real_embeddings_are_normalised_384_d(minilm: Embeddings) -> None:
    vector = minilm.embed_query("auth tokens expire after 3600 seconds")
    assert len(vector) == 384
    assert abs(sum(v * v for v in vector) - 1.0) < 1e-3


def test_the_local_model_serves_concurrent_threads(minilm: Embeddings) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from cogito_lc.retrievers._subquery_vectors import embed_subqueries

    queries = [("word " * n).strip() + f" query {n}" for n in range(1, 41)]

    def work(n: int) -> int:
        if n % 2:
            return len(minilm.embed_documents([queries[n], queries[n] + " longer tail"]))
        vectors, _ = embed_subqueries(minilm, [queries[n], "query", f"word {n}"])
        return len(vectors)

    with ThreadPoolExecutor(max_workers=8) as pool:
        sizes = list(pool.map(work, range(40)))
    assert sizes == [2 if n % 2 else 3 for n in range(40)]


async def test_the_lexical_run_goes_beside_the_forward_pass_on_a_core_fewer(
    sample_store: Chroma, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    import torch

    from cogito_lc.retrievers import recall_b

    retriever = RecallB(vectorstore=sample_store, k=5)
    assert retriever.lexical_sync is not None
    query = "which port does the billing service listen on?"
    expected = [d.id for d in retriever.invoke(query)]
    caller = threading.get_ident()
    lexical_threads: list[int] = []
    forward_threads: list[int] = []
    original_run = recall_b.RecallB._lexical_run
    original_forward = recall_b.embed_with_plan.__globals__["_forward"]

    def recording_run(self: RecallB, text: str) -> object:
        lexical_threads.append(threading.get_ident())
        return original_run(self, text)

    def recording_forward(*args: object) -> object:
        forward_threads.append(torch.get_num_threads())
        return original_forward(*args)

    monkeypatch.setattr(recall_b.RecallB, "_lexical_run", recording_run)
    monkeypatch.setitem(recall_b.embed_with_plan.__globals__, "_forward", recording_forward)
    full = torch.get_num_threads()

    assert [d.id for d in retriever.invoke(query)] == expected
    assert [d.id for d in await retriever.ainvoke(query)] == expected
    assert len(lexical_threads) == 2
    assert caller not in lexical_threads
    assert forward_threads == [max(1, full - 1)] * 2
    assert torch.get_num_threads() == full
