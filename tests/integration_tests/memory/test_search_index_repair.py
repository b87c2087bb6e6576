"""A persisted Chroma vector index that lost a row from its graph is repaired on start.

A process killed while Chroma writes its HNSW files can leave a row that is
stored (read by id, listed) but that no search reaches. The test makes that
state on disk for real: a store is written in another process until Chroma
persists its index, then the persisted graph is cut so that no neighbour list
points at a few rows. Building a MemoryStore over the store must find and
re-index them, and say so in the log.

Chroma's own start-up can still reach one of the cut rows (it re-links rows it
replays from its write-ahead log), so the rows under test are those a search in
a new process really misses, checked before the repair.
"""

from __future__ import annotations

import logging
import pickle
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from langchain_chroma import Chroma

from cogito_lc import MemoryStore
from cogito_lc.stores import ChromaAdapter
from tests.integration_tests.random_embeddings import RandomEmbeddings

ROWS = 1000
"""Chroma persists its HNSW index every 1,000 writes (its default sync threshold)."""
CUT = 6
"""Rows cut out of the graph; most of them, never all, stay out of every search."""

WRITER = textwrap.dedent(
    f"""
    import sys
    import time
    from pathlib import Path
    from langchain_chroma import Chroma
    from tests.integration_tests.random_embeddings import RandomEmbeddings

    def _persisted(directory):
        return sum(path.stat().st_size // 4 for path in Path(directory).glob("*/length.bin"))

    store = Chroma("memories", RandomEmbeddings(), persist_directory=sys.argv[1])
    for start in range(0, {ROWS}, 100):
        rows = range(start, start + 100)
        texts = [f"memory {{i}} of the ledger about item {{i * 7}}" for i in rows]
        ids = [f"m{{i}}" for i in rows]
        store.add_texts(texts, ids=ids, metadatas=[{{"row": i}} for i in rows])

    # Chroma persisted its graph after the first 100 rows; wait for the sync at {ROWS}.
    deadline = time.monotonic() + 60
    while _persisted(sys.argv[1]) < {ROWS} and time.monotonic() < deadline:
        store.similarity_search("memory", k=1)
        time.sleep(0.1)
    """
)

CHECKER = textwrap.dedent(
    """
    import sys
    from langchain_chroma import Chroma
    from tests.integration_tests.random_embeddings import RandomEmbeddings

    store = Chroma("memories", RandomEmbeddings(), persist_directory=sys.argv[1])
    missed = []
    for doc_id in filter(None, sys.argv[2].split(",")):
        i = int(doc_id[1:])
        hits = store.similarity_search(f"memory {i} of the ledger about item {i * 7}", k=3)
        if doc_id not in [doc.id for doc in hits]:
            missed.append(doc_id)
    print(",".join(missed))
    """
)


def _text(doc_id: str) -> str:
    i = int(doc_id[1:])
    return f"memory {i} of the ledger about item {i * 7}"


def _cut_from_graph(store_dir: Path, count: int) -> list[str]:
    """Cut ``count`` rows that live on level 0 only out of every neighbour list of the graph.

    Returns:
        The ids of the rows cut off, in id order.
    """
    segment = next(p.parent for p in store_dir.glob("*/index_metadata.pickle"))
    metadata = pickle.loads((segment / "index_metadata.pickle").read_bytes())  # noqa: S301 - written by the test's own store
    levels = (segment / "length.bin").read_bytes()  # upper-level link bytes per element
    data = bytearray((segment / "data_level0.bin").read_bytes())
    elements = len(levels) // 4
    assert elements == ROWS, f"Chroma persisted {elements} of {ROWS} rows of its graph"
    size = len(data) // elements  # links, then the vector, then the 8-byte label
    id_of = {label: doc_id for doc_id, label in metadata["id_to_label"].items()}
    level0_only = [
        element
        for element in range(elements)
        if struct.unpack_from("<I", levels, element * 4)[0] == 0
    ]
    cut = set(level0_only[100 : 100 + count])
    for element in range(elements):
        links = struct.unpack_from("<H", data, element * size)[0]
        kept = [
            link
            for link in struct.unpack_from(f"<{links}I", data, element * size + 4)
            if link not in cut
        ]
        struct.pack_into("<I", data, element * size, len(kept))
        struct.pack_into(f"<{len(kept)}I", data, element * size + 4, *kept)
    (segment / "data_level0.bin").write_bytes(bytes(data))
    labels = [struct.unpack_from("<Q", data, element * size + size - 8)[0] for element in cut]
    return sorted(id_of[label] for label in labels)


def _run(script: str, directory: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", script, str(directory), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return done.stdout.strip()


def _found_at_k3(store: Chroma, doc_id: str) -> bool:
    hits = store.similarity_search(_text(doc_id), k=3)
    return doc_id in [doc.id for doc in hits]


def test_rows_no_search_reaches_are_reindexed_on_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "store"
    _run(WRITER, directory)
    cut_off = _cut_from_graph(directory, CUT)
    cut = [doc_id for doc_id in _run(CHECKER, directory, ",".join(cut_off)).split(",") if doc_id]
    assert cut, f"every row cut from the graph ({cut_off}) is still found by a search"
    assert set(cut) <= set(cut_off)

    store = Chroma("memories", RandomEmbeddings(), persist_directory=str(directory))
    assert [doc.id for doc in store.get_by_ids(cut)] == cut
    backend = ChromaAdapter(store)
    assert backend.unsearchable(recent=0) == {}, "the window bounds what is checked"
    assert sorted(backend.unsearchable(recent=ROWS)) == cut
    with caplog.at_level(logging.WARNING, logger="cogito_lc.memory.memory_store"):
        memory = MemoryStore(store)
    assert (
        f"{len(cut)} stored memories were not found by a search for their own vector" in caplog.text
    )
    assert f"repaired, all {len(cut)} are found again" in caplog.text
    assert all(_found_at_k3(store, doc_id) for doc_id in cut)
    assert memory.count() == ROWS
    assert [doc.page_content for doc in store.get_by_ids(cut)] == [_text(d) for d in cut]

    assert _run(CHECKER, directory, ",".join(cut)) == "", "the repair holds after a restart"


def test_a_sound_index_is_left_alone(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    directory = tmp_path / "store"
    _run(WRITER, directory)
    store = Chroma("memories", RandomEmbeddings(), persist_directory=str(directory))
    with caplog.at_level(logging.WARNING, logger="cogito_lc.memory.memory_store"):
        assert MemoryStore(store).repair_search_index() == []
    assert "search index" not in caplog.text
