"""memory_recall's matching and ranking: which entries are about a question, oldest first
(docs/memory-files.md). :class:`EntryIndex` holds every visible entry in memory; the rest is pure."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...contract.errors import SetupError
from ...primitives.dense import cosine
from ...primitives.porter import stem
from ...primitives.query import parse as parse_terms
from ...primitives.query import tokenize

# memory_recall's relevance rules (see docs/memory-files.md). An entry's meaning score is its cosine
# to the question's topic plus its heading's: a section titled "Remote work" makes every entry under it
# about remote work, whatever words the entry uses. Calibrated with the bundled MiniLM on the labelled
# folder tests/fixtures/memory_recall (benchmarks/memory_files.recall_quality): entries on the asked topic
# score a median 0.99 (10th percentile 0.44), entries on other topics a median 0.21 (90th percentile
# 0.40), and the best entry for a question on nothing in the folder about 0.1-0.4. Both values sit
# mid-plateau there: recall holds for margins of 0.40 to 0.50 and floors of 0.30 to 0.40.
MIN_MEANING = 0.35  # an entry scoring at least this matches ...
MARGIN = 0.45  # ... unless the best match scores more than this much higher (then the bar rises with it)
POOL = 300  # candidates weighed per query (at least 4 x limit)


# Words that frame a question about personal memory rather than name its topic ("what do I think
# about X", "how has my view on X changed", "what does my memory say about X", "my X habits"). Counted as
# topic words, they make "every word held" unreachable for an entry that is plainly about X, dilute the
# keyword share, and pull the query's meaning toward entries that talk about changing or feeling.
FRAMING = frozenset(
    """
    think thinks thought thoughts view views opinion opinions feel feels feeling feelings felt
    believe believes belief beliefs stance attitude perspective take
    change changed changes changing evolve evolved evolving evolution
    memory memories remember remembered recall note notes say says said mention mentioned tell told know knew
    happen happened happening prefer prefers preferred preference preferences habit habits
    generally usually currently still anymore really
""".split()
)
# What the tokenizer leaves of contractions ("what's", "don't", "I'd", "I'll", "I've", "you're", "I'm"):
# a query's "s" would otherwise have to be held like a word, and any possessive holds it.
CONTRACTIONS = frozenset("s t d ll ve re m".split())


@dataclass(frozen=True)
class Topic:
    """What a memory_recall question is about: the stems an entry is matched on and the text embedded
    for meaning."""

    stems: tuple[str, ...]
    text: str


def topic(query: str) -> Topic:
    """The question's content words, less framing and contraction leftovers; its text is those words,
    or the query itself when it has none. A question made only of framing words ("my opinions") is
    about them after all, so they are kept then. Pure."""
    words = parse_terms(query).words
    kept = [w for w in words if w not in FRAMING and w not in CONTRACTIONS] or [
        w for w in words if w not in CONTRACTIONS
    ]
    return Topic(tuple(dict.fromkeys(stem(w) for w in kept)), " ".join(kept) or query)


def heading(file: str, section: str) -> str:
    """The words an entry sits under, embedded once per vault: ``Section (File)``, or the file's name
    for entries before any section. The file's name tells "Dad (People)" from "Dad (Health)"."""
    return f"{section} ({file})" if section else file


@dataclass(frozen=True)
class Candidate:
    """One entry weighed by memory_recall: its hybrid rank (0 = best), meaning score (cosine to the
    topic plus its heading's; None without vectors), whether it holds every content word of the query,
    and its sort fields."""

    rank: int
    meaning: float | None
    all_terms: bool
    date: str
    file: str
    section: str
    entity_id: int


KEYWORD_WEIGHT = 0.5  # relevance = meaning + this x the share of the topic's words an entry holds


