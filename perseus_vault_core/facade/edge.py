"""The API's edge: how a call enters the engine and how what goes wrong leaves it.

Every ``Vault`` verb is wrapped in :func:`edge`, so a caller only ever handles the one error tree of
contract/errors.py; the helpers turn Python arguments into the params dicts the models validate.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import ValidationError

from ..contract.errors import InvalidInput, StorageError, VaultError
from ..contract.params import invalid
from ..primitives.forking import GATE
from ..storage import driver_errors

F = TypeVar("F", bound=Callable[..., Any])
_INSIDE = threading.local()  # .engine: the engine whose verb this thread is running, while it runs


def edge(method: F) -> F:
    """The API's edge: whatever the database or the runtime raises beneath a verb leaves as a VaultError.

    The modules below raise the vault's own errors on purpose; this catches what slips past them
    (an I/O error, a corrupt page), so callers only ever handle one error tree. A verb runs inside the
    fork gate (primitives/forking.py): a fork waits until no verb is inside SQLite, so a forked child's
    copies of the connections are idle, and it closes them before it opens its own. A verb's own call down
    (``Vault.call``, on the same engine) runs as it is: the verb's edge already holds all of this.
    """

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        engine = getattr(args[0], "_engine", None) if args else None
        if engine is not None and getattr(_INSIDE, "engine", None) is engine:
            return method(*args, **kwargs)
        with GATE.inside():
            return _call(method, args, kwargs, engine)

    return wrapper  # type: ignore[return-value]


def _call(method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], engine: Any) -> Any:
    """``method(*args, **kwargs)`` with what goes wrong beneath it turned into the vault's errors."""
    try:
        if engine is None:  # Vault.__init__: opening the vault leased a connection; give it back now
            result = method(*args, **kwargs)
            opened = getattr(args[0], "_engine", None) if args else None
            if opened is not None:
                with opened.backend.lease():
                    pass
            return result
        outer, _INSIDE.engine = getattr(_INSIDE, "engine", None), engine
        try:
            with engine.backend.lease():  # the verb keeps one connection; a pooled one goes back after
                return method(*args, **kwargs)
        finally:
            _INSIDE.engine = outer
    except VaultError:
        raise
    except driver_errors() as exc:  # evaluated only when something was raised
        raise StorageError(f"the database failed: {exc}") from exc
    except RecursionError:
        raise InvalidInput("argument", "is nested too deeply") from None
    except OverflowError as exc:
        raise InvalidInput("argument", f"a number is out of range ({exc})") from None
    except ValidationError as exc:  # a model built beneath the verb refused a value
        raise invalid(exc) from None
    except TypeError:
        wrong = _call_error(method, args, kwargs)
        if wrong is None:  # not the call's arguments: something beneath the verb
            raise
        raise wrong from None


def _call_error(
    method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> InvalidInput | None:
    """Why the call's arguments do not fit ``method``'s signature, as one line naming the argument (a
    misspelled one with its near name: ``qury: unknown argument (did you mean query?)``); None when they fit."""
    signature = inspect.signature(method)
    try:
        signature.bind(*args, **kwargs)
        return None
    except TypeError as exc:
        why = str(exc)
    names = [n for n, p in signature.parameters.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    bound = set(names[: len(args)]) | set(kwargs)
    for given in kwargs:
        if given not in signature.parameters:
            near = difflib.get_close_matches(given, [n for n in names if n not in bound and n != "self"], n=1)
            if near or not any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
                return InvalidInput(
                    given, "unknown argument" + (f" (did you mean {near[0]}?)" if near else "")
                )
    missing = [
        n for n in names if n not in bound and signature.parameters[n].default is inspect.Parameter.empty
    ]
    if missing:
        return InvalidInput(missing[0], "is required")
    return InvalidInput("arguments", why.split(": ", 1)[-1] if ": " in why else why)


def given(**values: Any) -> dict[str, Any]:
    """Keyword arguments as a params dict, leaving out the optional ones not given (``None``)."""
    return {k: v for k, v in values.items() if v is not None}


def listed(name: str, values: Any, what: str) -> list[Any]:
    """An iterable argument as a list (a string or a mapping is refused, not read item by item)."""
    if isinstance(values, (str, bytes, dict)):
        raise InvalidInput(name, f"must be a list of {what}")
    try:
        return list(values)
    except TypeError:
        raise InvalidInput(name, f"must be a list of {what}") from None


def path_text(name: str, value: Any) -> Any:
    """A path argument (text or ``os.PathLike``) as text for its params model; anything else is left for
    the model to refuse, naming ``name``. A NUL is refused here: the operating system would raise
    ``ValueError`` ("embedded null byte") past the edge."""
    text = os.fspath(value) if isinstance(value, os.PathLike) else value
    if isinstance(text, str) and "\x00" in text:
        raise InvalidInput(name, "contains NUL (U+0000), which no path holds")
    return text
