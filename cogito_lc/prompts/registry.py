"""Named chat prompts for every LLM-facing component of cogito-lc.

Every component that talks to a language model takes its default prompt from a
:class:`PromptRegistry`. The registry ships built-in prompts and lets users swap
them without touching code.

Built-in prompts (each a ``ChatPromptTemplate`` with a name, a version and a
one-line description):

- ``fact_extraction``: turns agent output into atomic memory facts
  (variables ``text``; optional ``context_section``, ``max_facts``). The
  ``context_section`` value is empty or a ``Context:`` block ending in a blank line,
  so place it directly before the line that follows it.
- ``pointer_filter``: picks relevant candidates by number only
  (variables ``query``, ``candidates``).
- ``supersession``: says by number which stored memories a new memory supersedes
  or repeats, for ``SupersessionJudge`` (variables ``memory``, ``candidates``).
- ``snapshot``: condenses memories into a Markdown index, for
  ``SnapshotBuilder(mode="summary")`` (variables ``memories``; optional ``max_words``).
- ``snapshot_pointer``: groups numbered memories under topic headings, by number
  only, for ``SnapshotBuilder``'s default ``pointer`` mode (variables ``memories``).
- ``calibrate``: maps plain-English phrases to the corpus' technical terms
  (variables ``corpus``; optional ``max_terms``).

Where a prompt comes from, highest precedence first:

1. A prompt passed to a component's builder or ``from_llm(..., prompt=...)``.
2. An override in the registry. The default registry loads, in this order (a
   later source replaces an earlier one): the built-ins, the ``cogito_lc.prompts``
   entry-point group, the prompt files in the directory named by the
   ``COGITO_PROMPTS_DIR`` environment variable, then whatever the application
   passes to :meth:`PromptRegistry.register` with ``replace=True``.
3. The built-in prompt.

Components resolve their prompt when they are built, not on every call, so an
override must be registered before the component is built.

A prompt for a built-in name must keep the variables its component fills in:
:meth:`PromptRegistry.register` rejects a ``fact_extraction`` prompt without
``{text}`` and names the missing and unexpected variables.

Prompt files are YAML (``.yaml``, ``.yml``) or JSON (``.json``) mappings:

```yaml
name: fact_extraction          # defaults to the file name without extension
version: "2"
description: Facts for a billing code base
template: |                    # one human message ...
  Extract billing facts from {text}
# ... or a list of messages, each with an inline template or a template file
# relative to the prompt directory (no absolute paths, no "..")
messages:
  - role: system
    template_file: system.txt
  - role: human
    template: "{text}"
```

Only f-string templates are accepted from files.

Example:
    ```python
    from cogito_lc.prompts import PromptRegistry

    registry = PromptRegistry()
    registry.register(
        "fact_extraction",
        "List the billing facts in: {text}",
        version="billing-1",
        replace=True,
    )
    registry.get("fact_extraction").format_messages(text="Invoices are monthly.")
    ```
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

from langchain_core.prompts import (
    ChatPromptTemplate,
    HumanMessagePromptTemplate,
    StringPromptTemplate,
)

from cogito_lc.prompts._files import (
    PromptFileError,
    PromptSpec,
    chat_prompt,
    prompt_from_mapping,
    prompt_paths,
    read_prompt_file,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "PROMPTS_DIR_ENV_VAR",
    "PromptContract",
    "PromptEntry",
    "PromptFileError",
    "PromptRegistry",
    "PromptVariablesError",
    "default_registry",
    "get_prompt",
    "resolve_prompt",
    "validate_prompt_variables",
]

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "cogito_lc.prompts"
"""Entry-point group through which installed packages contribute prompts."""

PROMPTS_DIR_ENV_VAR = "COGITO_PROMPTS_DIR"
"""Environment variable naming a directory of prompt files for the default registry."""

PromptLike: TypeAlias = ChatPromptTemplate | StringPromptTemplate | str
"""A chat prompt, a string prompt (``PromptTemplate``) or the text of a single human
message in f-string format; the last two become one human message."""


class PromptVariablesError(ValueError):
    """A prompt does not have the variables its component fills in.

    Example:
        ```python
        from cogito_lc.prompts import PromptRegistry, PromptVariablesError

        try:
            PromptRegistry().register("fact_extraction", "Facts in {body}", replace=True)
        except PromptVariablesError as exc:
            print(exc)
        # Prompt 'fact_extraction' has the wrong variables: missing ['text'], unexpected
        # ['body']. Use only ['context_section', 'max_facts', 'text'] ...
        ```
    """


@dataclass(frozen=True)
class PromptContract:
    """The variables a component fills in when it formats a named prompt.

    Example:
        ```python
        from cogito_lc.prompts import PromptContract

        PromptContract(required=frozenset({"text"}), optional=frozenset({"max_facts"}))
        ```
    """

    required: frozenset[str]
    """Variables every prompt for this name must use."""

    optional: frozenset[str] = frozenset()
    """Variables a prompt may use; the component fills them in when present."""

    def check(self, name: str, variables: Iterable[str]) -> None:
        """Raise if ``variables`` miss a required one or use one nobody fills in.

        Args:
            name: Prompt name, quoted in the error.
            variables: Input variables of the prompt.

        Raises:
            PromptVariablesError: Listing the missing and the unexpected variables.
        """
        used = set(variables)
        missing = sorted(self.required - used)
        unexpected = sorted(used - self.required - self.optional)
        if not missing and not unexpected:
            return
        allowed = sorted(self.required | self.optional)
        msg = (
            f"Prompt {name!r} has the wrong variables: missing {missing}, unexpected "
            f"{unexpected}. Use only {allowed} (with {sorted(self.required)} required); "
            "write literal braces as '{{' and '}}'."
        )
        raise PromptVariablesError(msg)


@dataclass(frozen=True)
class PromptEntry:
    """A named prompt in a :class:`PromptRegistry`.

    Example:
        ```python
        from cogito_lc.prompts import PromptRegistry

        entry = PromptRegistry().entry("fact_extraction")
        entry.name, entry.version, entry.source
        # ('fact_extraction', '2', 'builtin')
        ```
    """

    name: str
    """Name components look the prompt up by."""

    template: ChatPromptTemplate
    """The chat prompt itself."""

    version: str
    """Version label, reported in the template metadata of every run."""

    description: str = ""
    """One-line description."""

    source: str = "registered"
    """Where the prompt came from: ``builtin``, ``entry_point:<name>``, ``file:<path>``
    or ``registered``."""


_EntryList = list[PromptEntry]

_FACT_EXTRACTION = """\
You are extracting reusable memory facts from an AI agent's completed work.

