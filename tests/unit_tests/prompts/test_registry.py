from __future__ import annotations

import importlib.metadata
import json
import logging
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.prompts import ChatPromptTemplate

from cogito_lc._core.structured_output import request_schema
from cogito_lc.document_compressors._pointers import pointer_model
from cogito_lc.extraction.fact_extractor import Fact
from cogito_lc.prompts import (
    ENTRY_POINT_GROUP,
    PROMPTS_DIR_ENV_VAR,
    PromptEntry,
    PromptFileError,
    PromptRegistry,
    PromptVariablesError,
    default_registry,
    get_prompt,
    resolve_prompt,
    validate_prompt_variables,
)
from cogito_lc.prompts import registry as prompts

BUILTIN_VARIABLES = {
    "fact_extraction": {"text", "context_section", "max_facts"},
    "pointer_filter": {"query", "candidates"},
    "supersession": {"memory", "candidates"},
    "snapshot": {"memories", "max_words"},
    "snapshot_pointer": {"memories"},
    "calibrate": {"corpus", "max_terms"},
}


def _human_text(template: ChatPromptTemplate, **variables: Any) -> str:
    return "\n".join(str(message.content) for message in template.format_messages(**variables))


@pytest.fixture
def fresh_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prompts, "_default", None)
    monkeypatch.delenv(PROMPTS_DIR_ENV_VAR, raising=False)


def test_builtins_are_named_versioned_and_described() -> None:
    entries = PromptRegistry().list()

    assert [entry.name for entry in entries] == sorted(BUILTIN_VARIABLES)
    for entry in entries:
        assert isinstance(entry.template, ChatPromptTemplate)
        assert entry.version
        assert entry.description
        assert "\n" not in entry.description
        assert entry.source == "builtin"
        assert set(entry.template.input_variables) == BUILTIN_VARIABLES[entry.name]
        assert entry.template.metadata == {
            "prompt_name": entry.name,
            "prompt_version": entry.version,
        }


def test_fact_extraction_builtin_renders_the_documented_prompt() -> None:
    text = _human_text(
        PromptRegistry().get("fact_extraction"),
        text="We picked Postgres.",
        context_section="Context:\n- project: billing\n\n",
        max_facts=4,
    )

    assert text.startswith(
        "You are extracting reusable memory facts from an AI agent's completed work.\n\n"
        "Context:\n- project: billing\n\nAgent output:\n---\nWe picked Postgres.\n---\n"
    )
    assert "Extract up to 4 atomic facts" in text
    for kind in ("rule", "preference", "context", "decision", "observation"):
        assert f'- "{kind}"' in text
    assert '{ "content": "...", "kind": "rule|preference|context|decision|observation"' in text
    assert text.endswith(
        'If the output contains no useful facts, return an empty list: {"items": []}'
    )


def test_pointer_filter_asks_for_integers_only() -> None:
    text = _human_text(
        PromptRegistry().get("pointer_filter"),
        query="when do tokens expire?",
        candidates="[1] tokens expire after 3600 s\n[2] the cache is Redis",
    )

    assert 'ONLY a JSON object whose "ids" array holds the numbers' in text
    assert "most to least relevant" in text
    assert '{"ids": []}' in text
    assert "when do tokens expire?" in text
    assert "[2] the cache is Redis" in text


def test_calibrate_example_is_literal_json() -> None:
    text = _human_text(PromptRegistry().get("calibrate"), corpus="p99 latency 40ms", max_terms=5)

    example = next(line for line in text.splitlines() if line.startswith('{"how fast"'))
    assert json.loads(example)["how fast"] == ["latency", "throughput", "ms"]


def test_get_unknown_name_lists_known_names() -> None:
    with pytest.raises(KeyError, match="pointer_filter"):
        PromptRegistry().get("no_such_prompt")


def test_register_new_name_and_refuse_silent_replacement() -> None:
    registry = PromptRegistry()
    entry = registry.register("summary", "Summarise {text}", version="3", description="d")

    assert registry.get("summary") is entry.template
    assert registry.entry("summary").version == "3"
    assert "summary" in registry
    with pytest.raises(ValueError, match="replace=True"):
        registry.register("summary", "Other {text}")
    registry.register("summary", "Other {text}", replace=True)
    assert _human_text(registry.get("summary"), text="x") == "Other x"


