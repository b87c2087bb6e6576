from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from langchain_chroma import Chroma
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage

from cogito_lc import FactExtractor, MemoryStore
from cogito_lc.memory.flush import flush_session, flush_session_runnable, session_turns
from tests.unit_tests.fakes import ScriptedChatModel

CHAT = [
    HumanMessage("We moved billing to PostgreSQL 16 last week."),
    AIMessage("Got it. Anything about tokens?"),
    HumanMessage("Auth tokens now expire after 3600 seconds."),
    AIMessage("Noted."),
    {"role": "user", "content": "The on-call handover is on Mondays."},
]


def _facts(*contents: str) -> str:
    return json.dumps([{"content": c, "kind": "decision", "importance": 0.5} for c in contents])


@pytest.fixture
def memory(chroma: Chroma) -> MemoryStore:
    return MemoryStore(chroma, scope={"user_id": "agent"})


def test_facts_are_stored_with_the_session_as_source(memory: MemoryStore) -> None:
    llm = FakeListChatModel(
        responses=[
            _facts("Billing runs on PostgreSQL 16.", "Auth tokens expire after 3600 seconds."),
            _facts("The on-call handover is on Mondays."),
        ]
    )
    memory.extractor = FactExtractor.from_llm(llm)

    result = flush_session(memory, CHAT, session_id="chat-42", window_size=4)

    assert result.windows == 2
    assert result.methods == ["facts", "facts"]
    assert [doc.page_content for doc in result.stored] == [
        "Billing runs on PostgreSQL 16.",
        "Auth tokens expire after 3600 seconds.",
        "The on-call handover is on Mondays.",
    ]
    for doc in result.stored:
        held = memory.get(doc.id or "")
        assert held is not None
        assert held.metadata["source"] == "session:chat-42"
        assert held.metadata["session_id"] == "chat-42"
        assert held.metadata["flush_method"] == "facts"
    assert [memory.get(d.id or "").metadata["session_window"] for d in result.stored] == [0, 0, 1]


def test_what_memory_holds_is_skipped_by_id_or_near_duplicate(memory: MemoryStore) -> None:
    memory.store("Billing runs on PostgreSQL 16.")
    memory.store("The auth tokens expire after 3600 seconds.")  # cosine 0.93: a paraphrase
    llm = FakeListChatModel(
        responses=[
            _facts(
                "Billing runs on PostgreSQL 16.",
                "Auth tokens expire after 3600 seconds.",
                "Invoices are archived for ten years.",
            )
        ]
    )
    memory.extractor = FactExtractor.from_llm(llm)

    result = flush_session(memory, CHAT[:2], session_id="s", duplicate_threshold=0.9)

    assert result.skipped_same_id == 1
    assert result.skipped_near_duplicate == 1
    assert [doc.page_content for doc in result.stored] == ["Invoices are archived for ten years."]
    assert memory.count() == 3


def test_a_failing_model_stores_each_window_verbatim_and_tagged(memory: MemoryStore) -> None:
    memory.extractor = FactExtractor.from_llm(
        ScriptedChatModel(replies=[ConnectionRefusedError("down")])
    )

    result = flush_session(memory, CHAT, session_id="s", window_size=2)

    assert result.windows == 3
    assert result.verbatim_windows == 3
    assert set(result.methods) == {"fallback_verbatim"}
    texts = [doc.page_content for doc in result.stored]
    assert texts[0] == (
        "user: We moved billing to PostgreSQL 16 last week.\n"
        "assistant: Got it. Anything about tokens?"
    )
    assert texts[2] == "user: The on-call handover is on Mondays."
    held = memory.get(result.stored[0].id or "")
    assert held is not None
    assert held.metadata["flush_method"] == "fallback_verbatim"


def test_an_explicit_empty_answer_stores_nothing(memory: MemoryStore) -> None:
    memory.extractor = FactExtractor.from_llm(FakeListChatModel(responses=["[]"]))
    result = flush_session(memory, CHAT, session_id="s")
    assert result.methods == ["no_facts"]
    assert result.stored == []
    assert memory.count() == 0


def test_flushing_twice_stores_nothing_new(memory: MemoryStore) -> None:
    first = flush_session(memory, CHAT, session_id="s", window_size=3)
    again = flush_session(memory, CHAT, session_id="s", window_size=3)
    assert len(first.stored) == 2
    assert again.stored == []
    assert again.skipped_same_id == 2


@pytest.mark.parametrize(
    ("messages", "error", "names"),
    [
        ("hello", TypeError, "messages must be a list"),
        ([{"content": "x"}], ValueError, "messages[0].role"),
        ([HumanMessage("ok"), {"role": "user", "content": 3}], TypeError, "messages[1].content"),
        ([HumanMessage("ok"), 7], TypeError, "messages[1] must be"),
        ([{"role": "user", "content": "bad \ud800"}], ValueError, "messages[0].content"),
    ],
)
def test_a_malformed_transcript_names_the_message(
    memory: MemoryStore, messages: Any, error: type[Exception], names: str
) -> None:
    with pytest.raises(error, match=names.replace("[", r"\[").replace("]", r"\]")):
        flush_session(memory, messages, session_id="s")
    assert memory.count() == 0


