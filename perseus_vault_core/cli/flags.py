"""Command-line arguments generated from a params model: one argument per field, named after it.

- A required field is a positional argument, in the model's order; any other field is an option
  ``--field-name``.
- A bool is a switch: ``--x`` when it defaults to false, ``--no-x`` when it defaults to true (its help
  then says that giving it turns off what the field does: "Turns off (on by default): Count this
  retrieval ..."), and
  both when its default (None) means "decide for me". A field that is a bool or an object
  (recall's ``expansion``) is a switch too; the object form is for the API and the MCP tools.
- A ``Literal`` gives the choices; a number-or-word field (``min_score``: a number or ``auto``)
  takes either, and ``none`` when the field may be None; a list repeats its option; a dict or a
  model is JSON text; a time is unix milliseconds or ISO 8601 text (the model converts it).
- The help is the field's description, then its default and bounds as the model states them.

Options default to "not given" (``argparse.SUPPRESS``): only what the user typed reaches the vault,
which applies the model's defaults, so the command line never restates one.
"""

from __future__ import annotations

import argparse
import json
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, BeforeValidator
from pydantic.fields import FieldInfo

from ..contract.params import MAX_INT, is_advanced, to_unix_ms


@dataclass(frozen=True)
class Shape:
    """What a field's values look like on the command line."""

    kind: str  # switch, int, float, str, time, json, list (of text), ids (repeatable ids), or number_or (a number or a choice)
    choices: tuple[str, ...] = ()
    bounds: str = ""  # "1 to 1000", "at least 0", ...


_METAVARS = {"int": "N", "ids": "ID", "float": "X", "time": "TIME", "json": "JSON"}


def _forms(annotation: Any, extras: list[Any]) -> list[Any]:
    """The types a value may take (``None`` left out); the constraints found on the way (bounds,
    validators inside ``Annotated``) are added to ``extras``."""
    origin = get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        return [form for arm in get_args(annotation) for form in _forms(arm, extras)]
    if origin is Annotated:
        inner, *more = get_args(annotation)
        for extra in more:
            extras.extend(extra.metadata if isinstance(extra, FieldInfo) else [extra])
        return _forms(inner, extras)
    return [] if annotation is type(None) else [annotation]


def _bounds(extras: list[Any]) -> str:
    """The numeric bounds as a person reads them: "1 to 1000", "at least 0", "above 0"."""
    ge = next((c.ge for c in extras if hasattr(c, "ge")), None)
    gt = next((c.gt for c in extras if hasattr(c, "gt")), None)
    le = next((c.le for c in extras if hasattr(c, "le") and c.le != MAX_INT), None)
    if ge is not None and le is not None:
        return f"{_num(ge)} to {_num(le)}"
    low = f"at least {_num(ge)}" if ge is not None else f"above {_num(gt)}" if gt is not None else ""
    high = f"at most {_num(le)}" if le is not None else ""
    return ", ".join(b for b in (low, high) if b)


def _num(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def shape(name: str, field: FieldInfo) -> Shape:
    """How ``field`` is typed on the command line (TypeError when it cannot be: a list of objects)."""
    extras: list[Any] = list(field.metadata)
    forms = _forms(field.annotation, extras)
    words = tuple(str(v) for f in forms if get_origin(f) is Literal for v in get_args(f))
    others = [f for f in forms if get_origin(f) is not Literal]
    bounds = _bounds(extras)
    if any(isinstance(e, BeforeValidator) and e.func is to_unix_ms for e in extras):
        return Shape("time")
    if bool in others:
        return Shape("switch")
    if not others and words:
        return Shape("str", words)
    if words and others in ([float], [int]):  # a field that may be None takes "none" for it (min_score)
        return Shape("number_or", words + (("none",) if _admits_none(field.annotation) else ()), bounds)
    if len(others) == 1:
        form = others[0]
        if form in (int, float):
            return Shape(form.__name__, bounds=bounds)
        if form is str:
            return Shape("str")
        if get_origin(form) is list and _forms(get_args(form)[0], []) in ([str], [int]):
            return Shape("list" if _forms(get_args(form)[0], []) == [str] else "ids")  # ids: memory ids
        if (
            form is dict
            or get_origin(form) is dict
            or (isinstance(form, type) and issubclass(form, BaseModel))
        ):
            return Shape("json")
    raise TypeError(f"{name}: no command-line form for {field.annotation}")


def _admits_none(annotation: Any) -> bool:
    origin = get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        return any(_admits_none(arm) for arm in get_args(annotation))
    if origin is Annotated:
        return _admits_none(get_args(annotation)[0])
    return annotation is type(None)


def default(field: FieldInfo) -> Any:
    """The model's default for ``field`` (None for a required field)."""
    return None if field.is_required() else field.get_default(call_default_factory=True)


def help_text(field: FieldInfo, s: Shape, flag: str) -> str:
    """The field's description, then what the model says of its default and bounds."""
    notes = []
    value = default(field)
    text = field.description or ""
    if s.kind == "switch":
        if value is True:  # the flag is --no-x: its help says that giving it turns the field's meaning off
            text = f"Turns off (on by default): {text}" if text else text
    elif value not in (None, [], ""):
        notes.append(f"default {_num(value)}")
    if s.bounds:
        notes.append(s.bounds + (f", or {' or '.join(s.choices)}" if s.choices else ""))
    return (f"{text} ({'; '.join(notes)})" if notes else text).replace("%", "%%")


# --- value parsers (argparse's ``type=``) ----------------------------------------------------------


def time_value(text: str) -> int | str:
    """A time: unix ms as an integer, anything else as ISO 8601 text for the model to read."""
    return int(text) if text.strip().isdigit() else text


def json_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"is not valid JSON ({exc.msg})") from None
    except RecursionError:  # thousands of brackets deep: past any nesting the models take
        raise argparse.ArgumentTypeError("is nested too deeply to read as JSON") from None