def test_overriding_a_builtin_needs_replace() -> None:
    registry = PromptRegistry()

    with pytest.raises(ValueError, match="already registered"):
        registry.register("fact_extraction", "Facts from {text}")
    registry.register("fact_extraction", "Facts from {text}", replace=True)
    assert _human_text(registry.get("fact_extraction"), text="x") == "Facts from x"


def test_override_without_required_variable_lists_missing_and_unexpected() -> None:
    registry = PromptRegistry()

    with pytest.raises(PromptVariablesError) as excinfo:
        registry.register("fact_extraction", "Facts from {body} for {team}", replace=True)

    message = str(excinfo.value)
    assert "missing ['text']" in message
    assert "unexpected ['body', 'team']" in message
    assert registry.entry("fact_extraction").source == "builtin"


def test_override_may_drop_optional_variables() -> None:
    registry = PromptRegistry()
    registry.register("fact_extraction", "Facts from {text}", replace=True)

    assert registry.get("fact_extraction").input_variables == ["text"]


def test_pointer_filter_override_must_keep_both_variables() -> None:
    with pytest.raises(PromptVariablesError, match=r"missing \['candidates'\]"):
        PromptRegistry().register("pointer_filter", "Pick for {query}", replace=True)


def test_unregister_reverts_builtin_and_removes_custom() -> None:
    registry = PromptRegistry()
    registry.register("fact_extraction", "Facts from {text}", replace=True)
    registry.register("custom", "Hi {name}")

    registry.unregister("fact_extraction")
    registry.unregister("custom")

    assert registry.entry("fact_extraction").source == "builtin"
    assert "custom" not in registry
    with pytest.raises(KeyError):
        registry.unregister("custom")


def test_empty_registry_has_no_builtins() -> None:
    assert PromptRegistry(builtins=False).list() == []


def test_get_returns_a_chat_prompt_for_string_templates() -> None:
    registry = PromptRegistry()
    registry.register("greeting", "Hello {name}")

    messages = registry.get("greeting").format_messages(name="Ada")
    assert [message.type for message in messages] == ["human"]


def test_load_dir_reads_yaml_and_json_files(tmp_path: Path) -> None:
    (tmp_path / "fact_extraction.yaml").write_text(
        "version: '2'\ndescription: billing facts\ntemplate: 'Billing facts in {text}'\n",
        encoding="utf-8",
    )
    (tmp_path / "system.txt").write_text("You answer about {topic}.", encoding="utf-8")
    (tmp_path / "qa.json").write_text(
        json.dumps(
            {
                "name": "qa",
                "messages": [
                    {"role": "system", "template_file": "system.txt"},
                    {"role": "user", "template": "{question}"},
                ],
            }
        ),
        encoding="utf-8",
    )
    (tmp_path / "notes.md").write_text("ignored", encoding="utf-8")
    registry = PromptRegistry()

    loaded = registry.load_dir(tmp_path)

    assert sorted(entry.name for entry in loaded) == ["fact_extraction", "qa"]
    fact_entry = registry.entry("fact_extraction")
    assert (fact_entry.version, fact_entry.description) == ("2", "billing facts")
    assert fact_entry.source.startswith("file:")
    messages = registry.get("qa").format_messages(topic="billing", question="Why?")
    assert [(m.type, m.content) for m in messages] == [
        ("system", "You answer about billing."),
        ("human", "Why?"),
    ]


@pytest.mark.parametrize("reference", ["/etc/hostname", "../outside.txt", "sub/../../outside.txt"])
def test_template_file_cannot_escape_directory(tmp_path: Path, reference: str) -> None:
    prompt_dir = tmp_path / "prompts"
    prompt_dir.mkdir()
    (tmp_path / "outside.txt").write_text("secret {text}", encoding="utf-8")
    (prompt_dir / "evil.json").write_text(
        json.dumps({"template_file": reference}), encoding="utf-8"
    )

    with pytest.raises(PromptFileError, match="no absolute paths"):
        PromptRegistry().load_dir(prompt_dir)


def test_symlinked_template_file_cannot_escape_directory(tmp_path: Path) -> None:
    prompt_dir = tmp_path / "prompts"
    prompt_dir.mkdir()
    (tmp_path / "outside.txt").write_text("secret {text}", encoding="utf-8")
    (prompt_dir / "link.txt").symlink_to(tmp_path / "outside.txt")
    (prompt_dir / "evil.yaml").write_text("template_file: link.txt\n", encoding="utf-8")

    with pytest.raises(PromptFileError, match="outside the prompt directory"):
        PromptRegistry().load_dir(prompt_dir)