def test_bad_options_are_refused(memory: MemoryStore) -> None:
    with pytest.raises(ValueError, match="session_id"):
        flush_session(memory, CHAT, session_id=" ")
    with pytest.raises(ValueError, match="window_size"):
        flush_session(memory, CHAT, session_id="s", window_size=0)


def test_blank_messages_are_left_out() -> None:
    turns = session_turns(
        [HumanMessage("  "), AIMessage("Fine."), {"type": "human", "content": ""}]
    )
    assert turns == [("assistant", "Fine.")]


def test_the_runnable_form(memory: MemoryStore) -> None:
    flush = flush_session_runnable(memory, window_size=10)
    result = flush.invoke({"messages": CHAT, "session_id": "r1"})
    assert result.windows == 1
    assert result.stored[0].metadata["source"] == "session:r1"
    with pytest.raises(TypeError, match="'messages'"):
        flush.invoke({"session_id": "r1"})


# -- versions: supersession and forget requests -------------------------------------------

AUSTIN = "Dana lives in Austin."
DENVER = "Dana moved to Denver; she lives there now."


def _judged(memory: MemoryStore, *replies: str) -> ScriptedChatModel:
    from cogito_lc import SupersessionJudge

    model = ScriptedChatModel(replies=list(replies))
    memory.judge = SupersessionJudge.from_llm(model)
    return model


def test_a_judge_supersedes_what_a_later_fact_replaces(memory: MemoryStore) -> None:
    memory.extractor = FactExtractor.from_llm(
        FakeListChatModel(responses=[_facts(AUSTIN), _facts(DENVER)])
    )
    _judged(memory, '{"supersedes": [1], "repeats": []}')
    chat = [HumanMessage("I live in Austin."), HumanMessage("I moved to Denver.")]

    result = flush_session(memory, chat, session_id="s", window_size=1)

    austin, denver = (doc.id for doc in result.stored)
    assert result.superseded == [austin]
    assert result.supersession == "skipped_empty,judged"
    kept = memory.get(austin or "")
    assert kept is not None
    assert kept.page_content == AUSTIN  # kept verbatim, marked
    assert kept.metadata["superseded_by"] == denver
    assert kept.metadata["source"] == "session:s"
    assert [d.id for d, _ in memory.search("where does Dana live", k=5)] == [denver]
    assert [d.id for d in memory.history(austin or "")] == [austin, denver]


def test_a_repeat_is_reported_and_not_written(memory: MemoryStore) -> None:
    held = memory.store(AUSTIN)
    memory.extractor = FactExtractor.from_llm(FakeListChatModel(responses=[_facts("Austin.")]))
    _judged(memory, '{"supersedes": [], "repeats": [1]}')
    result = flush_session(memory, [HumanMessage("Austin, yes.")], session_id="s")
    assert result.repeated == [held.id]
    assert result.stored == []
    assert memory.count() == 1


def test_supersession_is_off_without_a_judge_or_when_asked(memory: MemoryStore) -> None:
    chat = [HumanMessage("I live in Austin."), HumanMessage("I moved to Denver.")]
    plain = flush_session(memory, chat, session_id="a", window_size=1)
    assert plain.superseded == []
    assert plain.supersession is None
    model = _judged(memory, '{"supersedes": [1], "repeats": []}')
    off = flush_session(
        memory, [HumanMessage("Boston now.")], session_id="b", window_size=1, supersede=False
    )
    assert off.supersession is None
    assert model.calls == []
    assert memory.count() == 3


def test_a_forget_request_forgets_what_came_before_and_is_not_stored(memory: MemoryStore) -> None:
    memory.store("My phone number is 555-0101.")
    chat = [
        HumanMessage("Our deploys freeze on Fridays."),
        HumanMessage("My phone number is 555-0101, my mobile."),
        HumanMessage("Please forget my phone number."),
        AIMessage("Done."),
    ]

    result = flush_session(memory, chat, session_id="s", window_size=1)

    texts = [doc.page_content for doc in memory.list()]
    assert all("555" not in text for text in texts), texts
    assert all("forget" not in text for text in texts), texts
    assert "user: Our deploys freeze on Fridays." in texts
    assert "assistant: Done." in texts
    assert len(result.forgotten) == 2  # the stored one and the one this session said
    assert result.windows == 3
    assert {doc.id for doc in result.stored}.isdisjoint(result.forgotten)
    assert memory.forget_log[-1]["reason"] == "forget request"
    logged = str(memory.forget_log)  # its times may hold "555" (milliseconds)
    assert "555-0101" not in logged
    assert "phone" not in logged


def test_a_forget_request_that_matches_nothing_forgets_nothing(memory: MemoryStore) -> None:
    memory.store("The office opens at 8.")
    result = flush_session(memory, [HumanMessage("Please forget my email.")], session_id="s")
    assert result.forgotten == []
    assert result.windows == 0
    assert memory.count() == 1


def test_only_the_user_asks_to_forget(memory: MemoryStore) -> None:
    chat = [
        AIMessage("Please forget my phone number."),
        HumanMessage("Forget the staging box; deploys go to prod-2."),
    ]
    result = flush_session(memory, chat, session_id="s", window_size=1)
    assert result.forgotten == []
    assert len(result.stored) == 2


