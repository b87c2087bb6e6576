from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.vectorstores import InMemoryVectorStore

from cogito_lc import MemoryStore
from cogito_lc.memory._grouping import group_memories
from cogito_lc.memory.snapshot import SnapshotBuilder, load_snapshot, render
from tests.unit_tests.conftest import HashEmbeddings
from tests.unit_tests.fakes import Gate, ScriptedChatModel, json_reply

MEMORIES = [
    "Auth tokens expire after 3600 seconds.",
    "Refresh tokens rotate on every use.",
    "Billing uses PostgreSQL 16 for multi-row transactions.",
    "Invoices are emailed on the first business day.",
]


@pytest.fixture
def memory(embeddings: HashEmbeddings, tmp_path: Path) -> MemoryStore:
    store = Chroma("snap", embeddings, persist_directory=str(tmp_path / "store"))
    memory = MemoryStore(store, scope={"user_id": "alice"})
    memory.store_many(MEMORIES)
    return memory


def test_pointer_mode_renders_stored_text_under_model_headings(memory: MemoryStore) -> None:
    listed = memory.list()
    auth = [i + 1 for i, d in enumerate(listed) if "token" in d.page_content.lower()]
    llm = json_reply(
        {
            "topics": [
                {"heading": "Auth", "items": [*auth, 99, -1, auth[0]]},
                {"heading": "## Billing\nInjected", "items": [0, 3]},
            ]
        }
    )
    snapshot = SnapshotBuilder.from_llm(llm).build(memory)
    assert snapshot.method == "pointer"
    lines = snapshot.text.splitlines()
    assert lines[0] == "## Auth"
    bullets = [line[2:] for line in lines if line.startswith("- ")]
    assert set(bullets) <= set(MEMORIES)
    assert {listed[n - 1].page_content for n in auth} <= set(bullets)
    assert "## Billing Injected" in lines
    assert len(bullets) == len(set(bullets))


def test_no_llm_groups_without_a_model(memory: MemoryStore) -> None:
    snapshot = SnapshotBuilder.from_llm(None).build(memory)
    assert snapshot.method == "grouped|fallback_no_llm"
    bullets = [line[2:] for line in snapshot.text.splitlines() if line.startswith("- ")]
    assert sorted(bullets) == sorted(MEMORIES)


def test_grouping_uses_kind_then_shared_keywords() -> None:
    docs = [
        Document(page_content="Always squash merge.", metadata={"kind": "rule"}),
        Document(page_content="Never push to main.", metadata={"kind": "rule"}),
        Document(page_content="Prefers dark mode.", metadata={"kind": "preference"}),
        Document(page_content="The deploy pipeline runs canaries."),
        Document(page_content="A deploy freeze holds on Fridays."),
        Document(page_content="Lunch is at noon."),
    ]
    assert group_memories(docs) == [
        ("deploy", [3, 4]),
        ("rule", [0, 1]),
        ("other", [5]),
        ("preference", [2]),
    ]


def test_unparseable_pointer_reply_falls_back_to_grouping(memory: MemoryStore) -> None:
    llm = FakeListChatModel(responses=["I think the topics are auth and billing."])
    snapshot = SnapshotBuilder.from_llm(llm).build(memory)
    assert snapshot.method == "grouped|fallback_parse_error"
    assert snapshot.text


@pytest.mark.parametrize("mode", ["pointer", "summary"])
def test_a_model_outlasting_the_timeout_is_left_for_grouping(
    memory: MemoryStore, mode: str
) -> None:
    gate = Gate(reply='{"topics": []}')
    builder = SnapshotBuilder.from_llm(ScriptedChatModel(replies=[gate]), mode=mode, timeout=0.2)

    started = time.monotonic()
    snapshot = builder.build(memory, dry_run=True)
    elapsed = time.monotonic() - started
    gate.release.set()

    assert gate.entered.is_set()
    assert elapsed < 5
    assert snapshot.method == "grouped|fallback_timeout"
    bullets = [line[2:] for line in snapshot.text.splitlines() if line.startswith("- ")]
    assert sorted(bullets) == sorted(MEMORIES)


@pytest.mark.parametrize("mode", ["pointer", "summary"])
def test_a_failing_model_is_left_for_grouping(memory: MemoryStore, mode: str) -> None:
    llm = ScriptedChatModel(replies=[ValueError("bad request")])
    snapshot = SnapshotBuilder.from_llm(llm, mode=mode, timeout=5).build(memory, dry_run=True)
    assert snapshot.method == "grouped|fallback_error"


