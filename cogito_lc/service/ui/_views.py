"""What the inspector's pages show, read from one scope (blocking: run in the service's lanes).

Every function takes the :class:`~cogito_lc.service._service.ScopeView` of the
session's scope and returns plain values for the templates; none of them
renders HTML (the templates escape every value).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from langchain_core.documents import Document

from cogito_lc._core.metadata import METADATA_KEY
from cogito_lc._core.timestamps import parse_timestamp
from cogito_lc._core.versions import is_superseded
from cogito_lc.memory.memory_store import MemoryStore
from cogito_lc.memory.scope import Scope
from cogito_lc.service._service import MemoryService, ScopeView
from cogito_lc.service.config import CogitoSettings
from cogito_lc.stores.adapters import adapter_for
from cogito_lc.stores.lexical_sync import lexical_sync_for

__all__ = [
    "Listing",
    "MemoryRow",
    "Recall",
    "ScopeListing",
    "ScopeRow",
    "health",
    "list_memories",
    "list_scopes",
    "memory_detail",
    "parse_instant",
    "recall_explained",
]

PAGE_SIZE = 50
"""Memories on one page of a scope's listing."""

_READ_BATCH = 500
"""Memories one read of a filtered listing takes."""

MAX_SCOPES_SHOWN = 200
"""Scopes the Scopes view lists at most (the first by ``user_id``); it counts the others."""


@dataclass
class MemoryRow:
    """One memory as a row of the listing."""

    id: str
    text: str
    kind: str
    importance: str
    created_at: str
    updated_at: str
    source: str
    superseded: bool


@dataclass
class Listing:
    """A page of a scope's memories, newest first."""

    rows: list[MemoryRow]
    total: int
    """Memories in the listing (after the filter)."""
    page: int
    pages: int
    scope_count: int
    """Memories in the scope."""
    order: str = "last written first"
    """How the rows are ordered, in words."""
    top: int = 0
    """How many memories the scope held when the listing's first page was read:
    later pages leave out memories written since, so they neither repeat nor shift."""
    newer: int = 0
    """Memories written since the first page, left out."""


@dataclass
class Recall:
    """A recall explained: ranked memories with their scores and the runs that found them."""

    query: str
    method: str
    subqueries: list[str]
    hits: list[dict[str, Any]] = field(default_factory=list)
    subquery_vectors: str = ""


@dataclass
class ScopeRow:
    """One scope (a ``user_id``) of the Scopes view."""

    user_id: str
    count: int
    """Memories in the scope, every version."""
    current: bool
    """Whether the session acts in it."""
    openable: bool
    """Whether a session can switch to it (a valid ``user_id``, as a login takes)."""


@dataclass
class ScopeListing:
    """The scopes of the store a session may see, with their memory counts."""

    rows: list[ScopeRow]
    scopes: int
    """Scopes in all (``rows`` holds at most :data:`MAX_SCOPES_SHOWN`)."""
    memories: int
    """Memories in all of them."""

    @property
    def more(self) -> int:
        """Scopes not listed."""
        return self.scopes - len(self.rows)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return json.dumps(value, ensure_ascii=False, default=str)


def _row(doc: Document) -> MemoryRow:
    meta = doc.metadata
    return MemoryRow(
        id=doc.id or "",
        text=doc.page_content,
        kind=_text(meta.get("kind")),
        importance=_text(meta.get("importance")),
        created_at=_text(meta.get("created_at")),
        updated_at=_text(meta.get("updated_at")),
        source=_text(meta.get("source_id", meta.get("source"))),
        superseded=is_superseded(meta),
    )


def parse_instant(text: str | None, *, end_of_day: bool = False) -> datetime | None:
    """An ISO 8601 date or time as an aware datetime (UTC when none is given), or None.

    Raises:
        ValueError: If ``text`` is not empty and not ISO 8601.
    """
    if text is None or not text.strip():
        return None
    value = text.strip()
    if len(value) == 10 and end_of_day:  # a date: up to its last instant
        value += "T23:59:59.999999"
    instant = parse_timestamp(value)
    if instant is None:
        msg = f"not an ISO 8601 date or time: {text[:40]!r}"
        raise ValueError(msg)
    return instant


