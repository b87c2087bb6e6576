"""MemoryStore: verbatim and extracted writes, scoping and dedup over a vector store."""

from __future__ import annotations

import asyncio
import builtins
import hashlib
import itertools
import json
import logging
import math
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore

from cogito_lc._core.display import escape_controls
from cogito_lc._core.filters import and_filters
from cogito_lc._core.metadata import METADATA_KEY
from cogito_lc._core.timestamps import parse_since, parse_timestamp
from cogito_lc._core.validation import check_positive_int, check_query, check_unicode
from cogito_lc._core.versions import (
    SUPERSEDED_BY_KEY,
    SUPERSEDES_KEY,
    VERSION_KEYS,
    VERSION_SEARCH_DEPTH,
    VERSION_SEARCH_GROWTH,
    check_as_of,
    is_superseded,
    superseded_ids,
    supersedes_value,
    version_filter,
)
from cogito_lc.embeddings.lazy import LazyEmbeddings
from cogito_lc.extraction.fact_extractor import Fact, FactExtractionInput, FactExtractor
from cogito_lc.extraction.llm_extractor import ExtractionMethod, ExtractionResult
from cogito_lc.memory._forget import ForgetResult, audit_record, audit_text, forget_subject
from cogito_lc.memory._guard import guard_for
from cogito_lc.memory._versions import (
    incomplete_supersessions,
    superseded_marks,
    version_chain,
)
from cogito_lc.memory._vocab_file import load_vocab_map
from cogito_lc.memory._vocab_purge import VocabPurge
from cogito_lc.memory.scope import (
    SCOPE_KEYS,
    Scope,
    ScopeLike,
    as_scope,
    memory_id,
)
from cogito_lc.memory.seed import SeedSummary, seed_directory
from cogito_lc.memory.state import (
    SNAPSHOT_FILES,
    ChromaStateStore,
    DirectoryStateStore,
    PostgresStateStore,
    QdrantStateStore,
    StateStore,
)
from cogito_lc.retrievers.recall_b import RecallB
from cogito_lc.stores import (
    ChromaAdapter,
    QdrantAdapter,
    ScoredDocument,
    StoreAdapter,
    adapter_for,
    check_filterable,
    cosine_scores,
)
from cogito_lc.stores.lexical_sync import LexicalSync, lexical_sync_for
from cogito_lc.stores.postgres import (
    PostgresDatabase,
    WriteLockTimeoutError,
    open_postgres_store,
)

if TYPE_CHECKING:
    from cogito_lc.document_compressors.supersession import SupersessionJudge

__all__ = [
    "RESERVED_METADATA_KEYS",
    "AddResult",
    "ForgetResult",
    "MemoryConflictError",
    "MemoryNotFoundError",
    "MemoryStore",
    "SupersessionRefusedError",
    "scope_state_path",
]

logger = logging.getLogger(__name__)

RESERVED_METADATA_KEYS = frozenset(
    {
        *SCOPE_KEYS,
        *VERSION_KEYS,
        "created_at",
        "updated_at",
        "kind",
        "importance",
        "source_id",
        "cogito",
    }
)
"""Metadata keys the store sets itself; user metadata may not use them."""


SCOPES_DIR = "scopes"
"""The folder of a store's state that holds its scopes' own snapshots and vocabulary maps."""
STATE_COLLECTION_SUFFIX = "-cogito-state"
"""On a Chroma server, snapshots and vocabulary maps go to the collection ``<name><suffix>``."""
VERIFY_RECENT_MEMORIES = 2_000
"""How many of the latest writes the start-up search-index check covers: twice
Chroma's default index sync threshold (1,000 writes), the span a kill can tear."""
VOCAB_CHECK_MEMORIES = 10_000
"""How many memories of a scope a forget reads for the terms of its vocabulary maps that
occur in the forgotten text: a term in none of them is taken out of the maps."""
_SCALARS = (str, int, float, bool)
_CHROMA_PREFIX = "chroma:"
"""Metadata keys Chroma reserves (``chroma:document``) or drops: refused on every store."""
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_MAX_ID_SUFFIXES = 100
"""How many other ids a text may take when edited memories hold its own (``<id>-2``...)."""
_TEXT_PAGE = 500
"""How many memories :meth:`MemoryStore._texts_in` reads at a time."""
MEMORY_ID_MAX_CHARS = 256
"""The longest id a memory may be given (``store(..., id=)``, a Document's id)."""
READ_ID_MAX_CHARS = 512
"""The longest id the HTTP API, the MCP tools and the CLI read, delete and forget by: more
than any id a memory can have (a given one, with the suffix of a version said again after
it was superseded; the store's own are 32 hex digits and a suffix)."""

_STAGE_ONE_K = 100
"""How many candidates stage 1 (RecallB) of ``as_retriever("recall")`` is built to fetch."""
_STAGE_ONE_FIELDS = frozenset(RecallB.model_fields) - {"k"} - set(BaseRetriever.model_fields)
"""Keywords of ``as_retriever("recall")`` that configure stage 1: ``k`` is the final count,
and ``tags``, ``metadata`` and ``name`` are the returned retriever's own."""


@dataclass
class _Versions:
    """What a write with supersession did."""

    memories: list[Document] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    repeated: list[str] = field(default_factory=list)
    kept_current: list[str] = field(default_factory=list)
    methods: list[str] = field(default_factory=list)

    @property
    def method(self) -> str | None:
        """The judge's tags, one per judged memory, joined by ``,`` when they differ."""
        return ",".join(dict.fromkeys(self.methods)) or None


class MemoryConflictError(ValueError):
    """An id given for a write is already held by a different memory."""


class SupersessionRefusedError(ValueError):
    """A write named a memory it cannot supersede: one written after it, or of a narrower scope.

    Store the new version in the other memory's scope, or date it later.
    """


class MemoryNotFoundError(KeyError):
    """No memory with this id exists in the scope of the call.

    Attributes:
        ids: The ids the call named that are not (current) memories of its scope;
            empty when the call named none (a query that matched nothing).
    """

    def __init__(self, *args: object, ids: Sequence[str] = ()) -> None:
        super().__init__(*args)
        self.ids: tuple[str, ...] = tuple(ids)

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "memory not found"


@dataclass
class AddResult:
    """What :meth:`MemoryStore.add` stored.

    Attributes:
        memories: The stored documents (facts, or the verbatim text on fallback).
        method: How the write went (``facts``, ``no_facts``, ``fallback_verbatim``,
            ``fallback_no_llm``; the tags are listed under
            :data:`~cogito_lc.METADATA_KEY`): only an explicit empty answer stores
            nothing.
        source_id: The id of the source text (the id it has, or would have, when
            stored verbatim); every fact carries it as ``source_id``.
        extraction: The extractor's own method tag, when one ran.
        superseded: Ids of the memories the new ones replaced (they stay stored,
            marked ``superseded_by``; see :meth:`MemoryStore.history`).
        repeated: Ids of stored memories the new text only repeated (nothing new
            was written for those; they are in ``memories``).
        kept_current: Ids the judge chose to supersede that stay current, since
            they were written after the new memory's ``created_at`` (a memory
            replaces only earlier ones); only a dated ``add`` meets this.
        supersession: The judge's method tag (``judged``, ``skipped_empty``, a
            ``fallback_*`` tag when it could not be used: then nothing was
            superseded), or None when no judge was asked.
        forgotten: Ids forgotten when the text was a forget request
            (``method="forgotten"``; nothing is stored then).
    """

    memories: list[Document]
    method: str
    source_id: str
    extraction: str | None = None
    superseded: list[str] = field(default_factory=list)
    repeated: list[str] = field(default_factory=list)
    supersession: str | None = None
    forgotten: list[str] = field(default_factory=list)
    kept_current: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        """How many memories were stored."""
        return len(self.memories)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _timestamp(value: Any) -> str:
    """A given ``created_at`` as stored: ISO 8601 in UTC."""
    when = parse_since(value, name="created_at")
    return when.isoformat(timespec="milliseconds" if when.microsecond else "seconds")


def scope_state_path(scope: Scope) -> str:
    """Where a view of ``scope`` keeps its snapshot and map in its store's state.

    ``scopes/<digest>``: a hash of the ``user_id`` for a scope of that key alone
    (the service's layout), else of the scope's keys and values, so a path never
    holds a user id and one scope's state never serves another's.
    """
    keys = scope.metadata()
    name = keys["user_id"] if set(keys) == {"user_id"} else json.dumps(keys, sort_keys=True)
    return f"{SCOPES_DIR}/{hashlib.sha256(str(name).encode()).hexdigest()[:24]}"


