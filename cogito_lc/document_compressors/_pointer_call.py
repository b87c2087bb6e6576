"""The model call both pointer components make: numbered candidates in, pointers out.

``PointerFilter`` and ``SupersessionJudge`` run the same way and differ only in what
they ask and how they read the answer. :class:`PointerCaller` is that shared run:
one LangChain chain run that either ends without a model call or asks the model
within ``timeout`` (a sync call is waited for in a worker thread, an async one is
cancelled), hands a failed call to the component's fallback with the tag
:func:`model_failure` picks, and dispatches the component's custom event at its end.
The model is called through :func:`~cogito_lc._core.model_call.call_model`, which
retries once as plain text when the server rejects the JSON schema.
:class:`PointerBuilder` holds the builder verbs both components share.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, cast

from langchain_core.prompt_values import PromptValue
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import BaseModel, field_validator
from typing_extensions import Self

from cogito_lc._core.deadline import acall_with_deadline, call_with_deadline
from cogito_lc._core.model_call import (
    FailureKind,
    ModelAnswer,
    acall_model,
    arun_as_chain,
    call_model,
    failure_kind,
    run_as_chain,
)
from cogito_lc._core.structured_output import StructuredOutputMode
from cogito_lc.document_compressors._pointers import CandidateBlock
from cogito_lc.prompts.builders import ComponentBuilder
from cogito_lc.prompts.registry import as_chat_prompt, validate_prompt_variables

__all__ = [
    "ModelFailure",
    "PointerBuilder",
    "PointerCaller",
    "PointerQuestion",
    "PointerReply",
    "model_failure",
]


class _Reported(Protocol):
    def event_data(self, name: str) -> dict[str, Any]: ...


C = TypeVar("C")
M = TypeVar("M", bound=Enum)
RequestT = TypeVar("RequestT")
ResultT = TypeVar("ResultT", bound=_Reported)

_FALLBACK_TAGS: dict[FailureKind, str] = {
    "timeout": "fallback_timeout",
    "unreachable": "fallback_unreachable",
    "error": "fallback_error",
}


@dataclass(frozen=True)
class PointerQuestion:
    """What a run asks the model: the numbered candidates, the prompt's variables, the schema."""

    block: CandidateBlock
    """The candidates as numbered for the model."""

    variables: dict[str, str]
    """Values of the prompt's variables."""

    answer: type[BaseModel]
    """Pydantic model of the answer, whose JSON schema bounds every number."""


@dataclass(frozen=True)
class PointerReply:
    """The model's reply to a :class:`PointerQuestion`."""

    text: str
    """The reply text."""

    structured: bool
    """Whether the answer was constrained by a JSON schema."""

    block: CandidateBlock = field(repr=False)
    """The candidates the reply's numbers point at."""

    prompt_text: str = field(default="", repr=False)
    """The prompt the model saw, to recognise lines the reply echoes."""


@dataclass(frozen=True)
class ModelFailure(Generic[M]):
    """Why a model call failed: the component's fallback tag and the error's text."""

    method: M
    """``fallback_timeout``, ``fallback_unreachable`` or ``fallback_error``."""

    error: str
    """``"ExceptionType: message"``."""


def model_failure(exc: Exception, methods: type[M]) -> ModelFailure[M]:
    """Classify a failed model call as a tag of ``methods``.

    Args:
        exc: What the model call raised.
        methods: The component's method tags; they must hold the three fallback values.

    Returns:
        The tag (a timeout, an unreachable server, or any other error) and the error text.
    """
    return ModelFailure(methods(_FALLBACK_TAGS[failure_kind(exc)]), f"{type(exc).__name__}: {exc}")


