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
"""

from __future__ import annotations

import math
import re
from array import array
import threading
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .porter import stem
from .schema import BM25_WEIGHTS, TOKENIZE

K1 = 1.2
B = 0.75
_ASCII_TOKEN = re.compile(r"[a-z0-9]+")
Terms = dict[str, float]  # stem -> weighted frequency in one document


# --- tokenizing as FTS5 does -----------------------------------------------------------------


def _separators_only(text: str) -> bool:
    """True when every non-ASCII character is one that unicode61 treats as a separator.

    unicode61's token characters are the categories L*, N* and Co; everything else separates.
    """
    for ch in text:
        if ord(ch) > 127:
            category = unicodedata.category(ch)
            if category[0] in "LN" or category == "Co":
                return False
    return True


def _ascii_columns(columns: Sequence[str | None]) -> list[str] | None:
    """The columns lower-cased, with separator-only non-ASCII blanked; ``None`` if FTS5 must tokenize."""
    out = []
    for text in columns:
        if text and not text.isascii():
            if not _separators_only(text):
                return None
            text = "".join(ch if ord(ch) < 128 else " " for ch in text)
        out.append(text.lower() if text else "")
    return out


def _ascii_terms(columns: Sequence[str | None]) -> tuple[Terms, int] | None:
    """Weighted term frequencies and total length, or ``None`` if FTS5 must tokenize this text."""
    texts = _ascii_columns(columns)
    if texts is None:
        return None
    counts: Terms = {}
    length = 0
    for text, weight in zip(texts, BM25_WEIGHTS):
        tokens = _ASCII_TOKEN.findall(text)
        length += len(tokens)
        for token, n in Counter(tokens).items():
            term = stem(token)
            counts[term] = counts.get(term, 0.0) + n * weight
    return counts, length


class _Fts5Tokenizer:
    """FTS5's own tokenizer, through a scratch table on one connection (for non-ASCII text)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.pv_tok USING fts5(c0, c1, c2, tokenize='{TOKENIZE}')"
        )
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.pv_tok_i USING fts5vocab(temp, pv_tok, 'instance')")

    def terms(self, columns: Sequence[str | None]) -> tuple[Terms, int]:
        self.conn.execute("DELETE FROM temp.pv_tok")
        self.conn.execute("INSERT INTO temp.pv_tok(rowid, c0, c1, c2) VALUES (1, ?, ?, ?)", tuple(columns))
        counts: Terms = {}
        length = 0
        for term, col in self.conn.execute("SELECT term, col FROM temp.pv_tok_i"):
            weight = BM25_WEIGHTS[["c0", "c1", "c2"].index(col)]
            counts[term] = counts.get(term, 0.0) + weight
            length += 1
        self.conn.execute("DELETE FROM temp.pv_tok")
        return counts, length


def fts5_totals(conn: Any, table: str = "entities_fts") -> tuple[int, int]:
    """(rows, tokens in all columns) as FTS5 itself stores them (its 'averages' record)."""
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return 0, 0
    values, blob, i = [], bytes(row[0]), 0
    while i < len(blob):
        value, i = _varint(blob, i)
        values.append(value)
    return values[0], sum(values[1:])


def _varint(blob: bytes, i: int) -> tuple[int, int]:
    """SQLite's varint: big-endian 7-bit groups, the ninth byte carrying 8 bits."""
    value = 0
    for n in range(9):
        byte = blob[i + n]
        if n == 8:
            return (value << 8) | byte, i + 9
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, i + n + 1
    raise ValueError("bad varint")  # pragma: no cover


# --- the index -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ranking:
    """Scored matches of one query, ordered on demand (best first, ties by entity id)."""

    vids: np.ndarray
    entity_ids: np.ndarray
    scores: np.ndarray

    def __len__(self) -> int:
        return len(self.scores)

    def top(self, k: int) -> list[tuple[int, int, float]]:
        """The best ``k`` as (entity id, vid, score); exact at the cut, where ties go by id."""
        scores = self.scores
        if k < len(scores):
            cut = np.partition(scores, len(scores) - k)[len(scores) - k]
            pick = np.flatnonzero(scores >= cut)
        else:
            pick = np.arange(len(scores))
        order = pick[np.lexsort((self.entity_ids[pick], -scores[pick]))][:k]
        return list(zip(self.entity_ids[order].tolist(), self.vids[order].tolist(), scores[order].tolist()))


_EMPTY_I = np.zeros(0, dtype=np.int32)
_EMPTY_F = np.zeros(0, dtype=np.float32)


