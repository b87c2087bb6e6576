"""End-of-session flush: what a conversation taught, stored once, nothing lost.

:func:`flush_session` takes a conversation (LangChain messages, or the service's
JSON ``{"role", "content"}`` objects), splits it into windows of
``window_size`` messages, extracts facts from each window with the store's
:class:`~cogito_lc.FactExtractor`, leaves out what memory already holds and
stores the rest with ``source`` metadata naming the session.

A fact is already held when a memory holds exactly its text in the scope or
when its nearest memory's cosine similarity is at least
``duplicate_threshold`` (:data:`DUPLICATE_COSINE` by default: paraphrases with
the same content, not merely the same topic); facts of one window differing only
in whitespace are one fact. The check and the write are one step
under the store's write lock, so concurrent flushes of a scope (threads, or
replicas over one database) store a fact once; the model embeds before it.
When the model fails (or the store has no extractor) the window itself is
stored verbatim, tagged
``flush_method="fallback_verbatim"`` (or ``fallback_no_llm``): nothing handed in
is lost. Such a window is left out only when the same window is stored already,
never as a near duplicate: flushed again after the session went on, a window may
repeat stored turns beside new ones, and is stored whole rather than lose them.
Only an explicit empty answer from the model stores nothing for a window.

When the store has a supersession ``judge`` (or ``supersede=True``), each new
memory is judged as :meth:`MemoryStore.add <cogito_lc.MemoryStore.add>` judges
it: the memories it supersedes are kept, marked and left out of reads, and one
it merely repeats is not written again. A user's first-person forget request
("Please forget my phone number.") is never stored: what the conversation said
before it is stored first, then the memories the request points at are forgotten
(:meth:`MemoryStore.forget <cogito_lc.MemoryStore.forget>`), those just stored included.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableLambda

from cogito_lc._core.validation import check_positive_int, check_unicode
from cogito_lc._core.versions import is_superseded
from cogito_lc.extraction.fact_extractor import FactExtractionInput
from cogito_lc.memory._forget import forget_subject
from cogito_lc.memory.memory_store import (
    MemoryNotFoundError,
    MemoryStore,
    _is_explicit_empty_answer,
)
from cogito_lc.memory.scope import ScopeLike, as_scope, normalise_text

__all__ = [
    "DUPLICATE_COSINE",
    "FlushResult",
    "flush_session",
    "flush_session_runnable",
    "session_turns",
]

logger = logging.getLogger(__name__)

DUPLICATE_COSINE = 0.92
"""Cosine similarity at or above which a fact counts as held already (a chosen default)."""

WINDOW_SIZE = 8
"""Messages per extraction window by default."""

_ROLES = {"human": "user", "ai": "assistant"}


@dataclass
class FlushResult:
    """What :func:`flush_session` did.

    Attributes:
        windows: How many windows the conversation was split into.
        stored: The memories this call wrote, in order.
        skipped_same_id: Facts left out because a memory has their id.
        skipped_near_duplicate: Facts left out because a memory is at least
            ``duplicate_threshold`` similar.
        verbatim_windows: Windows stored verbatim because extraction gave nothing usable.
        methods: Each window's method tag (``facts``, ``no_facts``,
            ``fallback_verbatim``, ``fallback_no_llm``).
        superseded: Ids of the memories new ones superseded (kept, marked).
        repeated: Ids of stored memories a new fact only repeated (not written again).
        forgotten: Ids forgotten by the conversation's forget requests.
        supersession: The judge's method tags, distinct, joined by ``,``; None when
            no memory was judged.
    """

    windows: int = 0
    stored: list[Document] = field(default_factory=list)
    skipped_same_id: int = 0
    skipped_near_duplicate: int = 0
    verbatim_windows: int = 0
    methods: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    repeated: list[str] = field(default_factory=list)
    forgotten: list[str] = field(default_factory=list)
    supersession: str | None = None


def _turn(index: int, message: Any) -> tuple[str, str]:
    where = f"messages[{index}]"
    role: Any
    content: Any
    if isinstance(message, BaseMessage):
        role, content = _ROLES.get(message.type, message.type), str(message.text)
    elif isinstance(message, Mapping):
        role = message.get("role", message.get("type"))
        content = message.get("content")
        if not isinstance(role, str) or not role.strip():
            msg = f"{where}.role must be a non-empty string such as 'user' or 'assistant'"
            raise ValueError(msg)
        role = role.strip().lower()  # "User" asks to forget as "user" does
        role = _ROLES.get(role, role)
    else:
        msg = f"{where} must be a LangChain message or an object with 'role' and 'content'"
        raise TypeError(msg)
    if not isinstance(content, str):
        msg = f"{where}.content must be a string, got {type(content).__name__}"
        raise TypeError(msg)
    return role, check_unicode(content, name=f"{where}.content")


def session_turns(messages: Sequence[Any]) -> list[tuple[str, str]]:
    """``(role, text)`` of each message that says something; errors name the message.

    Example:
        ```python
        from langchain_core.messages import AIMessage, HumanMessage

        from cogito_lc.memory.flush import session_turns

        turns = session_turns([HumanMessage("Hi"), {"role": "assistant", "content": "Hello"}])
        assert turns == [("user", "Hi"), ("assistant", "Hello")]
        ```
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        msg = "messages must be a list of LangChain messages or of {'role', 'content'} objects"
        raise TypeError(msg)
    turns = [_turn(index, message) for index, message in enumerate(messages)]
    return [(role, text) for role, text in turns if text.strip()]


