"""Shared machinery that every layer may use.

Metadata keys and method tags, argument checks, JSON repair, transport-error
classification, the one model-call path (structured output, retry without the
schema, tracing), model locks, timestamps, text tokens, metadata filters and the
one adapter to vector-store internals. The bottom layer: it imports
nothing from cogito_lc outside ``_core``, and nothing here is public API: the public
names are re-exported by :mod:`cogito_lc` and the layer packages.
"""

from __future__ import annotations
