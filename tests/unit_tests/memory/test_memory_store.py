from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

import pytest
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from cogito_lc import FactExtractor, MemoryNotFoundError, MemoryStore, Scope
from cogito_lc.memory.memory_store import (
    MEMORY_ID_MAX_CHARS,
    READ_ID_MAX_CHARS,
    MemoryConflictError,
)
from cogito_lc.memory.scope import as_scope, memory_id
from tests.unit_tests.conftest import HashEmbeddings


@pytest.fixture
def memory(chroma: Chroma) -> MemoryStore:
    return MemoryStore(chroma, scope={"user_id": "alice"})


def test_store_writes_verbatim_with_created_at_and_scope(memory: MemoryStore) -> None:
    doc = memory.store("  Auth tokens expire after 3600 seconds.  ", metadata={"topic": "auth"})
    stored = memory.get(doc.id or "")
    assert stored is not None
    assert stored.page_content == "  Auth tokens expire after 3600 seconds.  "
    assert stored.metadata["topic"] == "auth"
    assert stored.metadata["user_id"] == "alice"
    assert stored.metadata["created_at"].endswith("+00:00")


def test_same_text_twice_is_one_memory_and_keeps_created_at(memory: MemoryStore) -> None:
    first = memory.store("Deploys freeze on Fridays.")
    second = memory.store("Deploys freeze on Fridays.")
    assert first.id == second.id
    assert second.metadata["created_at"] == first.metadata["created_at"]
    assert memory.count() == 1


def test_text_differing_only_in_whitespace_is_another_memory(memory: MemoryStore) -> None:
    indented = memory.store("def total(xs):\n    return sum(xs)")
    one_line = memory.store("def total(xs): return sum(xs)")
    crlf = memory.store("def total(xs):\r\n    return sum(xs)")
    assert indented.id == memory_id("def total(xs): return sum(xs)", Scope(user_id="alice"))
    assert [one_line.id, crlf.id] == [f"{indented.id}-2", f"{indented.id}-3"]
    assert one_line.page_content == "def total(xs): return sum(xs)"
    again = memory.store("def total(xs): return sum(xs)")
    assert (again.id, again.metadata["created_at"]) == (
        one_line.id,
        one_line.metadata["created_at"],
    )
    assert {doc.id: doc.page_content for doc in memory.list()} == {
        indented.id: "def total(xs):\n    return sum(xs)",
        one_line.id: "def total(xs): return sum(xs)",
        crlf.id: "def total(xs):\r\n    return sum(xs)",
    }


def test_a_given_id_held_by_text_with_other_whitespace_is_a_conflict(
    memory: MemoryStore,
) -> None:
    memory.store("name\tage\nbob\t42", id="table-1")
    with pytest.raises(MemoryConflictError, match="table-1"):
        memory.store("name age bob 42", id="table-1", metadata={"note": "flattened"})
    held = memory.get("table-1")
    assert held is not None
    assert (held.page_content, "note" in held.metadata) == ("name\tage\nbob\t42", False)
    assert memory.store("name\tage\nbob\t42", id="table-1").id == "table-1"
    assert memory.count() == 1


def test_same_text_in_two_scopes_is_two_memories(memory: MemoryStore) -> None:
    a = memory.store("Deploys freeze on Fridays.")
    b = memory.store("Deploys freeze on Fridays.", scope={"user_id": "bob"})
    assert a.id != b.id
    assert memory.count(Scope()) == 2


def test_ids_are_stable_hashes_of_scope_and_text() -> None:
    assert memory_id("a  b", Scope(user_id="x")) == memory_id("a b", Scope(user_id="x"))
    assert memory_id("a b", Scope(user_id="x")) != memory_id("a b", Scope(user_id="y"))


def test_an_id_longer_than_the_api_reads_is_refused_at_write(memory: MemoryStore) -> None:
    assert memory.store("The longest id fits.", id="x" * MEMORY_ID_MAX_CHARS).id
    with pytest.raises(ValueError, match=r"^id has 257 characters, over the 256"):
        memory.store("One character too many.", id="x" * 257)
    with pytest.raises(ValueError, match=r"^id has 300 characters"):
        memory.store_many([Document("Stored with it.", id="y" * 300)])
    assert memory.count() == 1
    assert MEMORY_ID_MAX_CHARS < READ_ID_MAX_CHARS