def _windows(turns: list[tuple[str, str]], size: int, max_chars: int) -> list[str]:
    """The turns as windows of at most ``size`` lines and ``max_chars`` characters.

    A window may be stored verbatim, so none is longer than a memory may be; a
    turn longer than that is cut into lines of ``max_chars``, each naming its
    speaker.
    """
    windows: list[str] = []
    lines: list[str] = []
    length = 0
    for role, text in turns:
        speaker = f"{role}: "
        room = max(max_chars - len(speaker), 1)
        for start in range(0, len(text), room):
            line = (speaker + text[start : start + room])[:max_chars]
            joined = length + len(line) + (1 if lines else 0)
            if lines and (len(lines) == size or joined > max_chars):
                windows.append("\n".join(lines))
                lines, joined = [], len(line)
            lines.append(line)
            length = joined
    if lines:
        windows.append("\n".join(lines))
    return windows


def _segments(turns: list[tuple[str, str]]) -> list[tuple[list[tuple[str, str]], str | None]]:
    """The turns between the user's forget requests, each run with the request ending it."""
    segments: list[tuple[list[tuple[str, str]], str | None]] = []
    run: list[tuple[str, str]] = []
    for role, text in turns:
        subject = forget_subject(text) if role == "user" else None
        if subject is None:
            run.append((role, text))
            continue
        segments.append((run, subject))
        run = []
    if run:
        segments.append((run, None))
    return segments


def _vectors(pairs: list[tuple[Document, Any]]) -> list[Any] | None:
    """The vectors of ``(document, vector)`` pairs, or None when none was embedded."""
    return None if any(vector is None for _, vector in pairs) else [v for _, v in pairs]


