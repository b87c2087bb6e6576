"""CogitoStore keeps replaced values as versions, over real embeddings and a persistent store.

All-MiniLM-L6-v2 and an embedded Chroma store on disk, reopened as a restarted process
would: the current value is what reads return, the old ones stay in history, and a
deleted item is gone with every version, from the vector store and the lexical index.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("langgraph.store.base")

from langchain_chroma import Chroma
from langchain_core.embeddings import Embeddings

from cogito_lc import MemoryStore
from cogito_lc.langgraph import CogitoStore

NAMESPACE = ("memories", "dana")


def _open(chroma_dir: Path, minilm: Embeddings, collection: str) -> CogitoStore:
    store = Chroma(collection, minilm, persist_directory=str(chroma_dir))
    return CogitoStore(MemoryStore(store), index={"fields": ["content"]}, scope_keys={"user_id": 1})


def test_versions_survive_a_restart_and_deletes_forget_them_all(
    chroma_dir: Path, minilm: Embeddings
) -> None:
    store = _open(chroma_dir, minilm, "lg-versions")
    store.put(NAMESPACE, "editor", {"content": "Dana edits code in Vim."})
    store.put(NAMESPACE, "editor", {"content": "Dana switched to VS Code for editing."})
    store.put(NAMESPACE, "phone", {"content": "Dana's phone number is 555-0101."})
    store.put(NAMESPACE, "team", {"content": "Dana works on the billing team."})

    reopened = _open(chroma_dir, minilm, "lg-versions")
    item = reopened.get(NAMESPACE, "editor")
    assert item is not None
    assert item.value == {"content": "Dana switched to VS Code for editing."}
    assert [i.value["content"] for i in reopened.history(NAMESPACE, "editor")] == [
        "Dana edits code in Vim.",
        "Dana switched to VS Code for editing.",
    ]
    [hit] = reopened.search(("memories",), query="which text editor does Dana use?", limit=1)
    assert hit.value == {"content": "Dana switched to VS Code for editing."}
    found = reopened.search(("memories",), query="Vim editor", limit=10)
    assert "Dana edits code in Vim." not in [h.value["content"] for h in found]

    reopened.delete(NAMESPACE, "phone")
    reopened.delete(NAMESPACE, "editor")
    again = _open(chroma_dir, minilm, "lg-versions")
    assert again.get(NAMESPACE, "phone") is None
    assert again.history(NAMESPACE, "editor") == []
    for query in ("what is Dana's phone number?", "which editor, Vim or VS Code?"):
        assert [h.key for h in again.search(("memories",), query=query)] == ["team"]
    dana = again.memory.scoped({"user_id": "dana"})
    assert [d.page_content for d in dana.list()] == ["Dana works on the billing team."]
    lexical = dana.as_retriever(k=10).invoke("555-0101 Vim", include_superseded=True)
    assert [d.page_content for d in lexical] == ["Dana works on the billing team."]
