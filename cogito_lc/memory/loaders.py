"""Turn markdown notes into memory documents: headings first, then paragraphs."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

from langchain_core.documents import Document
from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter

__all__ = ["markdown_memories", "split_markdown"]

_HEADERS = [("#", "h1"), ("##", "h2"), ("###", "h3")]
# MarkdownHeaderTextSplitter drops blank lines; a line holding only this mark survives it.
_PARAGRAPH_MARK = "\u00b6\u00b6cogito-paragraph\u00b6\u00b6"
_BLANK_LINES = re.compile(r"\n[ \t]*\n+")


def _stable_id(source: str, text: str) -> str:
    return hashlib.sha256(f"{source}\n{' '.join(text.split())}".encode()).hexdigest()[:32]


def split_markdown(text: str, *, source: str = "", max_chars: int = 1_000) -> list[Document]:
    r"""Split markdown into one document per paragraph, keeping its headings as metadata.

    Sections come from ``MarkdownHeaderTextSplitter``; each paragraph (a block
    separated by a blank line) becomes one memory, and a paragraph longer
    than ``max_chars`` is split further by ``RecursiveCharacterTextSplitter``.
    Ids are stable hashes of the source and the normalised text.

    Example:
        ```python
        from cogito_lc.memory.loaders import split_markdown

        docs = split_markdown("# Auth\n\nTokens expire after 3600 s.", source="notes.md")
        assert docs[0].page_content == "Tokens expire after 3600 s."
        assert docs[0].metadata["h1"] == "Auth"
        ```
    """
    marked = _BLANK_LINES.sub(f"\n{_PARAGRAPH_MARK}\n", text)
    sections = MarkdownHeaderTextSplitter(_HEADERS, strip_headers=True).split_text(marked)
    long_splitter = RecursiveCharacterTextSplitter(chunk_size=max_chars, chunk_overlap=0)
    docs: list[Document] = []
    for section in sections:
        for paragraph in section.page_content.split(_PARAGRAPH_MARK):
            lines = [line.rstrip() for line in paragraph.strip().splitlines()]
            for chunk in long_splitter.split_text("\n".join(lines).strip()):
                metadata = (
                    {**section.metadata, "source": source} if source else dict(section.metadata)
                )
                docs.append(
                    Document(page_content=chunk, metadata=metadata, id=_stable_id(source, chunk))
                )
    return docs


def markdown_memories(directory: str | Path, glob: str = "**/*.md") -> Iterator[Document]:
    """Yield the memories of every markdown file under ``directory`` matching ``glob``.

    Raises:
        FileNotFoundError: If ``directory`` does not exist.
    """
    root = Path(directory)
    if not root.is_dir():
        msg = f"{root} is not a directory; pass the folder that holds your markdown notes."
        raise FileNotFoundError(msg)
    for path in sorted(root.glob(glob)):
        if path.is_file():
            yield from split_markdown(path.read_text(encoding="utf-8"), source=path.name)
