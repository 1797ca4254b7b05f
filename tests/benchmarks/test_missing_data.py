"""Without an evaluation collection the benchmarks stop at once with one line naming it (not a
traceback, not after minutes of loading models)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import quality, run

ROOT = Path(__file__).resolve().parents[2]


def test_quality_names_the_missing_collection(tmp_path: Path) -> None:
    (tmp_path / "scifact").mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.quality", "--modes", "fts5"],
        cwd=ROOT,
        timeout=120,
        env=dict(os.environ, PERSEUS_VAULT_DATA=str(tmp_path)),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(
        "benchmarks.quality: evaluation collections scifact, cranfield not found in"
        f" PERSEUS_VAULT_DATA={tmp_path}"
    )


def test_run_stops_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERSEUS_VAULT_DATA", str(tmp_path))
    monkeypatch.setattr(run, "machine", lambda: pytest.fail("ran past the missing data"))
    with pytest.raises(SystemExit) as stopped:
        run.main(["--quick", "--output", str(tmp_path / "report.md")])
    assert str(stopped.value).startswith(
        "benchmarks.run: evaluation collections scifact, cranfield, locomo-dev not found"
    )
    assert not (tmp_path / "report.md").exists()


@pytest.mark.parametrize(
    ("part", "missing"), [("quality", "scifact, cranfield"), ("conversation", "locomo-dev")]
)
def test_a_part_alone_stops_before_any_work(
    part: str, missing: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PERSEUS_VAULT_DATA", str(tmp_path))
    monkeypatch.setattr(quality, "run", lambda *_: pytest.fail("ran past the missing data"))
    with pytest.raises(SystemExit) as stopped:
        run.main(["--only", part, "--output", str(tmp_path / "report.md")])
    assert str(stopped.value).startswith(
        f"benchmarks.run: evaluation collection{'s' if ',' in missing else ''} {missing} not found"
    )
    assert not (tmp_path / "report.md").exists()


def test_an_explicit_folder_is_checked_too(tmp_path: Path) -> None:
    where = re.escape(str(tmp_path))
    with pytest.raises(
        quality.MissingData, match=f"collection cranfield not found in {where} .*: put cranfield/ there"
    ):
        quality.load("cranfield", tmp_path)