def _created(doc: Document) -> datetime | None:
    return parse_timestamp(doc.metadata.get("created_at"))  # ISO 8601 or epoch seconds


def _matches(doc: Document, text: str, since: datetime | None, until: datetime | None) -> bool:
    if text and text.casefold() not in doc.page_content.casefold() and text != doc.id:
        return False
    if since is None and until is None:
        return True
    created = _created(doc)
    if created is None:
        return False
    return (since is None or created >= since) and (until is None or created <= until)


def list_memories(
    view: ScopeView,
    *,
    text: str = "",
    since: datetime | None = None,
    until: datetime | None = None,
    page: int = 1,
    size: int = PAGE_SIZE,
    top: int | None = None,
) -> Listing:
    """A page of the scope's memories, every version included.

    Without a filter the page is read from the end of the write order (one read),
    last written first; with a text filter (case-insensitive, or an exact id) or a
    time range on ``created_at`` the whole scope is read and sorted by
    ``created_at``, newest first.

    ``top`` is the listing's :attr:`Listing.top` from its first page: memories
    written since are left out of later pages, so paging neither repeats nor
    shifts rows while others write.
    """
    count = view.memory.count()
    top = count if top is None else min(top, count)
    newer = count - top
    needle = text.strip()
    if not needle and since is None and until is None:
        pages = max(1, math.ceil(top / size))
        page = min(max(page, 1), pages)
        end = max(top - (page - 1) * size, 0)
        start = max(end - size, 0)
        docs = view.memory.list(limit=end - start, offset=start) if end > start else []
        rows = [_row(doc) for doc in reversed(docs)]
        return Listing(rows, top, page, pages, count, top=top, newer=newer)
    kept: list[tuple[int, Document]] = []
    read = 0
    while read < top:
        batch = view.memory.list(limit=min(_READ_BATCH, top - read), offset=read)
        kept.extend(
            (read + i, doc) for i, doc in enumerate(batch) if _matches(doc, needle, since, until)
        )
        read += len(batch)
        if not batch:
            break
    oldest = datetime.min.replace(tzinfo=timezone.utc)
    kept.sort(key=lambda item: (_created(item[1]) or oldest, item[0]), reverse=True)
    pages = max(1, math.ceil(len(kept) / size))
    page = min(max(page, 1), pages)
    chosen = kept[(page - 1) * size : page * size]
    rows = [_row(doc) for _, doc in chosen]
    order = "newest created first"
    return Listing(rows, len(kept), page, pages, count, order, top=top, newer=newer)


def list_scopes(
    memory: MemoryStore,
    current: str,
    openable: Callable[[str], bool],
    limit: int | None = None,
) -> ScopeListing:
    """Every ``user_id`` scope the service can open on ``memory``'s store, with its memories.

    A scope the service opens is ``memory``'s scope with another ``user_id``
    (:meth:`MemoryService.view <cogito_lc.service._service.MemoryService.view>`),
    so the store's memories matching the rest of that scope are counted by
    ``user_id``, in the store (:meth:`~cogito_lc.stores.base.StoreAdapter.scope_counts`);
    memories without a ``user_id`` are in none. The first ``limit`` scopes by
    ``user_id`` (default :data:`MAX_SCOPES_SHOWN`) are listed, the others only counted.
    """
    limit = MAX_SCOPES_SHOWN if limit is None else limit
    rest = Scope(**{key: value for key, value in memory.scope.items() if key != "user_id"})
    counted = adapter_for(memory.vectorstore).scope_counts(["user_id"], rest.where(), limit=limit)
    rows = [
        ScopeRow(
            user_id=user_id, count=count, current=user_id == current, openable=openable(user_id)
        )
        for (user_id,), count in counted.counts.items()
    ]
    return ScopeListing(rows=rows, scopes=counted.scopes, memories=counted.documents)


def memory_detail(
    service: MemoryService, view: ScopeView, memory_id: str
) -> tuple[MemoryRow, list[tuple[str, str]], list[MemoryRow], str | None]:
    """One memory: its row, every metadata item (sorted, as text) and its versions.

    Raises:
        MemoryNotFoundError: If the scope has no memory with this id.
    """
    doc = service.get(view, memory_id)
    versions, current = service.history(view, memory_id)
    items = sorted((str(key), _text(value)) for key, value in doc.metadata.items())
    return _row(doc), items, [_row(version) for version in versions], current


