"""Group commit for ``POST /store``: concurrent writes share one embeddings call.

Requests that arrive while a write is running wait in a queue; the next write
takes all of them (up to ``max_batch``) and stores them with one
``MemoryStore.store_many`` call per scope: one embeddings forward pass and one
vector-store insert instead of one each. A lone request is written at once, so a
single client sees no added latency. Each request still gets its own answer: its
stored memory, or its own error (an id taken by another memory is a 409 for that
request only). A request is answered only after its batch was written.

One request must not fail its neighbours: each is checked before it joins a
batch (an invalid one is a 422 for that request alone), and when a batch write
fails all the same, its items are written again one by one, so each gets the
answer its own write earns.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from fastapi import HTTPException
from fastapi.exceptions import RequestValidationError
from langchain_core.documents import Document

from cogito_lc._core.validation import check_unicode
from cogito_lc.service._schemas import check_metadata

__all__ = [
    "PendingStore",
    "StoreBatcher",
    "StoredMemory",
    "check_pending",
    "id_conflict",
    "store_batch",
]

logger = logging.getLogger(__name__)

_TAKEN = "this id is taken by another memory; choose another id"


@dataclass
class PendingStore:
    """One ``/store`` request waiting for its batch."""

    memory: Any
    """The MemoryStore of the request's scope."""
    text: str
    memory_id: str | None = None
    metadata: Mapping[str, Any] | None = None
    future: asyncio.Future[StoredMemory] | None = field(default=None, repr=False)


@dataclass(frozen=True)
class StoredMemory:
    """A ``/store`` request's memory, as stored, and whether that request wrote it."""

    document: Document
    created: bool
    """False when the memory was stored already (the same text in the scope, or the
    same id and text), or an earlier request of the same batch wrote it."""


def id_conflict() -> HTTPException:
    """The 409 for an explicit id that another memory holds (whose, it never says)."""
    return HTTPException(409, _TAKEN)


def _field_problem(field: str, check: Callable[[], object]) -> dict[str, Any] | None:
    try:
        check()
    except ValueError as exc:
        return {"loc": ("body", field), "msg": str(exc), "type": "value_error"}
    return None


def _check_text(item: PendingStore) -> None:
    check_unicode(item.text, name="text")
    limit = item.memory.max_text_chars
    if not item.text.strip() or len(item.text) > limit:
        msg = f"text must be non-blank and at most {limit} characters"
        raise ValueError(msg)


def check_pending(item: PendingStore) -> None:
    """Raise a 422 (naming the field) for an item whose write would fail; else nothing.

    Raises:
        RequestValidationError: If the text, id or metadata cannot be stored.
    """
    checks: dict[str, Callable[[], object]] = {"text": partial(_check_text, item)}
    if item.memory_id is not None:
        checks["id"] = partial(check_unicode, item.memory_id, name="id")
    if item.metadata is not None:
        checks["metadata"] = partial(check_metadata, dict(item.metadata))
    problems = [_field_problem(field, check) for field, check in checks.items()]
    errors = [problem for problem in problems if problem is not None]
    if errors:
        raise RequestValidationError(errors)


def _holds_other(memory: Any, found: Document, text: str) -> bool:
    return not memory.scope.contains(found.metadata) or found.page_content != text


def _admit(items: list[PendingStore]) -> tuple[list[int], dict[int, Exception]]:
    """Indexes that may be written, and a 409 for each explicit id held by another memory."""
    explicit = list(dict.fromkeys(item.memory_id for item in items if item.memory_id is not None))
    memory = items[0].memory
    held = {doc.id: doc for doc in memory.vectorstore.get_by_ids(explicit)} if explicit else {}
    claimed: dict[str, str] = {}
    admitted: list[int] = []
    errors: dict[int, Exception] = {}
    for index, item in enumerate(items):
        key = item.memory_id
        if key is not None:
            if (key in held and _holds_other(memory, held[key], item.text)) or claimed.get(
                key, item.text
            ) != item.text:
                errors[index] = id_conflict()
                continue
            claimed[key] = item.text
        admitted.append(index)
    return admitted, errors


