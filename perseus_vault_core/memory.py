"""The memory-file layer (docs/memory-files.md): named markdown files of sections and dated entries, recalled
entry by entry so the evolution of a view is visible.

How it is stored:

- each memory file is an entity of type ``memory_file`` (category ``memory_file``, key = the file's
  name without ``.md``) whose ``body.markdown`` holds the file's text verbatim (``get_memory`` and
  export read it; every edit is a new version, so history keeps every state of the file);
- each dated entry is an entity of type ``memory_entry`` in category ``memory:<file>`` (so the
  ``file`` filter is an exact-case category match), keyed by a hash of its section and text (and a
  counter when a section holds the same text twice), with ``file``, ``section`` and ``date`` in its
  body. Re-importing reconciles by that key: unchanged entries are not written (nor embedded), new
  ones are added, and entries gone from the file are archived (history keeps them);
- other markdown notes of an imported folder are entities of type ``markdown_note`` (category
  ``note``, key = their path without ``.md``), their ``[[wikilinks]]`` links (relation ``wikilink``);
  ``search`` recalls over them.

The parsing and byte-exact editing of one file are in :mod:`memory_files`; memory_recall's
matching and ranking are in :class:`EntryIndex`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import stat
import tempfile
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .errors import Conflict, InvalidInput, StorageError
from .memory_files import Entry, ParsedFile, parse, wikilinks
from .models import SkippedLine

ENTRY_TYPE = "memory_entry"
FILE_TYPE = "memory_file"
FILE_CATEGORY = "memory_file"
NOTE_TYPE = "markdown_note"
NOTE_CATEGORY = "markdown_note"
LINK_RELATION = "wikilink"
MAX_FILE_NAME = 100
BINDING_KEY = "memory_folder"

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


def valid_date(text: str) -> bool:
    """``YYYY-MM-DD`` (a real day) or ``YYYY-MM``: the dates add_memory writes."""
    import datetime as dt

    for form in ("%Y-%m-%d", "%Y-%m"):
        try:
            parsed = dt.datetime.strptime(text, form)
        except ValueError:
            continue
        return parsed.strftime(form) == text
    return False


def entry_category(file: str) -> str:
    return f"memory:{file}"


def entry_keys(entries: tuple[Entry, ...] | list[Entry]) -> list[str]:
    """Stable keys: hash of (section, text), with a counter for repeats within a file."""
    seen: dict[str, int] = {}
    keys = []
    for e in entries:
        digest = hashlib.sha256(f"{e.section}\x00{e.text}".encode()).hexdigest()[:24]
        seen[digest] = seen.get(digest, 0) + 1
        keys.append(f"{digest}#{seen[digest]}")
    return keys


def check_name(name: str) -> str | None:
    """Why ``name`` cannot be a memory file's name (None when it can)."""
    if not name or not name.strip():
        return "must not be empty"
    if len(name) > MAX_FILE_NAME:
        return f"must be at most {MAX_FILE_NAME} characters"
    if _has_control(name):  # a line break in a name would forge lines in reports and logs
        return "must not contain control characters (line breaks, tabs, ...)"
    if any(c in name for c in '/\\:*?"<>|\x00') or name.startswith("."):
        return "must be a plain file name without .md (no slashes, no leading dot)"
    return None


