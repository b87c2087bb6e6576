"""The verbs every LLM-facing component's builder shares.

Each builder (``LlmExtractor.builder(llm)``, ``FactExtractor.builder(llm)``,
``PointerFilter.builder(llm)``, ``SupersessionJudge.builder(llm)``) starts from a chat
model, collects settings with ``.prompt(...)``, ``.registry(...)``, ``.model(...)``,
``.structured_output(...)`` and ``.name(...)`` (plus the component's own verbs), and
``.build()`` hands them to the component's
``from_llm(llm, *, prompt=None, registry=None, **fields)``. Each builder lives beside
its component (``SupersessionJudgeBuilder`` in
:mod:`cogito_lc.document_compressors.supersession`), since this layer cannot import
the components.

Example:
    ```python
    from typing import Any

    from langchain_core.language_models import FakeListChatModel
    from langchain_core.runnables import Runnable, RunnableLambda
    from cogito_lc.prompts.builders import ComponentBuilder


    class EchoBuilder(ComponentBuilder[dict[str, Any]]):
        def _create(self, llm: Runnable[Any, Any] | None, **fields: Any) -> dict[str, Any]:
            return {"llm": llm, **fields}


    built = EchoBuilder(FakeListChatModel(responses=["x"])).prompt("Q: {text}").name("echo").build()
    sorted(built)
    # ['llm', 'name', 'prompt']
    ```
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Generic, TypeVar

from langchain_core.runnables import Runnable
from typing_extensions import Self

from cogito_lc._core.model_call import with_model_name
from cogito_lc._core.structured_output import StructuredOutputMode
from cogito_lc.prompts.registry import PromptLike, PromptRegistry

__all__ = ["ComponentBuilder"]

C = TypeVar("C")


class ComponentBuilder(ABC, Generic[C]):
    r"""Step-by-step construction of an LLM-facing component ``C``.

    Subclasses add the component's own verbs (with :meth:`_with`) and implement
    :meth:`_create`, which receives the chat model and every collected setting.

    Example:
        ```python
        from langchain_core.language_models import FakeListChatModel
        from cogito_lc import PointerFilter

        llm = FakeListChatModel(responses=['{"ids": [1]}'])
        pointer_filter = (
            PointerFilter.builder(llm)
            .prompt("Which of these answer {query}?\n{candidates}")
            .structured_output("none")
            .name("memory_filter")
            .build()
        )
        pointer_filter.get_name(), pointer_filter.prompt.input_variables
        # ('memory_filter', ['candidates', 'query'])
        ```
    """

    def __init__(self, llm: Runnable[Any, Any] | None) -> None:
        """Start a builder for the chat model ``llm``."""
        self._llm = llm
        self._fields: dict[str, Any] = {}

    def _with(self, **fields: Any) -> Self:
        self._fields.update(fields)
        return self

    def prompt(self, template: PromptLike) -> Self:
        """Use ``template`` (a chat prompt, or the f-string text of one human message).

        It wins over the component's registry prompt and is checked against the same
        variables when the component is built.
        """
        return self._with(prompt=template)

    def registry(self, registry: PromptRegistry) -> Self:
        """Take the component's default prompt from ``registry`` instead of the default one."""
        return self._with(registry=registry)

    def model(self, name: str) -> Self:
        """Set the model name on the chat model, such as ``"qwen2.5:3b"``.

        Raises:
            ValueError: If there is no chat model, ``name`` is empty, or the chat model
                has no ``model`` or ``model_name`` field.
        """
        if self._llm is None:
            msg = "model() needs a chat model; pass one to builder(llm)."
            raise ValueError(msg)
        self._llm = with_model_name(self._llm, name)
        return self

    def structured_output(self, mode: StructuredOutputMode) -> Self:
        """Choose how the output schema reaches the model (default ``auto``)."""
        return self._with(structured_output=mode)

    def name(self, name: str) -> Self:
        """Set the run name shown in traces."""
        return self._with(name=name)

    def build(self) -> C:
        """Create the component from the chat model and the collected settings."""
        return self._create(self._llm, **self._fields)

    @abstractmethod
    def _create(self, llm: Runnable[Any, Any] | None, **fields: Any) -> C:
        """Create the component, typically ``Component.from_llm(llm, **fields)``."""
