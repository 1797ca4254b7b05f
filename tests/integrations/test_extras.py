"""An adapter package's check for its framework (extras.py): the modules imported, or one error that names
the missing package and the extra that installs it, catchable as SetupError and as ImportError."""

from __future__ import annotations

import sys

import pytest

from perseus_vault_core import SetupError
from perseus_vault_integrations.extras import MissingExtra, require


def test_installed_modules_pass_and_are_imported() -> None:
    sys.modules.pop("colorsys", None)
    require("none", "these adapters", "json", "colorsys")
    assert "colorsys" in sys.modules


def test_a_missing_module_names_its_package_and_the_extra() -> None:
    with pytest.raises(MissingExtra) as caught:
        require("langchain", "the LangChain adapters", "json", "pv_absent_pkg.sub.module")
    error = caught.value
    assert str(error) == 'the LangChain adapters need pv_absent_pkg: pip install "perseus-vault[langchain]"'
    assert isinstance(error, SetupError) and isinstance(error, ImportError)
    assert isinstance(error.__cause__, ModuleNotFoundError)


def test_the_first_missing_module_is_the_one_named() -> None:
    with pytest.raises(ImportError, match="need pv_first_absent:"):
        require("mcp", "the MCP server", "pv_first_absent", "pv_second_absent")


def test_a_module_of_an_installed_package_that_is_missing_names_the_package() -> None:
    with pytest.raises(SetupError, match=r'need json: pip install "perseus-vault\[x\]"$'):
        require("x", "adapters", "json.pv_no_such_part")
