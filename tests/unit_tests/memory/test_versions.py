"""Memory that stays true: supersession by pointers, reading across time, forgetting."""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

from cogito_lc import MemoryNotFoundError, MemoryStore, SupersessionJudge
from cogito_lc.memory._forget import forget_subject
from cogito_lc.memory.state import DirectoryStateStore
from cogito_lc.stores import InMemoryAdapter, LexicalSync
from cogito_lc.stores.postgres import WriteLockTimeoutError
from tests.races import HeldEmbeddings, in_threads, slow_reads, while_held
from tests.unit_tests.conftest import HashEmbeddings
from tests.unit_tests.fakes import ScriptedChatModel

AUSTIN = "I just moved to Austin, Texas, and I live downtown."
DENVER = "I live in Denver now, all settled in."
LUNCH = "Lunch today was a bowl of ramen."
PHONE_TEXT = "My phone number is 555-0101."


def _judge(*replies: Any) -> SupersessionJudge:
    return SupersessionJudge.from_llm(ScriptedChatModel(replies=list(replies)))


def _memory(judge: SupersessionJudge | None = None, **kwargs: Any) -> MemoryStore:
    store = InMemoryVectorStore(HashEmbeddings())
    return MemoryStore(store, scope={"user_id": "u1"}, judge=judge, **kwargs)


def _superseding_pair(memory: MemoryStore) -> tuple[Document, Document]:
    old = memory.store(AUSTIN, created_at="2026-01-01T00:00:00Z")
    new = memory.store(DENVER, created_at="2026-03-01T00:00:00Z", supersede=True)
    return old, new


def test_a_superseded_memory_is_kept_verbatim_and_marked() -> None:
    memory = _memory(_judge('{"supersedes": [1], "repeats": []}'))
    old, new = _superseding_pair(memory)
    stored_old = memory.get(old.id or "")
    assert stored_old is not None
    assert stored_old.page_content == AUSTIN
    assert stored_old.metadata["superseded_by"] == new.id
    assert stored_old.metadata["superseded_at"] == "2026-03-01T00:00:00+00:00"
    assert json.loads(new.metadata["supersedes"]) == [old.id]
    assert {k: v for k, v in stored_old.metadata.items() if not k.startswith("supersed")} == (
        old.metadata
    )


def test_default_reads_leave_superseded_memories_out() -> None:
    memory = _memory(_judge('{"supersedes": [1], "repeats": []}'))
    old, new = _superseding_pair(memory)
    recall = memory.as_retriever(k=5)
    assert [d.id for d in recall.invoke("where do I live")] == [new.id]
    assert {d.id for d in recall.invoke("where do I live", include_superseded=True)} == {
        old.id,
        new.id,
    }
    assert [d.id for d, _ in memory.search("where do I live", k=5)] == [new.id]
    assert len(memory.search("where do I live", k=5, include_superseded=True)) == 2
    assert [d.id for d in memory.list(include_superseded=False)] == [new.id]
    assert len(memory.list()) == 2


def test_as_of_returns_what_was_current_then() -> None:
    memory = _memory(_judge('{"supersedes": [1], "repeats": []}'))
    old, new = _superseding_pair(memory)
    recall = memory.as_retriever(k=5)
    assert [d.id for d in recall.invoke("where do I live", as_of="2026-02-01")] == [old.id]
    assert [d.id for d in recall.invoke("where do I live", as_of="2026-03-02")] == [new.id]
    assert recall.invoke("where do I live", as_of="2025-12-01") == []
    assert [d.id for d, _ in memory.search("where do I live", as_of="2026-02-01")] == [old.id]
    fixed = memory.as_retriever(k=5, as_of=datetime(2026, 2, 1, tzinfo=timezone.utc))
    assert [d.id for d in fixed.invoke("where do I live")] == [old.id]


async def test_async_recall_reads_the_same_versions() -> None:
    memory = _memory(_judge('{"supersedes": [1], "repeats": []}'))
    old, new = _superseding_pair(memory)
    recall = memory.as_retriever(k=5)
    assert [d.id for d in await recall.ainvoke("where do I live")] == [new.id]
    found = await recall.ainvoke("where do I live", as_of="2026-02-01")
    assert [d.id for d in found] == [old.id]


