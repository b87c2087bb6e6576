"""One end-to-end run on real parts: add (fact extraction), recall and snapshot.

Real embedded Chroma, real all-MiniLM-L6-v2 embeddings and the real local
llama.cpp model (a tiny base model: these tests check that nothing handed in is
lost, that every returned text is stored text, and the method tags, not the
wisdom of the facts).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_chroma import Chroma

from cogito_lc import FactExtractor, MemoryStore
from cogito_lc.memory.calibrate import VocabCalibrator
from cogito_lc.memory.snapshot import SnapshotBuilder, load_snapshot

TRANSCRIPT = (
    "We chose PostgreSQL 16 for the billing service because invoices need multi-row "
    "transactions. Auth tokens expire after 3600 seconds and refresh tokens rotate on use."
)


@pytest.mark.requires_llm
def test_add_recall_and_snapshot_with_a_real_model(
    persistent_chroma: Chroma, llm_chat_model: Callable[..., Any]
) -> None:
    llm = llm_chat_model(max_tokens=384)
    memory = MemoryStore(
        persistent_chroma,
        extractor=FactExtractor.from_llm(llm, structured_output="json_object"),
        scope={"user_id": "e2e"},
    )
    memory.store("Deploys freeze on Fridays after 14:00 UTC.")
    result = memory.add(TRANSCRIPT, context_hints=["project: billing"], max_facts=3)

    assert result.method in {"facts", "no_facts", "fallback_verbatim"}
    stored_texts = {d.page_content for d in memory.list(limit=100)}
    if result.method == "fallback_verbatim":
        assert TRANSCRIPT in stored_texts
    for doc in result.memories:
        assert doc.page_content in stored_texts
        if result.method == "facts":
            assert doc.metadata["source_id"] == result.source_id
            assert 0.0 <= doc.metadata["importance"] <= 1.0

    recalled = memory.as_retriever(k=3).invoke("when do deploys freeze?")
    assert recalled
    assert all(doc.page_content in stored_texts for doc in recalled)

    snapshot = SnapshotBuilder.from_llm(llm, structured_output="json_object").build(
        memory, rebuild=True
    )
    assert snapshot.method in {
        "pointer",
        "grouped|fallback_parse_error",
        "grouped|fallback_error",
    }
    bullets = [line[2:] for line in snapshot.text.splitlines() if line.startswith("- ")]
    for bullet in bullets:
        assert any(text.startswith(bullet.rstrip("\u2026")) for text in stored_texts), bullet
    loaded = load_snapshot(memory)
    assert loaded is not None
    assert loaded.text == snapshot.text


@pytest.mark.requires_llm
def test_calibration_keeps_only_corpus_terms(
    persistent_chroma: Chroma, llm_chat_model: Callable[..., Any]
) -> None:
    memory = MemoryStore(persistent_chroma)
    memory.store_many(
        [
            "Search p95 latency budget is 250 ms.",
            "Ingest throughput is 4k events per second.",
            "Auth tokens expire after 3600 seconds.",
        ]
    )
    calibrator = VocabCalibrator.from_llm(
        llm_chat_model(max_tokens=256), structured_output="json_object"
    )
    result = calibrator.calibrate(memory, dry_run=True)
    assert result.method in {"calibrated", "empty", "fallback_parse_error"}
    corpus = " ".join(d.page_content.lower() for d in memory.list())
    for terms in result.vocab_map.values():
        for term in terms:
            assert term.lower() in corpus