def test_summary_mode_strips_think_blocks(memory: MemoryStore) -> None:
    llm = FakeListChatModel(responses=["<think>plan</think>## Auth\n- tokens last an hour"])
    snapshot = SnapshotBuilder.from_llm(llm, mode="summary").build(memory)
    assert snapshot.method == "summary"
    assert snapshot.text == "## Auth\n- tokens last an hour\n"


def test_saved_next_to_the_store_and_reused_until_it_grows(memory: MemoryStore) -> None:
    builder = SnapshotBuilder.from_llm(None)
    first = builder.build(memory)
    assert first.path is not None
    assert Path(first.path).read_text() == first.text
    loaded = load_snapshot(memory)
    assert loaded is not None
    assert (loaded.text, loaded.count) == (first.text, 4)
    assert builder.build(memory).method == "cached"
    memory.store("A fifth memory about deploy freezes on Fridays.")
    assert builder.build(memory).method == "grouped|fallback_no_llm"
    assert builder.build(memory, rebuild=True).count == 5


def test_dry_run_saves_nothing(memory: MemoryStore) -> None:
    snapshot = SnapshotBuilder.from_llm(None).build(memory, dry_run=True)
    assert snapshot.path is None
    assert load_snapshot(memory) is None


def test_runnable_invoke(memory: MemoryStore) -> None:
    snapshot = SnapshotBuilder.from_llm(None).invoke({"memory": memory, "dry_run": True})
    assert snapshot.sampled == 4


def test_render_respects_budgets() -> None:
    docs = [Document(page_content="word " * 100) for _ in range(50)]
    text = render([("All", list(range(50)))], docs, item_chars=40, max_chars=10_000)
    assert all(len(line) <= 42 for line in text.splitlines())
    assert render([("A", [0]), ("B", [1])], docs, item_chars=40, max_chars=60).count("##") == 1


def test_a_group_larger_than_the_budget_shows_its_first_items() -> None:
    docs = [Document(page_content=f"Note {i} about the billing migration.") for i in range(40)]
    small = [Document(page_content="Deploys freeze on Fridays.")]

    text = render([("notes.md", list(range(40))), ("ops", [40])], docs + small, 200, 300)

    assert text.startswith("## notes.md\n- Note 0 about the billing migration.")
    assert len(text) <= 300  # the final line break included
    assert 1 < text.count("\n- ") < 40


def test_empty_store(embeddings: HashEmbeddings) -> None:
    memory = MemoryStore(Chroma("empty-snap", embeddings))
    snapshot = SnapshotBuilder.from_llm(None).build(memory)
    assert (snapshot.text, snapshot.method, snapshot.path) == ("", "empty", None)


def test_a_delete_drops_the_saved_snapshot(memory: MemoryStore) -> None:
    builder = SnapshotBuilder.from_llm(None)
    builder.build(memory)
    [tokens] = [doc for doc in memory.list() if doc.page_content == MEMORIES[0]]
    memory.delete(tokens.id or "")
    assert load_snapshot(memory) is None
    assert MEMORIES[0] not in builder.build(memory).text


class _ForgetWhileAsked(FakeListChatModel):
    """A model that forgets a memory while it is asked (a forget landing mid-build)."""

    memory: Any = None
    forget_id: str = ""

    def _call(self, *args: Any, **kwargs: Any) -> str:
        if self.forget_id:
            self.memory.forget(ids=[self.forget_id])
            self.forget_id = ""
        return super()._call(*args, **kwargs)


def test_a_snapshot_built_across_a_forget_is_built_again_without_it(memory: MemoryStore) -> None:
    [tokens] = [doc for doc in memory.list() if doc.page_content == MEMORIES[0]]
    reply = json.dumps({"topics": [{"heading": "Notes", "items": [1, 2, 3, 4]}]})
    model = _ForgetWhileAsked(responses=[reply, reply], memory=memory, forget_id=tokens.id)
    snapshot = SnapshotBuilder.from_llm(model).build(memory)
    saved = load_snapshot(memory)
    assert saved is not None
    for text in (snapshot.text, saved.text):
        assert MEMORIES[0] not in text
        assert MEMORIES[1] in text


