"""Conversational memory: recall over the locomo-dev set (three LoCoMo conversations, in BEIR layout in
../shared/data/locomo-dev; read at run time, never copied).

Each conversation is its own scope (``workspace_hash``), and each question is asked only inside its
conversation's scope, through ``Vault.recall(question, limit=10)``. Reported: R@10 and nDCG@10 over
categories 1-4 (multi-hop, temporal, open-domain, single-hop: the usual LoCoMo retrieval setting),
each category, and category 5 (adversarial) apart, in every mode, for four ways of writing the turns:

- ``turns``: each turn one memory whose content is ``Speaker: text`` (how the held-out conversations
  are measured elsewhere, through plain ``remember``);
- ``lines``: the same through ``remember_many``, the speaker on a line of its own (``Speaker``, a line
  break, the text), as a transcript pasted line by line reads;
- ``conversation``: the conversational ingest path, ``remember_conversation(session, messages)``
  (one session per LoCoMo session, the speaker as each turn's summary);
- ``langchain``: LangChain chat messages through ``PerseusVaultChatMessageHistory``, one history per
  LoCoMo session (the conversation's first speaker a human message, the other an AI message): the text
  alone is the content, the session and the role are in the body.

A turn is known by its shape whichever way it was written (recall/turns.py), so each path's turns are
recalled with the same context.

And what the bundled model embeds for a turn, measured by the dense arm alone: the text, the speaker
and the text, with the session date, with the previous or the next turn, with both.

    python -m benchmarks.conversation [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from perseus_vault_core import Vault
from perseus_vault_core.embeddings import query_side

from .metrics import ndcg_at, recall_at
from .quality import MissingData, data_dir

NAME = "locomo-dev"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
RETRIEVAL = (1, 2, 3, 4)  # the usual LoCoMo retrieval setting leaves the adversarial questions out
# The default's R@10 over categories 1-4 that recall which generalises aims at on this development set, per
# ingest path (held-out conversations of the same kind score lower: a rule fitted here shows there).
# ``lines`` holds what ``turns`` holds; ``langchain`` has no target (its memories do not name the speaker).
DEVELOPMENT_TARGETS = {"turns": 0.72, "lines": 0.72, "conversation": 0.76}


def load(
    root: Path | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, dict[str, int]]]:
    base = data_dir([NAME], root) / NAME
    with open(base / "corpus.jsonl", encoding="utf-8") as handle:
        turns = [json.loads(line) for line in handle if line.strip()]
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with open(base / "qrels" / "test.tsv", encoding="utf-8") as handle:
        next(handle)
        for line in handle:
            qid, did, score = line.rstrip("\n").split("\t")
            qrels[qid][did] = int(score)
    with open(base / "queries.jsonl", encoding="utf-8") as handle:
        questions = [q for q in map(json.loads, handle) if q["_id"] in qrels]
    return turns, questions, dict(qrels)


def write_turns(vault: Vault, turns: list[dict[str, Any]], separator: str = ": ") -> None:
    """Each turn a plain memory, ``Speaker: text`` (or the speaker and the text parted by another
    ``separator``), keyed by its corpus id."""
    vault.remember_many(
        [
            {
                "category": "turn",
                "key": t["_id"],
                "content": f"{t['title']}{separator}{t['text']}",
                "workspace_hash": t["metadata"]["conv"],
            }
            for t in turns
        ]
    )


def write_chat_histories(vault: Vault, turns: list[dict[str, Any]]) -> None:
    """Each LoCoMo session a LangChain chat history of its conversation's scope; a message's id is its
    turn's corpus id (:func:`message_id` reads it back)."""
    from langchain_core.messages import AIMessage, HumanMessage

    from perseus_vault_integrations.langchain import PerseusVaultChatMessageHistory

    sessions: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    first_speaker: dict[str, str] = {}
    for t in turns:
        sessions[(t["metadata"]["conv"], t["metadata"]["session"])].append(t)
        first_speaker.setdefault(t["metadata"]["conv"], t["title"])
    for (conv, number), said in sorted(sessions.items()):
        history = PerseusVaultChatMessageHistory(vault, f"session-{number}", workspace_hash=conv)
        history.add_messages(
            [
                (HumanMessage if t["title"] == first_speaker[conv] else AIMessage)(
                    content=t["text"], id=t["_id"], name=t["title"]
                )
                for t in said
            ]
        )


def message_id(item: Any) -> str:
    """The corpus id of a chat message recalled (its LangChain message's id)."""
    return str(item.body["message"]["data"]["id"])


def write_conversations(vault: Vault, turns: list[dict[str, Any]]) -> dict[int, str]:
    """Each LoCoMo session through ``remember_conversation``; returns entity id -> corpus id."""
    sessions: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for t in turns:
        sessions[(t["metadata"]["conv"], t["metadata"]["session"])].append(t)
    corpus_id: dict[int, str] = {}
    for (conv, number), said in sorted(sessions.items()):
        written = vault.remember_conversation(
            f"session-{number}",
            [
                {
                    "speaker": t["title"],
                    "text": t["text"],
                    "time": t["metadata"]["timestamp"],
                    "id": t["metadata"]["dia_id"],
                }
                for t in said
            ],
            workspace_hash=conv,
        )
        corpus_id.update({turn.id: t["_id"] for turn, t in zip(written.turns, said)})
    return corpus_id