{context_section}Agent output:
---
{text}
---

Extract up to {max_facts} atomic facts that would be useful for future agents working
on similar tasks. Each fact must be:
- Self-contained (understandable without this output)
- Specific (not "used best practices" — name which ones)
- Actionable (tells a future agent something concrete)

Classify each fact as one of:
- "rule"        — a standing decision that must always be followed
- "preference"  — a softer guideline; follow unless there is a reason not to
- "context"     — situational information that informs decisions
- "decision"    — a past choice with rationale (informative, not prescriptive for future)
- "observation" — an ongoing state worth being aware of

Return a JSON object only, no prose, with the facts in its "items" array:
{{"items": [
  {{ "content": "...", "kind": "rule|preference|context|decision|observation", \
"importance": 0.0–1.0 }}
]}}

If the output contains no useful facts, return an empty list: {{"items": []}}"""  # noqa: RUF001

_POINTER_FILTER = """\
You are selecting which stored memories answer a query.

Query: {query}

Candidates:
{candidates}

Output ONLY a JSON object whose "ids" array holds the numbers of the relevant \
candidates, ordered from most to least relevant. Use only numbers listed above, each at \
most once. If no candidate is relevant, output {{"ids": []}}.
Examples: {{"ids": [2]}}   or   {{"ids": [3, 1]}}   or   {{"ids": []}}"""

_SUPERSESSION = """\
A new memory is being saved. Compare it with the stored memories below.

