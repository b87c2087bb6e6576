"""What the HTTP endpoints do, off the event loop, one scope per request.

:class:`MemoryService` wraps one :class:`~cogito_lc.MemoryStore` (the configured
scope) and hands out views of the same vector store for other scopes when the
server allows per-request scopes. Each view keeps its own retrievers (so the
corpus BM25 index is built once per scope, not once per request) and its own
snapshot and vocabulary map in a directory of its own.

Blocking work runs in worker threads, in three lanes: reads (``worker_threads``
at once), writes (one at a time, so the check-then-add of a write is atomic and
waiting writers hold no thread) and long jobs (snapshot, calibration: one at a
time; a fresh saved snapshot is served on the read lane, not queued behind one).
Concurrent ``/store`` requests are written together, one embeddings call per batch
(group commit, :mod:`cogito_lc.service._batch`).

Exceptions become HTTP errors with short messages: a missing memory 404, an id of
another memory 409, an ``as_of`` the store refuses 422 naming it, a model or
upstream server that did not answer 502, a store failure 503, a model that cannot
be loaded (or whose extra is not installed) 500 naming it. Anything else is a
bug (requests are validated before they reach the store): it is logged with its
traceback and answered 500 without details.

A database or Chroma server that stops answering opens its circuit breaker
(:mod:`cogito_lc.service._dependencies`): until a background probe finds it back,
every request is answered 503 with ``Retry-After`` at once, naming it.

With a supersession judge (``ServiceOptions.judge``, built from the extraction
model), ``add`` and ``flush`` supersede by default: the memories a new one
replaces stay stored, marked, and reads leave them out unless asked
(``include_superseded``, ``as_of``). Forgetting and deleting go through
:meth:`MemoryStore.forget <cogito_lc.MemoryStore.forget>`: every version, the
lexical index, the scope's snapshot, and an audit record.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread
from anyio import CapacityLimiter
from fastapi import HTTPException
from fastapi.exceptions import RequestValidationError
from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel

from cogito_lc._core.breaker import CircuitOpenError
from cogito_lc._core.display import ANSWERED
from cogito_lc._core.extras import MissingExtraError
from cogito_lc._core.metadata import METADATA_KEY
from cogito_lc._core.transport import (
    TRANSPORT_ERROR_NAMES,
    exception_chain,
    is_retryable_status,
    status_code,
)
from cogito_lc._core.versions import check_as_of, is_superseded, version_filter
from cogito_lc.memory.memory_store import (
    AddResult,
    ForgetResult,
    MemoryConflictError,
    MemoryNotFoundError,
    MemoryStore,
    SupersessionRefusedError,
    scope_state_path,
)
from cogito_lc.memory.scope import as_scope
from cogito_lc.service._batch import (
    PendingStore,
    StoreBatcher,
    StoredMemory,
    check_pending,
    id_conflict,
)
from cogito_lc.service._dependencies import (
    CHROMA,
    DATABASE,
    Dependency,
    dependencies_of,
    is_chroma_down,
    is_database_down,
)
from cogito_lc.service._schemas import MemoryHit, finite
from cogito_lc.service.models import ModelLoadError
from cogito_lc.stores.postgres import StatementTimeoutError, WriteLockTimeoutError

if TYPE_CHECKING:
    from cogito_lc.document_compressors.supersession import SupersessionJudge

__all__ = ["MemoryService", "ScopeView", "ServiceOptions", "http_error_for"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


# An Ollama ResponseError (model missing, server error) is upstream too for the service.
_UPSTREAM_NAMES = TRANSPORT_ERROR_NAMES | {"ResponseError"}

_LIST_PAGE = 500
"""How many memories one read of a filtered listing (``include_superseded``, ``as_of``) takes."""
_NO_MATCH = "no memory in this scope matches the query"
_NOT_HERE = "no memory with this id in this scope"
_NOT_CURRENT = "supersedes names memories that are not current in this scope"
_IDS_NOT_HERE = "no memory of this scope has these ids"


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
    judge: SupersessionJudge | None = None
    """Decides what a new memory supersedes or repeats on ``add`` and ``flush``; None: the
    memory store's own judge, if any."""


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
    """Whether a model or store server failed to answer: unreachable, or 5xx, 408, 429."""
    for item in exception_chain(exc):
        if isinstance(item, (ConnectionError, TimeoutError)):
            return True
        if type(item).__name__ in _UPSTREAM_NAMES or is_retryable_status(status_code(item)):
            return True
    return False


