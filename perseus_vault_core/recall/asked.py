"""What a question asks for, and whether a memory says it. Pure functions.

A question asking *when* ("When did Caroline join the activist group?", "What year did we move to Postgres?",
"How long ago was the outage?") is answered by a memory that names a time: "I just joined a new LGBTQ activist
group last Tues", "we moved to Postgres in March 2024". The memories about the same thing that name no time ("Our
group, 'Connected LGBTQ Activists', is so supportive") share the question's words and often its meaning as
much, and in a conversation they are many: without a rule they bury the one that answers.

Hybrid recall weighs a memory that names a time, for a question asking when, as if it matched one more of the
question's words (:data:`fusion.ASKED_SHARE` of keyword score, :func:`fusion.combine`): the question's *when* is
a word that the time matches. It lifts; it never removes, and relatedness (``min_score="auto"``) stays judged on
the arms alone, so naming a time never makes an unrelated memory related.

What counts as naming a time (:func:`says_time`), in English: a relative day (yesterday, today, tonight,
tomorrow), a weekday or a month, a week, weekend, month, year or season said as last, next, this, past or
coming, something ``ago``, ``recently``, a year from 1900 to 2099, a date written in digits (2024-03-05, 3/5), a
day of the month (the 5th) and a clock time (5pm, 10:30 am, 7:00). The months are matched whole, and May only capitalised ("may" is a verb).
"""

from __future__ import annotations

import re

_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_SHORT_WEEKDAYS = "mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun"
_MONTHS = "january|february|march|april|june|july|august|september|october|november|december"
_SPANS = f"week|weekend|month|year|night|summer|winter|spring|fall|autumn|{_WEEKDAYS}|{_SHORT_WEEKDAYS}"

# A question asking when: its first words (after a preposition: "in what year", "since when").
_ASKS_TIME = re.compile(
    r"^\W*(?:(?:at|on|in|since|until|by)\s+)?"
    r"(?:when|what\s+(?:year|month|day|date|time)|which\s+(?:year|month|day|date)|how\s+long\s+ago)\b",
    re.IGNORECASE,
)
_SAYS_TIME = re.compile(
    r"\b(?:"
    r"yesterday|today|tonight|tomorrow|recently|ago"
    rf"|{_WEEKDAYS}|{_MONTHS}"
    rf"|(?:last|next|this|past|coming)\s+(?:{_SPANS})"
    r"|(?:19|20)\d\d"
    r"|\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?"
    r"|\d{1,2}(?::\d\d)?\s?(?:am|pm)|\d{1,2}:\d\d"
    r"|\d{1,2}(?:st|nd|rd|th)"
    r")\b",
    re.IGNORECASE,
)
_MAY = re.compile(r"\bMay\b")  # the month, not the verb: only capitalised, and not a sentence's first word
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+)May\b")


def asks_time(question: str) -> bool:
    """Whether ``question`` asks when something happened: it opens with *when*, *what* or *which* year, month,
    day, date (or *what time*), or *how long ago* (after a preposition or not: "in which year", "since when")."""
    return _ASKS_TIME.match(question) is not None


def says_time(text: str) -> bool:
    """Whether ``text`` names a time (the module docstring lists what counts)."""
    if _SAYS_TIME.search(text) is not None:
        return True
    return len(_MAY.findall(text)) > len(_SENTENCE_START.findall(text))