def test_a_metadata_key_that_is_not_a_str_is_named_as_the_problem(memory: MemoryStore) -> None:
    with pytest.raises(ValueError, match=r"^metadata keys must be str, got int \(1\)"):
        memory.store("Keyed by a number.", metadata={1: "x"})  # type: ignore[dict-item]
    assert memory.count() == 0


def test_explicit_id_is_kept(memory: MemoryStore) -> None:
    assert memory.store("text", id="my-id").id == "my-id"
    assert memory.get("my-id") is not None


def test_store_many_batches_embeddings_and_keeps_order(
    chroma: Chroma, embeddings: HashEmbeddings
) -> None:
    memory = MemoryStore(chroma, batch_size=2)
    embeddings.reset()
    texts = [f"memory number {i}" for i in range(5)]
    ids = memory.store_many([*texts, Document(page_content="with id", id="doc-1")])
    assert len(ids) == 6
    assert ids[-1] == "doc-1"
    assert [memory.get(i).page_content for i in ids[:5]] == texts  # type: ignore[union-attr]
    assert [len(call) for call in embeddings.document_calls] == [2, 2, 2]


def test_store_many_validates_everything_before_writing(memory: MemoryStore) -> None:
    with pytest.raises(ValueError, match="empty"):
        memory.store_many(["fine", "   "])
    assert memory.count() == 0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"text": ""}, ValueError, "empty"),
        ({"text": "x" * 101}, ValueError, "max_text_chars"),
        ({"text": "ok", "metadata": {"created_at": "x"}}, ValueError, "reserved"),
        ({"text": "ok", "metadata": {"user_id": "bob"}}, ValueError, "reserved"),
        ({"text": "ok", "metadata": {"tags": ["a"]}}, ValueError, "metadata\\['tags'\\]"),
        ({"text": "ok", "metadata": {"obj": object()}}, ValueError, "serialise"),
        ({"text": "ok", "scope": {"tenant": "x"}}, ValueError, "unknown scope key"),
        ({"text": "ok", "metadata": {"reading": float("nan")}}, ValueError, "finite number"),
        ({"text": "ok", "metadata": {"reading": float("-inf")}}, ValueError, "finite number"),
        ({"text": "ok", "metadata": {"big": 2**63}}, ValueError, "64-bit integer"),
        ({"text": "ok", "metadata": {"small": -(2**63) - 1}}, ValueError, "64-bit integer"),
        ({"text": "ok", "metadata": {"": 1}}, ValueError, "empty or starts with"),
        ({"text": "ok", "metadata": {"$in": 1}}, ValueError, "empty or starts with"),
        ({"text": 42}, TypeError, "text must be a str"),
    ],
)
def test_bad_input_is_a_clear_error_and_no_write(
    chroma: Chroma, kwargs: dict, error: type[Exception], match: str
) -> None:
    memory = MemoryStore(chroma, max_text_chars=100)
    with pytest.raises(error, match=match):
        memory.store(**kwargs)
    assert memory.count() == 0


def test_the_widest_integers_every_backend_stores_are_kept(memory: MemoryStore) -> None:
    doc = memory.store("Counters at their limits.", metadata={"hi": 2**63 - 1, "lo": -(2**63)})
    stored = memory.get(doc.id or "")
    assert stored is not None
    assert (stored.metadata["hi"], stored.metadata["lo"]) == (2**63 - 1, -(2**63))


@pytest.mark.parametrize("value", ["", "  ", "a\x00b", "a\ud800b"])
def test_a_scope_value_every_backend_cannot_hold_is_refused_however_given(value: str) -> None:
    with pytest.raises(ValueError, match="scope key 'run_id'"):
        Scope(run_id=value)
    with pytest.raises(ValueError, match="scope key 'run_id'"):
        as_scope({"run_id": value})


def test_update_reembeds_keeps_created_at_sets_updated_at(memory: MemoryStore) -> None:
    doc = memory.store("Search p95 budget is 300 ms.")
    updated = memory.update(doc.id or "", "Search p95 budget is 250 ms.")
    stored = memory.get(doc.id or "")
    assert stored is not None
    assert stored.page_content == "Search p95 budget is 250 ms."
    assert stored.metadata["created_at"] == doc.metadata["created_at"]
    assert "updated_at" in stored.metadata
    assert updated.id == doc.id
    found = memory.as_retriever(k=1).invoke("search budget 250")
    assert found[0].page_content == "Search p95 budget is 250 ms."


