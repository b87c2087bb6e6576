"""What the HTTP endpoints do, off the event loop, one scope per request.

:class:`MemoryService` wraps one :class:`~cogito_lc.MemoryStore` (the configured
scope) and hands out views of the same vector store for other scopes when the
server allows per-request scopes. Each view keeps its own retrievers (so the
corpus BM25 index is built once per scope, not once per request) and its own
snapshot and vocabulary map in a directory of its own.

Blocking work runs in worker threads, in three lanes: reads (``worker_threads``
at once), writes (one at a time, so the check-then-add of a write is atomic and
waiting writers hold no thread) and long jobs (snapshot, calibration: one at a
time). Concurrent ``/store`` requests are written together, one embeddings call
per batch (group commit, :mod:`cogito_lc.service._batch`).

Exceptions become HTTP errors with short messages: a missing memory 404, an id of
another memory 409, a model or upstream server that did not answer 502, a store
failure 503. Anything else is a bug (requests are validated before they
reach the store): it is logged with its traceback and answered 500 without details.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
from anyio import CapacityLimiter
from fastapi import HTTPException
from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel

from cogito_lc._core.metadata import METADATA_KEY
from cogito_lc._core.transport import TRANSPORT_ERROR_NAMES, exception_chain
from cogito_lc.memory.memory_store import AddResult, MemoryNotFoundError, MemoryStore
from cogito_lc.service._batch import PendingStore, StoreBatcher
from cogito_lc.service._schemas import MemoryHit, finite

__all__ = ["MemoryService", "ScopeView", "ServiceOptions", "http_error_for"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

SCOPES_DIR = "scopes"
"""Subdirectory of the store directory holding per-scope snapshots and vocabulary maps."""

# An Ollama ResponseError (model missing, server error) is upstream too for the service.
_UPSTREAM_NAMES = TRANSPORT_ERROR_NAMES | {"ResponseError"}


@dataclass
class ServiceOptions:
    """How the service runs: models, defaults and concurrency."""

    filter_llm: BaseChatModel | None = None
    extract_llm: BaseChatModel | None = None
    structured_output: str = "auto"
    filter_timeout: float = 12.0
    query_limit: int = 5
    recall_limit: int = 50
    query_threshold: float | None = None
    recall_threshold: float | None = None
    vocab_map: dict[str, list[str]] | None = None
    snapshot_mode: str = "pointer"
    worker_threads: int = 4
    max_views: int = 256
    max_batch: int = 64


@dataclass
class ScopeView:
    """One scope's MemoryStore and the retrievers built for it."""

    memory: MemoryStore
    retrievers: dict[str, Any] = field(default_factory=dict)


class _MethodCapture(BaseCallbackHandler):
    """Keeps the data of the last custom event with a given name."""

    def __init__(self, event: str) -> None:
        self.event = event
        self.data: dict[str, Any] = {}

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        if name == self.event and isinstance(data, dict):
            self.data = data


