"""cogito-lc demo: seed sample agent memories, snapshot them, recall them, serve them.

Runs on the embedded defaults: a fresh Chroma store in a temporary folder, the
local all-MiniLM-L6-v2 model (offline), and a chat model only if one answers
(Ollama on its default port, or an OpenAI-compatible endpoint from
COGITO_FILTER_ENDPOINT / COGITO_FILTER_MODEL); without one, the LLM stages run
their documented zero-LLM fallbacks and say so.

    python examples/demo.py [--store DIR]
    python examples/demo.py --postgres           # a private Postgres 16 + pgvector (pgserver)
    python examples/demo.py --database-url URL   # your own Postgres with pgvector
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from langchain_chroma import Chroma
from langchain_core.documents import Document
from rich.console import Console
from rich.table import Table

from cogito_lc import METADATA_KEY, CogitoRetriever, FactExtractor, MemoryStore, SnapshotBuilder
from cogito_lc.embeddings import LOCAL_MODEL_NAME, local_embeddings
from cogito_lc.extraction.discovery import NEEDS, find_chat_model
from cogito_lc.stores.postgres import redact_url

DATA = Path(__file__).resolve().parent / "data"
console = Console(width=120)


def table(title: str, docs: list[Document], expected: str) -> Table:
    method = docs[0].metadata[METADATA_KEY].get("method", "") if docs else "-"
    view = Table(title=f"{title}  [dim]method: {method}[/dim]", title_justify="left")
    view.add_column("rank", justify="right")
    view.add_column("score", justify="right")
    view.add_column("memory (verbatim)", overflow="fold")
    for rank, doc in enumerate(docs, start=1):
        details = doc.metadata[METADATA_KEY]
        mark = "[green]*[/green] " if expected in doc.page_content else ""
        view.add_row(str(rank), f"{details.get('score', 0):.2f}", mark + doc.page_content)
    return view


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve_and_ask(store_dir: Path, question: str, database_url: str | None) -> dict[str, Any]:
    port = free_port()
    env = {
        **os.environ,
        **({"COGITO_DATABASE_URL": database_url} if database_url else {}),
        "COGITO_STORE_PATH": str(store_dir),
        "COGITO_USER_ID": "demo",
        "COGITO_PORT": str(port),
        "HF_HUB_OFFLINE": "1",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "cogito_lc.service.server", "--log-level", "warning"],
        env=env,
        cwd=store_dir.parent,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        answer = httpx.post(f"{url}/recall_b", json={"text": question, "limit": 2}, timeout=60)
        answer.raise_for_status()
        return {"url": url, **answer.json()}
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=None, help="store folder (default: temp)")
    parser.add_argument("--postgres", action="store_true", help="run on a private Postgres")
    parser.add_argument("--database-url", default=None, help="run on this Postgres instead")
    args = parser.parse_args()
    found = find_chat_model()
    llm = found.llm if found else None
    if found:
        console.print(
            f"Chat model: [bold]{found.description}[/bold] (extraction, filter, snapshot)"
        )
    else:
        console.print(f"[yellow]No chat model[/yellow]: {NEEDS}")
        console.print("Stages without a model: snapshot grouping, recall filter (fallback_no_llm).")

    with tempfile.TemporaryDirectory(prefix="cogito-demo-") as tmp:
        store_dir = args.store or Path(tmp) / "store"
        console.print(f"Embeddings: {LOCAL_MODEL_NAME}, offline.")
        extractor = (
            FactExtractor.from_llm(llm, structured_output=found.structured_output)
            if found
            else None
        )
        database_url = args.database_url
        if args.postgres and not database_url:
            import pgserver  # a private Postgres 16 with pgvector, from PyPI

            server = pgserver.get_server(Path(tmp) / "pg", cleanup_mode="delete")
            database_url = server.get_uri()
        if database_url:
            console.print(f"Postgres: {redact_url(database_url)} (table cogito_memory)\n")
            memory = MemoryStore.from_database_url(
                database_url,
                embeddings=local_embeddings(),
                collection="cogito_memory",
                extractor=extractor,
                scope={"user_id": "demo"},
            )
        else:
            console.print(f"Store: {store_dir}\n")
            memory = MemoryStore(
                Chroma("cogito_memory", local_embeddings(), persist_directory=str(store_dir)),
                extractor=extractor,
                scope={"user_id": "demo"},
            )
        console.print(f"[bold]seed[/bold] {DATA}: {memory.seed(DATA, progress=False)}")

        snapshot = SnapshotBuilder.from_llm(llm).build(memory, rebuild=True)
        head = "\n".join(snapshot.text.splitlines()[:8])
        console.print(f"\n[bold]snapshot[/bold] ({snapshot.method}, {snapshot.sampled} memories):")
        console.print(head + "\n...\n", markup=False)

        questions = json.loads((DATA / "questions.json").read_text())
        recall_b = memory.as_retriever(k=3)
        for case in questions[:4]:
            console.print(
                table(
                    f"recall_b: {case['question']}",
                    recall_b.invoke(case["question"]),
                    case["expected_substring"],
                )
            )
        recall = CogitoRetriever.from_llm(memory.as_retriever(k=100), llm, k=3)
        for case in questions[4:7]:
            console.print(
                table(
                    f"recall: {case['question']}",
                    recall.invoke(case["question"]),
                    case["expected_substring"],
                )
            )
        console.print("[green]*[/green] marks the memory that answers the question.\n")

        reply = serve_and_ask(store_dir, questions[0]["question"], database_url)
        console.print(f"[bold]HTTP[/bold] POST {reply.pop('url')}/recall_b ->")
        console.print_json(data=reply)


if __name__ == "__main__":
    main()