@dataclass(frozen=True)
class FileRecord:
    """One memory file as the vault will store it."""

    name: str
    parsed: ParsedFile
    markdown: str
    raw_b64: str | None  # the exact bytes, when they are not valid UTF-8

    def file_item(self, scope: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {"markdown": self.markdown, "sha256": hashlib.sha256(self.data).hexdigest()}
        if self.raw_b64 is not None:
            body["raw_b64"] = self.raw_b64
        sections = [s.title for s in self.parsed.sections]
        content = f"Memory file {self.name}: {len(self.parsed.entries)} entries" + (
            f" in sections {', '.join(sections)}" if sections else "")
        return {"category": FILE_CATEGORY, "key": self.name, "type": FILE_TYPE, "content": content,
                "body": body, "provenance_class": "imported", **scope}

    def entry_items(self, scope: dict[str, Any]) -> list[dict[str, Any]]:
        out = []
        for entry, key in zip(self.parsed.entries, entry_keys(self.parsed.entries)):
            out.append({
                "category": entry_category(self.name), "key": key, "type": ENTRY_TYPE, "content": entry.text,
                "body": {"file": self.name, "section": entry.section, "date": entry.date},
                "topic_path": "memory/" + self.name, "provenance_class": "imported", **scope,
            })
        return out

    @property
    def data(self) -> bytes:
        return base64.b64decode(self.raw_b64) if self.raw_b64 is not None else self.markdown.encode("utf-8")


def record(name: str, data: bytes) -> FileRecord:
    try:
        text, raw = data.decode("utf-8"), None
    except UnicodeDecodeError:
        text, raw = data.decode("utf-8", errors="replace"), base64.b64encode(data).decode("ascii")
    return FileRecord(name, parse(name, data), text, raw)


def file_bytes(body: dict[str, Any]) -> bytes:
    """The exact bytes of a stored memory file."""
    raw = body.get("raw_b64")
    return base64.b64decode(raw) if isinstance(raw, str) else str(body.get("markdown", "")).encode("utf-8")


# --- folders -----------------------------------------------------------------------------------
#
# A folder is a jail. Import reads a memory file only when its real path (symlinks resolved) is in the
# memory folder, and a note only when it is in the imported folder; anything else is skipped with a
# reason. A bound scope reads and rewrites only the files the vault imported, and only inside the bound
# folder, so a symlink (dangling or not) or a file dropped into the folder later cannot make the vault
# read or write elsewhere.

OUTSIDE = "a symlink that leads outside the folder: not read"


def _control(c: str) -> bool:
    """A control or formatting character (C0, DEL, C1 such as NEL), a line or paragraph separator,
    or an invisible format character such as a right-to-left override: none belongs in a file name."""
    return unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")


def _has_control(text: str) -> bool:
    return any(_control(c) for c in text)


def _shown(name: str) -> str:
    """``name`` with control characters escaped, so a report line stays one line."""
    return "".join((f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}") if _control(c) else c for c in name)


def inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies below it (both real paths)."""
    return path == folder or folder in path.parents


def jailed(folder: Path, name: str, field: str = "file") -> Path:
    """The real path of memory file ``name`` in ``folder`` (a real path). Refused, as InvalidInput naming
    ``field``, when ``name`` is not a plain file name or the path leads outside ``folder``: a symlink to
    a file or folder elsewhere, dangling or not, or a folder that was replaced by a symlink since."""
    problem = check_name(name)
    if problem is not None:
        raise InvalidInput(field, problem)
    real = Path(os.path.realpath(folder / f"{name}.md"))
    if not inside(real.parent, folder):
        raise InvalidInput(field, f"{name}.md in {folder} is a symlink that leads outside that folder; refused")
    return real


def read_file(path: Path) -> bytes | None:
    """The bytes of the regular file at ``path`` (a real path), or None when there is none. A symlink put
    there since is not followed (OSError), a FIFO is never waited on, a folder or device is not read."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(f"{path} is not a regular file")
        return handle.read()


def memory_dir(folder: Path, name: str) -> Path:
    """The real path of the folder's memory files: ``folder/name`` when it exists, else ``folder``
    itself (a real path). InvalidInput (``memory_dir``) when ``folder/name`` leads outside ``folder``."""
    inner = folder / name
    if not name or not inner.is_dir():
        return folder
    real = Path(os.path.realpath(inner))
    if not inside(real, folder):
        raise InvalidInput("memory_dir", f"{inner} leads outside {folder} (a symlink or ..); refused")
    return real


@dataclass(frozen=True)
class FolderContents:
    """What ``read_folder`` found: the memory files, the notes (with their wikilink targets), and
    the files it skipped, with why."""

    records: list[FileRecord]
    notes: list[tuple[dict[str, Any], list[str]]]
    skipped: list[SkippedLine]


def read_folder(folder: Path, directory: Path, scope: dict[str, Any]) -> FolderContents:
    """Read the memory files in ``directory`` and the notes elsewhere in ``folder`` (both real paths;
    hidden files and folders left out). A file with a control character in its name, or whose real path
    leads outside (``directory`` for a memory file, ``folder`` for a note), is skipped and reported;
    a file that cannot be read is InvalidInput naming ``folder``."""
    skipped: list[SkippedLine] = []

    def readable(path: Path, shown: str, problem: str | None, jail: Path) -> bytes | None:
        if problem is not None:
            skipped.append(SkippedLine(file=_shown(shown), line=0, text="", reason=problem))
            return None
        real = Path(os.path.realpath(path))
        if not inside(real, jail):
            skipped.append(SkippedLine(file=shown, line=0, text="", reason=OUTSIDE))
            return None
        if not real.is_file():
            return None  # a folder or a dangling symlink named *.md, as before
        try:
            return read_file(real)
        except OSError as exc:
            raise InvalidInput("folder", f"cannot read {path}: {exc.strerror or exc}") from None

    records = []
    for path in sorted(directory.glob("*.md")):
        name = path.name[:-3]
        if name.startswith("."):
            continue
        problem = check_name(name)
        data = readable(path, name, f"file name {problem}" if problem else None, directory)
        if data is not None:
            records.append(record(name, data))
    notes = []
    if directory != folder:
        for path in sorted(folder.rglob("*.md")):
            rel = path.relative_to(folder)
            if any(part.startswith(".") for part in rel.parts) or directory in path.parents:
                continue
            shown = rel.with_suffix("").as_posix()
            problem = "control character in the path" if _has_control(rel.as_posix()) else None
            data = readable(path, shown, problem, folder)
            if data is not None:
                notes.append(note_item(folder, path, data, scope))
    return FolderContents(records, notes, skipped)


def note_item(folder: Path, path: Path, data: bytes, scope: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A note as a remember item, and the targets of its wikilinks."""
    text = data.decode("utf-8", errors="replace")
    front: dict[str, str] = {}
    body_text = text
    lines = text.splitlines(keepends=True)
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() == "---":
                for line in lines[1:i]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        front[k.strip()] = v.strip()
                body_text = "".join(lines[i + 1 :])
                break
    rel = path.relative_to(folder).with_suffix("").as_posix()
    title = next((ln.lstrip("#").strip() for ln in body_text.splitlines() if ln.startswith("# ")), path.stem)
    item = {"category": NOTE_CATEGORY, "key": rel[:512], "type": NOTE_TYPE, "content": body_text,
            "summary": title, "body": {"path": rel, "front_matter": front}, "provenance_class": "imported", **scope}
    return item, wikilinks(body_text)


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (a real path, see ``jailed``) through a temporary file in the same
    folder, flushed, then renamed over it. A file it replaces keeps its mode; a new file is 0600 (less
    under a stricter umask): memories are private. A symlink put at ``path`` since is replaced, never
    written through. An OSError is a StorageError."""
    try:
        _replace(path, data)
    except OSError as exc:
        raise StorageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _replace(path: Path, data: bytes) -> None:
    try:
        info: os.stat_result | None = os.lstat(path)
    except FileNotFoundError:
        info = None
    mode = stat.S_IMODE(info.st_mode) if info is not None and stat.S_ISREG(info.st_mode) else None
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))  # 0600
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def export_files(folder: Path, files: list[tuple[str, bytes]]) -> int:
    """Write each (name, bytes) to ``folder/<name>.md`` with ``write_atomic``; a name that is not a plain
    file name is never a path and is left out. Every path is checked before anything is written: one
    that leads outside the folder (a symlink) refuses the whole export, InvalidInput naming ``folder``."""
    root = Path(os.path.realpath(folder))
    planned = [(jailed(root, name, "folder"), data) for name, data in files if check_name(name) is None]
    for path, data in planned:
        write_atomic(path, data)
    return len(planned)


def current(folder: Path | None, name: str, stored: bytes | None, *, adding: bool) -> tuple[bytes, Path | None, bool]:
    """What get/add/delete_memory work on: the file's bytes, the path to rewrite (bound scopes only)
    and whether the file exists. ``stored`` is the vault's active copy (None: never imported, or gone).

    Unbound, the stored copy. Bound, the file in the folder (``jailed``) when the vault imported it
    (its stored copy when the file is gone from the folder). A file the vault did not import is not
    read: get and delete do not find it, and add_memory, which would overwrite it, is refused."""
    if folder is None:
        return (stored, None, True) if stored is not None else (b"", None, False)
    path = jailed(folder, name)
    if stored is None:
        if adding and os.path.lexists(path):
            raise Conflict(f"{name}.md is in the bound folder {folder} but was never imported; "
                           "import the folder again (memory_import) to add to it")
        return b"", path, False
    try:
        data = read_file(path)
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror or exc}") from None
    return (stored if data is None else data), path, True


