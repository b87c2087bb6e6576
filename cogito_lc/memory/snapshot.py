"""The snapshot layer: a compact markdown index of the memory, loaded at session start."""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import Runnable, RunnableConfig, RunnableSerializable
from pydantic import BaseModel, ConfigDict, Field

from cogito_lc._core.deadline import call_with_deadline
from cogito_lc._core.graphemes import cut
from cogito_lc._core.json_repair import strip_reasoning
from cogito_lc._core.transport import failure_kind
from cogito_lc._core.versions import SUPERSEDED_BY_KEY, is_superseded
from cogito_lc.extraction.llm_extractor import ExtractionMethod, LlmExtractor, StructuredOutputMode
from cogito_lc.memory._grouping import group_memories
from cogito_lc.memory.scope import as_scope
from cogito_lc.memory.state import SNAPSHOT_FILES
from cogito_lc.prompts.registry import PromptLike, resolve_prompt
from cogito_lc.stores.postgres import WriteLockTimeoutError

if TYPE_CHECKING:
    from langchain_core.documents import Document

    from cogito_lc.memory.memory_store import MemoryStore
    from cogito_lc.memory.scope import Scope, ScopeLike
    from cogito_lc.memory.state import StateStore

__all__ = ["Snapshot", "SnapshotBuilder", "load_snapshot"]

logger = logging.getLogger(__name__)

_BUILDS_PER_CALL = 3
"""Builds a call tries while forgets land during them, before the grouped one (no model)."""
_SAMPLE_PAGE = 500
"""Memories read at a time when a build samples the newest."""

SNAPSHOT_FILE, SNAPSHOT_META_FILE = SNAPSHOT_FILES
SnapshotMode = Literal["pointer", "summary"]


@dataclass
class Snapshot:
    """A built snapshot.

    Attributes:
        text: The markdown index.
        path: Where it is saved (None for dry runs and in-memory stores).
        built_at: ISO 8601 UTC time it was built.
        count: How many memories the store held when it was built.
        sampled: How many memories it was built from.
        method: How it was built: a method tag listed under
            :data:`~cogito_lc.METADATA_KEY` (``cached`` when an existing snapshot
            was still fresh).
        sources: The ids of the memories it was built from; once one of them
            is forgotten or deleted, the saved snapshot is not served again.
        scope: The scope it was built from (its metadata).
        digest: A hash of the sources' texts and versions; once one of them is
            edited (``update``) or superseded, the saved snapshot is built again.
        text_sha256: A hash of ``text``, so a text saved apart from its metadata
            (a crash between the two files) is not served with the wrong one.
    """

    text: str
    path: str | None
    built_at: str
    count: int
    sampled: int
    method: str
    sources: list[str] = field(default_factory=list)
    scope: dict[str, Any] = field(default_factory=dict)
    digest: str = ""
    text_sha256: str = ""


class Topic(BaseModel):
    """One heading of a pointer snapshot and the numbers of its memories."""

    heading: str = Field(max_length=200)
    items: list[int]


class TopicIndex(BaseModel):
    """What the model returns in pointer mode: headings and integers only."""

    topics: list[Topic]


def _clean_heading(heading: str) -> str:
    text = " ".join(heading.replace("#", " ").split())
    return cut(text, 80) or "Memories"


