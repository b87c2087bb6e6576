"""``python -m cogito_lc.cli``."""

from cogito_lc.cli.app import main

main()