def _csr(
    tids: "array[int]", slots: "array[int]", weights: "array[float]", n_slots: int, n_terms: int
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


class _Rows:
    """Per-row arrays that grow in place (capacity doubling), so a write costs O(1), not O(rows)."""

    def __init__(self, capacity: int = 1024) -> None:
        self.n = 0
        self.vids = np.zeros(capacity, dtype=np.int64)
        self.entities = np.zeros(capacity, dtype=np.int64)
        self.agents = np.zeros(capacity, dtype=np.int32)
        self.workspaces = np.zeros(capacity, dtype=np.int32)
        self.lengths = np.zeros(capacity, dtype=np.float64)
        self.alive = np.zeros(capacity, dtype=bool)

    @classmethod
    def of(cls, vids: list[int], entities: list[int], agents: list[int], workspaces: list[int],
           lengths: list[int]) -> _Rows:
        rows = cls(max(1024, 2 * len(vids)))
        n = rows.n = len(vids)
        rows.vids[:n], rows.entities[:n], rows.agents[:n] = vids, entities, agents
        rows.workspaces[:n], rows.lengths[:n], rows.alive[:n] = workspaces, lengths, True
        return rows

    def append(self, vid: int, entity: int, agent: int, workspace: int, length: int) -> int:
        if self.n == len(self.vids):
            for name in ("vids", "entities", "agents", "workspaces", "lengths", "alive"):
                old = getattr(self, name)
                grown = np.zeros(2 * len(old), dtype=old.dtype)
                grown[: len(old)] = old
                setattr(self, name, grown)
        slot = self.n
        self.vids[slot], self.entities[slot], self.agents[slot] = vid, entity, agent
        self.workspaces[slot], self.lengths[slot], self.alive[slot] = workspace, length, True
        self.n += 1
        return slot


class KeywordIndex:
    """The mirror. Thread-safe; one per :class:`Vault`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.ready = False
        self.disabled: str | None = None
        self._disabled_at: int | None = None  # change-log position when the mirror gave up
        self._building = False
        self.seq = 0
        # Postings: a CSR block from the last build, plus per-term lists for rows added since.
        self._tid: dict[str, int] = {}
        self._indptr = np.zeros(1, dtype=np.int64)
        self._slots = _EMPTY_I
        self._freqs = _EMPTY_F
        self._extra: dict[int, tuple[list[int], list[float]]] = {}
        self._merged: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._rows = _Rows()
        self._slot_of: dict[int, int] = {}
        # Scope codes, so a scoped recall ranks only its tenant's rows.
        self._agent_code: dict[str, int] = {}
        self._workspace_code: dict[str, int] = {}
        self._n_rows = 0  # live rows, as FTS5 counts them
        self._n_tokens = 0
        self._dead = 0
        self._norm = np.zeros(0)
        self._norm_for: tuple[int, int, int] = (-1, -1, -1)

    # -- building and following the log --

    def start_background_build(self, connect: Callable[[], Any]) -> None:
        """Build on a thread of its own (its own connection), once."""
        with self._lock:
            if self.ready or self._building or self.disabled:
                return
            self._building = True

        def run() -> None:
            conn = None
            try:
                conn = connect()
                self.build(conn)
            except Exception as exc:  # FTS5 keeps answering; stats() shows why
                with self._lock:
                    self.disabled = f"build failed: {type(exc).__name__}: {exc}"
                    self._disabled_at = 0  # retry after the next reindex
            finally:
                self._building = False
                if conn is not None:
                    conn.close()

        threading.Thread(target=run, name="perseus-vault-keyword-index", daemon=True).start()

    def build(self, conn: Any) -> None:
        """Read every head in one snapshot and index it; verify against FTS5's own totals."""
        tokenizer = _Fts5Tokenizer(conn)
        tid_of_stem: dict[str, int] = {}
        tid_of_token: dict[str, int] = {}

        def token_tid(token: str) -> int:
            tid = tid_of_stem.setdefault(stem(token), len(tid_of_stem))
            tid_of_token[token] = tid
            return tid

        tids, slots, weights = array("i"), array("i"), array("f")
        vids, entity_ids, lengths, agents, workspaces = [], [], [], [], []
        agent_code: dict[str, int] = {}
        workspace_code: dict[str, int] = {}
        conn.execute("BEGIN")
        try:
            seq = int(conn.execute("SELECT coalesce(max(seq), 0) FROM head_changes").fetchone()[0])
            expected = fts5_totals(conn)
            rows = conn.execute(
                "SELECT v.vid, v.entity_id, v.content, v.summary, v.tags, e.agent_id, e.workspace_hash "
                "FROM entity_versions v JOIN entities e ON e.id = v.entity_id "
                "WHERE v.recorded_to_ms IS NULL ORDER BY v.vid"
            )
            for slot, (vid, eid, content, summary, tags, agent, workspace) in enumerate(rows):
                vids.append(vid)
                entity_ids.append(eid)
                agents.append(agent_code.setdefault(agent, len(agent_code)))
                workspaces.append(workspace_code.setdefault(workspace, len(workspace_code)))
                texts = _ascii_columns((content, summary, tags))
                length = 0
                if texts is not None:
                    # The vectorised twin of _ascii_terms: token ids into flat arrays, summed by _csr.
                    for text, weight in zip(texts, BM25_WEIGHTS):
                        tokens = _ASCII_TOKEN.findall(text)
                        ids = [tid_of_token.get(t, -1) for t in tokens]
                        if -1 in ids:
                            ids = [i if i >= 0 else token_tid(t) for i, t in zip(ids, tokens)]
                        tids.extend(ids)
                        slots.extend([slot] * len(ids))
                        weights.extend([weight] * len(ids))
                        length += len(ids)
                else:
                    terms, length = tokenizer.terms((content, summary, tags))
                    for term, freq in terms.items():
                        tids.append(tid_of_stem.setdefault(term, len(tid_of_stem)))
                        slots.append(slot)
                        weights.append(freq)
                lengths.append(length)
        finally:
            conn.execute("COMMIT")
        indptr, post_slots, post_freqs = _csr(tids, slots, weights, len(vids), len(tid_of_stem))
        with self._lock:
            self._tid = tid_of_stem
            self._indptr, self._slots, self._freqs = indptr, post_slots, post_freqs
            self._extra, self._merged = {}, {}
            self._rows = _Rows.of(vids, entity_ids, agents, workspaces, lengths)
            self._agent_code, self._workspace_code = agent_code, workspace_code
            self._slot_of = {vid: i for i, vid in enumerate(vids)}
            self._n_rows, self._n_tokens, self._dead = len(vids), sum(lengths), 0
            self.seq = seq
            if (self._n_rows, self._n_tokens) != expected:
                self._disabled_at = seq
                self.disabled = (
                    f"tokenization differs from FTS5 (rows/tokens {self._n_rows}/{self._n_tokens}, "
                    f"FTS5 {expected[0]}/{expected[1]})"
                )
                self.ready = False
                return
            self.ready = True

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

    def _apply(self, conn: Any, upto: int) -> bool:
        """Apply logged head changes in (self.seq, upto]. False when a rebuild is the better way."""
        first = conn.execute("SELECT min(seq) FROM head_changes").fetchone()[0]
        if first is not None and first > self.seq + 1:
            return False  # the log was trimmed past our position
        if upto - self.seq > max(10_000, self._n_rows // 5):  # seq has no gaps: this is the count
            return False  # cheaper to rebuild than to replay
        changes = conn.execute(
            "SELECT c.seq, c.vid, c.op, v.entity_id, v.content, v.summary, v.tags, e.agent_id, e.workspace_hash "
            "FROM head_changes c LEFT JOIN entity_versions v ON v.vid = c.vid LEFT JOIN entities e ON e.id = v.entity_id "
            "WHERE c.seq > ? AND c.seq <= ? ORDER BY c.seq",
            (self.seq, upto),
        ).fetchall()
        tokenizer: _Fts5Tokenizer | None = None
        rows = self._rows
        for seq, vid, op, eid, content, summary, tags, agent, workspace in changes:
            if op == 0:
                return False  # reindex: rebuild from scratch
            if op < 0:
                slot = self._slot_of.pop(vid, None)
                if slot is not None and rows.alive[slot]:
                    rows.alive[slot] = False
                    self._n_rows -= 1
                    self._n_tokens -= int(rows.lengths[slot])
                    self._dead += 1
            elif vid not in self._slot_of:
                if content is None:
                    continue  # added and purged again within this window: nothing to index
                columns = (content, summary, tags)
                parsed = _ascii_terms(columns)
                if parsed is None:
                    tokenizer = tokenizer or _Fts5Tokenizer(conn)
                    parsed = tokenizer.terms(columns)
                terms, length = parsed
                slot = rows.append(
                    vid, eid, self._agent_code.setdefault(agent, len(self._agent_code)),
                    self._workspace_code.setdefault(workspace, len(self._workspace_code)), length,
                )
                self._slot_of[vid] = slot
                self._n_rows += 1
                self._n_tokens += length
                for term, freq in terms.items():
                    tid = self._tid.setdefault(term, len(self._tid))
                    more_slots, more_freqs = self._extra.setdefault(tid, ([], []))
                    more_slots.append(slot)
                    more_freqs.append(freq)
                    self._merged.pop(tid, None)
        self.seq = upto
        # Dead rows still cost in every scan of their postings: past a quarter, rebuild.
        return not (self._dead > 1000 and self._dead > rows.n // 4)

    def _sync(self, conn: Any) -> bool:
        """Bring the mirror to the snapshot ``conn`` reads (caller holds the lock, conn is in a transaction)."""
        upto = int(conn.execute("SELECT coalesce(max(seq), 0) FROM head_changes").fetchone()[0])
        if upto == self.seq:
            return True
        if upto < self.seq or not self._apply(conn, upto):
            if upto > self.seq:
                self.ready = False  # rebuild (the caller starts it); FTS5 answers meanwhile
            return False
        return True

    def search(
        self, conn: Any, stems: Sequence[str], agent_id: str | None = None, workspace_hash: str | None = None
    ) -> Ranking | None:
        """Rank for the snapshot ``conn`` is reading, or ``None`` when the mirror cannot vouch for it.

        Following the log and ranking happen under one lock, so another thread cannot move the
        mirror to a newer snapshot in between.
        """
        if self.disabled:
            self._retry_after_rebuild(conn)
            return None
        with self._lock:
            if not self.ready or not self._sync(conn):
                return None
            return self._ranked(stems, agent_id, workspace_hash)

    def reset(self) -> None:
        """Forget everything (after this process rebuilt the indexes); the next build starts fresh."""
        with self._lock:
            self.ready = False
            self.disabled = None
            self._disabled_at = None

    def _retry_after_rebuild(self, conn: Any) -> None:
        """A mirror that gave up may try again once someone has rebuilt the indexes."""
        if self._disabled_at is None or self._building:
            return
        rebuilt = conn.execute(
            "SELECT 1 FROM head_changes WHERE seq > ? AND op = 0 LIMIT 1", (self._disabled_at,)
        ).fetchone()
        if rebuilt is not None:
            with self._lock:
                self.disabled = None
                self._disabled_at = None

    # -- ranking --

    def _length_norm(self) -> np.ndarray:
        """k1 * (1 - b + b * D / avgdl) per row: FTS5 computes it per row and phrase; it depends on
        the row only, so computing it once per row gives the very same doubles."""
        key = (self._rows.n, self._n_rows, self._n_tokens)
        if key != self._norm_for:
            avgdl = self._n_tokens / self._n_rows if self._n_rows else 1.0
            self._norm = K1 * (1 - B + B * self._rows.lengths[: self._rows.n] / avgdl)
            self._norm_for = key
        return self._norm

    def _ranked(self, stems: Sequence[str], agent_id: str | None, workspace_hash: str | None) -> Ranking:
        """Every live head matching any of ``stems`` (within the scope, when given), scored as ``-bm25()``.

        The arithmetic follows FTS5's ``fts5Bm25Function`` operation by operation, summing the phrases
        in query order, so with the same tokens and statistics the scores are FTS5's. Scope narrows
        the candidates only; the statistics stay those of the whole index, as in FTS5.
        """
        rows = self._rows
        n = rows.n
        norm = self._length_norm()
        alive = rows.alive[:n]
        score = np.zeros(n, dtype=np.float64)
        matched = np.zeros(n, dtype=bool)
        for term in stems:
            postings = self._postings(term)
            if postings is None:
                continue
            slots, freqs = postings
            if self._dead:
                live = alive[slots]
                slots, freqs = slots[live], freqs[live]
            df = len(slots)
            if not df:
                continue
            idf = math.log((self._n_rows - df + 0.5) / (df + 0.5))
            if idf <= 0.0:
                idf = 1e-6
            f = freqs.astype(np.float64)
            score[slots] += idf * ((f * (K1 + 1.0)) / (f + norm[slots]))
            matched[slots] = True
        for value, codes, column in (
            (agent_id, self._agent_code, rows.agents[:n]),
            (workspace_hash, self._workspace_code, rows.workspaces[:n]),
        ):
            if value is not None:
                code = codes.get(value)
                if code is None:
                    matched[:] = False
                else:
                    matched &= column == code
        hits = np.flatnonzero(matched)
        return Ranking(rows.vids[hits], rows.entities[hits], score[hits])

    def describe(self) -> str:
        if self.disabled:
            return f"disabled: {self.disabled}"
        if self.ready:
            return f"ready ({self._n_rows} rows, {len(self._tid)} terms)"
        return "building" if self._building else "not built"