def test_as_of_in_the_future_names_the_field() -> None:
    memory = _memory()
    memory.store(AUSTIN)
    future = datetime.now(timezone.utc) + timedelta(days=1)
    with pytest.raises(ValueError, match="as_of"):
        memory.as_retriever().invoke("where", as_of=future)
    with pytest.raises(ValueError, match="as_of"):
        memory.search("where", as_of=future.isoformat())
    with pytest.raises(ValueError, match="as_of"):
        memory.search("where", as_of="last tuesday")


def test_history_is_the_chain_oldest_first_verbatim() -> None:
    memory = _memory(_judge('{"supersedes": [1], "repeats": []}'))
    old, new = _superseding_pair(memory)
    boston = memory.store(
        "These days I live in Boston.", created_at="2026-05-01T00:00:00Z", supersede=True
    )
    for member in (old, new, boston):
        chain = memory.history(member.id or "")
        assert [d.id for d in chain] == [old.id, new.id, boston.id]
    assert [d.page_content for d in memory.history(old.id or "")] == [
        AUSTIN,
        DENVER,
        "These days I live in Boston.",
    ]
    lone = memory.store(LUNCH)
    assert [d.id for d in memory.history(lone.id or "")] == [lone.id]


def test_history_of_an_unknown_id_or_another_scope_is_not_found() -> None:
    memory = _memory()
    doc = memory.store(AUSTIN)
    with pytest.raises(MemoryNotFoundError, match="nope"):
        memory.history("nope")
    with pytest.raises(MemoryNotFoundError):
        memory.history(doc.id or "", scope={"user_id": "u2"})


def test_a_repeat_is_not_written_again() -> None:
    memory = _memory(_judge('{"supersedes": [], "repeats": [1]}'))
    old = memory.store(AUSTIN)
    result = memory.add("Austin, Texas is where I moved to.")
    assert result.repeated == [old.id]
    assert [d.id for d in result.memories] == [old.id]
    assert result.supersession == "judged"
    assert memory.count() == 1


def test_text_with_other_whitespace_is_judged_not_taken_for_the_stored_memory() -> None:
    model = ScriptedChatModel(replies=['{"supersedes": [], "repeats": [1]}'])
    memory = _memory(SupersessionJudge.from_llm(model))
    old = memory.store("Deploys freeze on Fridays.\nAsk ops first.")
    result = memory.add("Deploys freeze on Fridays.  Ask ops first.", supersede=True)
    stored = memory.store("Deploys freeze on Fridays. Ask ops first.", supersede=True)
    assert len(model.calls) == 2
    assert result.repeated == [old.id]
    assert stored.id == old.id
    assert [d.id for d in memory.list(include_superseded=False)] == [old.id]


def test_text_with_other_whitespace_than_a_superseded_memory_is_judged_as_new() -> None:
    memory = _memory(_judge('{"supersedes": [1], "repeats": []}'))
    austin, denver = _superseding_pair(memory)
    again = memory.store(AUSTIN.replace(" ", "  "), supersede=True)
    assert again.id == f"{austin.id}-2"
    assert [d.id for d in memory.list(include_superseded=False)] == [again.id]
    assert [d.id for d in memory.history(austin.id or "")] == [austin.id, denver.id, again.id]


def test_a_failing_judge_supersedes_nothing_and_says_so() -> None:
    memory = _memory(_judge(ConnectionError("refused")))
    old = memory.store(AUSTIN)
    result = memory.add(DENVER)
    assert result.superseded == []
    assert result.supersession == "fallback_unreachable"
    assert memory.count() == 2
    stored = memory.get(old.id or "")
    assert stored is not None
    assert "superseded_by" not in stored.metadata


def test_an_empty_scope_asks_no_model() -> None:
    model = ScriptedChatModel(replies=['{"supersedes": [1], "repeats": []}'])
    memory = _memory(SupersessionJudge.from_llm(model))
    result = memory.add(AUSTIN)
    assert result.supersession == "skipped_empty"
    assert model.calls == []