class _Flush:
    def __init__(
        self,
        memory: MemoryStore,
        scope: ScopeLike,
        threshold: float,
        metadata: dict[str, Any],
        judged: bool,
    ) -> None:
        self.memory = memory
        self.scope = as_scope(scope, memory.scope)
        self.threshold = threshold
        self.metadata = metadata
        self.judged = judged
        self.result = FlushResult()
        self.judge_methods: list[str] = []

    def candidates(self, window: str, max_facts: int) -> tuple[list[str], str]:
        extractor = self.memory.extractor
        if extractor is None:
            return [window], "fallback_no_llm"
        answer = extractor.invoke_with_result(FactExtractionInput(text=window, max_facts=max_facts))
        facts = [fact.content for fact in answer.value or []]
        if facts:
            return facts, "facts"
        if _is_explicit_empty_answer(answer):
            return [], "no_facts"
        logger.warning("fact extraction gave nothing usable; storing the window verbatim")
        return [window], "fallback_verbatim"

    def held(self, text: str, *, verbatim: bool, vector: Sequence[float] | None = None) -> bool:
        """Whether ``text`` is stored already: the same memory, or (for a fact) a near one.

        A same memory that was superseded is not held when a judge writes: saying it
        again makes it current again. A verbatim window is never taken for a near
        duplicate, since a window of a continued session that repeats the stored
        turns also holds new ones, which would be lost. ``vector`` is the text's
        query vector, embedded beforehand (None: embedded by the search).
        """
        [same] = self.memory.stored_copies([text], scope=self.scope)
        if same is not None and not (self.judged and is_superseded(same.metadata)):
            self.result.skipped_same_id += 1
            return True
        if verbatim:
            return False
        if self.memory._near_current(text, vector, self.threshold, self.scope):
            self.result.skipped_near_duplicate += 1
            return True
        return False

    def window(self, number: int, window: str, max_facts: int) -> None:
        texts, method = self.candidates(window, max_facts)
        self.result.methods.append(method)
        if method.startswith("fallback"):
            self.result.verbatim_windows += 1
        metadata = {**self.metadata, "session_window": number, "flush_method": method}
        verbatim = method.startswith("fallback")
        docs = [
            Document(page_content=text, metadata=dict(metadata))
            for text in _distinct(texts, verbatim=verbatim)
        ]
        if not self.judged:
            self.write_new(docs, verbatim=verbatim)
            return
        for doc in docs:
            if not self.held(doc.page_content, verbatim=verbatim):
                self.write_judged(doc)

    def write_new(self, docs: list[Document], *, verbatim: bool) -> None:
        """Write the memories not held already, checked and written in one locked step.

        Other flushes of the scope (other threads, or replicas over one database)
        wait, so two of them never both store one fact. The model embeds before
        the lock; only memories this call wrote are counted as stored.
        """
        if not docs:
            return
        memory = self.memory
        prepared = [memory._prepare(d.page_content, None, d.metadata, self.scope) for d in docs]
        store = memory._store
        queries = [None if verbatim else store.query_vector(d.page_content) for d in prepared]
        vectors = store.vectors_for(prepared)
        with memory.exclusive():
            mine = [
                (doc, None if vectors is None else vectors[i])
                for i, doc in enumerate(prepared)
                if not self.held(doc.page_content, verbatim=verbatim, vector=queries[i])
            ]
            written = memory._write([d for d, _ in mine], _vectors(mine)) if mine else []
        # a text stored meanwhile by another writer is that writer's memory, not counted
        self.result.stored.extend(
            doc for doc, (own, _) in zip(written, mine, strict=True) if doc is own
        )

    def write_judged(self, doc: Document) -> None:
        """Write one memory after the store's judge said what it supersedes or repeats."""
        memory = self.memory
        prepared = memory._prepare(doc.page_content, None, doc.metadata, self.scope)
        versions = memory._write_versions([prepared], self.scope, dated=False)
        self.judge_methods.extend(versions.methods)
        if versions.repeated:
            self.result.repeated.extend(versions.repeated)
            return
        self.result.superseded.extend(versions.superseded)
        self.result.stored.extend(d for d in versions.memories if d.id == prepared.id)

    def forget(self, subject: str) -> None:
        """Honour a forget request; one that points at no memory forgets nothing."""
        try:
            found = self.memory.forget(subject, scope=self.scope, reason="forget request")
        except MemoryNotFoundError:
            logger.info("a forget request in a flushed session matched no memory")
            return
        self.result.forgotten.extend(found.ids)

    def finish(self) -> FlushResult:
        result = self.result
        gone = set(result.forgotten)
        result.stored = [doc for doc in result.stored if doc.id not in gone]
        result.superseded = [i for i in dict.fromkeys(result.superseded) if i not in gone]
        result.repeated = [i for i in dict.fromkeys(result.repeated) if i not in gone]
        result.supersession = ",".join(dict.fromkeys(self.judge_methods)) or None
        return result


