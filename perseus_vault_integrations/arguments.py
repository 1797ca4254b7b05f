"""How every adapter takes its arguments, whatever its framework.

- **The vault** is the first argument, ``vault``: an open :class:`Vault`, or a path to one. Given a
  path, the adapter opens the vault and owns it (its ``close()`` closes it; a failed construction
  closes it at once); given a Vault, the caller keeps it, and ``close()`` leaves it open.
- **Nothing unknown**: a misspelled or unknown keyword argument is refused with :class:`InvalidInput`
  naming it and the nearest accepted name, where Python would raise a ``TypeError`` and a pydantic
  model (the frameworks' default) would drop it without a word.
- **An embedding adapter** embeds with a vault's model (``vault``), or with any vault embedder
  (``embedder``), or with the bundled model.
- **Recall's parameters**, where an adapter takes them, are checked when it is made, not at its
  first query.
"""

from __future__ import annotations

import asyncio
import difflib
import functools
import inspect
import os
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Generic, ParamSpec, TypeVar

from pydantic import BaseModel

from perseus_vault_core import Embedder, InvalidInput, LazyEmbedder, RecallParams, Vault, validate

VaultLike = Vault | str | os.PathLike[str]
P = ParamSpec("P")
R = TypeVar("R")


class OwnsItsVault:
    """Mixed into every adapter over a vault: :meth:`close` closes the vault the adapter opened from a
    path (``_owned_vault``); a Vault it was given stays open, for its caller to close."""

    # Set by every constructor; no class default, which would hide a pydantic adapter's private attribute.
    _owned_vault: Vault | None

    def close(self) -> None:
        """Close the vault if this adapter opened it (from a path)."""
        if self._owned_vault is not None:
            self._owned_vault.close()


A = TypeVar("A", bound=OwnsItsVault)


class Opening(Generic[A]):
    """What an adapter's ``from_conn_string`` returns, as LangGraph's SQLite and Postgres savers and stores
    do: the adapter made on entering ``with`` or ``async with`` (opening its vault), closed on leaving."""

    def __init__(self, make: Callable[[], A]) -> None:
        self._make = make
        self._made: A | None = None

    def __enter__(self) -> A:
        self._made = self._make()
        return self._made

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._made is not None:
            self._made.close()
            self._made = None

    async def __aenter__(self) -> A:
        return await asyncio.to_thread(self.__enter__)

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.__exit__, kind, error, trace)