New memory: {memory}

Stored memories:
{candidates}

For each stored memory, decide:
- SUPERSEDES: the same subject with a new value, so the stored memory is now out \
of date. Example: "I moved to Denver" supersedes "I live in Austin".
- REPEATS: the new memory states the same fact again.
- Neither: it is about something else. Leave it out.

Output ONLY a JSON object with the numbers of the stored memories, each number in at \
most one list. If none applies, output {{"supersedes": [], "repeats": []}}.
Examples: {{"supersedes": [2], "repeats": []}}   or   {{"supersedes": [], "repeats": [1]}}"""

_SNAPSHOT = """\
You are writing a compact index of an agent's long-term memory. It is read at the \
start of every session so the agent knows what it can recall.

Memories:
{memories}

Write a Markdown index of at most {max_words} words. Group related memories under \
"## " headings (projects, people, decisions, open questions) with one "- " bullet per \
topic. Name the specific entities, terms and numbers a later search would need. Do \
not add anything that is not in the memories. Output only the Markdown."""

_SNAPSHOT_POINTER = """\
You are organising an agent's long-term memories into a short index read at the \
start of every session. Each memory has a number.

Memories:
{memories}

Group the memories into at most 12 topics. For each topic write a short heading \
(2 to 6 words) and list the numbers of the memories that belong under it, most \
important first. Use only numbers shown above; do not copy or rewrite memory text.

Return a JSON object only, no prose, for example:
{{"topics": [{{"heading": "Auth and sessions", "items": [3, 7]}}, \
{{"heading": "Billing decisions", "items": [1, 4, 9]}}]}}"""

_CALIBRATE = """\
You are building a vocabulary bridge for a memory search engine. Users ask in plain \
English; the stored memories use their domain's own terms.

Sample of stored memories:
{corpus}

List up to {max_terms} plain-English phrases a user might type, each mapped to the \
terms from the sample that mean the same thing. Use only terms that appear in the sample.

Return a JSON object only, no prose, for example:
{{"how fast": ["latency", "throughput", "ms"], "login": ["auth", "session token"]}}

