"""Scale benchmark (``cogito-lc bench scale``); the code lives in ``cogito_lc.bench.scale``.

Usage:
    python benchmarks/scale.py [PATH] [--sizes 10000 100000] [--layouts one spread]
        [--scopes 100] [--queries 30] [--embeddings auto|minilm|hash] [--quick] [--out FILE]
"""

from __future__ import annotations

import sys

from cogito_lc.bench.scale import main

if __name__ == "__main__":
    sys.exit(main())