class MemoryStore:
    """Long-term memory over any LangChain vector store, confined to scopes.

    Writes are verbatim (:meth:`store`, :meth:`store_many`) or go through a
    :class:`~cogito_lc.FactExtractor` (:meth:`add`), and nothing handed in is
    lost when extraction fails. Ids are stable hashes of scope and text, so
    storing the same memory twice is idempotent. Every read, delete and handed-out
    retriever is confined to a scope by a metadata filter pushed down to the
    store. Listing, counting and deleting a whole scope need a store that
    filters by metadata (Chroma); the rest works with any vector store.

    Example:
        ```python
        from langchain_chroma import Chroma

        from cogito_lc import MemoryStore, local_embeddings

        memory = MemoryStore(
            Chroma("memories", local_embeddings(), persist_directory="./memory"),
            scope={"user_id": "alice"},
        )
        memory.store("Auth tokens expire after 3600 seconds.")
        docs = memory.as_retriever().invoke("how long do auth tokens last?")
        assert docs[0].page_content == "Auth tokens expire after 3600 seconds."
        ```
    """

    _covering_states: tuple[tuple[StateStore, Scope], ...] = ()
    """The states of the stores a view was made from (:meth:`scoped`), with their scopes."""
    _view_root: tuple[StateStore | None, Scope] | None = None
    """A view's :attr:`_root`, set by :meth:`scoped`."""

    def __init__(
        self,
        vectorstore: VectorStore,
        *,
        extractor: FactExtractor | None = None,
        scope: ScopeLike = None,
        max_text_chars: int = 100_000,
        batch_size: int = 64,
        vocab_map: Mapping[str, Sequence[str]] | None = None,
        data_dir: str | Path | None = None,
        verify_index: bool = True,
        state: StateStore | None = None,
        judge: SupersessionJudge | None = None,
        supersession_candidates: int = 5,
        forget_min_cosine: float = 0.3,
        forget_margin: float = 0.0,
        forget_similarity: float = 0.7,
    ) -> None:
        if max_text_chars < 1 or batch_size < 1 or supersession_candidates < 1:
            msg = "max_text_chars, batch_size and supersession_candidates must be >= 1."
            raise ValueError(msg)
        self.judge = judge
        """Decides which stored memories a new one supersedes or repeats (integers only);
        None supersedes nothing on write (recall still prefers current facts)."""
        self.supersession_candidates = supersession_candidates
        """How many related memories of the scope the judge is shown for a new one."""
        self.forget_min_cosine = forget_min_cosine
        """A forget request by query forgets only memories at least this similar to it..."""
        self.forget_margin = forget_margin
        """...and at most this far below the most similar one, or..."""
        self.forget_similarity = forget_similarity
        """...at least this close (cosine) to the most similar one: its near-restatements.
        Chosen on the knowledge-update benchmark's forget requests (two generator seeds)
        for the fewest other memories forgotten: a lower value takes more versions of the
        fact but also memories that only share a name with it. Versions phrased apart are
        reached through the judge's version chains, or by ids."""
        self.vectorstore = vectorstore
        self.extractor = extractor
        self.scope = as_scope(scope)
        if self.scope:
            check_filterable(vectorstore, "MemoryStore(scope=...)")
        self.max_text_chars = max_text_chars
        self.batch_size = batch_size
        self.vocab_map: dict[str, list[str]] | None = (
            {k: list(v) for k, v in vocab_map.items()} if vocab_map else None
        )
        self._store: StoreAdapter = adapter_for(vectorstore)
        persistent = self._store.persist_directory()
        self.data_dir: Path | None = Path(data_dir) if data_dir else persistent
        """Where the snapshot and the vocabulary map are saved: the Chroma persist
        directory by default; None for in-memory stores (nothing is saved)."""
        self.forget_log: builtins.list[dict[str, Any]] = []
        """The audit records of what this object forgot (also kept in ``state``)."""
        self.state: StateStore | None = state
        """Where the snapshot and the vocabulary map are saved: given, or files in
        ``data_dir`` (a table for :meth:`from_database_url`, a collection beside the
        memories on a Chroma or Qdrant server); None saves nothing."""
        if self.state is None and self.data_dir is not None:
            self.state = DirectoryStateStore(self.data_dir)
        if self.state is None and isinstance(self._store, ChromaAdapter):
            self.state = _server_state(self._store)
        if self.state is None and isinstance(self._store, QdrantAdapter):
            self.state = QdrantStateStore(
                self._store.client, f"{self._store.collection}{STATE_COLLECTION_SUFFIX}"
            )
        self._audit_state = self.state
        """Where forget audit records go: ``state``, or for a view with none its store's."""
        if self.vocab_map is None:
            self.vocab_map = load_vocab_map(self.state)
        self._retrievers: list[weakref.ref[RecallB]] = []
        self._related: dict[Scope, RecallB] = {}
        self._guard = guard_for(vectorstore, member=self)  # shared by every MemoryStore over it
        self._lexical: LexicalSync | None = lexical_sync_for(vectorstore)
        """The corpus lexical index every write updates (None for stores it cannot follow)."""
        if verify_index and _first_use(vectorstore):
            if persistent is not None:
                self.repair_search_index(recent=VERIFY_RECENT_MEMORIES)
                if self._lexical is not None:
                    self._lexical.ensure_current()
            self._complete_at_start()

    def _complete_at_start(self) -> None:
        """Complete supersessions cut short; a replica busy with the write lock only delays it."""
        try:
            self.complete_supersessions(recent=VERIFY_RECENT_MEMORIES)
        except WriteLockTimeoutError as busy:
            logger.warning(
                "supersessions cut short were not checked at start-up (%s); "
                "call complete_supersessions() to check them",
                busy,
            )

    @classmethod
    def from_database_url(
        cls,
        url: str,
        *,
        embeddings: Embeddings,
        collection: str = "cogito_memory",
        **kwargs: Any,
    ) -> MemoryStore:
        """A MemoryStore over a Postgres database with pgvector (``langchain-postgres``).

        The table ``collection`` is created, or migrated to this version, on
        first use (idempotent, versioned, safe when replicas start together):
        the scope keys are indexed columns every filter is pushed into, the
        vector has an HNSW cosine index, and a generated ``tsvector`` column
        with a GIN index and per-scope BM25 counters kept by triggers serve the
        lexical run (:class:`~cogito_lc.stores.PostgresLexicalIndex`). Ids are the
        primary key and new memories are inserted with ``ON CONFLICT DO
        NOTHING``, so the same text stored at once by two processes is one
        memory. The database needs the ``vector`` extension (created if the
        user may).

        Args:
            url: A ``postgresql://user:password@host:port/database`` URL.
            embeddings: The embedding model.
            collection: The table name (lower-case letters, digits, ``_``).
            **kwargs: Other arguments of :class:`MemoryStore` (``scope``,
                ``extractor``, ...).

        Raises:
            DatabaseSetupError: If the database is unreachable, refuses the
                credentials or lacks the ``vector`` extension (the message
                names the fix and never the password).

        Example:
            ```python
            # needs: a Postgres database with pgvector
            from cogito_lc import MemoryStore, local_embeddings

            memory = MemoryStore.from_database_url(
                "postgresql://me:secret@localhost:5432/app",
                embeddings=local_embeddings(),
                scope={"user_id": "alice"},
            )
            memory.store("Auth tokens expire after 3600 seconds.")
            ```
        """
        database = PostgresDatabase(url)
        store = open_postgres_store(database, embeddings, collection=collection)
        kwargs.setdefault("state", PostgresStateStore(database, f"{collection}/"))
        return cls(store, **kwargs)

    @classmethod
    def from_qdrant(
        cls,
        *,
        embeddings: Embeddings,
        path: str | Path | None = None,
        url: str | None = None,
        api_key: str | None = None,
        collection: str = "cogito_memory",
        **kwargs: Any,
    ) -> MemoryStore:
        """A MemoryStore over Qdrant (``langchain-qdrant``): embedded at ``path``, or a server.

        The collection is created on first use (cosine, sized from
        ``embeddings``). Scopes and filters are pushed down as payload filters
        (indexed on a server); ids are kept as given, whatever their form. In
        local mode the lexical index and the snapshot live in ``path``.

        Args:
            embeddings: The embedding model.
            path: A directory for Qdrant's embedded local mode (one process at a time).
            url: A Qdrant server URL (``http://localhost:6333``) instead of ``path``.
            api_key: The server's API key.
            collection: The collection name.
            **kwargs: Other arguments of :class:`MemoryStore` (``scope``, ...).

        Example:
            ```python
            from cogito_lc import MemoryStore, local_embeddings

            memory = MemoryStore.from_qdrant(
                embeddings=local_embeddings(), path="./qdrant", scope={"user_id": "alice"}
            )
            memory.store("Auth tokens expire after 3600 seconds.")
            ```
        """
        from cogito_lc.stores.qdrant import open_qdrant_store

        store = open_qdrant_store(
            embeddings, path=path, url=url, api_key=api_key, collection=collection
        )
        return cls(store, **kwargs)

    # -- writes -------------------------------------------------------------

    def store(
        self,
        text: str,
        *,
        id: str | None = None,  # noqa: A002 - mirrors the HTTP API field
        metadata: Mapping[str, Any] | None = None,
        scope: ScopeLike = None,
        created_at: datetime | str | None = None,
        supersede: bool = False,
        supersedes: Sequence[str] | None = None,
    ) -> Document:
        """Write ``text`` verbatim and return the stored document.

        Without ``id``, the id is a stable hash of scope and text (whitespace runs
        folded), so the same text stored twice in a scope is one document (the
        first one, with its original ``created_at``). A text that differs from a
        stored one only in whitespace is another memory, stored under the next id
        of the text (``<id>-2``, ...); with ``id``, one held by any other text is
        a :class:`MemoryConflictError`.

        Args:
            text: The memory, stored as given.
            id: The id to store it under (default: a hash of scope and text); at
                most :data:`MEMORY_ID_MAX_CHARS` (256) characters.
            metadata: The user's metadata (JSON scalars; no reserved key, none starting
                with ``$`` or ``chroma:``).
            scope: The scope to write in instead of the store's.
            created_at: When the memory was true from (a datetime or ISO 8601
                string; default now), for importing dated conversations.
            supersede: Ask the store's ``judge`` which memories of the scope this
                one supersedes or repeats (see :meth:`add`); a first-person forget
                request ("Please forget my phone number.") then forgets instead,
                and the returned document is the request, not stored.
            supersedes: The ids of current memories of the scope this one
                replaces, when the caller knows them (no judge is asked): they
                are kept as stored and marked superseded by it. A memory
                replaces only memories written in its own scope, and with
                ``created_at`` given, only earlier ones.

        Raises:
            ValueError: On empty or over-long text, an over-long id, metadata that
                is not JSON scalars or uses a reserved key, an unknown scope key, or
                a ``created_at`` that is not a timestamp.
            SupersessionRefusedError: If ``supersedes`` names a memory of a
                narrower scope, or one written after the given ``created_at``
                (a judge is not shown those).
            MemoryNotFoundError: If an id of ``supersedes`` is not a current
                memory of the scope.
        """
        target = as_scope(scope, self.scope)
        document = self._prepare(text, id, metadata, target, created_at)
        if supersedes is not None:
            return self._write_superseding(
                document, supersedes, target, named=True, dated=created_at is not None
            ).document
        if not supersede:
            return self._write([document])[0]
        subject = forget_subject(text)
        if subject is not None:
            self._forget_request(subject, target)
            return document
        return self._write_versions([document], target, dated=created_at is not None).memories[0]

    def store_many(
        self,
        items: Iterable[str | Document],
        *,
        scope: ScopeLike = None,
        batch_size: int | None = None,
    ) -> list[str]:
        """Write many memories verbatim, one embeddings call per batch; ids in input order.

        Every item is validated before anything is written, so a bad item
        means no partial write. ``Document`` items keep their id and metadata.
        """
        return [
            doc_id
            for doc_id, _ in self.store_many_created(items, scope=scope, batch_size=batch_size)
        ]

    def store_many_created(
        self,
        items: Iterable[str | Document],
        *,
        scope: ScopeLike = None,
        batch_size: int | None = None,
    ) -> list[tuple[str, bool]]:
        """:meth:`store_many`, and whether this call wrote each item's memory.

        False for an item whose memory was stored already, or written for an
        earlier item of the call (the same text, or the same id and text).
        """
        target = as_scope(scope, self.scope)
        prepared = [
            self._prepare(item.page_content, item.id, item.metadata, target)
            if isinstance(item, Document)
            else self._prepare(item, None, None, target)
            for item in items
        ]
        size = batch_size or self.batch_size
        stored: list[Document] = []
        for start in range(0, len(prepared), size):
            stored.extend(self._write(prepared[start : start + size]))
        # _write gives back the document it was handed only when it wrote that one
        return [(doc.id or "", doc is own) for doc, own in zip(stored, prepared, strict=True)]

    def add(
        self,
        text: str,
        *,
        context_hints: Sequence[str] = (),
        max_facts: int = 7,
        scope: ScopeLike = None,
        created_at: datetime | str | None = None,
        supersede: bool | None = None,
    ) -> AddResult:
        """Extract atomic facts from ``text`` and store each verbatim.

        Only an explicit empty answer from the model (``[]`` or ``{"items": []}``)
        stores nothing (``method="no_facts"``). Every other way to end without facts
        (model unreachable or failing, reply unparseable, all items invalid) stores the
        text verbatim instead (``method="fallback_verbatim"``).

        With supersession (``supersede``, by default on when the store has a
        ``judge``), each new memory is shown to the judge with the related
        memories of the scope (found by RecallB), numbered; the judge answers
        with numbers only. Memories it supersedes stay stored, byte for byte,
        and get ``superseded_by`` and ``superseded_at`` (reads leave them out by
        default; :meth:`history` returns the chain); the new memory records them
        in ``supersedes``. A memory it merely repeats is not written again. A
        failed or unparsable answer supersedes nothing (``supersession`` says so).

        A first-person forget request ("Please forget my phone number.") is not
        stored: the memories it points at are forgotten (:meth:`forget`) and
        listed in ``forgotten`` (``method="forgotten"``).

        Args:
            text: The agent output or message.
            context_hints: Topics the extractor should look for.
            max_facts: The most facts to extract.
            scope: The scope to write in instead of the store's.
            created_at: When the text was said (default now).
            supersede: Judge supersession (default: when a ``judge`` is set).
        """
        target = as_scope(scope, self.scope)
        source = self._prepare(text, None, None, target, created_at)
        source_id = source.id or ""
        subject = forget_subject(text)
        if subject is not None:
            return AddResult(
                [], "forgotten", source_id, forgotten=self._forget_request(subject, target)
            )
        judged = self.judge is not None if supersede is None else supersede
        judged_as = _Judged(judged, dated=created_at is not None)
        if self.extractor is None:
            return self._added([source], "fallback_no_llm", source_id, None, target, judged_as)
        result = self.extractor.invoke_with_result(
            FactExtractionInput(text=text, context_hints=list(context_hints), max_facts=max_facts)
        )
        extraction = str(getattr(result.method, "value", result.method))
        facts: list[Fact] = list(result.value or [])
        if not facts and _is_explicit_empty_answer(result):
            return AddResult([], "no_facts", source_id, extraction)
        if not facts:
            logger.warning(
                "fact extraction gave no facts (%s, %d items dropped); storing the text verbatim",
                extraction,
                result.dropped,
            )
            return self._added(
                [source], "fallback_verbatim", source_id, extraction, target, judged_as
            )
        when = source.metadata["created_at"]
        docs = [self._fact_document(fact, source_id, target, when) for fact in facts]
        return self._added(docs, "facts", source_id, extraction, target, judged_as)

    def _added(
        self,
        docs: builtins.list[Document],
        method: str,
        source_id: str,
        extraction: str | None,
        scope: Scope,
        judged: _Judged,
    ) -> AddResult:
        if not judged.on:
            return AddResult(self._write(docs), method, source_id, extraction)
        versions = self._write_versions(docs, scope, dated=judged.dated)
        return AddResult(
            versions.memories,
            method,
            source_id,
            extraction,
            superseded=versions.superseded,
            repeated=versions.repeated,
            supersession=versions.method,
            kept_current=versions.kept_current,
        )

    def update(
        self,
        id: str,  # noqa: A002
        text: str,
        *,
        metadata: Mapping[str, Any] | None = None,
        scope: ScopeLike = None,
    ) -> Document:
        """Replace a memory's text (re-embedded), keeping its id and ``created_at``.

        With ``metadata``, its keys are set on the memory too (validated as for
        :meth:`store`; the memory's other keys are kept). Only a current memory
        is updated: a superseded version stays as stored (see :meth:`history`).

        Raises:
            MemoryNotFoundError: If no memory with this id lies in the scope, or
                it is superseded (also when a supersession is written first by
                another caller): update the current version instead.
        """
        target = as_scope(scope, self.scope)
        self._check_text(text)
        replacement = None if metadata is None else _check_metadata(metadata)
        vectors = self._store.vectors_for([Document(page_content=text)])  # before the lock
        if vectors is None:
            self._load_embeddings()
        with self.exclusive():
            current = _current_version(self._require(id, target), target)
            merged = {**current.metadata, **(replacement or {}), "updated_at": _now()}
            document = Document(page_content=text, metadata=merged, id=id)
            self._mark_pending([id])
            self._store.replace(document, vectors[0] if vectors else None)
            if self._lexical is not None:
                self._lexical.upsert([document])
            self._invalidate()
        return document

    # -- reads and deletes ----------------------------------------------------

    def get(self, id: str, *, scope: ScopeLike = None) -> Document | None:  # noqa: A002
        """The memory with this id if it lies in the scope, else None."""
        found = self._store.get([id], as_scope(scope, self.scope).where())
        return found[0] if found else None

    def list(
        self,
        scope: ScopeLike = None,
        limit: int = 50,
        offset: int = 0,
        *,
        include_superseded: bool = True,
    ) -> builtins.list[Document]:
        """A page of the memories in the scope, in the order they were written.

        Args:
            scope: The scope to list instead of the store's.
            limit: The page size.
            offset: How many memories to skip first.
            include_superseded: False lists current memories only (``offset``
                then counts current memories).
        """
        if limit < 1 or offset < 0:
            msg = f"limit must be >= 1 and offset >= 0, got limit={limit}, offset={offset}."
            raise ValueError(msg)
        version_filter(include_superseded=include_superseded)  # checks its type
        self._store.check_filters_by_metadata("MemoryStore.list")
        where = as_scope(scope, self.scope).where()
        if include_superseded:
            return self._store.page(where, limit, offset)
        return self._current_page(where, limit, offset)

    def _current_page(
        self, where: Mapping[str, Any] | None, limit: int, offset: int
    ) -> builtins.list[Document]:
        current: builtins.list[Document] = []
        read = 0
        page_size = max(limit + offset, 100)
        while len(current) < offset + limit:
            page = self._store.page(where, page_size, read)
            current.extend(doc for doc in page if not is_superseded(doc.metadata))
            read += len(page)
            if len(page) < page_size:
                break
        return current[offset : offset + limit]

    def history(self, id: str, *, scope: ScopeLike = None) -> builtins.list[Document]:  # noqa: A002
        """Every version of the memory ``id``, oldest first, as stored.

        The chain follows what each version replaced (``supersedes``) and what
        replaced it (``superseded_by``), within the scope. A memory never
        superseded and superseding nothing is its own one-version history.

        Raises:
            MemoryNotFoundError: If no memory with this id lies in the scope.

        Example:
            ```python
            from langchain_core.embeddings import DeterministicFakeEmbedding
            from langchain_core.vectorstores import InMemoryVectorStore

            from cogito_lc import MemoryStore

            memory = MemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=16)))
            doc = memory.store("The user lives in Austin.")
            assert [d.page_content for d in memory.history(doc.id)] == ["The user lives in Austin."]
            ```
        """
        target = as_scope(scope, self.scope)
        return version_chain(self._store, self._require(id, target), target)

    def forget(
        self,
        query: str | None = None,
        *,
        ids: Sequence[str] | None = None,
        scope: ScopeLike = None,
        reason: str = "request",
    ) -> ForgetResult:
        """Remove memories, with every version of them, from everywhere they are kept.

        Give the ``ids`` to forget, or a ``query`` saying what ("my phone
        number"): the memories of the scope at least ``forget_min_cosine``
        similar to it, current or superseded, are forgotten. Each is deleted with
        its whole version chain (:meth:`history`) from the vector store and the
        lexical index; the scope's saved snapshot is dropped (it is rebuilt from
        what is left), and the terms of vocabulary maps found in the forgotten
        text and in none of the scope's first ``VOCAB_CHECK_MEMORIES`` remaining
        memories are taken out of the saved maps and of those this process's
        stores and retrievers recall with. An audit record (ids, time, scope,
        reason; never the forgotten text) is kept in the store's state and returned.

        Args:
            query: What to forget, in words.
            ids: The ids to forget instead.
            scope: The scope to forget in instead of the store's.
            reason: Why, for the audit record (keep the forgotten text out of it).

        Returns:
            The ids forgotten, how they were found and the audit record.

        Raises:
            ValueError: If both or neither of ``query`` and ``ids`` are given, or
                ``ids`` is empty.
            MemoryNotFoundError: If an id is not in the scope, or the query
                points at no memory (nothing is forgotten then).
        """
        target = as_scope(scope, self.scope)
        if (query is None) == (ids is None):
            msg = "forget needs exactly one of query= (what to forget) or ids= (which memories)."
            raise ValueError(msg)
        checked = None if query is None else check_query(query, name="query")
        # Matched before the lock (the model embeds), read again under it.
        matched = None if checked is None else self._forget_matches(checked, target)
        with self.exclusive():  # no write naming one of them lands between finding and deleting
            if matched is None:
                roots, method = self._forget_ids(ids or [], target), "ids"
            else:
                roots, method = self._still_stored(matched, checked or "", target), "matched"
            chains = [doc for root in roots for doc in version_chain(self._store, root, target)]
            forgotten = list(dict.fromkeys(doc.id or "" for doc in chains))
            with self._audited(forgotten, target, reason) as record:
                self._delete(forgotten, target)
            self._drop_derived(
                {_scope_of(doc.metadata) for doc in chains}, [doc.page_content for doc in chains]
            )
        return ForgetResult(forgotten, method, record)

    def _forget_request(self, subject: str, scope: Scope) -> builtins.list[str]:
        """Forget what a message asked to; a request matching nothing forgets nothing."""
        try:
            return self.forget(subject, scope=scope, reason="forget request").ids
        except MemoryNotFoundError:
            logger.info("a forget request in scope %s matched no memory", scope.metadata())
            return []

    def _forget_ids(self, ids: Sequence[str], scope: Scope) -> builtins.list[Document]:
        if isinstance(ids, str) or not ids or not all(isinstance(i, str) and i for i in ids):
            msg = f"ids must be a non-empty list of memory ids, got {ids!r}."
            raise ValueError(msg)
        found = self._store.get(builtins.list(dict.fromkeys(ids)), scope.where())
        missing = sorted(set(ids) - {doc.id for doc in found})
        if missing:
            msg = f"ids {missing} are not memories in scope {scope.metadata() or 'all'}"
            raise MemoryNotFoundError(msg, ids=missing)
        return found

    def _forget_matches(self, query: str, scope: Scope) -> builtins.list[str]:
        """The ids of the memories a forget by ``query`` takes (recalled and embedded: no lock)."""
        found = self._related_retriever(scope).invoke(query, include_superseded=True)
        cosines = [float(doc.metadata.get(METADATA_KEY, {}).get("cosine", 0.0)) for doc in found]
        if not found or cosines[0] < self.forget_min_cosine:
            raise _no_match(query, scope)
        near = _similar_to_first([doc.page_content for doc in found], self._embeddings())
        return [
            doc.id or ""
            for doc, cosine, similarity in zip(found, cosines, near, strict=True)
            if cosine >= max(self.forget_min_cosine, cosines[0] - self.forget_margin)
            or similarity >= self.forget_similarity
        ]

    def _still_stored(
        self, ids: builtins.list[str], query: str, scope: Scope
    ) -> builtins.list[Document]:
        """The memories of ``ids`` as stored now: another forget may have taken them since."""
        found = self._store.get(ids, scope.where())
        if not found:
            raise _no_match(query, scope)
        return found

    def _embeddings(self) -> Embeddings | None:
        return self.vectorstore.embeddings

    def _load_embeddings(self) -> None:
        """Build embeddings made on first use now, so a missing extra fails before a write."""
        embeddings = self._embeddings()
        if isinstance(embeddings, LazyEmbeddings):
            _ = embeddings.embeddings

    @property
    def _root(self) -> tuple[StateStore | None, Scope]:
        """The state and scope of the store views are made from (this one unless a view).

        Every view of one scope, however it was reached, keeps its state in one
        place there: ``scopes/<digest>`` of the root's state.
        """
        return self._view_root or (self.state, self.scope)

    def _drop_derived(self, scopes: Iterable[Scope], forgotten: Sequence[str] | None) -> None:
        """Drop what was built from the memories just removed from ``scopes``.

        The saved snapshots that may hold them, and the terms of vocabulary maps
        found in their texts (``forgotten``; None when not known) and in no memory
        left: in the saved maps and in those this process's stores and retrievers
        recall with.
        """
        scopes = list(scopes)
        states = self._states_built_from(scopes)
        purge = VocabPurge(forgotten, self._texts_in)
        with self._lock:
            self._guard.forgets += 1
            for state, scope in states:
                state.delete(SNAPSHOT_FILES)
                purge.purge_saved(state, scope)
            for store in list(self._guard.stores):
                if any(store.scope.contains(scope.metadata()) for scope in scopes):
                    store._recall_without(purge)

    def _states_built_from(
        self, scopes: Sequence[Scope]
    ) -> builtins.list[tuple[StateStore, Scope]]:
        """The states holding what was built from memories of ``scopes``, with their scopes.

        This store's, those of the stores it was made from (their scopes hold its
        own), and those of every view whose scope sees one of ``scopes``: in the
        root store's usual place for it, or where the view was told to keep them.
        """
        root_state, root_scope = self._root
        found = [] if self.state is None else [(self.state, self.scope)]
        found += self._covering_states
        found += [
            (state, view)
            for view, state in list(self._guard.placed_views.values())
            if any(view.contains(scope.metadata()) for scope in scopes)
        ]
        if root_state is not None:
            seen = {v for scope in scopes for v in _views_holding(scope, root_scope)}
            found += [(root_state.child(scope_state_path(view)), view) for view in seen]
        unique: dict[str, tuple[StateStore, Scope]] = {}
        for state, scope in found:
            unique.setdefault(state.location(""), (state, scope))
        return builtins.list(unique.values())

    def _recall_without(self, purge: VocabPurge) -> None:
        """Recall, here and in this store's retrievers, with maps ``purge`` took terms out of."""
        if self.vocab_map:
            self.vocab_map = purge.in_use(self.vocab_map, self.scope)
        for retriever in self._live_retrievers():
            if retriever.vocab_map:
                retriever.vocab_map = purge.in_use(retriever.vocab_map, self.scope)

    def _texts_in(self, scope: Scope) -> Iterator[str]:
        """The texts of the scope's first ``VOCAB_CHECK_MEMORIES`` memories, a page at a time."""
        where = scope.where()
        for offset in range(0, VOCAB_CHECK_MEMORIES, _TEXT_PAGE):
            page = self._store.page(where, _TEXT_PAGE, offset)
            yield "\n".join(doc.page_content for doc in page)
            if len(page) < _TEXT_PAGE:
                return

    def _scopes_within(self, scope: Scope) -> set[Scope]:
        """The scopes memories of ``scope`` were written in (``scope`` and narrower ones)."""
        unset = [key for key in SCOPE_KEYS if getattr(scope, key) is None]
        found = {scope}
        for size in range(1, len(unset) + 1):
            for keys in itertools.combinations(unset, size):
                counted = self._store.scope_counts(keys, scope.where())
                found.update(
                    _scope_of({**scope.metadata(), **dict(zip(keys, values, strict=True))})
                    for values in counted.counts
                )
        return found

    @property
    def _lock(self) -> threading.RLock:
        return self._guard.lock

    def exclusive(self) -> AbstractContextManager[None]:
        """The write lock, and the store's lock across processes (replicas over one database).

        For a check and the write it allows: what a memory supersedes is still
        current, what a forget or delete removes is not written again meanwhile.
        Every forget and delete holds it, in every process over the store.

        Raises:
            WriteLockTimeoutError: If another process held the store's lock too long.
        """
        return self._guard.exclusive(self._store.exclusive)

    def write_lock(self) -> threading.RLock:
        """The lock each write, forget and delete over this vector store object holds."""
        return self._lock

    @property
    def forgets(self) -> int:
        """How many forgets and deletes ran over this vector store object in this process."""
        return self._guard.forgets

    def save_state(
        self,
        files: Mapping[str, str],
        *,
        forgets: int,
        sources: Sequence[str] = (),
        scope: ScopeLike = None,
    ) -> bool:
        """Write ``files`` to :attr:`state` unless memories were forgotten since they were read.

        For what is built from memories (a snapshot): when a forget or delete
        ran while it was built, it may hold forgotten text and is not saved.
        Forgets in this process are told by ``forgets`` (:attr:`forgets` before
        the build); those of other processes over the store (replicas over one
        database) by a ``sources`` id no longer stored. The check and the write
        are one step under :meth:`exclusive`.

        Args:
            files: The state files to write.
            forgets: :attr:`forgets` read before the memories were.
            sources: The ids of the memories the files were built from.
            scope: The scope they were read from instead of the store's.

        Returns:
            Whether the files were written (False too when the store keeps no state).
        """
        with self.exclusive():
            if self.state is None or self._guard.forgets != forgets:
                return False
            if self.missing(sources, scope=scope):
                return False
            self.state.write(dict(files))
        return True

    def missing(self, ids: Sequence[str], *, scope: ScopeLike = None) -> builtins.list[str]:
        """The ids of ``ids`` that no memory of the scope has (forgotten, deleted or never stored).

        Example:
            ```python
            from langchain_core.vectorstores import InMemoryVectorStore

            from cogito_lc import MemoryStore
            from cogito_lc.bench.hash_embeddings import HashEmbeddings

            memory = MemoryStore(InMemoryVectorStore(HashEmbeddings()))
            kept = memory.store("Deploys go out on Tuesdays.")
            assert memory.missing([kept.id or "", "no-such-id"]) == ["no-such-id"]
            ```
        """
        wanted = builtins.list(dict.fromkeys(ids))
        found = {doc.id for doc in self.get_many(wanted, scope=scope)}
        return [i for i in wanted if i not in found]

    def get_many(self, ids: Sequence[str], *, scope: ScopeLike = None) -> builtins.list[Document]:
        """The memories with these ids that lie in the scope, in no set order."""
        wanted = builtins.list(dict.fromkeys(ids))
        if not wanted:
            return []
        return self._store.get(wanted, as_scope(scope, self.scope).where())

    @contextmanager
    def _audited(
        self, ids: builtins.list[str], scope: Scope, reason: str
    ) -> Iterator[dict[str, Any]]:
        """Record a forget, then run its deletes: a crash between them keeps the record.

        A retry after a crash finds the memories still there, deletes them and
        records again. Deletes that raise take the record back.
        """
        name, record = audit_record(ids, scope.metadata(), reason)
        self.forget_log.append(record)
        if self._audit_state is not None:
            self._audit_state.write({name: audit_text(record)})
        try:
            yield record
        except Exception:
            self.forget_log.remove(record)
            if self._audit_state is not None:
                self._audit_state.delete([name])
            raise
        logger.info(
            "forgot %d memories in scope %s (%s)",
            len(ids),
            scope.metadata(),
            escape_controls(reason),
        )

    def complete_supersessions(self, *, recent: int | None = VERIFY_RECENT_MEMORIES) -> int:
        """Mark the memories that recent writes superseded but a crash left unmarked.

        A superseding memory is written first, naming what it replaces; the
        replaced memories are marked next. A process killed between the two is
        completed here (run when the first MemoryStore over a store object is
        built); the ``recent`` latest writes are checked, ``None`` checks all.

        Returns:
            How many memories were marked.
        """
        with self.exclusive():
            if recent is None:
                self._store.check_filters_by_metadata("MemoryStore.complete_supersessions")
                documents = self._store.page(None, max(self._store.count(None), 1), 0)
            else:
                documents = self._store.recent(recent)
            missing = incomplete_supersessions(self._store, documents)
            self._apply_marks(missing)
        return len(missing)

    def warm_up(self) -> None:
        """Load now what the first recall would otherwise load.

        Embeds a probe text (a local model is loaded, a remote one answers once)
        and starts the lexical index: its start-up check and, for the SQLite FTS5
        index of a persistent store, the postings it ranks from in memory (about
        a second per 100,000 memories). Qdrant's local mode readies the vectors
        it read from disk and the points of the store's scope. A process that
        opens a large store calls it at start-up, so its first recall runs at the
        speed of any other; the HTTP and MCP servers do.

        Raises:
            Exception: What the embedding model or the index raises; a recall
                made afterwards tries again.

        Example:
            ```python
            from langchain_core.embeddings import DeterministicFakeEmbedding
            from langchain_core.vectorstores import InMemoryVectorStore

            from cogito_lc import MemoryStore

            memory = MemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=8)))
            memory.store("billing runs on port 8083")
            memory.warm_up()
            assert memory.count() == 1
            ```
        """
        embeddings = self.vectorstore.embeddings
        if embeddings is not None:
            embeddings.embed_query("warm up")
        self._store.warm_up(self.scope.where())
        if self._lexical is not None:
            self._lexical.warm_up()

    async def awarm_up(self) -> None:
        """:meth:`warm_up` in a worker thread."""
        await asyncio.to_thread(self.warm_up)

    def count(self, scope: ScopeLike = None) -> int:
        """How many memories lie in the scope."""
        self._store.check_filters_by_metadata("MemoryStore.count")
        return self._store.count(as_scope(scope, self.scope).where())

    def delete(self, id: str, *, scope: ScopeLike = None) -> None:  # noqa: A002
        """Delete one memory of the scope (an audit record is kept, as for :meth:`forget`).

        Other versions of it stay, as they are: deleting the current version of a
        fact leaves the fact with no current version (the one it replaced stays
        superseded). :meth:`forget` removes the whole chain; to make an earlier
        version current again, store its text with ``supersede=True`` (a new
        version of its own).

        Raises:
            MemoryNotFoundError: If no memory with this id lies in the scope
                (a memory of another scope is neither deleted nor revealed).
        """
        target = as_scope(scope, self.scope)
        with self.exclusive():
            held = self._require(id, target)
            with self._audited([id], target, "delete"):
                self._delete([id], target)
            self._drop_derived({_scope_of(held.metadata)}, [held.page_content])

    def delete_scope(self, scope: ScopeLike) -> int:
        """Delete every memory of a non-empty scope; returns how many were deleted."""
        target = as_scope(scope)
        if not target:
            msg = "delete_scope needs a scope with at least one key; it never clears the store."
            raise ValueError(msg)
        self._store.check_filters_by_metadata("MemoryStore.delete_scope")
        with self.exclusive():
            ids = self._store.ids_in(target.where())
            held = self._scopes_within(target) if ids else set()
            with self._audited(ids, target, "delete_scope"):
                self._delete(ids, target)
            self._drop_derived(held, None)
        return len(ids)

    def seed(
        self,
        path: str | Path,
        glob: str = "**/*.md",
        *,
        dry_run: bool = False,
        extract: bool = False,
        scope: ScopeLike = None,
        progress: bool = True,
    ) -> SeedSummary:
        """Bulk-ingest files: one memory per markdown paragraph, already-stored ones skipped.

        See :func:`cogito_lc.memory.seed.seed_directory` for details.
        """
        return seed_directory(
            self, path, glob, dry_run=dry_run, extract=extract, scope=scope, progress=progress
        )

    def repair_search_index(self, *, recent: int | None = None) -> builtins.list[str]:
        """Re-index stored memories that a vector search for their own text cannot find.

        A process killed while Chroma persists its vector index can leave rows
        that are stored (readable by id, listed) but unreachable by search. The
        stored vectors are searched for; those not found among their nearest
        neighbours are written to the index again. Runs on the ``recent`` latest
        writes (:data:`VERIFY_RECENT_MEMORIES`, the window a crash can tear) when
        the first MemoryStore over a persistent Chroma store object is built
        (``verify_index=True``), so start-up cost does not grow with the store;
        call it with ``recent=None`` to check every memory. Other stores have
        nothing to check.

        Args:
            recent: Check only the latest ``recent`` writes; ``None`` checks all.

        Returns:
            The ids that were re-indexed.
        """
        with self._lock:
            unsearchable = self._store.unsearchable(recent=recent)
            if not unsearchable:
                return []
            ids = builtins.list(unsearchable)
            logger.warning(
                "search index: %d stored memories were not found by a search for their own "
                "vector; re-indexing them: %s",
                len(ids),
                escape_controls(", ".join(ids[:20])) + (" ..." if len(ids) > 20 else ""),
            )
            still = self._store.reindex(unsearchable)
            if still:
                logger.error(
                    "search index: %d memories are still not found by search after re-indexing: %s",
                    len(still),
                    escape_controls(", ".join(still[:20])),
                )
            else:
                logger.warning("search index: repaired, all %d are found again", len(ids))
            self._invalidate()
        return ids

    def reindex(self) -> int:
        """Rebuild the lexical index of the whole store from the vector store.

        Writes through MemoryStore keep the index current, and writes made to
        the vector store directly are found by a count check; a change of text
        under an existing id made outside MemoryStore is not, and needs this.

        Returns:
            How many memories the rebuilt index holds (0 when the store has no
            lexical index: one that cannot be listed).
        """
        if self._lexical is None:
            return 0
        with self._lock:
            return self._lexical.reindex()

    # -- searches and retrievers ---------------------------------------------------

    def search(
        self,
        text: str,
        *,
        k: int = 5,
        threshold: float | None = None,
        scope: ScopeLike = None,
        as_of: datetime | str | None = None,
        include_superseded: bool = False,
    ) -> builtins.list[ScoredDocument]:
        """Plain vector search in the scope: the ``k`` nearest memories and their scores.

        Over Chroma the score is the cosine similarity of the stored vector to
        the query's, whatever distance the collection indexes by; other stores
        give their relevance score (``similarity_search_with_relevance_scores``).
        No model is called and nothing is re-ranked: for recall use
        :meth:`as_retriever`.

        Args:
            text: The query.
            k: How many memories to return at most.
            threshold: Leave out memories scoring below it (a memory without a
                finite score counts as 0.0).
            scope: The scope to search instead of the store's.
            as_of: Search what was current at this time (not in the future).
            include_superseded: Also return memories a newer one replaced.

        Returns:
            ``(document, score)`` pairs, nearest first; the score is None when the
            store gives no finite one.

        Raises:
            ValueError: If ``text`` is blank, ``k`` is below 1 or ``as_of`` is not
                a past time.

        Example:
            ```python
            from langchain_core.embeddings import DeterministicFakeEmbedding
            from langchain_core.vectorstores import InMemoryVectorStore

            from cogito_lc import MemoryStore

            memory = MemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=16)))
            memory.store("Auth tokens expire after 3600 seconds.")
            [(doc, score)] = memory.search("Auth tokens expire after 3600 seconds.", k=1)
            assert doc.page_content.startswith("Auth tokens") and score is not None
            ```
        """
        check_query(text, name="text")
        check_positive_int(k, name="k")
        target = as_scope(scope, self.scope)
        when = None if as_of is None else check_as_of(as_of)
        keep = version_filter(as_of=when, include_superseded=include_superseded)
        found = self._scope_search(text, k, target, keep)
        if when is not None and not found:
            self.check_as_of(when, scope=target)
        return found if threshold is None else _scoring_at_least(found, threshold)

    def check_as_of(self, as_of: datetime | str, *, scope: ScopeLike = None) -> datetime:
        """Parse an ``as_of`` time for a read of the scope, refusing one no memory reaches.

        Returns:
            The time as an aware UTC datetime.

        Raises:
            ValueError: If ``as_of`` is not a timestamp, lies in the future, or
                lies before every memory of the scope (nothing was current then).
        """
        when = check_as_of(as_of)
        target = as_scope(scope, self.scope)
        if not self._store.created_by(target.where(), when):
            msg = (
                f"as_of={when.isoformat()} is before every memory in scope "
                f"{target.metadata() or 'all'}; nothing was current then. Pass a later as_of."
            )
            raise ValueError(msg)
        return when

    def _near_current(
        self, text: str, vector: Sequence[float] | None, threshold: float, scope: Scope
    ) -> builtins.list[ScoredDocument]:
        """The current memory of ``scope`` nearest to ``text``, if it scores ``threshold``.

        ``vector`` is ``text``'s, embedded beforehand (``StoreAdapter.query_vector``),
        so a search under :meth:`exclusive` does not call the model; None embeds here.
        """
        keep = version_filter(include_superseded=False)
        return _scoring_at_least(self._scope_search(text, 1, scope, keep, vector), threshold)

    def _scope_search(
        self,
        text: str,
        k: int,
        scope: Scope,
        keep: Callable[[Mapping[str, Any]], bool] | None,
        vector: Sequence[float] | None = None,
    ) -> builtins.list[ScoredDocument]:
        """:meth:`_versioned_search` in ``scope``, refused on a store that cannot filter."""
        if scope:
            check_filterable(self.vectorstore, "search(scope=...)")
        return self._versioned_search(text, k, scope.where(), keep, vector)

    def _versioned_search(
        self,
        text: str,
        k: int,
        where: Mapping[str, Any] | None,
        keep: Callable[[Mapping[str, Any]], bool] | None,
        vector: Sequence[float] | None = None,
    ) -> builtins.list[ScoredDocument]:
        """The ``k`` nearest memories ``keep`` accepts, searching deeper while it drops some."""
        fetch = k
        while True:
            found = self._store.scored_search(text, fetch, where, vector)
            kept = found if keep is None else [pair for pair in found if keep(pair[0].metadata)]
            if len(kept) >= k or len(found) < fetch or fetch >= VERSION_SEARCH_DEPTH:
                return kept[:k]
            fetch = min(fetch * VERSION_SEARCH_GROWTH, VERSION_SEARCH_DEPTH)

    def scoped(
        self,
        scope: ScopeLike,
        *,
        data_dir: str | Path | None = None,
        fallback_vocab_map: Mapping[str, Sequence[str]] | None = None,
        state: StateStore | None = None,
    ) -> MemoryStore:
        """A MemoryStore over the same vector store and extractor, confined to another scope.

        Keys set in ``scope`` replace this store's; keys it leaves unset are
        kept. The view has its own retrievers, snapshot and vocabulary map: the
        map saved in ``data_dir`` if there is one, else ``fallback_vocab_map``.

        Args:
            scope: The scope keys to set.
            data_dir: Where the view saves its snapshot and vocabulary map. By
                default, a folder (or key) of this store's own state named after a
                hash of the scope, ``scopes/<digest>``, so views of different scopes
                never share a snapshot; none when this store saves nothing.
            fallback_vocab_map: The vocabulary map when ``data_dir`` holds none
                (by default, this store's own map).
            state: Where the view saves its snapshot and vocabulary map instead
                of ``data_dir`` (e.g. ``self.state.child(...)`` for a database).

        Returns:
            The view.

        Example:
            ```python
            from langchain_core.embeddings import DeterministicFakeEmbedding
            from langchain_core.vectorstores import InMemoryVectorStore

            from cogito_lc import MemoryStore

            team = MemoryStore(
                InMemoryVectorStore(DeterministicFakeEmbedding(size=16)),
                scope={"agent_id": "helpdesk"},
            )
            alice = team.scoped({"user_id": "alice"})
            alice.store("Alice prefers answers in French.")
            assert alice.scope.metadata() == {"user_id": "alice", "agent_id": "helpdesk"}
            assert team.count() == 1 and team.scoped({"user_id": "bob"}).count() == 0
            ```
        """
        target = as_scope({**self.scope.metadata(), **as_scope(scope).metadata()})
        directory = Path(data_dir) if data_dir is not None else None
        if state is None and directory is not None:
            state = DirectoryStateStore(directory)
        audited_here = state is None  # a view's forgetting is audited where the store's is
        root_state, root_scope = self._root
        usual = None
        if root_state is not None:
            usual = (
                root_state if target == root_scope else root_state.child(scope_state_path(target))
            )
        if state is None and usual is not None and target != self.scope:
            state = usual
            if fallback_vocab_map is None:
                fallback_vocab_map = self.vocab_map  # calibrated on the store it comes from
        vocab_map = load_vocab_map(state) or fallback_vocab_map
        view = MemoryStore(
            self.vectorstore,
            extractor=self.extractor,
            scope=target,
            max_text_chars=self.max_text_chars,
            batch_size=self.batch_size,
            vocab_map=vocab_map,
            data_dir=directory,
            state=state,
            judge=self.judge,
            supersession_candidates=self.supersession_candidates,
            forget_min_cosine=self.forget_min_cosine,
            forget_margin=self.forget_margin,
            forget_similarity=self.forget_similarity,
        )
        if audited_here:
            view._audit_state = self._audit_state
        # the snapshots of the stores it was made from cover its scope: its forgets drop them
        parent = () if self.state is None else ((self.state, self.scope),)
        view._covering_states = (*self._covering_states, *parent)
        view._view_root = self._root if root_state is not None else (view.state, target)
        if view.state is not None and (
            usual is None or view.state.location("") != usual.location("")
        ):
            self._guard.placed_views[view.state.location("")] = (target, view.state)
        return view

    def as_retriever(
        self,
        kind: Literal["recall_b", "recall"] = "recall_b",
        *,
        scope: ScopeLike = None,
        **kwargs: Any,
    ) -> BaseRetriever:
        """A retriever confined to the scope by a filter every sub-search carries.

        Args:
            kind: ``"recall_b"`` for :class:`~cogito_lc.RecallB` (no model);
                ``"recall"`` for the two-stage
                :class:`~cogito_lc.CogitoRetriever`: a RecallB fetching 100
                candidates, then the :class:`~cogito_lc.PointerFilter`.
            scope: The scope to search instead of the store's.
            **kwargs: For ``"recall_b"``, fields of RecallB. For ``"recall"``:
                ``llm`` (the filter's chat model; None keeps stage 1's order),
                ``prompt`` and ``registry``, fields of the retriever (``k``,
                ``pool_size``, ``since``, ``filter_when``, ...) and of the filter
                (``timeout``, ``structured_output``, ``top_n``, ...), as
                :meth:`CogitoRetriever.from_llm <cogito_lc.CogitoRetriever.from_llm>`
                takes them; the other fields of RecallB go to stage 1.

        Returns:
            The retriever. Writes through this store refresh its corpus BM25 index.

        Raises:
            ValueError: If ``kind`` is unknown, or a scope is set over a store
                whose search cannot be filtered by metadata.
            TypeError: If a keyword is a field of none of the components.
        """
        if kind not in {"recall_b", "recall"}:
            msg = f"kind must be 'recall_b' or 'recall', got {kind!r}."
            raise ValueError(msg)
        target = as_scope(scope, self.scope)
        if target:
            check_filterable(self.vectorstore, "as_retriever(scope=...)")
        search_kwargs = dict(kwargs.pop("search_kwargs", {}) or {})
        search_kwargs["filter"] = and_filters(
            self.vectorstore, target.where(), search_kwargs.get("filter")
        )
        if search_kwargs["filter"] is None:
            del search_kwargs["filter"]
        kwargs.setdefault("vocab_map", self.vocab_map)
        if kind == "recall":
            return self._two_stage(search_kwargs, kwargs)
        return self._recall_b(search_kwargs, kwargs)

    def _recall_b(self, search_kwargs: dict[str, Any], fields: dict[str, Any]) -> RecallB:
        retriever = RecallB(vectorstore=self.vectorstore, search_kwargs=search_kwargs, **fields)
        self._track(retriever)
        return retriever

    def _two_stage(self, search_kwargs: dict[str, Any], fields: dict[str, Any]) -> BaseRetriever:
        from cogito_lc.retrievers.cogito_retriever import CogitoRetriever

        llm = fields.pop("llm", None)
        stage_one = {key: fields.pop(key) for key in list(fields) if key in _STAGE_ONE_FIELDS}
        recall_b = self._recall_b(search_kwargs, {**stage_one, "k": _STAGE_ONE_K})
        return CogitoRetriever.from_llm(recall_b, llm, **fields)

    # -- internals ----------------------------------------------------------------

    def _check_text(self, text: Any) -> str:
        if not isinstance(text, str):
            msg = f"text must be a str, got {type(text).__name__}."
            raise TypeError(msg)
        if not text.strip():
            msg = "text is empty or whitespace; pass the memory text."
            raise ValueError(msg)
        if len(text) > self.max_text_chars:
            msg = (
                f"text has {len(text)} characters, over max_text_chars={self.max_text_chars}; "
                "split it (seed() does) or raise max_text_chars."
            )
            raise ValueError(msg)
        return check_unicode(text, name="text")

    def _prepare(
        self,
        text: Any,
        given_id: str | None,
        metadata: Mapping[str, Any] | None,
        scope: Scope,
        created_at: datetime | str | None = None,
    ) -> Document:
        self._check_text(text)
        user_metadata = _check_metadata(metadata or {})
        doc_id = given_id if given_id is not None else memory_id(text, scope)
        if not isinstance(doc_id, str) or not doc_id.strip():
            msg = f"id must be a non-empty string, got {doc_id!r}."
            raise ValueError(msg)
        if len(doc_id) > MEMORY_ID_MAX_CHARS:
            msg = (
                f"id has {len(doc_id)} characters, over the {MEMORY_ID_MAX_CHARS} an id may "
                "have; shorten it or omit it (ids default to a hash of scope and text)."
            )
            raise ValueError(msg)
        check_unicode(doc_id, name="id")
        when = _now() if created_at is None else _timestamp(created_at)
        meta = {**user_metadata, **scope.metadata(), "created_at": when}
        return Document(page_content=text, metadata=meta, id=doc_id)

    def _fact_document(
        self, fact: Fact, source_id: str, scope: Scope, created_at: str | None = None
    ) -> Document:
        doc = self._prepare(fact.content, None, None, scope, created_at)
        doc.metadata.update(
            {"kind": fact.kind.value, "importance": float(fact.importance), "source_id": source_id}
        )
        return doc

    def _write(
        self,
        documents: builtins.list[Document],
        vectors: Sequence[Sequence[float]] | None = None,
    ) -> builtins.list[Document]:
        """Add documents whose ids are new; the same memory stored again is kept as it is.

        ``vectors`` are the documents' own, embedded beforehand (:meth:`StoreAdapter.vectors_for`).

        Raises:
            MemoryConflictError: If an id is held by a memory of another scope or
                with other text; nothing of the batch is written then.
        """
        with self._lock:
            places = self._places(documents)
            existing: dict[str | None, Document] = {}
            fresh: dict[str, Document] = {}
            for doc, (doc_id, held) in zip(documents, places, strict=True):
                doc.id = doc_id
                if held is not None:
                    existing[doc_id] = held
                else:
                    fresh.setdefault(doc_id, doc)
            ids = [doc.id or "" for doc in documents]
            if fresh:
                if vectors is None:
                    self._load_embeddings()  # a model that cannot load leaves no pending mark
                self._mark_pending(list(fresh))
                try:
                    written = self._store.add_new(
                        list(fresh.values()), _vectors_of(fresh, documents, vectors)
                    )
                except Exception as error:
                    self._unmark_refused(list(fresh), error)
                    raise
                existing.update(self._raced(fresh, written))
                if self._lexical is not None:
                    self._lexical.upsert([fresh[i] for i in fresh if i in written])
                self._invalidate()
        return [existing.get(doc_id) or fresh[doc_id] for doc_id in ids]

    def stored_copies(
        self, texts: Sequence[str], *, scope: ScopeLike = None
    ) -> builtins.list[Document | None]:
        """The memory each text is stored as in the scope (None: not stored), in order.

        Under the text's own id, or, when other text holds that id (an edited
        memory, as :meth:`update` keeps ids, or the text with other whitespace),
        under the next id of the text (``<id>-2``, ...). Only exactly the same
        text is a stored copy.
        """
        target = as_scope(scope, self.scope)
        documents = [self._prepare(text, None, None, target) for text in texts]
        return [held for _, held in self._places(documents)]

    def _places(self, documents: Sequence[Document]) -> builtins.list[tuple[str, Document | None]]:
        """Where each document goes: its id, and the same memory stored there, if any.

        A derived id (:func:`memory_id` of the text) held by other text (an edited
        memory, or the text with other whitespace) moves to the text's next id
        (``<id>-2``, ...): the first one free, unless the same text is stored under
        one of them already (then it is that memory).

        Raises:
            MemoryConflictError: If a given id is held by another memory, or a
                text has no free id left.
        """
        derived = [
            doc.id == memory_id(doc.page_content, _scope_of(doc.metadata)) for doc in documents
        ]
        wanted = [doc.id or "" for doc in documents]
        wanted += [f"{doc.id}-2" for doc, moves in zip(documents, derived, strict=True) if moves]
        held = {doc.id: doc for doc in self._existing(list(dict.fromkeys(wanted)))}
        read = set(wanted)
        places = []
        for doc, moves in zip(documents, derived, strict=True):
            doc_id, same = self._place(doc, held, read) if moves else _given_place(doc, held)
            if same is None:
                held[doc_id] = doc  # claimed by this batch: a later document meets it
            places.append((doc_id, same))
        return places

    def _place(
        self, doc: Document, held: dict[str | None, Document], read: set[str]
    ) -> tuple[str, Document | None]:
        base = doc.id or ""
        if base in held and _same_memory(held[base], doc):
            return base, held[base]
        free = None if base in held else base
        for number in range(2, 2 + _MAX_ID_SUFFIXES):
            candidate = f"{base}-{number}"
            if candidate not in read:
                read.add(candidate)
                held.update((d.id, d) for d in self._existing([candidate]))
            other = held.get(candidate)
            if other is None:
                return free or candidate, None
            if _same_memory(other, doc):
                return candidate, other
        msg = (
            f"text of id {base!r} has no free id left: {_MAX_ID_SUFFIXES} other texts "
            "(edited memories, or this text with other whitespace) hold them."
        )
        raise MemoryConflictError(msg)

    def _raced(
        self, fresh: Mapping[str, Document], written: set[str]
    ) -> builtins.list[tuple[str, Document]]:
        """The memories another writer stored first under ids of ``fresh`` (same memory only)."""
        lost = [doc_id for doc_id in fresh if doc_id not in written]
        held = {doc.id: doc for doc in self._existing(lost)} if lost else {}
        for doc_id in lost:
            if doc_id in held and not _same_memory(held[doc_id], fresh[doc_id]):
                msg = (
                    f"id {doc_id!r} was stored at the same time by another writer with other "
                    "text or scope; retry the write (a text without a given id then takes "
                    "its next id)."
                )
                raise MemoryConflictError(msg)
        return [(doc_id, doc) for doc_id, doc in held.items() if doc_id is not None]

    def _write_versions(
        self, documents: builtins.list[Document], scope: Scope, *, dated: bool
    ) -> _Versions:
        """Write each document after the judge said what it supersedes or repeats.

        ``dated``: the caller gave the documents' ``created_at`` (see :meth:`_write_superseding`).
        """
        versions = _Versions()
        for doc in documents:
            [(_, same)] = self._places([doc])  # other text under the id is not this memory
            if same is not None and not is_superseded(same.metadata):
                versions.memories.extend(self._write([doc]))
                continue
            if same is not None:  # said again after it was superseded: a new version of its own
                doc.id = _restated_id(doc)
            method, supersedes, repeats = self._judge(doc, scope)
            versions.methods.append(method)
            if repeats:
                versions.repeated.extend(repeats)
                versions.memories.extend(self._existing(repeats[:1]))
                continue
            written, kept = self._write_superseding(doc, supersedes, scope, dated=dated)
            versions.kept_current.extend(kept)
            if written is doc:
                versions.superseded.extend(superseded_ids(doc.metadata))
            versions.memories.append(written)
        return versions

    def _write_superseding(
        self,
        doc: Document,
        supersedes: Sequence[str],
        scope: Scope,
        *,
        named: bool = False,
        dated: bool,
    ) -> _Superseding:
        """Write ``doc`` naming what it replaces in ``scope``, then mark those.

        Which of ``supersedes`` are still current is read under the write lock,
        so two writers never both replace one memory. ``named`` (the caller gave
        the ids) makes one that is not an error; otherwise (a judge chose them
        earlier) it is left out and returned as kept current. The write and the
        marks commit together on a database replicas share; elsewhere a crash
        between them is completed at start-up. A memory ``dated`` by
        its caller replaces only earlier ones; one written now (no date given)
        is dated no earlier than what it replaces, since clocks of replicas differ.
        """
        if named:
            _check_ids(supersedes)
        vectors = self._store.vectors_for([doc])  # before other replicas wait on the lock
        with self.exclusive():
            current = self._current(supersedes, scope)
            found = _replaceable_by(doc, current, scope)
            if found.later and not dated:
                _not_before(doc, [current[i] for i in found.later])
                found = _replaceable_by(doc, current, scope)
            kept: builtins.list[str] = []
            if named:
                replaced = _replaceable(supersedes, found, doc, scope)
                held = self._existing([doc.id or ""])
                if held and is_superseded(held[0].metadata) and _same_memory(held[0], doc):
                    doc.id = _restated_id(doc)  # said again after it was superseded
            else:
                kept = [*found.later, *found.narrower]
                if kept:
                    logger.info("not superseding %s: later or of a narrower scope", kept)
                replaced = found.ids
            if replaced:
                doc.metadata[SUPERSEDES_KEY] = supersedes_value(replaced)
            with self._store.atomic():  # other replicas never see the write without its marks
                written = self._write([doc], vectors)[0]
                if written is doc:
                    self._apply_marks(superseded_marks(doc), scope.where())
        return _Superseding(written, kept)

    def _current(self, ids: Sequence[str], scope: Scope) -> dict[str, Document]:
        """The current memories of ``scope`` among ``ids``, by id, in the order named."""
        found = {
            doc.id: doc for doc in self._store.get(builtins.list(dict.fromkeys(ids)), scope.where())
        }
        return {
            i: found[i]
            for i in dict.fromkeys(ids)
            if i in found and not is_superseded(found[i].metadata)
        }

    def _judge(
        self, doc: Document, scope: Scope
    ) -> tuple[str, builtins.list[str], builtins.list[str]]:
        """The judge's tag and the candidate ids ``doc`` supersedes and repeats."""
        if self.judge is None:
            return "fallback_no_llm", [], []
        candidates = self._candidates(doc, scope)
        if not candidates:
            return "skipped_empty", [], []
        try:
            decision = self.judge.invoke({"memory": doc.page_content, "candidates": candidates})
        except Exception:  # the judge never raises by contract; a custom one might
            logger.exception("the supersession judge failed; superseding nothing")
            return "fallback_error", [], []
        shown = {id(candidate): candidate.id or "" for candidate in candidates}
        supersedes = [shown[id(d)] for d in decision.supersedes if id(d) in shown]
        repeats = [shown[id(d)] for d in decision.repeats if id(d) in shown]
        return str(getattr(decision.method, "value", decision.method)), supersedes, repeats

    def _candidates(self, doc: Document, scope: Scope) -> builtins.list[Document]:
        """The memories of exactly ``scope`` most related to ``doc``, for the judge.

        The search finds memories of narrower scopes too (not every store can
        filter on a key being absent); when those take its places, it searches
        ``VERSION_SEARCH_GROWTH`` times deeper, up to ``VERSION_SEARCH_DEPTH``.
        """
        wanted, depth = self.supersession_candidates, self.supersession_candidates
        related = self._related_retriever(scope)
        while True:
            found = related.invoke(doc.page_content, k=depth)
            kept = [
                d for d in found if not _same_memory(d, doc) and scope.holds_exactly(d.metadata)
            ]
            if len(kept) >= wanted or len(found) < depth or depth >= VERSION_SEARCH_DEPTH:
                return kept[:wanted]
            depth = min(depth * VERSION_SEARCH_GROWTH, VERSION_SEARCH_DEPTH)

    def _related_retriever(self, scope: Scope) -> RecallB:
        retriever = self._related.get(scope)
        if retriever is None:
            retriever = self.as_retriever(  # type: ignore[assignment]
                "recall_b", scope=scope, k=self.supersession_candidates
            )
            self._related[scope] = retriever  # type: ignore[assignment]
        return retriever  # type: ignore[return-value]

    def _apply_marks(
        self, marks: Mapping[str, Mapping[str, Any]], where: Mapping[str, Any] | None = None
    ) -> None:
        """Add version keys to stored memories of ``where`` (metadata only); refresh the indexes.

        The ids are recorded as pending first, so a crash before the lexical
        index is refreshed is re-synced at the next start.
        """
        if not marks:
            return
        self._mark_pending(builtins.list(marks))
        updated = self._store.set_metadata(marks, where)
        if self._lexical is not None and updated:
            self._lexical.upsert(updated)
        self._invalidate()

    def _mark_pending(self, ids: builtins.list[str]) -> None:
        if self._lexical is not None:
            self._lexical.mark_pending(ids)

    def _unmark_refused(self, ids: builtins.list[str], error: Exception) -> None:
        """Clear the pending marks of a write the store refused, if it wrote none of ``ids``.

        A refusal of the input is raised before the store writes; the ids are read
        back to be sure of it. Any other error (a lost connection, a timeout) may leave
        a write done or under way: its marks stay for the re-sync at the next start.
        """
        if self._lexical is None or not self._store.refused_input(error):
            return
        try:
            held = self._existing(ids)
        except Exception:  # the marks stay, re-synced at the next start
            logger.debug("could not read back a refused write", exc_info=True)
            return
        if not held:
            self._lexical.delete(ids)  # holds none of them either; clears their marks

    def _delete(self, ids: builtins.list[str], scope: Scope) -> None:
        """Delete from the vector store, then from the lexical index (ids recorded first).

        The ids were found in ``scope``; the deletion names it too (a sharded
        database routes it by the scope).
        """
        self._mark_pending(ids)
        self._store.delete(ids, scope.where())
        if self._lexical is not None:
            self._lexical.delete(ids)
        for retriever in self._live_retrievers():
            retriever.forget_cached(ids)
        self._invalidate()

    def _existing(self, ids: builtins.list[str]) -> builtins.list[Document]:
        return [doc for doc in self._store.get(ids) if doc.id]

    def _require(self, id: str, scope: Scope) -> Document:  # noqa: A002
        found = self._store.get([id], scope.where())
        if not found:
            msg = f"no memory with id {id!r} in scope {scope.metadata() or 'all'}"
            raise MemoryNotFoundError(msg, ids=[id])
        return found[0]

    def _track(self, retriever: RecallB) -> None:
        self._retrievers = [ref for ref in self._retrievers if ref() is not None]
        self._retrievers.append(weakref.ref(retriever))

    def _live_retrievers(self) -> builtins.list[RecallB]:
        tracked = [ref() for ref in self._retrievers]
        return [r for r in (*tracked, *self._related.values()) if r is not None]

    def _invalidate(self) -> None:
        """Refresh the retrievers whose lexical index these writes do not reach."""
        for ref in self._retrievers:
            retriever = ref()
            if retriever is not None and retriever.lexical_sync is not self._lexical:
                retriever.refresh_lexical_index()


