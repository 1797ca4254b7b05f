"""The keyword arguments of ``Vault``'s verbs, generated from their params models.

A verb with many optional knobs (``recall``, ``prepare``, ...) takes them as
``**options: Unpack[RecallOptions]``: a ``TypedDict`` with one key per field of its params model, so
an editor completes every option and mypy checks its type, and the model stays the one description.
The TypedDicts live in :mod:`.options`, written by :func:`render`::

    python -m perseus_vault_core.contract.params.signatures > perseus_vault_core/contract/params/options.py

A test checks that the committed file is what :func:`render` writes today, and that every verb's
signature takes exactly its model's fields.
"""

from __future__ import annotations

import datetime as dt
import inspect
import types
import typing
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from .base import to_unix_ms
from .overview import CountsParams
from .reading import (
    CommunitiesParams,
    CommunitySummaryParams,
    GlobalRecallParams,
    HygieneParams,
    PrepareParams,
    RecallParams,
    RecallWhenParams,
    ScanParams,
    TraverseParams,
)
from .writing import RememberParams

# TypedDict name -> (its params model, the fields the verb takes as named arguments instead).
OPTIONS: dict[str, tuple[type[BaseModel], tuple[str, ...]]] = {
    "RememberOptions": (RememberParams, ("category", "key", "content")),
    "RecallOptions": (RecallParams, ("query",)),
    "SearchOptions": (RecallParams, ("query", "type")),
    "RecallByVectorOptions": (RecallParams, ("query", "mode")),
    "ScanOptions": (ScanParams, ("cursor", "limit")),
    "TraverseOptions": (TraverseParams, ("start", "depth", "relations", "direction")),
    "HygieneOptions": (HygieneParams, ("limit", "min_age_days")),
    "CommunitiesOptions": (CommunitiesParams, ()),
    "CountsOptions": (CountsParams, ()),
    "CommunitySummaryOptions": (CommunitySummaryParams, ("community_id",)),
    "GlobalRecallOptions": (GlobalRecallParams, ("query",)),
    "RecallWhenOptions": (RecallWhenParams, ("context",)),
    "PrepareOptions": (PrepareParams, ("context",)),
}


def _is_time(metadata: tuple[Any, ...]) -> bool:
    return any(getattr(m, "func", None) is to_unix_ms for m in metadata)


def type_text(tp: Any, models: set[type[BaseModel]]) -> str:
    """Source text for an annotation, as a caller may pass it (a time also as text or a datetime, a
    nested model also as a dict). Models it names are added to ``models``."""
    origin = get_origin(tp)
    if tp is type(None):
        return "None"
    if tp is Any:
        return "Any"
    if origin is Annotated:
        base, *metadata = get_args(tp)
        return "int | str | dt.datetime" if _is_time(tuple(metadata)) else type_text(base, models)
    if origin in (Union, types.UnionType):
        parts = [type_text(a, models) for a in get_args(tp)]
        return " | ".join(dict.fromkeys(p for text in parts for p in text.split(" | ")))
    if origin is Literal:
        return "Literal[" + ", ".join(repr(a) for a in get_args(tp)) + "]"
    if origin in (list, dict, tuple):
        return f"{origin.__name__}[{', '.join(type_text(a, models) for a in get_args(tp))}]"
    if tp is dt.datetime:
        return "dt.datetime"
    if inspect.isclass(tp) and issubclass(tp, BaseModel):
        models.add(tp)
        return f"{tp.__name__} | dict[str, Any]"
    if inspect.isclass(tp):
        return tp.__name__
    raise TypeError(f"no source text for {tp!r}")


def field_text(field: FieldInfo, models: set[type[BaseModel]]) -> str:
    """Source text for a model field's type (pydantic keeps a required field's validators apart from its
    annotation, in ``metadata``)."""
    if _is_time(tuple(field.metadata)):
        return "int | str | dt.datetime"
    return type_text(field.annotation, models)


def _import(model: type[BaseModel]) -> str:
    module = model.__module__
    if module.startswith("perseus_vault_core.contract.params."):
        return f"from .{module.rsplit('.', 1)[1]} import {model.__name__}"
    return f"from ...{module.removeprefix('perseus_vault_core.')} import {model.__name__}"  # from the core's root


def render() -> str:
    """The source of :mod:`.options`."""
    models: set[type[BaseModel]] = set()
    classes = []
    for name, (model, named) in OPTIONS.items():
        lines = [
            f"class {name}(TypedDict, total=False):",
            f'    """{model.__name__}\'s fields{" but " + ", ".join(named) if named else ""}."""',
            "",
        ]
        for field, info in model.model_fields.items():
            if field not in named:
                lines.append(f"    {field}: {field_text(info, models)}")
        classes.append("\n".join(lines))
    imports = sorted(_import(m) for m in models)
    return "\n".join(
        [
            '"""Keyword options of Vault\'s verbs, one TypedDict per params model (generated: do not edit).',
            "",
            "Regenerate with ``python -m perseus_vault_core.contract.params.signatures > perseus_vault_core/contract/params/options.py``.",
            '"""',
            "",
            "from __future__ import annotations",
            "",
            "import datetime as dt",
            "from typing import Any, Literal, TypedDict",
            "",
            *imports,
            "",
            "",
            "\n\n\n".join(classes),
            "",
        ]
    )


def signature_fields(method: Any) -> tuple[dict[str, Any], set[str]]:
    """A verb method's named parameters (name -> default) and the keys of its ``**options``."""
    named: dict[str, Any] = {}
    options: set[str] = set()
    hints = typing.get_type_hints(method, include_extras=True)
    for p in inspect.signature(method).parameters.values():
        if p.name == "self":
            continue
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            unpacked = get_args(hints[p.name])
            options = set(unpacked[0].__annotations__) if unpacked else set()
        else:
            named[p.name] = p.default
    return named, options


__all__ = ["OPTIONS", "dt", "field_text", "render", "signature_fields", "type_text"]

if __name__ == "__main__":
    print(render(), end="")
