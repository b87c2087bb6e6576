"""Shared machinery that every layer may use.

Metadata keys, argument checks, JSON repair, transport-error classification,
structured-output requests, model locks, timestamps and metadata filters. It imports
nothing from cogito_lc outside ``_core``, and nothing here is public API: the public
names are re-exported by :mod:`cogito_lc` and the layer packages.
"""

from __future__ import annotations
