"""The MemoryStore suite, once over every backend (Chroma, in-memory, Postgres, Qdrant).

Real stores and the real all-MiniLM-L6-v2 model; Postgres is a private pgserver
and Qdrant its embedded local mode on disk. Each test states one behaviour a
user relies on whatever the backend: verbatim writes and fidelity, scopes,
recall, dedup, versions, forgetting, filters and restarts.
"""

from __future__ import annotations

import math
import random

import pytest

from cogito_lc import MemoryStore, RecallB
from cogito_lc._core.metadata import METADATA_KEY
from cogito_lc.stores import adapter_for, lexical_sync_for
from tests.integration_tests.backends import Backend

FACTS = {
    "auth": "Auth tokens expire after 3600 seconds; refresh tokens rotate on every use.",
    "db": "We chose PostgreSQL 16 for billing because invoices need multi-row transactions.",
    "port": "The billing service listens on port 8083 in local development.",
    "test": "The user prefers pytest fixtures over unittest setUp methods.",
}


def _fill(memory: MemoryStore) -> dict[str, str]:
    """Store the facts; their ids by key."""
    return {
        key: memory.store(text, metadata={"topic": key, "n": n, "weight": n / 4}).id or ""
        for n, (key, text) in enumerate(FACTS.items())
    }


def test_writes_are_verbatim_and_reads_keep_id_text_and_metadata(backend: Backend) -> None:
    memory = backend.open(scope={"user_id": "alice"})
    stored = memory.store(
        "Tokens expire after 3600 s (\u00e9t\u00e9 \U0001f600  two spaces).",
        id="custom-id/with:odd chars",
        metadata={"n": 3, "ratio": 0.5, "flag": True, "tag": "x"},
    )
    assert stored.id == "custom-id/with:odd chars"
    fetched = memory.get("custom-id/with:odd chars")
    assert fetched is not None
    assert (fetched.id, fetched.page_content, fetched.metadata) == (
        stored.id,
        stored.page_content,
        stored.metadata,
    )
    [(hit, _)] = memory.search("when do tokens expire?", k=1)
    assert (hit.id, hit.page_content, hit.metadata) == (
        stored.id,
        stored.page_content,
        stored.metadata,
    )
    [recalled] = memory.as_retriever(k=1).invoke("when do tokens expire?")
    assert METADATA_KEY in recalled.metadata  # RecallB's scores, added beside the stored keys
    shown = {k: v for k, v in recalled.metadata.items() if k != METADATA_KEY}
    assert (recalled.id, recalled.page_content, shown) == (
        stored.id,
        stored.page_content,
        stored.metadata,
    )


def test_scopes_never_mix(backend: Backend) -> None:
    memory = backend.open()
    alice, bob = memory.scoped({"user_id": "alice"}), memory.scoped({"user_id": "bob"})
    _fill(alice)
    bob.store("Bob's production region is us-east-2 (Ohio).")
    assert (alice.count(), bob.count()) == (len(FACTS), 1)
    assert [d.page_content for d in bob.list()] == ["Bob's production region is us-east-2 (Ohio)."]
    for query in ("which port does billing use?", "production region"):
        docs = bob.as_retriever(k=5).invoke(query)
        assert {d.metadata["user_id"] for d in docs} == {"bob"}
        assert all(d.metadata["user_id"] == "alice" for d in alice.as_retriever(k=5).invoke(query))
    assert bob.get(alice.list()[0].id or "") is None
    assert alice.delete_scope({"user_id": "alice"}) == len(FACTS)
    assert alice.count() == 0
    assert bob.count() == 1


def test_recall_b_puts_the_right_memory_first(backend: Backend) -> None:
    memory = backend.open(scope={"user_id": "alice"})
    ids = _fill(memory)
    questions = {
        "how long do auth tokens last?": "auth",
        "which database does billing use?": "db",
        "what port does the billing service run on locally?": "port",
        "how does the user like to write test setup?": "test",
    }
    retriever = memory.as_retriever(k=3)
    for question, key in questions.items():
        assert retriever.invoke(question)[0].id == ids[key], question
    recall_b = RecallB(vectorstore=memory.vectorstore, k=2)
    assert recall_b.invoke("port 8083")[0].id == ids["port"]  # the lexical run finds the number


def test_the_same_text_twice_is_one_memory(backend: Backend) -> None:
    memory = backend.open(scope={"user_id": "alice"})
    first = memory.store("The staging database is reset every Sunday night.")
    again = memory.store("The staging database is reset every Sunday night.")
    assert again.id == first.id
    assert again.metadata["created_at"] == first.metadata["created_at"]
    assert memory.count() == 1