def test_symlinked_prompt_file_cannot_escape_directory(tmp_path: Path) -> None:
    prompt_dir = tmp_path / "prompts"
    prompt_dir.mkdir()
    (tmp_path / "outside.yaml").write_text("template: 'x {text}'\n", encoding="utf-8")
    (prompt_dir / "inside.yaml").symlink_to(tmp_path / "outside.yaml")

    with pytest.raises(PromptFileError, match="outside the prompt directory"):
        PromptRegistry().load_dir(prompt_dir)


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ("template: [1, 2]\n", "must be a string"),
        ("- just\n- a list\n", "must hold a mapping"),
        ("description: nothing else\n", "needs 'template'"),
        ("template_format: jinja2\ntemplate: '{{ text }}'\n", "only 'f-string'"),
        ("messages:\n  - role: wizard\n    template: hi\n", "not one of"),
        ("template: [unclosed\n", "not valid YAML"),
        ("template: 'Facts in {text} like { this'\n", r"bad.yaml.*write a literal brace as \{\{"),
        ("messages:\n  - role: system\n    template: 'a } b'\n", "not a valid f-string"),
    ],
)
def test_malformed_prompt_files_are_rejected(tmp_path: Path, content: str, error: str) -> None:
    (tmp_path / "bad.yaml").write_text(content, encoding="utf-8")

    with pytest.raises(PromptFileError, match=error):
        PromptRegistry().load_dir(tmp_path)


def test_prompt_file_with_wrong_variables_fails_at_load(tmp_path: Path) -> None:
    (tmp_path / "fact_extraction.yaml").write_text("template: 'Facts in {body}'\n", "utf-8")

    with pytest.raises(PromptVariablesError, match=r"missing \['text'\]"):
        PromptRegistry().load_dir(tmp_path)


def test_missing_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(PromptFileError, match="does not exist"):
        PromptRegistry().load_dir(tmp_path / "absent")


@pytest.mark.usefixtures("fresh_default")
def test_default_registry_loads_prompts_dir_from_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "fact_extraction.yaml").write_text("template: 'Env facts {text}'\n", "utf-8")
    monkeypatch.setenv(PROMPTS_DIR_ENV_VAR, str(tmp_path))

    registry = default_registry()

    assert registry is default_registry()
    assert _human_text(registry.get("fact_extraction"), text="x") == "Env facts x"
    assert _human_text(prompts.get_prompt("fact_extraction"), text="y") == "Env facts y"


@pytest.mark.usefixtures("fresh_default")
def test_default_registry_without_environment_has_builtins() -> None:
    assert default_registry().entry("fact_extraction").source == "builtin"


# Objects the fake entry points below load, by "module:attribute" reference.
PLUGIN_HAIKU = "Write a haiku about {topic}"
PLUGIN_QA = {"name": "qa", "version": "7", "template": "Q: {question}"}
PLUGIN_POINTER_FILTER_WITHOUT_CANDIDATES = "Pick for {query}"
PLUGIN_FACT_EXTRACTION = "Plugin facts {text}"
PLUGIN_WITH_TEMPLATE_FILE = {"template_file": "/etc/hostname"}
PLUGIN_CALIBRATE = PromptEntry(
    "calibrate",
    ChatPromptTemplate.from_messages([("human", "Vocab of {corpus}")]),
    "9",
    "plugin vocab",
)


def plugin_snapshot() -> ChatPromptTemplate:
    return ChatPromptTemplate.from_messages([("human", "Index {memories}")])


def _entry_point(name: str, attribute: str) -> importlib.metadata.EntryPoint:
    return importlib.metadata.EntryPoint(name, f"{__name__}:{attribute}", ENTRY_POINT_GROUP)


def _fake_entry_points(
    monkeypatch: pytest.MonkeyPatch, *found: importlib.metadata.EntryPoint
) -> list[str]:
    """Make ``importlib.metadata.entry_points`` return ``found``; record the groups asked."""
    requested: list[str] = []

    def entry_points(*, group: str) -> tuple[importlib.metadata.EntryPoint, ...]:
        requested.append(group)
        return found

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    return requested


