r"""Read prompt files (YAML or JSON) without letting them reach outside their directory.

A prompt file is a mapping with ``template`` (one human message), ``template_file``
(a file holding it) or ``messages`` (a list of ``role`` plus ``template`` or
``template_file``), and optionally ``name``, ``version``, ``description`` and
``template_format`` (only ``f-string``). Template files are named relative to the
prompt file; absolute paths, ``..`` and symbolic links leading outside the prompt
directory are refused.

Example:
    ```python
    import tempfile
    from pathlib import Path
    from cogito_lc.prompts._files import read_prompt_file

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory, "billing.yaml")
        path.write_text("version: '2'\ntemplate: 'Billing facts in {text}'\n", "utf-8")
        spec = read_prompt_file(path, root=directory)
    spec.name, spec.version, spec.template.input_variables
    # ('billing', '2', ['text'])
    ```
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

import yaml
from langchain_core.prompts import ChatPromptTemplate

__all__ = [
    "PROMPT_FILE_SUFFIXES",
    "PromptFileError",
    "PromptSpec",
    "prompt_from_mapping",
    "prompt_paths",
    "read_prompt_file",
]

PROMPT_FILE_SUFFIXES = (".yaml", ".yml", ".json")
"""Suffixes of the files a prompt directory is searched for."""

_ROLES = {"system": "system", "human": "human", "user": "human", "ai": "ai", "assistant": "ai"}


class PromptFileError(ValueError):
    """A prompt file is malformed or points outside its directory.

    Example:
        ```python
        from cogito_lc.prompts import PromptFileError, PromptRegistry

        try:
            PromptRegistry().load_dir("/no/such/prompt/directory")
        except PromptFileError as exc:
            print(exc)
        # Prompt directory '/no/such/prompt/directory' does not exist or is not a directory.
        ```
    """


@dataclass(frozen=True)
class PromptSpec:
    """A prompt read from a file or an entry point, ready to register."""

    name: str
    template: ChatPromptTemplate
    version: str
    description: str


def prompt_paths(directory: str | os.PathLike[str]) -> list[Path]:
    """Return the prompt files directly inside ``directory``, in name order.

    Raises:
        PromptFileError: If ``directory`` is not a directory.
    """
    root = Path(directory)
    if not root.is_dir():
        msg = f"Prompt directory {str(root)!r} does not exist or is not a directory."
        raise PromptFileError(msg)
    return sorted(
        child
        for child in root.iterdir()
        if child.suffix.lower() in PROMPT_FILE_SUFFIXES and child.is_file()
    )


def read_prompt_file(
    path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None
) -> PromptSpec:
    """Read one prompt file that must stay, with its template files, inside ``root``.

    Args:
        path: The prompt file.
        root: Directory the file and its template files must stay in; defaults to
            the file's own directory.

    Returns:
        The prompt; its name defaults to the file name without extension.

    Raises:
        PromptFileError: If the file is malformed or reaches outside ``root``.
    """
    file_path = Path(path)
    root_dir = Path(root) if root is not None else file_path.parent
    resolved = _inside(root_dir, file_path.resolve(), str(path))
    spec = _read_mapping(resolved)
    return PromptSpec(
        name=_string_field(spec, "name", resolved, default=resolved.stem),
        template=_prompt_from_spec(spec, resolved, root_dir),
        version=_string_field(spec, "version", resolved, default="file"),
        description=_string_field(spec, "description", resolved, default=""),
    )


def prompt_from_mapping(value: Mapping[str, Any], name: str) -> PromptSpec:
    """Build a prompt from a mapping in the prompt-file format given by an entry point.

    Template files are refused: an entry point has no directory to confine them to.

    Args:
        value: The mapping.
        name: Entry-point name; the prompt name unless the mapping has ``name``.

    Returns:
        The prompt.

    Raises:
        PromptFileError: If the mapping is malformed or names a template file.
    """
    if "template_file" in value or any(
        isinstance(message, Mapping) and "template_file" in message
        for message in value.get("messages", []) or []
    ):
        msg = f"Prompt entry point {name!r} cannot use 'template_file'; inline the template."
        raise PromptFileError(msg)
    origin = Path(f"<entry point {name}>")
    return PromptSpec(
        name=_string_field(value, "name", origin, default=name),
        template=_prompt_from_spec(value, origin, Path.cwd()),
        version=_string_field(value, "version", origin, default="plugin"),
        description=_string_field(value, "description", origin, default=""),
    )


def _inside(root: Path, candidate: Path, shown: str) -> Path:
    if not candidate.is_relative_to(root.resolve()):
        msg = f"Prompt path {shown!r} resolves outside the prompt directory {str(root)!r}."
        raise PromptFileError(msg)
    return candidate


def _read_mapping(path: Path) -> Mapping[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        msg = f"Cannot read prompt file {str(path)!r}: {exc}"
        raise PromptFileError(msg) from exc
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        msg = f"Prompt file {str(path)!r} is not valid {path.suffix[1:].upper()}: {exc}"
        raise PromptFileError(msg) from exc
    if not isinstance(data, Mapping):
        msg = f"Prompt file {str(path)!r} must hold a mapping with 'template' or 'messages'."
        raise PromptFileError(msg)
    return data


def _string_field(spec: Mapping[str, Any], key: str, path: Path, *, default: str) -> str:
    value = spec.get(key, default)
    if isinstance(value, (str, int, float)):
        return str(value)
    msg = f"Field {key!r} in prompt file {str(path)!r} must be a string."
    raise PromptFileError(msg)


def chat_prompt(
    messages: Sequence[tuple[str, str]], where: str, error: type[ValueError] = ValueError
) -> ChatPromptTemplate:
    """``ChatPromptTemplate.from_messages``; a template that is not an f-string names ``where``.

    Raises:
        ValueError: ``error``, if a message is not a valid f-string template (a stray
            brace); the message names ``where`` and says to write literal braces doubled.
    """
    try:
        return ChatPromptTemplate.from_messages(messages)
    except ValueError as exc:
        msg = (
            f"{where} is not a valid f-string template ({exc}): write a literal brace "
            "as {{ or }}, and a variable as {name}."
        )
        raise error(msg) from exc


def _prompt_from_spec(spec: Mapping[str, Any], path: Path, root: Path) -> ChatPromptTemplate:
    format_name = spec.get("template_format", "f-string")
    if format_name != "f-string":
        msg = (
            f"Prompt file {str(path)!r} uses template_format {format_name!r}; only "
            "'f-string' is accepted from files."
        )
        raise PromptFileError(msg)
    where = f"Prompt file {str(path)!r}"
    if "template" in spec or "template_file" in spec:
        return chat_prompt([("human", _message_text(spec, path, root))], where, PromptFileError)
    messages = spec.get("messages")
    if not isinstance(messages, Sequence) or isinstance(messages, str) or not messages:
        msg = f"Prompt file {str(path)!r} needs 'template', 'template_file' or 'messages'."
        raise PromptFileError(msg)
    messages = [_message(message, path, root) for message in messages]
    return chat_prompt(messages, where, PromptFileError)


def _message(message: Any, path: Path, root: Path) -> tuple[str, str]:
    if not isinstance(message, Mapping):
        msg = f"Each message in prompt file {str(path)!r} must be a mapping with a 'role'."
        raise PromptFileError(msg)
    role = _ROLES.get(str(message.get("role", "")).lower())
    if role is None:
        msg = (
            f"Message role {message.get('role')!r} in prompt file {str(path)!r} is not "
            f"one of {sorted(_ROLES)}."
        )
        raise PromptFileError(msg)
    return role, _message_text(message, path, root)


def _message_text(spec: Mapping[str, Any], path: Path, root: Path) -> str:
    if "template_file" in spec:
        return _read_template_file(spec["template_file"], path, root)
    text = spec.get("template")
    if not isinstance(text, str):
        msg = f"'template' in prompt file {str(path)!r} must be a string."
        raise PromptFileError(msg)
    return text


def _read_template_file(reference: Any, path: Path, root: Path) -> str:
    if not isinstance(reference, str) or not reference:
        msg = f"'template_file' in prompt file {str(path)!r} must be a relative path."
        raise PromptFileError(msg)
    relative = PurePath(reference)
    if relative.is_absolute() or relative.drive or ".." in relative.parts:
        msg = (
            f"'template_file' {reference!r} in prompt file {str(path)!r} must be a "
            "relative path inside the prompt directory (no absolute paths, no '..')."
        )
        raise PromptFileError(msg)
    target = _inside(root, (path.parent / relative).resolve(), reference)
    try:
        return target.read_text(encoding="utf-8")
    except OSError as exc:
        msg = f"Cannot read template file {reference!r} named in {str(path)!r}: {exc}"
        raise PromptFileError(msg) from exc
