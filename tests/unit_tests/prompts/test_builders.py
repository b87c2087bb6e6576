from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models import FakeListChatModel
from langchain_ollama import ChatOllama
from pydantic import BaseModel

from cogito_lc import FactExtractor, LlmExtractor, PointerFilter
from cogito_lc.prompts import PromptRegistry
from cogito_lc.prompts.builders import ComponentBuilder

SHARED_VERBS = ("prompt", "registry", "model", "structured_output", "name", "build")


class Note(BaseModel):
    text: str


def _builders() -> list[ComponentBuilder[Any]]:
    llm = ChatOllama(model="base")
    return [LlmExtractor.builder(llm), FactExtractor.builder(llm), PointerFilter.builder(llm)]


@pytest.mark.parametrize("builder", _builders(), ids=lambda b: type(b).__name__)
def test_every_builder_has_the_shared_verbs(builder: ComponentBuilder[Any]) -> None:
    assert isinstance(builder, ComponentBuilder)
    for verb in SHARED_VERBS:
        assert callable(getattr(builder, verb))


def test_the_shared_verbs_reach_every_component() -> None:
    llm = ChatOllama(model="base")

    extractor = (
        LlmExtractor.builder(llm)
        .prompt("Note in {text}")
        .output(Note)
        .model("m1")
        .structured_output("none")
        .name("notes")
        .build()
    )
    facts = (
        FactExtractor.builder(llm)
        .prompt("Facts in {text}")
        .model("m2")
        .structured_output("none")
        .name("facts")
        .build()
    )
    pointer_filter = (
        PointerFilter.builder(llm)
        .prompt("{query}\n{candidates}")
        .model("m3")
        .structured_output("none")
        .name("filter")
        .build()
    )

    assert [c.get_name() for c in (extractor, facts, pointer_filter)] == [
        "notes",
        "facts",
        "filter",
    ]
    assert [extractor.llm.model, facts.extractor.llm.model, pointer_filter.llm.model] == [  # type: ignore[attr-defined, union-attr]
        "m1",
        "m2",
        "m3",
    ]
    assert extractor.structured_output == "none"
    assert facts.extractor.structured_output == "none"
    assert pointer_filter.structured_output == "none"
    assert llm.model == "base"


def test_prompt_name_reads_the_builders_registry() -> None:
    registry = PromptRegistry()
    registry.register("notes", "Registered: {text}")
    llm = FakeListChatModel(responses=['{"text": "n"}'])

    extractor = (
        LlmExtractor.builder(llm).registry(registry).prompt_name("notes").output(Note).build()
    )

    assert extractor.invoke("t") == Note(text="n")
    assert extractor.prompt.messages[0].prompt.template == "Registered: {text}"  # type: ignore[union-attr]


def test_model_without_a_chat_model_is_an_error() -> None:
    with pytest.raises(ValueError, match="needs a chat model"):
        PointerFilter.builder(None).model("x")


def test_llm_extractor_from_llm_needs_prompt_and_output() -> None:
    with pytest.raises(ValueError, match="needs prompt and output"):
        LlmExtractor.from_llm(FakeListChatModel(responses=["{}"]))
