"""Versions over real stores: Postgres replicas, a persistent Chroma store, a real local model."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from cogito_lc import MemoryStore, SupersessionJudge, SupersessionMethod
from cogito_lc._core.versions import supersedes_value

AUSTIN = "I just moved to Austin, Texas."
DENVER = "I'm all settled in Denver now."
PHONE = "My phone number is 555-0101."
QUESTION = "Where does the user live?"


def _replica(pg_url: str, collection: str, embeddings: Embeddings) -> MemoryStore:
    return MemoryStore.from_database_url(
        pg_url, embeddings=embeddings, collection=collection, scope={"user_id": "alice"}
    )


def test_postgres_replicas_share_versions_and_forgetting(
    pg_url: str, pg_collection: str, minilm: Embeddings
) -> None:
    first = _replica(pg_url, pg_collection, minilm)
    second = _replica(pg_url, pg_collection, minilm)
    old = first.store(AUSTIN, created_at="2026-01-01T00:00:00Z")
    assert [d.id for d in second.as_retriever(k=3).invoke(QUESTION)][:1] == [old.id]
    new = first.store(DENVER, created_at="2026-03-01T00:00:00Z", supersedes=[old.id or ""])

    recall = second.as_retriever(k=5)
    assert old.id not in {d.id for d in recall.invoke(QUESTION)}
    assert [d.id for d in recall.invoke(QUESTION, as_of="2026-02-01")] == [old.id]
    assert [d.id for d in second.history(old.id or "")] == [old.id, new.id]
    with pytest.raises(ValueError, match="before every memory"):
        second.search(QUESTION, as_of="2025-06-01")
    stored_old = second.get(old.id or "")
    assert stored_old is not None
    assert stored_old.page_content == AUSTIN
    assert stored_old.metadata["superseded_by"] == new.id

    phone = second.store(PHONE)
    assert phone.id in {d.id for d in recall.invoke("what is my phone number")}
    forgotten = second.forget("my phone number")
    assert forgotten.ids == [phone.id]
    for replica in (first, second):
        found = replica.as_retriever(k=10).invoke("phone number 555-0101", include_superseded=True)
        assert phone.id not in {d.id for d in found}
        assert replica.get(phone.id or "") is None
        assert all("555" not in d.page_content for d in replica.list(limit=100))
        assert all("555" not in d.page_content for d, _ in replica.search("phone", k=10))


def test_postgres_start_up_completes_a_supersession_cut_short(
    pg_url: str, pg_collection: str, minilm: Embeddings
) -> None:
    writer = _replica(pg_url, pg_collection, minilm)
    old = writer.store(AUSTIN, created_at="2026-01-01T00:00:00Z")
    cut_short = Document(
        page_content=DENVER,
        id="denver-1",
        metadata={
            "user_id": "alice",
            "created_at": "2026-03-01T00:00:00+00:00",
            "supersedes": supersedes_value([old.id or ""]),
        },
    )
    writer._store.add_new([cut_short])  # the new memory written, the old one not yet marked
    stored = writer.get(old.id or "")
    assert stored is not None
    assert "superseded_by" not in stored.metadata

    restarted = _replica(pg_url, pg_collection, minilm)
    marked = restarted.get(old.id or "")
    assert marked is not None
    assert marked.metadata["superseded_by"] == "denver-1"
    assert marked.page_content == AUSTIN
    assert [d.id for d in restarted.list(include_superseded=False)] == ["denver-1"]


def test_a_forgotten_memory_stays_gone_after_a_restart(
    persistent_chroma: Chroma, chroma_dir: Path, minilm: Embeddings
) -> None:
    memory = MemoryStore(persistent_chroma, scope={"user_id": "alice"})
    phone = memory.store(PHONE)
    kept = memory.store(AUSTIN)
    result = memory.add("Please forget my phone number.")
    assert result.forgotten == [phone.id]
    audits = sorted(chroma_dir.glob("forget-audit-*.json"))
    assert len(audits) == 1
    assert "555" not in audits[0].read_text(encoding="utf-8")

    reopened_store = Chroma(
        persistent_chroma._collection.name, minilm, persist_directory=str(chroma_dir)
    )
    reopened = MemoryStore(reopened_store, scope={"user_id": "alice"})
    lexical_hit = reopened.as_retriever(k=5).invoke("555-0101", include_superseded=True)
    assert phone.id not in {d.id for d in lexical_hit}
    assert reopened.get(phone.id or "") is None
    assert [d.id for d in reopened.list()] == [kept.id]
    assert reopened._lexical is not None
    assert all(doc.id != phone.id for doc, _ in reopened._lexical.search("555-0101", k=5))


def test_the_local_model_judge_never_alters_a_stored_memory(
    persistent_chroma: Chroma, llm_chat_model: Callable[..., Any]
) -> None:
    judge = SupersessionJudge.from_llm(llm_chat_model(max_tokens=64))
    memory = MemoryStore(persistent_chroma, scope={"user_id": "alice"}, judge=judge)
    texts = [AUSTIN, "My sister is called Ana.", "Lunch today was ramen."]
    before = {doc.id: (doc.page_content, dict(doc.metadata)) for doc in map(memory.store, texts)}
    result = memory.add(DENVER)
    assert result.supersession in {method.value for method in SupersessionMethod}
    assert set(result.superseded) <= set(before)
    assert set(result.repeated) <= set(before)
    for doc_id, (text, metadata) in before.items():
        stored = memory.get(doc_id or "")
        assert stored is not None
        assert stored.page_content == text
        assert {k: v for k, v in stored.metadata.items() if k not in metadata}.keys() <= {
            "superseded_by",
            "superseded_at",
        }
    if result.superseded:
        new = result.memories[0]
        assert json.loads(new.metadata["supersedes"]) == result.superseded
