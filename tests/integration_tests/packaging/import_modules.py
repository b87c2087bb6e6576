"""Import every module of the installed package; print what each import gave, as JSON.

Run by ``test_wheel.py`` inside a virtual environment with the built wheel: for each
module, ``null`` when it imported, else the exception's type and message.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys

import cogito_lc

outcomes: dict[str, str | None] = {}
for module in pkgutil.walk_packages(cogito_lc.__path__, "cogito_lc.", onerror=lambda _: None):
    if module.name.endswith(".__main__"):
        continue  # runs the command line
    try:
        importlib.import_module(module.name)
    except Exception as exc:
        outcomes[module.name] = f"{type(exc).__name__}: {exc}"
    else:
        outcomes[module.name] = None
json.dump({"file": cogito_lc.__file__, "modules": outcomes}, sys.stdout)
