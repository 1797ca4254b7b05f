"""An in-memory mirror of ``entities_fts`` that ranks exactly as FTS5's ``bm25()`` does, fast.

Why: FTS5 scores every row that matches any query word, about a microsecond per row. A
question made of common words ("what did we decide about billing") matches tens of
thousands of rows in a 100k-memory store, which costs tens of milliseconds. This mirror
keeps each term's postings as arrays and scores them with numpy, in the same arithmetic
and the same order of operations as FTS5's C code, so its scores are FTS5's scores.

How it stays true to the file:

- The SQLite file is the source of truth. The mirror is built from the current heads,
  tokenized exactly as FTS5 tokenizes them (``porter`` over ``unicode61``: the Python
  stemmer in :mod:`porter` is tested against FTS5's vocabulary; text with non-ASCII letters
  or digits is tokenized by FTS5 itself in a scratch table). After building, its row and
  token totals must equal the ones FTS5 stores, or the mirror disables itself.
- Every change to the set of heads is logged in ``head_changes`` in the writing
  transaction. Before answering, the mirror applies the changes up to the reader's own
  snapshot, so it answers for exactly the data the reader sees (any process may write).
  A reader whose snapshot is behind the mirror uses FTS5 directly for that query.
- It only ranks. Scope, status and time filters stay in SQL (:mod:`filters`), applied to
  the ranked candidates in order until the pool is full.
- A scoped search (agent and/or workspace given) uses the statistics of the rows in that scope
  (rows, tokens, document frequencies), so that one tenant's scores say nothing about another's
  words; an unscoped one uses the whole index's, as FTS5 does.
"""

from __future__ import annotations

from array import array
from collections import Counter, deque
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..primitives.bm25 import (
    ASCII_TOKEN,
    K1,
    WEIGHTS,
    Terms,
    ascii_columns,
    ascii_terms,
    avgdl,
    ceiling,
    idf,
    length_norm,
    phrase_scores,
)
from ..primitives.dbapi import Connection
from ..primitives.hits import Ranking
from ..primitives.porter import stem
from ..storage.base import Backend, Tokenizer
from . import vocabulary
from .mirror import HeadMirror, fit, grow
from .shares import Known, Shares
from .snapshot import Saved
from .vocabulary import Vocabulary

# --- the index -----------------------------------------------------------------------------------


_EMPTY_I = np.zeros(0, dtype=np.int32)
_EMPTY_F = np.zeros(0, dtype=np.float32)


