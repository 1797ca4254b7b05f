"""``python -m perseus_vault_core.cli``: the command line, as the console script runs it."""

from .main import run

run()
