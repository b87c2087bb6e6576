"""One path for calling a chat model, shared by every LLM-facing component.

:func:`call_model` (and :func:`acall_model`) send a formatted prompt with the output
schema the structured-output mode asks for, retry once without it when the server
rejects it, and read the reply text back. :func:`failure_kind` (re-exported from
:mod:`cogito_lc._core.transport`) tells a timeout from an unreachable server from any
other failure. :func:`run_as_chain` runs a component's work as one LangChain run
(``Runnable._call_with_config``), with the model calls nested under it and the
component's custom event dispatched inside it. :func:`with_model_name` and
:func:`reply_text` are the small helpers the builders and components share.

Example:
    ```python
    from langchain_core.language_models import FakeListChatModel
    from langchain_core.prompts import ChatPromptTemplate
    from pydantic import BaseModel
    from cogito_lc._core.model_call import call_model


    class Person(BaseModel):
        name: str


    llm = FakeListChatModel(responses=['{"name": "Ada"}'])
    prompt = ChatPromptTemplate.from_template("Who is in {text}?").invoke({"text": "Ada"})
    answer = call_model(llm, prompt, {}, structured_output="none", output=Person, owner="demo")
    answer.reply.text, answer.structured
    # ('{"name": "Ada"}', False)
    ```
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from langchain_core.callbacks import (
    AsyncCallbackManagerForChainRun,
    CallbackManagerForChainRun,
    adispatch_custom_event,
    dispatch_custom_event,
)
from langchain_core.prompt_values import PromptValue
from langchain_core.runnables import Runnable, RunnableBinding, RunnableConfig
from pydantic import BaseModel

from cogito_lc._core.structured_output import (
    Attempt,
    ModelReply,
    StructuredOutputMode,
    attempts,
    read_reply,
    reply_text,
)
from cogito_lc._core.transport import FailureKind, failure_kind, schema_may_be_rejected

__all__ = [
    "FailureKind",
    "ModelAnswer",
    "acall_model",
    "arun_as_chain",
    "call_model",
    "failure_kind",
    "reply_text",
    "run_as_chain",
    "with_model_name",
]

logger = logging.getLogger(__name__)

R = TypeVar("R")


@dataclass(frozen=True)
class ModelAnswer:
    """What :func:`call_model` got back.

    Example:
        ```python
        from cogito_lc._core.model_call import ModelAnswer
        from cogito_lc._core.structured_output import ModelReply

        ModelAnswer(ModelReply("[1, 2]"), structured=True).reply.text
        # '[1, 2]'
        ```
    """

    reply: ModelReply
    """The reply text and, when LangChain decoded it, its JSON value."""

    structured: bool
    """Whether the output schema constrained the reply."""


def call_model(
    llm: Runnable[Any, Any],
    prompt: PromptValue,
    config: RunnableConfig,
    *,
    structured_output: StructuredOutputMode,
    output: type[BaseModel],
    many: bool = False,
    max_items: int | None = None,
    owner: str,
    log: logging.Logger = logger,
) -> ModelAnswer:
    """Call ``llm`` with the output schema, and once more without it if the server rejects it.

    Args:
        llm: Chat model, possibly bound.
        prompt: The formatted prompt.
        config: Config of the call (callbacks of the component's run).
        structured_output: How the schema reaches the model; ``auto`` is resolved here.
        output: Pydantic model of one item of the reply.
        many: Whether a list of items is asked for.
        max_items: Upper bound on the list length, if any.
        owner: Name of the calling component, for log messages.
        log: Logger the retry warning goes to (the calling component's).

    Returns:
        The reply and whether the schema constrained it.

    Raises:
        Exception: Whatever the model raised, other than a rejected schema.
    """
    structured, plain = _attempts(llm, structured_output, output, many, max_items, owner)
    if structured is not None:
        try:
            reply = structured.runnable.invoke(prompt, config, **structured.kwargs)
        except Exception as exc:
            if not _schema_rejected(exc, owner, log):
                raise
        else:
            return _answer(structured, reply)
    return _answer(plain, plain.runnable.invoke(prompt, config, **plain.kwargs))


async def acall_model(
    llm: Runnable[Any, Any],
    prompt: PromptValue,
    config: RunnableConfig,
    *,
    structured_output: StructuredOutputMode,
    output: type[BaseModel],
    many: bool = False,
    max_items: int | None = None,
    owner: str,
    log: logging.Logger = logger,
) -> ModelAnswer:
    """Async :func:`call_model`; the model is awaited through its async API."""
    structured, plain = _attempts(llm, structured_output, output, many, max_items, owner)
    if structured is not None:
        try:
            reply = await structured.runnable.ainvoke(prompt, config, **structured.kwargs)
        except Exception as exc:
            if not _schema_rejected(exc, owner, log):
                raise
        else:
            return _answer(structured, reply)
    return _answer(plain, await plain.runnable.ainvoke(prompt, config, **plain.kwargs))


def run_as_chain(
    runnable: Runnable[Any, Any],
    work: Callable[[RunnableConfig], R],
    input_: Any,
    config: RunnableConfig | None,
    *,
    output: Callable[[R], Any],
    event: str,
    event_data: Callable[[R], dict[str, Any] | None],
) -> R:
    """Run ``work`` as one chain run of ``runnable``, with child runs nested under it.

    Uses LangChain's ``Runnable._call_with_config``: the run is named after the
    runnable (or ``run_name``), its output is ``output(result)``, and ``event`` is
    dispatched inside it with ``event_data(result)`` unless that is ``None``.

    Example:
        ```python
        from langchain_core.runnables import RunnableLambda
        from cogito_lc._core.model_call import run_as_chain

        component = RunnableLambda(lambda text: text, name="Echo")
        run_as_chain(
            component,
            lambda child: {"value": "hello"},
            "hello",
            None,
            output=lambda result: result["value"],
            event="demo",
            event_data=lambda result: None,
        )
        # {'value': 'hello'}
        ```

    Args:
        runnable: The component whose run this is.
        work: Does the work, given the config for child runs.
        input_: Input recorded on the run.
        config: Caller's config.
        output: What of the result is recorded as the run's output.
        event: Name of the custom event.
        event_data: The event's data for a result; ``None`` dispatches nothing.

    Returns:
        What ``work`` returned.
    """
    results: list[R] = []

    def run(_: Any, run_manager: CallbackManagerForChainRun, config: RunnableConfig) -> Any:
        result = work(config)
        data = event_data(result)
        if data is not None:
            dispatch_custom_event(event, data, config=config)
        results.append(result)
        return output(result)

    runnable._call_with_config(run, input_, config)
    return results[0]


async def arun_as_chain(
    runnable: Runnable[Any, Any],
    work: Callable[[RunnableConfig], Awaitable[R]],
    input_: Any,
    config: RunnableConfig | None,
    *,
    output: Callable[[R], Any],
    event: str,
    event_data: Callable[[R], dict[str, Any] | None],
) -> R:
    """Async :func:`run_as_chain` (``Runnable._acall_with_config``)."""
    results: list[R] = []

    async def run(
        _: Any, run_manager: AsyncCallbackManagerForChainRun, config: RunnableConfig
    ) -> Any:
        result = await work(config)
        data = event_data(result)
        if data is not None:
            await adispatch_custom_event(event, data, config=config)
        results.append(result)
        return output(result)

    await runnable._acall_with_config(run, input_, config)
    return results[0]


def with_model_name(llm: Runnable[Any, Any], model: str) -> Runnable[Any, Any]:
    """Return a copy of ``llm`` that uses the model ``model``.

    Works for chat models with a ``model`` or ``model_name`` field (``ChatOllama``,
    ``ChatOpenAI`` and most others), also when wrapped by ``.bind(...)``.

    Example:
        ```python
        from langchain_ollama import ChatOllama
        from cogito_lc._core.model_call import with_model_name

        with_model_name(ChatOllama(model="a").bind(stop=["x"]), "qwen2.5:3b").bound.model
        # 'qwen2.5:3b'
        ```

    Args:
        llm: A chat model, possibly bound.
        model: Model name, such as ``"qwen2.5:3b"``.

    Returns:
        The reconfigured copy; ``llm`` itself is unchanged.

    Raises:
        ValueError: If ``model`` is empty or the chat model has no model-name field.
    """
    if not model:
        msg = "model must be a non-empty model name."
        raise ValueError(msg)
    if isinstance(llm, RunnableBinding):
        return llm.model_copy(update={"bound": with_model_name(llm.bound, model)})
    fields = type(llm).model_fields if isinstance(llm, BaseModel) else {}
    for field_name in ("model_name", "model"):
        if field_name in fields:
            return cast(
                "Runnable[Any, Any]", cast("BaseModel", llm).model_copy(update={field_name: model})
            )
    msg = (
        f"{type(llm).__name__} has no 'model' or 'model_name' field; set the model on "
        "the chat model itself instead of calling model()."
    )
    raise ValueError(msg)


def _attempts(
    llm: Runnable[Any, Any],
    mode: StructuredOutputMode,
    output: type[BaseModel],
    many: bool,
    max_items: int | None,
    owner: str,
) -> tuple[Attempt | None, Attempt]:
    """The attempt with the schema (``None`` when there is none) and the one without."""
    *structured, plain = attempts(llm, mode, output, many=many, max_items=max_items, owner=owner)
    return (structured[0] if structured else None), plain


def _answer(attempt: Attempt, reply: Any) -> ModelAnswer:
    return ModelAnswer(read_reply(reply), attempt.structured)


def _schema_rejected(exc: Exception, owner: str, log: logging.Logger) -> bool:
    if not schema_may_be_rejected(exc):
        return False
    log.warning(
        "%s: the model server rejected the output schema (%s); retrying without it. "
        "Set structured_output='none' or the mode your server supports.",
        owner,
        exc,
    )
    return True
