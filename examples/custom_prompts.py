"""Swap a built-in prompt: through a builder, and through a prompt file.

Precedence: a prompt given to a builder or ``from_llm(prompt=...)`` beats a
registered override (for example from a prompt file), which beats the built-in.

    python examples/custom_prompts.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from langchain_core.language_models.fake_chat_models import FakeListChatModel

from cogito_lc import FactExtractor, PromptRegistry

# Any chat model works here; this stand-in only lets us show the prompts
# without a model server (nothing is generated).
llm = FakeListChatModel(responses=["[]"])

# 1. Through a builder: the prompt must keep {text}; other variables are optional.
billing = (
    FactExtractor.builder(llm)
    .prompt("List the billing facts in this output as a JSON array:\n{text}")
    .build()
)
print("builder prompt:\n ", billing.prompt.format(text="Invoices are monthly."), "\n")

# 2. Through a prompt file, loaded into a registry (the default registry also
#    loads every file in the directory named by COGITO_PROMPTS_DIR).
with tempfile.TemporaryDirectory() as folder:
    Path(folder, "fact_extraction.yaml").write_text(
        'version: "billing-2"\n'
        "description: Facts for the billing code base\n"
        "template: |\n"
        "  Extract billing facts (at most {max_facts}) from:\n"
        "  {text}\n"
    )
    registry = PromptRegistry()
    registry.load_dir(folder)
    entry = registry.entry("fact_extraction")
    print(f"file prompt ({entry.source}, version {entry.version}):")
    from_file = FactExtractor.builder(llm).registry(registry).build()
    print(" ", from_file.prompt.format(text="Invoices are monthly.", max_facts=3))