def test_forgetting_in_a_view_drops_the_snapshot_of_the_store_it_came_from(
    embeddings: HashEmbeddings, tmp_path: Path
) -> None:
    root = MemoryStore(InMemoryVectorStore(embeddings), data_dir=tmp_path / "state")
    alice = root.scoped({"user_id": "alice"})
    secret = alice.store("Alice's door code is 4711.")
    alice.store(MEMORIES[0])
    assert alice.state is not None
    assert alice.state.location("") != root.state.location("")  # type: ignore[union-attr]
    SnapshotBuilder.from_llm(None).build(root)
    alice.forget(ids=[secret.id or ""])
    assert load_snapshot(root) is None
    assert "4711" not in SnapshotBuilder.from_llm(None).build(root).text


def _files_holding(directory: Path, text: str) -> list[str]:
    return sorted(
        str(path.relative_to(directory))
        for path in directory.rglob("*")
        if path.is_file() and text in path.read_text(encoding="utf-8", errors="replace")
    )


@pytest.mark.parametrize("forget_from", ["root", "alice", "run", "delete", "delete_scope"])
def test_a_forget_deletes_every_views_snapshot_holding_it_on_disk(
    embeddings: HashEmbeddings, tmp_path: Path, forget_from: str
) -> None:
    root = MemoryStore(InMemoryVectorStore(embeddings), data_dir=tmp_path / "state")
    alice = root.scoped({"user_id": "alice"})
    run = alice.scoped({"run_id": "r1"})
    run_alone = root.scoped({"run_id": "r1"})  # reached another way, sees the memory too
    secret = run.store("My locker code is 4711 at the gym.")
    run.store(MEMORIES[0])
    for view in (root, alice, run, run_alone):
        assert "4711" in SnapshotBuilder.from_llm(None).build(view).text
    secret_id = secret.id or ""
    if forget_from == "root":
        root.forget(ids=[secret_id], scope={"user_id": "alice", "run_id": "r1"})
    elif forget_from == "alice":
        alice.forget(ids=[secret_id])
    elif forget_from == "run":
        run.forget(query="locker code")
    elif forget_from == "delete":
        alice.delete(secret_id)
    else:
        root.delete_scope({"user_id": "alice"})
    assert _files_holding(tmp_path / "state", "4711") == []


def _alice_in_her_own_folder(
    embeddings: HashEmbeddings, tmp_path: Path
) -> tuple[MemoryStore, MemoryStore, Document]:
    """A root store, alice's view keeping its state in ``alice/``, and her secret."""
    root = MemoryStore(InMemoryVectorStore(embeddings), data_dir=tmp_path / "state")
    alice = root.scoped({"user_id": "alice"}, data_dir=tmp_path / "alice")
    secret = alice.store("Alice's door code is 4711.")
    alice.store(MEMORIES[0])
    return root, alice, secret


def test_a_forget_deletes_the_snapshot_of_a_view_kept_in_its_own_folder(
    embeddings: HashEmbeddings, tmp_path: Path
) -> None:
    root, alice, secret = _alice_in_her_own_folder(embeddings, tmp_path)
    assert "4711" in SnapshotBuilder.from_llm(None).build(alice).text
    root.scoped({"user_id": "alice"}).forget(ids=[secret.id or ""])  # a sibling view forgets
    assert _files_holding(tmp_path / "alice", "4711") == []


@pytest.mark.parametrize(
    ("root_scope", "reached", "same_as"),
    [
        # a view reached through another keeps its state where the direct view does
        (None, [{"user_id": "alice"}, {"run_id": "r1"}], {"user_id": "alice", "run_id": "r1"}),
        # a view whose scope comes back to the root's keeps the root's state
        ({"user_id": "a"}, [{"user_id": "b"}, {"user_id": "a"}], None),
    ],
)
def test_every_view_of_one_scope_keeps_its_state_in_one_place(
    embeddings: HashEmbeddings,
    tmp_path: Path,
    root_scope: dict[str, str] | None,
    reached: list[dict[str, str]],
    same_as: dict[str, str] | None,
) -> None:
    root = MemoryStore(InMemoryVectorStore(embeddings), scope=root_scope, data_dir=tmp_path / "s")
    view = root
    for scope in reached:
        view = view.scoped(scope)
    expected = root if same_as is None else root.scoped(same_as)
    assert view.state is not None
    assert expected.state is not None
    assert view.state.location("snapshot.md") == expected.state.location("snapshot.md")


