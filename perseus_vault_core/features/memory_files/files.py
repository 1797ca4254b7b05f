"""Memory files on disk and as stored: records, folders (a jail), atomic rewrites, export.

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
"""

from __future__ import annotations

import base64
import hashlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...contract.errors import Conflict, InvalidInput, StorageError
from ...contract.memory_names import (
    ENTRY_TYPE,
    FILE_CATEGORY,
    FILE_TYPE,
    NOTE_CATEGORY,
    NOTE_TYPE,
    check_name,
    entry_category,
    has_control,
    is_control,
)
from ...contract.models import SkippedLine
from ...primitives import file_locks
from .parser import Entry, ParsedFile, parse, wikilinks


def entry_keys(entries: tuple[Entry, ...] | list[Entry]) -> list[str]:
    """Stable keys: hash of (section, text), with a counter for repeats within a file."""
    seen: dict[str, int] = {}
    keys = []
    for e in entries:
        digest = hashlib.sha256(f"{e.section}\x00{e.text}".encode()).hexdigest()[:24]
        seen[digest] = seen.get(digest, 0) + 1
        keys.append(f"{digest}#{seen[digest]}")
    return keys


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
            f" in sections {', '.join(sections)}" if sections else ""
        )
        return {
            "category": FILE_CATEGORY,
            "key": self.name,
            "type": FILE_TYPE,
            "content": content,
            "body": body,
            "provenance_class": "imported",
            **scope,
        }

    def entry_items(self, scope: dict[str, Any]) -> list[dict[str, Any]]:
        out = []
        for entry, key in zip(self.parsed.entries, entry_keys(self.parsed.entries)):
            out.append(
                {
                    "category": entry_category(self.name),
                    "key": key,
                    "type": ENTRY_TYPE,
                    "content": entry.text,
                    "body": {"file": self.name, "section": entry.section, "date": entry.date},
                    "topic_path": "memory/" + self.name,
                    "provenance_class": "imported",
                    **scope,
                }
            )
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


def _shown(name: str) -> str:
    """``name`` with control characters escaped, so a report line stays one line."""
    return "".join(
        (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}") if is_control(c) else c for c in name
    )


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
        raise InvalidInput(
            field, f"{name}.md in {folder} is a symlink that leads outside that folder; refused"
        )
    return real


def read_file(path: Path) -> bytes | None:
    """The bytes of the regular file at ``path`` (a real path), or None when there is none. A symlink put
    there since is not followed (OSError), a FIFO is never waited on, a folder or device is not read."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    file_locks.refuse_held(path, "file")  # never a descriptor of the vault's own file (its locks)
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
            problem = "control character in the path" if has_control(rel.as_posix()) else None
            data = readable(path, shown, problem, folder)
            if data is not None:
                notes.append(note_item(folder, path, data, scope))
    return FolderContents(records, notes, skipped)


def note_item(
    folder: Path, path: Path, data: bytes, scope: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
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
    item = {
        "category": NOTE_CATEGORY,
        "key": rel[:512],
        "type": NOTE_TYPE,
        "content": body_text,
        "summary": title,
        "body": {"path": rel, "front_matter": front},
        "provenance_class": "imported",
        **scope,
    }
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
    file_locks.refuse_held(path, "file")
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


def current(
    folder: Path | None, name: str, stored: bytes | None, *, adding: bool
) -> tuple[bytes, Path | None, bool]:
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
            raise Conflict(
                f"{name}.md is in the bound folder {folder} but was never imported; "
                "import the folder again (memory_import) to add to it"
            )
        return b"", path, False
    try:
        data = read_file(path)
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror or exc}") from None
    return (stored if data is None else data), path, True
