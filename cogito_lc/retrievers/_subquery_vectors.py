"""Vectors for a query and its sub-queries, from as little model work as possible.

Three paths, each one embeddings call (or one forward pass) per recall except
``per_query``:

- ``span``: for a local sentence-transformers model (``HuggingFaceEmbeddings``
  or any ``Embeddings`` wrapping a ``SentenceTransformer``), one forward pass
  of the original query gives its vector and, for each fragment made of the
  query's own words, a *contextual span vector*: the span's token states
  pooled the way the model pools (mean, max or mean/sqrt(len)), then passed
  through the model's modules after pooling (``Dense``, ``Normalize``).
  Sub-queries that are not spans of the query (vocabulary expansions, words
  cut off by the model's length limit) ride along in the same forward batch
  as their own sequences. The cost is close to that of embedding the query
  alone.
- ``batch``: every sub-query is embedded in one ``embed_documents`` call; one
  HTTP request for remote embeddings (Ollama, OpenAI, OpenAI-compatible).
- ``per_query``: one ``embed_query`` call each, for models whose query and
  document encodings differ.

A plan is made once per embeddings object: for a local model it checks, on a
probe query, that one forward pass reproduces ``embed_query`` (a prompt,
quantised precision, ``truncate_dim`` or a wrapper's own post-processing would
not) and whether the embeddings normalise, so span vectors are scaled as the
store's vectors are.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from langchain_core.embeddings import Embeddings

from cogito_lc._core.model_lock import model_lock
from cogito_lc._core.text import word_spans
from cogito_lc.embeddings.lazy import LazyEmbeddings
from cogito_lc.embeddings.threads import leaving_a_core
from cogito_lc.retrievers._per_object import PerObject

__all__ = [
    "SubqueryPath",
    "SubqueryPlan",
    "SubqueryVectorMode",
    "aembed_subqueries",
    "aembed_with_plan",
    "embed_subqueries",
    "embed_with_plan",
    "find_sentence_transformer",
    "plan_subqueries",
    "shared_plan",
]

Matrix = npt.NDArray[np.float32]
SubqueryVectorMode = Literal["auto", "span", "batch", "per_query"]
SubqueryPath = Literal["span", "batch", "per_query"]

SPAN_POOLING = ("mean", "max", "mean_sqrt_len_tokens")
"""Pooling modes whose span vectors can be derived from the query's token states."""

_PROBE = ("how long do auth tokens last after the login", "auth tokens")
_REMOTE_FIX = (
    "none needed for remote embeddings (one batched call is their fastest path); "
    "for the span path, use a local sentence-transformers model"
)
_LOCAL_FIX = (
    "for the span path, use HuggingFaceEmbeddings (or a wrapped SentenceTransformer) "
    "whose embed_query is the model's own forward pass with mean or max pooling"
)


@dataclass(frozen=True)
class SubqueryPlan:
    """How one retriever makes its sub-query vectors."""

    mode: SubqueryPath
    """The path that runs."""
    reason: str = ""
    """Why this path and not ``span`` (empty for ``span``)."""
    fix: str = ""
    """What would give the span path, when it does not run."""
    model: Any = None
    """The ``SentenceTransformer`` of the span path."""
    pooling: str = "mean"
    """The model's pooling mode (span path)."""
    normalise: bool = False
    """Whether the embeddings return unit vectors, so span vectors must be too."""


def find_sentence_transformer(embeddings: Embeddings) -> Any | None:
    """The ``SentenceTransformer`` an ``Embeddings`` object holds, or None.

    ``HuggingFaceEmbeddings`` keeps it in ``_client``; a user's own wrapper in any
    attribute (``model``, ``client``, ...). :class:`LazyEmbeddings` are built first.
    """
    if isinstance(embeddings, LazyEmbeddings):
        embeddings = embeddings.embeddings
    sentence_transformers = sys.modules.get("sentence_transformers")
    if sentence_transformers is None:  # no model can have been loaded
        return None
    model_type = sentence_transformers.SentenceTransformer
    candidates = [getattr(embeddings, "_client", None)]
    candidates += list(getattr(embeddings, "__dict__", {}).values())
    candidates += list((getattr(embeddings, "__pydantic_private__", None) or {}).values())
    return next((c for c in candidates if isinstance(c, model_type)), None)


