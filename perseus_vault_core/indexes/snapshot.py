"""Index snapshots: a mirror's arrays saved beside the vault, so a new process opens them instead of
rebuilding (see :mod:`.mirror` and docs/recall.md, "Indexes on disk").

One file per mirror, ``<vault>-<name>.pvidx``: a magic line, a JSON header (what the mirror needs to
check and restore, and where each array lies), then the arrays, each aligned to 64 bytes. Loading maps
the arrays copy-on-write (``np.memmap`` mode ``"c"``): nothing is read until a query touches it, pages
no process wrote are shared by every process that maps the file, and a process that changes a row
gets a private copy of that page only. The file is never written in place: a new snapshot is written
to a temporary file, flushed to disk and renamed over the old one, so a crash leaves the old file or
the new one, never a mix.

A snapshot is a cache, never the source of truth: it names the change-log position it reflects and
a marker of the log entry there, and is used only when the vault's log still holds that entry (the
mirror then replays the log from there, as it does after any write).
"""

from __future__ import annotations

import json
import os
import re
import struct
import threading
from typing import Any, NamedTuple

import numpy as np

MAGIC = b"PVIDX01\n"
FORMAT = 2
ALIGN = 64
_LENGTH = struct.Struct("<Q")
MAX_HEADER = 64 << 20  # a header is JSON with the vocabulary at most; anything larger is not ours


def _aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


class Padded(NamedTuple):
    """An array saved as its rows followed by zero rows up to ``rows`` (room to grow after a load),
    written without a padded copy of it."""

    array: np.ndarray
    rows: int


Saved = np.ndarray | Padded


def _shape(saved: Saved) -> tuple[np.dtype[Any], tuple[int, ...]]:
    if isinstance(saved, Padded):
        return saved.array.dtype, (saved.rows, *saved.array.shape[1:])
    return saved.dtype, tuple(saved.shape)


def write(path: str, meta: dict[str, Any], arrays: dict[str, Saved], mode: int = 0o600) -> str:
    """Write a snapshot to a temporary file beside ``path``, flushed to disk; returns its name, for
    :func:`commit` (rename over ``path``: atomic) or :func:`discard`. ``mode``: the file's permissions."""
    specs: list[dict[str, Any]] = []
    offsets: list[int] = []
    offset = 0
    for name, saved in arrays.items():
        dtype, shape = _shape(saved)
        specs.append({"name": name, "dtype": dtype.str, "shape": list(shape), "offset": offset})
        offsets.append(offset)
        offset = _aligned(offset + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)
    header = json.dumps({"format": FORMAT, "meta": meta, "arrays": specs}, separators=(",", ":")).encode()
    start = _aligned(len(MAGIC) + _LENGTH.size + len(header))
    sweep(path)
    temporary = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(MAGIC + _LENGTH.pack(len(header)) + header)
            for at, saved in zip(offsets, arrays.values()):
                handle.seek(start + at)  # a padded array's zero rows are the file's hole up to the next one
                array = saved.array if isinstance(saved, Padded) else saved
                if array.size:  # straight from the array, no copy of it (1.5 GB at a million vectors)
                    handle.write(np.ascontiguousarray(array).reshape(-1).data.cast("B"))
            handle.truncate(start + offset)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        discard(temporary)
        raise
    return temporary


def commit(temporary: str, path: str) -> None:
    os.replace(temporary, path)


def discard(temporary: str) -> None:
    try:
        os.unlink(temporary)
    except OSError:
        pass


def load(path: str) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """``(meta, arrays)``, the arrays mapped copy-on-write; ``None`` when there is no usable snapshot
    (missing, truncated, another format). Header and arrays come from one open file, so a snapshot
    renamed over this one meanwhile cannot mix into it."""
    try:
        with open(path, "rb") as handle:
            return _read(handle)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _read(handle: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    head = handle.read(len(MAGIC) + _LENGTH.size)
    if len(head) < len(MAGIC) + _LENGTH.size or head[: len(MAGIC)] != MAGIC:
        return None
    (length,) = _LENGTH.unpack(head[len(MAGIC) :])
    if length > MAX_HEADER:
        return None
    header = json.loads(handle.read(length))
    size = os.fstat(handle.fileno()).st_size
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        return None
    start = _aligned(len(MAGIC) + _LENGTH.size + length)
    arrays: dict[str, np.ndarray] = {}
    for spec in header["arrays"]:
        dtype, shape = np.dtype(spec["dtype"]), tuple(int(d) for d in spec["shape"])
        offset = start + int(spec["offset"])
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if offset + nbytes > size:
            return None  # truncated
        # A plain ndarray over the mapping (it keeps the mapping alive): np.memmap's own indexing costs
        # microseconds per call, paid on every query.
        arrays[spec["name"]] = (
            np.memmap(handle, dtype=dtype, mode="c", offset=offset, shape=shape).view(np.ndarray)
            if nbytes
            else np.zeros(shape, dtype=dtype)
        )
    return header.get("meta", {}), arrays


_HEAD = re.compile(rb'^\{"format":(\d+),"meta":\{"name":"[^"]*","seq":(\d+),"n":(\d+)[,}]')


def peek(path: str) -> tuple[int, int] | None:
    """``(seq, n)`` of the snapshot at ``path`` (its log position and rows) from the first bytes of its
    header, without parsing the rest (the keyword index's holds its whole vocabulary); ``None`` when
    there is none this code could load."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(MAGIC) + _LENGTH.size + 256)
    except OSError:
        return None
    if head[: len(MAGIC)] != MAGIC or len(head) < len(MAGIC) + _LENGTH.size:
        return None
    found = _HEAD.match(head[len(MAGIC) + _LENGTH.size :])
    if found is None or int(found.group(1)) != FORMAT:
        return None
    return int(found.group(2)), int(found.group(3))


def remove(path: str) -> None:
    """Delete a snapshot if there is one (a purge must not leave the purged memory in it), and what
    killed saves left of one."""
    sweep(path)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def sweep(path: str) -> int:
    """Delete the temporaries (``<path>.<pid>.<thread>.tmp``) of saves whose process is gone, killed mid-save:
    nothing reads them, and they hold a mirror's words and vectors. Returns how many went."""
    folder, base = os.path.split(os.path.abspath(path))
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    removed = 0
    for name in names:
        if not (name.startswith(base + ".") and name.endswith(".tmp")):
            continue
        pid = name[len(base) + 1 : -len(".tmp")].split(".")[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        try:
            os.unlink(os.path.join(folder, name))
            removed += 1
        except OSError:
            pass
    return removed


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (where that cannot be asked, it is taken to: its file stays)."""
    if pid == os.getpid() or os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True