def flush_session(
    memory: MemoryStore,
    messages: Sequence[Any],
    *,
    session_id: str,
    window_size: int = WINDOW_SIZE,
    duplicate_threshold: float = DUPLICATE_COSINE,
    max_facts: int = 7,
    scope: ScopeLike = None,
    supersede: bool | None = None,
) -> FlushResult:
    """Store what a conversation taught that memory does not hold yet.

    Args:
        memory: The store (its ``extractor`` extracts the facts; without one,
            windows are stored verbatim).
        messages: LangChain messages, or ``{"role", "content"}`` objects.
        session_id: Names the session in each memory's ``source``
            (``session:<session_id>``) and ``session_id`` metadata.
        window_size: Messages per extraction window.
        duplicate_threshold: Cosine similarity at or above which a fact is held already.
        max_facts: Most facts extracted per window.
        scope: The scope to write to instead of the store's.
        supersede: Judge what each new memory supersedes or repeats (default: when
            the store has a ``judge``). Forget requests are honoured either way.

    Returns:
        The counts, the new memories, and what was superseded, repeated or forgotten.

    Raises:
        TypeError: If a message is neither a LangChain message nor a role/content object.
        ValueError: If a message, ``session_id`` or a number is invalid (the message names it).

    Example:
        ```python
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_core.messages import AIMessage, HumanMessage
        from langchain_core.vectorstores import InMemoryVectorStore

        from cogito_lc import MemoryStore
        from cogito_lc.memory.flush import flush_session

        memory = MemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=16)))
        chat = [HumanMessage("Our deploys freeze on Fridays."), AIMessage("Noted.")]
        result = flush_session(memory, chat, session_id="s1")  # no extractor: verbatim
        assert result.windows == 1 and result.methods == ["fallback_no_llm"]
        assert result.stored[0].metadata["source"] == "session:s1"
        again = flush_session(memory, chat, session_id="s1")
        assert again.stored == [] and again.skipped_same_id == 1
        ```
    """
    check_positive_int(window_size, name="window_size")
    check_positive_int(max_facts, name="max_facts")
    if not isinstance(session_id, str) or not session_id.strip():
        msg = "session_id must be a non-empty string naming the session"
        raise ValueError(msg)
    turns = session_turns(messages)
    metadata = {"source": f"session:{session_id}", "session_id": session_id}
    judged = memory.judge is not None if supersede is None else supersede
    flush = _Flush(memory, scope, duplicate_threshold, metadata, judged)
    number = 0
    for run, subject in _segments(turns):
        for window in _windows(run, window_size, memory.max_text_chars):
            flush.window(number, window, max_facts)
            number += 1
        if subject is not None:
            flush.forget(subject)
    flush.result.windows = number
    return flush.finish()


def flush_session_runnable(memory: MemoryStore, **options: Any) -> Runnable[Any, FlushResult]:
    """:func:`flush_session` as a Runnable of ``{"messages", "session_id"}``.

    Example:
        ```python
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_core.vectorstores import InMemoryVectorStore

        from cogito_lc import MemoryStore
        from cogito_lc.memory.flush import flush_session_runnable

        memory = MemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=16)))
        flush = flush_session_runnable(memory, window_size=4)
        messages = [{"role": "user", "content": "Staging runs on eu-west-1."}]
        result = flush.invoke({"messages": messages, "session_id": "s2"})
        assert [doc.page_content for doc in result.stored] == ["user: Staging runs on eu-west-1."]
        ```
    """

    def run(payload: Mapping[str, Any]) -> FlushResult:
        if not isinstance(payload, Mapping) or "messages" not in payload:
            msg = "the input must be a mapping with 'messages' and 'session_id'"
            raise TypeError(msg)
        return flush_session(
            memory, payload["messages"], session_id=payload.get("session_id", ""), **options
        )

    return RunnableLambda(run, name="flush_session")


def _distinct(texts: Sequence[str], *, verbatim: bool) -> list[str]:
    """Each text once, in order; facts (not ``verbatim``) differing only in whitespace once."""
    first: dict[str, str] = {}
    for text in texts:
        first.setdefault(text if verbatim else normalise_text(text), text)
    return list(first.values())
