"""Run an extraction as one traced run, with the model call nested under it.

Example:
    ```python
    from langchain_core.runnables import RunnableLambda
    from cogito_lc.extraction._tracing import run_traced
    from cogito_lc.extraction.llm_extractor import ExtractionMethod, ExtractionResult

    component = RunnableLambda(lambda text: text, name="Echo")
    result = run_traced(
        component,
        "hello",
        None,
        lambda child: ExtractionResult(["hello"], ExtractionMethod.TEXT),
        event=True,
    )
    result.value
    # ['hello']
    ```
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from langchain_core.callbacks import adispatch_custom_event, dispatch_custom_event
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import (
    ensure_config,
    get_async_callback_manager_for_config,
    get_callback_manager_for_config,
    patch_config,
)

if TYPE_CHECKING:
    from cogito_lc.extraction.llm_extractor import ExtractionResult

__all__ = ["EXTRACTION_EVENT", "arun_traced", "event_data", "run_traced"]

T = TypeVar("T")

EXTRACTION_EVENT = "cogito_lc.extraction"
"""Name of the custom event dispatched at the end of every extraction run.

Its data is a dict with ``name`` (the runnable's name), ``method``, ``count`` (items
returned), ``dropped`` (list items rejected by validation) and ``error``.
"""

EventPolicy: TypeAlias = bool | Callable[["ExtractionResult[Any]"], bool]
"""Whether to dispatch :data:`EXTRACTION_EVENT`, or a predicate on the result."""


def run_traced(
    runnable: Runnable[Any, Any],
    input_: Any,
    config: RunnableConfig | None,
    extract: Callable[[RunnableConfig], ExtractionResult[T]],
    *,
    event: EventPolicy,
) -> ExtractionResult[T]:
    """Run ``extract`` as one traced run of ``runnable``, with child runs nested under it.

    Args:
        runnable: The component whose run this is.
        input_: Input recorded on the run.
        config: Caller's config.
        extract: Does the work, given the config for child runs.
        event: Whether to dispatch :data:`EXTRACTION_EVENT` with the result, or a
            predicate on the result deciding it.

    Returns:
        The result of ``extract``; its value is recorded as the run's output.
    """
    config = ensure_config(config)
    run_manager = get_callback_manager_for_config(config).on_chain_start(
        None,
        input_,
        name=config.get("run_name") or runnable.get_name(),
        run_id=config.pop("run_id", None),
    )
    child = patch_config(config, callbacks=run_manager.get_child())
    try:
        result = extract(child)
        if _wants_event(event, result):
            dispatch_custom_event(EXTRACTION_EVENT, event_data(runnable, result), config=child)
    except BaseException as exc:
        run_manager.on_chain_error(exc)
        raise
    run_manager.on_chain_end(result.value)
    return result


async def arun_traced(
    runnable: Runnable[Any, Any],
    input_: Any,
    config: RunnableConfig | None,
    extract: Callable[[RunnableConfig], Awaitable[ExtractionResult[T]]],
    *,
    event: EventPolicy,
) -> ExtractionResult[T]:
    """Async :func:`run_traced`."""
    config = ensure_config(config)
    run_manager = await get_async_callback_manager_for_config(config).on_chain_start(
        None,
        input_,
        name=config.get("run_name") or runnable.get_name(),
        run_id=config.pop("run_id", None),
    )
    child = patch_config(config, callbacks=run_manager.get_child())
    try:
        result = await extract(child)
        if _wants_event(event, result):
            await adispatch_custom_event(
                EXTRACTION_EVENT, event_data(runnable, result), config=child
            )
    except BaseException as exc:
        await run_manager.on_chain_error(exc)
        raise
    await run_manager.on_chain_end(result.value)
    return result


def event_data(runnable: Runnable[Any, Any], result: ExtractionResult[Any]) -> dict[str, Any]:
    """Return the data of the :data:`EXTRACTION_EVENT` reporting ``result``."""
    value = result.value
    count = len(value) if isinstance(value, list) else int(value is not None)
    return {
        "name": runnable.get_name(),
        "method": result.method.value,
        "count": count,
        "dropped": result.dropped,
        "error": result.error,
    }


def _wants_event(event: EventPolicy, result: ExtractionResult[Any]) -> bool:
    return event(result) if callable(event) else event