def evaluate(
    vault: Vault,
    questions: list[dict[str, Any]],
    qrels: dict[str, dict[str, int]],
    mode: str,
    name_of: Callable[[Any], str],
    **options: Any,
) -> dict[str, Any]:
    per: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for q in questions:
        result = vault.recall(
            q["text"], mode=mode, limit=10, reinforce=False, workspace_hash=q["metadata"]["conv"], **options
        )
        ranked = [name_of(item) for item in result.items]
        cell = per[q["metadata"]["category"]]
        cell[0] += recall_at(ranked, qrels[q["_id"]], 10)
        cell[1] += ndcg_at(ranked, qrels[q["_id"]], 10)
        cell[2] += 1
    main = [per[c] for c in RETRIEVAL if c in per]
    n = sum(c[2] for c in main)
    return {
        "r@10": sum(c[0] for c in main) / n,
        "ndcg@10": sum(c[1] for c in main) / n,
        "questions": int(n),
        "categories": {
            CATEGORIES[c]: {"r@10": v[0] / v[2], "ndcg@10": v[1] / v[2], "questions": int(v[2])}
            for c, v in sorted(per.items())
        },
    }


def embedding_texts(turns: list[dict[str, Any]], kind: str) -> list[str]:
    """What the model embeds for each turn, in each of the measured ways."""
    out = []
    for i, t in enumerate(turns):
        here = f"{t['title']}: {t['text']}"

        def near(j: int) -> str | None:
            if 0 <= j < len(turns) and (turns[j]["metadata"]["conv"], turns[j]["metadata"]["session"]) == (
                t["metadata"]["conv"],
                t["metadata"]["session"],
            ):
                return f"{turns[j]['title']}: {turns[j]['text']}"
            return None

        before, after = near(i - 1), near(i + 1)
        out.append(
            {
                "the text alone": t["text"],
                "speaker, a space, text": f"{t['title']} {t['text']}",
                "speaker: text (what the vault embeds)": here,
                "speaker: text, after the session date": f"{t['metadata']['timestamp'][:10]} {here}",
                "speaker: text, after the previous turn": "\n".join(x for x in (before, here) if x),
                "speaker: text, before the next turn": "\n".join(x for x in (here, after) if x),
                "speaker: text, between both neighbours": "\n".join(x for x in (before, here, after) if x),
            }[kind]
        )
    return out


EMBEDDINGS = (
    "the text alone",
    "speaker, a space, text",
    "speaker: text (what the vault embeds)",
    "speaker: text, after the session date",
    "speaker: text, after the previous turn",
    "speaker: text, before the next turn",
    "speaker: text, between both neighbours",
)


def embedding_choices(
    model: Any, turns: list[dict[str, Any]], questions: list[dict[str, Any]], qrels: dict[str, dict[str, int]]
) -> dict[str, dict[str, float]]:
    """The dense arm alone (exact cosine within each conversation) for each embedding choice."""
    by_conv: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(turns):
        by_conv[t["metadata"]["conv"]].append(i)
    asked = np.asarray(query_side(model)([q["text"] for q in questions]), dtype=np.float64)
    out = {}
    for kind in EMBEDDINGS:
        vectors = np.asarray(model.embed(embedding_texts(turns, kind)), dtype=np.float64)
        r10 = ndcg = 0.0
        n = 0
        for qi, q in enumerate(questions):
            if q["metadata"]["category"] not in RETRIEVAL:
                continue
            rows = by_conv[q["metadata"]["conv"]]
            order = np.lexsort((np.arange(len(rows)), -(vectors[rows] @ asked[qi])))[:10]
            ranked = [turns[rows[j]]["_id"] for j in order]
            r10 += recall_at(ranked, qrels[q["_id"]], 10)
            ndcg += ndcg_at(ranked, qrels[q["_id"]], 10)
            n += 1
        out[kind] = {"r@10": r10 / n, "ndcg@10": ndcg / n}
    return out


def run(model: Any, root: Path | None = None) -> dict[str, Any]:
    turns, questions, qrels = load(root)
    result: dict[str, Any] = {"turns": len(turns), "questions": len(questions), "paths": {}}
    with tempfile.TemporaryDirectory() as tmp:
        with Vault(os.path.join(tmp, "turns.db"), embedder=model) as vault:
            write_turns(vault, turns)
            result["paths"]["turns"] = {
                m: evaluate(vault, questions, qrels, m, lambda i: i.key) for m in ("fts5", "dense", "hybrid")
            }
        with Vault(os.path.join(tmp, "lines.db"), embedder=model) as vault:
            write_turns(vault, turns, "\n")
            result["paths"]["lines"] = {
                m: evaluate(vault, questions, qrels, m, lambda i: i.key) for m in ("fts5", "dense", "hybrid")
            }
        with Vault(os.path.join(tmp, "conversation.db"), embedder=model) as vault:
            names = write_conversations(vault, turns)
            result["paths"]["conversation"] = {
                m: evaluate(vault, questions, qrels, m, lambda i: names[i.id])
                for m in ("fts5", "dense", "hybrid")
            }
        with Vault(os.path.join(tmp, "langchain.db"), embedder=model) as vault:
            write_chat_histories(vault, turns)
            result["paths"]["langchain"] = {
                m: evaluate(vault, questions, qrels, m, message_id) for m in ("fts5", "dense", "hybrid")
            }
    result["embeddings"] = embedding_choices(model, turns, questions, qrels)
    return result