If the sample has no domain-specific vocabulary, return {{}}"""


@dataclass(frozen=True)
class _Builtin:
    text: str
    version: str
    description: str
    contract: PromptContract = field(compare=False)


_BUILTINS: dict[str, _Builtin] = {
    "fact_extraction": _Builtin(
        _FACT_EXTRACTION,
        "2",
        "Extract atomic, classified memory facts from an agent's output.",
        PromptContract(frozenset({"text"}), frozenset({"context_section", "max_facts"})),
    ),
    "pointer_filter": _Builtin(
        _POINTER_FILTER,
        "2",
        "Select relevant candidates by number only, most relevant first.",
        PromptContract(frozenset({"query", "candidates"})),
    ),
    "supersession": _Builtin(
        _SUPERSESSION,
        "1",
        "Say by number which stored memories a new memory supersedes or repeats.",
        PromptContract(frozenset({"memory", "candidates"})),
    ),
    "snapshot": _Builtin(
        _SNAPSHOT,
        "1",
        "Condense stored memories into a Markdown index read at session start.",
        PromptContract(frozenset({"memories"}), frozenset({"max_words"})),
    ),
    "snapshot_pointer": _Builtin(
        _SNAPSHOT_POINTER,
        "1",
        "Group numbered memories under topic headings, by number only.",
        PromptContract(frozenset({"memories"})),
    ),
    "calibrate": _Builtin(
        _CALIBRATE,
        "1",
        "Map plain-English phrases to the technical terms of a corpus.",
        PromptContract(frozenset({"corpus"}), frozenset({"max_terms"})),
    ),
}


def validate_prompt_variables(name: str, template: ChatPromptTemplate) -> None:
    """Check a prompt for a built-in name against the variables its component fills in.

    Prompts for names without a contract pass unchecked.

    Args:
        name: Prompt name, such as ``"fact_extraction"``.
        template: Prompt to check.

    Raises:
        PromptVariablesError: If a required variable is missing or an unknown one is used.
    """
    builtin = _BUILTINS.get(name)
    if builtin is not None:
        builtin.contract.check(name, template.input_variables)


def as_chat_prompt(template: PromptLike) -> ChatPromptTemplate:
    """Return ``template`` as a chat prompt; a string or a string prompt becomes one human message.

    Args:
        template: A chat prompt, a ``PromptTemplate``, or the f-string text of a
            single human message.

    Returns:
        The chat prompt.

    Raises:
        TypeError: If ``template`` is none of these.
        ValueError: If the string is not a valid f-string template (a stray brace).
    """
    if isinstance(template, ChatPromptTemplate):
        return template
    if isinstance(template, StringPromptTemplate):
        return ChatPromptTemplate.from_messages([HumanMessagePromptTemplate(prompt=template)])
    if isinstance(template, str):
        return chat_prompt([("human", template)], "The prompt text")
    msg = (
        f"A prompt must be a ChatPromptTemplate, a PromptTemplate or a template string, got "
        f"{type(template).__name__}."
    )
    raise TypeError(msg)


def _tagged(template: ChatPromptTemplate, name: str, version: str) -> ChatPromptTemplate:
    metadata = {**(template.metadata or {}), "prompt_name": name, "prompt_version": version}
    return template.model_copy(update={"metadata": metadata})


class PromptRegistry:
    """A thread-safe registry of named chat prompts.

    Example:
        ```python
        from cogito_lc.prompts import PromptRegistry

        registry = PromptRegistry()
        "fact_extraction" in registry, registry.entry("fact_extraction").source
        # (True, 'builtin')
        registry.get("pointer_filter").input_variables
        # ['candidates', 'query']
        registry.register("fact_extraction", "Billing facts in {text}", replace=True)
        registry.entry("fact_extraction").source
        # 'registered'
        ```
    """

    def __init__(self, *, builtins: bool = True) -> None:
        """Create a registry.

        Args:
            builtins: Whether to start with the built-in prompts.
        """
        self._lock = threading.RLock()
        self._entries: dict[str, PromptEntry] = {}
        if builtins:
            for name in _BUILTINS:
                entry = self.builtin(name)
                self._entries[name] = entry

    @staticmethod
    def builtin(name: str) -> PromptEntry:
        """Return the built-in prompt shipped under ``name``, ignoring any override.

        Args:
            name: One of ``fact_extraction``, ``pointer_filter``, ``supersession``,
                ``snapshot``, ``snapshot_pointer``, ``calibrate``.

        Returns:
            A fresh copy of the built-in entry.

        Raises:
            KeyError: If there is no built-in prompt with that name.
        """
        if name not in _BUILTINS:
            msg = f"No built-in prompt named {name!r}; built-ins are {sorted(_BUILTINS)}."
            raise KeyError(msg)
        spec = _BUILTINS[name]
        template = _tagged(as_chat_prompt(spec.text), name, spec.version)
        return PromptEntry(name, template, spec.version, spec.description, "builtin")

    @staticmethod
    def contract(name: str) -> PromptContract | None:
        """Return the variable contract for a built-in name, or ``None``.

        Args:
            name: Prompt name.

        Returns:
            The contract, or ``None`` for names no component fills in.
        """
        builtin = _BUILTINS.get(name)
        return None if builtin is None else builtin.contract

    def get(self, name: str) -> ChatPromptTemplate:
        """Return the current prompt for ``name``.

        Args:
            name: Prompt name.

        Returns:
            The registered override if there is one, else the built-in prompt.

        Raises:
            KeyError: If no prompt is registered under that name.
        """
        return self.entry(name).template

    def entry(self, name: str) -> PromptEntry:
        """Return the current entry (prompt, version, description, source) for ``name``.

        Args:
            name: Prompt name.

        Returns:
            The entry.

        Raises:
            KeyError: If no prompt is registered under that name.
        """
        with self._lock:
            found = self._entries.get(name)
            known = sorted(self._entries)
        if found is None:
            msg = f"No prompt named {name!r}; registered prompts are {known}."
            raise KeyError(msg)
        return found

    def list(self) -> _EntryList:
        """Return every entry, sorted by name.

        Returns:
            The entries.
        """
        with self._lock:
            return [self._entries[name] for name in sorted(self._entries)]

    def __contains__(self, name: object) -> bool:
        """Whether a prompt is registered under ``name``."""
        with self._lock:
            return name in self._entries

    def register(
        self,
        name: str,
        template: PromptLike,
        *,
        version: str = "custom",
        description: str = "",
        replace: bool = False,
        source: str = "registered",
    ) -> PromptEntry:
        """Register a prompt under ``name``.

        Args:
            name: Prompt name; a built-in name overrides the built-in prompt.
            template: A chat prompt, or the f-string text of a single human message.
            version: Version label, added to the template metadata.
            description: One-line description.
            replace: Must be ``True`` to replace a prompt already registered under
                ``name``, built-ins included.
            source: Where the prompt came from, for diagnostics.

        Returns:
            The new entry.

        Raises:
            ValueError: If ``name`` is empty, or taken and ``replace`` is ``False``.
            PromptVariablesError: If a prompt for a built-in name has the wrong variables.
        """
        if not name or not name.strip():
            msg = "Prompt name must be a non-empty string."
            raise ValueError(msg)
        chat_prompt = as_chat_prompt(template)
        validate_prompt_variables(name, chat_prompt)
        entry = PromptEntry(name, _tagged(chat_prompt, name, version), version, description, source)
        with self._lock:
            if name in self._entries and not replace:
                msg = (
                    f"A prompt named {name!r} is already registered "
                    f"({self._entries[name].source}); pass replace=True to override it."
                )
                raise ValueError(msg)
            self._entries[name] = entry
        logger.debug("Registered prompt %r version %s from %s", name, version, source)
        return entry

    def unregister(self, name: str) -> None:
        """Remove the prompt registered under ``name``; a built-in name reverts to its built-in.

        Args:
            name: Prompt name.

        Raises:
            KeyError: If no prompt is registered under that name.
        """
        with self._lock:
            if name not in self._entries:
                msg = f"No prompt named {name!r} to unregister."
                raise KeyError(msg)
            if name in _BUILTINS:
                self._entries[name] = self.builtin(name)
            else:
                del self._entries[name]

    def load_file(
        self, path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None
    ) -> PromptEntry:
        """Load and register (replacing) one YAML or JSON prompt file.

        Args:
            path: The prompt file.
            root: Directory the file and its template files must stay in; defaults
                to the file's own directory.

        Returns:
            The registered entry.

        Raises:
            PromptFileError: If the file is malformed or reaches outside ``root``.
            PromptVariablesError: If a prompt for a built-in name has the wrong variables.
        """
        spec = read_prompt_file(path, root=root)
        return self._register_spec(spec, f"file:{Path(path).resolve()}")

    def load_dir(self, directory: str | os.PathLike[str]) -> _EntryList:
        """Load and register (replacing) every prompt file in ``directory``.

        Files ending in ``.yaml``, ``.yml`` or ``.json`` are read in name order;
        sub-directories are not searched. Template files they name must stay in
        ``directory``.

        Args:
            directory: Directory of prompt files.

        Returns:
            The registered entries.

        Raises:
            PromptFileError: If the directory is missing, or a file is malformed or
                reaches outside the directory.
            PromptVariablesError: If a prompt for a built-in name has the wrong variables.
        """
        return [self.load_file(path, root=directory) for path in prompt_paths(directory)]

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> _EntryList:
        """Register (replacing) the prompts that installed packages expose in ``group``.

        Each entry point's name is the prompt name. It must load to a
        ``ChatPromptTemplate``, a template string, a :class:`PromptEntry`, a mapping
        in the prompt-file format, or a callable returning one of these. A broken
        entry point is logged and skipped so one faulty plugin cannot stop the
        application.

        Args:
            group: Entry-point group to read.

        Returns:
            The registered entries.
        """
        found = importlib.metadata.entry_points(group=group)
        loaded = (self._load_plugin(entry_point) for entry_point in found)
        return [entry for entry in loaded if entry is not None]

    def _register_spec(self, spec: PromptSpec, source: str) -> PromptEntry:
        return self.register(
            spec.name,
            spec.template,
            version=spec.version,
            description=spec.description,
            replace=True,
            source=source,
        )

    def _load_plugin(self, entry_point: importlib.metadata.EntryPoint) -> PromptEntry | None:
        try:
            return self._register_plugin(entry_point.name, entry_point.load())
        except Exception:
            logger.exception(
                "Skipping prompt entry point %r (%s)", entry_point.name, entry_point.value
            )
            return None

    def _register_plugin(self, name: str, obj: Any) -> PromptEntry:
        value = obj() if callable(obj) and not isinstance(obj, ChatPromptTemplate) else obj
        source = f"entry_point:{name}"
        if isinstance(value, PromptEntry):
            return self.register(
                value.name,
                value.template,
                version=value.version,
                description=value.description,
                replace=True,
                source=source,
            )
        if isinstance(value, Mapping):
            return self._register_spec(prompt_from_mapping(value, name), source)
        return self.register(name, value, version="plugin", replace=True, source=source)


_default_lock = threading.Lock()
_default: PromptRegistry | None = None


def default_registry() -> PromptRegistry:
    """Return the process-wide registry, creating it on first use.

    On creation it holds the built-ins, then the ``cogito_lc.prompts`` entry points,
    then the prompt files in ``$COGITO_PROMPTS_DIR`` if that variable is set.

    Returns:
        The shared registry.

    Raises:
        PromptFileError: If ``$COGITO_PROMPTS_DIR`` is set but unusable or holds a
            malformed prompt file.
    """
    global _default  # noqa: PLW0603
    with _default_lock:
        if _default is None:
            registry = PromptRegistry()
            registry.load_entry_points()
            prompts_dir = os.environ.get(PROMPTS_DIR_ENV_VAR)
            if prompts_dir:
                registry.load_dir(prompts_dir)
            _default = registry
        return _default


def get_prompt(name: str) -> ChatPromptTemplate:
    """Return the prompt registered under ``name`` in the default registry.

    Args:
        name: Prompt name.

    Returns:
        The prompt.
    """
    return default_registry().get(name)


def resolve_prompt(
    name: str,
    override: PromptLike | None = None,
    *,
    registry: PromptRegistry | None = None,
) -> ChatPromptTemplate:
    """Pick the prompt a component uses, applying the documented precedence.

    Args:
        name: Registry name of the component's prompt.
        override: A prompt given to the component's builder or ``from_llm``; it wins
            over the registry and is checked against the same variable contract.
        registry: Registry to consult; the default registry when ``None``.

    Returns:
        The prompt to use.

    Raises:
        PromptVariablesError: If ``override`` has the wrong variables.
    """
    if override is not None:
        template = as_chat_prompt(override)
        validate_prompt_variables(name, template)
        return template
    return (registry if registry is not None else default_registry()).get(name)
