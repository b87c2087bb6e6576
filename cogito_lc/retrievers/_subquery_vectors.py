"""Vectors for a query and its sub-queries, from as little model work as possible.

Two main strategies, each one embeddings call per recall:

- ``batch``: every sub-query is embedded in one ``embed_documents`` call. It
  works with any LangChain ``Embeddings``.
- ``span``: for a local sentence-transformers model with mean pooling
  (``langchain_huggingface.HuggingFaceEmbeddings``), one forward pass of the
  original query gives its vector and, for each fragment made of the query's
  own words, a *contextual span vector*: the mean of those words' token states,
  normalised. Sub-queries that are not spans of the query (vocabulary
  expansions, words cut off by the model's length limit) ride along in the
  same forward batch as their own sequences. The cost is close to that of
  embedding the query alone, which is what keeps recall near the latency of a
  single vector search.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from langchain_core.embeddings import Embeddings

from cogito_lc._core.model_lock import model_lock
from cogito_lc._core.text import word_spans

__all__ = ["SubqueryVectorMode", "aembed_subqueries", "embed_subqueries", "span_model"]

Matrix = npt.NDArray[np.float32]
SubqueryVectorMode = Literal["auto", "span", "batch", "per_query"]


def span_model(embeddings: Embeddings) -> Any | None:
    """The sentence-transformers model behind ``embeddings`` if span vectors apply, else None.

    Span vectors need direct access to token states and a mean-pooling model
    whose vectors are normalised, as ``HuggingFaceEmbeddings`` with
    ``encode_kwargs={"normalize_embeddings": True}`` over all-MiniLM-L6-v2 is.
    """
    client = getattr(embeddings, "_client", None)
    modules = list(client) if client is not None and hasattr(client, "__iter__") else []
    pooling = [m for m in modules if type(m).__name__ == "Pooling"]
    if not pooling or getattr(pooling[0], "pooling_mode", None) != "mean":
        return None
    if not getattr(embeddings, "encode_kwargs", {}).get("normalize_embeddings"):
        return None
    if not hasattr(client, "tokenizer") or not hasattr(client, "forward"):
        return None
    return client


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


def _span_vectors(model: Any, queries: Sequence[str]) -> Matrix:
    original = queries[0]
    offsets = model.tokenizer(
        [original], return_offsets_mapping=True, truncation=True, max_length=model.max_seq_length
    )["offset_mapping"][0]
    positions = _word_token_positions(original, offsets)
    spans = [_span_tokens(q, positions) for q in queries[1:]]
    standalone = [q for q, span in zip(queries[1:], spans, strict=True) if span is None]
    token_states, sentences = _forward(model, [original, *standalone])
    states = token_states[0].float().cpu().numpy()
    pooled = sentences.float().cpu().numpy()
    vectors = [pooled[0]]
    next_standalone = 1
    for span in spans:
        if span is None:
            vectors.append(pooled[next_standalone])
            next_standalone += 1
        else:
            vectors.append(states[span].mean(axis=0))
    return _normalise(np.asarray(vectors, dtype=np.float32))


def embed_subqueries(
    embeddings: Embeddings, queries: Sequence[str], mode: SubqueryVectorMode = "auto"
) -> tuple[Matrix, str]:
    """Vectors for ``queries`` (the original first) and the strategy used.

    Args:
        embeddings: The query embeddings.
        queries: The original query, then its sub-queries.
        mode: ``"batch"``, ``"span"`` (raises if the embeddings cannot do it),
            ``"per_query"`` (one ``embed_query`` call each, for models whose query and
            document encodings differ) or ``"auto"`` (span when possible, else batch).

    Returns:
        One row per query, and the strategy used.

    Raises:
        ValueError: If ``mode="span"`` and the embeddings do not support it.
    """
    model = span_model(embeddings) if mode in {"auto", "span"} else None
    if model is not None:
        with model_lock(model):
            return _span_vectors(model, queries), "span"
    if mode == "span":
        msg = (
            f"subquery_vectors='span' needs a mean-pooling sentence-transformers model with "
            f"normalize_embeddings=True; {type(embeddings).__name__} is not one. "
            "Use subquery_vectors='batch' or 'auto'."
        )
        raise ValueError(msg)
    if mode == "per_query":
        return np.asarray([embeddings.embed_query(q) for q in queries], np.float32), "per_query"
    return np.asarray(embeddings.embed_documents(list(queries)), dtype=np.float32), "batch"


async def aembed_subqueries(
    embeddings: Embeddings, queries: Sequence[str], mode: SubqueryVectorMode = "auto"
) -> tuple[Matrix, str]:
    """Async :func:`embed_subqueries`; local model work runs in a worker thread."""
    if mode in {"auto", "span"} and span_model(embeddings) is not None:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, embed_subqueries, embeddings, queries, "span")
    if mode == "span":
        return embed_subqueries(embeddings, queries, mode)  # raises the explanatory error
    if mode == "per_query":
        vectors = [await embeddings.aembed_query(q) for q in queries]
        return np.asarray(vectors, np.float32), "per_query"
    return np.asarray(await embeddings.aembed_documents(list(queries)), np.float32), "batch"