def _shorten(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else cut(flat, limit - 1).rstrip() + "\u2026"


def render(
    groups: list[tuple[str, list[int]]], memories: list[Document], item_chars: int, max_chars: int
) -> str:
    """Markdown with one ``##`` heading per group and each memory's stored text under it.

    Indexes outside ``memories`` or repeated are skipped. The text stays within
    ``max_chars``: a group is cut after the items that fit (a group larger than
    the budget still shows its first ones), and later groups take what is left.
    """
    blocks: list[str] = []
    used: set[int] = set()
    size = 0
    for heading, members in groups:
        block = f"## {_clean_heading(heading)}"
        for index in members:
            if not isinstance(index, int) or not 0 <= index < len(memories) or index in used:
                continue
            item = f"\n- {_shorten(memories[index].page_content, item_chars)}"
            if size + len(block) + len(item) + 1 > max_chars:  # + the final line break
                break
            used.add(index)
            block += item
        if "\n" in block:
            blocks.append(block)
            size += len(block) + 2
    return "\n\n".join(blocks) + ("\n" if blocks else "")


class SnapshotBuilder(RunnableSerializable[dict[str, Any], Snapshot]):
    """Builds the snapshot of a MemoryStore scope.

    ``pointer`` mode (default): the model sees numbered memories and writes only
    topic headings with the numbers under each; the code renders each memory's
    stored text verbatim (cut to ``item_chars``), so the snapshot contains no
    model-written facts. ``summary`` mode: the model writes a free-text index
    through the registry prompt ``snapshot``. Budgets count characters (code points,
    not bytes or tokens), and a cut never splits an emoji, a flag or a letter from its
    accents. Without a model, or when it fails or outlasts ``timeout``, memories are
    grouped without one (by metadata ``kind``/headings/source, else by shared keywords)
    and the method tag says why.

    Input: ``{"memory": MemoryStore, "scope": ..., "rebuild": bool, "dry_run": bool}``.

    Example:
        ```python
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_core.vectorstores import InMemoryVectorStore

        from cogito_lc import MemoryStore, SnapshotBuilder

        memory = MemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=64)))
        memory.store_many(["Auth tokens expire hourly.", "Billing runs on PostgreSQL."])
        snapshot = SnapshotBuilder.from_llm(None).build(memory, rebuild=True)
        snapshot.method  # 'grouped|fallback_no_llm'
        print(snapshot.text)
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    llm: Runnable[Any, Any] | None = None
    """The chat model; None builds the zero-LLM grouping."""
    mode: SnapshotMode = "pointer"
    """``pointer`` (verbatim memories under model-written headings) or ``summary``."""
    prompt: PromptLike | None = None
    """Prompt override; by default the registry's ``snapshot_pointer`` or ``snapshot``."""
    structured_output: StructuredOutputMode = "auto"
    """How the JSON schema reaches the model (``json_object`` for llama.cpp servers)."""
    sample_size: int = Field(default=500, ge=1)
    """The most memories a snapshot is built from: the newest current ones."""
    item_chars: int = Field(default=160, ge=20)
    """Each memory's text is cut to this many characters (code points) in the snapshot."""
    max_chars: int = Field(default=3200, ge=200)
    """Length budget of the whole snapshot in characters (about 800 tokens by default)."""
    prompt_item_chars: int = Field(default=200, ge=20)
    """Each memory is cut to this many characters in the prompt."""
    rebuild_growth: float = Field(default=0.2, ge=0.0)
    """Rebuild when the store has grown by more than this fraction since the last build."""
    timeout: float | None = Field(default=None, gt=0)
    """Seconds one model call may take (a retry without the schema included) before the
    build groups without it (``grouped|fallback_timeout``); ``None`` waits as long as the
    chat model's own client does. The abandoned request ends with the client's timeout."""

    @classmethod
    def from_llm(
        cls, llm: Runnable[Any, Any] | None, *, prompt: PromptLike | None = None, **fields: Any
    ) -> SnapshotBuilder:
        """Create a snapshot builder from a chat model.

        Args:
            llm: Chat model to call; ``None`` builds the zero-LLM grouping.
            prompt: Prompt to use instead of the registry's ``snapshot_pointer`` entry
                (``snapshot`` in summary mode).
            **fields: Other fields, such as ``mode``, ``structured_output``, ``timeout``,
                ``max_chars``.

        Returns:
            The snapshot builder.
        """
        return cls(llm=llm, prompt=prompt, **fields)

    def invoke(
        self,
        input: dict[str, Any],  # noqa: A002 - the Runnable interface's name
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> Snapshot:
        """Build from ``{"memory": ..., "scope": ..., "rebuild": ..., "dry_run": ...}``."""
        return self._call_with_config(
            lambda request: self.build(**request), input, config, run_type="chain"
        )

    def build(
        self,
        memory: MemoryStore,
        *,
        scope: ScopeLike = None,
        rebuild: bool = False,
        dry_run: bool = False,
    ) -> Snapshot:
        """Build (or reuse) the snapshot of ``memory``'s scope and save it unless ``dry_run``."""
        target = as_scope(scope, memory.scope)
        existing = None if rebuild or dry_run else self.cached(memory, scope=target)
        if existing is not None:
            return existing
        count = memory.count(target)
        for _ in range(_BUILDS_PER_CALL):
            forgets = memory.forgets
            memories = _newest_current(memory, target, self.sample_size, count)
            text, method = self._text(memories)
            snapshot = _snapshot(text, count, memories, method, target)
            if dry_run or memory.state is None:
                return snapshot
            if _save(memory, snapshot, forgets):
                return snapshot
            logger.info("memories were forgotten while the snapshot was built; building it again")
        return self._built_between_forgets(memory, target, count)

    def cached(self, memory: MemoryStore, *, scope: ScopeLike = None) -> Snapshot | None:
        """The saved snapshot of ``memory``'s scope while it is fresh, else None; no model call.

        Fresh: :func:`load_snapshot` serves it and the scope has grown by at most
        ``rebuild_growth`` since it was built. Its method is ``cached``.
        """
        target = as_scope(scope, memory.scope)
        existing = load_snapshot(memory, target)
        if existing is None or self._stale(existing, memory.count(target)):
            return None
        existing.method = "cached"
        return existing

    def _built_between_forgets(self, memory: MemoryStore, target: Scope, count: int) -> Snapshot:
        """The grouped snapshot, listed and saved with no forget in between (no model call).

        Forgets wait meanwhile, in every process over the store.
        """
        with memory.exclusive():
            forgets = memory.forgets
            current = memory.count(target)  # read again: this waited for the lock
            memories = _newest_current(memory, target, self.sample_size, current)
            text, method = self._grouped(memories, "forgotten_during_build")
            snapshot = _snapshot(text, count, memories, method, target)
            _save(memory, snapshot, forgets)
        return snapshot

    def _stale(self, snapshot: Snapshot, count: int) -> bool:
        return count > snapshot.count * (1 + self.rebuild_growth)

    def _text(self, memories: list[Document]) -> tuple[str, str]:
        if not memories:
            return "", "empty"
        if self.llm is None:
            return self._grouped(memories, "fallback_no_llm")
        if self.mode == "summary":
            return self._summary(memories)
        return self._pointer(memories)

    def _grouped(self, memories: list[Document], reason: str) -> tuple[str, str]:
        groups = group_memories(memories)
        return render(groups, memories, self.item_chars, self.max_chars), f"grouped|{reason}"

    def _numbered(self, memories: list[Document]) -> str:
        return "\n".join(
            f"[{i}] {_shorten(d.page_content, self.prompt_item_chars)}"
            for i, d in enumerate(memories, start=1)
        )

    def _pointer(self, memories: list[Document]) -> tuple[str, str]:
        assert self.llm is not None  # noqa: S101 - checked by the caller
        extractor = LlmExtractor.from_llm(
            self.llm,
            output=TopicIndex,
            prompt=resolve_prompt("snapshot_pointer", self.prompt),
            structured_output=self.structured_output,
            raise_on_error=True,
            timeout=self.timeout,
        )
        try:
            result = extractor.invoke_with_result({"memories": self._numbered(memories)})
        except Exception as exc:  # any model failure degrades to grouping
            return self._grouped(memories, _failed("snapshot", exc))
        index: TopicIndex | None = result.value
        if result.method is ExtractionMethod.PARSE_ERROR or index is None or not index.topics:
            return self._grouped(memories, "fallback_parse_error")
        groups = [(t.heading, [n - 1 for n in t.items if n >= 1]) for t in index.topics]
        return render(groups, memories, self.item_chars, self.max_chars), "pointer"

    def _summary(self, memories: list[Document]) -> tuple[str, str]:
        assert self.llm is not None  # noqa: S101 - checked by the caller
        chain = resolve_prompt("snapshot", self.prompt) | self.llm | StrOutputParser()
        variables = {"memories": self._numbered(memories), "max_words": self.max_chars // 6}
        try:
            reply = call_with_deadline(
                lambda: chain.invoke(variables), self.timeout, name="SnapshotBuilder-model-call"
            )
        except Exception as exc:  # any model failure degrades to grouping
            return self._grouped(memories, _failed("snapshot summary", exc))
        text = strip_reasoning(reply).strip()
        if not text:
            return self._grouped(memories, "fallback_parse_error")
        return cut(text, self.max_chars) + "\n", "summary"


def _failed(step: str, exc: Exception) -> str:
    """Log a failed model call; its fallback: ``fallback_timeout`` or ``fallback_error``."""
    logger.warning("%s failed (%s: %s); grouping without the model", step, type(exc).__name__, exc)
    return "fallback_timeout" if failure_kind(exc) == "timeout" else "fallback_error"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _snapshot(
    text: str, count: int, memories: list[Document], method: str, scope: Scope
) -> Snapshot:
    sources = [doc.id for doc in memories if doc.id]
    return Snapshot(
        text,
        None,
        _now(),
        count,
        len(memories),
        method,
        sources,
        scope.metadata(),
        _digest(memories),
    )


def _newest_current(memory: MemoryStore, scope: Scope, limit: int, count: int) -> list[Document]:
    """The ``limit`` current memories of ``scope`` written last, oldest first.

    Read from the end of the write order (``count``, the scope's memories, is where it
    ends), a page at a time, until enough are found.
    """
    kept: list[Document] = []
    end = count
    while end > 0 and len(kept) < limit:
        start = max(0, end - _SAMPLE_PAGE)
        page = memory.list(scope, limit=end - start, offset=start)
        kept = [doc for doc in page if not is_superseded(doc.metadata)] + kept
        end = start
    return kept[-limit:]


def _sha256(text: str) -> str:
    r"""The text's SHA-256, line breaks counted as ``\n`` (a file read back folds ``\r\n``)."""
    folded = text.replace("\r\n", "\n").replace("\r", "\n")
    return hashlib.sha256(folded.encode("utf-8", "surrogatepass")).hexdigest()


def _digest(memories: list[Document]) -> str:
    """A hash of what a snapshot shows of these memories: ids, texts, current or not."""
    parts = sorted(
        f"{doc.id}\x1f{doc.page_content}\x1f{doc.metadata.get(SUPERSEDED_BY_KEY) or ''}"
        for doc in memories
    )
    return _sha256("\x1e".join(parts))


def _save(memory: MemoryStore, snapshot: Snapshot, forgets: int) -> bool:
    """Save ``snapshot`` unless one of its sources was forgotten (it may hold its text).

    ``forgets`` tells a forget in this process; a source no longer stored, one in another.
    """
    assert memory.state is not None  # noqa: S101 - checked by the caller
    snapshot.path = memory.state.location(SNAPSHOT_FILE)
    snapshot.text_sha256 = _sha256(snapshot.text)
    files = {
        SNAPSHOT_FILE: snapshot.text,
        SNAPSHOT_META_FILE: json.dumps(asdict(snapshot), indent=2) + "\n",
    }
    return memory.save_state(files, forgets=forgets, sources=snapshot.sources, scope=snapshot.scope)


def load_snapshot(memory: MemoryStore, scope: ScopeLike = None) -> Snapshot | None:
    """The snapshot saved in ``memory``'s state (files or a table), or None when none was built.

    A snapshot one of whose memories was forgotten or deleted since it was built
    (by any process, through any view) is None too, and is dropped from the state.
    So is one whose memories were edited or superseded since (it is built again),
    and one built from another scope than ``scope`` (default: the store's), which a
    state shared between scopes may hold.
    """
    saved = _read_saved(memory)
    if saved is None:
        return None
    snapshot, meta_text, scoped = saved
    if not scoped or snapshot.scope != as_scope(scope, memory.scope).metadata():
        logger.info("the saved snapshot is of another scope, or of no known one: not served")
        return None
    try:
        stored = memory.get_many(snapshot.sources, scope=snapshot.scope)
    except (OSError, ValueError, TypeError) as exc:
        logger.warning("ignoring a snapshot whose sources cannot be read: %s", exc)
        return None
    if len({doc.id for doc in stored}) < len(set(snapshot.sources)):  # forgotten or deleted
        _drop_unless_saved_again(memory, meta_text)
        return None
    if snapshot.digest and snapshot.digest != _digest(stored):
        logger.info("a memory of the saved snapshot was edited or superseded: not served")
        return None
    return snapshot


def _read_saved(memory: MemoryStore) -> tuple[Snapshot, str, bool] | None:
    """The saved snapshot, its meta file's text, and whether it records its scope.

    Its text and metadata are replaced one after the other, so a read between the
    two finds them apart; it reads them again under the store's write lock, which
    every save holds, and gets the snapshot saved before or the one saved after.
    """
    state = memory.state
    if state is None:
        return None
    try:
        return _read_files(state)
    except _SavedApartError:
        pass
    try:
        with memory.exclusive():
            return _read_files(state)
    except (_SavedApartError, WriteLockTimeoutError):
        logger.warning("ignoring a snapshot whose text and metadata were saved apart")
        return None


class _SavedApartError(Exception):
    """The snapshot's text and metadata are not of one save."""


def _read_files(state: StateStore) -> tuple[Snapshot, str, bool] | None:
    """:func:`_read_saved` once, raising :class:`_SavedApartError` for a text and metadata apart."""
    try:
        meta_text = state.read(SNAPSHOT_META_FILE)
        text = state.read(SNAPSHOT_FILE)
        if meta_text is None or text is None:
            return None
        meta = json.loads(meta_text)
        meta["text"] = text
        snapshot = Snapshot(**meta)
    except (OSError, ValueError, TypeError) as exc:
        logger.warning("ignoring unreadable snapshot in %s: %s", state.location(""), exc)
        return None
    if snapshot.text_sha256 and snapshot.text_sha256 != _sha256(text):
        raise _SavedApartError
    return snapshot, meta_text, "scope" in meta  # an older release's may be any scope's


def _drop_unless_saved_again(memory: MemoryStore, meta_text: str) -> None:
    """Drop the saved snapshot read as ``meta_text``, unless a build saved another since."""
    assert memory.state is not None  # noqa: S101 - checked by the caller
    try:
        with memory.exclusive():  # a save checks and writes under it
            if memory.state.read(SNAPSHOT_META_FILE) == meta_text:
                memory.state.delete(SNAPSHOT_FILES)
                logger.info("dropped a snapshot holding forgotten memories")
    except WriteLockTimeoutError:
        logger.warning("a snapshot holding forgotten memories is left for the next read to drop")