_VERIFIED_STORES: weakref.WeakSet[VectorStore] = weakref.WeakSet()
_VERIFIED_LOCK = threading.Lock()


def _server_state(store: ChromaAdapter) -> StateStore | None:
    """A Chroma server's state collection, or None for a local client."""
    if not store.is_remote():
        return None
    return ChromaStateStore(store.side_collection(STATE_COLLECTION_SUFFIX))


def _first_use(store: VectorStore) -> bool:
    """True the first time a store object is seen: its index is checked once per process."""
    with _VERIFIED_LOCK:
        if store in _VERIFIED_STORES:
            return False
        _VERIFIED_STORES.add(store)
        return True


def _similar_to_first(
    texts: builtins.list[str], embeddings: Embeddings | None
) -> builtins.list[float]:
    """Each text's cosine to the first one (0 for all but the first without embeddings)."""
    if embeddings is None or len(texts) < 2:
        return [1.0] + [0.0] * (len(texts) - 1)
    vectors = np.asarray(embeddings.embed_documents(texts), dtype=np.float32)
    return [float(x) for x in cosine_scores(vectors[0], vectors)]


def _vectors_of(
    chosen: Mapping[str, Document],
    documents: Sequence[Document],
    vectors: Sequence[Sequence[float]] | None,
) -> builtins.list[Sequence[float]] | None:
    """The vectors of the ``chosen`` documents, in order, from ``vectors`` of ``documents``."""
    if vectors is None:
        return None
    by_document = {id(doc): vector for doc, vector in zip(documents, vectors, strict=True)}
    return [by_document[id(doc)] for doc in chosen.values()]