def plan_subqueries(embeddings: Embeddings, mode: SubqueryVectorMode = "auto") -> SubqueryPlan:
    """Choose how sub-query vectors are made for ``embeddings``.

    Args:
        embeddings: The query embeddings.
        mode: ``"auto"`` (span where it applies, else batch or per_query),
            ``"span"`` (raises if it does not apply), ``"batch"`` or ``"per_query"``.

    Returns:
        The plan, with the reason when it is not the span path.

    Raises:
        ValueError: If ``mode="span"`` and the embeddings do not support it.
    """
    if mode in ("batch", "per_query"):
        return SubqueryPlan(mode, reason=f"subquery_vectors={mode!r} was set")
    model = find_sentence_transformer(embeddings)
    if model is None:
        reason = f"{type(embeddings).__name__} is not a local sentence-transformers model"
        plan = SubqueryPlan("batch", reason=reason, fix=_REMOTE_FIX)
    else:
        plan = _local_plan(embeddings, model)
    if mode == "span" and plan.mode != "span":
        msg = (
            f"subquery_vectors='span' cannot run: {plan.reason}. "
            "Use subquery_vectors='auto' (or 'batch')."
        )
        raise ValueError(msg)
    return plan


_PLANS: PerObject[SubqueryPlan] = PerObject()


def shared_plan(
    embeddings: Embeddings, mode: SubqueryVectorMode = "auto"
) -> tuple[SubqueryPlan, bool]:
    """:func:`plan_subqueries`, made once per embeddings object and mode in a process.

    Retrievers built per request over the same embeddings (the service, a
    ``MemoryStore``'s ``as_retriever``) share the plan, so the probe runs once.

    Returns:
        The plan, and whether this call made it.

    Raises:
        ValueError: If ``mode="span"`` and the embeddings do not support it.
    """
    return _PLANS.get((embeddings,), mode, lambda: plan_subqueries(embeddings, mode))


def _local_plan(embeddings: Embeddings, model: Any) -> SubqueryPlan:
    modules = list(model)
    pooling = next((m for m in modules if type(m).__name__ == "Pooling"), None)
    mode = getattr(pooling, "pooling_mode", None)
    if getattr(embeddings, "multi_process", False):
        reason = "multi_process=True encodes in worker processes"
    elif pooling is None:
        reason = "the model has no Pooling module"
    elif mode not in SPAN_POOLING:
        reason = f"{mode} pooling gives one vector per sequence, none for a span of it"
    else:
        return _checked_span_plan(embeddings, model, str(mode))
    return _fallback_plan(embeddings, reason)


def _checked_span_plan(embeddings: Embeddings, model: Any, pooling: str) -> SubqueryPlan:
    """The span plan if one forward pass reproduces ``embed_query`` on a probe, else a fallback."""
    expected = np.asarray(embeddings.embed_query(_PROBE[0]), dtype=np.float32)
    normalise = abs(float(np.linalg.norm(expected)) - 1.0) < 1e-3
    plan = SubqueryPlan("span", model=model, pooling=pooling, normalise=normalise)
    got = embed_with_plan(plan, embeddings, _PROBE)[0]
    if _same_vector(got, expected):
        return plan
    reason = (
        "one forward pass of the model does not reproduce embed_query (a query prompt, "
        "quantised precision, truncate_dim or the wrapper's own post-processing)"
    )
    return _fallback_plan(embeddings, reason, expected)


def _fallback_plan(
    embeddings: Embeddings, reason: str, query_vector: Matrix | None = None
) -> SubqueryPlan:
    """Batch if ``embed_documents`` encodes a query as ``embed_query`` does, else per_query."""
    if query_vector is None:
        query_vector = np.asarray(embeddings.embed_query(_PROBE[0]), dtype=np.float32)
    as_document = np.asarray(embeddings.embed_documents([_PROBE[0]])[0], dtype=np.float32)
    if _same_vector(as_document, query_vector):
        return SubqueryPlan("batch", reason=reason, fix=_LOCAL_FIX)
    reason += "; embed_documents encodes differently from embed_query (an asymmetric model)"
    return SubqueryPlan("per_query", reason=reason, fix=_LOCAL_FIX)


def _same_vector(a: Matrix, b: Matrix) -> bool:
    if a.shape != b.shape:
        return False
    norm_a, norm_b = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if norm_a == 0 or norm_b == 0:
        return norm_a == norm_b
    cosine = float(a @ b) / (norm_a * norm_b)
    return cosine > 0.999 and abs(norm_a / norm_b - 1.0) < 1e-2


def _normalise(matrix: Matrix) -> Matrix:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    normalised: Matrix = (matrix / norms).astype(np.float32)
    return normalised