def render(r: dict[str, Any]) -> list[str]:
    out = [
        "## Conversational memory (locomo-dev)",
        "",
        f"{r['turns']:,} turns of three LoCoMo conversations, {r['questions']} questions, each asked inside its"
        " conversation's scope through `recall(question, limit=10)`; R@10 and nDCG@10 over categories 1-4 (the"
        " usual LoCoMo retrieval setting), then per category (5, adversarial, apart). `turns`: each turn one"
        " memory, `Speaker: text` (as the held-out conversations are measured); `lines`: the same with the"
        " speaker on a line of its own (`Speaker`, a line break, the text); `conversation`: the"
        " conversational ingest path (`remember_conversation`, the speaker as summary); `langchain`: LangChain"
        " chat messages (`PerseusVaultChatMessageHistory`, one history per session; the text alone, the"
        " session and role in the body). See `benchmarks/conversation.py`.",
        "",
        "| path | mode | R@10 (1-4) | nDCG@10 (1-4) | "
        + " | ".join(f"{n} R@10 / nDCG@10" for n in CATEGORIES.values())
        + " |",
        "|---|---|---|---|" + "---|" * len(CATEGORIES),
    ]
    for path, modes in r["paths"].items():
        for mode, s in modes.items():
            cats = " | ".join(
                f"{s['categories'][n]['r@10']:.3f} / {s['categories'][n]['ndcg@10']:.3f}"
                if n in s["categories"]
                else "-"
                for n in CATEGORIES.values()
            )
            out.append(f"| {path} | {mode} | {s['r@10']:.4f} | {s['ndcg@10']:.4f} | {cats} |")
    out += ["", "### Targets", "", "| target | figure | verdict |", "|---|---|---|"]
    for path, modes in r["paths"].items():
        hybrid = modes["hybrid"]
        ok = hybrid["r@10"] >= 0.70
        out.append(
            f"| {path}: hybrid R@10 over categories 1-4 at or above 0.70 (LoCoMo's best published turn-level"
            f" retriever: 0.675) | {hybrid['r@10']:.4f} | {'met' if ok else '**MISSED**'} |"
        )
        goal = DEVELOPMENT_TARGETS.get(path)
        if goal is not None:
            short = goal - hybrid["r@10"]
            out.append(
                f"| {path}: hybrid R@10 over categories 1-4 at or above {goal:.2f} (development target) | "
                f"{hybrid['r@10']:.4f} | {'met' if short <= 0 else f'**MISSED** by {short:.4f}'} |"
            )
        for metric in ("r@10", "ndcg@10"):
            best = max(modes["fts5"][metric], modes["dense"][metric])
            out.append(
                f"| {path}: hybrid {metric} at or above the better arm | {hybrid[metric]:.4f} vs {best:.4f} |"
                f" {'met' if hybrid[metric] >= best else '**MISSED**'} |"
            )
        for metric, label in (("r@10", "R@10"), ("ndcg@10", "nDCG@10")):
            worse = [
                n
                for n in CATEGORIES.values()
                if n in hybrid["categories"]
                and hybrid["categories"][n][metric]
                < max(modes[m]["categories"][n][metric] for m in ("fts5", "dense"))
            ]
            out.append(
                f"| {path}: hybrid {label} at or above the better arm in every category | "
                f"{', '.join(worse) or 'every category'}{' below' if worse else ''} | "
                f"{'**MISSED**' if worse else 'met'} |"
            )
    out += [
        "",
        "### What the model embeds for a turn",
        "",
        "The dense arm alone, exact cosine within each conversation, categories 1-4. The vault embeds a"
        " memory as `summary: content` (for a conversation turn: `Speaker: text`). The next turn helps a"
        " little more, but only once it exists: a turn's vector would have to be rewritten when the next"
        " one arrives, and hybrid gained about 0.005 R@10 from it in development, so the vault does not.",
        "",
        "| embedded text | R@10 | nDCG@10 |",
        "|---|---|---|",
    ]
    for kind, s in r["embeddings"].items():
        out.append(f"| {kind} | {s['r@10']:.4f} | {s['ndcg@10']:.4f} |")
    return out + [""]


def main() -> None:
    from perseus_vault_core.embeddings import load as load_model

    from .vector_cache import CachingEmbedder

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None)
    args = parser.parse_args()
    try:
        data_dir([NAME], args.data)
    except MissingData as error:
        raise SystemExit(f"benchmarks.conversation: {error}") from None
    result = run(CachingEmbedder(load_model()), args.data)
    print("\n".join(render(result)))


if __name__ == "__main__":
    main()