def test_update_with_metadata_sets_its_keys_and_keeps_the_others(memory: MemoryStore) -> None:
    doc = memory.store("Search p95 budget is 300 ms.", metadata={"topic": "perf", "old": 1})
    memory.update(doc.id or "", "Search p95 budget is 250 ms.", metadata={"topic": "search"})
    stored = memory.get(doc.id or "")
    assert stored is not None
    assert stored.metadata["topic"] == "search"
    assert stored.metadata["old"] == 1
    assert stored.metadata["user_id"] == "alice"
    assert stored.metadata["created_at"] == doc.metadata["created_at"]
    with pytest.raises(ValueError, match="reserved key"):
        memory.update(doc.id or "", "x", metadata={"user_id": "bob"})


def test_list_pages_and_delete(memory: MemoryStore) -> None:
    ids = memory.store_many([f"note {i}" for i in range(5)])
    page = memory.list(limit=2, offset=0)
    rest = memory.list(limit=10, offset=2)
    assert len(page) == 2
    assert {d.id for d in page} | {d.id for d in rest} == set(ids)
    memory.delete(ids[0])
    assert memory.get(ids[0]) is None
    assert memory.count() == 4
    with pytest.raises(ValueError, match="limit"):
        memory.list(limit=0)


def test_delete_of_unknown_id_is_an_error(memory: MemoryStore) -> None:
    with pytest.raises(MemoryNotFoundError, match="no memory with id 'nope'"):
        memory.delete("nope")


def test_delete_scope_needs_a_scope(memory: MemoryStore) -> None:
    memory.store_many(["a1", "a2"])
    memory.store("b1", scope={"user_id": "bob"})
    with pytest.raises(ValueError, match="at least one key"):
        memory.delete_scope({})
    assert memory.delete_scope({"user_id": "alice"}) == 2
    assert memory.count(Scope()) == 1


def test_user_a_cannot_read_find_or_delete_user_b(chroma: Chroma) -> None:
    alice = MemoryStore(chroma, scope={"user_id": "alice"})
    bob = MemoryStore(chroma, scope={"user_id": "bob"})
    secret = bob.store("Bob's vault code is 7781 for the billing vault.")
    alice.store("Alice prefers dark mode in the billing dashboard.")
    bob_id = secret.id or ""

    assert alice.get(bob_id) is None
    assert all(d.metadata["user_id"] == "alice" for d in alice.list(limit=100))
    assert alice.count() == 1
    for kind in ("recall_b", "recall"):
        found = alice.as_retriever(kind, k=10).invoke("vault code 7781 billing")
        assert found
        assert all(d.metadata["user_id"] == "alice" for d in found)
    with pytest.raises(MemoryNotFoundError):
        alice.delete(bob_id)
    with pytest.raises(MemoryNotFoundError):
        alice.update(bob_id, "overwritten")
    alice.delete_scope({"user_id": "alice"})
    assert bob.get(bob_id) is not None
    assert bob.get(bob_id).page_content == secret.page_content  # type: ignore[union-attr]


def test_retriever_combines_scope_with_user_filter(chroma: Chroma) -> None:
    memory = MemoryStore(chroma, scope={"user_id": "alice"})
    memory.store("billing note", metadata={"topic": "billing"})
    memory.store("auth note", metadata={"topic": "auth"})
    memory.store("billing note for bob", metadata={"topic": "billing"}, scope={"user_id": "bob"})
    retriever = memory.as_retriever(search_kwargs={"filter": {"topic": "billing"}})
    assert [d.page_content for d in retriever.invoke("billing note")] == ["billing note"]


def test_retriever_sees_writes_made_after_it_was_created(memory: MemoryStore) -> None:
    retriever = memory.as_retriever(
        original_weight=0, fragment_weight=0, bm25_weight=0, cosine_weight=0
    )
    memory.store("Routine planning note.")
    retriever.invoke("warm")
    memory.store("Error code E4711 means the ledger lock timed out.")
    assert "E4711" in retriever.invoke("E4711")[0].page_content