def _score(value: Any) -> str:
    if isinstance(value, (int, float)) and math.isfinite(value):
        return f"{value:.3f}"
    return ""


def _runs(found_by: Sequence[Mapping[str, Any]], subqueries: Sequence[str]) -> list[str]:
    labels = []
    for run in found_by:
        if run.get("run") == "lexical":
            labels.append(f"lexical #{run.get('rank')}")
            continue
        index = run.get("subquery", 0)
        which = "original" if index == 0 else f"sub-query {index}"
        labels.append(f"vector ({which}) #{run.get('rank')}")
    return labels


def recall_explained(
    service: MemoryService, view: ScopeView, query: str, limit: int | None = None
) -> Recall:
    """Run RecallB in the scope and explain its ranking (scores, sub-queries, runs)."""
    docs, report = service.explain_recall_b(view, query, limit)
    subqueries = [str(q) for q in report.get("subqueries", [query])]
    found_by = report.get("found_by") or [[] for _ in docs]
    hits = []
    for position, doc in enumerate(docs):
        details = doc.metadata.get(METADATA_KEY)
        details = details if isinstance(details, Mapping) else {}
        runs = found_by[position] if position < len(found_by) else []
        hits.append(
            {
                "rank": details.get("rank", position + 1),
                "id": doc.id or "",
                "text": doc.page_content,
                "score": _score(details.get("score")),
                "cosine": _score(details.get("cosine")),
                "rrf": _score(details.get("rrf")),
                "runs": _runs(runs, subqueries),
            }
        )
    return Recall(
        query=query,
        method=str(report.get("method", "")),
        subqueries=subqueries,
        hits=hits,
        subquery_vectors=str(report.get("subquery_vectors", "")),
    )


def _public_url(url: str | None) -> str:
    """A URL without its user, password, query and fragment (they may hold secrets)."""
    if not url:
        return ""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    _, colon, port = parts.netloc.rpartition("@")[2].rpartition("]")[2].rpartition(":")
    if colon and port:  # as written, even out of range: shown, not used
        host = f"{host}:{port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def health(service: MemoryService, settings: CogitoSettings, view: ScopeView) -> dict[str, Any]:
    """The scope's and the store's state and the configured models; never a secret."""
    memory = view.memory
    store = type(memory.vectorstore).__name__
    if store == "Chroma":
        kind = "Chroma server" if settings.chroma_host else "embedded Chroma"
    elif "PG" in store or "Postgres" in store:
        kind = "Postgres (pgvector)"
    elif "Qdrant" in store:
        kind = "Qdrant server" if settings.qdrant_url else "embedded Qdrant"
    else:
        kind = store
    snapshot = service.snapshot(view)
    sync = lexical_sync_for(memory.vectorstore)
    lexical: dict[str, Any] = {"index": "none (the store cannot be followed)"}
    if sync is not None:
        index = sync.index
        lexical = {"index": type(index).__name__}
        try:
            lexical["documents"] = index.count()
            lexical["pending"] = len(index.pending())
        except Exception as exc:  # an index that cannot answer is a state to show
            lexical["error"] = type(exc).__name__
    vocab = memory.vocab_map or {}
    return {
        "store": kind,
        "vector_store": store,
        "collection": settings.collection,
        "scope_count": service.count(view),
        "lexical": lexical,
        "snapshot": (
            {
                "built_at": snapshot.built_at,
                "count": snapshot.count,
                "method": snapshot.method,
            }
            if snapshot is not None
            else None
        ),
        "calibrated": bool(vocab),
        "vocab_terms": len(vocab),
        "models": {
            "embeddings": settings.embed_model,
            "filter (stage 2)": settings.filter_model or "none",
            "extraction": settings.chat_model or "none",
            "filter endpoint": _public_url(settings.filter_endpoint) or "none",
            "supersession": "on" if settings.supersession and settings.chat_model else "off",
        },
        "auth": "bearer token" if settings.api_token is not None else "none (loopback only)",
        "request_scopes": settings.allow_request_scope,
    }
