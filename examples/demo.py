"""cogito-lc demo: seed sample agent memories into embedded Chroma and recall them.

Runs on the embedded defaults: a Chroma directory under a temporary folder, the
local all-MiniLM-L6-v2 model (offline), no server and no LLM.

    python examples/demo.py [--store DIR] [--k 3]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from langchain_chroma import Chroma

from cogito_lc import METADATA_KEY, RecallB
from cogito_lc.embeddings import LOCAL_MODEL_NAME, local_embeddings
from cogito_lc.loaders import markdown_memories

DATA = Path(__file__).resolve().parent / "data"


def shorten(text: str, width: int = 96) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "\u2026"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=None, help="Chroma directory (default: temp)")
    parser.add_argument("--k", type=int, default=3, help="memories per question")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="cogito-demo-") as tmp:
        store_dir = args.store or Path(tmp) / "chroma"
        print(f"Loading {LOCAL_MODEL_NAME} from its package (offline)...")
        store = Chroma(
            collection_name="cogito_demo",
            embedding_function=local_embeddings(),
            persist_directory=str(store_dir),
        )
        memories = list(markdown_memories(DATA))
        started = time.perf_counter()
        store.add_documents(memories, ids=[m.id for m in memories])
        print(
            f"Stored {len(memories)} memories from {DATA.name}/ in {store_dir} "
            f"({time.perf_counter() - started:.1f} s)\n"
        )

        retriever = RecallB(vectorstore=store, k=args.k)
        retriever.invoke("warm up")
        questions = json.loads((DATA / "questions.json").read_text())
        for case in questions:
            started = time.perf_counter()
            docs = retriever.invoke(case["question"])
            elapsed_ms = (time.perf_counter() - started) * 1000
            method = docs[0].metadata[METADATA_KEY]["method"] if docs else "-"
            print(f"Q: {case['question']}   [{method}, {elapsed_ms:.0f} ms]")
            for doc in docs:
                details = doc.metadata[METADATA_KEY]
                marker = "*" if case["expected_substring"] in doc.page_content else " "
                text = shorten(doc.page_content)
                print(f"  {marker}{details['rank']}. {details['score']:.2f}  {text}")
            print()
        print("* marks the memory that answers the question; text is returned verbatim.")


if __name__ == "__main__":
    main()
