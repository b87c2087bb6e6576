"""CogitoStore ranking with the two-stage retriever and the local llama.cpp model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("langgraph.store.base")

from langchain_chroma import Chroma

from cogito_lc import MemoryStore
from cogito_lc.langgraph import CogitoStore
from tests.integration_tests.langgraph.test_store_parity import MEMORIES


@pytest.mark.requires_llm
def test_a_filter_model_ranks_verbatim_items(
    persistent_chroma: Chroma, llm_chat_model: Callable[..., Any]
) -> None:
    store = CogitoStore(
        MemoryStore(persistent_chroma),
        index={"fields": ["text"]},
        llm=llm_chat_model(max_tokens=64),
        retriever_kwargs={"pool_size": 6, "structured_output": "json_object", "timeout": 120},
    )
    for key, value in MEMORIES.items():
        store.put(("team", "notes"), key, value)
    store.put(("team", "notes"), "raw", {"text": "unindexed"}, index=False)

    hits = store.search(("team",), query="how long do login tokens last?", limit=3)
    assert 1 <= len(hits) <= 3
    for hit in hits:
        assert hit.value == (MEMORIES.get(hit.key) or {"text": "unindexed"})
    ops = store.search(("team",), query="who is on call?", filter={"team": "ops"}, limit=5)
    assert {hit.key for hit in ops} <= {"deploy", "pager"}
