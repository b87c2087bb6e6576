"""Several processes writing one SQLite FTS5 index file at once lose nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cogito_lc.stores import SqliteLexicalIndex

WRITER = """
import sys
from langchain_core.documents import Document
from cogito_lc.stores import SqliteLexicalIndex

path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
index = SqliteLexicalIndex(path)
for start in range(0, count, 5):
    index.upsert([
        Document(page_content=f"{name} wrote note {i} about pottery", id=f"{name}-{i}",
                 metadata={"user_id": name})
        for i in range(start, min(count, start + 5))
    ])
    index.delete([f"{name}-{start}"])
index.close()
"""


def test_two_processes_writing_at_once_lose_no_write(tmp_path: Path) -> None:
    path = tmp_path / "lexical.sqlite3"
    SqliteLexicalIndex(path).close()
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, "200"])
        for name in ("alpha", "beta")
    ]
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0]
    index = SqliteLexicalIndex(path)
    expected = {f"{name}-{i}" for name in ("alpha", "beta") for i in range(200) if i % 5}
    assert index.ids() == expected
    assert index.count({"user_id": "beta"}) == 160
    hits = index.search("beta pottery note 77", k=3, where={"user_id": "beta"})
    assert hits[0][0].id == "beta-77"
    index.close()
