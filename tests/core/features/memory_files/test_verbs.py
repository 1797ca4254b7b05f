"""The memory-file layer's verbs (docs/memory-files.md): folder import, memory_recall's contract,
get/list/add/delete with byte-exact file rewrites, notes and search. Reconciling is test_sync.py's, the
bound folder's jail and file writes test_files.py's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import InvalidInput, NotFound, Vault
from perseus_vault_core.contract.errors import Conflict

from ....conftest import Clock, FakeEmbedder


def dates(result: Any) -> list[str]:
    return [e.date for e in result.entries]


# --- import ------------------------------------------------------------------------


def test_import_reads_files_entries_and_notes(vault: Vault, folder: Path) -> None:
    report = vault.memory_import(folder)
    assert (report.files, report.entries_created, report.entries_unchanged, report.entries_archived) == (
        3,
        15,
        0,
        0,
    )
    assert report.notes == 3 and report.links == 3 and report.skipped == [] and report.bound_folder is None
    listing = vault.list_memory_files()
    assert [(f.file, f.entries, f.sections) for f in listing.files] == [
        ("Opinions", 9, ["Testing", "Work pace", "Tools"]),
        ("People", 2, ["Mentors"]),
        ("Preferences", 4, ["Food", "Meetings"]),
    ]
    entry = vault.recall("billing outage integration", type="memory_entry").items[0]
    assert (
        entry.body["file"] == "Opinions"
        and entry.body["section"] == "Testing"
        and entry.body["date"] == "2020-07-15"
    )
    assert entry.content.endswith(
        "Mostly end-to-end checks around [[Payments]]."
    )  # continuation, wikilink intact
    perseus = vault.recall("memory store agents", type="markdown_note").items[0]
    walk = vault.traverse(perseus.id, depth=1, relations=["wikilink"], direction="out")
    assert sorted(n.entity.key for n in walk.nodes[1:]) == ["Helix", "Payments"]


def test_bad_markdown_imports_what_is_well_formed_and_reports_the_rest(vault: Vault, tmp_path: Path) -> None:
    (tmp_path / "Notes.md").write_bytes(
        b"---\nbroken: front matter\n"
        b"- 2020-01-01: an entry without any section\n"
        b"\n"
        b"just a loose line\n"
        b"## Real\n"
        b"- 2021-02-03: caf\xe9 in latin-1 is not UTF-8\n"
        b"- 2021-02-04: a clean entry\n"
        b"- undated item\n"
    )
    report = vault.memory_import(tmp_path)
    skipped = {(s.file, s.line, s.reason) for s in report.skipped}
    assert ("Notes", 1, "front matter not closed") in {(f, ln, r) for f, ln, r in skipped}
    assert {ln for _, ln, _ in skipped} >= {1, 5, 7, 9}
    texts = sorted(e.content for e in vault.recall("", type="memory_entry").items)
    assert texts == ["- 2020-01-01: an entry without any section", "- 2021-02-04: a clean entry"]
    assert vault.get_memory("Notes").text.startswith("---\nbroken: front matter\n")  # the file is kept whole


# --- memory_recall -------------------------------------------------------------------------------


def test_recall_returns_the_evolution_oldest_first(imported: Vault) -> None:
    result = imported.memory_recall("testing")
    assert result.search_mode == "fts" and not result.reranked
    assert dates(result) == sorted(dates(result)) and len(result.entries) == result.total
    assert {e.section for e in result.entries} == {"Testing"}


def test_any_term_fallback_rescues_an_empty_result(imported: Vault) -> None:
    strict = imported.memory_recall("integration tests")
    assert [e.date for e in strict.entries] == ["2020-07-15"]
    rescued = imported.memory_recall("integration mindset")  # no entry has both words
    assert rescued.search_mode == "fts" and rescued.total >= 1
    assert "2020-07-15" in dates(rescued)
    assert imported.memory_recall("zebra quantum").entries == []


def test_file_is_applied_before_limit_and_truncated_means_dropped_matches(imported: Vault) -> None:
    everywhere = imported.memory_recall("coffee tea meetings testing", limit=1000)
    assert everywhere.truncated is False
    one = imported.memory_recall("coffee", file="Preferences", limit=1)
    assert [e.file for e in one.entries] == ["Preferences"] and one.total == 2 and one.truncated is True
    assert imported.memory_recall("coffee", file="preferences").entries == []  # exact letter case
    assert imported.memory_recall("coffee", file="Nope").model_dump() == {
        "entries": [],
        "total": 0,
        "truncated": False,
        "search_mode": "fts",
        "reranked": False,
    }
    tops = imported.memory_recall("testing", limit=2)
    assert tops.truncated and tops.total > 2 and len(tops.entries) == 2
    assert dates(tops) == sorted(dates(tops))


def test_meaning_finds_paraphrased_early_entries(tmp_path: Path, folder: Path, real_embedder: Any) -> None:
    with Vault(tmp_path / "v.db", embedder=real_embedder) as v:
        v.memory_import(folder)
        philosophy = v.memory_recall("testing philosophy")
        assert philosophy.search_mode == "hybrid"
        assert "2019-03-04" in dates(philosophy)  # "Unit tests feel like busywork": no word in common
        assert dates(philosophy) == sorted(dates(philosophy))
        meta = v.memory_recall("opinions on testing")
        assert {"2019-03-04", "2024-05-02"} <= set(dates(meta))
        pacing = v.memory_recall("working hours and pacing")
        assert {"2018-11-20", "2021-02-14", "2023-09-01"} <= set(dates(pacing))
        assert "2019-05-01" not in dates(pacing)  # coffee is not about pacing
        # nothing is close in meaning to "capacity quarks" and no entry holds both words: the
        # any-term fallback still finds the entry that says "capacity"
        rescued = v.memory_recall("capacity quarks")
        assert (rescued.search_mode, dates(rescued)) == ("fts", ["2023-09-01"])


def test_bad_arguments(imported: Vault) -> None:
    for call, field in (
        (lambda: imported.memory_recall(""), "query"),
        (lambda: imported.memory_recall("x", limit=0), "limit"),
        (lambda: imported.add_memory("a/b", "S", "t"), "file"),
        (lambda: imported.add_memory("Opinions", "", "t"), "section"),
        (lambda: imported.add_memory("Opinions", "Testing", "t", date="2024-13-01"), "date"),
        (lambda: imported.delete_memory("Opinions", "Testing"), "date"),
    ):
        with pytest.raises(InvalidInput) as err:
            call()
        assert err.value.field == field


# --- get, add, delete ----------------------------------------------------------------------------


def test_get_memory_is_verbatim(imported: Vault, folder: Path) -> None:
    whole = imported.get_memory("Opinions")
    assert whole.text == (folder / "About Me" / "Opinions.md").read_text()
    section = imported.get_memory("Opinions", "Work pace")
    assert section.text.startswith("## Work pace\n- 2018-11-20") and section.text.endswith("deep work.\n\n")
    with pytest.raises(NotFound):
        imported.get_memory("Opinions", "Nope")
    with pytest.raises(NotFound):
        imported.get_memory("Nope")
    assert whole.entries is None  # listed only when asked for


def test_get_memory_lists_its_entries_when_asked(imported: Vault) -> None:
    whole = imported.get_memory("Opinions", entries=True)
    assert (
        whole.entries is not None
        and len(whole.entries)
        == imported.list_memory_files()
        .files[[f.file for f in imported.list_memory_files().files].index("Opinions")]
        .entries
    )
    assert all(e.file == "Opinions" and e.text in whole.text for e in whole.entries)
    section = imported.get_memory("Opinions", "Work pace", entries=True)
    assert section.entries and {e.section for e in section.entries} == {"Work pace"}
    assert section.entries[0].date == "2018-11-20"


def test_add_then_delete_leaves_the_file_byte_identical(vault: Vault, folder: Path, clock: Clock) -> None:
    report = vault.memory_import(folder, bind=True)
    assert report.bound_folder == str((folder / "About Me").resolve())
    path = folder / "About Me" / "Opinions.md"
    original = path.read_bytes()
    added = vault.add_memory(
        "Opinions", "Testing", "Property-based tests find the bugs I would not think of."
    )
    assert added.entry.date == "2026-01-01" and added.written == str(path.resolve())
    changed = path.read_bytes()
    assert changed != original and b"Property-based tests" in changed
    assert changed.startswith(original[: original.index(b"## Work pace")][:-1])
    hit = vault.memory_recall("property-based tests")
    assert [e.text for e in hit.entries] == [
        "- 2026-01-01: Property-based tests find the bugs I would not think of."
    ]
    removed = vault.delete_memory("Opinions", "Testing", date="2026-01-01", text="Property-based")
    assert removed.entry.text.startswith("- 2026-01-01: Property-based")
    assert path.read_bytes() == original
    gone = vault.recall("property-based tests", type="memory_entry", include_archived=True).items[0]
    assert gone.status == "archived"  # kept in history
    assert vault.memory_import(folder).entries_created == 0  # the vault and the folder agree


def test_delete_identifies_exactly_one_entry(imported: Vault) -> None:
    with pytest.raises(Conflict):
        imported.delete_memory("Opinions", "Testing", text="test")  # several entries say "test"
    with pytest.raises(NotFound):
        imported.delete_memory("Opinions", "Testing", date="1999-01-01")
    out = imported.delete_memory("Opinions", "Testing", date="2022-01-10")
    assert out.written is None  # not bound: the stored copy changed, no file written
    assert "Test-driven" not in imported.get_memory("Opinions").text


def test_add_creates_files_and_sections_when_unbound(imported: Vault) -> None:
    imported.add_memory("Health", "Sleep", "Eight hours, no screens after ten.", date="2025-11-01")
    assert (
        imported.get_memory("Health").text == "## Sleep\n- 2025-11-01: Eight hours, no screens after ten.\n"
    )
    assert [f.file for f in imported.list_memory_files().files] == [
        "Health",
        "Opinions",
        "People",
        "Preferences",
    ]


def test_export_writes_the_files_back(imported: Vault, folder: Path, tmp_path: Path) -> None:
    out = imported.memory_export(tmp_path / "out")
    assert out.files == 3
    for name in ("Opinions", "People", "Preferences"):
        assert (tmp_path / "out" / f"{name}.md").read_bytes() == (
            folder / "About Me" / f"{name}.md"
        ).read_bytes()


def test_memory_layer_is_scoped(vault: Vault, folder: Path) -> None:
    vault.memory_import(folder, agent_id="alice")
    assert vault.list_memory_files(agent_id="bob").files == []
    assert vault.memory_recall("testing", agent_id="bob").entries == []
    assert vault.memory_recall("testing", agent_id="alice").entries
    with pytest.raises(NotFound):
        vault.get_memory("Opinions", agent_id="bob")


def test_search_covers_the_notes_only(imported: Vault) -> None:
    result = imported.search("billing")
    assert {i.key for i in result.items} == {"Payments", "Projects/Perseus"}  # not the Opinions entry
    assert all(i.type == "markdown_note" for i in result.items)
    with pytest.raises(InvalidInput):
        imported.search("billing", type="note")


class KeywordJudge:
    """A stand-in cross-encoder: relevant (1.0) when the entry mentions 'test', else 0.0."""

    def __init__(self) -> None:
        self.pairs: list[tuple[str, str]] = []

    def predict(self, pairs: list[tuple[str, str]]) -> list[float]:
        self.pairs.extend(pairs)
        return [1.0 if "test" in text.lower() else 0.0 for _, text in pairs]


def test_a_cross_encoder_cuts_weak_matches(db_path: Path, clock: Clock, folder: Path) -> None:
    judge = KeywordJudge()
    with Vault(db_path, clock=clock, embedder=FakeEmbedder(), cross_encoder=judge) as v:
        v.memory_import(folder)
        result = v.memory_recall("testing philosophy", limit=50)
        assert result.reranked is True and judge.pairs
        assert all("test" in e.text.lower() for e in result.entries)
        assert dates(result) == sorted(dates(result)) and result.total == len(result.entries)
    with pytest.raises(InvalidInput):
        Vault(db_path, embedder=False, cross_encoder=object())


def test_the_operator_cross_encoder_setting_is_checked(
    imported: Vault, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from perseus_vault_core.contract.errors import SetupError

    monkeypatch.setenv("PERSEUS_VAULT_CROSS_ENCODER", str(tmp_path / "missing"))
    with pytest.raises(SetupError, match="PERSEUS_VAULT_CROSS_ENCODER"):
        imported.memory_recall("testing")


def test_matching_rule_and_relevance_order() -> None:
    """The score margin cut over arrays: every topic word held, or a meaning score >= 0.35 within 0.45
    of the best."""
    import numpy as np

    from perseus_vault_core.features.memory_files.index import Candidate, EntryIndex, rerank

    scores = np.array([1.20, 0.76, 0.74, 0.10, np.nan, 0.30])
    share = np.array([0.0, 0.0, 0.5, 1.0, 1.0, 0.0])
    assert EntryIndex.matching(scores, share).tolist() == [True, True, False, True, True, False]
    low = np.array([0.37, 0.30, np.nan])
    assert EntryIndex.matching(low, np.zeros(3)).tolist() == [True, False, False]
    assert EntryIndex.matching(np.full(2, np.nan), np.array([1.0, 0.5])).tolist() == [True, False]
    c = [
        Candidate(rank=i, meaning=None, all_terms=True, date=d, file="F", section="S", entity_id=i)
        for i, d in enumerate(["2024-01-01", "2019-01-01", "2021-01-01"])
    ]
    kept, passed = rerank(c, [0.9, 0.2, 0.6], limit=5)
    assert [k.entity_id for k in kept] == [2, 0] and passed == 2  # 0.2 is cut; oldest first
    kept, passed = rerank(c, [0.9, 0.8, 0.6], limit=1)
    assert [k.entity_id for k in kept] == [0] and passed == 3  # the best survives the limit


def test_a_question_is_matched_on_its_topic_not_its_framing() -> None:
    from perseus_vault_core.features.memory_files.index import Topic, heading, topic

    assert topic("How has my view on remote work changed?") == Topic(("remot", "work"), "remote work")
    assert topic("What's my opinion on meetings?") == Topic(("meet",), "meetings")  # no "s" to hold
    assert topic("How is Dad's health?") == Topic(("dad", "health"), "dad health")
    assert topic("my opinions") == Topic(("opinion",), "opinions")  # nothing else: the framing is the topic
    assert topic("what is it") == Topic((), "what is it")  # stopwords only: the query is embedded as asked
    assert heading("People", "Dad") == "Dad (People)" and heading("Journal", "") == "Journal"


def test_framing_words_need_not_be_held(vault: Vault, tmp_path: Path) -> None:
    (tmp_path / "Opinions.md").write_text(
        "## Remote work\n- 2019-01-01: I think remote work is lonely.\n- 2022-01-01: Back at the office three days a week.\n"
        "## Teams\n- 2021-01-01: I think the new team is great.\n"
    )
    vault.memory_import(tmp_path)
    # "think" is how the question is asked, not what it is about: the section's other entry holds
    # "remote work" through its heading, and the entry that only says "think" stays out
    asked = vault.memory_recall("What do I think about remote work?")
    assert (asked.search_mode, dates(asked)) == ("fts", ["2019-01-01", "2022-01-01"])


def test_an_entry_is_read_under_its_heading(db_path: Path, clock: Clock, folder: Path) -> None:
    embedder = FakeEmbedder()
    with Vault(db_path, clock=clock, embedder=embedder) as v:
        v.memory_import(folder)
        # no entry holds "people" (file names are not keywords), but "Mentors (People)" is their heading
        people = v.memory_recall("people")
        assert people.search_mode == "hybrid"
        assert {(e.file, e.section) for e in people.entries} == {("People", "Mentors")}
        texts = embedder.texts
        v.memory_recall("opinions on testing")
        assert embedder.texts == texts + 1  # the question; every heading was embedded once, before
        v.add_memory("Opinions", "Testing", "Property-based tests find what I would not think of.")
        texts = embedder.texts
        v.memory_recall("testing philosophy")  # the index is rebuilt, and its headings are known
        assert embedder.texts == texts + 1


def test_a_query_with_another_model_is_refused(db_path: Path, clock: Clock, folder: Path) -> None:
    with Vault(db_path, clock=clock, embedder=FakeEmbedder()) as v:
        v.memory_import(folder)

    class Other(FakeEmbedder):
        identity = "another-model@1"

    with Vault(db_path, clock=clock, embedder=Other()) as v, pytest.raises(Conflict):
        v.memory_recall("testing")