class _EventQueue(AsyncCallbackHandler):
    """Keeps the data of the named custom events and wakes whoever waits for them."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.data: dict[str, dict[str, Any]] = {}
        self.arrived = asyncio.Event()

    async def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        if name in self.names and isinstance(data, dict):
            self.data[name] = data
            self.arrived.set()

    async def first(self, name: str, task: asyncio.Future[Any]) -> dict[str, Any] | None:
        """The event's data once it arrives, or None if ``task`` ends first."""
        while name not in self.data and not task.done():
            waiter = asyncio.ensure_future(self.arrived.wait())
            await asyncio.wait({waiter, task}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            self.arrived.clear()
        return self.data.get(name)


def _is_upstream_failure(exc: BaseException) -> bool:
    for item in exception_chain(exc):
        if isinstance(item, (ConnectionError, TimeoutError)):
            return True
        if type(item).__name__ in _UPSTREAM_NAMES:
            return True
    return False


_DATABASE_DOWN = frozenset(
    {"DatabaseUnavailableError", "OperationalError", "PoolTimeout", "InterfaceError"}
)


def _is_database_down(exc: BaseException) -> bool:
    """A Postgres that stopped answering (restart, network cut): the next try may work."""
    for item in exception_chain(exc):
        module = type(item).__module__
        postgres = module.startswith(("psycopg", "sqlalchemy", "cogito_lc._core.postgres"))
        if postgres and type(item).__name__ in _DATABASE_DOWN:
            return True
    return False


def _is_store_failure(exc: BaseException) -> bool:
    for item in exception_chain(exc):
        module = type(item).__module__
        if module.startswith(("chromadb", "sqlite3")) or isinstance(item, OSError):
            return True
    return False


def http_error_for(exc: Exception) -> HTTPException | None:
    """The HTTP error an exception from the memory layer becomes, or None (a bug: 500)."""
    if isinstance(exc, HTTPException):
        return exc
    if isinstance(exc, MemoryNotFoundError):
        return HTTPException(404, "no memory with this id in this scope")
    if _is_database_down(exc):
        logger.warning("database unavailable: %s", type(exc).__name__)
        return HTTPException(
            503, "the database is unavailable; retry shortly", headers={"Retry-After": "2"}
        )
    if _is_upstream_failure(exc):
        logger.warning("upstream failure: %s: %s", type(exc).__name__, exc)
        return HTTPException(502, "an upstream model or store server did not answer; retry later")
    if _is_store_failure(exc):
        logger.error("memory store failure", exc_info=exc)
        return HTTPException(503, "the memory store is unavailable; retry later")
    return None


class MemoryService:
    """The operations behind the endpoints, confined to one scope per call.

    Example:
        ```python
        import asyncio

        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_core.vectorstores import InMemoryVectorStore

        from cogito_lc import MemoryStore
        from cogito_lc.service._service import MemoryService, ServiceOptions

        memory = MemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=16)))
        service = MemoryService(memory, ServiceOptions())
        view = service.view("alice")  # or None for the configured scope
        doc = asyncio.run(service.store(view, "Auth tokens expire after 1 h."))
        assert service.count(view) == 1 and doc.metadata["user_id"] == "alice"
        ```
    """

    def __init__(self, memory: MemoryStore, options: ServiceOptions) -> None:
        self.memory = memory
        self.options = options
        self.reads = CapacityLimiter(options.worker_threads)
        self.writes = CapacityLimiter(1)
        self.jobs = CapacityLimiter(1)
        self.batcher = StoreBatcher(self.write, max_batch=options.max_batch)
        self._views: OrderedDict[str, ScopeView] = OrderedDict()
        self._default = ScopeView(memory)
        self._lock = threading.Lock()

    # -- running --------------------------------------------------------------

    async def _run(self, lane: CapacityLimiter, func: Callable[..., T], *args: Any) -> T:
        try:
            return await anyio.to_thread.run_sync(partial(func, *args), limiter=lane)
        except Exception as exc:
            error = http_error_for(exc)
            if error is None:
                raise
            raise error from exc

    async def read(self, func: Callable[..., T], *args: Any) -> T:
        """Run a read in a worker thread (``worker_threads`` at once)."""
        return await self._run(self.reads, func, *args)

    async def write(self, func: Callable[..., T], *args: Any) -> T:
        """Run a write in a worker thread, one write at a time."""
        return await self._run(self.writes, func, *args)

    async def job(self, func: Callable[..., T], *args: Any) -> T:
        """Run a long job (snapshot, calibration) in a worker thread, one at a time."""
        return await self._run(self.jobs, func, *args)

    def public_path(self, path: str | None) -> str | None:
        """A saved file's path relative to the store directory: clients never see server paths."""
        if path is None:
            return None
        if path.startswith("postgres:"):
            return path.split("/", 1)[-1]  # the row name: no server path to hide
        root = self.memory.data_dir
        file = Path(path)
        if root is not None and file.is_relative_to(root):
            return file.relative_to(root).as_posix()
        return file.name

    # -- scopes -----------------------------------------------------------------

    def view(self, user_id: str | None) -> ScopeView:
        """The view of ``user_id``'s scope; None or the configured user: the default scope."""
        if user_id is None or user_id == self.memory.scope.user_id:
            return self._default
        with self._lock:
            view = self._views.get(user_id)
            if view is None:
                view = ScopeView(self._scoped_memory(user_id))
                self._views[user_id] = view
            self._views.move_to_end(user_id)
            while len(self._views) > self.options.max_views:
                self._views.popitem(last=False)
            return view

    def _scoped_memory(self, user_id: str) -> MemoryStore:
        digest = hashlib.sha256(user_id.encode()).hexdigest()[:24]
        root = self.memory.state
        state = root.child(f"{SCOPES_DIR}/{digest}") if root is not None else None
        return self.memory.scoped(
            {"user_id": user_id}, state=state, fallback_vocab_map=self.options.vocab_map
        )

    def _retriever(self, view: ScopeView, kind: str) -> Any:
        with self._lock:
            retriever = view.retrievers.get(kind)
        if retriever is not None:
            return retriever
        if kind == "recall_b":
            retriever = view.memory.as_retriever("recall_b")
        else:
            retriever = view.memory.as_retriever(
                "recall",
                llm=self.options.filter_llm,
                timeout=self.options.filter_timeout,
                structured_output=self.options.structured_output,
            )
        with self._lock:
            return view.retrievers.setdefault(kind, retriever)

    # -- reads --------------------------------------------------------------------

    def count(self, view: ScopeView) -> int:
        """Memories in the scope."""
        return view.memory.count()

    def query(
        self, view: ScopeView, text: str, limit: int | None, threshold: float | None
    ) -> list[MemoryHit]:
        """Plain vector search in the scope, scored by cosine similarity to the query."""
        floor = threshold if threshold is not None else self.options.query_threshold
        found = view.memory.search(text, k=limit or self.options.query_limit, threshold=floor)
        return [_hit(doc, score) for doc, score in found]

    def recall_b(
        self, view: ScopeView, text: str, limit: int | None, threshold: float | None
    ) -> tuple[list[MemoryHit], str]:
        """RecallB in the scope; the method tag even when nothing is found."""
        retriever = self._retriever(view, "recall_b")
        docs = retriever.invoke(text, k=limit or self.options.recall_limit)
        method = _tag(docs, "method") or retriever.decompose(text).method
        return self._hits(docs, threshold), method

    def recall(
        self,
        view: ScopeView,
        text: str,
        limit: int | None,
        threshold: float | None,
        since: str | None,
    ) -> tuple[list[MemoryHit], str, str | None]:
        """Two-stage recall in the scope: hits, the filter's method tag and stage 1's."""
        from cogito_lc.retrievers.cogito_retriever import RETRIEVAL_EVENT

        retriever = self._retriever(view, "recall")
        capture = _MethodCapture(RETRIEVAL_EVENT)
        kwargs: dict[str, Any] = {"k": limit or self.options.recall_limit}
        if since is not None:
            kwargs["since"] = since
        docs = retriever.invoke(text, {"callbacks": [capture]}, **kwargs)
        method = capture.data.get("filter_method") or _tag(docs, "filter_method") or "unknown"
        recall_method = capture.data.get("recall_method")
        return self._hits(docs, threshold), str(method), recall_method

    async def recall_stream(
        self,
        view: ScopeView,
        text: str,
        limit: int | None,
        threshold: float | None,
        since: str | None,
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Two-stage recall as it happens: ``("candidates", ...)`` then ``("result", ...)``.

        Stage 1 (RecallB's order, as ``/recall_b`` would answer) comes as soon as it is
        ready; the result (as ``/recall`` answers) when the filter has chosen. A failure
        comes as ``("error", {"status", "detail"})``. Closing the iterator (a client that
        went away) cancels the model call.
        """
        from cogito_lc.retrievers.cogito_retriever import CANDIDATES_EVENT, RETRIEVAL_EVENT

        retriever = self._retriever(view, "recall")
        events = _EventQueue({CANDIDATES_EVENT, RETRIEVAL_EVENT})
        kwargs: dict[str, Any] = {"k": limit or self.options.recall_limit}
        if since is not None:
            kwargs["since"] = since
        task = asyncio.ensure_future(retriever.ainvoke(text, {"callbacks": [events]}, **kwargs))
        try:
            candidates = await events.first(CANDIDATES_EVENT, task)
            if candidates is not None:
                hits = self._hits(candidates.get("documents", []), threshold)
                method = candidates.get("recall_method")
                yield "candidates", {"memories": hits, "recall_method": method}
            try:
                docs = await task
            except Exception as exc:
                error = http_error_for(exc)
                if error is None:
                    logger.exception("streamed recall failed")
                    error = HTTPException(500, "internal server error")
                yield "error", {"status": error.status_code, "detail": error.detail}
                return
            final = events.data.get(RETRIEVAL_EVENT, {})
            yield (
                "result",
                {
                    "memories": self._hits(docs, threshold),
                    "method": final.get("filter_method")
                    or _tag(docs, "filter_method")
                    or "unknown",
                    "recall_method": final.get("recall_method"),
                },
            )
        finally:
            task.cancel()

    def _hits(self, docs: Sequence[Document], threshold: float | None) -> list[MemoryHit]:
        floor = threshold if threshold is not None else self.options.recall_threshold
        hits = []
        for doc in docs:
            details = doc.metadata.get(METADATA_KEY)
            details = details if isinstance(details, Mapping) else {}
            cosine = finite(details.get("cosine"))
            if floor is not None and cosine is not None and cosine < floor:
                continue
            hits.append(_hit(doc, details.get("score")))
        return hits

    def page(self, view: ScopeView, limit: int, offset: int) -> tuple[list[Document], int]:
        """A page of the scope's memories and how many the scope holds."""
        return view.memory.list(limit=limit, offset=offset), view.memory.count()

    def get(self, view: ScopeView, memory_id: str) -> Document:
        """The memory with this id in the scope.

        Raises:
            MemoryNotFoundError: If the scope has no memory with this id.
        """
        doc = view.memory.get(memory_id)
        if doc is None:
            raise MemoryNotFoundError(memory_id)
        return doc

    def snapshot(self, view: ScopeView) -> Any:
        """The saved snapshot of the scope, or None."""
        from cogito_lc.memory.snapshot import load_snapshot

        return load_snapshot(view.memory)

    # -- writes -------------------------------------------------------------------

    async def store(
        self,
        view: ScopeView,
        text: str,
        memory_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Document:
        """Store ``text`` verbatim, batched with concurrent stores (one embeddings call).

        An explicit id held by another memory (of any scope) is a 409.
        """
        try:
            return await self.batcher.submit(PendingStore(view.memory, text, memory_id, metadata))
        except HTTPException:
            raise
        except Exception as exc:
            error = http_error_for(exc)
            if error is None:
                raise
            raise error from exc

    def add(self, view: ScopeView, text: str, context_hints: Sequence[str]) -> AddResult:
        """Extract facts and store them (MemoryStore semantics: nothing is lost)."""
        return view.memory.add(text, context_hints=context_hints)

    def flush(
        self, view: ScopeView, messages: Sequence[Any], session_id: str, window_size: int
    ) -> Any:
        """Store what a conversation taught that the scope does not hold (see flush_session)."""
        from cogito_lc.memory.flush import flush_session

        return flush_session(view.memory, messages, session_id=session_id, window_size=window_size)

    def delete(self, view: ScopeView, memory_id: str) -> None:
        """Delete a memory of the scope.

        Raises:
            MemoryNotFoundError: If the scope has no memory with this id.
        """
        view.memory.delete(memory_id)

    # -- jobs -------------------------------------------------------------------------

    def build_snapshot(self, view: ScopeView, rebuild: bool, dry_run: bool) -> Any:
        """Build (or reuse) the scope's snapshot."""
        from cogito_lc.memory.snapshot import SnapshotBuilder

        builder = SnapshotBuilder.from_llm(
            self.options.extract_llm, mode=self.options.snapshot_mode
        )
        return builder.build(view.memory, rebuild=rebuild, dry_run=dry_run)

    def calibrate(self, view: ScopeView, dry_run: bool) -> Any:
        """Calibrate the scope's vocabulary map; retrievers pick it up on their next use."""
        from cogito_lc.memory.calibrate import VocabCalibrator

        calibrator = VocabCalibrator.from_llm(
            self.options.extract_llm, structured_output=self.options.structured_output
        )
        result = calibrator.calibrate(view.memory, dry_run=dry_run)
        if not dry_run and result.vocab_map:
            with self._lock:
                view.retrievers.clear()
        return result


def _tag(docs: Sequence[Document], key: str) -> str | None:
    if not docs:
        return None
    details = docs[0].metadata.get(METADATA_KEY)
    value = details.get(key) if isinstance(details, Mapping) else None
    return value if isinstance(value, str) else None


def _hit(doc: Document, score: Any) -> MemoryHit:
    return MemoryHit(id=doc.id or "", text=doc.page_content, score=finite(score))