def test_add_supersedes_by_default_when_a_judge_is_set_and_can_be_turned_off() -> None:
    memory = _memory(_judge('{"supersedes": [1], "repeats": []}'))
    old = memory.store(AUSTIN)
    kept = memory.add(DENVER, supersede=False)
    assert kept.superseded == []
    assert kept.supersession is None
    result = memory.add("Boston is home these days.")
    assert result.superseded != []
    assert result.supersession == "judged"
    assert old.id in result.superseded or kept.memories[0].id in result.superseded


def test_reserved_version_keys_are_refused_in_user_metadata() -> None:
    memory = _memory()
    for key in ("supersedes", "superseded_by", "superseded_at"):
        with pytest.raises(ValueError, match=key):
            memory.store("x", metadata={key: "m1"})


def test_created_at_must_be_a_timestamp() -> None:
    memory = _memory()
    with pytest.raises(ValueError, match="created_at"):
        memory.store(AUSTIN, created_at="soon")
    doc = memory.store(AUSTIN, created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc))
    assert doc.metadata["created_at"] == "2026-01-02T03:04:05+00:00"


_ANSWERS = st.one_of(
    st.text(max_size=60),
    st.builds(
        lambda s, r: json.dumps({"supersedes": s, "repeats": r}),
        st.lists(st.one_of(st.integers(-5, 40), st.booleans(), st.floats(), st.text()), max_size=8),
        st.lists(st.one_of(st.integers(-5, 40), st.text()), max_size=8),
    ),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answer=_ANSWERS)
def test_no_answer_alters_a_stored_byte_or_crosses_a_scope(answer: str) -> None:
    store = InMemoryVectorStore(HashEmbeddings())
    other = MemoryStore(store, scope={"user_id": "u2"})
    theirs = [other.store(text) for text in (AUSTIN, DENVER, LUNCH)]
    memory = MemoryStore(store, scope={"user_id": "u1"}, judge=_judge(answer))
    mine = [memory.store(text) for text in (AUSTIN, LUNCH)]
    before = {key: copy.deepcopy(row) for key, row in store.store.items()}
    result = memory.add("I live in Denver now.")
    assert set(result.superseded) <= {doc.id for doc in mine}
    for doc in theirs:
        assert store.store[doc.id or ""] == before[doc.id or ""]
    for key, row in before.items():
        now = store.store[key]
        assert now["text"] == row["text"]
        added = {k: v for k, v in now["metadata"].items() if k not in row["metadata"]}
        assert set(added) <= {"superseded_by", "superseded_at"}
        assert all(now["metadata"][k] == v for k, v in row["metadata"].items())


