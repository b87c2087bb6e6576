"""Bulk-ingest a folder of notes into a MemoryStore."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from langchain_core.documents import Document
from tqdm.auto import tqdm

from cogito_lc._core.display import escape_controls
from cogito_lc.memory.loaders import split_markdown
from cogito_lc.memory.scope import Scope, ScopeLike, as_scope


class _Added(Protocol):
    @property
    def count(self) -> int: ...


class SeedTarget(Protocol):
    """What seeding needs of a memory store (:class:`~cogito_lc.MemoryStore` has it)."""

    @property
    def scope(self) -> Scope:
        """The store's default scope."""
        ...

    def stored_copies(
        self, texts: Sequence[str], *, scope: ScopeLike = None
    ) -> list[Document | None]:
        """The memory each text is stored as (None: not stored), asked before writing."""
        ...

    def add(self, text: str, *, scope: ScopeLike = None) -> _Added:
        """Extract facts from ``text`` and store them."""
        ...

    def store_many(self, items: Iterable[str | Document], *, scope: ScopeLike = None) -> list[str]:
        """Store ``items`` verbatim."""
        ...


__all__ = ["SeedSummary", "SeedTarget", "seed_directory"]

logger = logging.getLogger(__name__)


@dataclass
class SeedSummary:
    """The outcome of a seed run.

    Attributes:
        files: Files read.
        chunks: Memories the files split into.
        stored: Memories written (or that would be, on a dry run).
        skipped: Memories already in the store.
        failed: ``(path, reason)`` for each file that could not be read or stored.
        dry_run: Whether nothing was written.
    """

    files: int = 0
    chunks: int = 0
    stored: int = 0
    skipped: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    dry_run: bool = False

    def __str__(self) -> str:
        verb = "would store" if self.dry_run else "stored"
        return (
            f"{self.files} files, {self.chunks} chunks: {verb} {self.stored}, "
            f"skipped {self.skipped} already stored, {len(self.failed)} failed"
        )


def read_text_file(path: Path) -> str:
    """The file's text; raises ``ValueError`` with a reason for binary or non-UTF-8 files."""
    data = path.read_bytes()
    if b"\x00" in data:
        msg = "binary file (contains NUL bytes)"
        raise ValueError(msg)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"not UTF-8 text ({exc.reason} at byte {exc.start})"
        raise ValueError(msg) from exc


def seed_directory(
    memory: SeedTarget,
    path: str | Path,
    glob: str = "**/*.md",
    *,
    dry_run: bool = False,
    extract: bool = False,
    scope: ScopeLike = None,
    progress: bool = True,
) -> SeedSummary:
    """Split every matching file into memories and store the new ones.

    Files are split by markdown headings, then paragraphs
    (:func:`~cogito_lc.memory.loaders.split_markdown`). Ids are stable, so memories
    already stored are skipped and a second run stores nothing. With
    ``extract=True`` each chunk goes through :meth:`MemoryStore.add`. A file
    that cannot be read or decoded is reported in ``failed`` and skipped; it
    never aborts the run.

    Raises:
        FileNotFoundError: If ``path`` is not a directory.
    """
    root = Path(path)
    if not root.is_dir():
        msg = f"{root} is not a directory; pass the folder that holds your notes."
        raise FileNotFoundError(msg)
    target = as_scope(scope, memory.scope)
    summary = SeedSummary(dry_run=dry_run)
    files = sorted(p for p in root.glob(glob) if p.is_file())
    for file in tqdm(files, desc="seeding", unit="file", disable=not progress):
        summary.files += 1
        try:
            chunks = split_markdown(read_text_file(file), source=str(file.relative_to(root)))
        except (OSError, ValueError) as exc:
            summary.failed.append((str(file), str(exc)))
            logger.warning("seed: skipped %s: %s", escape_controls(str(file)), exc)
            continue
        _ingest(memory, file, chunks, target, summary, extract=extract)
    return summary


def _ingest(
    memory: SeedTarget,
    file: Path,
    chunks: list[Any],
    scope: Any,
    summary: SeedSummary,
    *,
    extract: bool,
) -> None:
    if not chunks:  # an empty file, or one of whitespace only
        return
    summary.chunks += len(chunks)
    try:
        held = memory.stored_copies([chunk.page_content for chunk in chunks], scope=scope)
        new = [chunk for chunk, same in zip(chunks, held, strict=True) if same is None]
        summary.skipped += len(chunks) - len(new)
        if summary.dry_run:
            summary.stored += len(new)
            return
        if not new:
            return
        if extract:
            for chunk in new:
                summary.stored += memory.add(chunk.page_content, scope=scope).count
        else:
            for chunk in new:
                chunk.id = None
            summary.stored += len(memory.store_many(new, scope=scope))
    except (ValueError, TypeError) as exc:
        summary.failed.append((str(file), str(exc)))
        logger.warning("seed: could not store %s: %s", escape_controls(str(file)), exc)
