"""Control characters in memories: stored verbatim, escaped in log lines; NUL refused."""

from __future__ import annotations

import logging
import re

import pytest
from langchain_chroma import Chroma

from cogito_lc import MemoryStore

TEXT = "BEL\x07 \x1b[31mred\x1b[0m \x1b]0;title\x07 invoice\u202egnp.exe\u202c tab\tend\r\n"
METADATA = {"note": "\x1b[2J\u2066isolated\u2069 \x1f", "plain": "ok"}
RAW_CONTROLS = ("\x00", "\x1b", "\x07", "\u202e", "\u2066")


@pytest.fixture
def memory(chroma: Chroma) -> MemoryStore:
    return MemoryStore(chroma, scope={"user_id": "agent"})


def test_text_and_metadata_come_back_byte_for_byte(memory: MemoryStore) -> None:
    stored = memory.store(TEXT, metadata=METADATA)
    assert stored.page_content == TEXT
    assert stored.id is not None
    fetched = memory.get(stored.id)
    assert fetched is not None
    assert fetched.page_content.encode() == TEXT.encode()
    assert {key: fetched.metadata[key] for key in METADATA} == METADATA
    listed = [doc for doc in memory.list() if doc.id == stored.id]
    assert [doc.page_content for doc in listed] == [TEXT]
    found = memory.search("invoice red title", k=1)
    assert found[0][0].page_content == TEXT


@pytest.mark.parametrize(
    ("text", "metadata", "named"),
    [
        ("port\x008083", None, "text holds a NUL character"),
        ("port 8083", {"team": "web\x00"}, "metadata['team'] holds a NUL character"),
    ],
)
def test_a_nul_character_is_refused_on_every_store(
    memory: MemoryStore, text: str, metadata: dict[str, str] | None, named: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(named)):
        memory.store(text, metadata=metadata)
    assert memory.count() == 0


def test_a_forget_reason_is_escaped_in_the_log(
    memory: MemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    stored = memory.store("The office wifi password is on the fridge.")
    assert stored.id is not None
    reason = "user asked\n2026-01-01 INFO forged line \x1b[31m\u202e"
    with caplog.at_level(logging.INFO, logger="cogito_lc.memory.memory_store"):
        result = memory.forget(ids=[stored.id], reason=reason)
    assert result.audit["reason"] == reason  # the audit record keeps it verbatim
    lines = [r.getMessage() for r in caplog.records if "forgot" in r.getMessage()]
    assert len(lines) == 1
    assert not [c for c in (*RAW_CONTROLS, "\n") if c in lines[0]]
    assert "user asked\\n2026-01-01 INFO forged line \\x1b[31m\\u202e" in lines[0]