def test_an_edited_memorys_former_text_can_be_stored_again(backend: Backend) -> None:
    memory = backend.open(scope={"user_id": "alice"})
    first = memory.store("The budget cap is 40k EUR.")
    memory.update(first.id or "", "The budget cap is 50k EUR.")
    again = memory.store("The budget cap is 40k EUR.")
    twice = memory.store("The budget cap is 40k EUR.")
    assert again.id != first.id
    assert twice.id == again.id
    assert sorted(d.page_content for d in memory.list()) == [
        "The budget cap is 40k EUR.",
        "The budget cap is 50k EUR.",
    ]
    memory.delete(first.id or "")  # the edited memory goes: its former text stays one memory
    assert memory.store("The budget cap is 40k EUR.").id == again.id
    assert [d.id for d in memory.list()] == [again.id]
    [found] = memory.stored_copies(["The budget cap is 40k EUR."])
    assert found is not None
    assert found.id == again.id


def test_listing_keeps_the_order_of_writing_through_an_update(backend: Backend) -> None:
    memory = backend.open(scope={"user_id": "alice"})
    texts = [f"Runbook step {n}: check the {word} dashboard." for n, word in enumerate("abcdefgh")]
    ids = memory.store_many(texts)
    assert [d.page_content for d in memory.list()] == texts
    memory.update(ids[0], "Runbook step 0: check the status page first.")
    assert [d.id for d in memory.list()] == ids


def test_the_widest_integers_come_back_as_stored(backend: Backend) -> None:
    memory = backend.open(scope={"user_id": "alice"})
    doc = memory.store("Counters at their limits.", metadata={"hi": 2**63 - 1, "lo": -(2**63)})
    stored = memory.get(doc.id or "")
    assert stored is not None
    assert (stored.metadata["hi"], stored.metadata["lo"]) == (2**63 - 1, -(2**63))


FLOATS = {"f1e16": 1e16, "neg1e17": -1e17, "f2.5e20": 2.5e20, "one": 1.0, "tiny": 1e-300}


def _floats_of(metadata: dict[str, object]) -> dict[str, tuple[type, object]]:
    return {key: (type(metadata[key]), metadata[key]) for key in [*FLOATS, "tenth"]}


def test_floats_come_back_as_floats_and_can_be_written_back(backend: Backend) -> None:
    memory = backend.open(scope={"user_id": "alice"})
    stored = memory.store("Nightly backup size report.", metadata={**FLOATS, "tenth": 0.1})
    want = _floats_of(stored.metadata)
    assert want == {key: (float, value) for key, value in {**FLOATS, "tenth": 0.1}.items()}
    fetched = memory.get(stored.id or "")
    assert fetched is not None
    assert _floats_of(fetched.metadata) == want
    [(hit, _)] = memory.search("backup size report", k=1)
    assert _floats_of(hit.metadata) == want
    user = {key: fetched.metadata[key] for key in want}
    memory.update(stored.id or "", "Nightly backup size report (checked).", metadata=user)
    updated = memory.get(stored.id or "")
    assert updated is not None
    assert _floats_of(updated.metadata) == want


@pytest.mark.parametrize("key", ["chroma:document", "chroma:tag"])
def test_a_key_chroma_keeps_for_itself_is_refused_on_every_backend(
    backend: Backend, key: str
) -> None:
    memory = backend.open(scope={"user_id": "alice"})
    with pytest.raises(ValueError, match=f"metadata key '{key}' starts with 'chroma:'.*rename"):
        memory.store("Tagged by hand.", metadata={key: "x"})
    assert memory.count() == 0


def test_negative_zero_comes_back_as_zero_on_every_backend(backend: Backend) -> None:
    memory = backend.open(scope={"user_id": "alice"})
    stored = memory.store("The thermostat offset.", metadata={"offset": -0.0})
    fetched = memory.get(stored.id or "")
    assert fetched is not None
    offsets = [doc.metadata["offset"] for doc in (stored, fetched)]
    assert [(value, math.copysign(1.0, value)) for value in offsets] == [(0.0, 1.0)] * 2


