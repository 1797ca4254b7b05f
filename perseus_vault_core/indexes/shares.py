"""Query words' BM25 shares kept between keyword queries (:mod:`.keyword`).

A word's share of a row's score depends on the word's postings, its idf and the row's length
against the average: on the index's state, never on the query. Agents ask about the same things
again and again, so the keyword index keeps the shares it computed, per word, until the index
changes (a write, a purge, a rebuild): a later query with the word reads them instead of
recomputing them, and gets the very same doubles. Unscoped queries only: a scoped query's
statistics are its scope's.

Bounded: at most :data:`BUDGET` postings are held, least recently used words dropped first; a word in
more than a quarter of that many rows is recomputed each time, never held.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

BUDGET = 1 << 20  # postings held at most (16 bytes each with their slots and frequencies): about 16 MB


@dataclass(slots=True)
class Known:
    """One word as the index last scored it: its postings (``word``, a keyword.Word), its share in
    each of those rows, and the ``depth``-th best share for each depth asked (pruning's floor)."""

    word: Any
    shares: np.ndarray
    floors: dict[int, float] = field(default_factory=dict)


class Shares:
    """Known words for one state of the index; the state is a key the index gives (it changes
    whenever the postings or the statistics do). Not thread-safe: the index's lock is held."""

    def __init__(self, budget: int = BUDGET) -> None:
        self.budget = budget
        self._state: tuple[int, ...] | None = None
        self._words: OrderedDict[str, Known] = OrderedDict()
        self._held = 0

    def at(self, state: tuple[int, ...]) -> Shares:
        """This cache for ``state``: emptied if the index has changed since it was filled."""
        if state != self._state:
            self._state, self._words, self._held = state, OrderedDict(), 0
        return self

    def get(self, term: str) -> Known | None:
        known = self._words.get(term)
        if known is not None:
            self._words.move_to_end(term)
        return known

    def put(self, term: str, known: Known) -> None:
        size = len(known.shares)
        if size > self.budget // 4 or term in self._words:
            return
        self._words[term] = known
        self._held += size
        while self._held > self.budget:
            _, dropped = self._words.popitem(last=False)
            self._held -= len(dropped.shares)

    def __len__(self) -> int:
        return len(self._words)