def test_a_crash_before_marking_is_completed_at_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def open_store() -> Chroma:
        return Chroma("versions", HashEmbeddings(), persist_directory=str(tmp_path))

    memory = MemoryStore(open_store(), judge=_judge('{"supersedes": [1], "repeats": []}'))
    old = memory.store(AUSTIN, created_at="2026-01-01T00:00:00Z")

    def crash(*_: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(MemoryStore, "_apply_marks", crash)
    with pytest.raises(KeyboardInterrupt):
        memory.store(DENVER, supersede=True)
    monkeypatch.undo()
    stored = memory.get(old.id or "")
    assert stored is not None
    assert "superseded_by" not in stored.metadata

    reopened = MemoryStore(open_store())
    marked = reopened.get(old.id or "")
    assert marked is not None
    assert marked.metadata.get("superseded_by")
    assert marked.page_content == AUSTIN
    assert [d.page_content for d in reopened.as_retriever().invoke("where do I live")] == [DENVER]
    assert reopened.complete_supersessions(recent=None) == 0


def test_forget_by_ids_removes_every_version_and_keeps_an_audit_without_text(
    tmp_path: Path,
) -> None:
    memory = _memory(
        _judge('{"supersedes": [1], "repeats": []}'), state=DirectoryStateStore(tmp_path)
    )
    old, new = _superseding_pair(memory)
    lunch = memory.store(LUNCH)
    (tmp_path / "snapshot.md").write_text(f"- {AUSTIN}\n", encoding="utf-8")
    (tmp_path / "snapshot.json").write_text("{}", encoding="utf-8")
    result = memory.forget(ids=[new.id or ""], reason="user asked")
    assert set(result.ids) == {old.id, new.id}
    assert result.method == "ids"
    for doc_id in (old.id, new.id):
        assert memory.get(doc_id or "") is None
    assert [d.id for d in memory.list()] == [lunch.id]
    recalled = memory.as_retriever(k=10).invoke("Austin Denver live", include_superseded=True)
    assert {d.id for d in recalled} <= {lunch.id}
    assert not (tmp_path / "snapshot.md").exists()
    audits = list(tmp_path.glob("forget-audit-*.json"))
    assert len(audits) == 1
    record = json.loads(audits[0].read_text(encoding="utf-8"))
    assert record["ids"] == result.ids
    assert record["scope"] == {"user_id": "u1"}
    assert record["reason"] == "user asked"
    text = audits[0].read_text(encoding="utf-8")
    assert "Austin" not in text
    assert "Denver" not in text


def test_a_forget_request_in_a_message_forgets_instead_of_storing() -> None:
    memory = _memory()
    phone = memory.store("My phone number is 555-0101.")
    memory.store(LUNCH)
    result = memory.add("Please forget my phone number.")
    assert result.method == "forgotten"
    assert result.forgotten == [phone.id]
    assert result.memories == []
    assert memory.get(phone.id or "") is None
    assert all("555" not in d.page_content for d in memory.list())
    assert memory.forget_log[-1]["ids"] == [phone.id]
    assert "phone" not in json.dumps(memory.forget_log)


def test_a_note_that_starts_with_forget_is_stored() -> None:
    memory = _memory()
    result = memory.add("Forget the staging server; deploys go to prod-2.")
    assert result.method == "fallback_no_llm"
    assert result.count == 1


def test_forget_rejects_bad_requests_by_field() -> None:
    memory = _memory()
    memory.store(AUSTIN)
    with pytest.raises(ValueError, match="exactly one"):
        memory.forget()
    with pytest.raises(ValueError, match="exactly one"):
        memory.forget("x", ids=["y"])
    with pytest.raises(ValueError, match="ids"):
        memory.forget(ids=[])
    with pytest.raises(MemoryNotFoundError, match="ghost"):
        memory.forget(ids=["ghost"])
    with pytest.raises(ValueError, match="query"):
        memory.forget("   ")


def test_forget_never_reaches_another_scope() -> None:
    store = InMemoryVectorStore(HashEmbeddings())
    theirs = MemoryStore(store, scope={"user_id": "u2"}).store(AUSTIN)
    mine = MemoryStore(store, scope={"user_id": "u1"})
    with pytest.raises(MemoryNotFoundError):
        mine.forget(ids=[theirs.id or ""])
    with pytest.raises(MemoryNotFoundError):
        mine.forget("where I live in Austin")
    assert store.get_by_ids([theirs.id or ""])


def test_a_caller_can_name_what_a_memory_supersedes() -> None:
    memory = _memory()
    old = memory.store(AUSTIN, created_at="2026-01-01T00:00:00Z")
    new = memory.store(DENVER, supersedes=[old.id or ""])
    assert [d.id for d in memory.history(old.id or "")] == [old.id, new.id]
    assert [d.id for d in memory.list(include_superseded=False)] == [new.id]
    with pytest.raises(MemoryNotFoundError, match="supersedes"):
        memory.store("Boston now.", supersedes=[old.id or ""])
    with pytest.raises(ValueError, match="supersedes"):
        memory.store("Boston now.", supersedes=new.id)  # type: ignore[arg-type]


def test_a_memory_cannot_be_named_to_supersede_a_later_one() -> None:
    memory = _memory()
    later = memory.store(DENVER, created_at="2026-03-01T00:00:00Z")
    with pytest.raises(ValueError, match=r"written after this memory .*later created_at"):
        memory.store(AUSTIN, created_at="2026-01-01T00:00:00Z", supersedes=[later.id or ""])
    assert [d.id for d in memory.list()] == [later.id]  # nothing was written
    same_time = memory.store(AUSTIN, created_at="2026-03-01T00:00:00Z", supersedes=[later.id or ""])
    assert [d.id for d in memory.history(later.id or "")] == [later.id, same_time.id]


@pytest.mark.parametrize("judged", [False, True])
def test_a_write_from_a_clock_behind_still_supersedes(
    monkeypatch: pytest.MonkeyPatch, judged: bool
) -> None:
    memory = _memory(_judge('{"supersedes": [1], "repeats": []}'))
    old = memory.store(AUSTIN)  # dated now by this clock
    behind = datetime.now(timezone.utc) - timedelta(seconds=5)
    monkeypatch.setattr(
        "cogito_lc.memory.memory_store._now", lambda: behind.isoformat(timespec="milliseconds")
    )
    if judged:
        new = memory.store(DENVER, supersede=True)
    else:
        new = memory.store(DENVER, supersedes=[old.id or ""])
    assert [d.id for d in memory.history(old.id or "")] == [old.id, new.id]
    assert new.metadata["created_at"] == old.metadata["created_at"]  # no earlier than it
    assert [d.id for d in memory.list(include_superseded=False)] == [new.id]


def test_a_judge_choosing_a_later_memory_supersedes_nothing() -> None:
    memory = _memory(_judge('{"supersedes": [1], "repeats": []}'))
    later = memory.store(DENVER, created_at="2026-03-01T00:00:00Z")
    earlier = memory.store(AUSTIN, created_at="2026-01-01T00:00:00Z", supersede=True)
    assert "supersedes" not in earlier.metadata
    stored = memory.get(later.id or "")
    assert stored is not None
    assert "superseded_by" not in stored.metadata
    current = [
        d.id for d in memory.as_retriever(k=2).invoke("Where do I live?", as_of="2026-04-01")
    ]
    assert later.id in current


def test_a_judge_choice_kept_current_is_reported() -> None:
    memory = _memory(_judge('{"supersedes": [1], "repeats": []}'))
    later = memory.store(DENVER, created_at="2026-03-01T00:00:00Z")
    result = memory.add(AUSTIN, created_at="2026-01-01T00:00:00Z")
    assert result.supersession == "judged"
    assert result.superseded == []
    assert result.kept_current == [later.id]
    assert [d.page_content for d in result.memories] == [AUSTIN]


def test_a_memory_supersedes_only_memories_of_its_own_scope() -> None:
    memory = _memory(_judge('{"supersedes": [1], "repeats": []}'))
    helpdesk = {"user_id": "u1", "agent_id": "helpdesk"}
    narrower = memory.store(AUSTIN, scope=helpdesk, created_at="2026-01-01T00:00:00Z")
    with pytest.raises(ValueError, match=r"narrower scope .*store the new version in theirs"):
        memory.store(DENVER, supersedes=[narrower.id or ""])
    broader = memory.store(DENVER, created_at="2026-03-01T00:00:00Z", supersede=True)
    assert "supersedes" not in broader.metadata  # the judge was shown no narrower memory
    assert [d.id for d in memory.scoped(helpdesk).list(include_superseded=False)] == [narrower.id]
    in_theirs = memory.store(DENVER, scope=helpdesk, supersedes=[narrower.id or ""])
    assert [d.id for d in memory.history(narrower.id or "")] == [narrower.id, in_theirs.id]


def test_the_judge_sees_its_own_scope_past_many_related_memories_of_narrower_ones() -> None:
    model = ScriptedChatModel(replies=['{"supersedes": [1], "repeats": []}'])
    memory = _memory(SupersessionJudge.from_llm(model), supersession_candidates=2)
    austin = memory.store(AUSTIN, created_at="2026-01-01T00:00:00Z")
    for agent in ("helpdesk", "billing", "travel", "support", "sales"):
        memory.store(f"{DENVER} ({agent} notes)", scope={"user_id": "u1", "agent_id": agent})
    result = memory.add(DENVER)
    assert result.superseded == [austin.id]
    shown = str(model.calls[0])
    assert AUSTIN in shown
    assert "helpdesk notes" not in shown


def test_forgetting_drops_the_cached_copies_and_deletes_are_audited() -> None:
    memory = _memory()
    recall = memory.as_retriever()
    phone = memory.store(PHONE_TEXT)
    lunch = memory.store(LUNCH)
    recall.invoke("phone number")
    assert recall._cache.holds(phone.id or "")
    memory.forget(ids=[phone.id or ""])
    assert not recall._cache.holds(phone.id or "")
    assert recall._cache.document(phone.id or "") is None
    memory.delete(lunch.id or "")
    assert [record["reason"] for record in memory.forget_log] == ["request", "delete"]
    assert memory.forget_log[-1]["ids"] == [lunch.id]


def test_as_of_before_every_memory_of_the_scope_is_an_error() -> None:
    memory = _memory()
    memory.store(AUSTIN, created_at="2026-01-01T00:00:00Z")
    MemoryStore(memory.vectorstore, scope={"user_id": "u2"}).store(LUNCH, created_at="2025-01-01")
    with pytest.raises(ValueError, match="before every memory"):
        memory.search("where", as_of="2025-06-01")
    with pytest.raises(ValueError, match="as_of"):
        memory.check_as_of("2025-06-01")
    assert memory.check_as_of("2026-01-01T00:00:00Z").year == 2026
    assert memory.search("where", as_of="2026-02-01") != []


def test_a_fact_said_again_after_it_was_superseded_is_current_again() -> None:
    memory = _memory(_judge('{"supersedes": [1], "repeats": []}'))
    austin, denver = _superseding_pair(memory)
    again = memory.store(AUSTIN, created_at="2026-06-01T00:00:00Z", supersede=True)
    assert again.id != austin.id
    assert again.page_content == AUSTIN
    assert [d.id for d in memory.as_retriever(k=5).invoke("where do I live")] == [again.id]
    assert [d.id for d in memory.history(austin.id or "")] == [austin.id, denver.id, again.id]


def test_repeated_ids_are_one_id() -> None:
    memory = _memory()
    old = memory.store(AUSTIN)
    new = memory.store(DENVER, supersedes=[old.id or "", old.id or ""])
    assert json.loads(new.metadata["supersedes"]) == [old.id]
    assert set(memory.forget(ids=[new.id or "", new.id or ""]).ids) == {old.id, new.id}


def test_a_scoped_view_keeps_the_judge_and_the_forget_settings() -> None:
    judge = _judge('{"supersedes": [1], "repeats": []}')
    memory = _memory(judge, supersession_candidates=3, forget_min_cosine=0.4, forget_margin=0.1)
    view = memory.scoped({"agent_id": "a1"})
    assert view.judge is judge
    assert (view.supersession_candidates, view.forget_min_cosine, view.forget_margin) == (
        3,
        0.4,
        0.1,
    )


@pytest.mark.parametrize(
    "text",
    ["Actually, please forget my phone number.", "Oh, and could you forget where I live?"],
)
def test_forget_requests_with_a_lead_in_are_recognised(text: str) -> None:
    assert forget_subject(text) is not None


@pytest.mark.parametrize(
    "text",
    ["So forget the old plan, my team uses Rust now.", "I forgot my keys at home."],
)
def test_notes_mentioning_forgetting_are_not_requests(text: str) -> None:
    assert forget_subject(text) is None


def test_forgetting_by_query_takes_the_other_versions_and_leaves_the_rest() -> None:
    memory = _memory()
    first = memory.store("My phone number is 555-0101.", created_at="2026-01-01")
    second = memory.store("New phone number: my number is 555-0199.", created_at="2026-02-01")
    lunch = memory.store(LUNCH)
    forgotten = memory.forget("my phone number")
    assert set(forgotten.ids) == {first.id, second.id}
    assert [d.id for d in memory.list()] == [lunch.id]


def test_two_writers_never_both_supersede_one_memory() -> None:
    for attempt in range(3):
        memory = slow_reads(_memory())
        old = memory.store(f"{AUSTIN} ({attempt})")
        results = in_threads(
            partial(memory.store, DENVER, supersedes=[old.id or ""]),
            partial(memory.store, "I live in Boston now.", supersedes=[old.id or ""]),
        )
        assert sum(isinstance(result, MemoryNotFoundError) for result in results) == 1, results
        [current] = memory.list(include_superseded=False)
        assert memory.get(old.id or "").metadata["superseded_by"] == current.id  # type: ignore[union-attr]


def test_restating_a_superseded_fact_by_name_makes_it_current_again() -> None:
    memory = _memory()
    austin = memory.store(AUSTIN, created_at="2026-01-01T00:00:00Z")
    denver = memory.store(DENVER, created_at="2026-03-01T00:00:00Z", supersedes=[austin.id or ""])
    again = memory.store(AUSTIN, created_at="2026-06-01T00:00:00Z", supersedes=[denver.id or ""])
    assert again.id not in {austin.id, denver.id}
    assert [d.id for d in memory.list(include_superseded=False)] == [again.id]
    assert [d.id for d in memory.history(austin.id or "")] == [austin.id, denver.id, again.id]


def test_a_forget_racing_a_superseding_write_leaves_neither_version() -> None:
    for attempt in range(3):
        memory = slow_reads(_memory())
        old = memory.store(f"{PHONE_TEXT} ({attempt})")
        results = in_threads(
            partial(memory.forget, ids=[old.id or ""]),
            partial(memory.store, "My phone number is now 555-0202.", supersedes=[old.id or ""]),
        )
        assert not isinstance(results[0], Exception), results
        assert memory.count() == 0, results


def test_a_forget_by_query_holds_no_lock_while_the_model_embeds() -> None:
    embeddings = HeldEmbeddings(HashEmbeddings())
    memory = MemoryStore(InMemoryVectorStore(embeddings), scope={"user_id": "u1"})
    phone = memory.store(PHONE_TEXT)
    austin = memory.store(AUSTIN, created_at="2026-01-01T00:00:00Z")
    denver = while_held(
        embeddings,
        partial(memory.forget, "my phone number"),
        partial(memory.store, DENVER, supersedes=[austin.id or ""]),
    )
    assert memory.get(phone.id or "") is None
    assert [d.id for d in memory.history(austin.id or "")] == [austin.id, denver.id]


def test_views_over_one_store_share_its_write_lock() -> None:
    memory = _memory()
    view = memory.scoped({"agent_id": "helper"})
    other = MemoryStore(memory.vectorstore, scope={"user_id": "u2"})
    assert view.write_lock() is memory.write_lock() is other.write_lock()
    assert (
        MemoryStore(InMemoryVectorStore(HashEmbeddings())).write_lock() is not memory.write_lock()
    )


def test_the_lock_across_processes_is_taken_once_by_each_check_and_write() -> None:
    memory = _memory()
    entered: list[str] = []

    @contextlib.contextmanager
    def across() -> Iterator[None]:
        entered.append("in")
        try:
            yield
        finally:
            entered.append("out")

    memory._store.exclusive = across  # type: ignore[method-assign]
    old = memory.store(AUSTIN)
    assert entered == []  # a write naming nothing takes only the lock of this process
    new = memory.store(DENVER, supersedes=[old.id or ""])
    assert entered == ["in", "out"]
    memory.update(new.id or "", "I live in Denver, Colorado.")
    memory.forget(ids=[new.id or ""])  # the forget deletes under it too: still once
    assert entered == ["in", "out"] * 3
    with pytest.raises(MemoryNotFoundError):
        memory.forget(ids=[new.id or ""])
    assert entered == ["in", "out"] * 4  # released after a refused call
    assert not memory._guard.held_across_processes


def test_a_start_while_another_replica_holds_the_write_lock_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    @contextlib.contextmanager
    def busy(_adapter: object) -> Iterator[None]:
        msg = "another writer held the write lock of table 'x' for 20 s"
        raise WriteLockTimeoutError(msg)
        yield

    monkeypatch.setattr(InMemoryAdapter, "exclusive", busy)
    with caplog.at_level(logging.WARNING, logger="cogito_lc.memory.memory_store"):
        memory = MemoryStore(InMemoryVectorStore(HashEmbeddings()))
    assert "were not checked at start-up" in caplog.text
    assert memory.store(AUSTIN).page_content == AUSTIN  # a plain write takes no such lock
    with pytest.raises(WriteLockTimeoutError):
        memory.store(DENVER, supersedes=[memory.list()[0].id or ""])


def test_an_update_racing_a_forget_in_another_view_never_brings_it_back() -> None:
    for attempt in range(3):
        memory = _memory()
        phone = memory.store(f"{PHONE_TEXT} ({attempt})")
        first, second = slow_reads(memory.scoped({})), slow_reads(memory.scoped({}))
        in_threads(
            partial(first.forget, ids=[phone.id or ""]),
            partial(second.update, phone.id or "", "My phone number is 555-0303."),
        )
        assert memory.get(phone.id or "") is None


def test_updating_a_superseded_memory_is_refused_and_leaves_it_as_stored() -> None:
    memory = _memory()
    old = memory.store(AUSTIN)
    new = memory.store(DENVER, supersedes=[old.id or ""])
    with pytest.raises(MemoryNotFoundError, match="update the current version") as refused:
        memory.update(old.id or "", "I live in Boston.")
    assert refused.value.ids == (old.id,)
    assert [d.page_content for d in memory.history(new.id or "")] == [AUSTIN, DENVER]


def test_an_update_that_waited_while_its_memory_was_superseded_is_refused() -> None:
    memory = _memory()
    old = memory.store(AUSTIN)
    superseding: list[Document] = []
    embed = memory._store.vectors_for

    def superseded_meanwhile(documents: Any) -> Any:  # the update's step before its lock
        if threading.current_thread() is threading.main_thread():
            other = threading.Thread(
                target=lambda: superseding.append(memory.store(DENVER, supersedes=[old.id or ""]))
            )
            other.start()
            other.join(timeout=30)
        return embed(documents)

    memory._store.vectors_for = superseded_meanwhile  # type: ignore[method-assign]
    with pytest.raises(MemoryNotFoundError, match="not a current memory"):
        memory.update(old.id or "", "I live in Boston.")
    [new] = superseding
    assert [d.page_content for d in memory.history(old.id or "")] == [AUSTIN, DENVER]
    assert memory.get(old.id or "").metadata["superseded_by"] == new.id  # type: ignore[union-attr]


def test_include_superseded_must_be_a_bool_on_every_read() -> None:
    memory = _memory()
    memory.store(AUSTIN)
    for read in (
        lambda: memory.search("where", include_superseded="false"),  # type: ignore[arg-type]
        lambda: memory.list(include_superseded="false"),  # type: ignore[arg-type]
        lambda: memory.as_retriever().invoke("where", include_superseded="false"),
    ):
        with pytest.raises(TypeError, match="include_superseded must be True or False"):
            read()


def test_a_crash_between_a_supersession_mark_and_the_lexical_index_is_resynced_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def opened() -> MemoryStore:
        chroma = Chroma("marks", HashEmbeddings(), persist_directory=str(tmp_path))
        return MemoryStore(chroma, scope={"user_id": "u1"})

    memory = opened()
    old = memory.store(AUSTIN)
    upsert = LexicalSync.upsert

    def dying_on_the_marks(self: LexicalSync, documents: list[Document]) -> None:
        if any("superseded_by" in doc.metadata for doc in documents):
            raise KeyboardInterrupt  # the process ends between the two writes
        upsert(self, documents)

    monkeypatch.setattr(LexicalSync, "upsert", dying_on_the_marks)
    with pytest.raises(KeyboardInterrupt):
        memory.store(DENVER, supersedes=[old.id or ""])
    monkeypatch.undo()
    restarted = opened()
    assert restarted._lexical is not None
    [(indexed, _)] = restarted._lexical.search("Austin Texas downtown", k=1)
    assert indexed.id == old.id
    assert indexed.metadata == restarted.get(old.id or "").metadata  # type: ignore[union-attr]
    assert "superseded_by" in indexed.metadata


def test_the_two_stage_retriever_reads_versions_per_call_as_recall_b_does(
    chroma: Chroma,
) -> None:
    memory = MemoryStore(chroma)
    austin = memory.store("Alice lives in Austin.", created_at="2026-01-01T00:00:00Z")
    memory.store(
        "Alice lives in Denver.", supersedes=[austin.id or ""], created_at="2026-02-01T00:00:00Z"
    )
    recall = memory.as_retriever("recall", k=5)

    def texts(**read: Any) -> set[str]:
        return {doc.page_content for doc in recall.invoke("where does Alice live", **read)}

    assert texts() == {"Alice lives in Denver."}
    assert texts(as_of="2026-01-15T00:00:00Z") == {"Alice lives in Austin."}
    assert texts(include_superseded=True) == {"Alice lives in Austin.", "Alice lives in Denver."}