def _no_match(query: str, scope: Scope) -> MemoryNotFoundError:
    msg = f"no memory in scope {scope.metadata() or 'all'} matches query={query!r}"
    return MemoryNotFoundError(msg)


class _Replaceable(NamedTuple):
    """The memories a new one names, sorted by whether it may replace them."""

    ids: builtins.list[str]
    """Current memories of its own scope written no later than it: those it replaces."""
    later: builtins.list[str]
    """Current memories written after it."""
    narrower: builtins.list[str]
    """Current memories of a narrower scope than its own."""


class _Superseding(NamedTuple):
    """What a superseding write stored, and the judge's choices it kept current."""

    document: Document
    kept_current: builtins.list[str]


class _Judged(NamedTuple):
    """Whether a write asks the judge, and whether its caller dated it."""

    on: bool
    dated: bool


def _replaceable_by(new: Document, current: Mapping[str, Document], scope: Scope) -> _Replaceable:
    """Which of the ``current`` memories of ``scope`` ``new`` may replace."""
    later = [i for i, doc in current.items() if _written_after(doc, new)]
    narrower = [i for i, doc in current.items() if not scope.holds_exactly(doc.metadata)]
    ids = [i for i in current if i not in later and i not in narrower]
    return _Replaceable(ids, later, narrower)


