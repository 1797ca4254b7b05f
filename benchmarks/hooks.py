"""New processes, as a hook starts them before every agent turn (docs/hooks.md): ``perseus-vault prepare`` and
``recall`` in a new process, each beside a bare interpreter's start in the same run, alone and through the
resident helper; what importing the package costs; the time from the end of an import to a warm first
recall in a new process; and the first answer of an MCP server and of the web inspector, from process start.

``python -m benchmarks.run --only hooks [--sizes N ...]`` runs this part alone (2,000 and 100,000 memories
by default) and replaces its section of docs/benchmarks.md; the full run measures it at one million too, on
million.py's vault (``at_million``), and 1,000,000 in ``--sizes`` builds such a vault here.

Stores: the speed benchmark's synthetic memories, imported by a process of their own that exits (as a user's
import does), twice: keyword-only, and with vectors. Vectors: the bundled model's own for the first
:data:`REAL` texts (from the vector cache), and for every other text the normalised sum of two of those
(million.py's :class:`DerivedVectors`): embedding 100,000 texts here would take most of an hour, and a
prepare's cost does not depend on which vectors are stored. Queries and contexts are embedded by the real
model in the processes timed, as a hook's would be.

Each case runs :data:`RUNS` times, all cases interleaved round by round (the bare interpreter among them), so
that a busy moment of the machine falls on every case alike; the figure is the median wall time from
``fork`` to exit, and the peak memory is the process's own (``ru_maxrss`` from ``wait4``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .report import commit, fmt, log, verdict, write_section
from .speed import byte_compile

SECTION = "## New processes: hooks, the resident helper, start-up"
ROOT = Path(__file__).resolve().parents[1]
RUNS = 7
REAL = 2_000  # texts with the model's own vectors; the others' are derived from them
CONTEXT = "I am working on the billing pipeline: why is the invoices queue slow?"
QUERY = "billing queue latency on postgres"
BARE = [sys.executable, "-c", "import json, sqlite3"]
Log = Callable[[str], None]


def _cli() -> list[str]:
    """The console script a hook runs (``python -m`` where it is not installed)."""
    found = shutil.which("perseus-vault", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "perseus_vault_core.cli"]


def _env(**more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERSEUS_VAULT_")}
    return env | more


def interleaved(
    cases: dict[str, tuple[list[str], dict[str, str]]], runs: int = RUNS
) -> dict[str, dict[str, Any]]:
    """Every case once per round, ``runs`` rounds after one warm-up round; p50 wall ms and peak MB each."""
    walls: dict[str, list[float]] = {name: [] for name in cases}
    peaks: dict[str, float] = {}
    outputs: dict[str, str] = {}
    for round_ in range(runs + 1):
        for name, (argv, env) in cases.items():
            wall, out = _measured(argv, env)
            if round_:
                walls[name].append(wall)
            outputs[name] = out
        for name, (argv, env) in cases.items():
            if round_ == 0:
                peaks[name] = _peak(argv, env)
    return {
        name: {
            "p50_ms": statistics.median(w),
            "min_ms": min(w),
            "peak_mb": peaks[name],
            "chars": len(outputs[name]),
        }
        for name, w in walls.items()
    }


def _measured(argv: Sequence[str], env: dict[str, str]) -> tuple[float, str]:
    """(wall ms from start to exit, stdout) of one process."""
    started = time.perf_counter()
    done = subprocess.run(list(argv), env=env, cwd=ROOT, capture_output=True, timeout=600)
    wall = (time.perf_counter() - started) * 1000
    if done.returncode:
        raise RuntimeError(f"{list(argv)[-4:]} failed: {done.stderr.decode()[-2000:]}")
    return wall, done.stdout.decode()


PEAK = (
    "import os, sys, resource; pid = os.fork()\nif pid == 0:\n    os.execvpe(sys.argv[1], sys.argv[1:], os.environ)\n"
    "_, status, usage = os.wait4(pid, 0)\nprint(usage.ru_maxrss)"
)


def _peak(argv: Sequence[str], env: dict[str, str]) -> float:
    """The peak resident memory (MB) of one run of ``argv`` alone (its own, not this process's)."""
    done = subprocess.run(
        [sys.executable, "-c", PEAK, *argv], env=env, cwd=ROOT, capture_output=True, timeout=600
    )
    return int(done.stdout.decode().strip().splitlines()[-1]) / 1024


# --- the stores: written by a process that exits ---------------------------------------------------

IMPORT = """
import json, sys, time
from perseus_vault_core import Vault
from benchmarks.synthetic import memories
path, n, vectors = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "vectors"
embedder = False
if vectors:
    from perseus_vault_core.embeddings import load
    from benchmarks.million import DerivedVectors
    from benchmarks.vector_cache import CachingEmbedder
    embedder = DerivedVectors(CachingEmbedder(load()), real=int(sys.argv[4]))
lines = [json.dumps(m) for m in memories(n)]
started = time.perf_counter()
vault = Vault(path, embedder=embedder)
for first in range(0, n, 100_000):  # a large file fed in chunks, as million.py does
    vault.import_jsonl(lines[first:first + 100_000])
imported = time.perf_counter()
vault.close()
closed = time.perf_counter()
print(json.dumps({"import_s": imported - started, "close_s": closed - imported,
                  "settled": [[s.name, s.how, s.seconds] for s in vault.engine.settled]}))
"""


def write_store(path: str, n: int, vectors: bool) -> dict[str, Any]:
    """Import ``n`` memories in a process of its own that then exits: its import and its close (which
    leaves the saved indexes current, indexes/settle.py) timed apart."""
    argv = [sys.executable, "-c", IMPORT, path, str(n), "vectors" if vectors else "plain", str(REAL)]
    done = subprocess.run(argv, env=_env(), cwd=ROOT, capture_output=True, text=True, timeout=7200)
    if done.returncode:
        raise RuntimeError(f"import of {n:,} failed: {done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


FIRST = """
import json, sys, time
started = time.perf_counter()
from perseus_vault_core import Vault
indexes = "saved" if sys.argv[2] == "saved" else False
with Vault(sys.argv[1], embedder=False, keyword_index=indexes, vector_index=indexes) as vault:
    opened = time.perf_counter()
    vault.recall(sys.argv[3], mode="fts5", reinforce=False)
    answered = time.perf_counter()
    warm = "from a snapshot" in vault.stats().keyword_index
print(json.dumps({"recall_ms": (answered - opened) * 1000, "in_process_s": answered - started, "warm": warm}))
"""


def first_recall(path: str, indexes: str) -> dict[str, Any]:
    """A new process's first keyword recall, as a one-shot CLI call opens the vault: from the saved index
    (``saved``), or by SQL (what a one-shot process did before imports left indexes)."""
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", FIRST, path, indexes, QUERY],
            env=_env(),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
        runs.append(
            json.loads(done.stdout.strip().splitlines()[-1]) | {"process_s": time.perf_counter() - started}
        )
    return {key: statistics.median(r[key] for r in runs) for key in ("recall_ms", "process_s")} | {
        "warm": all(r["warm"] for r in runs)
    }


# --- the resident helper ---------------------------------------------------------------------------


class Helpers:
    """``perseus-vault resident`` for each vault and setting, in a private folder of this run's own."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="pv-", dir="/tmp")
        os.chmod(self.folder, 0o700)
        self.procs: list[subprocess.Popen[bytes]] = []

    def env(self, **more: str) -> dict[str, str]:
        return _env(PERSEUS_VAULT_RUNTIME_DIR=self.folder, **more)

    def start(self, db: str, **more: str) -> float:
        """Start one and wait for it to listen; seconds to ready."""
        env = self.env(**more)
        before = set(os.listdir(self.folder))
        started = time.perf_counter()
        proc = subprocess.Popen(
            [*_cli(), "resident", "--db", db, "--idle", "3600"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.procs.append(proc)
        deadline = time.monotonic() + 600
        while not {f for f in os.listdir(self.folder) if f.endswith(".sock")} - before:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the resident helper did not start")
            time.sleep(0.01)
        return time.perf_counter() - started

    def close(self) -> None:
        for proc in self.procs:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
        shutil.rmtree(self.folder, ignore_errors=True)


def cases(plain: str, model: str, helpers: Helpers) -> dict[str, tuple[list[str], dict[str, str]]]:
    cli = _cli()
    keyword = {"PERSEUS_VAULT_EMBEDDER": "none"}
    out: dict[str, tuple[list[str], dict[str, str]]] = {"bare interpreter": (BARE, _env())}
    for label, db, setting in (("keyword-only", plain, keyword), ("with the model", model, {})):
        for verb, arg in (("prepare", CONTEXT), ("recall", QUERY)):
            out[f"{verb}, {label}, alone"] = (
                [*cli, verb, "--db", db, arg],
                helpers.env(PERSEUS_VAULT_RESIDENT="0", **setting),
            )
            out[f"{verb}, {label}, resident helper"] = ([*cli, verb, "--db", db, arg], helpers.env(**setting))
    return out


def new_processes(plain: str, model: str, log: Log, runs: int = RUNS) -> dict[str, Any]:
    """The CLI's prepare and recall in new processes, alone and through a helper, beside a bare start."""
    helpers = Helpers()
    try:
        ready = {
            "keyword-only": helpers.start(plain, PERSEUS_VAULT_EMBEDDER="none"),
            "with the model": helpers.start(model),
        }
        timed = interleaved(cases(plain, model, helpers), runs)
        same = {}  # the same command line alone and through the helper (recall without reinforcement, which moves ranks)
        for label, db, setting in (
            ("keyword-only", plain, {"PERSEUS_VAULT_EMBEDDER": "none"}),
            ("with the model", model, {}),
        ):
            for verb, args in (("prepare", [CONTEXT]), ("recall", [QUERY, "--no-reinforce"])):
                argv = [*_cli(), verb, "--db", db, *args]
                alone = _measured(argv, helpers.env(PERSEUS_VAULT_RESIDENT="0", **setting))[1]
                served = _measured(argv, helpers.env(**setting))[1]
                same[f"{verb}, {label}"] = alone == served
        log(f"  new processes: {json.dumps(timed)}")
        return {"cases": timed, "helper_ready_s": ready, "same_output": same}
    finally:
        helpers.close()


# --- importing the package, and the servers' first answers ----------------------------------------------

IMPORTS = """
import json, sys, time
started = time.perf_counter()
exec(sys.argv[1])
took = time.perf_counter() - started
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(json.dumps({"s": took, "peak_mb": peak / 1024, "modules": len(sys.modules)}))
"""


def imports() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, code in (
        ("import json, sqlite3 (the bare interpreter's)", "import json, sqlite3"),
        ("import perseus_vault_core", "import perseus_vault_core"),
        ("from perseus_vault_core import Vault", "from perseus_vault_core import Vault"),
        ("the CLI before it asks the helper (perseus_vault_core.cli)", "import perseus_vault_core.cli.main"),
    ):
        runs = []
        for _ in range(5):
            done = subprocess.run(
                [sys.executable, "-c", IMPORTS, code],
                env=_env(),
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=120,
                check=True,
            )
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        out[label] = {key: statistics.median(r[key] for r in runs) for key in ("s", "peak_mb", "modules")}
    return out


def mcp_first_call(db: str) -> float:
    """Seconds from starting ``perseus-vault serve`` (stdio) to its first answered recall."""
    import anyio

    from perseus_vault_integrations.mcp import VaultClient

    async def first() -> float:
        started = time.perf_counter()
        async with VaultClient.stdio(db, env=_env()) as client:
            await client.recall(QUERY, reinforce=False)
            return time.perf_counter() - started

    return statistics.median(anyio.run(first) for _ in range(3))


def inspector_first_page(db: str) -> float:
    """Seconds from starting ``perseus-vault ui`` to its first page (the overview) served."""
    import httpx

    runs = []
    for _ in range(3):
        started = time.perf_counter()
        proc = subprocess.Popen(
            [*_cli(), "ui", "--db", db, "--http", "127.0.0.1:0"],
            env=_env(),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert proc.stdout is not None
            base = proc.stdout.readline().strip().rstrip("/")
            with httpx.Client(base_url=base, timeout=600) as client:
                page = client.get("/")
                assert page.status_code == 200, page.status_code
            runs.append(time.perf_counter() - started)
        finally:
            proc.terminate()
            proc.wait(60)
    return statistics.median(runs)


# --- the run ---------------------------------------------------------------------------------------


def run_size(n: int, log: Log) -> dict[str, Any]:
    out: dict[str, Any] = {"entities": n}
    with tempfile.TemporaryDirectory() as tmp:
        plain, model = os.path.join(tmp, "plain.db"), os.path.join(tmp, "model.db")
        if n >= 1_000_000:  # one store serves both settings (keyword-only ignores its vectors), as at_million
            log(f"  importing {n:,} with vectors (a process that exits) ...")
            out["import_model"] = write_store(model, n, vectors=True)
            return out | {"processes": new_processes(model, model, log)}
        log(f"  importing {n:,} keyword-only, then with vectors (each by a process that exits) ...")
        out["import_plain"] = write_store(plain, n, vectors=False)
        out["import_model"] = write_store(model, n, vectors=True)
        out["first_recall_saved"] = first_recall(plain, "saved")
        out["first_recall_sql"] = first_recall(plain, "sql")
        out["processes"] = new_processes(plain, model, log)
        if n == 100_000:
            out["mcp_first_call_s"] = mcp_first_call(model)
            out["inspector_first_page_s"] = inspector_first_page(model)
    return out


def at_million(path: str) -> dict[str, Any]:
    """On million.py's vault (vectors, indexes saved): the new processes, keyword-only and with the model."""
    return {"entities": 1_000_000, "processes": new_processes(path, path, print)}


def run(sizes: list[int], log: Log = print) -> dict[str, Any]:
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": commit(),
        "imports": imports(),
        "sizes": [],
    }
    log(f"imports: {json.dumps(result['imports'])}")
    for n in sizes:
        log(f"hooks at {n:,} memories ...")
        result["sizes"].append(run_size(n, log))
        log(json.dumps(result["sizes"][-1]))
    return result


def render(result: dict[str, Any]) -> list[str]:
    date = result.get("date") or time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    out = [
        SECTION,
        "",
        f"Run {date} (commit {result.get('commit') or commit()}). What a hook pays: a new process"
        f' running the console script (`perseus-vault prepare --db ... "<context>"`, and `recall`), wall time from'
        f" its start to its exit, p50 of {RUNS} runs interleaved with a bare interpreter's start"
        ' (`python -c "import json, sqlite3"`) in the same rounds; the ratio is to that bare start. "Alone" is the'
        " CLI answering by itself (PERSEUS_VAULT_RESIDENT=0): it imports the package, opens the vault and its saved"
        ' indexes and, with the model, loads it. "Resident helper" is the same command line answered by'
        " `perseus-vault resident` (docs/hooks.md), started beforehand: the new process imports the CLI's"
        " client alone, sends its command line over a Unix socket and prints the answer. Keyword-only runs with"
        " PERSEUS_VAULT_EMBEDDER=none; with the model, prepare and hybrid recall embed their context in the"
        " process that answers. Each store was imported by a process that then exited (its close left the saved"
        " indexes current: indexes/settle.py). Vectors: the model's own for the first"
        f" {REAL:,} texts, the normalised sum of two of those for the others (million.py). Peak memory is the"
        " process's own. The targets judge the helper's rows, the way docs/hooks.md sets a hook up; the rows"
        ' "alone" are what a call pays that finds no helper (and the first call, which starts one). See'
        " `benchmarks/hooks.py`.",
        "",
    ]
    imports_ = result["imports"]
    out += ["| in a new process | time | peak memory | modules loaded |", "|---|---|---|---|"]
    out += [
        f"| `{label}` | {fmt(v['s'] * 1000, 1)} ms | {fmt(v['peak_mb'], 0)} MB | {int(v['modules'])} |"
        for label, v in imports_.items()
    ]
    out.append("")
    targets: list[str] = []
    for size in result["sizes"]:
        n = size["entities"]
        p = size["processes"]
        bare = p["cases"]["bare interpreter"]["p50_ms"]
        out += [
            f"### {n:,} memories",
            "",
            "| command | p50 wall | ratio to the bare start | fastest | peak memory | output identical to alone |",
            "|---|---|---|---|---|---|",
        ]
        for name, c in p["cases"].items():
            base = name.rsplit(", ", 1)[0]
            same = (
                "-"
                if name == "bare interpreter" or name.endswith("alone")
                else ("yes" if p["same_output"].get(base) else "**no**")
            )
            out.append(
                f"| {name} | {fmt(c['p50_ms'], 0)} ms | {c['p50_ms'] / bare:.1f}x | {fmt(c['min_ms'], 0)} ms | "
                f"{fmt(c['peak_mb'], 0)} MB | {same} |"
            )
        out.append("")
        ready = ", ".join(f"{k} {fmt(v)} s" for k, v in p["helper_ready_s"].items())
        out += [
            f"A helper started by hand was listening (model loaded, saved indexes open) after: {ready}.",
            "",
        ]
        rows = []
        for key, label in (("import_plain", "keyword-only import"), ("import_model", "import with vectors")):
            if key in size:
                i = size[key]
                rows.append(
                    f"| {label} | {fmt(i['import_s'], 1)} s, then its close: {fmt(i['close_s'], 2)} s"
                    f" ({_settled(i)}) |"
                )
        if "first_recall_saved" in size:
            fs, fq, ip = size["first_recall_saved"], size["first_recall_sql"], size["import_plain"]
            rows += [
                f"| a new process's first keyword recall, from the saved index | {fmt(fs['recall_ms'], 1)} ms after"
                f" opening; {fmt(fs['process_s'] * 1000, 0)} ms the whole process (warm: {'yes' if fs['warm'] else '**no**'}) |",
                f"| the same by SQL, as a one-shot process answered before imports left indexes | {fmt(fq['recall_ms'], 1)} ms"
                f" after opening; {fmt(fq['process_s'] * 1000, 0)} ms the whole process |",
                f"| from the end of the import to a warm first recall in a new process (its close, then the whole"
                f" new process) | {fmt(ip['close_s'] + fs['process_s'], 2)} s |",
            ]
        if "mcp_first_call_s" in size:
            rows += [
                f"| `perseus-vault serve` (MCP over stdio): process start to its first answered recall |"
                f" {fmt(size['mcp_first_call_s'], 2)} s |",
                f"| `perseus-vault ui`: process start to its first page | {fmt(size['inspector_first_page_s'], 2)} s |",
            ]
        if rows:
            out += ["| after an import by a process that exits | figure |", "|---|---|", *rows, ""]
        if n == 100_000:
            for label, limit in (("with the model", 5), ("keyword-only", 4)):
                for verb in ("prepare", "recall"):
                    for how in ("resident helper", "alone"):
                        ratio = p["cases"][f"{verb}, {label}, {how}"]["p50_ms"] / bare
                        targets.append(
                            f"| `{verb}` in a new process, {label}, {how}, at 100k | {ratio:.1f}x |"
                            f" {verdict(ratio, limit, False, 'x')} |"
                        )
    if targets:
        out += [
            "### Hook targets",
            "",
            "| target | ratio to the bare start | verdict |",
            "|---|---|---|",
            *targets,
            "",
        ]
    return out


def _settled(imported: dict[str, Any]) -> str:
    return "; ".join(
        f"{name} {how}" + (f" in {seconds:.2f} s" if seconds >= 0.005 else "")
        for name, how, seconds in imported["settled"]
    )


def main(output: Path, sizes: list[int]) -> None:
    """``python -m benchmarks.run --only hooks [--sizes N ...] [--output FILE]``: this part alone, its section
    of ``output`` replaced."""
    byte_compile()  # the new processes import the package as an installed wheel's
    result = run(sizes, log=log)
    write_section(output, render(result))
    log(f"wrote the {SECTION[3:]} section of {output}")


if __name__ == "__main__":
    print(json.dumps(run([int(a) for a in sys.argv[1:]] or [2_000]), indent=1))