def _binding_key(agent_id: str | None, workspace_hash: str | None) -> str:
    return BINDING_KEY + ":" + json.dumps([agent_id or "", workspace_hash or ""])


def binding(conn: Any, agent_id: str | None, workspace_hash: str | None) -> Path | None:
    """The folder a scope's memory files are bound to (each scope binds its own)."""
    row = conn.execute("SELECT value FROM vault_meta WHERE key = ?", (_binding_key(agent_id, workspace_hash),)).fetchone()
    return Path(row[0]) if row else None


def bind(conn: Any, directory: Path | None, agent_id: str | None, workspace_hash: str | None) -> None:
    key = _binding_key(agent_id, workspace_hash)
    if directory is None:
        conn.execute("DELETE FROM vault_meta WHERE key = ?", (key,))
    else:
        conn.execute("INSERT OR REPLACE INTO vault_meta (key, value) VALUES (?, ?)", (key, str(directory)))


# --- recall ------------------------------------------------------------------------------------


# Words that frame a question about personal memory rather than name its topic ("what do I think
# about X", "how has my view on X changed", "what does my memory say about X", "my X habits"). Counted as
# topic words, they make "every word held" unreachable for an entry that is plainly about X, dilute the
# keyword share, and pull the query's meaning toward entries that talk about changing or feeling.
FRAMING = frozenset("""
    think thinks thought thoughts view views opinion opinions feel feels feeling feelings felt
    believe believes belief beliefs stance attitude perspective take
    change changed changes changing evolve evolved evolving evolution
    memory memories remember remembered recall note notes say says said mention mentioned tell told know knew
    happen happened happening prefer prefers preferred preference preferences habit habits
    generally usually currently still anymore really
""".split())
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
    from .porter import stem
    from .query import parse as parse_terms

    words = parse_terms(query).words
    kept = [w for w in words if w not in FRAMING and w not in CONTRACTIONS] or [w for w in words if w not in CONTRACTIONS]
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
    (its cosine to the topic plus its heading's, canonical float64 scoring, see vector_index.cosine),
    the share of the topic's words each entry holds, and the relevance order meaning +
    ``KEYWORD_WEIGHT`` x that share. The headings' vectors are the caller's (``heading_vectors``)."""

    def __init__(self, rows: list[tuple[Any, ...]], seq: int, next_change: int | None, dimension: int | None) -> None:
        from .porter import stem
        from .query import tokenize

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
        self.heading_of = np.array([heads.setdefault(heading(f, sec), len(heads)) for f, sec in zip(self.files, self.sections)],
                                   dtype=np.int64)
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
            if (agent_id is None or agent == agent_id) and (workspace_hash is None or workspace == workspace_hash):
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

    def heading_vectors(self, embed: Callable[[list[str]], np.ndarray], known: dict[str, np.ndarray]) -> np.ndarray:
        """One vector per heading, in ``headings`` order: from ``known`` (the caller's cache, kept across
        rebuilds so a heading is embedded once per model), the others by ``embed`` (added to ``known``)."""
        if self._heading_vectors is None:
            missing = [h for h in self.headings if h not in known]
            if missing:
                known.update(zip(missing, embed(missing)))
            self._heading_vectors = np.stack([known[h] for h in self.headings]) if self.headings else np.zeros((0, 0))
        return self._heading_vectors

    def meaning(self, query: np.ndarray, headings: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Each row's meaning score: cosine of ``query`` to its entry plus cosine to its heading
        (``headings`` from ``heading_vectors``); NaN where an entry has no vector."""
        from .vector_index import cosine

        out = np.full(len(rows), np.nan)
        if self.vectors is None or not len(rows):
            return out
        with_vector = self.has_vector[rows]
        if with_vector.any():
            picked = rows[with_vector]
            out[with_vector] = cosine(self.vectors[picked], query) + cosine(headings, query)[self.heading_of[picked]]
        return out

    def candidates(self, rows: np.ndarray, meaning: np.ndarray, share: np.ndarray, keep: np.ndarray) -> list[Candidate]:
        """Candidate objects for the rows where ``keep`` holds, ranked by relevance (ties by id)."""
        relevance = np.nan_to_num(meaning, nan=0.0) + KEYWORD_WEIGHT * share
        picked = [int(i) for i in np.flatnonzero(keep)]
        picked.sort(key=lambda i: (-relevance[i], int(self.ids[rows[i]])))
        out = []
        for rank, i in enumerate(picked):
            r = int(rows[i])
            out.append(Candidate(rank=rank, meaning=None if math.isnan(meaning[i]) else float(meaning[i]),
                                 all_terms=bool(share[i] >= 1.0), date=self.dates[r], file=self.files[r],
                                 section=self.sections[r], entity_id=int(self.ids[r])))
        return out

    @staticmethod
    def matching(meaning: np.ndarray, share: np.ndarray, margin: float = MARGIN, floor: float = MIN_MEANING) -> np.ndarray:
        """Which rows match: every topic word held, or a meaning score of at least ``floor`` and within
        ``margin`` of the best (the score margin cut)."""
        finite = meaning[np.isfinite(meaning)]
        bar = max(floor, float(finite.max()) - margin) if len(finite) else math.inf
        mask: np.ndarray = (share >= 1.0) | (np.nan_to_num(meaning, nan=-math.inf) >= bar)
        return mask

    def top(self, rows: np.ndarray, meaning: np.ndarray, share: np.ndarray, mask: np.ndarray, limit: int
            ) -> tuple[list[Candidate], int]:
        """The ``limit`` most relevant rows where ``mask`` holds (ties by id), oldest first, and how many hold."""
        held = np.flatnonzero(mask)
        relevance = np.nan_to_num(meaning[held], nan=0.0) + KEYWORD_WEIGHT * share[held]
        order = np.lexsort((self.ids[rows[held]], -relevance))[:limit]
        out = []
        for rank, i in enumerate(held[order]):
            r = int(rows[i])
            out.append(Candidate(rank=rank, meaning=None if math.isnan(meaning[i]) else float(meaning[i]),
                                 all_terms=bool(share[i] >= 1.0), date=self.dates[r], file=self.files[r],
                                 section=self.sections[r], entity_id=int(self.ids[r])))
        out.sort(key=lambda c: (c.date, c.file, c.section, c.entity_id))
        return out, len(held)

    def entry(self, entity_id: int) -> tuple[str, str, str | None, str]:
        i = self.position[entity_id]
        return self.files[i], self.sections[i], self.dates[i] or None, self.texts[i]


CROSS_ENCODER_ENV = "PERSEUS_VAULT_CROSS_ENCODER"
CROSS_ENCODER_CUT = 0.5  # a match the cross-encoder scores below this is cut


def load_cross_encoder(path: str) -> Any:
    """The operator's local cross-encoder (a sentence-transformers CrossEncoder folder); none is bundled."""
    from .errors import SetupError

    if not Path(path).is_dir():
        raise SetupError(f"{CROSS_ENCODER_ENV} is {path!r}, which is not a model folder")
    try:
        from sentence_transformers import CrossEncoder

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