def _not_before(doc: Document, replaced: Sequence[Document]) -> None:
    """Date ``doc``, written now, no earlier than ``replaced`` (another clock ran ahead)."""
    times = [old.metadata.get("created_at") for old in replaced]
    dated = [(when, value) for value in times if (when := parse_timestamp(value)) is not None]
    if dated:
        latest = max(dated)[1]
        logger.info(
            "dating a new memory %s, as what it replaces, not %s (clocks differ)",
            latest,
            doc.metadata.get("created_at"),
        )
        doc.metadata["created_at"] = latest


def _scoring_at_least(found: list[ScoredDocument], threshold: float) -> list[ScoredDocument]:
    """The pairs of ``found`` scoring ``threshold`` or more (no finite score counts as 0.0)."""
    return [(doc, score) for doc, score in found if (score or 0.0) >= threshold]


def _current_version(doc: Document, scope: Scope) -> Document:
    """``doc`` if it is current; an error naming its successor if it was superseded."""
    if not is_superseded(doc.metadata):
        return doc
    msg = (
        f"memory {doc.id!r} is not a current memory in scope {scope.metadata() or 'all'}: "
        f"it was superseded by {doc.metadata.get(SUPERSEDED_BY_KEY)!r} and is kept as "
        "stored; update the current version (see history())."
    )
    raise MemoryNotFoundError(msg, ids=[doc.id or ""])


