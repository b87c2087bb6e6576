"""CogitoStore: a LangGraph ``BaseStore`` over a MemoryStore, searched by RecallB."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever

from cogito_lc._core.extras import missing_extra
from cogito_lc._core.metadata import METADATA_KEY, SCOPE_KEYS
from cogito_lc._core.validation import check_unicode
from cogito_lc._core.versions import SUPERSEDED_BY_KEY, is_superseded, superseded_ids
from cogito_lc.memory.memory_store import MemoryConflictError, MemoryNotFoundError, MemoryStore
from cogito_lc.memory.scope import Scope, as_scope
from cogito_lc.stores import StoreAdapter, adapter_for

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        IndexConfig,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError as exc:  # pragma: no cover - exercised on an install without the extra
    error = missing_extra("langgraph", "CogitoStore", exc.name)
    raise error from exc

from cogito_lc.langgraph import _items

__all__ = ["CogitoStore"]

logger = logging.getLogger(__name__)

_PAGE = 1_000
"""How many memories one read of a namespace scan fetches."""
_WALK = 8
"""Versions a read follows one by one before it lists the item's versions instead."""
_QUERY_POOL = 100
"""Candidates each run of a query search ranks whatever its offset and limit, up to this
many results: pages of one query then agree, as slices of one ranking."""
_HEADS = 10_000
"""How many items' latest seen versions a store keeps, to start its next read there."""
_WRITE_TRIES = 6
"""How often a put re-reads the item when another writer got there first."""
_RETRY_PAUSE = 0.01
"""Seconds a put waits before its first re-read; each next wait is twice as long."""
_DELETE_REASON = "langgraph delete"
"""The reason the audit record of a deleted item gives."""
_IGNORED_INDEX_KEYS = frozenset({"dims", "embed", "ann_index_config", "distance_type"})