class EntryIndex:
    """Every visible memory entry in memory, for memory_recall: ids, scope, file, section, date, text,
    word stems (an inverted index) and vectors. Built from the file in one read and rebuilt when any
    current version changes (the change log moves) or the clock passes an expiry or validity boundary.

    A recall is then numpy over at most a few thousand rows: the meaning score of every entry in scope
    (its cosine to the topic plus its heading's, canonical float64 scoring, see dense.cosine),
    the share of the topic's words each entry holds, and the relevance order meaning +
    ``KEYWORD_WEIGHT`` x that share. The headings' vectors are the caller's (``heading_vectors``)."""

    def __init__(
        self, rows: list[tuple[Any, ...]], seq: int, next_change: int | None, dimension: int | None
    ) -> None:
        self.seq, self.next_change = seq, next_change
        self.ids = np.array([r[0] for r in rows], dtype=np.int64)
        self.position = {int(r[0]): i for i, r in enumerate(rows)}
        self.texts = [r[3] for r in rows]
        bodies = [json.loads(r[4]) for r in rows]
        self.files = [str(b.get("file", "")) for b in bodies]
        self.sections = [str(b.get("section", "")) for b in bodies]
        self.dates = [str(b.get("date") or "") for b in bodies]
        self.by_scope: dict[tuple[str, str], list[int]] = {}
        self.by_file: dict[str, set[int]] = {}
        heads: dict[str, int] = {}
        self.heading_of = np.array(
            [heads.setdefault(heading(f, sec), len(heads)) for f, sec in zip(self.files, self.sections)],
            dtype=np.int64,
        )
        self.headings = list(heads)
        self._heading_vectors: np.ndarray | None = None
        postings: dict[str, list[int]] = {}
        for i, r in enumerate(rows):
            self.by_scope.setdefault((r[1], r[2]), []).append(i)
            self.by_file.setdefault(self.files[i], set()).add(i)
            for s in {stem(t) for t in tokenize(f"{self.texts[i]} {self.sections[i]}")}:
                postings.setdefault(s, []).append(i)
        self.postings = {s: np.array(ix, dtype=np.int64) for s, ix in postings.items()}
        self.has_vector = np.array([r[5] is not None for r in rows], dtype=bool)
        self.vectors: np.ndarray | None = None
        if dimension is not None and self.has_vector.any():
            matrix = np.zeros((len(rows), dimension), dtype=np.float32)
            for i, r in enumerate(rows):
                if r[5] is not None:
                    matrix[i] = np.frombuffer(r[5], dtype=np.float32)
            self.vectors = matrix

    def rows(self, agent_id: str | None, workspace_hash: str | None, file: str | None) -> np.ndarray:
        """Positions of the entries in scope (an omitted scope field is no filter) and in ``file``."""
        picked: list[int] = []
        for (agent, workspace), ix in self.by_scope.items():
            if (agent_id is None or agent == agent_id) and (
                workspace_hash is None or workspace == workspace_hash
            ):
                picked.extend(ix)
        if file is not None:
            in_file = self.by_file.get(file, set())
            picked = [i for i in picked if i in in_file]
        return np.array(sorted(picked), dtype=np.int64)

    def coverage(self, stems: list[str], rows: np.ndarray) -> np.ndarray:
        """For each row, the share of ``stems`` its entry holds."""
        counts = np.zeros(len(self.ids), dtype=np.float64)
        for s in stems:
            hit = self.postings.get(s)
            if hit is not None:
                counts[hit] += 1.0
        share: np.ndarray = counts[rows] / max(1, len(stems))
        return share

    def heading_vectors(
        self, embed: Callable[[list[str]], np.ndarray], known: dict[str, np.ndarray]
    ) -> np.ndarray:
        """One vector per heading, in ``headings`` order: from ``known`` (the caller's cache, kept across
        rebuilds so a heading is embedded once per model), the others by ``embed`` (added to ``known``)."""
        if self._heading_vectors is None:
            missing = [h for h in self.headings if h not in known]
            if missing:
                known.update(zip(missing, embed(missing)))
            self._heading_vectors = (
                np.stack([known[h] for h in self.headings]) if self.headings else np.zeros((0, 0))
            )
        return self._heading_vectors

    def meaning(self, query: np.ndarray, headings: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Each row's meaning score: cosine of ``query`` to its entry plus cosine to its heading
        (``headings`` from ``heading_vectors``); NaN where an entry has no vector."""
        out = np.full(len(rows), np.nan)
        if self.vectors is None or not len(rows):
            return out
        with_vector = self.has_vector[rows]
        if with_vector.any():
            picked = rows[with_vector]
            out[with_vector] = (
                cosine(self.vectors[picked], query) + cosine(headings, query)[self.heading_of[picked]]
            )
        return out

    def candidates(
        self, rows: np.ndarray, meaning: np.ndarray, share: np.ndarray, keep: np.ndarray
    ) -> list[Candidate]:
        """Candidate objects for the rows where ``keep`` holds, ranked by relevance (ties by id)."""
        relevance = np.nan_to_num(meaning, nan=0.0) + KEYWORD_WEIGHT * share
        picked = [int(i) for i in np.flatnonzero(keep)]
        picked.sort(key=lambda i: (-relevance[i], int(self.ids[rows[i]])))
        out = []
        for rank, i in enumerate(picked):
            r = int(rows[i])
            out.append(
                Candidate(
                    rank=rank,
                    meaning=None if math.isnan(meaning[i]) else float(meaning[i]),
                    all_terms=bool(share[i] >= 1.0),
                    date=self.dates[r],
                    file=self.files[r],
                    section=self.sections[r],
                    entity_id=int(self.ids[r]),
                )
            )
        return out

    @staticmethod
    def matching(
        meaning: np.ndarray, share: np.ndarray, margin: float = MARGIN, floor: float = MIN_MEANING
    ) -> np.ndarray:
        """Which rows match: every topic word held, or a meaning score of at least ``floor`` and within
        ``margin`` of the best (the score margin cut)."""
        finite = meaning[np.isfinite(meaning)]
        bar = max(floor, float(finite.max()) - margin) if len(finite) else math.inf
        mask: np.ndarray = (share >= 1.0) | (np.nan_to_num(meaning, nan=-math.inf) >= bar)
        return mask

    def top(
        self, rows: np.ndarray, meaning: np.ndarray, share: np.ndarray, mask: np.ndarray, limit: int
    ) -> tuple[list[Candidate], int]:
        """The ``limit`` most relevant rows where ``mask`` holds (ties by id), oldest first, and how many hold."""
        held = np.flatnonzero(mask)
        relevance = np.nan_to_num(meaning[held], nan=0.0) + KEYWORD_WEIGHT * share[held]
        order = np.lexsort((self.ids[rows[held]], -relevance))[:limit]
        out = []
        for rank, i in enumerate(held[order]):
            r = int(rows[i])
            out.append(
                Candidate(
                    rank=rank,
                    meaning=None if math.isnan(meaning[i]) else float(meaning[i]),
                    all_terms=bool(share[i] >= 1.0),
                    date=self.dates[r],
                    file=self.files[r],
                    section=self.sections[r],
                    entity_id=int(self.ids[r]),
                )
            )
        out.sort(key=lambda c: (c.date, c.file, c.section, c.entity_id))
        return out, len(held)

    def entry(self, entity_id: int) -> tuple[str, str, str | None, str]:
        i = self.position[entity_id]
        return self.files[i], self.sections[i], self.dates[i] or None, self.texts[i]


CROSS_ENCODER_ENV = "PERSEUS_VAULT_CROSS_ENCODER"
CROSS_ENCODER_CUT = 0.5  # a match the cross-encoder scores below this is cut


def load_cross_encoder(path: str) -> Any:
    """The operator's local cross-encoder (a sentence-transformers CrossEncoder folder); none is bundled."""
    if not Path(path).is_dir():
        raise SetupError(f"{CROSS_ENCODER_ENV} is {path!r}, which is not a model folder")
    try:
        from sentence_transformers import CrossEncoder
    except ImportError:
        raise SetupError(
            f"{CROSS_ENCODER_ENV}: a cross-encoder runs on sentence-transformers: "
            "pip install 'perseus-vault[torch]'"
        ) from None
    try:
        return CrossEncoder(path, device="cpu")
    except Exception as exc:  # a broken model folder, or sentence-transformers missing
        raise SetupError(f"{CROSS_ENCODER_ENV}: cannot load a cross-encoder from {path}: {exc}") from exc


def rerank(candidates: list[Candidate], scores: list[float], limit: int) -> tuple[list[Candidate], int]:
    """The cross-encoder cut: matches scored at least ``CROSS_ENCODER_CUT``, the ``limit`` best by that
    score, oldest first; and how many passed. Pure."""
    passed = [(s, c) for s, c in zip(scores, candidates) if s >= CROSS_ENCODER_CUT]
    best = [c for _, c in sorted(passed, key=lambda sc: (-sc[0], sc[1].rank))][:limit]
    best.sort(key=lambda c: (c.date, c.file, c.section, c.entity_id))
    return best, len(passed)
