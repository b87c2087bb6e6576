"""Version chains of memories: reading them and completing a supersession a crash cut short."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from langchain_core.documents import Document

from cogito_lc._core.timestamps import parse_timestamp
from cogito_lc._core.versions import (
    SUPERSEDED_AT_KEY,
    SUPERSEDED_BY_KEY,
    is_superseded,
    superseded_ids,
)
from cogito_lc.memory.scope import Scope
from cogito_lc.stores import StoreAdapter

__all__ = ["incomplete_supersessions", "superseded_marks", "version_chain"]

logger = logging.getLogger(__name__)

_MAX_CHAIN = 500
"""The most versions one chain is read to (a guard against a cycle written by hand)."""


def superseded_marks(new: Document) -> dict[str, dict[str, str]]:
    """The metadata each memory ``new`` supersedes gets: the new id and when it took over."""
    at = str(new.metadata.get("created_at") or "")
    return {
        old_id: {SUPERSEDED_BY_KEY: new.id or "", SUPERSEDED_AT_KEY: at}
        for old_id in superseded_ids(new.metadata)
    }


def version_chain(store: StoreAdapter, start: Document, scope: Scope) -> list[Document]:
    """Every version linked to ``start`` (what it replaced, what replaced it), oldest first.

    Links are followed both ways and only within ``scope``; the documents are the
    stored ones, as they are stored.
    """
    seen: dict[str, Document] = {start.id or "": start}
    frontier = [start]
    while frontier and len(seen) < _MAX_CHAIN:
        linked = {
            link
            for doc in frontier
            for link in (*superseded_ids(doc.metadata), doc.metadata.get(SUPERSEDED_BY_KEY))
            if isinstance(link, str) and link and link not in seen
        }
        frontier = store.get(sorted(linked), scope.where()) if linked else []
        seen.update((doc.id or "", doc) for doc in frontier)
    depth = _depths(seen)
    return sorted(seen.values(), key=lambda doc: (*_created(doc), depth[doc.id or ""]))


def _depths(chain: dict[str, Document]) -> dict[str, int]:
    """How many versions of the chain lie before each (breaks ties of equal ``created_at``)."""
    depth: dict[str, int] = {}

    def visit(doc_id: str, trail: frozenset[str]) -> int:
        if doc_id not in depth:
            earlier = [
                visit(old, trail | {doc_id})
                for old in superseded_ids(chain[doc_id].metadata)
                if old in chain and old not in trail
            ]
            depth[doc_id] = 1 + max(earlier, default=-1)
        return depth[doc_id]

    for doc_id in chain:
        visit(doc_id, frozenset())
    return depth


def incomplete_supersessions(
    store: StoreAdapter, documents: Sequence[Document]
) -> dict[str, dict[str, str]]:
    """The marks missing for supersessions ``documents`` record (cut short by a crash).

    A new memory is written with the ids it replaces before the replaced ones are
    marked; a memory whose replaced ones are not all marked by it is completed here.
    """
    wanted: dict[str, dict[str, str]] = {}
    for doc in documents:
        wanted.update(superseded_marks(doc))
    if not wanted:
        return {}
    held = {doc.id: doc for doc in store.get(sorted(wanted))}
    missing = {
        old_id: marks
        for old_id, marks in wanted.items()
        if old_id in held and not _marked_as(held[old_id], marks)
    }
    if missing:
        logger.warning(
            "versions: %d superseded memories were not marked (a write was cut short); "
            "marking them now",
            len(missing),
        )
    return missing


def _marked_as(doc: Document, marks: dict[str, str]) -> bool:
    return is_superseded(doc.metadata) and all(doc.metadata.get(k) for k in marks)


def _created(doc: Document) -> tuple[float]:
    created = parse_timestamp(doc.metadata.get("created_at"))
    return (created.timestamp() if created else float("-inf"),)