class PointerCaller(ABC, Generic[RequestT, ResultT]):
    """Mixin of a runnable that asks a chat model about numbered candidates.

    Put it before the pydantic base class; the component declares the fields
    ``llm``, ``prompt``, ``timeout`` and ``structured_output`` and the class variables
    below, and implements the hooks: :meth:`_early` (a result without a model call),
    :meth:`_question`, :meth:`_failed`, :meth:`_answered` and :meth:`_run_output`.
    Its ``prompt`` is checked against the registry entry ``_prompt_name``.
    """

    _prompt_name: ClassVar[str]
    """Registry name of the default prompt, whose variables every prompt must use."""

    _event: ClassVar[str]
    """Name of the custom event dispatched at the end of every run."""

    _log: ClassVar[logging.Logger]
    """The component's logger, for the plain-text retry warning."""

    if TYPE_CHECKING:  # the component's pydantic fields and Runnable's method
        llm: Runnable[Any, Any] | None
        prompt: ChatPromptTemplate
        timeout: float | None
        structured_output: StructuredOutputMode

        def get_name(self, suffix: str | None = None, *, name: str | None = None) -> str: ...

    @field_validator("prompt", mode="before")
    @classmethod
    def _check_prompt(cls, value: Any) -> Any:
        template = as_chat_prompt(value)
        validate_prompt_variables(cls._prompt_name, template)
        return template

    @abstractmethod
    def _early(self, request: RequestT) -> ResultT | None:
        """The result of a run that needs no model call (no candidates, no model), else ``None``."""

    @abstractmethod
    def _question(self, request: RequestT) -> PointerQuestion:
        """What to ask the model about ``request``."""

    @abstractmethod
    def _failed(self, request: RequestT, block: CandidateBlock, exc: Exception) -> ResultT:
        """The fallback result of a model call that raised ``exc``."""

    @abstractmethod
    def _answered(self, request: RequestT, reply: PointerReply) -> ResultT:
        """The result read from the model's reply."""

    @abstractmethod
    def _run_output(self, result: ResultT) -> Any:
        """What of ``result`` the chain run records as its output."""

    def _run_chain(
        self, request: Callable[[], RequestT], input_: Any, config: RunnableConfig | None
    ) -> ResultT:
        """Run as one chain run, checking the input (``request()``) inside it.

        A bad input is then the run's error (``on_chain_error``), as tracers see it.
        """
        return run_as_chain(
            self._runnable(),
            lambda child: self._run(request(), child),
            input_,
            config,
            output=self._run_output,
            event=self._event,
            event_data=self._event_data,
        )

    async def _arun_chain(
        self, request: Callable[[], RequestT], input_: Any, config: RunnableConfig | None
    ) -> ResultT:
        """Async :meth:`_run_chain`."""
        return await arun_as_chain(
            self._runnable(),
            lambda child: self._arun(request(), child),
            input_,
            config,
            output=self._run_output,
            event=self._event,
            event_data=self._event_data,
        )

    def _run(self, request: RequestT, config: RunnableConfig) -> ResultT:
        early = self._early(request)
        if early is not None:
            return early
        question = self._question(request)
        try:
            reply = call_with_deadline(
                lambda: self._ask(question, config),
                self.timeout,
                name=f"{self.get_name()}-model-call",
            )
        except Exception as exc:
            return self._failed(request, question.block, exc)
        return self._answered(request, reply)

    async def _arun(self, request: RequestT, config: RunnableConfig) -> ResultT:
        early = self._early(request)
        if early is not None:
            return early
        question = self._question(request)
        try:
            reply = await acall_with_deadline(self._aask(question, config), self.timeout)
        except Exception as exc:
            return self._failed(request, question.block, exc)
        return self._answered(request, reply)

    def _ask(self, question: PointerQuestion, config: RunnableConfig) -> PointerReply:
        assert self.llm is not None  # noqa: S101 - checked by _early
        prompt_value = self.prompt.invoke(question.variables, config)
        answer = call_model(self.llm, prompt_value, config, **self._call_options(question))
        return _reply(answer, question.block, prompt_value)

    async def _aask(self, question: PointerQuestion, config: RunnableConfig) -> PointerReply:
        assert self.llm is not None  # noqa: S101 - checked by _early
        prompt_value = await self.prompt.ainvoke(question.variables, config)
        answer = await acall_model(self.llm, prompt_value, config, **self._call_options(question))
        return _reply(answer, question.block, prompt_value)

    def _call_options(self, question: PointerQuestion) -> dict[str, Any]:
        return {
            "structured_output": self.structured_output,
            "output": question.answer,
            "owner": self.get_name(),
            "log": self._log,
        }

    def _event_data(self, result: ResultT) -> dict[str, Any]:
        return result.event_data(self.get_name())

    def _runnable(self) -> Runnable[Any, Any]:
        # The mixin is only ever mixed into a Runnable.
        return cast("Runnable[Any, Any]", self)


class PointerBuilder(ComponentBuilder[C]):
    """The builder verbs of both pointer components, on top of :class:`ComponentBuilder`'s."""

    def max_candidates(self, value: int) -> Self:
        """Show the model at most ``value`` candidates."""
        return self._with(max_candidates=value)

    def timeout(self, seconds: float | None) -> Self:
        """Wait at most ``seconds`` for the model (``None``: the client's own timeout)."""
        return self._with(timeout=seconds)


def _reply(answer: ModelAnswer, block: CandidateBlock, prompt_value: PromptValue) -> PointerReply:
    prompt_text = "\n".join(message.text for message in prompt_value.to_messages())
    return PointerReply(answer.reply.text, answer.structured, block, prompt_text)
