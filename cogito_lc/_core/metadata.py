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

:class:`~cogito_lc.PointerFilter` returns the documents it was given
(the same objects) and writes into this dict, in place, ``filter_method`` (for
example ``filter`` or ``fallback_timeout``) and ``filter_rank`` (the 1-based
position in the model's answer, ``None`` when not ranked by it); it adds the dict
when a document has none and touches no other key.
:class:`~cogito_lc.CogitoRetriever` sets ``method`` to the tag of
the whole run, stage 1's and stage 2's joined by ``|`` (for example
``decompose_6_v|filter`` or ``decompose_6|skipped_confident``).
"""