def test_no_window_stored_verbatim_is_longer_than_a_memory_may_be(chroma: Chroma) -> None:
    memory = MemoryStore(chroma, scope={"user_id": "agent"}, max_text_chars=100)
    said = ["Deploys freeze on Fridays. " * 2, "The staging host is stg-7. " * 2]
    said.append("".join(f"{i:03d}" for i in range(84)))  # 252 characters, no piece repeated
    chat = [HumanMessage(said[0]), AIMessage(said[1]), HumanMessage(said[2])]
    result = flush_session(memory, chat, session_id="long", window_size=8)
    assert result.methods == ["fallback_no_llm"] * result.windows
    texts = [doc.page_content for doc in result.stored]
    assert all(len(text) <= 100 for text in texts)
    turns: list[list[str]] = []
    for line in (line for text in texts for line in text.split("\n")):
        who, _, piece = line.partition(": ")  # every piece of a long turn names its speaker
        if turns and turns[-1][0] == who:
            turns[-1][1] += piece
        else:
            turns.append([who, piece])
    assert turns == [
        [who, text] for who, text in zip(["user", "assistant", "user"], said, strict=True)
    ]


def test_a_continued_session_flushed_again_keeps_its_new_turns(memory: MemoryStore) -> None:
    turns = [
        "Let's plan the billing migration.",
        "Move billing to PostgreSQL 16.",
        "Cutover is planned for March 3rd.",
        "The rollback owner is Priya.",
        "Budget cap is 40k EUR.",
    ]
    chat = [HumanMessage(turn) for turn in turns]
    flush_session(memory, chat[:4], session_id="s", window_size=10)

    again = flush_session(memory, chat, session_id="s", window_size=10)

    assert again.methods == ["fallback_no_llm"]
    assert any("Budget cap is 40k EUR." in doc.page_content for doc in again.stored)
    assert again.skipped_near_duplicate == 0


def test_a_fact_said_again_after_it_was_superseded_is_current_again(memory: MemoryStore) -> None:
    austin = memory.store("Alice lives in Austin.", created_at="2026-01-01T00:00:00Z")
    memory.store("Alice moved to Denver.", supersedes=[austin.id or ""])
    memory.extractor = FactExtractor.from_llm(
        FakeListChatModel(responses=[_facts(austin.page_content)])
    )
    _judged(memory, '{"supersedes": [1], "repeats": []}')

    result = flush_session(memory, [HumanMessage("I moved back to Austin.")], session_id="s")

    current = [doc.page_content for doc in memory.list(include_superseded=False)]
    assert current == ["Alice lives in Austin."], current
    assert result.skipped_same_id == 0


def test_a_forget_request_is_honoured_whatever_the_roles_case(memory: MemoryStore) -> None:
    chat = [
        {"role": "User", "content": "My phone number is 555-0101."},
        {"role": "USER", "content": "Please forget my phone number."},
    ]

    result = flush_session(memory, chat, session_id="s", window_size=1)

    assert result.forgotten
    assert all("555" not in doc.page_content for doc in memory.list())


def test_facts_differing_in_whitespace_only_are_one_stored_memory(memory: MemoryStore) -> None:
    memory.extractor = FactExtractor.from_llm(
        FakeListChatModel(
            responses=[_facts("Deploys freeze on Fridays.", "Deploys  freeze on Fridays. ")]
        )
    )

    result = flush_session(memory, [HumanMessage("No deploys on Fridays.")], session_id="s")

    assert [doc.page_content for doc in result.stored] == ["Deploys freeze on Fridays."]
    assert memory.count() == 1


class _LockAfter:
    """A write lock whose first take by the main thread first waits for ``before`` to run."""

    def __init__(self, lock: Any, before: Any) -> None:
        self.lock, self.before, self.done = lock, before, threading.Event()

    def __enter__(self) -> None:
        if threading.current_thread() is threading.main_thread() and not self.done.is_set():
            other = threading.Thread(target=self.before)
            other.start()
            other.join(timeout=30)
            self.done.set()
        self.lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


def test_a_flush_writing_after_another_one_stored_a_near_duplicate_skips_it(
    memory: MemoryStore,
) -> None:
    def flush(fact: str) -> Any:
        view = memory.scoped({})
        view.extractor = FactExtractor.from_llm(FakeListChatModel(responses=[_facts(fact)]))
        return flush_session(view, CHAT[:2], session_id="s", duplicate_threshold=0.9)

    other: list[Any] = []
    guard = memory._guard
    guard.lock = _LockAfter(
        guard.lock, lambda: other.append(flush("Auth tokens expire after 3600 seconds."))
    )  # type: ignore[assignment]

    late = flush("The auth tokens expire after 3600 seconds.")  # cosine 0.93: a paraphrase

    assert [doc.page_content for doc in other[0].stored] == [
        "Auth tokens expire after 3600 seconds."
    ]
    assert late.stored == []
    assert late.skipped_near_duplicate == 1
    assert memory.count() == 1