def _store_scope(items: list[PendingStore]) -> list[StoredMemory | Exception]:
    """Write the items of one scope with one ``store_many`` call.

    Items that name the same memory (the same explicit id, or the same text
    without one) are written once and all get that memory back; only the first
    of them is ``created``, and none when the memory was stored before.
    """
    admitted, errors = _admit(items)
    results: dict[int, StoredMemory | Exception] = dict(errors)
    memory = items[0].memory
    keys = {i: (items[i].memory_id, items[i].text) for i in admitted}
    first: dict[tuple[str | None, str], int] = {}
    for index, key in keys.items():
        first.setdefault(key, index)
    documents = [
        Document(
            page_content=items[i].text,
            id=items[i].memory_id,
            metadata=dict(items[i].metadata or {}),
        )
        for i in first.values()
    ]
    # the ids written: a text whose own id an edited memory holds goes to its next id
    outcome = memory.store_many_created(documents) if documents else []
    written = {key: doc_id for key, (doc_id, _) in zip(first, outcome, strict=True)}
    created = {key for key, (_, new) in zip(first, outcome, strict=True) if new}
    found = memory.vectorstore.get_by_ids(list(written.values())) if written else []
    stored = {doc.id: doc for doc in found}
    for index, key in keys.items():
        doc_id = written[key]
        document = stored.get(doc_id) or Document(items[first[key]].text, id=doc_id)
        results[index] = StoredMemory(document, index == first[key] and key in created)
    return [results[i] for i in range(len(items))]


def _store_alone(item: PendingStore) -> StoredMemory | Exception:
    try:
        return _store_scope([item])[0]
    except Exception as exc:  # handed to this item's request
        return exc


def _store_group(group: list[PendingStore]) -> list[StoredMemory | Exception]:
    """Write one scope's items together; if that fails, each item on its own."""
    try:
        return _store_scope(group)
    except Exception as exc:
        if len(group) == 1:
            return [exc]
        logger.warning(
            "a batch of %d writes failed (%s); writing them one by one",
            len(group),
            type(exc).__name__,
        )
        return [_store_alone(item) for item in group]


def store_batch(items: list[PendingStore]) -> list[StoredMemory | Exception]:
    """Store a batch (blocking): one ``store_many`` per scope; a result or error per item.

    When a scope's write fails, its items are written again one at a time, so a
    bad item fails only its own request and a failing store fails each of them.
    """
    results: dict[int, StoredMemory | Exception] = {}
    groups: dict[int, list[int]] = {}
    for index, item in enumerate(items):
        groups.setdefault(id(item.memory), []).append(index)
    for indexes in groups.values():
        outcome = _store_group([items[i] for i in indexes])
        results.update(zip(indexes, outcome, strict=True))
    return [results[i] for i in range(len(items))]


class StoreBatcher:
    """Queues ``/store`` requests and writes them in batches, one batch at a time.

    Args:
        run: Runs the blocking batch write off the event loop (the service's
            write lane) and raises HTTP errors for failures of the whole call.
        max_batch: Most requests written in one batch.
    """

    def __init__(
        self,
        run: Callable[[Callable[..., Any], Any], Awaitable[Any]],
        *,
        max_batch: int = 64,
    ) -> None:
        self._run = run
        self.max_batch = max_batch
        self._queue: list[PendingStore] = []
        self._drainer: asyncio.Task[None] | None = None

    async def submit(self, item: PendingStore) -> StoredMemory:
        """Check ``item``, queue it and return its stored memory once its batch is written.

        Raises:
            RequestValidationError: If the item cannot be stored (it joins no batch).
        """
        check_pending(item)
        item.future = asyncio.get_running_loop().create_future()
        self._queue.append(item)
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain())
        return await item.future

    async def _drain(self) -> None:
        while self._queue:
            batch = self._queue[: self.max_batch]
            del self._queue[: self.max_batch]
            try:
                results = await self._run(store_batch, batch)
            except Exception as exc:  # handed to each waiting request
                results = [exc] * len(batch)
            for item, result in zip(batch, results, strict=True):
                self._settle(item, result)

    @staticmethod
    def _settle(item: PendingStore, result: StoredMemory | Exception) -> None:
        future = item.future
        if future is None or future.done():  # the client went away
            return
        if isinstance(result, Exception):
            future.set_exception(result)
        else:
            future.set_result(result)