def test_entry_points_register_prompts_and_skip_broken_ones(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    requested = _fake_entry_points(
        monkeypatch,
        _entry_point("haiku", "PLUGIN_HAIKU"),
        _entry_point("snapshot", "plugin_snapshot"),
        _entry_point("mapping", "PLUGIN_QA"),
        importlib.metadata.EntryPoint("broken", "no_such_plugin_module:prompt", ENTRY_POINT_GROUP),
        _entry_point("pointer_filter", "PLUGIN_POINTER_FILTER_WITHOUT_CANDIDATES"),
    )
    registry = PromptRegistry()

    with caplog.at_level(logging.ERROR, logger="cogito_lc.prompts"):
        loaded = registry.load_entry_points()

    assert requested == [ENTRY_POINT_GROUP]
    assert [entry.name for entry in loaded] == ["haiku", "snapshot", "qa"]
    assert _human_text(registry.get("haiku"), topic="rain") == "Write a haiku about rain"
    assert registry.entry("qa").version == "7"
    assert registry.entry("snapshot").source == "entry_point:snapshot"
    assert registry.entry("pointer_filter").source == "builtin"
    skipped = {record.args[0] for record in caplog.records if isinstance(record.args, tuple)}
    assert skipped == {"broken", "pointer_filter"}


def test_entry_point_may_provide_a_prompt_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_entry_points(monkeypatch, _entry_point("calibrate", "PLUGIN_CALIBRATE"))
    registry = PromptRegistry()

    registry.load_entry_points()

    assert registry.entry("calibrate").version == "9"
    assert _human_text(registry.get("calibrate"), corpus="c") == "Vocab of c"


def test_entry_point_mapping_cannot_name_a_template_file(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _fake_entry_points(monkeypatch, _entry_point("qa", "PLUGIN_WITH_TEMPLATE_FILE"))

    with caplog.at_level(logging.ERROR, logger="cogito_lc.prompts"):
        loaded = PromptRegistry().load_entry_points()

    assert loaded == []
    assert "cannot use 'template_file'" in caplog.text


def test_entry_point_of_an_installed_distribution_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cogito_fake_prompts.py").write_text(
        'HAIKU = "Installed haiku about {topic}"\n', encoding="utf-8"
    )
    dist_info = tmp_path / "cogito_fake_prompts-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: cogito-fake-prompts\nVersion: 1.0\n", encoding="utf-8"
    )
    (dist_info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nhaiku = cogito_fake_prompts:HAIKU\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "cogito_fake_prompts", raising=False)
    registry = PromptRegistry()

    loaded = registry.load_entry_points()

    assert [entry.name for entry in loaded] == ["haiku"]
    assert _human_text(registry.get("haiku"), topic="tea") == "Installed haiku about tea"


@pytest.mark.usefixtures("fresh_default")
def test_default_registry_precedence_from_builtin_to_explicit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_entry_points(monkeypatch, _entry_point("fact_extraction", "PLUGIN_FACT_EXTRACTION"))
    (tmp_path / "snapshot.yaml").write_text("template: 'Env index {memories}'\n", "utf-8")
    (tmp_path / "calibrate.yaml").write_text("template: 'Env vocab {corpus}'\n", "utf-8")
    monkeypatch.setenv(PROMPTS_DIR_ENV_VAR, str(tmp_path))

    # Built-in, when nothing overrides it.
    assert default_registry().entry("pointer_filter").source == "builtin"
    # An entry point beats the built-in.
    assert default_registry().entry("fact_extraction").source == "entry_point:fact_extraction"
    assert _human_text(get_prompt("fact_extraction"), text="x") == "Plugin facts x"
    assert _human_text(get_prompt("snapshot"), memories="m") == "Env index m"

    # The prompt directory beats an entry point.
    monkeypatch.setattr(prompts, "_default", None)
    (tmp_path / "fact_extraction.yaml").write_text("template: 'Env facts {text}'\n", "utf-8")
    assert _human_text(get_prompt("fact_extraction"), text="x") == "Env facts x"

    # A prompt registered by the application beats the prompt directory.
    default_registry().register("calibrate", "App vocab {corpus}", replace=True)
    assert _human_text(resolve_prompt("calibrate"), corpus="c") == "App vocab c"

    # A prompt given to a component beats every registered one.
    explicit = resolve_prompt("fact_extraction", "Explicit facts {text}")
    assert _human_text(explicit, text="x") == "Explicit facts x"


def test_load_dir_skips_directories_with_prompt_suffixes(tmp_path: Path) -> None:
    (tmp_path / "nested.yaml").mkdir()
    (tmp_path / "qa.yaml").write_text("template: 'Q: {question}'\n", "utf-8")

    loaded = PromptRegistry().load_dir(tmp_path)

    assert [entry.name for entry in loaded] == ["qa"]


