"""Three labelled development sets for the vault's curation and recall, in ``benchmarks/data/``.

Both were written by hand for this project, memory by memory, the way an agent's memory reads: short
first-person or team-voice notes, decisions with their reasons, runbook lines, tickets, chat lines
and facts about people, services, products and a user's life. No text was generated from templates.
Companies, people, hosts and numbers are invented. Other sets of the same kind are held out and
measured elsewhere, so tune against these, not toward them.

``curation.json`` asks whether the vault keeps the right memory when two look alike. Three lists,
each of pairs of memories; a memory is ``{"category", "key", "content", "valid_from": "YYYY-MM-DD"}``
(the two memories of a pair never share both category and key):

- ``updates``: ``{"older", "newer", "question", "domain", "split"}``. ``newer`` updates or contradicts
  ``older`` about the same subject (a region moved, a tool replaced, a role handed over, a preference
  changed, a deadline slipped, a price raised) and has the later ``valid_from``. ``question`` is what
  an agent would ask; its true answer is ``newer``. A good vault ranks ``newer`` above ``older``.
- ``paraphrases``: ``{"a", "b", "domain", "split"}``. The same fact written twice, from near-verbatim
  repeats (a word, punctuation or casing changed) to loose rewordings. A good vault collapses them.
- ``distinct``: ``{"a", "b", "domain", "split"[, "question_a"]}``. Similar but different memories,
  both true: tickets from one template, per-service facts, two people's preferences, two meetings,
  two incidents, two attributes of one entity. A good vault neither merges them nor marks either
  outdated; ``question_a``, where given, is answered by ``a`` only.

``domain`` names the subject area (infra, people, personal, preference, project, product, schedule,
and for ``distinct`` also ticket and incident). ``split`` is ``"dev"`` for the first half of each list
and ``"check"`` for the second, with the domains spread across both: tune on dev, confirm on check.

``team_memory.json`` is what a coding and operations assistant gathered over eight months with one
software team and its user: ``{"memories": [...], "questions": [...]}``.

- A memory is ``{"id": "m001", "category", "key", "content", "valid_from"[, "topic_path"][, "summary"]}``,
  in the order it was learnt. Services share vocabulary (each has a language, a database, an owner,
  a port), so a question about one attribute has distractors naming the same service. Facts that
  changed are kept in both versions, the older first.
- A question is ``{"question", "answers": [ids], "kind"[, "outdated": [ids]]}``; ``answers`` are the
  memories that answer it (for a fact that changed, only the current one). ``kind`` is one of
  ``attribute`` (one attribute of an entity that has several), ``paraphrase`` (the answers share no
  content word with the question), ``current`` (a changed fact; ``outdated`` lists the older versions
  the answer must outrank), ``howto`` (a runbook), ``preference``, ``person``, ``decision-why``, ``chat``.

``bridges.json`` asks questions only two memories answer together, as HotpotQA's bridge questions do: "which
region hosts the service Alice owns?" needs "Alice Moreau owns billing-api" and "billing-api is deployed in
eu-west-1", and the second names neither Alice nor a region. ``{"memories": [...], "questions": [...]}``: 110
memories of one company's services, people, tools, customers and one user's life (a memory as in
``team_memory.json``), each a bridge of some question or a distractor sharing its vocabulary; 54 questions
``{"question", "answers": [the memory the question names, the memory that holds the answer]}``.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from perseus_vault_core import Vault

DATA = Path(__file__).resolve().parent / "data"
SPLITS = ("dev", "check")


def curation(split: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """The three lists of ``curation.json`` (``updates``, ``paraphrases``, ``distinct``), each
    narrowed to ``split`` ("dev" or "check") when one is given."""
    if split is not None and split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS} or None, not {split!r}")
    data: dict[str, list[dict[str, Any]]] = _load("curation.json")
    if split is None:
        return data
    return {name: [item for item in items if item["split"] == split] for name, items in data.items()}


def candidates() -> dict[str, list[dict[str, Any]]] | None:
    """``candidates.json``: a larger set of the same three lists as ``curation.json`` (at least 150 pairs
    of each kind, the phrasing of each change varied), for checking what was tuned on curation.json's dev
    half; ``None`` while it is not there."""
    if not (DATA / "candidates.json").exists():
        return None
    data: dict[str, list[dict[str, Any]]] = _load("candidates.json")
    return data


def team_memory() -> dict[str, list[dict[str, Any]]]:
    """``team_memory.json``: ``{"memories": [...], "questions": [...]}``."""
    data: dict[str, list[dict[str, Any]]] = _load("team_memory.json")
    return data


def team_themes() -> dict[str, Any]:
    """``team_themes.json``: broad questions over the team memory, ``{"questions": [{question, answers}]}``."""
    data: dict[str, Any] = _load("team_themes.json")
    return data


def bridges() -> dict[str, list[dict[str, Any]]]:
    """``bridges.json``: ``{"memories": [...], "questions": [...]}``."""
    data: dict[str, list[dict[str, Any]]] = _load("bridges.json")
    return data


def day_ms(day: str) -> int:
    """A set's ISO date (``valid_from``) as Unix milliseconds, UTC."""
    return int(dt.datetime.fromisoformat(day).replace(tzinfo=dt.UTC).timestamp() * 1000)


class Clock:
    """The vault's clock, set by hand: each memory written on the day it became valid."""

    now = 0

    def __call__(self) -> int:
        return self.now


def remember_dated(vault: Vault, clock: Clock, memories: list[dict[str, Any]]) -> dict[int, str]:
    """Each memory remembered on the day it became valid (``clock`` set to it); entity id -> its id in the set."""
    names = {}
    for m in memories:
        clock.now = day_ms(m["valid_from"])
        extra = {k: m[k] for k in ("topic_path", "summary") if k in m}
        names[vault.remember(category=m["category"], key=m["key"], content=m["content"], **extra).id] = m[
            "id"
        ]
    return names


def _load(name: str) -> Any:
    with open(DATA / name, encoding="utf-8") as handle:
        return json.load(handle)