def _word_token_positions(query: str, offsets: Sequence[Sequence[int]]) -> dict[str, list[int]]:
    """Map each word of ``query`` (first occurrence, lower case) to its token positions."""
    positions: dict[str, list[int]] = {}
    for word, start, end in word_spans(query):
        if word in positions:
            continue
        positions[word] = [i for i, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
    return positions


def _span_tokens(subquery: str, positions: dict[str, list[int]]) -> list[int] | None:
    tokens: list[int] = []
    for word in subquery.lower().split():
        found = positions.get(word)
        if not found:
            return None
        tokens.extend(found)
    return sorted(set(tokens))


def _forward(model: Any, texts: Sequence[str]) -> tuple[Any, Any]:
    import torch

    prepare = getattr(model, "preprocess", None) or model.tokenize
    features = prepare(list(texts))
    device = getattr(model, "device", None)
    if device is not None:
        features = {k: v.to(device) if hasattr(v, "to") else v for k, v in features.items()}
    with torch.inference_mode():
        out = model.forward(features)
    return out["token_embeddings"], out["sentence_embedding"]


def _pool_span(states: Any, pooling: str) -> Any:
    if pooling == "max":
        return states.max(dim=0).values
    if pooling == "mean_sqrt_len_tokens":
        return states.sum(dim=0) / math.sqrt(states.shape[0])
    return states.mean(dim=0)


def _after_pooling(model: Any, pooled: Any) -> Any:
    """Pass pooled span vectors through the model's modules after Pooling (Dense, Normalize)."""
    import torch

    modules = list(model)
    start = next(i for i, m in enumerate(modules) if type(m).__name__ == "Pooling") + 1
    features = {"sentence_embedding": pooled}
    with torch.inference_mode():
        for module in modules[start:]:
            features = module(features)
    return features["sentence_embedding"]


def _span_vectors(plan: SubqueryPlan, queries: Sequence[str]) -> Matrix:
    import torch

    model = plan.model
    queries = [q.replace("\n", " ") for q in queries]  # as HuggingFaceEmbeddings does
    original = queries[0]
    offsets = model.tokenizer(
        [original], return_offsets_mapping=True, truncation=True, max_length=model.max_seq_length
    )["offset_mapping"][0]
    positions = _word_token_positions(original, offsets)
    spans = [_span_tokens(q, positions) for q in queries[1:]]
    standalone = [q for q, span in zip(queries[1:], spans, strict=True) if not span]
    token_states, sentences = _forward(model, [original, *standalone])
    derived = [_pool_span(token_states[0][span], plan.pooling) for span in spans if span]
    span_rows: Any = _after_pooling(model, torch.stack(derived)) if derived else None
    rows = [sentences[0]]
    next_span, next_standalone = 0, 1
    for span in spans:
        if span:
            rows.append(span_rows[next_span])
            next_span += 1
        else:
            rows.append(sentences[next_standalone])
            next_standalone += 1
    vectors = torch.stack(rows).float().cpu().numpy().astype(np.float32)
    return _normalise(vectors) if plan.normalise else vectors


def embed_with_plan(
    plan: SubqueryPlan,
    embeddings: Embeddings,
    queries: Sequence[str],
    *,
    spare_core: bool = False,
) -> Matrix:
    """Vectors for ``queries`` (the original first) along ``plan``'s path.

    With ``spare_core``, a local model's forward pass runs on one torch thread
    fewer (:func:`~cogito_lc.embeddings.threads.leaving_a_core`): the caller has
    work running beside it.
    """
    spared = leaving_a_core(len(queries)) if spare_core else contextlib.nullcontext()
    if plan.mode == "span":
        with model_lock(plan.model), spared:  # the core is given up once the model is ours
            return _span_vectors(plan, queries)
    with spared:
        if plan.mode == "per_query":
            return np.asarray([embeddings.embed_query(q) for q in queries], np.float32)
        return np.asarray(embeddings.embed_documents(list(queries)), dtype=np.float32)


async def aembed_with_plan(
    plan: SubqueryPlan,
    embeddings: Embeddings,
    queries: Sequence[str],
    *,
    spare_core: bool = False,
) -> Matrix:
    """Async :func:`embed_with_plan`; local model work runs in a worker thread.

    ``spare_core`` applies on the span path (the forward pass runs here); the other
    paths call the embeddings' own async methods.
    """
    if plan.mode == "span":
        loop = asyncio.get_running_loop()
        embed = partial(embed_with_plan, spare_core=spare_core)
        return await loop.run_in_executor(None, embed, plan, embeddings, queries)
    if plan.mode == "per_query":
        return np.asarray([await embeddings.aembed_query(q) for q in queries], np.float32)
    return np.asarray(await embeddings.aembed_documents(list(queries)), np.float32)


def embed_subqueries(
    embeddings: Embeddings, queries: Sequence[str], mode: SubqueryVectorMode = "auto"
) -> tuple[Matrix, str]:
    """Vectors for ``queries`` (the original first) and the path used, planning on each call.

    Raises:
        ValueError: If ``mode="span"`` and the embeddings do not support it.
    """
    plan = plan_subqueries(embeddings, mode)
    return embed_with_plan(plan, embeddings, queries), plan.mode


async def aembed_subqueries(
    embeddings: Embeddings, queries: Sequence[str], mode: SubqueryVectorMode = "auto"
) -> tuple[Matrix, str]:
    """Async :func:`embed_subqueries`; local model work runs in a worker thread."""
    loop = asyncio.get_running_loop()
    plan = await loop.run_in_executor(None, plan_subqueries, embeddings, mode)
    return await aembed_with_plan(plan, embeddings, queries), plan.mode