RETRY_AFTER = "2"
"""Seconds a client is told to wait (``Retry-After``) when a dependency is unavailable."""


def unavailable(name: str) -> HTTPException:
    """The 503 answered while the dependency ``name`` is unavailable, naming it."""
    return _retry_shortly(f"the {name} is unavailable; retry shortly")


def _retry_shortly(detail: str) -> HTTPException:
    """A 503 saying ``detail``, with the ``Retry-After`` every such answer carries."""
    return HTTPException(503, detail, headers={"Retry-After": RETRY_AFTER})


def _open_breaker(exc: BaseException) -> str | None:
    for item in exception_chain(exc):
        if isinstance(item, CircuitOpenError):
            return item.name
    return None


def _is_store_failure(exc: BaseException) -> bool:
    for item in exception_chain(exc):
        module = type(item).__module__
        if module.startswith(("chromadb", "sqlite3")) or isinstance(item, OSError):
            return True
    return False


@contextmanager
def as_of_errors(as_of: str | None, location: str = "body") -> Iterator[None]:
    """Turn the store's refusal of a given ``as_of`` into a 422 naming the field.

    The request schema refuses a time in the future or one that is not ISO 8601;
    the store may refuse more (a time it has no memory for), after validation.
    """
    try:
        yield
    except ValueError as exc:
        if as_of is None or "as_of" not in str(exc):
            raise
        error = {"loc": (location, "as_of"), "msg": str(exc), "type": "value_error"}
        raise RequestValidationError([error]) from exc


def _dependency_down(exc: Exception) -> str | None:
    """The name of the dependency ``exc`` shows unavailable (retry shortly), else None."""
    name = _open_breaker(exc)
    if name is not None:
        return name
    for name, is_down in ((DATABASE, is_database_down), (CHROMA, is_chroma_down)):
        if is_down(exc):
            logger.warning("%s unavailable: %s", name, type(exc).__name__)
            return name
    return None


def _naming(detail: str, ids: Sequence[str]) -> str:
    """``detail`` followed by the ids the request named that were not found (as JSON)."""
    return f"{detail}: {json.dumps(list(ids))}" if ids else detail


def _answered_error(exc: Exception) -> HTTPException | None:
    """The HTTP error of an exception the memory layer raises on purpose, else None."""
    if isinstance(exc, HTTPException):
        return exc
    if isinstance(exc, MemoryNotFoundError):
        return HTTPException(404, _NOT_HERE)
    if isinstance(exc, WriteLockTimeoutError):
        logger.warning("%s", exc)
        return _retry_shortly("another replica held the store's write lock; retry shortly")
    if isinstance(exc, StatementTimeoutError):
        logger.warning("%s", exc)
        return _retry_shortly(
            "a database statement ran past its time limit (another transaction held what it "
            "needed); retry shortly"
        )
    model_error = next(
        (e for e in exception_chain(exc) if isinstance(e, ModelLoadError | MissingExtraError)),
        None,
    )
    if model_error is not None:  # its message names the setting or the install line
        logger.error("%s", model_error, extra={ANSWERED: True})
        return HTTPException(500, str(model_error))
    return None


