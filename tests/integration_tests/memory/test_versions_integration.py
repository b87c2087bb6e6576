"""Versions over real stores: Postgres replicas, a persistent Chroma store, a real local model."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from cogito_lc import MemoryNotFoundError, MemoryStore, SupersessionJudge, SupersessionMethod
from cogito_lc._core.versions import supersedes_value
from cogito_lc.memory.snapshot import SnapshotBuilder, load_snapshot
from cogito_lc.stores import postgres
from tests.integration_tests.conftest_pg import closed_after_test
from tests.races import HeldEmbeddings, in_threads, slow_reads, while_held

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


def _slow_replica(pg_url: str, collection: str) -> MemoryStore:
    """A replica of its own (own pool, own process lock) whose reads by id take 50 ms."""
    replica = _replica(pg_url, collection, DeterministicFakeEmbedding(size=16))
    return slow_reads(closed_after_test(replica), seconds=0.05)


def test_two_postgres_replicas_never_both_supersede_one_memory(
    pg_url: str, pg_collection: str
) -> None:
    first, second = (_slow_replica(pg_url, pg_collection) for _ in range(2))
    for attempt in range(3):
        old = first.store(f"{AUSTIN} ({attempt})")
        results = in_threads(
            partial(first.store, DENVER, supersedes=[old.id or ""]),
            partial(second.store, f"I live in Boston now ({attempt}).", supersedes=[old.id or ""]),
        )
        assert sum(isinstance(result, MemoryNotFoundError) for result in results) == 1, results
        [current] = first.list(include_superseded=False)
        assert current.id in {getattr(result, "id", None) for result in results}
        assert second.get(old.id or "").metadata["superseded_by"] == current.id  # type: ignore[union-attr]
        first.forget(ids=[current.id or ""])


KILLED_BEFORE_THE_MARKS = textwrap.dedent(
    """
    import os, sys
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from cogito_lc import MemoryStore
    from cogito_lc.stores.postgres import PostgresAdapter

    url, collection, old_id = sys.argv[1:4]
    memory = MemoryStore.from_database_url(
        url, embeddings=DeterministicFakeEmbedding(size=16), collection=collection,
        scope={"user_id": "alice"},
    )
    PostgresAdapter.set_metadata = lambda *args, **kwargs: os._exit(9)  # killed right here
    memory.store("I'm all settled in Denver now.", supersedes=[old_id])
    """
)


def test_a_replica_killed_between_a_supersessions_write_and_marks_leaves_no_second_current(
    pg_url: str, pg_collection: str
) -> None:
    first = closed_after_test(_replica(pg_url, pg_collection, DeterministicFakeEmbedding(size=16)))
    old = first.store(AUSTIN)

    killed = subprocess.run(
        [sys.executable, "-c", KILLED_BEFORE_THE_MARKS, pg_url, pg_collection, old.id or ""],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert killed.returncode == 9, killed.stderr
    assert [d.id for d in first.list(include_superseded=True)] == [old.id]
    new = first.store("I live in Boston now.", supersedes=[old.id or ""])
    assert [d.id for d in first.list(include_superseded=False)] == [new.id]
    assert [d.id for d in first.history(old.id or "")] == [old.id, new.id]


def test_a_forget_on_one_postgres_replica_racing_a_supersede_on_another_leaves_neither(
    pg_url: str, pg_collection: str
) -> None:
    first, second = (_slow_replica(pg_url, pg_collection) for _ in range(2))
    for attempt in range(3):
        old = first.store(f"{PHONE} ({attempt})")
        results = in_threads(
            partial(first.forget, ids=[old.id or ""]),
            partial(second.store, "My phone number is now 555-0202.", supersedes=[old.id or ""]),
        )
        assert not isinstance(results[0], Exception), results
        assert first.count() == 0, results


@pytest.mark.parametrize("stalled_call", ["supersede", "update", "forget"])
def test_a_postgres_replica_waiting_on_its_model_holds_no_other_replica_back(
    pg_url: str, pg_collection: str, stalled_call: str
) -> None:
    embeddings = HeldEmbeddings(DeterministicFakeEmbedding(size=16))
    stalled = closed_after_test(_replica(pg_url, pg_collection, embeddings))
    other = closed_after_test(_replica(pg_url, pg_collection, DeterministicFakeEmbedding(size=16)))
    austin, phone = other.store(AUSTIN), other.store(PHONE)
    calls: dict[str, Callable[[], Any]] = {
        "supersede": partial(stalled.store, "I live in Boston now.", supersedes=[austin.id or ""]),
        "update": partial(stalled.update, austin.id or "", "I just moved to Austin, Texas!"),
        "forget": partial(stalled.forget, AUSTIN),
    }
    new_phone = while_held(
        embeddings,
        calls[stalled_call],
        partial(other.store, "My phone number is now 555-0202.", supersedes=[phone.id or ""]),
    )
    assert not isinstance(new_phone, Exception), new_phone
    assert other.get(phone.id or "").metadata["superseded_by"] == new_phone.id  # type: ignore[union-attr]
    assert (other.get(austin.id or "") is None) == (stalled_call == "forget")


def test_a_lock_connection_lost_as_a_supersession_ends_reports_the_write_done(
    pg_url: str, pg_collection: str
) -> None:
    import psycopg

    memory = _slow_replica(pg_url, pg_collection)
    old = memory.store(AUSTIN)
    mark = memory._apply_marks
    terminated: list[Any] = []

    def mark_then_lose_the_lock(*args: Any, **kwargs: Any) -> Any:
        marked = mark(*args, **kwargs)
        with psycopg.connect(pg_url, autocommit=True) as admin:
            terminated.extend(
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_locks "
                    "WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()"
                ).fetchall()
            )
        return marked

    memory._apply_marks = mark_then_lose_the_lock  # type: ignore[method-assign]
    new = memory.store(DENVER, supersedes=[old.id or ""])  # the server released the lock
    assert terminated == [(True,)]
    del memory._apply_marks
    assert memory.get(old.id or "").metadata["superseded_by"] == new.id  # type: ignore[union-attr]
    assert memory.store(PHONE, supersedes=[new.id or ""]).page_content == PHONE  # no outage


HOLDER = textwrap.dedent(
    """
    import sys, time
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from cogito_lc import MemoryStore
    from cogito_lc.stores import postgres

    postgres.WRITE_LOCK_LEASE_S = float(sys.argv[3])
    memory = MemoryStore.from_database_url(
        sys.argv[1], embeddings=DeterministicFakeEmbedding(size=16), collection=sys.argv[2]
    )
    with memory.exclusive():
        print("held", flush=True)
        time.sleep(120)
    """
)


@contextmanager
def _replica_holding_the_lock(
    pg_url: str, collection: str, lease: float = postgres.WRITE_LOCK_LEASE_S
) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the table's write lock, killed at the end."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, pg_url, collection, str(lease)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_a_replica_killed_holding_the_write_lock_does_not_block_the_others(
    pg_url: str, pg_collection: str
) -> None:
    memory = _slow_replica(pg_url, pg_collection)
    old = memory.store(AUSTIN)
    with _replica_holding_the_lock(pg_url, pg_collection):
        done: list[Any] = []
        supersede = partial(memory.store, DENVER, supersedes=[old.id or ""])
        writer = threading.Thread(target=lambda: done.extend(in_threads(supersede)))
        writer.start()
        writer.join(timeout=1.0)
        assert writer.is_alive(), done  # it waits for the other replica's lock
    writer.join(timeout=15)
    assert not writer.is_alive()
    [new] = done
    assert not isinstance(new, Exception), new
    assert memory.get(old.id or "").metadata["superseded_by"] == new.id  # type: ignore[union-attr]


def test_a_replica_frozen_holding_the_write_lock_loses_it_after_its_lease(
    pg_url: str, pg_collection: str
) -> None:
    memory = _slow_replica(pg_url, pg_collection)
    old = memory.store(AUSTIN)
    with _replica_holding_the_lock(pg_url, pg_collection, lease=2.0) as holder:
        holder.send_signal(signal.SIGSTOP)  # alive to the kernel: its socket stays open
        started = time.monotonic()
        new = memory.store(DENVER, supersedes=[old.id or ""])
        waited = time.monotonic() - started
    assert 1.0 < waited < 10.0, waited  # the 2 s lease, not the 20 s wait
    assert memory.get(old.id or "").metadata["superseded_by"] == new.id  # type: ignore[union-attr]


def test_a_live_section_longer_than_the_lease_keeps_the_write_lock(
    pg_url: str, pg_collection: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres, "WRITE_LOCK_LEASE_S", 1.0)
    holder = _slow_replica(pg_url, pg_collection)
    memory = _slow_replica(pg_url, pg_collection)
    old = memory.store(AUSTIN)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with holder.exclusive():
            held.set()
            release.wait(timeout=30)

    thread = threading.Thread(target=hold)
    thread.start()
    assert held.wait(timeout=10)
    threading.Timer(4.0, release.set).start()
    started = time.monotonic()
    memory.store(DENVER, supersedes=[old.id or ""])
    waited = time.monotonic() - started
    thread.join(timeout=10)
    assert waited > 3.5, waited  # it waited for the section, four leases long


def test_a_snapshot_built_across_a_forget_on_another_postgres_replica_is_not_saved(
    pg_url: str, pg_collection: str
) -> None:
    builder, forgetter = (_slow_replica(pg_url, pg_collection) for _ in range(2))
    phone = builder.store(PHONE)
    builder.store(AUSTIN)
    page = builder._store.page
    forgot: list[str] = []

    def page_then_forget_elsewhere(*args: Any, **kwargs: Any) -> Any:
        listed = page(*args, **kwargs)
        if not forgot:  # the other replica forgets once the build has read its memories
            forgot.extend(forgetter.forget(ids=[phone.id or ""]).ids)
        return listed

    builder._store.page = page_then_forget_elsewhere  # type: ignore[method-assign]
    snapshot = SnapshotBuilder.from_llm(None).build(builder)

    assert forgot == [phone.id]
    assert "555" not in snapshot.text
    assert "Austin" in snapshot.text
    for replica in (builder, forgetter):
        saved = load_snapshot(replica)
        assert saved is not None
        assert "555" not in saved.text
        assert "Austin" in saved.text


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