def _check_ids(ids: Sequence[str]) -> None:
    if isinstance(ids, str) or not all(isinstance(i, str) and i for i in ids):
        msg = f"supersedes must be a list of memory ids, got {ids!r}."
        raise ValueError(msg)


def _replaceable(
    ids: Sequence[str], found: _Replaceable, new: Document, scope: Scope
) -> builtins.list[str]:
    """The ids a caller named that ``new`` replaces; an error naming any it cannot."""
    held = {*found.ids, *found.later, *found.narrower}
    missing = [i for i in ids if i not in held]
    if missing:
        msg = (
            f"supersedes names {missing}, which are not current memories in scope "
            f"{scope.metadata() or 'all'}; pass ids of current memories (see history())."
        )
        raise MemoryNotFoundError(msg, ids=missing)
    if found.later:
        msg = (
            f"supersedes names {found.later}, written after this memory (created_at "
            f"{new.metadata.get('created_at')}); a memory replaces only earlier ones: "
            "pass a later created_at, or leave them out."
        )
        raise SupersessionRefusedError(msg)
    if found.narrower:
        msg = (
            f"supersedes names {found.narrower}, memories of a narrower scope than "
            f"{scope.metadata() or 'all'}; a memory replaces only memories of its own "
            "scope: store the new version in theirs."
        )
        raise SupersessionRefusedError(msg)
    return found.ids


