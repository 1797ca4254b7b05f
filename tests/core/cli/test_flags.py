"""The command line cannot drift from the verbs: every command's arguments are its params model's
fields, with the model's defaults, choices and meanings (perseus_vault_core/cli/flags.py)."""

from __future__ import annotations

import argparse
import typing
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo

from perseus_vault_core.cli import flags
from perseus_vault_core.cli.commands import COMMANDS
from perseus_vault_core.cli.flags import shape
from perseus_vault_core.cli.main import build_parser
from perseus_vault_core.cli.parser import listed
from perseus_vault_core.contract.params import PrepareParams, RecallParams, RememberManyParams
from perseus_vault_core.contract.verbs import ADMIN_VERBS, VERBS

# The documented exceptions (docs/cli.md says each): flags of the command line's own ...
CLI_ONLY = {
    "embed": {"quiet", "progress"},
    "import": {"quiet", "progress"},
    "reindex": {"quiet", "progress"},
    "scan": {"all"},
    "rekey": {"new_key_file"},  # a key never on the command line: from a file or the environment
    "remember-conversation": {"file"},  # the messages, from a file or standard input
}
# ... and fields a command takes another way.
ELSEWHERE = {"rekey": {"new_key"}, "remember-conversation": {"messages"}}
GLOBAL = ("help", "db", "json")


def _literals(annotation: Any) -> set[str]:
    if typing.get_origin(annotation) is Literal:
        return {str(v) for v in typing.get_args(annotation)}
    return {w for arm in typing.get_args(annotation) for w in _literals(arm)}


def _admits_none(annotation: Any) -> bool:
    return annotation is type(None) or any(_admits_none(arm) for arm in typing.get_args(annotation))


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _agrees(words: str, action: argparse.Action, name: str, field: FieldInfo) -> list[str]:
    """What is wrong with ``action`` as the argument for ``field`` (nothing, when they agree)."""
    problems = []
    where = f"{words} {action.option_strings[0] if action.option_strings else name}"
    default = None if field.is_required() else field.get_default(call_default_factory=True)
    help_text = action.help or ""
    if field.description and field.description.replace("%", "%%") not in help_text:
        problems.append(f"{where}: help does not say the field's description")
    words_taken = _literals(field.annotation)
    if words_taken and _admits_none(field.annotation) and isinstance(action.type, flags.NumberOr):
        words_taken.add("none")  # a number-or-word field that may be None takes "none" for it
    offered = set(map(str, action.choices or getattr(action.type, "words", ())))
    if words_taken != offered:
        problems.append(f"{where}: choices {sorted(offered)}, the model's {sorted(words_taken)}")
    if not action.option_strings:
        return problems
    if action.default is not argparse.SUPPRESS:
        problems.append(f"{where}: a default of its own ({action.default!r}); the vault applies the model's")
    flag = "--" + ("no_" if default is True else "").replace("_", "-") + name.replace("_", "-")
    if action.option_strings[0] != flag:
        problems.append(f"{where}: expected {flag}")
    if default is False and action.nargs != 0:
        problems.append(f"{where}: a switch defaulting to false takes no value")
    added = help_text.replace((field.description or "").replace("%", "%%"), "")  # what the generator added
    if default not in (None, False, True, [], "") and f"(default {_shown(default)}" not in added:
        problems.append(f"{where}: help does not say the model's default {_shown(default)}")
    if default is None and "default" in added:
        problems.append(f"{where}: help states a default the model does not have")
    return problems


def drift(
    words: str, parser: argparse.ArgumentParser, model: type[BaseModel], exclude: tuple[str, ...] = ()
) -> list[str]:
    """Where the command's arguments and the params model disagree (nothing, when they agree)."""
    actions = {a.dest: a for a in parser._actions if a.dest not in GLOBAL}
    fields = {n: f for n, f in model.model_fields.items() if n not in exclude}
    expected = set(fields) - ELSEWHERE.get(words, set())
    problems = [f"{words}: field {n} has no argument" for n in sorted(expected - set(actions))]
    problems += [
        f"{words}: argument {n} is no field of {model.__name__}"
        for n in sorted(set(actions) - expected - CLI_ONLY.get(words, set()))
    ]
    positional = [a.dest for a in parser._actions if not a.option_strings and a.dest in expected]
    required = [n for n, f in fields.items() if f.is_required() and n in expected]
    if positional != required:
        problems.append(f"{words}: positional arguments {positional}, the model's required fields {required}")
    for name in sorted(expected & set(actions)):
        problems += _agrees(words, actions[name], name, fields[name])
    return problems


@pytest.mark.parametrize("command", [c for c in COMMANDS if c.spec is not None], ids=lambda c: c.name)
def test_every_command_takes_exactly_its_verbs_fields(command: Any) -> None:
    parser = listed(build_parser())[command.name]
    assert drift(command.name, parser, command.spec.params, command.spec.exclude) == []


def test_no_field_takes_a_name_the_command_line_uses_itself() -> None:
    reserved = {"help", "db", "json", "command", "func", "creates", "serves", "memory_action"}
    assert not {n for c in COMMANDS for n in c.fields} & reserved


def test_the_drift_check_names_a_field_the_command_line_lacks() -> None:
    class Wider(RecallParams):
        shiny: int = Field(default=3, description="A knob added to the model")

    parser = listed(build_parser())["recall"]
    assert drift("recall", parser, Wider) == ["recall: field shiny has no argument"]


def test_the_drift_check_names_a_default_typed_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    parser = listed(build_parser())["prepare"]
    budget = next(a for a in parser._actions if a.dest == "max_chars")
    monkeypatch.setattr(budget, "help", "size budget (default 4000)")
    monkeypatch.setattr(budget, "default", 4000)
    problems = drift("prepare", parser, PrepareParams)
    assert problems == [
        "prepare --max-chars: help does not say the field's description",
        "prepare --max-chars: a default of its own (4000); the vault applies the model's",
        "prepare --max-chars: help does not say the model's default 1500",
    ]


def test_every_verb_is_a_command_but_the_batch_write() -> None:
    verbs = {v.name for v in VERBS + ADMIN_VERBS}
    commanded = {c.verb for c in COMMANDS}
    assert verbs - commanded == {"remember_many"}  # `import` writes batches from the command line
    # The command line's own: opening the file creates it (init); two vaults, an operator's copy (migrate);
    # serving its later calls (resident).
    assert commanded - verbs == {"init", "migrate", "bind_role", "resident"}


def test_help_shows_the_models_default_bounds_and_choices() -> None:
    parser = listed(build_parser())["recall"]
    helps = {a.dest: a for a in parser._actions}
    assert helps["limit"].help == "Most results to return (default 10; 1 to 1000)"
    assert helps["mode"].choices == ("fts5", "dense", "hybrid")
    assert helps["reinforce"].option_strings == ["--no-reinforce"]
    assert helps["as_of_unix_ms"].option_strings == ["--as-of-unix-ms", "--as-of"]
    assert set(listed(build_parser())["prepare"]._option_string_actions) >= {"--semantic", "--no-semantic"}


def test_a_field_without_a_command_line_form_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match="items"):
        shape("items", RememberManyParams.model_fields["items"])
