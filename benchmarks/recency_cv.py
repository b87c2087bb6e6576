"""Cross-validation of RecallB's recency step on the knowledge-update benchmark and LoCoMo;
the code lives in ``cogito_lc.bench.recency_cv``.

Usage:
    python benchmarks/recency_cv.py [../shared/data/locomo/locomo10-dev.json] \
        [--conversations 300] [--seed 0] [--check-seed 1] [--out benchmarks/results/recency_cv.md]
"""

from __future__ import annotations

import sys

from cogito_lc.bench.recency_cv import main

if __name__ == "__main__":
    sys.exit(main())
