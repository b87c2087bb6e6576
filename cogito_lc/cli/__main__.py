"""``python -m cogito_lc.cli``."""

from cogito_lc.cli import main

main()
