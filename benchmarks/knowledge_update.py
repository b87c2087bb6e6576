"""Knowledge-update benchmark (``cogito-lc bench updates``); the code lives in
``cogito_lc.bench.knowledge_update``.

Usage:
    python benchmarks/knowledge_update.py [--conversations 300] [--seed 0]
        [--modes zero_llm local_llm openai] [--llm-conversations 10] [--store chroma|memory]
        [--recall-b JSON] [--out benchmarks/results/knowledge_update.json]
"""

from __future__ import annotations

import sys

from cogito_lc.bench.knowledge_update import main

if __name__ == "__main__":
    sys.exit(main())
