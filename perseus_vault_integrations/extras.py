"""Each adapter package checks its framework once, when it is imported, and names the extra to install."""

from __future__ import annotations

import importlib

from perseus_vault_core import SetupError


class MissingExtra(SetupError, ImportError):
    """An adapter's framework is not installed. A :class:`SetupError` like every environment problem,
    and an ``ImportError`` too, so that code guarding an optional import catches it as it would any other."""


def require(extra: str, adapters: str, *modules: str) -> None:
    """Import ``modules`` (what the ``adapters`` need), or fail naming the missing one and the
    perseus-vault ``extra`` that installs it."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            missing = (exc.name or module).split(".")[0]  # the package, not one of its modules
            raise MissingExtra(f'{adapters} need {missing}: pip install "perseus-vault[{extra}]"') from exc