FACTS = json.dumps(
    [
        {"content": "Billing uses PostgreSQL 16.", "kind": "decision", "importance": 0.8},
        {"content": "Tokens expire after 3600 s.", "kind": "rule", "importance": 0.9},
    ]
)


def test_add_stores_each_fact_with_kind_importance_and_source(memory: MemoryStore) -> None:
    memory.extractor = FactExtractor.from_llm(FakeListChatModel(responses=[FACTS]))
    result = memory.add("A long agent transcript about billing and tokens.")
    assert result.method == "facts"
    assert result.count == 2
    stored = [memory.get(d.id or "") for d in result.memories]
    assert [d.page_content for d in stored if d] == [
        "Billing uses PostgreSQL 16.",
        "Tokens expire after 3600 s.",
    ]
    assert {d.metadata["kind"] for d in stored if d} == {"decision", "rule"}
    assert all(d and d.metadata["source_id"] == result.source_id for d in stored)


def test_add_falls_back_to_verbatim_when_output_is_unparseable(
    memory: MemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    memory.extractor = FactExtractor.from_llm(FakeListChatModel(responses=["not json at all"]))
    with caplog.at_level(logging.WARNING):
        result = memory.add("Keep this exact sentence.")
    assert result.method == "fallback_verbatim"
    assert result.extraction == "parse_error"
    assert [d.page_content for d in memory.list()] == ["Keep this exact sentence."]


def test_add_stores_nothing_when_the_model_answers_empty(memory: MemoryStore) -> None:
    memory.extractor = FactExtractor.from_llm(FakeListChatModel(responses=["[]"]))
    result = memory.add("Hello, how are you?")
    assert result.method == "no_facts"
    assert result.count == 0
    assert memory.count() == 0


@pytest.mark.parametrize(
    "reply",
    [
        '[{"content": "X happened.", "kind": "fact"}]',
        "[1, 2, 3]",
        '["a plain string"]',
        '{"unexpected": "shape"}',
    ],
)
def test_add_stores_the_text_verbatim_when_every_item_is_invalid(
    memory: MemoryStore, reply: str
) -> None:
    memory.extractor = FactExtractor.from_llm(FakeListChatModel(responses=[reply]))

    result = memory.add("Keep this exact sentence.")

    assert result.method == "fallback_verbatim"
    assert result.extraction == "parse_error"
    assert [d.page_content for d in memory.list()] == ["Keep this exact sentence."]


def test_add_stores_the_text_verbatim_when_the_model_raises(memory: MemoryStore) -> None:
    def crash(_: object) -> str:
        msg = "model crashed"
        raise RuntimeError(msg)

    memory.extractor = FactExtractor.from_llm(RunnableLambda(crash))

    result = memory.add("Keep this exact sentence.")

    assert result.method == "fallback_verbatim"
    assert result.extraction == "error"
    assert memory.get(result.source_id) is not None


def test_add_stores_nothing_for_an_explicit_empty_object(memory: MemoryStore) -> None:
    memory.extractor = FactExtractor.from_llm(FakeListChatModel(responses=['{"items": []}']))
    result = memory.add("Hello, how are you?")
    assert (result.method, result.count, memory.count()) == ("no_facts", 0, 0)


def test_add_without_extractor_stores_verbatim(memory: MemoryStore) -> None:
    result = memory.add("No model configured.")
    assert result.method == "fallback_no_llm"
    assert memory.get(result.source_id) is not None


def test_seed_splits_skips_known_and_reports_failures(memory: MemoryStore, tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# Auth\n\nTokens last 3600 s.\n\nRefresh rotates.\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "more.md").write_text("## Ops\n\nDeploys freeze on Fridays.\n")
    (tmp_path / "bad.md").write_bytes(b"\xff\xfe\x00\x00binary")
    (tmp_path / "latin.md").write_bytes("caf\xe9".encode("latin-1"))

    preview = memory.seed(tmp_path, dry_run=True, progress=False)
    assert (preview.files, preview.chunks, preview.stored) == (4, 3, 3)
    assert memory.count() == 0

    first = memory.seed(tmp_path, progress=False)
    assert (first.stored, first.skipped) == (3, 0)
    assert sorted(reason for _, reason in first.failed) == [
        "binary file (contains NUL bytes)",
        "not UTF-8 text (unexpected end of data at byte 3)",
    ]
    second = memory.seed(tmp_path, progress=False)
    assert (second.stored, second.skipped) == (0, 3)
    assert memory.count() == 3
    assert "3 chunks" in str(second)


@pytest.mark.parametrize("dry_run", [True, False])
def test_seed_passes_over_files_holding_no_paragraph(
    memory: MemoryStore, tmp_path: Path, dry_run: bool
) -> None:
    (tmp_path / "empty.md").write_text("")
    (tmp_path / "blank.md").write_text("\n   \n")
    (tmp_path / "notes.md").write_text("Deploys freeze on Fridays.\n")

    summary = memory.seed(tmp_path, dry_run=dry_run, progress=False)

    assert (summary.files, summary.chunks, summary.stored, summary.failed) == (3, 1, 1, [])


def test_seed_missing_directory(memory: MemoryStore, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not a directory"):
        memory.seed(tmp_path / "missing")


def test_an_id_held_by_another_scope_is_a_conflict_not_a_leak(chroma: Chroma) -> None:
    bob = MemoryStore(chroma, scope={"user_id": "bob"})
    alice = MemoryStore(chroma, scope={"user_id": "alice"})
    bob.store("Bob's vault code is 7781.", id="shared-id")
    with pytest.raises(MemoryConflictError, match="already used"):
        alice.store("Alice's note.", id="shared-id")
    with pytest.raises(MemoryConflictError):
        bob.store("Different text, same id.", id="shared-id")
    assert bob.get("shared-id").page_content == "Bob's vault code is 7781."  # type: ignore[union-attr]
    assert alice.count() == 0


def test_store_many_with_repeated_items_writes_one_memory(memory: MemoryStore) -> None:
    ids = memory.store_many(["same text", "same text", "other"])
    assert ids[0] == ids[1]
    assert memory.count() == 2


def test_concurrent_writes_of_the_same_memory_store_it_once(memory: MemoryStore) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=8) as pool:
        ids = list(pool.map(lambda _: memory.store("Deploys freeze on Fridays.").id, range(16)))
    assert len(set(ids)) == 1
    assert memory.count() == 1


@pytest.fixture(params=["in_memory", "chroma"])
def any_store(request: pytest.FixtureRequest, embeddings: HashEmbeddings) -> VectorStore:
    if request.param == "chroma":
        return request.getfixturevalue("chroma")
    return InMemoryVectorStore(embedding=embeddings)


@pytest.mark.parametrize("kind", ["recall_b", "recall"])
def test_scopes_hold_over_every_supported_store(any_store: VectorStore, kind: str) -> None:
    alice = MemoryStore(any_store, scope={"user_id": "alice"})
    bob = MemoryStore(any_store, scope={"user_id": "bob"})
    kept = alice.store("Alice keeps the billing vault key in the red drawer.")
    gone = alice.store("Alice moved the deploy freeze to Thursdays.")
    secret = bob.store("Bob keeps the billing vault key under the blue mat.")

    assert alice.get(kept.id or "") == kept
    assert alice.get(secret.id or "") is None
    assert [d.id for d in alice.list()] == [kept.id, gone.id]
    assert alice.count() == 2
    alice.delete(gone.id or "")
    assert alice.count() == 1
    assert bob.count() == 1

    found = alice.as_retriever(kind, k=1).invoke("billing vault key")
    assert [d.id for d in found] == [kept.id]
    found = alice.as_retriever(kind, k=5).invoke(
        "Bob keeps the billing vault key under the blue mat."
    )
    assert found
    assert all(d.metadata["user_id"] == "alice" for d in found)
    assert alice.delete_scope({"user_id": "alice"}) == 1
    assert bob.get(secret.id or "") == secret


def _edit(documents: list[Document]) -> None:
    for doc in documents:
        doc.metadata.pop("supersedes", None)
        doc.metadata.update({"user_id": "bob", "created_at": "1999-01-01T00:00:00Z"})


def test_documents_a_write_returns_are_not_the_stored_ones(
    any_store: VectorStore, caplog: pytest.LogCaptureFixture
) -> None:
    alice = MemoryStore(any_store, scope={"user_id": "alice"})
    alice.extractor = FactExtractor.from_llm(FakeListChatModel(responses=[FACTS]))
    recall = alice.as_retriever(k=1)  # its lexical index is kept up to date by the writes
    given = Document(page_content="The vault key is in the red drawer.", metadata={"k": 1})
    alice.store_many([given])
    given.metadata["user_id"] = "bob"
    stored = alice.store("Alice's door code is 4512.")
    added = alice.add("A transcript about billing and tokens.").memories
    old = alice.store("Alice lives in Austin.", created_at="2026-01-10T09:00:00Z")
    new = alice.store("Alice moved to Denver.", supersedes=[old.id or ""])
    updated = alice.update(stored.id or "", "Alice's door code is 4513.")
    before = {d.id: d.metadata for d in alice.list(include_superseded=True)}

    _edit([stored, *added, old, new, updated])

    assert {d.id: d.metadata for d in alice.list(include_superseded=True)} == before
    assert [d.page_content for d in alice.history(old.id or "")] == [
        "Alice lives in Austin.",
        "Alice moved to Denver.",
    ]
    assert alice.count(Scope(user_id="bob")) == 0
    assert [d.id for d in recall.invoke("Alice's door code is 4513.")] == [stored.id]
    caplog.clear()
    assert alice.as_retriever(k=5, scope={"user_id": "bob"}).invoke("door code") == []
    # the lexical index holds the memory as stored too: no mismatch with the store
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_retriever_joins_scope_and_user_filter_over_the_in_memory_store(
    embeddings: HashEmbeddings,
) -> None:
    memory = MemoryStore(InMemoryVectorStore(embedding=embeddings), scope={"user_id": "alice"})
    memory.store("billing note", metadata={"topic": "billing"})
    memory.store("billing auth note", metadata={"topic": "auth"})
    memory.store("billing note for bob", metadata={"topic": "billing"}, scope={"user_id": "bob"})
    by_dict = memory.as_retriever(search_kwargs={"filter": {"topic": "billing"}})
    assert [d.page_content for d in by_dict.invoke("billing note")] == ["billing note"]
    by_function = memory.as_retriever(
        search_kwargs={"filter": lambda doc: doc.metadata["topic"] == "auth"}
    )
    assert [d.page_content for d in by_function.invoke("billing note")] == ["billing auth note"]


class _NoFilterStore(VectorStore):
    """A vector store of a kind the package knows no metadata filter form for."""

    def __init__(self, embedding: HashEmbeddings) -> None:
        self._inner = InMemoryVectorStore(embedding=embedding)

    @property
    def embeddings(self) -> HashEmbeddings:
        return self._inner.embedding  # type: ignore[return-value]

    def add_texts(self, texts: Any, metadatas: Any = None, **kwargs: Any) -> list[str]:
        return self._inner.add_texts(texts, metadatas, **kwargs)

    def get_by_ids(self, ids: Any, /) -> list[Document]:
        return self._inner.get_by_ids(ids)

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return self._inner.similarity_search(query, k, **kwargs)

    @classmethod
    def from_texts(cls, texts: Any, embedding: Any, metadatas: Any = None, **kwargs: Any) -> Any:
        raise NotImplementedError


def test_a_scope_over_a_store_without_filters_is_rejected_when_built(
    embeddings: HashEmbeddings,
) -> None:
    store = _NoFilterStore(embeddings)
    with pytest.raises(ValueError, match=r"_NoFilterStore.*Supported: langchain_chroma.Chroma"):
        MemoryStore(store, scope={"user_id": "alice"})
    unscoped = MemoryStore(store)
    stored = unscoped.store("an unscoped memory")
    assert unscoped.get(stored.id or "") == stored
    with pytest.raises(ValueError, match="_NoFilterStore"):
        unscoped.as_retriever(scope={"user_id": "alice"})


def test_a_lone_surrogate_in_text_or_id_is_a_clear_error(memory: MemoryStore) -> None:
    with pytest.raises(ValueError, match="text holds a lone surrogate"):
        memory.store("bad \ud800 text")
    with pytest.raises(ValueError, match="id holds a lone surrogate"):
        memory.store("good text", id="id-\udfff")
    assert memory.count() == 0


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norms


def test_search_scores_by_cosine_and_stays_in_the_scope(chroma: Chroma) -> None:
    alice = MemoryStore(chroma, scope={"user_id": "alice"})
    bob = MemoryStore(chroma, scope={"user_id": "bob"})
    near = alice.store("billing vault key in the red drawer")
    far = alice.store("deploys freeze on fridays")
    bob.store("billing vault key under the blue mat")  # nearer to the query than `far`

    found = alice.search("billing vault key", k=5)
    assert [doc.id for doc, _ in found] == [near.id, far.id]
    query = HashEmbeddings.vector("billing vault key")
    for doc, score in found:
        assert score == pytest.approx(_cosine(query, HashEmbeddings.vector(doc.page_content)))
        assert doc.metadata["user_id"] == "alice"
    assert [doc.id for doc, _ in alice.search("billing vault key", k=5, threshold=0.5)] == [near.id]
    everyone = alice.search("billing vault key", k=5, scope=Scope())
    assert {doc.metadata["user_id"] for doc, _ in everyone} == {"alice", "bob"}


def test_search_over_every_supported_store(any_store: VectorStore) -> None:
    alice = MemoryStore(any_store, scope={"user_id": "alice"})
    kept = alice.store("Alice keeps the billing vault key in the red drawer.")
    alice.store("Alice moved the deploy freeze to Thursdays.")
    MemoryStore(any_store, scope={"user_id": "bob"}).store("billing vault key blue mat")

    found = alice.search("billing vault key", k=5)
    assert found[0][0].id == kept.id
    assert len(found) == 2
    assert all(doc.metadata["user_id"] == "alice" for doc, _ in found)
    scores = [score for _, score in found]
    assert all(score is not None for score in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]


def test_search_rejects_a_blank_query_and_a_bad_k(memory: MemoryStore) -> None:
    with pytest.raises(ValueError, match="text is empty"):
        memory.search("   ")
    with pytest.raises(ValueError, match="k"):
        memory.search("query", k=0)


def test_a_scoped_view_shares_the_store_and_reads_its_own_vocabulary(
    chroma: Chroma, tmp_path: Path
) -> None:
    extractor = FactExtractor.from_llm(FakeListChatModel(responses=["[]"]))
    team = MemoryStore(chroma, scope={"agent_id": "helpdesk"}, extractor=extractor, batch_size=7)
    saved = tmp_path / "saved"
    saved.mkdir()
    (saved / "vocab_map.json").write_text(json.dumps({"how fast": ["latency"]}), encoding="utf-8")
    fallback = {"money": ["billing"]}

    alice = team.scoped({"user_id": "alice"}, data_dir=saved, fallback_vocab_map=fallback)
    assert alice.scope == Scope(user_id="alice", agent_id="helpdesk")
    assert alice.vectorstore is chroma
    assert (alice.extractor, alice.batch_size, alice.data_dir) == (extractor, 7, saved)
    assert alice.vocab_map == {"how fast": ["latency"]}
    bob = team.scoped(Scope(user_id="bob"), data_dir=tmp_path / "none", fallback_vocab_map=fallback)
    assert bob.vocab_map == fallback
    assert team.scoped({"agent_id": "billing"}).scope == Scope(agent_id="billing")

    alice.store("Alice prefers answers in French.")
    assert (team.count(), alice.count(), bob.count()) == (1, 1, 0)


def test_the_recall_retriever_takes_filter_and_stage_one_settings(chroma: Chroma) -> None:
    from cogito_lc import CogitoRetriever

    memory = MemoryStore(chroma, scope={"user_id": "alice"}, vocab_map={"money": ["billing"]})
    llm = FakeListChatModel(responses=["[1]"])
    retriever = memory.as_retriever(
        "recall", llm=llm, timeout=3.0, structured_output="none", k=2, fetch_k=7, pool_size=20
    )
    assert isinstance(retriever, CogitoRetriever)
    assert (retriever.k, retriever.pool_size) == (2, 20)
    assert (retriever.pointer_filter.timeout, retriever.pointer_filter.structured_output) == (
        3.0,
        "none",
    )
    assert retriever.pointer_filter.llm is llm
    stage_one = retriever.recall_b
    assert (stage_one.k, stage_one.fetch_k) == (100, 7)
    assert stage_one.vocab_map == {"money": ["billing"]}
    assert stage_one.search_kwargs == {"filter": {"user_id": "alice"}}
    assert memory.as_retriever("recall").k == 10  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="'timout' \\(did you mean 'timeout'\\?\\)"):
        memory.as_retriever("recall", timout=3.0)
    named = memory.as_retriever("recall", tags=["memory"], metadata={"t": 1}, name="team")
    assert (named.tags, named.metadata, named.name) == (["memory"], {"t": 1}, "team")
    assert named.recall_b.tags is None  # type: ignore[attr-defined]


def test_a_memory_with_a_scope_value_no_scope_may_hold_can_still_be_deleted(
    embeddings: HashEmbeddings,
) -> None:
    store = InMemoryVectorStore(embeddings)
    store.add_documents(
        [
            Document(
                "Written by other code.", id="odd-1", metadata={"user_id": "a", "run_id": " "}
            ),
            Document("Also other code.", id="odd-2", metadata={"user_id": "a", "agent_id": 5}),
        ]
    )
    memory = MemoryStore(store)
    memory.delete("odd-1")
    assert memory.delete_scope({"user_id": "a"}) == 1
    assert memory.count() == 0


def test_seed_stores_a_note_again_once_its_memory_was_edited(
    memory: MemoryStore, tmp_path: Path
) -> None:
    (tmp_path / "notes.md").write_text("# Ops\n\nDeploys freeze on Fridays.\n")
    memory.seed(tmp_path, progress=False)
    [seeded] = memory.list()
    memory.update(seeded.id or "", "Deploys freeze on Fridays and Saturdays.")
    again = memory.seed(tmp_path, progress=False)
    assert (again.stored, again.skipped) == (1, 0)
    third = memory.seed(tmp_path, progress=False)
    assert (third.stored, third.skipped) == (0, 1)
    assert memory.count() == 2


def test_a_forget_cut_short_by_a_crash_keeps_its_audit_record(tmp_path: Path) -> None:
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        f"""
        import os, signal
        from langchain_chroma import Chroma
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from cogito_lc import MemoryStore

        embeddings = DeterministicFakeEmbedding(size=16)
        store = Chroma("crash", embeddings, persist_directory={str(tmp_path / "db")!r})
        memory = MemoryStore(store, data_dir={str(tmp_path / "state")!r})
        doc = memory.store("My phone is 555-0101.")
        print(doc.id, flush=True)
        MemoryStore._delete = lambda *args: os.kill(os.getpid(), signal.SIGKILL)
        memory.forget(ids=[doc.id], reason="user asked")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == -9, done.stderr
    doc_id = done.stdout.strip()
    records = [p.read_text(encoding="utf-8") for p in (tmp_path / "state").glob("*audit*")]
    assert len(records) == 1
    assert doc_id in records[0]
    assert "user asked" in records[0]


def test_deletes_that_fail_take_their_audit_record_back(
    embeddings: HashEmbeddings, tmp_path: Path
) -> None:
    memory = MemoryStore(InMemoryVectorStore(embeddings), data_dir=tmp_path / "state")
    doc = memory.store("My phone is 555-0101.")

    def unreachable(*args: Any, **kwargs: Any) -> None:
        msg = "store down"
        raise ConnectionError(msg)

    memory._store.delete = unreachable  # type: ignore[method-assign]
    with pytest.raises(ConnectionError):
        memory.forget(ids=[doc.id or ""])
    assert memory.get(doc.id or "") is not None
    assert memory.forget_log == []
    assert list((tmp_path / "state").glob("*audit*")) == []


def test_one_batch_never_writes_two_texts_under_one_id(memory: MemoryStore) -> None:
    with pytest.raises(MemoryConflictError, match="'k' is already used"):
        memory.store_many([Document("A text", id="k"), Document("B text", id="k")])
    edited = memory.store("X original")
    memory.update(edited.id or "", "X edited")
    moved = f"{edited.id}-2"  # where "X original" goes now
    with pytest.raises(MemoryConflictError, match=moved):
        memory.store_many([Document("X original"), Document("Y", id=moved)])
    assert sorted(d.page_content for d in memory.list()) == ["X edited"]


def test_seed_reports_a_chunk_too_long_and_goes_on(chroma: Chroma, tmp_path: Path) -> None:
    memory = MemoryStore(chroma, max_text_chars=100)
    (tmp_path / "a.md").write_text("x" * 299 + "\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("Deploys freeze on Fridays.\n", encoding="utf-8")
    summary = memory.seed(tmp_path, progress=False)
    assert summary.stored == 1
    assert [Path(name).name for name, _ in summary.failed] == ["a.md"]
