"""Vocabulary calibration: the map from plain words to the corpus's own terms."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import Runnable
from pydantic import BaseModel, ConfigDict, Field, model_validator

from cogito_lc._core.graphemes import cut
from cogito_lc._core.transport import failure_kind
from cogito_lc.extraction.llm_extractor import ExtractionMethod, LlmExtractor, StructuredOutputMode
from cogito_lc.memory._vocab_file import VOCAB_FILE, load_vocab_map, save_vocab_map
from cogito_lc.memory._vocab_terms import filter_vocab_map, terms_in_corpus
from cogito_lc.memory.scope import as_scope
from cogito_lc.memory.snapshot import _newest_current
from cogito_lc.prompts.registry import PromptLike, resolve_prompt

if TYPE_CHECKING:
    from langchain_core.documents import Document

    from cogito_lc.memory.memory_store import MemoryStore
    from cogito_lc.memory.scope import Scope, ScopeLike

__all__ = ["CalibrationResult", "VocabCalibrator", "filter_vocab_map", "terms_in_corpus"]

logger = logging.getLogger(__name__)


class VocabReply(BaseModel):
    """The model's answer: plain-English phrases, each with the corpus terms it maps to.

    The schema sent to the model is an object with properties, as every provider's
    structured output needs (a bare map has none, and ``with_structured_output`` of
    ``ChatOpenAI`` cannot take it); a reply that is the bare map, as in the prompt's
    example, is read as well.
    """

    phrases: dict[str, list[str]] = Field(default_factory=dict)
    """Each plain-English phrase and the corpus terms that mean the same."""

    @model_validator(mode="before")
    @classmethod
    def _bare_map(cls, data: Any) -> Any:
        wrapped = isinstance(data, dict) and set(data) == {"phrases"}
        if isinstance(data, dict) and not (wrapped and isinstance(data["phrases"], dict)):
            return {"phrases": data}
        return data


@dataclass
class CalibrationResult:
    """What a calibration produced.

    Attributes:
        vocab_map: The kept map (every term occurs in the sampled corpus).
        method: How it went: a method tag listed under :data:`~cogito_lc.METADATA_KEY`.
        path: Where the map was saved (None for dry runs and in-memory stores).
        dropped: Terms removed because they do not occur in the corpus.
        reason: Why no map was built: ``no_llm`` (no model, method ``fallback_no_llm``),
            and for method ``empty``: ``no_memories`` (none in scope), ``no_terms``
            (the model proposed none) or ``all_dropped`` (every proposed term is
            missing from the corpus). ``""`` when a map was built or the model failed.
    """

    vocab_map: dict[str, list[str]]
    method: str
    path: str | None = None
    dropped: list[str] = field(default_factory=list)
    reason: str = ""


class VocabCalibrator(BaseModel):
    """Builds the ``vocab_map`` RecallB expands queries with, from the newest current memories.

    The model proposes plain-English phrases and the corpus terms they mean
    (registry prompt ``calibrate``); every proposed term must occur in the
    sampled corpus, so invented terms are dropped. The map is saved next to the
    store and used by every retriever the store hands out afterwards.

    Example:
        ```python
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_core.language_models import FakeListChatModel
        from langchain_core.vectorstores import InMemoryVectorStore

        from cogito_lc import MemoryStore, VocabCalibrator

        memory = MemoryStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=64)))
        memory.store_many(["The p95 latency budget is 250 ms.", "Auth tokens expire hourly."])
        llm = FakeListChatModel(responses=['{"how fast": ["latency", "p95", "warp speed"]}'])
        result = VocabCalibrator.from_llm(llm).calibrate(memory, dry_run=True)
        result.vocab_map  # {'how fast': ['latency', 'p95']}
        result.dropped  # ['warp speed']: not in the corpus
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    llm: Runnable[Any, Any] | None = None
    """The chat model; None means no calibration (``fallback_no_llm``)."""
    prompt: PromptLike | None = None
    """Prompt override; by default the registry's ``calibrate``."""
    structured_output: StructuredOutputMode = "auto"
    """How the JSON schema reaches the model (``json_object`` for llama.cpp servers)."""
    sample_size: int = Field(default=200, ge=1)
    """How many memories the model sees: the newest current ones, as a snapshot's."""
    item_chars: int = Field(default=200, ge=20)
    """Each memory is cut to this many characters in the prompt."""
    max_keys: int = Field(default=60, ge=1)
    """The most phrases kept."""
    max_terms: int = Field(default=8, ge=1)
    """The most terms kept per phrase."""
    timeout: float | None = Field(default=None, gt=0)
    """Seconds the model call may take (a retry without the schema included) before the
    run ends as ``fallback_timeout`` with no map; ``None`` waits as long as the chat
    model's own client does. The abandoned request ends with the client's timeout."""

    @classmethod
    def from_llm(
        cls, llm: Runnable[Any, Any] | None, *, prompt: PromptLike | None = None, **fields: Any
    ) -> VocabCalibrator:
        """Create a calibrator from a chat model.

        Args:
            llm: Chat model to call; ``None`` makes every run ``fallback_no_llm``.
            prompt: Prompt to use instead of the registry's ``calibrate`` entry.
            **fields: Other fields, such as ``structured_output``, ``timeout``,
                ``sample_size``, ``max_keys``.

        Returns:
            The calibrator.
        """
        return cls(llm=llm, prompt=prompt, **fields)

    def calibrate(
        self, memory: MemoryStore, *, scope: ScopeLike = None, dry_run: bool = False
    ) -> CalibrationResult:
        """Build the map from ``memory``'s scope; save it and apply it unless ``dry_run``.

        Raises:
            WriteLockTimeoutError: If another process held the store's lock too long
                to save the map.
        """
        target = as_scope(scope, memory.scope)
        memories = _newest_current(memory, target, self.sample_size, memory.count(target))
        corpus = "\n".join(cut(" ".join(d.page_content.split()), self.item_chars) for d in memories)
        if self.llm is None:
            return CalibrationResult({}, "fallback_no_llm", reason="no_llm")
        if not memories:
            if not dry_run and target == memory.scope:
                _drop_saved(memory)
            return CalibrationResult({}, "empty", reason="no_memories")
        extractor = LlmExtractor.from_llm(
            self.llm,
            output=VocabReply,
            prompt=resolve_prompt("calibrate", self.prompt),
            structured_output=self.structured_output,
            raise_on_error=True,
            timeout=self.timeout,
        )
        try:
            reply = extractor.invoke_with_result({"corpus": corpus, "max_terms": self.max_keys})
        except Exception as exc:  # any model failure leaves the map as it was
            logger.warning("calibration model call failed (%s: %s)", type(exc).__name__, exc)
            timed_out = failure_kind(exc) == "timeout"
            return CalibrationResult({}, "fallback_timeout" if timed_out else "fallback_error")
        if reply.method is ExtractionMethod.PARSE_ERROR:
            return CalibrationResult({}, "fallback_parse_error")
        raw = reply.value.phrases if reply.value is not None else {}
        vocab_map, dropped = filter_vocab_map(
            raw, corpus, max_keys=self.max_keys, max_terms=self.max_terms
        )
        if not vocab_map:
            reason = "all_dropped" if dropped else "no_terms"
            return CalibrationResult({}, "empty", None, dropped, reason)
        result = CalibrationResult(vocab_map, "calibrated", None, dropped)
        if not dry_run:
            self._apply(memory, result, memories, target)
        return result

    def _apply(
        self, memory: MemoryStore, result: CalibrationResult, sample: list[Document], scope: Scope
    ) -> None:
        """Use and save the map, as one step under the store's write lock.

        A memory of the sample forgotten meanwhile takes the terms only it held
        out of the map first: the forget has cleaned the maps saved before.
        """
        with memory.exclusive():  # another calibration's save or a forget waits
            gone = set(memory.missing([doc.id or "" for doc in sample], scope=scope))
            if gone:
                left = "\n".join(doc.page_content for doc in sample if doc.id not in gone)
                result.vocab_map, _ = filter_vocab_map(
                    result.vocab_map, left, max_keys=self.max_keys, max_terms=self.max_terms
                )
                logger.info(
                    "%d calibrated memories were forgotten before the map was saved", len(gone)
                )
            if not result.vocab_map:
                result.method, result.reason = "empty", "all_dropped"
                return
            memory.vocab_map = result.vocab_map
            if memory.state is not None:
                result.path = save_vocab_map(memory.state, result.vocab_map)


def _drop_saved(memory: MemoryStore) -> None:
    """Delete the map saved for a scope that holds no memory (recall stops using it)."""
    if memory.state is None:
        return
    with memory.exclusive():
        saved = load_vocab_map(memory.state)
        if saved is None:
            return
        memory.state.delete([VOCAB_FILE])
        if memory.vocab_map == saved:
            memory.vocab_map = None
    logger.info(
        "deleted the vocabulary map %s: its scope holds no memory",
        memory.state.location(VOCAB_FILE),
    )