def _written_after(old: Document, new: Document) -> bool:
    """Whether ``old`` was written after ``new`` by ``created_at`` (unknown times are not)."""
    old_at = parse_timestamp(old.metadata.get("created_at"))
    new_at = parse_timestamp(new.metadata.get("created_at"))
    return old_at is not None and new_at is not None and old_at > new_at


def _restated_id(doc: Document) -> str:
    """The id of a memory said again after it was superseded (its text's id plus when)."""
    when = hashlib.sha256(str(doc.metadata.get("created_at")).encode()).hexdigest()[:8]
    return f"{doc.id}-{when}"


def _is_explicit_empty_answer(result: ExtractionResult[Any]) -> bool:
    """Whether the model answered with an empty list on purpose (nothing dropped)."""
    answered = result.method in {ExtractionMethod.STRUCTURED, ExtractionMethod.TEXT}
    return answered and result.dropped == 0 and result.value == []


def _views_holding(scope: Scope, root: Scope) -> builtins.list[Scope]:
    """The scopes of views of ``root`` that see a memory of ``scope``.

    A view sets every key its root sets (to the root's value or its own) and
    maybe more: it sees the memory when each key it sets has the memory's value.
    """
    held = scope.metadata()
    if any(key not in held for key, _ in root.items()):
        return []
    base = {key: held[key] for key, _ in root.items()}
    extra = [(key, value) for key, value in held.items() if key not in base]
    views = (
        Scope(**base, **dict(chosen))
        for size in range(len(extra) + 1)
        for chosen in itertools.combinations(extra, size)
    )
    return [view for view in views if view != root]