def http_error_for(exc: Exception) -> HTTPException | None:
    """The HTTP error an exception from the memory layer becomes, or None (a bug: 500)."""
    answered = _answered_error(exc)
    if answered is not None:
        return answered
    down = _dependency_down(exc)
    if down is not None:
        return unavailable(down)
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
        stored = asyncio.run(service.store(view, "Auth tokens expire after 1 h."))
        assert stored.created and stored.document.metadata["user_id"] == "alice"
        assert service.count(view) == 1
        ```
    """

    def __init__(self, memory: MemoryStore, options: ServiceOptions) -> None:
        self.memory = memory
        self.options = options
        if memory.judge is None:  # the service's judge writes for a store that has none
            memory.judge = options.judge
        self.judge = memory.judge
        """The supersession judge every scope writes with (None: no supersession by default)."""
        if options.vocab_map is not None:  # the setting wins over a calibrated map
            memory.vocab_map = self._configured_vocab_map()
        self.reads = CapacityLimiter(options.worker_threads)
        self.writes = CapacityLimiter(1)
        self.jobs = CapacityLimiter(1)
        self.batcher = StoreBatcher(self.write, max_batch=options.max_batch)
        self._views: OrderedDict[str, ScopeView] = OrderedDict()
        self._default = ScopeView(memory)
        self._lock = threading.Lock()
        self.dependencies: list[Dependency] = dependencies_of(memory.vectorstore)
        """The servers the store needs (database, Chroma server), each with its breaker."""

    # -- running --------------------------------------------------------------

    def check_dependencies(self) -> None:
        """Return if every dependency is available.

        Raises:
            HTTPException: 503 with ``Retry-After``, naming the first one that is not.
        """
        for dependency in self.dependencies:
            if dependency.breaker.is_open:
                raise unavailable(dependency.name)

    def error_for(self, exc: Exception) -> HTTPException | None:
        """:func:`http_error_for`, after opening the breaker of a dependency ``exc`` shows away."""
        for dependency in self.dependencies:
            dependency.note(exc)
        return http_error_for(exc)

    def close(self) -> None:
        """Stop probing the dependencies whose breakers the service made."""
        for dependency in self.dependencies:
            if dependency.owned:
                dependency.breaker.stop()

    async def _run(self, lane: CapacityLimiter, func: Callable[..., T], *args: Any) -> T:
        self.check_dependencies()
        try:
            return await anyio.to_thread.run_sync(partial(func, *args), limiter=lane)
        except Exception as exc:
            error = self.error_for(exc)
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
        root = self.memory.state
        path = scope_state_path(as_scope({"user_id": user_id}))
        state = root.child(path) if root is not None else None
        scoped = self.memory.scoped(
            {"user_id": user_id}, state=state, fallback_vocab_map=self.options.vocab_map
        )
        if self.options.vocab_map is not None:  # the setting wins over a calibrated map
            scoped.vocab_map = self._configured_vocab_map()
        # A view judges and forgets as the store it comes from.
        scoped.judge = self.memory.judge
        scoped.supersession_candidates = self.memory.supersession_candidates
        scoped.forget_min_cosine = self.memory.forget_min_cosine
        scoped.forget_margin = self.memory.forget_margin
        return scoped

    def _retriever(self, view: ScopeView, kind: str) -> Any:
        """The view's retriever of ``kind`` (``recall_b``, ``recall``, ``recall:all``), kept."""
        with self._lock:
            retriever = view.retrievers.get(kind)
        if retriever is not None:
            return retriever
        retriever = self._build(
            view, kind.partition(":")[0], include_superseded=kind.endswith(":all")
        )
        with self._lock:
            return view.retrievers.setdefault(kind, retriever)

    def _build(self, view: ScopeView, kind: str, **fields: Any) -> Any:
        if kind == "recall_b":
            return view.memory.as_retriever("recall_b", **fields)
        return view.memory.as_retriever(
            "recall",
            llm=self.options.filter_llm,
            timeout=self.options.filter_timeout,
            structured_output=self.options.structured_output,
            **fields,
        )

    def _two_stage(self, view: ScopeView, as_of: str | None, include_superseded: bool) -> Any:
        """The two-stage retriever reading the versions asked for (one built per ``as_of``)."""
        if as_of is None:
            return self._retriever(view, "recall:all" if include_superseded else "recall")
        return self._build(view, "recall", as_of=check_as_of(as_of))

    # -- reads --------------------------------------------------------------------

    def count(self, view: ScopeView) -> int:
        """Memories in the scope."""
        return view.memory.count()

    def query(
        self,
        view: ScopeView,
        text: str,
        limit: int | None,
        threshold: float | None,
        as_of: str | None = None,
        include_superseded: bool = False,
    ) -> list[MemoryHit]:
        """Plain vector search in the scope, scored by cosine similarity to the query."""
        floor = threshold if threshold is not None else self.options.query_threshold
        with as_of_errors(as_of):
            found = view.memory.search(
                text,
                k=limit or self.options.query_limit,
                threshold=floor,
                as_of=as_of,
                include_superseded=include_superseded,
            )
        return [_hit(doc, score) for doc, score in found]

    def recall_b(
        self,
        view: ScopeView,
        text: str,
        limit: int | None,
        threshold: float | None,
        as_of: str | None = None,
        include_superseded: bool = False,
    ) -> tuple[list[MemoryHit], str]:
        """RecallB in the scope; the method tag even when nothing is found."""
        retriever = self._retriever(view, "recall_b")
        with as_of_errors(as_of):
            docs = retriever.invoke(
                text,
                k=limit or self.options.recall_limit,
                as_of=as_of,
                include_superseded=include_superseded,
            )
            if as_of is not None and not docs:  # as /query: a time before every memory
                view.memory.check_as_of(as_of)
        method = _tag(docs, "method") or retriever.decompose(text).method
        return self._hits(docs, threshold), method

    def explain_recall_b(
        self, view: ScopeView, text: str, limit: int | None
    ) -> tuple[list[Document], dict[str, Any]]:
        """RecallB as ``recall_b`` runs it, with its documents and run report (the inspector).

        Returns:
            The documents as RecallB returns them (scores under ``METADATA_KEY``) and
            the data of its :data:`~cogito_lc.retrievers.recall_b.RECALL_B_EVENT`
            (method tag, sub-queries, the runs that found each document).
        """
        from cogito_lc.retrievers.recall_b import RECALL_B_EVENT

        capture = _MethodCapture(RECALL_B_EVENT)
        retriever = self._retriever(view, "recall_b")
        docs = retriever.invoke(
            text, {"callbacks": [capture]}, k=limit or self.options.recall_limit
        )
        if "method" not in capture.data:
            capture.data["method"] = retriever.decompose(text).method
        return list(docs), capture.data

    def recall(
        self,
        view: ScopeView,
        text: str,
        limit: int | None,
        threshold: float | None,
        since: str | None,
        as_of: str | None = None,
        include_superseded: bool = False,
    ) -> tuple[list[MemoryHit], str, str | None]:
        """Two-stage recall in the scope: hits, the filter's method tag and stage 1's."""
        from cogito_lc.retrievers.cogito_retriever import RETRIEVAL_EVENT

        capture = _MethodCapture(RETRIEVAL_EVENT)
        kwargs: dict[str, Any] = {"k": limit or self.options.recall_limit}
        if since is not None:
            kwargs["since"] = since
        with as_of_errors(as_of):
            retriever = self._two_stage(view, as_of, include_superseded)
            docs = retriever.invoke(text, {"callbacks": [capture]}, **kwargs)
            if as_of is not None and not docs:
                view.memory.check_as_of(as_of)
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
        as_of: str | None = None,
        include_superseded: bool = False,
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Two-stage recall as it happens: ``("candidates", ...)`` then ``("result", ...)``.

        Stage 1 (RecallB's order, as ``/recall_b`` would answer) comes as soon as it is
        ready; the result (as ``/recall`` answers) when the filter has chosen. A failure
        comes as ``("error", {"status", "detail"})``. Closing the iterator (a client that
        went away) cancels the model call.
        """
        from cogito_lc.retrievers.cogito_retriever import CANDIDATES_EVENT, RETRIEVAL_EVENT

        self.check_dependencies()
        with as_of_errors(as_of):
            retriever = self._two_stage(view, as_of, include_superseded)
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
                if as_of is not None and not docs:  # refused as /recall refuses it
                    await asyncio.to_thread(view.memory.check_as_of, as_of)
            except Exception as exc:
                if as_of is not None and isinstance(exc, ValueError) and "as_of" in str(exc):
                    yield "error", {"status": 422, "detail": f"as_of: {exc}"}
                    return
                error = self.error_for(exc)
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

    def page(
        self,
        view: ScopeView,
        limit: int,
        offset: int,
        include_superseded: bool = True,
        as_of: str | None = None,
    ) -> tuple[list[Document], int]:
        """A page of the scope's memories and how many the listing holds.

        Every version by default; current ones only without ``include_superseded``,
        or those current at ``as_of``. A filtered listing reads the whole scope.
        """
        if include_superseded and as_of is None:
            return view.memory.list(limit=limit, offset=offset), view.memory.count()
        with as_of_errors(as_of, "query"):
            return self._filtered_page(view, limit, offset, include_superseded, as_of)

    def _filtered_page(
        self,
        view: ScopeView,
        limit: int,
        offset: int,
        include_superseded: bool,
        as_of: str | None,
    ) -> tuple[list[Document], int]:
        keep = version_filter(
            as_of=None if as_of is None else check_as_of(as_of),
            include_superseded=include_superseded,
        )
        kept: list[Document] = []
        read = 0
        while True:
            batch = view.memory.list(limit=_LIST_PAGE, offset=read)
            kept.extend(doc for doc in batch if keep is None or keep(doc.metadata))
            read += len(batch)
            if len(batch) < _LIST_PAGE:
                break
        if as_of is not None and not kept:
            view.memory.check_as_of(as_of)
        return kept[offset : offset + limit], len(kept)

    def history(self, view: ScopeView, memory_id: str) -> tuple[list[Document], str | None]:
        """Every version of a memory of the scope, oldest first, and the current one's id.

        Raises:
            MemoryNotFoundError: If the scope has no memory with this id.
        """
        versions = view.memory.history(memory_id)
        current = [doc.id for doc in versions if not is_superseded(doc.metadata)]
        return versions, (current[-1] or None) if current else None

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
        supersedes: Sequence[str] | None = None,
    ) -> StoredMemory:
        """Store ``text`` verbatim, batched with concurrent stores (one embeddings call).

        An explicit id held by another memory (of any scope) is a 409. With
        ``supersedes`` the memory is written on its own, replacing those (404 when one
        is not a current memory of the scope). ``created`` is False when the memory
        was stored already.
        """
        if supersedes:
            doc = await self.write(
                self.store_superseding, view, text, memory_id, metadata, supersedes
            )
            return StoredMemory(doc, created=True)
        self.check_dependencies()  # fail fast instead of queueing behind a failing batch
        try:
            return await self.batcher.submit(PendingStore(view.memory, text, memory_id, metadata))
        except HTTPException:
            raise
        except Exception as exc:
            error = self.error_for(exc)
            if error is None:
                raise
            raise error from exc

    def store_superseding(
        self,
        view: ScopeView,
        text: str,
        memory_id: str | None,
        metadata: Mapping[str, Any] | None,
        supersedes: Sequence[str],
    ) -> Document:
        """Store ``text`` as the new version of the memories ``supersedes`` names.

        Raises:
            RequestValidationError: If the text, id or metadata cannot be stored.
            HTTPException: 409 for an id held by another memory, or a memory to
                supersede of a narrower scope; 404 when a memory to supersede is
                not current in the scope.
        """
        check_pending(PendingStore(view.memory, text, memory_id, metadata))
        try:
            return view.memory.store(
                text,
                id=memory_id,
                metadata=metadata,
                supersedes=list(dict.fromkeys(supersedes)),
            )
        except MemoryConflictError:
            raise id_conflict() from None
        except MemoryNotFoundError as missing:
            raise HTTPException(404, _naming(_NOT_CURRENT, missing.ids)) from None
        except SupersessionRefusedError as refused:
            raise HTTPException(409, str(refused)) from None

    def add(
        self,
        view: ScopeView,
        text: str,
        context_hints: Sequence[str],
        supersede: bool | None = None,
    ) -> AddResult:
        """Extract facts and store them (MemoryStore semantics: nothing is lost).

        ``supersede`` None judges when the service has a judge; a forget request
        forgets instead of storing.
        """
        return view.memory.add(text, context_hints=context_hints, supersede=supersede)

    def flush(
        self,
        view: ScopeView,
        messages: Sequence[Any],
        session_id: str,
        window_size: int,
        supersede: bool | None = None,
    ) -> Any:
        """Store what a conversation taught that the scope does not hold (see flush_session)."""
        from cogito_lc.memory.flush import flush_session

        return flush_session(
            view.memory,
            messages,
            session_id=session_id,
            window_size=window_size,
            supersede=supersede,
        )

    def forget(
        self,
        view: ScopeView,
        query: str | None,
        ids: Sequence[str] | None,
        reason: str,
    ) -> ForgetResult:
        """Forget memories of the scope, each with every version, keeping an audit record.

        Raises:
            HTTPException: 404 when the query matches nothing or an id is not in the
                scope (nothing is forgotten then).
        """
        unique = None if ids is None else list(dict.fromkeys(ids))  # the store reads each once
        try:
            return view.memory.forget(query, ids=unique, reason=reason)
        except MemoryNotFoundError as missing:
            detail = _NO_MATCH if ids is None else _naming(_IDS_NOT_HERE, missing.ids)
            raise HTTPException(404, detail) from None

    def delete(self, view: ScopeView, memory_id: str) -> list[str]:
        """Forget a memory of the scope with every version of it; their ids.

        Raises:
            MemoryNotFoundError: If the scope has no memory with this id.
        """
        return view.memory.forget(ids=[memory_id], reason="delete").ids

    # -- jobs -------------------------------------------------------------------------

    async def snapshot_job(self, view: ScopeView, rebuild: bool, dry_run: bool) -> Any:
        """Build (or reuse) the scope's snapshot.

        A fresh saved snapshot is read on the read lane: it waits for no running job.
        """
        if not (rebuild or dry_run):
            cached = await self.read(self.cached_snapshot, view)
            if cached is not None:
                return cached
        return await self.job(self.build_snapshot, view, rebuild, dry_run)

    def cached_snapshot(self, view: ScopeView) -> Any:
        """The scope's saved snapshot while it is fresh (method ``cached``), else None."""
        return self._snapshot_builder().cached(view.memory)

    def build_snapshot(self, view: ScopeView, rebuild: bool, dry_run: bool) -> Any:
        """Build (or reuse) the scope's snapshot."""
        return self._snapshot_builder().build(view.memory, rebuild=rebuild, dry_run=dry_run)

    def _snapshot_builder(self) -> Any:
        from cogito_lc.memory.snapshot import SnapshotBuilder

        return SnapshotBuilder.from_llm(
            self.options.extract_llm,
            mode=self.options.snapshot_mode,
            structured_output=self.options.structured_output,
            timeout=self.options.filter_timeout,
        )

    def _configured_vocab_map(self) -> dict[str, list[str]] | None:
        """A copy of the ``vocab_map`` setting for one store, which may change its own."""
        configured = self.options.vocab_map
        return None if configured is None else {k: list(v) for k, v in configured.items()}

    def calibrate(self, view: ScopeView, dry_run: bool) -> tuple[Any, bool]:
        """Calibrate the scope's vocabulary map; retrievers pick it up on their next use.

        Returns:
            The result, and whether recall now uses the map: not when it is a
            dry run or the ``vocab_map`` setting is configured, which wins.
        """
        from cogito_lc.memory.calibrate import VocabCalibrator

        calibrator = VocabCalibrator.from_llm(
            self.options.extract_llm,
            structured_output=self.options.structured_output,
            timeout=self.options.filter_timeout,
        )
        result = calibrator.calibrate(view.memory, dry_run=dry_run)
        if dry_run or not result.vocab_map:
            return result, False
        if self.options.vocab_map is not None:
            view.memory.vocab_map = self._configured_vocab_map()
            logger.warning(
                "calibrated vocabulary map saved but not used: the vocab_map setting is "
                "configured and wins; remove it to recall with the calibrated map"
            )
            return result, False
        with self._lock:
            view.retrievers.clear()
        return result, True


def _tag(docs: Sequence[Document], key: str) -> str | None:
    if not docs:
        return None
    details = docs[0].metadata.get(METADATA_KEY)
    value = details.get(key) if isinstance(details, Mapping) else None
    return value if isinstance(value, str) else None


def _hit(doc: Document, score: Any) -> MemoryHit:
    return MemoryHit(id=doc.id or "", text=doc.page_content, score=finite(score))
