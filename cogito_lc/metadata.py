"""Metadata keys cogito-lc reads and writes, documented in one place.

Scores and method tags a component adds go under :data:`METADATA_KEY` as a
dict and never overwrite the user's own metadata keys.
"""

from __future__ import annotations

__all__ = ["METADATA_KEY"]

METADATA_KEY = "cogito"
"""Key of the dict a retriever adds to each returned document's metadata.

For :class:`~cogito_lc.RecallB` it holds ``score`` (the blended score the
documents are ordered by), ``cosine`` (similarity to the original query),
``rrf`` (the fused reciprocal-rank score), ``rank`` (1-based) and ``method``
(for example ``decompose_6_v``).
"""
