"""LoCoMo retrieval benchmark (``make bench``); the code lives in ``cogito_lc.bench.locomo``.

``--cv`` runs the leave-one-conversation-out cross-validation of
``cogito_lc.bench.locomo_cv`` instead.

Usage:
    python benchmarks/locomo.py [PATH] [--units turns facts] [--methods ...] [--out FILE]
    python benchmarks/locomo.py [PATH] --cv
    python benchmarks/locomo.py [PATH] --embeddings local plain-hf openai-compatible
"""

from __future__ import annotations

import sys

from cogito_lc.bench.locomo_cv import main

if __name__ == "__main__":
    sys.exit(main())
