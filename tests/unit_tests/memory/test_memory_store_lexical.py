"""MemoryStore writes reach the corpus lexical index in the same call; recall never rebuilds it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_chroma import Chroma
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from cogito_lc import MemoryStore, RecallB
from cogito_lc.stores import Bm25LexicalIndex, SqliteLexicalIndex, bm25s_index
from tests.unit_tests.conftest import HashEmbeddings

RARE = "Error code E4711 means the ledger lock timed out."


@pytest.fixture(params=["persistent_chroma", "ephemeral_chroma", "in_memory"])
def store(
    request: pytest.FixtureRequest, tmp_path: Path, embeddings: HashEmbeddings
) -> Iterator[VectorStore]:
    if request.param == "in_memory":
        yield InMemoryVectorStore(embeddings)
        return
    directory = {"persist_directory": str(tmp_path / "chroma")}
    kwargs = directory if request.param == "persistent_chroma" else {}
    chroma = Chroma(f"unit-{uuid.uuid4().hex[:12]}", embeddings, **kwargs)
    yield chroma
    chroma.delete_collection()


def _lexical_only(memory: MemoryStore, **kwargs: Any) -> RecallB:
    """A retriever ranked by the corpus BM25 run alone."""
    retriever = memory.as_retriever(
        original_weight=0, fragment_weight=0, bm25_weight=0, cosine_weight=0, **kwargs
    )
    assert isinstance(retriever, RecallB)
    return retriever


def _lexical_ids(retriever: RecallB, query: str) -> list[str | None]:
    """What the retriever's corpus lexical run finds, in its scope."""
    sync = retriever.lexical_sync
    assert sync is not None
    return [d.id for d, _ in sync.search(query, 10, retriever.search_kwargs.get("filter"))]


def test_every_write_reaches_the_lexical_index_at_once(store: VectorStore) -> None:
    memory = MemoryStore(store, scope={"user_id": "alice"})
    retriever = _lexical_only(memory)
    memory.store("Routine planning note.")
    assert _lexical_ids(retriever, "E4711") == []
    memory.store(RARE, id="rare")
    assert retriever.invoke("E4711")[0].id == "rare"
    memory.update("rare", "Error code E5000 means the queue is full.")
    assert retriever.invoke("E5000")[0].id == "rare"
    assert _lexical_ids(retriever, "E4711 ledger") == []
    memory.delete("rare")
    assert _lexical_ids(retriever, "E5000 queue") == []
    memory.store_many(["Alpha zebra one.", "Beta zebra two."])
    assert len(_lexical_ids(retriever, "zebra")) == 2
    assert memory.delete_scope({"user_id": "alice"}) == 3
    assert _lexical_ids(retriever, "zebra planning") == []


def test_the_scope_filter_reaches_the_lexical_run(store: VectorStore) -> None:
    alice = MemoryStore(store, scope={"user_id": "alice"})
    bob = alice.scoped({"user_id": "bob"})
    alice.store(RARE, id="alice-rare")
    bob.store("Error code E4711 in bob's deployment.", id="bob-rare")
    assert _lexical_ids(_lexical_only(alice), "E4711") == ["alice-rare"]
    assert _lexical_ids(_lexical_only(bob), "E4711") == ["bob-rare"]
    assert [d.id for d in _lexical_only(bob).invoke("E4711")] == ["bob-rare"]


