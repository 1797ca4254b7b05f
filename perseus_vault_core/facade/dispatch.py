"""Where each verb's work is done: the one function of a layer below the facade that :meth:`Vault.call`
hands a verb's validated params model to, with the engine, as ``work(engine, params)``. That function owns
the verb's transaction, its clock reading and any SQL; the facade only validates. tests/test_architecture.py
holds both sides: every entry is a function of a layer below, and every verb method ends in ``self.call``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel

from ..contract.errors import InvalidInput
from ..contract.params import ScopeParams
from ..contract.verbs import ADMIN_VERBS, ALIASES, VERBS
from ..engine.engine import Engine
from ..features import (
    backfill,
    conversations,
    counts,
    entities,
    graph,
    hygiene,
    import_export,
    proactive,
    remembering,
    scan,
    temporal,
    upkeep,
)
from ..features.graphrag import verbs as graphrag
from ..features.memory_files import verbs as memory
from ..recall.modes import query_vector

WORK: Mapping[str, Callable[..., Any]] = MappingProxyType(
    {
        "remember": remembering.remember,
        "remember_many": remembering.remember_many,
        "get_entity": entities.get_entity,
        "forget": entities.forget,
        "purge": entities.purge,
        "supersede": entities.supersede,
        "link": graph.link,
        "unlink": graph.unlink,
        "traverse": graph.traverse,
        "communities": graphrag.communities,
        "community_summary": graphrag.community_summary,
        "global_recall": graphrag.global_recall,
        "recall_when": proactive.recall_when,
        "prepare": proactive.prepare,
        "remember_conversation": conversations.remember,
        "conversation": conversations.conversation,
        "memory_import": memory.memory_import,
        "memory_unbind": memory.memory_unbind,
        "add_memory": memory.add_memory,
        "delete_memory": memory.delete_memory,
        "get_memory": memory.get_memory,
        "list_memory_files": memory.list_memory_files,
        "memory_export": memory.memory_export,
        "memory_recall": memory.memory_recall,
        "search": memory.search,
        "recall": Engine.recall,
        "scan": scan.scan,
        "counts": counts.counts,
        "hygiene": hygiene.hygiene,
        "history": temporal.history,
        "as_of": temporal.as_of,
        "valid_at": temporal.valid_at,
        "bitemporal": temporal.bitemporal,
        "recent": temporal.recent,
        "embed": backfill.embed,
        "import_jsonl": import_export.import_jsonl,
        "export_jsonl": import_export.export_jsonl,
        "stats": upkeep.stats,
        "check": upkeep.check,
        "reindex": upkeep.reindex,
        "backup": upkeep.backup,
        "rekey": upkeep.rekey,
    }
)
# Each verb's params model: the registry's, and for the one verb only Python callers have, its scope.
MODELS: Mapping[str, type[BaseModel]] = MappingProxyType(
    {**{v.name: v.params for v in VERBS + ADMIN_VERBS}, "memory_unbind": ScopeParams}
)
# What a verb's function takes beyond (engine, params): values only Python callers give, which no params
# model holds (a progress callback, an open file, an LLM to polish a summary, a query vector).
EXTRAS: Mapping[str, frozenset[str]] = MappingProxyType(
    {name: frozenset(list(inspect.signature(work).parameters)[2:]) for name, work in WORK.items()}
)


def run(engine: Engine, verb: str, params: BaseModel, extras: dict[str, Any]) -> Any:
    """``verb``'s work (a name or an alias) on its validated ``params``; a wrong verb, model or extra is
    refused."""
    name = ALIASES.get(verb, verb) if isinstance(verb, str) else ""
    work = WORK.get(name)
    if work is None:
        raise InvalidInput("verb", f"no verb named {verb!r}")
    model = MODELS[name]
    if type(params) is not model:  # its own model, not a subclass that may carry more
        given = type(params).__name__
        raise InvalidInput("params", f"{name} takes its validated {model.__name__}, not {given}")
    return work(engine, params, **_checked(name, extras))


# What a Python caller's extra must be, checked here once for the verb method and a direct Vault.call alike.
CALLBACKS = {
    "polish": "must be a function that takes the extractive text and returns text",
    "progress": "must be a function taking (done, total)",
}


def _checked(name: str, extras: dict[str, Any]) -> dict[str, Any]:
    """``extras`` refused unless each is an argument of the verb's function and of the kind it takes; a query
    vector made one unit row (``recall_by_vector``)."""
    checked = {}
    for extra, value in extras.items():
        if extra not in EXTRAS[name]:
            raise InvalidInput(extra, f"is not an argument of {name}")
        if extra in CALLBACKS and value is not None and not callable(value):
            raise InvalidInput(extra, CALLBACKS[extra])
        checked[extra] = query_vector(value) if extra == "vector" and value is not None else value
    return checked
