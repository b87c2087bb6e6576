"""A process killed mid-writes leaves the vector store and the lexical index reconcilable.

A writer process stores, updates and deletes memories through MemoryStore over a
persistent Chroma store (the lexical index is the SQLite FTS5 file beside it) and
prints each write once the call has returned (acknowledged). It is killed with
SIGKILL, either at a moment it chose itself between the vector-store write and
the lexical write of one call, or at an arbitrary moment. A MemoryStore started
afterwards in this process must hold every acknowledged write in both indexes,
and the two must agree on every memory, the interrupted one included.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from langchain_chroma import Chroma

from cogito_lc import MemoryStore
from cogito_lc.stores import SqliteLexicalIndex
from tests.integration_tests.random_embeddings import RandomEmbeddings

ROOT = Path(__file__).resolve().parents[3]

WRITER = textwrap.dedent(
    """
    import sys
    import time

    from langchain_chroma import Chroma

    from cogito_lc import MemoryStore
    from cogito_lc.stores import LexicalSync
    from tests.integration_tests.random_embeddings import RandomEmbeddings

    directory, pause_at = sys.argv[1], int(sys.argv[2])
    calls = {"n": 0}

    def pausing(method):
        def lexical_write(self, arg):
            calls["n"] += 1
            if calls["n"] == pause_at:  # the vector store holds the write; stop before ours
                print("between the two writes", flush=True)
                time.sleep(600)
            return method(self, arg)
        return lexical_write

    LexicalSync.upsert = pausing(LexicalSync.upsert)
    LexicalSync.delete = pausing(LexicalSync.delete)
    memory = MemoryStore(Chroma("memories", RandomEmbeddings(), persist_directory=directory))
    print("ready", flush=True)
    for i in range(1000):
        memory.store(f"note {i} mentions token{i}x", id=f"m{i}")
        print(f"store m{i} note {i} mentions token{i}x", flush=True)
        if i % 3 == 2:
            memory.update(f"m{i - 1}", f"note {i - 1} revised as token{i - 1}y")
            print(f"update m{i - 1} note {i - 1} revised as token{i - 1}y", flush=True)
        if i % 5 == 4:
            memory.delete(f"m{i - 4}")
            print(f"delete m{i - 4}", flush=True)
    """
)


def _start_writer(directory: Path, pause_at: int) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(directory), str(pause_at)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env=env,
    )


def _read_until(
    process: subprocess.Popen[str], done: Callable[[list[str]], bool], timeout: float = 240
) -> list[str]:
    assert process.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if done(lines):
            return lines
    pytest.fail(f"the writer stopped early or too slowly: {lines[-5:]}")


def _operations() -> list[str]:
    """The writer's writes, in order, as it prints them."""
    ops: list[str] = []
    for i in range(1000):
        ops.append(f"store m{i} note {i} mentions token{i}x")
        if i % 3 == 2:
            ops.append(f"update m{i - 1} note {i - 1} revised as token{i - 1}y")
        if i % 5 == 4:
            ops.append(f"delete m{i - 4}")
    return ops


def _acknowledged(lines: list[str]) -> tuple[dict[str, str | None], str]:
    """The text of every memory as the acknowledged writes left it (None: deleted),
    and the id of the write in flight when the writer was killed (it may or may not
    have reached the vector store)."""
    acked = [line for line in lines if line.split(" ")[0] in {"store", "update", "delete"}]
    ops = _operations()
    assert acked == ops[: len(acked)]
    in_flight = ops[len(acked)].split(" ")[1]
    state: dict[str, str | None] = {}
    for line in acked:
        action, _, rest = line.partition(" ")
        if action in {"store", "update"}:
            doc_id, _, text = rest.partition(" ")
            state[doc_id] = text
        elif action == "delete":
            state[rest] = None
    return state, in_flight


def _check_after_restart(
    directory: Path, acknowledged: tuple[dict[str, str | None], str]
) -> MemoryStore:
    store = Chroma("memories", RandomEmbeddings(), persist_directory=str(directory))
    memory = MemoryStore(store)
    stored = {doc.id: doc.page_content for doc in memory.list(limit=10_000)}
    state, in_flight = acknowledged
    for doc_id, text in state.items():
        if doc_id == in_flight:
            continue
        if text is None:
            assert doc_id not in stored, f"{doc_id} was deleted and acknowledged"
        else:
            assert stored.get(doc_id) == text, f"{doc_id}: acknowledged write missing"
    sync = memory.as_retriever().lexical_sync  # type: ignore[attr-defined]
    assert isinstance(sync.index, SqliteLexicalIndex)
    assert sync.index.ids() == set(stored), "the lexical index holds exactly the stored ids"
    assert sync.index.pending() == set()
    for doc_id, text in stored.items():
        token = text.split()[-1]
        hits = [(d.id, d.page_content) for d, _ in sync.search(token, 3)]
        assert hits == [(doc_id, text)], f"{doc_id}: lexical index and vector store disagree"
    return memory


@pytest.mark.parametrize(
    ("pause_at", "interrupted"), [(7, "delete m0"), (8, "store m5"), (9, "update m4")]
)
def test_sigkill_between_the_vector_and_the_lexical_write(
    tmp_path: Path, pause_at: int, interrupted: str, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "store"
    writer = _start_writer(directory, pause_at)
    try:
        lines = _read_until(writer, lambda seen: seen[-1] == "between the two writes")
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
    assert writer.returncode == -signal.SIGKILL
    assert not any(line.startswith(interrupted) for line in lines), "never acknowledged"
    assert _acknowledged(lines)[1] == interrupted.split(" ")[1]
    with caplog.at_level(logging.WARNING, logger="cogito_lc.stores.lexical_sync"):
        _check_after_restart(directory, _acknowledged(lines))
    assert "1 writes were interrupted before reaching it; re-synced" in caplog.text


def test_sigkill_at_an_arbitrary_moment(tmp_path: Path) -> None:
    directory = tmp_path / "store"
    writer = _start_writer(directory, pause_at=0)
    try:
        lines = _read_until(
            writer, lambda seen: sum(line.startswith("store") for line in seen) >= 60
        )
        time.sleep(0.05)  # let it get well into the next writes
    finally:
        writer.send_signal(signal.SIGKILL)
        out, _ = writer.communicate(timeout=30)
    lines += [line for line in out.splitlines() if line]
    _check_after_restart(directory, _acknowledged(lines))