def test_versions_supersede_without_rewriting(backend: Backend) -> None:
    memory = backend.open(scope={"user_id": "alice"})
    old = memory.store("I live in Austin, Texas.")
    new = memory.store("I live in Denver now.", supersedes=[old.id or ""])
    [(current, _)] = memory.search("where does the user live?", k=1)
    assert current.id == new.id
    everything = memory.search("where does the user live?", k=5, include_superseded=True)
    assert {doc.id for doc, _ in everything} == {old.id, new.id}
    history = memory.history(new.id or "")
    assert [d.page_content for d in history] == [old.page_content, new.page_content]
    assert history[0].metadata["superseded_by"] == new.id
    then = memory.search("where does the user live?", k=1, as_of=old.metadata["created_at"])
    assert [doc.id for doc, _ in then] == [old.id]


def test_recall_finds_the_current_version_behind_many_superseded_ones(backend: Backend) -> None:
    memory = backend.open(scope={"user_id": "alice"})
    _fill(memory)
    weights = random.Random(1).sample(range(50, 120), 40)  # the newest ranks 38th of 40 here
    versions = []
    for minute, weight in enumerate(weights):
        supersedes = [versions[-1].id or ""] if versions else None
        when = f"2026-01-01T00:{minute:02d}:00Z"
        versions.append(
            memory.store(f"Alice weighs {weight} kg now.", created_at=when, supersedes=supersedes)
        )
    question = "How much does Alice weigh?"
    assert [doc.id for doc in memory.as_retriever(k=1).invoke(question)] == [versions[-1].id]
    then = versions[20].metadata["created_at"]
    assert [doc.id for doc in memory.as_retriever(k=1).invoke(question, as_of=then)] == [
        versions[20].id
    ]


def test_forgotten_memories_are_gone_from_every_read(backend: Backend) -> None:
    memory = backend.open(scope={"user_id": "alice"})
    ids = _fill(memory)
    result = memory.forget(ids=[ids["port"]])
    assert result.ids == [ids["port"]]
    assert memory.get(ids["port"]) is None
    assert ids["port"] not in {d.id for d in memory.list()}
    assert ids["port"] not in {d.id for d, _ in memory.search("billing port 8083", k=10)}
    assert ids["port"] not in {d.id for d in memory.as_retriever(k=10).invoke("port 8083")}
    sync = lexical_sync_for(memory.vectorstore)
    if sync is not None:
        assert ids["port"] not in {d.id for d, _ in sync.search("8083", k=10)}
    assert FACTS["port"] not in str(memory.forget_log)
    if backend.persistent:
        reopened = backend.reopen(memory, scope={"user_id": "alice"})
        assert reopened.get(ids["port"]) is None
        assert ids["port"] not in {d.id for d in reopened.as_retriever(k=10).invoke("port 8083")}


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ({"topic": "db"}, {"db"}),
        ({"topic": {"$ne": "db"}}, {"auth", "port", "test"}),
        ({"topic": {"$in": ["auth", "port"]}}, {"auth", "port"}),
        ({"topic": {"$nin": ["auth", "port"]}}, {"db", "test"}),
        ({"$or": [{"topic": "db"}, {"topic": "test"}]}, {"db", "test"}),
        ({"$and": [{"user_id": "alice"}, {"n": {"$gte": 2}}]}, {"port", "test"}),
        ({"n": {"$lt": 1}}, {"auth"}),
        ({"weight": {"$gt": 0.2}}, {"db", "port", "test"}),
    ],
)
def test_filters_keep_what_they_say(
    backend: Backend, where: dict[str, object], expected: set[str]
) -> None:
    memory = backend.open(scope={"user_id": "alice"})
    ids = _fill(memory)
    adapter = adapter_for(memory.vectorstore)
    found = {doc.metadata["topic"] for doc in adapter.page(where, 100, 0)}
    assert found == expected
    assert adapter.count(where) == len(expected)
    recall = RecallB(vectorstore=memory.vectorstore, k=4, search_kwargs={"filter": where})
    assert {d.metadata["topic"] for d in recall.invoke("billing tokens tests")} <= expected
    assert set(adapter.ids_in(where)) == {ids[key] for key in expected}


def test_memories_survive_a_restart(backend: Backend) -> None:
    if not backend.persistent:
        pytest.skip("an in-memory store keeps nothing across a restart")
    memory = backend.open(scope={"user_id": "alice"})
    ids = _fill(memory)
    reopened = backend.reopen(memory, scope={"user_id": "alice"})
    assert reopened.count() == len(FACTS)
    assert reopened.as_retriever(k=1).invoke("port 8083")[0].id == ids["port"]
    assert [d.id for d in reopened.list(limit=2)] == [ids["auth"], ids["db"]]