def test_a_view_snapshot_holding_what_its_root_forgot_is_not_served_again(
    embeddings: HashEmbeddings, tmp_path: Path
) -> None:
    root, alice, secret = _alice_in_her_own_folder(embeddings, tmp_path)
    built = SnapshotBuilder.from_llm(None).build(alice)
    assert "4711" in built.text
    assert sorted(built.sources) == sorted(d.id for d in alice.list())
    assert built.scope == {"user_id": "alice"}

    root.forget(ids=[secret.id or ""], scope={"user_id": "alice"})  # the root knows no view

    assert load_snapshot(alice) is None
    assert not (tmp_path / "alice" / "snapshot.md").exists()
    rebuilt = SnapshotBuilder.from_llm(None).build(alice)
    assert "4711" not in rebuilt.text
    assert MEMORIES[0] in rebuilt.text


def test_a_snapshot_saved_before_sources_were_kept_still_loads(memory: MemoryStore) -> None:
    SnapshotBuilder.from_llm(None).build(memory)
    assert memory.state is not None
    meta = json.loads(memory.state.read("snapshot.json") or "{}")
    del meta["sources"], meta["digest"]  # as an earlier release saved it
    memory.state.write({"snapshot.json": json.dumps(meta)})
    loaded = load_snapshot(memory)
    assert loaded is not None
    assert loaded.sources == []


def test_a_snapshot_saved_before_its_scope_was_kept_is_built_again(memory: MemoryStore) -> None:
    builder = SnapshotBuilder.from_llm(None)
    builder.build(memory)
    assert memory.state is not None
    meta = json.loads(memory.state.read("snapshot.json") or "{}")
    del meta["sources"], meta["scope"], meta["digest"]  # an earlier release's: whose scope?
    memory.state.write({"snapshot.json": json.dumps(meta)})

    assert load_snapshot(memory) is None
    assert builder.build(memory).method == "grouped|fallback_no_llm"


@pytest.mark.parametrize("bad", [{"scope": {"team": "x"}}, {"sources": None}])
def test_a_snapshot_with_unreadable_sources_is_ignored(
    memory: MemoryStore, bad: dict[str, Any]
) -> None:
    SnapshotBuilder.from_llm(None).build(memory)
    assert memory.state is not None
    meta = json.loads(memory.state.read("snapshot.json") or "{}")
    memory.state.write({"snapshot.json": json.dumps(meta | bad)})
    assert load_snapshot(memory) is None


def test_views_of_different_scopes_never_serve_each_others_snapshot(
    embeddings: HashEmbeddings, tmp_path: Path
) -> None:
    team = MemoryStore(Chroma("team", embeddings, persist_directory=str(tmp_path / "store")))
    alice, bob = team.scoped({"user_id": "alice"}), team.scoped({"user_id": "bob"})
    alice.store("Alice's bank PIN is 4821.")
    bob.store("Bob likes jazz.")
    builder = SnapshotBuilder.from_llm(None)
    assert "4821" in builder.build(alice).text

    assert load_snapshot(bob) is None
    bobs = builder.build(bob)
    assert (bobs.method, bobs.scope) == ("grouped|fallback_no_llm", {"user_id": "bob"})
    assert "4821" not in bobs.text
    assert load_snapshot(alice) is not None  # each kept its own


def test_a_snapshot_of_another_scope_in_one_state_is_not_served(memory: MemoryStore) -> None:
    builder = SnapshotBuilder.from_llm(None)
    builder.build(memory)
    memory.store("Bob likes jazz.", scope={"user_id": "bob"})

    assert load_snapshot(memory, {"user_id": "bob"}) is None
    bobs = builder.build(memory, scope={"user_id": "bob"})
    assert bobs.method != "cached"
    assert "Auth tokens" not in bobs.text


def test_a_snapshot_is_built_again_once_a_memory_of_it_is_edited_or_superseded(
    memory: MemoryStore,
) -> None:
    builder = SnapshotBuilder.from_llm(None)
    alice = memory.store("Alice's phone number is 555-0101.")
    memory.store("Alice lives in Austin.")
    assert "555-0101" in builder.build(memory).text

    memory.update(alice.id or "", "Alice's phone number is private.")
    assert load_snapshot(memory) is None
    redacted = builder.build(memory)
    assert "555-0101" not in redacted.text
    assert "private" in redacted.text

    austin = next(d for d in memory.list() if "Austin" in d.page_content)
    memory.store("Alice lives in Denver.", supersedes=[austin.id or ""])
    assert load_snapshot(memory) is None
    assert "Austin" not in builder.build(memory).text


