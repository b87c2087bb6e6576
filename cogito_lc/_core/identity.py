"""The identity of a memory: the key fusion, dedup and pointers know it by."""

from __future__ import annotations

import hashlib
import json

from langchain_core.documents import Document

__all__ = ["document_key"]


def document_key(document: Document) -> str:
    """The identity of a document: its ``id``, or a stable hash of its content.

    Documents without an id are keyed by a SHA-256 of their text and metadata,
    so the same stored memory found by two searches fuses into one entry,
    while two memories with different ids stay two even when their text is
    the same.

    Example:
        ```python
        from langchain_core.documents import Document

        from cogito_lc._core.identity import document_key

        assert document_key(Document(page_content="x", id="m1")) == "m1"
        assert document_key(Document(page_content="x")).startswith("sha256:")
        ```
    """
    if document.id:
        return document.id
    payload = json.dumps(
        [document.page_content, document.metadata], sort_keys=True, default=str
    ).encode()
    return "sha256:" + hashlib.sha256(payload).hexdigest()