def conn_string(value: Any) -> str:
    """``from_conn_string``'s argument: a vault's path or a ``postgresql://`` URL, as text."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value:
        raise InvalidInput("conn_string", "must be a vault's path or a postgresql:// URL")
    return value


def open_vault(vault: VaultLike, *, embedder: Embedder | None = None) -> tuple[Vault, Vault | None]:
    """The vault an adapter uses, and again when the adapter owns it (opened it here, with ``embedder``
    when given), else ``None``: what goes in ``_owned_vault``."""
    if isinstance(vault, Vault):
        return vault, None
    if not isinstance(vault, (str, os.PathLike)):
        raise InvalidInput("vault", f"must be a Vault or a path to one, not {type(vault).__name__}")
    opened = Vault(vault, embedder=embedder)
    return opened, opened


@contextmanager
def vault_from(vault: VaultLike, *, embedder: Embedder | None = None) -> Iterator[tuple[Vault, Vault | None]]:
    """:func:`open_vault` for a constructor with more checks to come: a vault opened here is closed
    again if the ``with`` body fails."""
    opened, owned = open_vault(vault, embedder=embedder)
    try:
        yield opened, owned
    except BaseException:
        if owned is not None:
            owned.close()
        raise


def init_model(
    init: Callable[..., None], model: type[BaseModel], vault: VaultLike, fields: dict[str, Any]
) -> Vault | None:
    """Construct a pydantic adapter with ``init``, its base's ``__init__``: unknown ``fields`` refused,
    the vault given as its ``vault`` field (opened here from a path, and closed again if the fields
    fail validation). The vault the adapter owns, if any."""
    refuse_unknown(fields, model.model_fields, model.__name__)
    with vault_from(vault) as (opened, owned):
        init(vault=opened, **fields)
    return owned


def embedder_of(vault: VaultLike | None, embedder: Embedder | None) -> tuple[Embedder, Vault | None]:
    """What an embedding adapter embeds with: the model of ``vault``, else ``embedder``, else the
    bundled model (loaded on first use); second, the vault opened here from a path, for the adapter to close."""
    if vault is not None and embedder is not None:
        raise InvalidInput(
            "embedder", "give the vault or an embedder, not both (the vault embeds with its own)"
        )
    if vault is not None:
        with vault_from(vault) as (opened, owned):
            if opened.embedder is None:
                raise InvalidInput(
                    "vault", "was opened without an embedder (embedder=False): it has no model"
                )
            return opened.embedder, owned
    if embedder is None:
        return LazyEmbedder(), None
    if not isinstance(embedder, Embedder):
        raise InvalidInput("embedder", "must have identity, dimension and embed(texts)")
    return embedder, None


def refuse_unknown(given: Iterable[str], accepted: Collection[str], owner: str) -> None:
    """Refuse the first name in ``given`` that ``owner`` does not take, suggesting the nearest one it does."""
    for name in given:
        if name not in accepted:
            near = difflib.get_close_matches(name, list(accepted), n=1)
            hint = f"did you mean {near[0]!r}?" if near else f"it takes {', '.join(sorted(accepted))}"
            raise InvalidInput(name, f"is not an argument of {owner}; {hint}")


def strict(function: Callable[P, R]) -> Callable[P, R]:
    """``function`` (a constructor, or a factory) refusing unknown keyword arguments with
    :class:`InvalidInput` instead of a ``TypeError``; its signature stays as it was for type checkers."""
    parameters = inspect.signature(function).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        raise TypeError(f"{function.__qualname__} takes **kwargs: check them with refuse_unknown instead")
    keywords = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY
    accepted = frozenset(name for name, p in parameters.items() if p.kind in keywords and name != "self")
    owner = function.__qualname__.removesuffix(".__init__")

    @functools.wraps(function)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        refuse_unknown(kwargs, accepted, owner)
        return function(*args, **kwargs)

    return checked


def check_recall_params(
    params: dict[str, Any], reserved: Iterable[str], why: str, own: Iterable[str] = ()
) -> dict[str, Any]:
    """``params`` when they are valid arguments of ``Vault.recall`` (each bad one named) and take none
    of the ``reserved`` names (which the adapter sets itself, ``why`` says how). A misspelled name is
    refused with the nearest one that is taken: recall's, or the adapter's ``own`` arguments
    (``similarity_topk``: did you mean ``similarity_top_k``?)."""
    for name in reserved:
        if name in params:
            raise InvalidInput(name, why)
    try:
        validate(RecallParams, {"query": "", **params})
    except InvalidInput as error:
        if error.field in params and error.message == "unknown argument":
            known = [n for n in (*own, *RecallParams.model_fields) if n not in reserved and n != "query"]
            near = difflib.get_close_matches(error.field, known, n=1, cutoff=0.6)
            if near:
                raise InvalidInput(error.field, f"unknown argument (did you mean {near[0]}?)") from None
        raise
    return params


DOCUMENT_TESTS = ("$contains", "$not_contains")


def document_where(where_document: Any, at: str = "where_document") -> dict[str, Any]:
    """Chroma's filter on a document's text (``{"$contains": "t"}``, ``{"$not_contains": "t"}``, ``$and`` /
    ``$or`` of such filters) as the vault's ``where`` on the memory's content (docs/filters.md)."""
    if not isinstance(where_document, dict) or len(where_document) != 1:
        raise InvalidInput(
            at, 'must be one of {"$contains": text}, {"$not_contains": text}, {"$and": [...]}, {"$or": [...]}'
        )
    ((op, value),) = where_document.items()
    if op in ("$and", "$or"):
        if not isinstance(value, list) or not value:
            raise InvalidInput(f"{at}.{op}", "must be a non-empty list of document filters")
        return {op: [document_where(part, f"{at}.{op}.{i}") for i, part in enumerate(value)]}
    if op not in DOCUMENT_TESTS:
        raise InvalidInput(
            f"{at}.{op}", "is not a document filter the vault takes ($contains, $not_contains, $and, $or)"
        )
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{at}.{op}", "must be a non-empty string to look for in the text")
    return {"content": {op: value}}