def _csr(
    tids: array[int], slots: array[int], weights: array[float], n_slots: int, n_terms: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Postings grouped by term: (indptr, slots, weighted frequencies), one entry per (term, row)."""
    t = np.frombuffer(tids, dtype=np.int32).astype(np.int64)
    s = np.frombuffer(slots, dtype=np.int32)
    w = np.frombuffer(weights, dtype=np.float32)
    if not len(t):
        return np.zeros(n_terms + 1, dtype=np.int64), _EMPTY_I, _EMPTY_F
    key = t * max(n_slots, 1) + s
    order = np.argsort(key, kind="stable")
    key, w = key[order], w[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    unique = key[starts]
    freqs = np.add.reduceat(w, starts)  # sums of 1.0 and 0.5: exact in float32
    terms = unique // max(n_slots, 1)
    indptr = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(np.bincount(terms, minlength=n_terms), out=indptr[1:])
    return indptr, (unique % max(n_slots, 1)).astype(np.int32), freqs.astype(np.float32)


DEFER_OVER = 64  # a replay of more log entries than this queues its rows (_pending)
FLUSH_ROWS = 64  # queued rows indexed at each later sync


def _token_terms(columns: list[list[str]]) -> Terms:
    """Weighted term frequencies of tokenized columns, as :func:`bm25.ascii_terms` counts them."""
    counts: Terms = {}
    for tokens, weight in zip(columns, WEIGHTS):
        for token, n in Counter(tokens).items():
            term = stem(token)
            counts[term] = counts.get(term, 0.0) + n * weight
    return counts


class Word(NamedTuple):
    """One query word's live postings (slots ascending) and its idf."""

    slots: np.ndarray
    freqs: np.ndarray
    weight: float


def _essential(
    words: Sequence[Word | None],
    shares: dict[int, np.ndarray],
    row_norm: Callable[[np.ndarray], np.ndarray],
    depth: int,
    floors: dict[int, float] | None = None,
) -> set[int] | None:
    """Which words a row must hold to reach the best ``depth`` (max-score pruning).

    The words are taken rarest first, each one's shares computed (into ``shares``, unless known
    there already), until some taken word's ``depth``-th best share (into ``floors``, unless known),
    a floor under the ``depth``-th best score, is more than all the words not taken could add to any
    row (each word's share is below its idf times K1 + 1). A row holding none of the words taken then
    scores below the best ``depth`` and may be left out. Returns the words taken, or ``None`` when all
    of them had to be."""
    floors = {} if floors is None else floors
    present = {i: w for i, w in enumerate(words) if w is not None}
    order = sorted(present, key=lambda i: len(present[i].slots))
    left = sum(w.weight for w in present.values()) * (K1 + 1.0)
    floor = 0.0
    for taken, i in enumerate(order[:-1], start=1):
        word = present[i]
        if i not in shares:
            shares[i] = phrase_scores(word.freqs, row_norm(word.slots), word.weight)
        left -= word.weight * (K1 + 1.0)
        if len(word.slots) >= depth:
            if i not in floors:
                floors[i] = float(np.partition(shares[i], len(word.slots) - depth)[len(word.slots) - depth])
            floor = max(floor, floors[i])
        if left < floor * (1.0 - 1e-9):  # a margin for rounding (the shares are exact to far better)
            return set(order[:taken])
    return None


class KeywordIndex(HeadMirror):
    """The keyword mirror. Thread-safe; one per :class:`Vault`."""

    FEED = "text"
    NAME = "keyword-index"
    LOCAL = (*HeadMirror.LOCAL, "_conn", "_tokenizer")  # the connection of the query being answered

    def _clear(self) -> None:
        # Postings: a CSR block from the last build, plus per-term lists for rows added since.
        self._tid: dict[str, int] | Vocabulary = {}  # a Vocabulary once loaded from a snapshot
        self._indptr = np.zeros(1, dtype=np.int64)
        self._slots = _EMPTY_I
        self._freqs = _EMPTY_F
        self._extra: dict[int, tuple[list[int], list[float]]] = {}
        self._merged: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        # Rows a large replay brought (a new process catching up with its snapshot), not yet in the
        # postings: (slot, each column's tokens) for ASCII text, (slot, terms) otherwise. A query scans
        # them for its own words alone; each later sync indexes a batch (see _sync).
        self._pending: deque[tuple[int, list[list[str]] | Terms]] = deque()
        self._defer = False
        self._lengths = np.zeros(1024, dtype=np.float64)
        self._n_rows = 0  # live rows, as FTS5 counts them
        self._n_tokens = 0
        self._norm = np.zeros(0)
        self._place = np.zeros(0, dtype=np.int64)  # scratch for _ranked: a candidate's place by slot, else -1
        self._shares = Shares()  # words' shares kept between unscoped queries (shares.py)
        self._norm_for: tuple[int, int, int] = (-1, -1, -1)
        # While building: every token as (term id, slot, column weight), summed by _csr at the end.
        self._flat: tuple[array[int], array[int], array[float]] | None = (array("i"), array("i"), array("f"))
        self._tid_of_token: dict[str, int] = {}
        self._tokenizer: Tokenizer | None = None
        self._conn: Any = None

    def __init__(self, backend: Backend) -> None:
        super().__init__(backend)
        self._clear()

    def _prepare(self, conn: Connection) -> None:
        self._conn, self._tokenizer = conn, None

    def _fts5_terms(self, columns: Sequence[str | None]) -> tuple[Terms, int]:
        if self._tokenizer is None:
            self._tokenizer = self.backend.keyword.tokenizer(self._conn)
        return self._tokenizer.terms(columns)

    def _index(self, slot: int, values: Sequence[Any]) -> None:
        columns = (values[0], values[1], values[2])
        texts = ascii_columns(columns)
        length = 0
        if self._flat is not None and texts is not None:
            # Building: the vectorised twin of _ascii_terms (token ids into flat arrays).
            tids, slots, weights = self._flat
            for text, weight in zip(texts, WEIGHTS):
                tokens = ASCII_TOKEN.findall(text)
                ids = [self._tid_of_token.get(t, -1) for t in tokens]
                if -1 in ids:
                    ids = [i if i >= 0 else self._token_tid(t) for i, t in zip(ids, tokens)]
                tids.extend(ids)
                slots.extend([slot] * len(ids))
                weights.extend([weight] * len(ids))
                length += len(ids)
        elif self._flat is None and (self._defer or self._pending):  # queued, in slot order (see _pending)
            if texts is not None:
                tokens = [ASCII_TOKEN.findall(text) for text in texts]
                self._pending.append((slot, tokens))
                length = sum(len(t) for t in tokens)
            else:
                terms, length = self._fts5_terms(columns)
                self._pending.append((slot, terms))
        else:
            terms, length = ascii_terms(columns) or self._fts5_terms(columns)
            self._insert(slot, terms)
        self._lengths = grow(self._lengths, slot + 1)
        self._lengths[slot] = length
        self._n_rows += 1
        self._n_tokens += length

    def _insert(self, slot: int, terms: Terms) -> None:
        for term, freq in terms.items():
            tid = self._tid.setdefault(term, len(self._tid))
            if self._flat is not None:
                self._flat[0].append(tid)
                self._flat[1].append(slot)
                self._flat[2].append(freq)
                continue
            more_slots, more_freqs = self._extra.setdefault(tid, ([], []))
            more_slots.append(slot)
            more_freqs.append(freq)
            self._merged.pop(tid, None)

    def _replaying(self, entries: int) -> None:
        # A large replay (a new process catching up with its snapshot) queues its rows instead of
        # indexing every word of each before the first answer; small ones index as they come.
        self._defer = entries > DEFER_OVER

    def _apply(self, conn: Connection, upto: int) -> bool:
        try:
            return super()._apply(conn, upto)
        finally:
            self._defer = False

    def _sync(self, conn: Connection) -> bool:
        self._index_pending(FLUSH_ROWS)  # a batch at a time, oldest first, so that slots stay in order
        return super()._sync(conn)

    def _index_pending(self, rows: int | None = None) -> None:
        """Index up to ``rows`` queued rows (all when ``None``) into the postings, oldest first."""
        for _ in range(len(self._pending) if rows is None else min(rows, len(self._pending))):
            slot, queued = self._pending.popleft()
            self._insert(slot, queued if isinstance(queued, dict) else _token_terms(queued))

    def _pending_postings(self, terms: set[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The queued rows' postings for these words only (slots ascending, after every indexed one)."""
        found: dict[str, tuple[list[int], list[float]]] = {}
        firsts = {term[0] for term in terms if term}  # stemming keeps a token's first letter (porter.py)
        for slot, queued in self._pending:
            if isinstance(queued, dict):
                counts = {term: freq for term, freq in queued.items() if term in terms}
            else:
                counts = {}
                for tokens, weight in zip(queued, WEIGHTS):
                    for token in tokens:
                        if token[0] not in firsts:
                            continue  # cannot stem to a query word: no need to stem it (a new process's cache is cold)
                        term = stem(token)
                        if term in terms:
                            counts[term] = counts.get(term, 0.0) + weight
            for term, freq in counts.items():
                slots, freqs = found.setdefault(term, ([], []))
                slots.append(slot)
                freqs.append(freq)
        return {
            term: (np.asarray(slots, dtype=np.int32), np.asarray(freqs, dtype=np.float32))
            for term, (slots, freqs) in found.items()
        }

    def _token_tid(self, token: str) -> int:
        tid = self._tid.setdefault(stem(token), len(self._tid))
        self._tid_of_token[token] = tid
        return tid

    def _forget(self, slot: int) -> None:
        self._n_rows -= 1
        self._n_tokens -= int(self._lengths[slot])

    def _finish(self, conn: Connection, seq: int) -> str | None:
        assert self._flat is not None
        tids, slots, weights = self._flat
        self._indptr, self._slots, self._freqs = _csr(tids, slots, weights, self.rows.n, len(self._tid))
        self._flat, self._tid_of_token, self._conn, self._tokenizer = None, {}, None, None
        expected = self.backend.keyword.totals(conn)
        if (self._n_rows, self._n_tokens) != expected:
            return (
                f"tokenization differs from FTS5 (rows/tokens {self._n_rows}/{self._n_tokens}, "
                f"FTS5 {expected[0]}/{expected[1]})"
            )
        return None

    def _postings(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(slots, frequencies) of one term, including rows added since the build."""
        tid = self._tid.get(term)
        if tid is None:
            return None
        base = slice(0, 0)
        if tid + 1 < len(self._indptr):
            base = slice(int(self._indptr[tid]), int(self._indptr[tid + 1]))
        if tid not in self._extra:
            return self._slots[base], self._freqs[base]
        merged = self._merged.get(tid)
        if merged is None:
            more_slots, more_freqs = self._extra[tid]
            merged = (
                np.concatenate([self._slots[base], np.asarray(more_slots, dtype=np.int32)]),
                np.concatenate([self._freqs[base], np.asarray(more_freqs, dtype=np.float32)]),
            )
            self._merged[tid] = merged
        return merged

    # -- snapshots --

    def _own_state(self, room: int, private: bool) -> tuple[dict[str, Any], dict[str, Saved]]:
        self._index_pending()  # a snapshot holds every row's words
        n = self.rows.n
        indptr, slots, freqs = self._compacted()
        lengths = fit(self._lengths[:n], room)
        lengths[:n][~self.rows.alive[:n]] = 0
        meta = {"n_rows": self._n_rows, "n_tokens": self._n_tokens}
        return meta, {
            "indptr": indptr,
            "slots": slots,
            "freqs": freqs,
            "lengths": lengths,
            **vocabulary.pack(list(self._tid.items())),
        }

    def _compacted(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The postings as one CSR block of live rows only: the build's block with the rows added since
        merged in, and the rows that stopped being heads left out (a purged memory's words are not saved)."""
        n_terms = len(self._tid)
        if (
            not self._extra
            and bool(self.rows.alive[: self.rows.n].all())
            and len(self._indptr) == n_terms + 1
        ):
            return self._indptr, self._slots, self._freqs  # as built (never changed in place): no copy
        counts = np.diff(self._indptr)
        tids = [np.repeat(np.arange(len(counts), dtype=np.int64), counts)]
        slots, freqs = [self._slots], [self._freqs]
        for tid, (more_slots, more_freqs) in self._extra.items():
            tids.append(np.full(len(more_slots), tid, dtype=np.int64))
            slots.append(np.asarray(more_slots, dtype=np.int32))
            freqs.append(np.asarray(more_freqs, dtype=np.float32))
        t, sl, fr = np.concatenate(tids), np.concatenate(slots), np.concatenate(freqs)
        live = self.rows.alive[: self.rows.n][sl] if len(sl) else np.zeros(0, dtype=bool)
        t, sl, fr = t[live], sl[live], fr[live]
        order = np.lexsort((sl, t))
        indptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(np.bincount(t, minlength=n_terms), out=indptr[1:])
        return indptr, sl[order].astype(np.int32), fr[order].astype(np.float32)

    def _restore_own(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self._tid = vocabulary.Vocabulary(arrays["terms"], arrays["term_offsets"], arrays["term_ids"])
        self._indptr, self._slots, self._freqs = arrays["indptr"], arrays["slots"], arrays["freqs"]
        self._lengths = arrays["lengths"]
        self._n_rows, self._n_tokens = int(meta["n_rows"]), int(meta["n_tokens"])
        self._flat, self._extra, self._merged, self._tid_of_token = None, {}, {}, {}
        self._norm_for = (-1, -1, -1)

    # -- ranking --

    def search(
        self,
        conn: Connection,
        stems: Sequence[str],
        agent_id: str | None = None,
        workspace_hash: str | None = None,
        depth: int | None = None,
    ) -> Ranking | None:
        """Rank for the snapshot ``conn`` is reading, or ``None`` when the mirror cannot vouch for it.
        ``depth``: only the best ``depth`` need be exact (see :meth:`_ranked`); ``None``: every match."""

        def compute() -> Ranking:
            self._conn = conn  # for tokenizing non-ASCII rows added by the log, if any
            try:
                return self._ranked(stems, agent_id, workspace_hash, depth)
            finally:
                self._conn, self._tokenizer = None, None

        self._conn = conn
        try:
            result: Ranking | None = self.answer(conn, compute)
        finally:
            self._conn, self._tokenizer = None, None
        return result

    def _length_norm(self) -> np.ndarray:
        """k1 * (1 - b + b * D / avgdl) per row: FTS5 computes it per row and phrase; it depends on
        the row only, so computing it once per row gives the very same doubles."""
        key = (self.rows.n, self._n_rows, self._n_tokens)
        if key != self._norm_for:
            self._norm = length_norm(self._lengths[: self.rows.n], avgdl(self._n_rows, self._n_tokens))
            self._norm_for = key
        return self._norm

    def _ranked(
        self, stems: Sequence[str], agent_id: str | None, workspace_hash: str | None, depth: int | None = None
    ) -> Ranking:
        """Live heads matching any of ``stems`` (within the scope, when given), scored as ``-bm25()``.

        The arithmetic follows FTS5's ``fts5Bm25Function`` operation by operation, summing the phrases
        in query order, so with the same tokens and statistics the scores are FTS5's. Unscoped, the
        statistics are the whole index's, as in FTS5; scoped, they are those of the scope's rows
        (every live head in it, whatever its status), so nothing outside the scope moves a score.

        With a ``depth``, rows that cannot reach the best ``depth`` are left out unscored (:func:`_essential`):
        the ranking then holds every row matching one of the query's rarer words, exactly scored,
        and its best ``depth`` are the best of all (``Ranking.exact``).
        """
        rows = self.rows
        n = rows.n
        scoped = agent_id is not None or workspace_hash is not None
        keep: np.ndarray | None
        if scoped:
            keep = self.in_scope(agent_id, workspace_hash)
            n_rows = int(np.count_nonzero(keep))
            mean = avgdl(n_rows, int(self._lengths[:n][keep].sum()))
        else:
            keep = rows.alive[:n] if self.dead else None
            n_rows, norm = self._n_rows, self._length_norm()

        def row_norm(slots: np.ndarray) -> np.ndarray:
            return length_norm(self._lengths[slots], mean) if scoped else norm[slots]

        dfs: list[int] = []
        terms: list[Word | None] = []  # per query word
        shares: dict[int, np.ndarray] = {}  # each word's share in each row holding it, once computed
        floors: dict[int, float] = {}  # each word's depth-th best share, once computed
        known = (
            None
            if scoped or self._pending
            else self._shares.at((self.seq, n, self.dead, self._n_rows, self._n_tokens))
        )
        queued = self._pending_postings(set(stems)) if self._pending else {}
        for i, term in enumerate(stems):
            held = known.get(term) if known is not None else None
            if held is not None:  # scored by an earlier query of this very state
                terms.append(held.word)
                dfs.append(len(held.word.slots))
                shares[i] = held.shares
                if depth is not None and depth in held.floors:
                    floors[i] = held.floors[depth]
                continue
            postings = self._postings(term)
            if term in queued:
                more = queued[term]
                postings = (
                    more
                    if postings is None
                    else (np.concatenate([postings[0], more[0]]), np.concatenate([postings[1], more[1]]))
                )
            if postings is not None and keep is not None:
                inside = keep[postings[0]]
                postings = postings[0][inside], postings[1][inside]
            df = 0 if postings is None else len(postings[0])
            dfs.append(df)
            terms.append(
                Word(postings[0], postings[1], idf(n_rows, df)) if postings is not None and df else None
            )
        top = ceiling(n_rows, dfs)
        taken = _essential(terms, shares, row_norm, depth, floors) if depth is not None else None
        if taken is None:  # every matching row
            slots, score = self._matching(terms, shares, row_norm, scoped)
            ranking = Ranking(
                rows.vids[slots], rows.entities[slots], score, top, heads=self.heads, population=n_rows
            )
        else:
            slots, score = self._pruned(terms, taken, shares, row_norm)
            ranking = Ranking(
                rows.vids[slots],
                rows.entities[slots],
                score,
                top,
                exact=depth,
                heads=self.heads,
                population=n_rows,
            )
        if known is not None:
            self._keep_shares(known, stems, terms, shares, floors, depth)
        return ranking

    def _matching(
        self,
        terms: Sequence[Word | None],
        shares: dict[int, np.ndarray],
        row_norm: Callable[[np.ndarray], np.ndarray],
        scoped: bool,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every row holding a word, exactly scored (each word's share added in query order; computed into
        ``shares`` unless known there). Returns (slots, scores)."""
        n = self.rows.n
        score = np.zeros(n, dtype=np.float64)
        matched = np.zeros(n, dtype=bool)
        for i, word in enumerate(terms):
            if word is not None:
                if i not in shares:
                    shares[i] = phrase_scores(word.freqs, row_norm(word.slots), word.weight)
                score[word.slots] += shares[i]
                matched[word.slots] = True
        if not scoped:
            matched &= self.in_scope(None, None)
        hits = np.flatnonzero(matched)
        return hits, score[hits]

    @staticmethod
    def _keep_shares(
        known: Shares,
        stems: Sequence[str],
        terms: Sequence[Word | None],
        shares: dict[int, np.ndarray],
        floors: dict[int, float],
        depth: int | None,
    ) -> None:
        """Hold what this query computed for its words, for the next query of the same state."""
        for i, share in shares.items():
            word = terms[i]
            if word is None:
                continue
            held = known.get(stems[i])
            if held is None:
                held = Known(word, share)
                known.put(stems[i], held)
            if depth is not None and i in floors:
                held.floors[depth] = floors[i]

    def _pruned(
        self,
        terms: Sequence[Word | None],
        taken: set[int],
        shares: dict[int, np.ndarray],
        row_norm: Callable[[np.ndarray], np.ndarray],
    ) -> tuple[np.ndarray, np.ndarray]:
        """The rows holding a word taken, each exactly scored: every word's share added in query order, as
        FTS5 adds them (a word not taken is looked up in those rows only). Returns (slots, scores)."""
        n = self.rows.n
        # Only the candidates are touched (a few thousand rows, not every row of the store): a scratch
        # array maps each candidate's slot to its place (-1 elsewhere, restored before returning; the
        # mirror's lock is held), so a word's postings find their candidates by one gather.
        held = [terms[i].slots for i in sorted(taken)]  # type: ignore[union-attr]
        if len(held) == 1:
            candidates = held[0]
        elif sum(len(h) for h in held) * 8 < n:  # a few rows: sort them
            candidates = sorted_union(held)
        else:
            mask = np.zeros(n, dtype=bool)
            for h in held:
                mask[h] = True
            candidates = np.flatnonzero(mask)
        if len(self._place) < n:
            self._place = np.full(n + 1024, -1, dtype=np.int64)
        place = self._place
        place[candidates] = np.arange(len(candidates))
        try:
            score = np.zeros(len(candidates), dtype=np.float64)
            for i, word in enumerate(terms):
                if word is None:
                    continue
                if i in taken:
                    score[place[word.slots]] += shares[i]
                    continue
                if len(candidates) * 16 < len(
                    word.slots
                ):  # few candidates: look each up in the word's postings
                    at = np.minimum(np.searchsorted(word.slots, candidates), len(word.slots) - 1)
                    holds = word.slots[at] == candidates
                    where, postings = np.flatnonzero(holds), at[holds]
                else:  # many: keep the word's postings that are candidates
                    at = place[word.slots]
                    postings = np.flatnonzero(at >= 0)  # once, then gathers (not boolean masks)
                    where = at[postings]
                if i in shares:  # known from an earlier query: the very same doubles, gathered
                    score[where] += shares[i][postings]
                else:
                    score[where] += phrase_scores(
                        word.freqs[postings], row_norm(word.slots[postings]), word.weight
                    )
        finally:
            place[candidates] = -1
        return candidates, score

    def describe(self) -> str:
        text = super().describe()
        return text.replace(" rows", f" rows, {len(self._tid)} terms", 1) if self.ready else text


def sorted_union(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """The distinct values of ``arrays``, ascending. (numpy 2.4's ``np.unique`` hashes integers: 0.66 ms for
    8,000 slots against 0.02 ms for a sort and a comparison of neighbours.)"""
    values = np.sort(np.concatenate(arrays))
    if len(values) < 2:
        return values
    first = np.empty(len(values), dtype=bool)
    first[0] = True
    np.not_equal(values[1:], values[:-1], out=first[1:])
    return values[first]