def test_recall_after_a_write_never_rebuilds(
    store: VectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = MemoryStore(store)
    retriever = memory.as_retriever()
    memory.store_many([f"memory number {i} about topic {i % 7}" for i in range(50)])
    retriever.invoke("topic 3")
    builds: list[int] = []
    original = bm25s_index.Bm25Index.__init__

    def counted(self: bm25s_index.Bm25Index, documents: Any) -> None:
        builds.append(len(documents))
        original(self, documents)

    monkeypatch.setattr(bm25s_index.Bm25Index, "__init__", counted)
    for i in range(5):
        memory.store(f"a fresh note {i} about topic 3")
        before = len(builds)
        assert retriever.invoke("fresh note topic 3")
        assert len(builds) == before, "the read path built an index"
    in_memory = isinstance(retriever.lexical_sync.index, Bm25LexicalIndex)  # type: ignore[union-attr]
    assert builds == ([51, 52, 53, 54, 55] if in_memory else [])


def test_a_persistent_store_restarts_on_its_saved_index(
    tmp_path: Path, embeddings: HashEmbeddings, caplog: pytest.LogCaptureFixture
) -> None:
    directory = str(tmp_path / "chroma")
    memory = MemoryStore(Chroma("restart", embeddings, persist_directory=directory))
    memory.store(RARE, id="rare")
    index = memory.as_retriever().lexical_sync.index  # type: ignore[attr-defined]
    assert isinstance(index, SqliteLexicalIndex)
    assert index.path.parent == Path(directory)
    index.close()

    reopened = MemoryStore(Chroma("restart", embeddings, persist_directory=directory))
    with caplog.at_level("WARNING"):
        assert _lexical_only(reopened).invoke("E4711")[0].id == "rare"
    assert "lexical index" not in caplog.text, "nothing to rebuild or reconcile"


def test_a_write_the_store_refuses_leaves_nothing_to_resync(
    tmp_path: Path, embeddings: HashEmbeddings, caplog: pytest.LogCaptureFixture
) -> None:
    directory = str(tmp_path / "chroma")
    memory = MemoryStore(Chroma("refused", embeddings, persist_directory=directory))
    memory.store(RARE, id="rare")
    with pytest.raises(Exception, match="metadata"):  # a key Chroma itself refuses
        memory.store("Tagged by hand.", metadata={"#tag": "x"})
    index = memory.as_retriever().lexical_sync.index  # type: ignore[attr-defined]
    assert isinstance(index, SqliteLexicalIndex)
    assert index.pending() == set()
    index.close()

    reopened = MemoryStore(Chroma("refused", embeddings, persist_directory=directory))
    with caplog.at_level("WARNING"):
        assert _lexical_only(reopened).invoke("E4711")[0].id == "rare"
    assert "interrupted" not in caplog.text


def test_warm_up_loads_the_model_and_the_postings_before_the_first_recall(
    tmp_path: Path, embeddings: HashEmbeddings
) -> None:
    directory = str(tmp_path / "chroma")
    memory = MemoryStore(Chroma("warm", embeddings, persist_directory=directory))
    memory.store(RARE, id="rare")
    memory.as_retriever().lexical_sync.index.close()  # type: ignore[attr-defined]

    reopened = MemoryStore(Chroma("warm", embeddings, persist_directory=directory))
    index = reopened.as_retriever().lexical_sync.index  # type: ignore[attr-defined]
    assert isinstance(index, SqliteLexicalIndex)
    assert not index.postings_ready
    asked = len(embeddings.query_calls)
    reopened.warm_up()
    assert index.postings_ready
    assert len(embeddings.query_calls) == asked + 1
    assert _lexical_only(reopened).invoke("E4711")[0].id == "rare"


async def test_awarm_up_does_the_same_in_a_worker_thread(embeddings: HashEmbeddings) -> None:
    memory = MemoryStore(InMemoryVectorStore(embeddings))
    asked = len(embeddings.query_calls)
    await memory.awarm_up()
    assert len(embeddings.query_calls) == asked + 1


def test_reindex_rebuilds_from_the_vector_store(store: VectorStore) -> None:
    memory = MemoryStore(store)
    memory.store("Original wording about pelicans.", id="m1")
    store.add_documents([memory.get("m1").model_copy(update={"page_content": "Now about herons."})])  # type: ignore[union-attr]
    retriever = _lexical_only(memory)
    assert memory.reindex() == 1
    assert _lexical_ids(retriever, "herons") == ["m1"]
    assert _lexical_ids(retriever, "pelicans") == []


def test_a_reconcile_that_finds_the_ids_equal_warns_nothing(
    embeddings: HashEmbeddings, caplog: pytest.LogCaptureFixture
) -> None:
    memory = MemoryStore(InMemoryVectorStore(embeddings))
    memory.store(RARE, id="rare")
    sync = memory.as_retriever().lexical_sync
    assert sync is not None
    count = sync.index.count

    def written_meanwhile() -> int:  # a write completes between the two counts
        memory.store("The on-call handover is on Mondays.", id="handover")
        return count()

    sync.index.count = written_meanwhile  # type: ignore[method-assign]
    with caplog.at_level("WARNING"):
        assert sync.reconcile() == (0, 0)
    assert "out of step" not in caplog.text


def test_a_forgotten_text_leaves_the_lexical_index_files(
    embeddings: HashEmbeddings, tmp_path: Path
) -> None:
    memory = MemoryStore(Chroma("disk", embeddings, persist_directory=str(tmp_path)))
    secret = memory.store("My passport number is XJ9QZ77 plughword.")
    memory.store_many([f"Filler memory number {i} about nothing." for i in range(40)])
    files = sorted(tmp_path.glob("cogito-lexical-*.sqlite3*"))
    assert any(b"plughword" in path.read_bytes() for path in files)

    memory.forget(ids=[secret.id or ""])

    assert memory.count() == 40
    held = [path.name for path in files if path.exists() and b"plughword" in path.read_bytes()]
    assert held == []
