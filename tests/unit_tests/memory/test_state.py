from __future__ import annotations

import json
import threading
from pathlib import Path

from cogito_lc.memory.state import DirectoryStateStore
from tests.races import in_threads


def test_writers_in_threads_never_rename_one_anothers_file(tmp_path: Path) -> None:
    state = DirectoryStateStore(tmp_path)
    big = json.dumps({f"phrase {i}": [f"term{j}" for j in range(8)] for i in range(400)})
    small = json.dumps({"phrase": ["term"]})
    done = threading.Event()
    unreadable: list[str] = []

    def write(text: str) -> None:
        for _ in range(150):
            state.write({"vocab_map.json": text})

    def read() -> None:
        while not done.is_set():
            text = state.read("vocab_map.json")
            if text is not None and text not in {big, small}:
                unreadable.append(text[:80])

    reader = threading.Thread(target=read)
    reader.start()
    results = in_threads(lambda: write(big), lambda: write(small))
    done.set()
    reader.join()
    assert results == [None, None]
    assert unreadable == []
    assert state.read("vocab_map.json") in {big, small}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vocab_map.json"]
