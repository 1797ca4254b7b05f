"""``ChatModelJudge``: any LangChain chat model as the vault's judge (``Vault(judge=...)``, docs/curation.md).

The vault finds, offline, the memories a new one may repeat, update or contradict (its candidates); a judge
decides, once, at write time: its ``update`` supersedes the older memory, its ``duplicate`` collapses the two
in recall, its ``distinct`` and ``related`` are kept so. This one asks a chat model, in one call per write
with candidates, for a JSON object of verdicts. What the model answers that is not a verdict on a candidate
(prose around the object, another id, another word) is left out: the vault's own relations stand for those,
so a model that answers badly never fails or changes a write it was not sure of.
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from perseus_vault_core import InvalidInput, SimilarMemory, date

from ..arguments import strict

VERDICTS = ("duplicate", "update", "distinct", "related")
SYSTEM = (
    "You judge an agent's long-term memory. A new memory is about to be stored; each candidate is an older "
    "memory it may repeat or change. For each candidate, answer exactly one of: duplicate (it says the same "
    "thing), update (the same fact about the same subject, with a value that changed: the one true later "
    "replaces the other), distinct (both are true at once: another subject, attribute or event), related "
    "(neither). Answer with one JSON object mapping each candidate's id to its verdict, and nothing else."
)
_OBJECT = re.compile(r"\{.*\}", re.S)


class ChatModelJudge:
    """``Vault(path, judge=ChatModelJudge(model))``: ``model`` any LangChain chat model (``BaseChatModel``)."""

    @strict
    def __init__(self, model: BaseChatModel) -> None:
        if not isinstance(model, BaseChatModel):
            raise InvalidInput(
                "model", f"must be a LangChain chat model (a BaseChatModel), not {type(model).__name__}"
            )
        self.model = model

    def __call__(self, memory: Any, candidates: list[SimilarMemory]) -> dict[int, str]:
        """Each candidate's verdict, as the model gave it (only the ones it gave well)."""
        reply = self.model.invoke([SystemMessage(SYSTEM), HumanMessage(prompt(memory, candidates))])
        return parse(str(reply.content), {c.id for c in candidates})


def prompt(memory: Any, candidates: list[SimilarMemory]) -> str:
    """The new memory and its candidates, each with when it became true."""
    when = date(memory.valid_from_ms) if memory.valid_from_ms is not None else "now"
    lines = [
        f"New memory ({memory.category}/{memory.key}, true from {when}): {memory.content}",
        "",
        "Candidates:",
    ]
    for c in candidates:
        lines.append(f"- id {c.id} ({c.category}/{c.key}, true from {date(c.true_from_ms)}): {c.text}")
    return "\n".join(lines)


def parse(text: str, ids: set[int]) -> dict[int, str]:
    """The verdicts in the first JSON object of ``text`` on the candidates ``ids`` (``"#3"`` or ``"3"`` as keys)."""
    found = _OBJECT.search(text)
    if found is None:
        return {}
    try:
        data = json.loads(found.group(0))
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    out = {}
    for key, verdict in data.items():
        number = str(key).lstrip("#").strip()
        if (
            number.isdigit()
            and int(number) in ids
            and isinstance(verdict, str)
            and verdict.lower() in VERDICTS
        ):
            out[int(number)] = verdict.lower()
    return out
