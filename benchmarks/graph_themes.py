"""GraphRAG on stores nobody linked by hand: do ``global_recall``'s communities hold what a broad question needs?

Two stores, written as an agent writes them, with no ``link`` call:

- the team memory (benchmarks/data/team_memory.json): 198 memories, each remembered on the day it became
  valid, with the bundled model; 22 questions of the "what did we decide about X / what are the main themes
  of Y" kind written by hand for it (benchmarks/data/team_themes.json), each with the memories that answer it;
- locomo-dev's three conversations (../shared/data, read at run time), each in its own scope through
  ``remember_conversation``, and its multi-hop and open-domain questions (categories 1 and 3), each with the
  turns the dataset marks as its evidence.

For each question, ``global_recall(question)`` (3 communities, 5 evidence memories each: the defaults). A
question is *answered by a community* when a chosen community holds at least one of its memories and shows it
as evidence; *held* is the share of its memories that the chosen communities hold (whether shown or not).
Beside them, ``recall(question, limit=15)`` (as many memories as the three communities' evidence) and the share
of the question's memories among them. Summary quality: of every summary ``global_recall`` wrote, the share of
its sentences found word for word in the text of the community member it names.

    python -m benchmarks.run --only graph-themes
"""

from __future__ import annotations

import os
import re
import tempfile
from typing import Any

from perseus_vault_core import Vault
from perseus_vault_core.contract.readable import line_of

from . import conversation, devsets

ASKED = "2025-03-01"
EVIDENCE = 15  # global_recall's default: 3 communities x 5 evidence memories
_LINE = re.compile(r"^- (.*) \(#(\d+)\)$")


def _text(vault: Vault, entity_id: int) -> str:
    """A member's text as a summary may quote it: its summary and content, and a turn's as ``Speaker: text``."""
    e = vault.get_entity(entity_id)
    return " ".join(f"{e.summary or ''} {e.content}".split()) + "\n" + line_of(e.content, e.summary)


def ask(vault: Vault, questions: list[tuple[str, set[int], dict[str, Any]]]) -> dict[str, Any]:
    """Each question through ``global_recall`` and ``recall``; the shares described in the module's docstring."""
    answered = held = flat = 0.0
    lines = found_lines = 0
    seen_summaries: set[int] = set()
    for question, wanted, scope in questions:
        result = vault.global_recall(question, reinforce=False, **scope)
        members = {m for gc in result.communities for m in gc.community.members}
        shown = {e.id for gc in result.communities for e in gc.evidence}
        answered += bool(shown & wanted)
        held += len(members & wanted) / len(wanted)
        ranked = {i.id for i in vault.recall(question, limit=EVIDENCE, reinforce=False, **scope).items}
        flat += len(ranked & wanted) / len(wanted)
        for gc in result.communities:
            if gc.summary_id in seen_summaries:
                continue
            seen_summaries.add(gc.summary_id)
            for line in gc.summary.splitlines():
                m = _LINE.match(line)
                if m is None:
                    continue  # the headline: the community's shared words
                lines += 1
                sentence, member = m.group(1).rstrip("…"), int(m.group(2))
                found_lines += member in gc.community.members and sentence in _text(vault, member)
    n = len(questions)
    return {
        "questions": n,
        "answered": answered / n,
        "held": held / n,
        "recall15": flat / n,
        "summary_sentences": lines,
        "from_members": found_lines / lines if lines else 0.0,
    }


def team(model: Any) -> dict[str, Any]:
    data = devsets.team_memory()
    themes = devsets.team_themes()
    clock = devsets.Clock()
    with (
        tempfile.TemporaryDirectory() as tmp,
        Vault(os.path.join(tmp, "team.db"), embedder=model, clock=clock) as vault,
    ):
        names = {
            name: entity for entity, name in devsets.remember_dated(vault, clock, data["memories"]).items()
        }
        clock.now = devsets.day_ms(ASKED)
        graph = vault.communities()
        out = ask(vault, [(q["question"], {names[a] for a in q["answers"]}, {}) for q in themes["questions"]])
        out.update(memories=len(names), communities=graph.total, edges=graph.edges)
        return out


def locomo(model: Any) -> dict[str, Any]:
    turns, questions, qrels = conversation.load()  # from ../shared/data at run time
    with tempfile.TemporaryDirectory() as tmp, Vault(os.path.join(tmp, "locomo.db"), embedder=model) as vault:
        ids = {corpus: entity for entity, corpus in conversation.write_conversations(vault, turns).items()}
        graph = vault.communities()
        asked = [
            (q["text"], {ids[t] for t in qrels[q["_id"]]}, {"workspace_hash": q["metadata"]["conv"]})
            for q in questions
            if q["metadata"]["category"] in (1, 3)
        ]
        out = ask(vault, asked)
        out.update(memories=len(ids), communities=graph.total, edges=graph.edges)
        return out


def run(model: Any) -> dict[str, Any]:
    return {"team memory": team(model), "locomo-dev": locomo(model)}


def render(r: dict[str, Any]) -> list[str]:
    out = [
        "## GraphRAG on stores nobody linked",
        "",
        "Communities built over the relations the vault inferred at write time (no `link` call anywhere), asked"
        " broad questions through `global_recall` (3 communities, 5 evidence memories each). Answered: a chosen"
        " community shows one of the question's memories as evidence; held: the share of its memories the"
        " chosen communities hold; recall@15: the same share among `recall(question, limit=15)`'s items, for"
        " comparison. Summary sentences from members: the share of summary sentences found word for word in the"
        " member they name. See `benchmarks/graph_themes.py`.",
        "",
        "| store | memories | communities | questions | answered by a community | held | recall@15 |"
        " summary sentences from members |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, c in r.items():
        out.append(
            f"| {name} | {c['memories']:,} | {c['communities']} | {c['questions']} | {c['answered']:.3f} |"
            f" {c['held']:.3f} | {c['recall15']:.3f} | {c['from_members']:.3f} of {c['summary_sentences']} |"
        )
    return out + [""]


def main() -> None:
    from perseus_vault_core.embeddings import load as load_model

    from .vector_cache import CachingEmbedder

    print("\n".join(render(run(CachingEmbedder(load_model())))))


if __name__ == "__main__":
    main()