class NumberOr:
    """A number, or one of a few words (``min_score``: a number or ``auto``)."""

    def __init__(self, words: tuple[str, ...]) -> None:
        self.words = words

    def __call__(self, text: str) -> float | str | None:
        if text == "none" and "none" in self.words:
            return None
        if text in self.words:
            return text
        try:
            return float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a number or {' or '.join(self.words)}, got {text!r}"
            ) from None


def _type(s: Shape) -> Any:
    """The function argparse reads the text with (None: keep it as text)."""
    if s.kind == "number_or":
        return NumberOr(s.choices)
    return {"int": int, "ids": int, "float": float, "time": time_value, "json": json_value}.get(s.kind)


# --- arguments -------------------------------------------------------------------------------------


def option(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_field(
    parser: argparse.ArgumentParser,
    name: str,
    field: FieldInfo,
    *,
    positional: bool = False,
    aliases: tuple[str, ...] = (),
    optional: str | None = None,
    piped: bool = False,
) -> argparse.Action:
    """One argument for ``field``: positional (``optional``: the value when it is left out) or an option;
    ``piped``: ``-`` stands for standard input."""
    s = shape(name, field)
    kwargs: dict[str, Any] = {
        "type": _type(s),
        "choices": s.choices if s.kind == "str" and s.choices else None,
    }
    if positional:
        kwargs["help"] = help_text(field, s, name) + (" (- reads it from standard input)" if piped else "")
        if optional is not None:
            kwargs |= {"nargs": "?", "default": optional, "help": f"{kwargs['help']} (default {optional})"}
        return parser.add_argument(name, **kwargs)
    value = default(field)
    flags = [option(name), *aliases]
    if s.kind == "switch":
        if value is True:
            flags = [option("no_" + name), *aliases]
        action: Any = (
            argparse.BooleanOptionalAction
            if value is None
            else ("store_false" if value is True else "store_true")
        )
        return parser.add_argument(
            *flags, dest=name, action=action, default=argparse.SUPPRESS, help=help_text(field, s, flags[0])
        )
    if s.kind in ("list", "ids"):
        kwargs["action"] = "append"
    metavar = (
        f"X|{'|'.join(s.choices)}"
        if s.kind == "number_or"
        else None
        if kwargs["choices"]
        else _METAVARS.get(s.kind, name.upper())
    )
    return parser.add_argument(
        *flags,
        dest=name,
        default=argparse.SUPPRESS,
        metavar=metavar,
        help=help_text(field, s, flags[0]),
        **kwargs,
    )


def add_fields(
    parser: argparse.ArgumentParser,
    model: type[BaseModel],
    names: list[str],
    *,
    positional: list[str],
    aliases: Mapping[str, tuple[str, ...]],
    optional: Mapping[str, str],
    piped: str = "",
) -> None:
    """The arguments for ``names`` of ``model``: ``positional`` first, in that order, then the options,
    the rarely needed knobs (:func:`params.advanced`) last; ``piped``: the positional ``-`` reads from stdin."""
    fields = model.model_fields
    for name in positional:
        add_field(
            parser, name, fields[name], positional=True, optional=optional.get(name), piped=name == piped
        )
    options = [n for n in names if n not in positional]
    for name in sorted(
        options, key=lambda n: is_advanced(fields[n])
    ):  # a stable sort keeps the model's order
        add_field(parser, name, fields[name], aliases=aliases.get(name, ()))
