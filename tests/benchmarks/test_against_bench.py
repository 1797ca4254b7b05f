"""The side-by-side benchmark (benchmarks/against.py): it checks an earlier commit out beside this tree,
times both codes in processes of their own, leaves no worktree behind, and renders a row per mode with
the ratio of the two."""

from __future__ import annotations

import subprocess

import pytest

from benchmarks import against

IN_GIT = (
    subprocess.run(["git", "rev-parse", "--verify", "HEAD"], cwd=against.ROOT, capture_output=True).returncode
    == 0
)
needs_git = pytest.mark.skipif(
    not IN_GIT, reason="not a git checkout: the benchmark checks a commit out beside it"
)


@needs_git
def test_a_small_run_times_both_codes_and_cleans_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(against, "QUERIES", 12)
    monkeypatch.setattr(against, "ROUNDS", 1)
    before = subprocess.run(
        ["git", "worktree", "list"], cwd=against.ROOT, capture_output=True, text=True
    ).stdout
    result = against.run([300], "HEAD", log=lambda _: None)  # this tree's own commit: always there
    after = subprocess.run(
        ["git", "worktree", "list"], cwd=against.ROOT, capture_output=True, text=True
    ).stdout
    assert before == after
    size = result["sizes"][0]
    assert size["entities"] == 300 and set(size["base"]) == set(size["here"])  # HEAD has curation too
    assert set(size["here"]) == {*against.MODES, *(f"{m}, curate=False" for m in against.MODES)}
    assert all(
        0 < p50 <= p95
        for figures in size.values()
        if isinstance(figures, dict)
        for p50, p95 in figures.values()
    )
    text = "\n".join(against.render(result))
    assert text.startswith(against.TITLE)
    for row in size["here"]:
        assert f"| 300 | {row} |" in text


@needs_git
def test_a_commit_that_is_not_there_stops_with_one_line() -> None:
    with pytest.raises(SystemExit, match="git rev-parse failed"):
        against.run([300], "no-such-ref-anywhere", log=lambda _: None)
