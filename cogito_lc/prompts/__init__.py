"""Named chat prompts for every LLM-facing component.

The registry, the built-in prompts, prompt files and the ``cogito_lc.prompts``
entry-point group; the registry is documented in :mod:`cogito_lc.prompts.registry`.
:class:`ComponentBuilder` (:mod:`cogito_lc.prompts.builders`) gives every LLM-facing
component's builder the same verbs. This package may import only :mod:`cogito_lc._core`.
"""

from __future__ import annotations

from cogito_lc.prompts.builders import ComponentBuilder
from cogito_lc.prompts.registry import (
    ENTRY_POINT_GROUP,
    PROMPTS_DIR_ENV_VAR,
    PromptContract,
    PromptEntry,
    PromptFileError,
    PromptRegistry,
    PromptVariablesError,
    default_registry,
    get_prompt,
    resolve_prompt,
    validate_prompt_variables,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "PROMPTS_DIR_ENV_VAR",
    "ComponentBuilder",
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
