"""Benchmarks shipped with the package (``cogito-lc bench ...``); need the ``bench`` extra.

The LoCoMo retrieval benchmark compares vector search, BM25, LangChain's
``EnsembleRetriever``, RecallB and the two-stage retriever on one store. A layer beside
:mod:`cogito_lc.service`, under the CLI: it may import :mod:`cogito_lc.memory` and every
layer below it, and knows nothing of the service or the CLI. Without the extra,
importing any module here raises an ``ImportError`` with the install line.
"""

from __future__ import annotations

from cogito_lc._core.extras import require_extra

require_extra("bench", "The benchmark package (cogito_lc.bench)")