class CogitoStore(BaseStore):
    """LangGraph's long-term memory store over a :class:`~cogito_lc.MemoryStore`.

    Agents built with LangGraph (``create_react_agent(store=...)``, LangMem's
    memory tools, any node taking ``store: BaseStore``) keep their memories in it;
    a query search ranks them with :class:`~cogito_lc.RecallB`, or with the
    two-stage :class:`~cogito_lc.CogitoRetriever` when ``llm`` is set.

    **How items are held.** Each item is one memory of ``memory``: its text is
    the item's index fields (``index["fields"]``, default ``["$"]``: the whole
    value as JSON) joined by newlines, and is what search embeds; its metadata
    holds the namespace (``lg_namespace``, plus one ``lg_ns<depth>`` key per
    label for prefix filters), the key, the value as JSON (``lg_value``, returned
    verbatim), whether it was indexed (``lg_indexed``) and the item's
    timestamps. The memory id of an item's first value is a stable hash of the
    store's scope, namespace and key (``lg_id`` holds it on every version).

    **Versions.** A ``put`` over an existing key never edits the memory holding
    the old value: the new value is written as a new memory (its id a hash of the
    item's and the replaced version's) that supersedes the old one, which stays
    stored, marked ``superseded_by``. ``get`` and ``search`` return the current
    value; :meth:`history` returns every value the key held, oldest first, as
    does ``MemoryStore.history`` for any version's id. ``delete`` (and ``put`` of
    None) forgets the item with every version
    (:meth:`MemoryStore.forget <cogito_lc.MemoryStore.forget>`: the lexical
    index too, the snapshot dropped, an audit record kept).
    A memory written another way that supersedes an item's current version
    (``MemoryStore.store(supersedes=...)``, or a ``judge`` on
    ``MemoryStore.add``) ends the item: ``get`` returns None and ``search``
    leaves it out, its memories stay stored, and the next ``put`` of the key
    starts it again, with a new ``created_at`` and a history of its own.

    **Namespaces and scopes.** Every item lies in ``memory``'s scope. With
    ``scope_keys``, namespace labels also set scope keys: ``{"user_id": 1}``
    puts the item of namespace ``("memories", "alice")`` in the scope
    ``user_id="alice"``, where ``MemoryStore.scoped``, the HTTP service and the
    CLI see it (a namespace shorter than a position leaves that key unset). A
    key fixed by ``memory``'s own scope cannot also come from the namespace.

    **Semantics.** Those of LangGraph's ``InMemoryStore`` where a caller can
    tell, with these differences: values are stored as JSON (tuples come back
    as lists, as from LangGraph's Postgres store); ``created_at`` is kept when
    an item is replaced, and the replaced value stays in its history; without a
    query, search lists items by creation time;
    with one, the items recall finds come first (``score`` is RecallB's blended
    score), then the matching items that are not indexed, and ``offset`` counts
    across both (pages of one query are slices of one ranking through the 100th
    result; a page reaching past it ranks a larger pool, so page by a larger
    ``limit`` there); ``put(..., index=False)`` stores an item no query ranks.
    ``index["embed"]`` and ``index["dims"]`` are ignored: the vector store embeds.
    Reads within a batch see the store as it was before the batch's writes.

    Example:
        ```python
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_core.vectorstores import InMemoryVectorStore

        from cogito_lc import CogitoStore, MemoryStore

        memory = MemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=32)))
        store = CogitoStore(memory, index={"fields": ["text"]}, scope_keys={"user_id": 1})
        store.put(("memories", "alice"), "tz", {"text": "Alice works in Lisbon time."})
        assert store.get(("memories", "alice"), "tz").value == {
            "text": "Alice works in Lisbon time."
        }
        [hit] = store.search(("memories",), query="Lisbon time")
        assert hit.key == "tz" and hit.score is not None
        assert memory.scoped({"user_id": "alice"}).count() == 1
        ```
    """

    __slots__ = (
        "_adapter",
        "_heads",
        "_heads_lock",
        "_lock",
        "fields",
        "llm",
        "memory",
        "retriever_kwargs",
        "scope_keys",
    )

    def __init__(
        self,
        memory: MemoryStore,
        *,
        index: IndexConfig | None = None,
        scope_keys: Mapping[str, int] | None = None,
        llm: BaseChatModel | None = None,
        retriever_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        """Build the store.

        Args:
            memory: The memory store items are written to and searched in.
            index: Which value fields are embedded (``{"fields": ["text"]}``);
                default: the whole value (``["$"]``).
            scope_keys: Scope key (``user_id``, ``agent_id``, ``run_id``) -> the
                position of the namespace label that sets it.
            llm: The filter model of the two-stage retriever; None ranks by
                RecallB alone.
            retriever_kwargs: More keywords for ``memory.as_retriever`` (fields of
                RecallB, and of the retriever and filter when ``llm`` is set);
                ``k`` and ``search_kwargs`` are set by each search.

        Raises:
            ValueError: On an unknown scope key, a negative position or one set
                by ``memory``'s scope, or an index config with an unknown key or
                fields that are not a list of paths.
            TypeError: If a ``retriever_kwargs`` keyword is a field of no component.
            NotImplementedError: If ``memory``'s vector store cannot be listed
                by metadata (Chroma and ``InMemoryVectorStore`` can).
        """
        self.memory = memory
        self.fields = _fields(index)
        self.scope_keys = _scope_keys(scope_keys, memory.scope)
        self.llm = llm
        self.retriever_kwargs = dict(retriever_kwargs or {})
        self._adapter: StoreAdapter = adapter_for(memory.vectorstore)
        self._adapter.check_filters_by_metadata("CogitoStore")
        self._lock = memory.write_lock()  # shared by every store over the vector store
        self._heads: dict[str, str] = {}
        self._heads_lock = threading.Lock()
        self._retriever(1, _items.prefix_clauses(()))  # a bad retriever keyword fails here

    # -- BaseStore -------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations: reads first, on the store as it was; then the writes in order."""
        ops = list(ops)
        for op in ops:
            for namespace in _namespaces_of(op):
                _items.check_namespace(namespace)
            if isinstance(op, PutOp) and not op.namespace:
                msg = "namespace of a put must hold at least one label, such as ('memories',)."
                raise InvalidNamespaceError(msg)
            if isinstance(op, (GetOp, PutOp)) and not isinstance(op.key, str):
                msg = f"key must be a str, got {type(op.key).__name__}."
                raise TypeError(msg)
        results: list[Result] = [self._read(op) for op in ops]
        writes: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, PutOp):
                writes[(op.namespace, op.key)] = op
        if writes:
            with self._lock:  # reads run unlocked; a replace reads, then writes
                self._write(list(writes.values()))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (the memory store's calls block).

        A thread cannot be stopped, so a batch that writes and is cancelled
        finishes its writes before the cancellation is raised: nothing is written
        after the caller is told it was cancelled.
        """
        ops = list(ops)
        work = asyncio.ensure_future(asyncio.to_thread(self.batch, ops))
        if not any(isinstance(op, PutOp) for op in ops):
            return await work
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            await _finished(work)
            raise

    # -- reads -------------------------------------------------------------------------

    def _read(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op.namespace, op.key)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        if isinstance(op, PutOp):
            return None
        msg = (
            f"unknown operation type {type(op).__name__}; "
            "use GetOp, PutOp, SearchOp or ListNamespacesOp."
        )
        raise TypeError(msg)

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        document = self._document(namespace, key)
        return _items.to_item(document) if document is not None else None

    def _document(self, namespace: tuple[str, ...], key: str) -> Document | None:
        """The memory holding the item's current value, or None (no item, or one that ended)."""
        last = self._last(namespace, key)
        return None if last is None or is_superseded(last.metadata) else last

    def _last(self, namespace: tuple[str, ...], key: str) -> Document | None:
        """The item's newest version, or None when it was never written (or was deleted).

        It is the item's current value unless a memory that is not a version of
        the item superseded it (``MemoryStore.store(supersedes=...)``, or a
        judge on ``MemoryStore.add``): that ends the item, and the next ``put``
        starts it again. The chain is followed from the version this store last
        saw (else the item's first): each version links the next by
        ``superseded_by``, or by its id (a hash of the item's and the replaced
        version's), which also finds a version whose write was cut before the
        one it replaces was marked. Past a few steps, the item's versions are
        listed instead.
        """
        scope = self._scope(namespace)
        base = _items.item_id(self.memory.scope, namespace, key)
        held = self._start(base, scope)
        for _ in range(_WALK):
            if held is None:
                return None
            newer = self._next(base, held, scope)
            if newer is None:
                return self._seen(base, held)
            held = newer
        newest = self._newest(base, scope)
        return None if newest is None else self._seen(base, newest)

    def _next(self, base: str, held: Document, scope: Scope) -> Document | None:
        """The version of item ``base`` written over ``held``, if any."""
        links = (held.metadata.get(SUPERSEDED_BY_KEY), _items.version_id(base, held.id or ""))
        for link in dict.fromkeys(str(link) for link in links if link):
            newer = self.memory.get(link, scope=scope)
            if newer is not None and newer.metadata.get(_items.ITEM_ID) == base:
                return newer
        return None

    def _start(self, base: str, scope: Scope) -> Document | None:
        """The version of item ``base`` this store last saw, if still stored, else its first."""
        with self._heads_lock:
            seen = self._heads.get(base)
        held = None if seen is None else self.memory.get(seen, scope=scope)
        if held is not None and held.metadata.get(_items.ITEM_ID) == base:
            return held
        return self.memory.get(base, scope=scope)

    def _seen(self, base: str, document: Document) -> Document:
        with self._heads_lock:
            self._heads.pop(base, None)
            self._heads[base] = document.id or base
            if len(self._heads) > _HEADS:
                del self._heads[next(iter(self._heads))]
        return document

    def _newest(self, base: str, scope: Scope) -> Document | None:
        """The version of item ``base`` no other version names as replaced (the newest written)."""
        ids = self._adapter.ids_in(self._where([{_items.ITEM_ID: base}]))
        versions = self._adapter.get(ids, scope.where())
        replaced = {old for doc in versions for old in superseded_ids(doc.metadata)}
        newest = [doc for doc in versions if doc.id not in replaced]
        return max(newest, key=lambda doc: str(doc.metadata.get(_items.UPDATED)), default=None)

    def history(self, namespace: tuple[str, ...], key: str) -> list[Item]:
        """Every value the item held, oldest first (the last is the current one).

        Empty when the item does not exist (never stored, or deleted: forgotten with
        every version).

        Example:
            ```python
            from langchain_core.embeddings import DeterministicFakeEmbedding
            from langchain_core.vectorstores import InMemoryVectorStore

            from cogito_lc import CogitoStore, MemoryStore

            memory = MemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=16)))
            store = CogitoStore(memory)
            store.put(("users", "alice"), "city", {"text": "Alice lives in Austin."})
            store.put(("users", "alice"), "city", {"text": "Alice lives in Denver."})
            values = [item.value["text"] for item in store.history(("users", "alice"), "city")]
            assert values == ["Alice lives in Austin.", "Alice lives in Denver."]
            current = store.get(("users", "alice"), "city")
            assert current is not None and current.value["text"] == "Alice lives in Denver."
            ```
        """
        _items.check_namespace(namespace)
        current = self._document(namespace, key)
        if current is None:
            return []
        versions = self.memory.history(current.id or "", scope=self._scope(namespace))
        return [_items.to_item(doc) for doc in versions]

    async def ahistory(self, namespace: tuple[str, ...], key: str) -> list[Item]:
        """:meth:`history` in a worker thread."""
        return await asyncio.to_thread(self.history, namespace, key)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        if op.limit < 1 or op.offset < 0:
            return []
        clauses = _items.prefix_clauses(op.namespace_prefix)
        if not op.query or not op.query.strip():  # a blank query ranks nothing: a listing
            found = self._scan(clauses, op.filter)
            return [_search_item(item) for item in found[op.offset : op.offset + op.limit]]
        wanted = op.offset + op.limit
        ranked = self._ranked(op.query, clauses, op.filter, wanted)
        if len(ranked) < wanted:
            unindexed = self._scan([*clauses, {_items.INDEXED: False}], op.filter)
            ranked.extend(_search_item(item) for item in unindexed[: wanted - len(ranked)])
        return ranked[op.offset : wanted]

    def _ranked(
        self,
        query: str,
        clauses: list[dict[str, Any]],
        conditions: dict[str, Any] | None,
        k: int,
    ) -> list[SearchItem]:
        clauses = [*clauses, {_items.INDEXED: True}]
        if conditions:
            matching = self._scan(clauses, conditions)
            ids = [_items.item_id(self.memory.scope, i.namespace, i.key) for i in matching]
            if not ids:
                return []
            clauses.append({_items.ITEM_ID: {"$in": ids}})
        documents = self._retriever(k, clauses).invoke(query)
        return [_search_item(_items.to_item(doc), _score(doc)) for doc in documents[:k]]

    def _retriever(self, k: int, clauses: list[dict[str, Any]]) -> BaseRetriever:
        fields: dict[str, Any] = {
            "fetch_k": max(_QUERY_POOL, k),
            "original_fetch_k": max(_QUERY_POOL, k),
            **self.retriever_kwargs,
            "k": k,
            "search_kwargs": {"filter": _items.where(clauses)},
        }
        if self.llm is not None:
            fields.setdefault("pool_size", min(100, max(50, k)))
            return self.memory.as_retriever("recall", llm=self.llm, **fields)
        return self.memory.as_retriever("recall_b", **fields)

    def _scan(self, clauses: list[dict[str, Any]], conditions: dict[str, Any] | None) -> list[Item]:
        """Every item matching the metadata clauses and value conditions, oldest first."""
        where = self._where(clauses)
        found: list[Item] = []
        offset = 0
        while True:
            page = self._adapter.page(where, _PAGE, offset)
            found.extend(
                item
                for item in (_items.to_item(doc) for doc in page if not is_superseded(doc.metadata))
                if _items.matches_filter(item.value, conditions)
            )
            if len(page) < _PAGE:
                break
            offset += _PAGE
        latest: dict[tuple[tuple[str, ...], str], Item] = {}
        for item in found:  # one value per key, should a replace have been cut short
            held = latest.get((item.namespace, item.key))
            if held is None or item.updated_at > held.updated_at:
                latest[(item.namespace, item.key)] = item
        return sorted(latest.values(), key=lambda i: (i.created_at, i.namespace, i.key))

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        held = {item.namespace for item in self._scan(_items.prefix_clauses(()), None)}
        namespaces = [
            namespace
            for namespace in held
            if all(_items.matches_namespace(c, namespace) for c in op.match_conditions or ())
        ]
        if op.max_depth is not None:
            namespaces = list({namespace[: op.max_depth] for namespace in namespaces})
        return sorted(namespaces)[op.offset : op.offset + op.limit]

    # -- writes ------------------------------------------------------------------------

    def _write(self, ops: list[PutOp]) -> None:
        """Apply puts and deletes, every one checked first; new items of a scope in one batch."""
        planned = [self._plan(op) for op in ops]
        fresh: dict[Scope, list[tuple[PutOp, Document]]] = {}
        for (scope, last, document), op in zip(planned, ops, strict=True):
            if document is None:
                self._delete(last, scope)
            elif last is None:
                fresh.setdefault(scope, []).append((op, document))
            else:
                self._put(op, document, scope, last)
        for scope, pending in fresh.items():
            self._write_new(pending, scope)

    def _write_new(self, pending: list[tuple[PutOp, Document]], scope: Scope) -> None:
        """Write the first versions of items in one batch; each alone should another be first."""
        try:
            self.memory.store_many([document for _, document in pending], scope=scope)
        except MemoryConflictError:  # another process wrote one of these items first
            for op, document in pending:
                last = self._last(op.namespace, op.key)
                if (
                    last is None
                    or last.metadata[_items.UPDATED] != document.metadata[_items.UPDATED]
                ):
                    self._put(op, document, scope, last)  # not written by this batch already

    def _put(self, op: PutOp, document: Document, scope: Scope, last: Document | None) -> None:
        """Write ``document`` as the item's newest version, after ``last``.

        When another writer got there first (``last`` was replaced or deleted, or
        the id was taken), the item is read again and replaced: the last write
        wins, as in LangGraph's stores.
        """
        for attempt in range(_WRITE_TRIES):
            if attempt:
                time.sleep(_RETRY_PAUSE * 2 ** (attempt - 1))
                last = self._last(op.namespace, op.key)
            try:
                written = self._write_version(document, last, scope)
            except (MemoryNotFoundError, MemoryConflictError) as exc:
                logger.debug("item %r was written meanwhile (%s); reading it again", op.key, exc)
                continue
            self._seen(document.metadata[_items.ITEM_ID], written)
            return
        msg = (
            f"item {op.key!r} in namespace {op.namespace!r} kept changing while being replaced "
            f"({_WRITE_TRIES} tries); retry the put."
        )
        raise RuntimeError(msg)

    def _write_version(self, document: Document, last: Document | None, scope: Scope) -> Document:
        """Store ``document`` after the item's ``last`` version (None: its first).

        A current ``last`` is superseded by it and passes on its ``created_at``;
        after an ended item (``last`` superseded by another memory) it starts the
        item again, superseding nothing.
        """
        base = document.metadata[_items.ITEM_ID]
        metadata = dict(document.metadata)
        current = last is not None and not is_superseded(last.metadata)
        if last is not None and current:
            metadata[_items.CREATED] = last.metadata[_items.CREATED]
        return self.memory.store(
            document.page_content,
            id=base if last is None else _items.version_id(base, last.id or ""),
            metadata=metadata,
            scope=scope,
            supersedes=[last.id or ""] if last is not None and current else None,
        )

    def _plan(self, op: PutOp) -> tuple[Scope, Document | None, Document | None]:
        """The scope, the item's newest version (see :meth:`_last`) and the memory to write.

        The memory to write is None for a delete.
        """
        check_unicode(op.key, name="key")
        scope = self._scope(op.namespace)
        last = self._last(op.namespace, op.key)
        if op.value is None:
            return scope, last, None
        return scope, last, self._memory_document(op, op.value)

    def _delete(self, last: Document | None, scope: Scope) -> None:
        """Forget the item with every version of it (and keep the audit record)."""
        if last is None or is_superseded(last.metadata):  # none, or ended by another memory
            return
        try:
            self.memory.forget(ids=[last.id or ""], scope=scope, reason=_DELETE_REASON)
        except MemoryNotFoundError:  # deleted meanwhile by another writer
            return

    def _memory_document(self, op: PutOp, value: Mapping[str, Any]) -> Document:
        raw = _items.dump_value(op.namespace, op.key, value)
        fields = self.fields if op.index is None else op.index
        texts = [] if fields is False else _items.index_texts(value, fields)
        text = "\n".join(texts)
        if len(text) > self.memory.max_text_chars:  # the value itself is kept whole
            logger.info(
                "indexing the first %d of %d characters of item %r in namespace %r",
                self.memory.max_text_chars,
                len(text),
                op.key,
                op.namespace,
            )
            text = text[: self.memory.max_text_chars]
        stamp = _items.now()
        doc_id = _items.item_id(self.memory.scope, op.namespace, op.key)
        metadata: dict[str, Any] = {
            _items.NAMESPACE: ".".join(op.namespace),
            _items.DEPTH: len(op.namespace),
            **{_items.LABEL.format(i): label for i, label in enumerate(op.namespace)},
            _items.KEY: op.key,
            _items.VALUE: raw,
            _items.INDEXED: bool(texts),
            _items.ITEM_ID: doc_id,
            _items.CREATED: stamp,
            _items.UPDATED: stamp,
        }
        # An item that is not indexed keeps its JSON as text, for listings; search skips it.
        content = text or raw[: self.memory.max_text_chars]
        return Document(page_content=content, metadata=metadata, id=doc_id)

    # -- scopes ------------------------------------------------------------------------

    def _scope(self, namespace: Sequence[str]) -> Scope:
        """The store's scope plus the keys the namespace's labels set."""
        keys = {k: namespace[i] for k, i in self.scope_keys.items() if i < len(namespace)}
        return as_scope({**self.memory.scope.metadata(), **keys})

    def _where(self, clauses: list[dict[str, Any]]) -> dict[str, Any]:
        scope = [{key: value} for key, value in self.memory.scope.items()]
        return _items.where([*scope, *clauses])


async def _finished(work: asyncio.Future[Any]) -> None:
    """Wait until ``work`` is done, through any further cancellation; log its failure.

    Its caller was cancelled, so a failed write has no one else to tell.
    """
    while not work.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait({work})
    error = None if work.cancelled() else work.exception()
    if error is not None:
        logger.error("a cancelled batch's writes failed: %s: %s", type(error).__name__, error)


def _namespaces_of(op: Op) -> list[tuple[str, ...]]:
    if isinstance(op, SearchOp):
        return [op.namespace_prefix]
    if isinstance(op, (GetOp, PutOp)):
        return [op.namespace]
    if isinstance(op, ListNamespacesOp):
        # "*" is a wildcard label here; a path deeper than the store holds matches nothing.
        paths = [c.path[: _items.MAX_DEPTH] for c in op.match_conditions or ()]
        return [tuple(label for label in path if label != "*") for path in paths]
    return []


def _search_item(item: Item, score: float | None = None) -> SearchItem:
    return SearchItem(
        namespace=item.namespace,
        key=item.key,
        value=item.value,
        created_at=item.created_at,
        updated_at=item.updated_at,
        score=score,
    )


def _score(document: Document) -> float | None:
    details = document.metadata.get(METADATA_KEY) or {}
    score = details.get("score")
    return float(score) if isinstance(score, (int, float)) else None


def _fields(index: IndexConfig | None) -> list[str]:
    if index is None:
        return ["$"]
    unknown = sorted(set(index) - {"fields"} - _IGNORED_INDEX_KEYS)
    if unknown:
        msg = f"index config has unknown key(s) {unknown}; CogitoStore reads only 'fields'."
        raise ValueError(msg)
    fields = index.get("fields") or ["$"]
    if isinstance(fields, str) or not all(isinstance(f, str) and f for f in fields):
        msg = f"index['fields'] must be a list of field paths, got {fields!r}."
        raise ValueError(msg)
    return list(fields)


def _scope_keys(scope_keys: Mapping[str, int] | None, fixed: Scope) -> dict[str, int]:
    keys = dict(scope_keys or {})
    for key, position in keys.items():
        if key not in SCOPE_KEYS:
            msg = f"scope_keys has unknown scope key {key!r}; use {list(SCOPE_KEYS)}."
            raise ValueError(msg)
        if not isinstance(position, int) or isinstance(position, bool) or position < 0:
            msg = f"scope_keys[{key!r}] must be a namespace position >= 0, got {position!r}."
            raise ValueError(msg)
        if getattr(fixed, key) is not None:
            msg = (
                f"scope_keys sets {key!r}, which the memory store's scope already fixes; "
                "drop it from scope_keys or build the MemoryStore without it."
            )
            raise ValueError(msg)
    return keys
