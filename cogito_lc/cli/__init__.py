"""The ``cogito-lc`` command line (Typer), a client of the service or of a local store.

Needs the ``cli`` extra. The top layer: it may import every other one.
"""

from __future__ import annotations

from cogito_lc.cli.app import app, main

__all__ = ["app", "main"]
