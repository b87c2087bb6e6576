"""The memory service: settings, model factories and the FastAPI app.

With the app's schemas and guards and the operations behind its endpoints. Needs the
``server`` extra and goes through :class:`~cogito_lc.MemoryStore` for every store
access. May import :mod:`cogito_lc.memory` and every layer below it; knows nothing of
the benchmarks or the CLI. Nothing is re-exported here, so importing the settings does
not import FastAPI; without the extra, importing any module here raises
:class:`~cogito_lc._core.extras.MissingExtraError` (an ``ImportError``) with the
install line.
"""

from __future__ import annotations

from cogito_lc._core.extras import require_extra

require_extra("server", "The HTTP service (cogito_lc.service)")
