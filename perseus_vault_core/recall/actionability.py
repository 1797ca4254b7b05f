"""How actionable a memory is: concrete anchors versus vague, date-only or very short text. Pure.

Used by ``recall(startup=True)`` (a start-of-session block should carry memories an agent can act
on) and by ``hygiene``. The score is in 0..1 and comes with its reasons:

    base 0.35
    + 0.20 ticket key (ENG-142)      + 0.10 #ref (#562)          + 0.15 path (src/store.py)
    + 0.15 URL                        + 0.05 per named system (Postgres, SQLite; up to two)
    + 0.15 decision or escalation language (decided, chose, must, escalate, owner, deadline...)
    - 0.30 very short (under 6 words) - 0.35 date-only           - 0.10 vague words (something, stuff...)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TICKET = re.compile(r"\b[A-Z][A-Z0-9]{1,9}-\d+\b")
_REF = re.compile(r"(?<![\w&])#\d+\b")
_PATH = re.compile(r"(?:^|[\s(])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+")
_URL = re.compile(r"\bhttps?://\S+", re.IGNORECASE)
_SYSTEM = re.compile(r"(?<![.!?]\s)(?<!^)\b(?:[A-Z][a-z]+[A-Z]\w*|[A-Z]{2,}[a-z]*|[A-Z][a-z]{2,})\b")
_DECISION = re.compile(
    r"\b(decided|decision|chose|choose|agreed|must|never|always|escalat\w*|blocked|blocker|owner|owns|"
    r"deadline|due|todo|fix(?:ed)?|rollback|root cause|runbook|policy)\b",
    re.IGNORECASE,
)
_VAGUE = re.compile(
    r"\b(something|stuff|things?|maybe|somehow|etc|misc|various|whatever|tbd)\b", re.IGNORECASE
)
_DATE = re.compile(
    r"\b(\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4}|(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2}"
    r"(,?\s+\d{4})?|today|yesterday|tomorrow|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Actionability:
    score: float
    reasons: tuple[str, ...]


def actionability(text: str) -> Actionability:
    words = _WORD.findall(text)
    score = 0.35
    reasons: list[str] = []

    def add(amount: float, reason: str) -> None:
        nonlocal score
        score += amount
        reasons.append(reason)

    if _TICKET.search(text):
        add(0.20, "ticket key")
    if _REF.search(text):
        add(0.10, "#ref")
    if _URL.search(text):
        add(0.15, "url")
    elif _PATH.search(text):
        add(0.15, "path")
    systems = {m.group(0) for m in _SYSTEM.finditer(text)}
    if systems:
        add(0.05 * min(2, len(systems)), "named system")
    if _DECISION.search(text):
        add(0.15, "decision language")
    if len(words) < 6:
        add(-0.30, "very short")
    undated = _DATE.sub(" ", text)
    if _DATE.search(text) and len(_WORD.findall(undated)) <= 2:
        add(-0.35, "date-only")
    if _VAGUE.search(text):
        add(-0.10, "vague")
    return Actionability(round(min(1.0, max(0.0, score)), 4), tuple(reasons))


def startup_factor(action: float, low: float = 0.8, high: float = 1.25) -> float:
    """The startup knob's factor: actionability 0..1 spread over the knobs' range (``low`` to
    ``high``), so that among near-ties the concrete memory comes first."""
    return low + (high - low) * action