def test_a_text_saved_apart_from_its_metadata_is_not_served(memory: MemoryStore) -> None:
    SnapshotBuilder.from_llm(None).build(memory)
    assert memory.state is not None
    assert load_snapshot(memory) is not None
    memory.state.write({"snapshot.md": "## A newer build\n- cut before its metadata\n"})

    assert load_snapshot(memory) is None  # a crash between the two files


def test_a_reader_during_rebuilds_always_gets_a_snapshot(memory: MemoryStore) -> None:
    replies = [
        json.dumps({"topics": [{"heading": f"Build {i}", "items": [1, 2]}]}) for i in range(31)
    ]
    builder = SnapshotBuilder.from_llm(FakeListChatModel(responses=replies))
    builder.build(memory, rebuild=True)
    done = threading.Event()
    reads: list[bool] = []

    def read() -> None:
        while not done.is_set():
            reads.append(load_snapshot(memory) is not None)

    reader = threading.Thread(target=read)
    reader.start()
    for _ in range(30):
        builder.build(memory, rebuild=True)
    done.set()
    reader.join()
    assert len(reads) > 0
    assert all(reads)


def test_a_snapshot_is_built_from_the_newest_memories(
    embeddings: HashEmbeddings, tmp_path: Path
) -> None:
    memory = MemoryStore(InMemoryVectorStore(embeddings), data_dir=tmp_path / "state")
    memory.store_many([f"Old note {i}." for i in range(8)])
    old = memory.store("An old fact, replaced.")
    memory.store("The newest fact.", supersedes=[old.id or ""])

    built = SnapshotBuilder(llm=None, sample_size=4).build(memory)

    assert built.sampled == 4
    assert "The newest fact." in built.text
    assert "Old note 0." not in built.text
    assert "replaced" not in built.text


def test_a_snapshot_text_with_crlf_line_breaks_is_served_from_its_file(
    memory: MemoryStore,
) -> None:
    llm = FakeListChatModel(responses=["## Auth\r\n- tokens expire after 3600 seconds\r\n"])
    builder = SnapshotBuilder.from_llm(llm, mode="summary")
    builder.build(memory)

    assert load_snapshot(memory) is not None
    assert builder.build(memory).method == "cached"


def test_a_view_keeps_its_state_where_the_service_keeps_that_user_s(memory: MemoryStore) -> None:
    from cogito_lc.memory.memory_store import scope_state_path
    from cogito_lc.memory.scope import as_scope

    root = MemoryStore(memory.vectorstore)
    view = root.scoped({"user_id": "bob"})
    assert root.state is not None
    assert view.state is not None
    wanted = root.state.child(scope_state_path(as_scope({"user_id": "bob"})))
    assert view.state.location("") == wanted.location("")


FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"
FLAG = "\U0001f1e9\U0001f1ea"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("x" * 17 + FAMILY + " family plan", "x" * 17),
        ("x" * 18 + FLAG + " Germany office", "x" * 18),
        ("x" * 18 + "e\u0301 accent decomposed", "x" * 18),
        ("x" * 17 + "\u0915\u094d\u0937\u093f devanagari", "x" * 17),
        ("x" * 18 + "\U0001f44d\U0001f3fd thumbs up", "x" * 18),
    ],
    ids=["zwj-sequence", "flag", "combining-accent", "conjunct", "skin-tone"],
)
def test_an_item_cut_never_splits_a_grapheme_cluster(text: str, kept: str) -> None:
    rendered = render([("Notes", [0])], [Document(page_content=text)], 20, 200)
    assert rendered == f"## Notes\n- {kept}\u2026\n"


def test_a_heading_cut_keeps_a_flag_whole() -> None:
    rendered = render([("h" * 79 + FLAG, [0])], [Document(page_content="note")], 20, 200)
    assert rendered.splitlines()[0] == "## " + "h" * 79


def test_a_summary_cut_keeps_flags_whole(memory: MemoryStore) -> None:
    start = "# Index\nB\u00fcros: "
    llm = FakeListChatModel(responses=[start + FLAG * 200])
    builder = SnapshotBuilder.from_llm(llm, mode="summary", max_chars=200)
    snapshot = builder.build(memory, dry_run=True)
    assert snapshot.text == start + FLAG * 92 + "\n"