def test_load_file_outside_the_given_root_is_refused(tmp_path: Path) -> None:
    prompt_dir = tmp_path / "prompts"
    prompt_dir.mkdir()
    outside = tmp_path / "outside.yaml"
    outside.write_text("template: 'x {text}'\n", "utf-8")

    with pytest.raises(PromptFileError, match="outside the prompt directory"):
        PromptRegistry().load_file(prompt_dir / ".." / "outside.yaml", root=prompt_dir)


def test_resolve_prompt_precedence() -> None:
    registry = PromptRegistry()
    assert resolve_prompt("fact_extraction", registry=registry).metadata == {
        "prompt_name": "fact_extraction",
        "prompt_version": "2",
    }

    registry.register("fact_extraction", "Registered {text}", replace=True)
    assert _human_text(resolve_prompt("fact_extraction", registry=registry), text="x") == (
        "Registered x"
    )

    explicit = resolve_prompt("fact_extraction", "Explicit {text}", registry=registry)
    assert _human_text(explicit, text="x") == "Explicit x"


def test_resolve_prompt_checks_explicit_override() -> None:
    with pytest.raises(PromptVariablesError, match=r"missing \['text'\]"):
        resolve_prompt("fact_extraction", "No variables here", registry=PromptRegistry())


def test_validate_ignores_names_without_contract() -> None:
    validate_prompt_variables("anything", ChatPromptTemplate.from_messages([("human", "{x}")]))


def test_contract_names_the_variables_a_component_fills_in() -> None:
    contract = PromptRegistry.contract("fact_extraction")

    assert contract is not None
    assert contract.required == {"text"}
    assert contract.optional == {"context_section", "max_facts"}
    assert PromptRegistry.contract("anything") is None


def test_register_rejects_non_prompt_objects() -> None:
    with pytest.raises(TypeError, match="a PromptTemplate or a template string"):
        PromptRegistry().register("x", 42)  # type: ignore[arg-type]


def test_register_rejects_blank_name() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        PromptRegistry().register(" ", "{x}")


def _json_literals(text: str) -> list[Any]:
    """Every JSON object written on one line of ``text``, decoded."""
    found = []
    for match in re.finditer(r"\{.*?\}(?=\s|$|\.)", text):
        try:
            found.append(json.loads(match.group(0)))
        except json.JSONDecodeError:  # noqa: PERF203
            continue
    return found


def test_fact_prompt_asks_for_the_object_the_schema_describes() -> None:
    text = _human_text(
        PromptRegistry().get("fact_extraction"), text="x", context_section="", max_facts=3
    )
    schema = request_schema(Fact, many=True, max_items=3)

    assert "JSON array only" not in text
    assert {"items": []} in _json_literals(text)
    assert schema["required"] == ["items"]
    assert '{"items": [' in text
    assert set(schema["properties"]["items"]["items"]["properties"]) == {
        "content",
        "kind",
        "importance",
    }
    for field in ('"content"', '"kind"', '"importance"'):
        assert field in text


def test_pointer_prompt_examples_validate_against_the_pointer_schema() -> None:
    text = _human_text(PromptRegistry().get("pointer_filter"), query="q", candidates="[1] a")
    examples = [value for value in _json_literals(text) if isinstance(value, dict)]

    assert examples == [{"ids": []}, {"ids": [2]}, {"ids": [3, 1]}, {"ids": []}]
    for example in examples:
        pointer_model(3).model_validate(example)
    assert request_schema(pointer_model(3), many=False)["required"] == ["ids"]


@pytest.mark.parametrize("text", ["Facts in {text} like { this", "Facts in {text} }"])
def test_a_stray_brace_in_a_prompt_text_says_how_to_write_one(text: str) -> None:
    with pytest.raises(ValueError, match=r"not a valid f-string template.*\{\{ or \}\}"):
        PromptRegistry().register("fact_extraction", text)


def test_a_prompt_template_is_one_human_message_with_its_variables() -> None:
    from langchain_core.prompts import PromptTemplate

    registry = PromptRegistry()
    registry.register(
        "fact_extraction", PromptTemplate.from_template("Facts in {text}"), replace=True
    )

    messages = registry.get("fact_extraction").format_messages(text="deploys freeze")
    assert [(m.type, m.content) for m in messages] == [("human", "Facts in deploys freeze")]
