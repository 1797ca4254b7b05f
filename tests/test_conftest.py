"""The helpers for what tests need from outside the repository: a skip with one line saying what is
missing and how to provide it, or a failure when the matching PERSEUS_VAULT_REQUIRE_* variable is 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import REQUIRE, shared_data, unavailable

NEEDS = sorted(REQUIRE)


def beir(folder: Path, name: str) -> None:
    (folder / name / "qrels").mkdir(parents=True)
    for file in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        (folder / name / file).write_text("", encoding="utf-8")


@pytest.fixture
def nothing_required(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in REQUIRE.values():  # CI sets them: these tests choose their own
        monkeypatch.delenv(variable, raising=False)


def test_the_four_variables() -> None:
    assert REQUIRE == {
        "data": "PERSEUS_VAULT_REQUIRE_DATA",
        "pg": "PERSEUS_VAULT_REQUIRE_PG",
        "browser": "PERSEUS_VAULT_REQUIRE_BROWSER",
        "index": "PERSEUS_VAULT_REQUIRE_INDEX",
    }


@pytest.mark.parametrize("need", NEEDS)
@pytest.mark.parametrize("value", [None, "0", ""])
def test_absent_skips_unless_required(
    need: str, value: str | None, nothing_required: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if value is not None:
        monkeypatch.setenv(REQUIRE[need], value)
    with pytest.raises(pytest.skip.Exception, match="^no widget: install one$"):
        unavailable(need, "no widget: install one")  # type: ignore[arg-type]


@pytest.mark.parametrize("need", NEEDS)
def test_absent_fails_when_required(
    need: str, nothing_required: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(REQUIRE[need], "1")
    with pytest.raises(pytest.fail.Exception) as failed:
        unavailable(need, "no widget: install one")  # type: ignore[arg-type]
    assert str(failed.value) == f"no widget: install one ({REQUIRE[need]}=1 requires it)"
    others = [v for n, v in REQUIRE.items() if n != need]
    monkeypatch.delenv(REQUIRE[need])
    for variable in others:  # one requirement does not make another resource required
        monkeypatch.setenv(variable, "1")
    with pytest.raises(pytest.skip.Exception):
        unavailable(need, "no widget: install one")  # type: ignore[arg-type]


def test_shared_data_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    beir(tmp_path, "scifact")
    beir(tmp_path, "cranfield")
    monkeypatch.setenv("PERSEUS_VAULT_DATA", str(tmp_path))
    assert shared_data("scifact", "cranfield") == tmp_path


def test_missing_collection_skips_with_one_line_naming_it(
    tmp_path: Path, nothing_required: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    beir(tmp_path, "scifact")
    (tmp_path / "cranfield").mkdir()  # present but incomplete: no queries, no judgements
    (tmp_path / "cranfield" / "corpus.jsonl").write_text("", encoding="utf-8")
    monkeypatch.setenv("PERSEUS_VAULT_DATA", str(tmp_path))
    with pytest.raises(pytest.skip.Exception) as skipped:
        shared_data("scifact", "cranfield")
    reason = str(skipped.value)
    assert "\n" not in reason
    assert "collection cranfield not found" in reason and "scifact" not in reason
    assert f"PERSEUS_VAULT_DATA={tmp_path}" in reason and "qrels/test.tsv" in reason


def test_missing_collection_fails_when_data_is_required(
    tmp_path: Path, nothing_required: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PERSEUS_VAULT_DATA", str(tmp_path))
    monkeypatch.setenv("PERSEUS_VAULT_REQUIRE_DATA", "1")
    with pytest.raises(
        pytest.fail.Exception, match="collection locomo-dev not found.*PERSEUS_VAULT_REQUIRE_DATA=1"
    ):
        shared_data("locomo-dev")


def test_without_the_variable_it_looks_beside_the_checkout_and_above(
    nothing_required: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PERSEUS_VAULT_DATA", raising=False)
    try:
        found = shared_data("scifact")
    except pytest.skip.Exception as skipped:
        assert "../shared/data" in str(skipped) and "PERSEUS_VAULT_DATA" in str(skipped)
    else:
        assert found.parts[-2:] == ("shared", "data")
        assert Path(__file__).resolve().is_relative_to(found.parent.parent)
