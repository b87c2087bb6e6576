"""Benchmarks shipped with the package (``cogito-lc bench ...``); need the ``bench`` extra."""
