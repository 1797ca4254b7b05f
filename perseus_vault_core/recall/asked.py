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
tomorrow), ``recently``, ``lately``, something ``ago``; a weekday or a month (March, May and August only
capitalised, May not opening a sentence, a line or a quotation: they are words too; an abbreviated month before a
number, Dec 5); a week, weekend, month, year, night, season or weekday said as last, next, this, past or coming
(last Tues); a year from 1900 to 2099; a date written in digits (2024-03-05, 3/5); a day of the month (the 5th);
a clock time (5pm, 10:30 am, 7:00). A number that only looks like one of these (2000 customers) counts too: the
lift it earns is small, and only for a question asking when.
"""

from __future__ import annotations

import re

_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_SHORT_WEEKDAYS = "mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun"
_MONTHS = "january|february|april|june|july|september|october|november|december"  # March, May, August: below
_SPANS = f"week|weekend|month|year|night|summer|winter|spring|fall|autumn|{_WEEKDAYS}|{_SHORT_WEEKDAYS}"
_AUX = "did|do|does|is|was|were|will|would|has|have|had|are|am|can|could|should|shall|must|might"

# A question asking when: its first words (after a preposition: "in what year", "since when"), a verb after them
# (within two words of "when": "When Jon has lost his job?"), so that a question opening with a clause ("When I
# deploy, which port...") or a compound ("What time zone...") asks something else.
_ASKS_TIME = re.compile(
    r"^\W*(?:(?:at|on|in|since|until|by|from)\s+)?(?:"
    rf"when(?:'s|’s|\s+(?:[\w'’.-]+\s+){{0,2}}(?:{_AUX}))"
    rf"|(?:what|which)\s+(?:year|month|day|date|time|week|weekday)\s+(?:{_AUX})"
    r"|what(?:'s|’s|\s+(?:is|was|will\s+be))\s+the\s+(?:date|day|time|year|month)"
    r"|how\s+long\s+ago"
    r")\b",
    re.IGNORECASE,
)
# Read in the lowercased text: its words against the words that name a time (a set: one pass over the text), the
# relative spans only where a relative word is, the numeric forms from digits only.
_WORD = re.compile(r"[a-z]+")
_TIME_WORDS = frozenset(
    ("yesterday today tonight tomorrow recently lately ago " + _WEEKDAYS + " " + _MONTHS)
    .replace("|", " ")
    .split()
)
_RELATIVE = frozenset(("last", "next", "this", "past", "coming"))
_SPAN = re.compile(rf"\b(?:last|next|this|past|coming)\s+(?:{_SPANS})\b")
# Each form opens with its first digit, which must not follow a letter, a digit, $, #, a point or a comma (so not
# w123, $2000, 2,000 or 2000.5); written so, the search only stops at digits.
_NUMERIC = re.compile(
    r"\d(?<![\w$#.,]\d)(?:"
    r"(?<=1)9\d\d(?![.,%]?\d|\w)|(?<=2)0\d\d(?![.,%]?\d|\w)"  # a year, 1900 to 2099
    r"|\d{3}-\d{1,2}-\d{1,2}\b"  # a date: 2024-03-05
    r"|(?<=0)[1-9]/\d|(?<=1)[0-2]?/\d|(?<=[2-9])/\d"  # a date: 3/5, 12/31 (the month 1 to 12)
    r"|\d?(?::\d\d)?\s?[ap]m\b|\d?:\d\d\b"  # a clock time: 5pm, 10:30 am, 7:00
    r"|\d?(?:st|nd|rd|th)\b"  # a day of the month: the 5th
    r")"
)
# Read in the text as written: a month that is also a word (March, August) only capitalised, an abbreviated month
# before a number (Dec 5, Jan 2024), May before a number or inside a sentence ("may" is a verb, and so is "May I"
# opening a sentence, a line, a quotation or a speaker's words).
_CAPITALISED = re.compile(
    r"\b(?:March|August)\b|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.? \d"
)
_CASED = frozenset("march august may jan feb mar apr jun jul aug sep sept oct nov dec".split())
_MAY = re.compile(r"\bMay\b")
_MAY_OPENING = re.compile(r"(?:^|[.!?:;]\s+|[\"'“‘(\[*•-]\s*)May\b", re.MULTILINE)


def asks_time(question: str) -> bool:
    """Whether ``question`` asks when something happened: it opens with *when*, or *what* or *which* year, month,
    week, day, date or time, followed by a verb ("When did", "When Jon has", "What time is", "Which year was"), with *what is the
    date* (day, time, year, month), or with *how long ago*; after a preposition or not ("in which year did", "since
    when has")."""
    return _ASKS_TIME.match(question) is not None


def says_time(text: str) -> bool:
    """Whether ``text`` names a time (the module docstring lists what counts)."""
    lower = text.lower()
    words = set(_WORD.findall(lower))
    if words & _TIME_WORDS or (words & _RELATIVE and _SPAN.search(lower) is not None):
        return True
    if _NUMERIC.search(lower) is not None:
        return True
    if not words & _CASED:  # the forms read as written need one of these words
        return False
    if _CAPITALISED.search(text) is not None:
        return True
    return len(_MAY.findall(text)) > len(_MAY_OPENING.findall(text))
