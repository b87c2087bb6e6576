"""Metadata keys cogito-lc reads and writes, and its method tags, documented in one place.

Scores and method tags a component adds go under :data:`METADATA_KEY` as a
dict and never overwrite the user's own metadata keys. The docstring of
:data:`METADATA_KEY` is the one list of the keys and of every method tag.
"""

from __future__ import annotations

__all__ = ["METADATA_KEY", "SCOPE_KEYS"]

SCOPE_KEYS = ("user_id", "agent_id", "run_id")
"""The metadata keys a memory's scope is stored under, in this order.

The other keys :class:`~cogito_lc.MemoryStore` sets itself: ``created_at`` (ISO 8601
UTC, when the memory became true), ``updated_at``, ``kind``, ``importance`` and
``source_id`` (facts), and the version keys of :mod:`cogito_lc._core.versions`:
``supersedes`` on a memory that replaced others (a JSON list of their ids),
``superseded_by`` and ``superseded_at`` on a replaced one (added to its stored
metadata; its text and other keys never change).
"""

METADATA_KEY = "cogito"
"""Key of the dict a retriever adds to each returned document's metadata.

For :class:`~cogito_lc.RecallB` it holds ``score`` (the blended score the
documents are ordered by), ``cosine`` (similarity to the original query),
``rrf`` (the fused reciprocal-rank score), ``rank`` (1-based), ``method``
(its method tag, below) and ``subquery_vectors``, the path that made the
sub-query vectors: ``span`` (one forward pass of a local sentence-transformers
model), ``batch`` (one ``embed_documents`` call) or ``per_query`` (one
``embed_query`` call each); the reason when it is not ``span`` is in the
:data:`~cogito_lc.retrievers.recall_b.RECALL_B_EVENT` and an INFO log line.

:class:`~cogito_lc.PointerFilter` returns copies of the documents it was given
(the given ones are not changed), whose copy of this dict also holds
``filter_method`` (its method tag) and ``filter_rank`` (the 1-based position in the
model's answer, ``None`` when not ranked by it); a copy gets the dict when its
document has none, and no other key is touched. :class:`~cogito_lc.CogitoRetriever`
sets ``method`` to the tag of the whole run.

**Method tags.** Every component that can degrade reports how a run went in a
``method`` tag; this is the list of them all.

- :class:`~cogito_lc.RecallB` (``method`` in this dict): ``decompose_N``, where N
  is the number of sub-queries searched, the original query included; ``_v`` is
  appended when the vocabulary map expanded the query and ``_t`` when the store
  cannot search by vector, so the sub-queries were searched by their text
  (``decompose_6``, ``decompose_6_v``, ``decompose_4_t``).
- :class:`~cogito_lc.PointerFilter` (:class:`~cogito_lc.FilterMethod`;
  ``filter_method`` in this dict, :class:`~cogito_lc.FilterResult` and the event
  :data:`~cogito_lc.FILTER_EVENT`): ``filter`` when the model's answer was used;
  ``fallback_no_llm`` (no model configured), ``fallback_unreachable`` (connection
  refused, HTTP 5xx or 429), ``fallback_timeout``, ``fallback_parse_error`` or
  ``fallback_error`` when it could not be, and the candidates come back in their
  original (stage-1) order; ``skipped_empty`` when there was nothing to filter.
- :class:`~cogito_lc.SupersessionJudge` (:class:`~cogito_lc.SupersessionMethod`;
  :class:`~cogito_lc.SupersessionDecision` and the event
  :data:`~cogito_lc.SUPERSESSION_EVENT`; it writes no metadata): ``judged`` when the
  model's answer was used (its lists may be empty); ``fallback_no_llm``,
  ``fallback_unreachable``, ``fallback_timeout``, ``fallback_parse_error`` or
  ``fallback_error`` when it could not be, and nothing is superseded or repeated;
  ``skipped_empty`` when there was no candidate (no model call).
- :class:`~cogito_lc.CogitoRetriever` (``method`` in this dict and the event
  :data:`~cogito_lc.RETRIEVAL_EVENT`): stage 1's tag and stage 2's joined by ``|``.
  Stage 2's is a filter tag when the model was asked, else ``skipped_confident``
  (``filter_when="low_confidence"`` and stage 1's top two blended scores were more
  than ``confidence_margin`` apart), ``skipped_unrouted`` (``filter_when="routed"``
  and the question is not a temporal or counting one) or ``skipped_empty`` (no
  candidate left, none found or none at or after ``since``). When the filter is
  skipped or falls back, the pool's first ``k`` documents come back in stage-1
  order. Examples: ``decompose_6_v|filter``, ``decompose_6|fallback_unreachable``,
  ``decompose_4|skipped_confident``.
- :class:`~cogito_lc.LlmExtractor` and :class:`~cogito_lc.FactExtractor`
  (:class:`~cogito_lc.ExtractionMethod`; :class:`~cogito_lc.ExtractionResult` and
  the event :data:`~cogito_lc.EXTRACTION_EVENT`): ``structured`` (called with a
  JSON schema, reply parsed), ``text`` (called without one, reply parsed),
  ``parse_error`` (the reply, or every item of a list reply, could not be parsed),
  ``error`` (the model call failed) and ``skipped`` (no call was needed). The
  last three return the empty value.
- :meth:`MemoryStore.add <cogito_lc.MemoryStore.add>`
  (:class:`~cogito_lc.AddResult`): ``facts`` (facts extracted and stored),
  ``no_facts`` (the model answered ``[]``: nothing stored), ``fallback_verbatim``
  (extraction failed, the text was stored as is) or ``fallback_no_llm`` (no
  extractor, the text was stored as is) or ``forgotten`` (the text was a forget
  request: nothing stored, ``forgotten`` lists what was forgotten); ``extraction``
  holds the extractor's tag and ``supersession`` the judge's, when it was asked.
- :meth:`MemoryStore.forget <cogito_lc.MemoryStore.forget>`
  (:class:`~cogito_lc.ForgetResult`): ``ids`` (the ids were given) or ``matched``
  (found from the query without a model).
- :class:`~cogito_lc.SnapshotBuilder` (:class:`~cogito_lc.Snapshot`):
  ``pointer``, ``summary``, ``grouped|fallback_no_llm``,
  ``grouped|fallback_timeout`` (the model outlasted ``timeout``),
  ``grouped|fallback_parse_error``, ``grouped|fallback_error``,
  ``grouped|forgotten_during_build`` (memories kept being forgotten while it was
  built), ``empty`` (no memory in scope) or ``cached`` (an existing snapshot was
  still fresh).
- :class:`~cogito_lc.VocabCalibrator` (:class:`~cogito_lc.CalibrationResult`):
  ``calibrated``, ``empty`` (nothing usable; ``reason`` says why),
  ``fallback_no_llm``, ``fallback_timeout`` (the model outlasted ``timeout``),
  ``fallback_parse_error`` or ``fallback_error``.
- The service's answers: ``/query`` says ``vector``, ``/recall_b`` gives RecallB's
  tag, and ``/recall`` stage 2's tag in ``method`` and stage 1's in
  ``recall_method``.
"""
