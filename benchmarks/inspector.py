"""Memory inspector benchmark: page weight and time to first view on 10,000 memories.

Writes ``--memories`` memories (default 10,000) into an embedded Chroma store in a
temporary directory with hashing embeddings (384 dimensions, as MiniLM: loading
speed only, no model), starts ``python -m cogito_lc.service.server`` on it (a token,
127.0.0.1), then in Debian's chromium (Playwright, ``executable_path``, a cold
profile) logs in and measures, over ``--runs`` cold runs:

- the login page, cold: its load time and the bytes it transferred (the page, its
  stylesheet and the vendored htmx, headers included, from the browser's Resource
  Timing);
- the first view: from submitting the login form to the scopes page loaded (the
  stylesheet and htmx now come from the browser's cache), and its bytes;
- the memories page (newest 50 of the scope) and a recall page, each from the
  navigation to its load event, and their bytes.

Usage:
    python benchmarks/inspector.py [--memories 10000] [--runs 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration_tests.service_process import start_service  # noqa: E402

TOKEN = "inspector-benchmark-token"  # noqa: S105 - a local benchmark value
SUBJECTS = ["billing", "auth", "search", "deploys", "the gateway", "backups", "the CI runner"]
FACTS = [
    "listens on port {n}",
    "times out after {n} ms",
    "is owned by team {n}",
    "was migrated in sprint {n}",
    "keeps {n} days of logs",
    "needs {n} approvals to change",
]
_BYTES = (
    "performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))"
    ".reduce((sum, e) => sum + e.transferSize, 0)"
)


def _load(store: Path, memories: int) -> float:
    from langchain_chroma import Chroma

    from cogito_lc import MemoryStore
    from cogito_lc.bench.hash_embeddings import HashEmbeddings

    rng = random.Random(7)
    texts = [
        f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(FACTS).format(n=rng.randint(1, 99_999))}"
        f" (note {i})."
        for i in range(memories)
    ]
    chroma = Chroma("cogito_memory", HashEmbeddings(), persist_directory=str(store))
    memory = MemoryStore(chroma, scope={"user_id": "agent"})
    started = time.perf_counter()
    memory.store_many(texts, batch_size=500)
    return time.perf_counter() - started


def _view(page: Any, url: str) -> tuple[float, int]:
    started = time.perf_counter()
    page.goto(url, wait_until="load")
    return (time.perf_counter() - started) * 1000, int(page.evaluate(_BYTES))


def _run(browser: Any, base_url: str) -> dict[str, Any]:
    context = browser.new_context()
    page = context.new_page()
    login_ms, login_bytes = _view(page, f"{base_url}/ui/login")
    page.fill("#token", TOKEN)
    started = time.perf_counter()
    page.click("#login")
    page.wait_for_url("**/ui/scopes", wait_until="load")
    first_ms = (time.perf_counter() - started) * 1000
    first_bytes = int(page.evaluate(_BYTES))
    count = page.inner_text("#scopes td.num")
    memories_ms, memories_bytes = _view(page, f"{base_url}/ui/memories")
    recall_ms, recall_bytes = _view(page, f"{base_url}/ui/recall?q=which+port+does+billing+use")
    context.close()
    return {
        "count_shown": count,
        "login_ms": login_ms,
        "login_bytes": login_bytes,
        "first_view_ms": first_ms,
        "first_view_bytes": first_bytes,
        "memories_ms": memories_ms,
        "memories_bytes": memories_bytes,
        "recall_ms": recall_ms,
        "recall_bytes": recall_bytes,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    chromium = shutil.which("chromium")
    if chromium is None:
        print("Debian's chromium is needed: make setup-browser", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="cogito-inspector-") as scratch:
        store = Path(scratch) / "store"
        load_s = _load(store, args.memories)
        print(f"loaded {args.memories:,} memories in {load_s:.1f} s", file=sys.stderr)
        service = start_service(store, token=TOKEN)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=chromium, headless=True, args=["--no-sandbox"]
                )
                runs = [_run(browser, service.base_url) for _ in range(args.runs)]
                browser.close()
        finally:
            service.stop()
    summary: dict[str, Any] = {"memories": args.memories, "runs": runs}
    for key in ("login_ms", "first_view_ms", "memories_ms", "recall_ms"):
        summary[f"{key}_median"] = round(statistics.median(run[key] for run in runs), 1)
    for key in ("login_bytes", "first_view_bytes", "memories_bytes", "recall_bytes"):
        summary[key] = runs[-1][key]
    text = json.dumps(summary, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