def _given_place(doc: Document, held: Mapping[str | None, Document]) -> tuple[str, Document | None]:
    """A given id stays: free, or holding the same memory; else a conflict."""
    doc_id = doc.id or ""
    same = held.get(doc_id)
    if same is not None and not _same_memory(same, doc):
        msg = (
            f"id {doc_id!r} is already used by another memory; omit the id "
            "(ids default to a hash of scope and text) or use update()."
        )
        raise MemoryConflictError(msg)
    return doc_id, same


def _scope_of(metadata: Mapping[str, Any]) -> Scope:
    """The scope a memory was written in, from its metadata.

    A value no scope may hold (blank, not a string: written by other code or an
    earlier release) is left out, so the memory can still be deleted and forgotten.
    """
    values = {
        key: value
        for key in SCOPE_KEYS
        if isinstance(value := metadata.get(key), str) and value.strip()
    }
    return Scope.model_construct(None, **values)


def _same_memory(held: Document, new: Document) -> bool:
    """Whether ``new`` is ``held`` stored again: the same scope and exactly the same text."""
    same_scope = all(held.metadata.get(k) == new.metadata.get(k) for k in SCOPE_KEYS)
    return same_scope and held.page_content == new.page_content


def _check_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(metadata, Mapping):
        msg = f"metadata must be a mapping, got {type(metadata).__name__}."
        raise TypeError(msg)
    reserved = sorted(set(metadata) & RESERVED_METADATA_KEYS)
    if reserved:
        msg = (
            f"metadata uses reserved key(s) {reserved}; the store sets these itself. "
            "Rename them (scope keys go in scope=...)."
        )
        raise ValueError(msg)
    for key, value in metadata.items():
        if not isinstance(key, str):
            msg = f"metadata keys must be str, got {type(key).__name__} ({key!r}); use str(key)."
            raise ValueError(msg)  # noqa: TRY004 - bad input data, same class as other checks
        if not isinstance(value, _SCALARS):
            msg = (
                f"metadata[{key!r}] must be a str, int, float or bool, got "
                f"{type(value).__name__}; serialise it (e.g. json.dumps) first."
            )
            raise ValueError(msg)  # noqa: TRY004 - bad input data, same class as other checks
        check_unicode(key, name=f"metadata key {key!r}")
        _check_metadata_key(key)
        _check_metadata_value(key, value)
    return {key: _unsigned_zero(value) for key, value in metadata.items()}


def _unsigned_zero(value: Any) -> Any:
    """``-0.0`` as ``0.0``, which every store returns (Chroma and Postgres drop the sign)."""
    return 0.0 if isinstance(value, float) and value == 0 else value


def _check_metadata_key(key: str) -> None:
    if not key or key.startswith("$"):
        msg = (
            f"metadata key {key!r} is empty or starts with '$', which vector stores "
            "refuse or read as an operator; rename it."
        )
        raise ValueError(msg)
    if key.startswith(_CHROMA_PREFIX):
        msg = (
            f"metadata key {key!r} starts with {_CHROMA_PREFIX!r}, which Chroma keeps for "
            f"itself; rename it (e.g. {'chroma_' + key.removeprefix(_CHROMA_PREFIX)!r})."
        )
        raise ValueError(msg)


def _check_metadata_value(key: str, value: Any) -> None:
    """Refuse what some backends would store altered: the same input works on every one."""
    if isinstance(value, str):
        check_unicode(value, name=f"metadata[{key!r}]")
    elif isinstance(value, float) and not math.isfinite(value):
        msg = f"metadata[{key!r}] is {value}; store a finite number or a string instead."
        raise ValueError(msg)
    elif isinstance(value, int) and not _INT64_MIN <= value <= _INT64_MAX:
        msg = (
            f"metadata[{key!r}] is outside the 64-bit integer range every backend "
            "stores; store it as a string (str(value)) instead."
        )
        raise ValueError(msg)
