"""JSONL export and import: a lossless round trip, plain bulk loading, all-or-nothing failures."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import ImportReport, InvalidInput, Vault

from ...conftest import DAY_MS, T0, Clock, modes

pytestmark = pytest.mark.both_backends  # the contract suite: SQLite and PostgreSQL (tests/conftest.py)

MAX_BODY_BYTES = 256 * 1024


def export_text(vault: Vault, **scope: Any) -> str:
    buf = io.StringIO()
    count = vault.export_jsonl(buf, **scope)
    text = buf.getvalue()
    assert count == len(text.splitlines())
    return text


def records(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def plain(category: str, key: str, content: str, **fields: Any) -> str:
    return json.dumps({"category": category, "key": key, "content": content, **fields})


def link_records(recs: list[dict[str, Any]], *, inferred: bool) -> list[dict[str, Any]]:
    """The link records of an export the vault inferred on write (``inferred=True``) or someone wrote."""
    return [r for r in recs if r["record"] == "link" and (r["source"] == "inferred") == inferred]


# What populate's writes infer (features/relations.py): each from the newer memory to the older, in its scope.
INFERRED = {("new-db", "old-db", "related"), ("agent-a-2", "agent-a", "same_subject")}


def populate(vault: Vault, clock: Clock) -> dict[str, int]:
    """A vault with updates, an archive, a supersession, open and closed links, unicode,
    body extras, recall_when, validity and expiry, reinforcement state and several scopes."""
    ids: dict[str, int] = {}
    ids["alice"] = vault.remember(
        "fact",
        "alice-city",
        "Alice lives in Paris ☕, près du café « naïve » 🚀",
        summary="Alice → Paris",
        type="fact",
        topic_path="people/alice",
        body={"ticket": "ENG-1", "nested": {"list": [1, 2.5, None, True], "日本": "語"}},
        source="chat",
        verified=True,
        certainty=0.75,
        provenance_class="human",
        recall_when=["moving house", "café plans"],
    ).id
    ids["lease"] = vault.remember(
        "fact",
        "lease",
        "The office lease",
        valid_from_ms=T0 - DAY_MS,
        valid_to_ms=T0 + 30 * DAY_MS,
        expires_at_ms=T0 + 60 * DAY_MS,
    ).id
    ids["old-db"] = vault.remember("decision", "db-v1", "We use Postgres").id
    ids["new-db"] = vault.remember("decision", "db-v2", "We use SQLite in WAL mode").id
    ids["doomed"] = vault.remember("note", "doomed", "to be archived").id
    ids["agent-a"] = vault.remember("note", "plan", "Agent A's plan", agent_id="agent-a").id
    ids["agent-a-2"] = vault.remember("note", "todo", "Agent A's todo", agent_id="agent-a").id
    ids["agent-b"] = vault.remember(
        "note", "plan", "Agent B's plan", agent_id="agent-b", workspace_hash="ws-9"
    ).id
    clock.advance(1000)
    vault.remember("fact", "alice-city", "Alice lives in Berlin now", valid_from_ms=T0 - DAY_MS)
    clock.advance(1000)
    vault.forget(ids["doomed"])
    vault.supersede(ids["old-db"], ids["new-db"])
    vault.link(ids["alice"], ids["lease"], "mentions", 0.5, source="parser")
    vault.link(ids["new-db"], ids["old-db"], "replaces")
    vault.link(ids["alice"], ids["new-db"], "related")
    vault.link(ids["agent-a"], ids["agent-a-2"], "has")
    clock.advance(1000)
    vault.link(ids["alice"], ids["lease"], "mentions", 0.9, source="parser")  # re-weight: closes a row
    vault.unlink(ids["alice"], ids["new-db"])  # a closed link
    clock.advance(1000)
    vault.recall("SQLite")  # reinforcement state travels too
    clock.advance(1000)
    return ids


# --- export --------------------------------------------------------------------------------------


def test_export_format(vault: Vault, clock: Clock) -> None:
    ids = populate(vault, clock)
    lines = export_text(vault).splitlines()
    recs = records("\n".join(lines))
    assert recs[0] == {"record": "vault", "format": 1}
    entities = [r for r in recs if r["record"] == "entity"]
    links = [r for r in recs if r["record"] == "link"]
    assert len(recs) == 1 + len(entities) + len(links)
    assert [r["id"] for r in entities] == sorted(ids.values())
    assert [r["id"] for r in links] == sorted(r["id"] for r in links)
    for line in lines:  # keys sorted, compact, UTF-8 text kept as is
        assert line == json.dumps(json.loads(line), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    alice = next(r for r in entities if r["id"] == ids["alice"])
    assert [v["content"] for v in alice["versions"]] == [
        "Alice lives in Paris ☕, près du café « naïve » 🚀",
        "Alice lives in Berlin now",
    ]
    assert alice["versions"][0]["body"] == {
        "ticket": "ENG-1",
        "nested": {"list": [1, 2.5, None, True], "日本": "語"},
    }
    assert alice["versions"][0]["recall_when"] == ["moving house", "café plans"]
    doomed = next(r for r in entities if r["id"] == ids["doomed"])
    assert [v["change"] for v in doomed["versions"]] == ["create", "archive"]
    written = link_records(recs, inferred=False)
    assert len(written) == 5  # 4 links made, one re-weighted (2 rows), one closed
    assert sum(1 for r in written if r["recorded_to_ms"] is not None) == 2
    # The links remember inferred travel too, each within one scope; closed, as someone linked each pair after
    # (a link of someone's closes the vault's between the same two).
    names = {v: k for k, v in ids.items()}
    inferred = link_records(recs, inferred=True)
    assert {(names[r["from_id"]], names[r["to_id"]], r["relation"]) for r in inferred} == INFERRED
    assert len(links) == len(written) + len(inferred)
    scope = {r["id"]: (r["agent_id"], r["workspace_hash"]) for r in entities}
    assert all(r["recorded_to_ms"] is not None and scope[r["from_id"]] == scope[r["to_id"]] for r in inferred)
    new_db = next(r for r in entities if r["id"] == ids["new-db"])
    assert new_db["retrieval_count"] == 1 and new_db["last_accessed_ms"] is not None


def test_export_to_a_path_matches_export_to_a_stream(vault: Vault, clock: Clock, tmp_path: Path) -> None:
    populate(vault, clock)
    target = tmp_path / "out.jsonl"
    count = vault.export_jsonl(target)
    text = target.read_text(encoding="utf-8")
    assert count == len(text.splitlines())
    assert text == export_text(vault)


def test_an_export_file_is_private_and_an_existing_one_keeps_its_mode(
    vault: Vault, clock: Clock, tmp_path: Path, umask: int
) -> None:
    """An export holds every memory: a new file is 0600; a file the owner made is rewritten in its mode."""
    populate(vault, clock)
    folder = tmp_path / "exports"
    folder.mkdir()
    vault.export_jsonl(folder / "new.jsonl")
    (folder / "shared.jsonl").write_text("old content, longer than nothing\n" * 1000)
    (folder / "shared.jsonl").chmod(0o644)
    vault.export_jsonl(str(folder / "shared.jsonl"))
    assert modes(folder) == {"new.jsonl": 0o600, "shared.jsonl": 0o644}
    assert (folder / "shared.jsonl").read_text(encoding="utf-8") == export_text(
        vault
    )  # truncated, then written


def test_export_of_an_empty_vault_is_the_header(vault: Vault) -> None:
    assert export_text(vault) == '{"format":1,"record":"vault"}\n'


def test_export_filtered_by_agent(vault: Vault, clock: Clock) -> None:
    ids = populate(vault, clock)
    recs = records(export_text(vault, agent_id="agent-a"))
    assert recs[0]["record"] == "vault"
    entities = [r for r in recs if r["record"] == "entity"]
    links = [r for r in recs if r["record"] == "link"]
    assert [r["id"] for r in entities] == [ids["agent-a"], ids["agent-a-2"]]
    assert all(r["agent_id"] == "agent-a" for r in entities)
    assert [(r["from_id"], r["to_id"]) for r in link_records(recs, inferred=False)] == [
        (ids["agent-a"], ids["agent-a-2"])
    ]
    # The link inferred between agent a's two notes is in its scope; the one between unscoped notes is not.
    assert [(r["from_id"], r["to_id"]) for r in link_records(recs, inferred=True)] == [
        (ids["agent-a-2"], ids["agent-a"])
    ]
    assert len(links) == 2
    only_b = records(export_text(vault, workspace_hash="ws-9"))
    assert [r["id"] for r in only_b if r["record"] == "entity"] == [ids["agent-b"]]
    assert [r for r in only_b if r["record"] == "link"] == []
    assert [r for r in records(export_text(vault, agent_id="nobody")) if r["record"] != "vault"] == []


def test_a_scoped_export_imports_on_its_own(vault: Vault, clock: Clock, tmp_path: Path) -> None:
    ids = populate(vault, clock)
    text = export_text(vault, agent_id="agent-a")
    assert (
        len(link_records(records(text), inferred=False)),
        len(link_records(records(text), inferred=True)),
    ) == (1, 1)
    with Vault(tmp_path / "copy.db", clock=clock, embedder=False) as copy:
        report = copy.import_jsonl(io.StringIO(text))
        assert (report.created, report.links) == (2, 2)  # the written link and the inferred one
        assert export_text(copy) == text
        assert [n.entity.id for n in copy.traverse(ids["agent-a"], 1, agent_id="agent-a").nodes] == [
            ids["agent-a"],
            ids["agent-a-2"],
        ]


# --- round trip ----------------------------------------------------------------------------------


def test_round_trip_is_byte_identical(vault: Vault, clock: Clock, tmp_path: Path) -> None:
    ids = populate(vault, clock)
    first = export_text(vault)
    assert len(link_records(records(first), inferred=False)) == 5
    with Vault(tmp_path / "copy.db", clock=clock, embedder=False) as copy:
        report = copy.import_jsonl(io.StringIO(first))
        assert report == ImportReport(created=len(ids), updated=0, unchanged=0, links=5 + len(INFERRED))
        assert export_text(copy) == first
        assert copy.check().ok


def test_round_trip_through_a_file(vault: Vault, clock: Clock, tmp_path: Path) -> None:
    populate(vault, clock)
    path = tmp_path / "vault.jsonl"
    vault.export_jsonl(path)
    with Vault(tmp_path / "copy.db", clock=clock, embedder=False) as copy:
        copy.import_jsonl(path)
        copy.export_jsonl(tmp_path / "again.jsonl")
    assert (tmp_path / "again.jsonl").read_bytes() == path.read_bytes()


def test_an_imported_copy_answers_like_the_original(vault: Vault, clock: Clock, tmp_path: Path) -> None:
    ids = populate(vault, clock)
    text = export_text(vault)
    with Vault(tmp_path / "copy.db", clock=clock, embedder=False) as copy:
        copy.import_jsonl(io.StringIO(text))
        for category, key, scope in (("fact", "alice-city", {}), ("note", "plan", {"agent_id": "agent-a"})):
            assert copy.history(category, key, **scope) == vault.history(category, key, **scope)
        for entity_id in ids.values():
            assert copy.get_entity(entity_id) == vault.get_entity(entity_id)
        assert copy.as_of("fact", "alice-city", T0) == vault.as_of("fact", "alice-city", T0)
        assert copy.traverse(ids["alice"], 2) == vault.traverse(ids["alice"], 2)
        assert copy.traverse(ids["alice"], 2, as_of_unix_ms=T0 + 2500) == vault.traverse(
            ids["alice"], 2, as_of_unix_ms=T0 + 2500
        )
        found = copy.recall("Berlin", reinforce=False).items
        assert [i.id for i in found] == [ids["alice"]]
        then = copy.recall("Paris", as_of_unix_ms=T0, reinforce=False).items
        assert [i.id for i in then] == [ids["alice"]]
        assert copy.recall("archived", reinforce=False).items == []
        assert copy.get_entity(ids["old-db"]).superseded_by == ids["new-db"]
        # New memories in the copy continue after the imported ids.
        assert copy.remember("note", "fresh", "a new note").id > max(ids.values())


def test_reimporting_an_export_into_its_own_vault_changes_nothing(vault: Vault, clock: Clock) -> None:
    ids = populate(vault, clock)
    before = export_text(vault)
    report = vault.import_jsonl(io.StringIO(before))
    assert report == ImportReport(created=0, updated=0, unchanged=len(ids), links=0)
    assert export_text(vault) == before


# --- plain remember-shaped lines -----------------------------------------------------------------


def test_plain_lines_create_update_and_leave_unchanged(vault: Vault, clock: Clock) -> None:
    vault.remember("fact", "b", "b as it was")
    vault.remember("fact", "c", "c stays")
    clock.advance(1000)
    lines = [
        plain("fact", "a", "a is new", topic_path="imports", recall_when=["bulk"]),
        "",
        plain("fact", "b", "b has changed"),
        plain("fact", "c", "c stays"),
        plain("fact", "a", "a scoped elsewhere", agent_id="x"),
    ]
    report = vault.import_jsonl(lines)
    assert report == ImportReport(created=2, updated=1, unchanged=1, links=0)
    assert vault.history("fact", "a").items[0].content == "a is new"
    assert vault.history("fact", "a").items[0].recall_when == ["bulk"]
    assert [v.content for v in vault.history("fact", "b").items] == ["b has changed", "b as it was"]
    assert vault.history("fact", "c").total == 1
    assert vault.history("fact", "a", agent_id="x").items[0].content == "a scoped elsewhere"


def test_plain_lines_from_a_file(vault: Vault, tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(
        "\n".join(plain("note", f"n{i}", f"note number {i}") for i in range(5)) + "\n", encoding="utf-8"
    )
    report = vault.import_jsonl(path)
    assert report.created == 5
    assert [e.key for e in vault.scan().items] == [f"n{i}" for i in range(5)]
    assert sorted(i.key for i in vault.recall("number", limit=10, reinforce=False).items) == [
        f"n{i}" for i in range(5)
    ]


def test_plain_lines_repeating_a_key_apply_in_order(vault: Vault) -> None:
    report = vault.import_jsonl([plain("fact", "k", "first"), plain("fact", "k", "second")])
    assert (report.created, report.updated) == (1, 1)
    assert [v.content for v in vault.history("fact", "k").items] == ["second", "first"]


def test_importing_a_missing_file_is_invalid_input(vault: Vault, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as err:
        vault.import_jsonl(tmp_path / "nope.jsonl")
    assert err.value.field == "source"


# --- failures change nothing ---------------------------------------------------------------------


def _line_field(err: InvalidInput, number: int) -> bool:
    name = f"line {number}"
    return err.field == name or err.field.startswith(name + ".")


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ('{"category": "fact", "key": ', "line 4"),
        ("[1, 2, 3]", "line 4"),
        (plain("fact", "x", "text", colour="red"), "line 4.colour"),
        (plain("fact", "x", "x" * (MAX_BODY_BYTES + 1)), "line 4"),
        (plain("fact", "x", "small", body={"blob": "y" * MAX_BODY_BYTES}), "line 4"),
        (json.dumps({"category": "fact", "key": "x", "content": 5}), "line 4.content"),
        (
            json.dumps({"category": "fact", "key": "x", "content": "t", "certainty": "high"}),
            "line 4.certainty",
        ),
        (json.dumps({"category": "fact", "key": "x"}), "line 4.content"),
        (json.dumps({"record": "mystery"}), "line 4.record"),
        (json.dumps({"record": "vault", "format": 99}), "line 4.format"),
        (json.dumps({"record": "link", "id": 1, "from_id": 1}), "line 4"),
    ],
)
def test_a_bad_line_names_it_and_writes_nothing(vault: Vault, clock: Clock, bad: str, field: str) -> None:
    vault.remember("fact", "existing", "as it was")
    clock.advance(1000)
    before = export_text(vault)
    lines = [
        plain("fact", "fresh", "would be created"),
        "",  # blank lines count in the numbering
        plain("fact", "existing", "would be updated"),
        bad,
        plain("fact", "after", "never reached"),
    ]
    with pytest.raises(InvalidInput) as err:
        vault.import_jsonl(lines)
    assert _line_field(err.value, 4), err.value.field
    assert err.value.field.startswith(field)
    assert "line 4" in str(err.value)
    assert export_text(vault) == before
    assert vault.stats().entities == 1


def test_a_failure_while_writing_rolls_everything_back(vault: Vault, clock: Clock, tmp_path: Path) -> None:
    """The link on line 3 refers to an entity that is not in the file: found only while writing."""
    populate(vault, clock)
    recs = records(export_text(vault))
    entity = next(r for r in recs if r["record"] == "entity")
    link = next(r for r in recs if r["record"] == "link")
    bad_link = dict(link, to_id=9999)
    lines = [json.dumps(recs[0]), json.dumps(entity), json.dumps(bad_link), plain("fact", "x", "plain")]
    with Vault(tmp_path / "target.db", clock=clock, embedder=False) as target:
        target.remember("fact", "existing", "as it was")
        before = export_text(target)
        with pytest.raises(InvalidInput) as err:
            target.import_jsonl(lines)
        assert _line_field(err.value, 3)
        assert export_text(target) == before
        assert target.check().ok


def test_an_oversize_version_in_an_export_is_refused(vault: Vault, clock: Clock, tmp_path: Path) -> None:
    vault.remember("fact", "k", "small")
    recs = records(export_text(vault))
    recs[1]["versions"][0]["content"] = "z" * (MAX_BODY_BYTES + 1)
    with Vault(tmp_path / "copy.db", clock=clock, embedder=False) as copy:
        with pytest.raises(InvalidInput) as err:
            copy.import_jsonl([json.dumps(r) for r in recs])
        assert err.value.field.startswith("line 2")
        assert copy.stats().entities == 0


def test_a_wrongly_typed_export_field_is_refused(vault: Vault, clock: Clock, tmp_path: Path) -> None:
    vault.remember("fact", "k", "small")
    recs = records(export_text(vault))
    recs[1]["retrieval_count"] = "3"
    with Vault(tmp_path / "copy.db", clock=clock, embedder=False) as copy:
        with pytest.raises(InvalidInput) as err:
            copy.import_jsonl([json.dumps(r) for r in recs])
        assert err.value.field == "line 2.retrieval_count"
        assert copy.stats().entities == 0


def _two_versions(vault: Vault, clock: Clock) -> list[dict[str, Any]]:
    a = vault.remember("note", "a", "first words").id
    b = vault.remember("note", "b", "other note").id
    clock.advance(1000)
    vault.remember("note", "a", "second words")
    vault.link(a, b)
    return records(export_text(vault))


def _two_heads(recs: list[dict[str, Any]]) -> None:
    recs[1]["versions"][0]["recorded_to_ms"] = None


def _same_version_twice(recs: list[dict[str, Any]]) -> None:
    recs[1]["versions"][1]["version"] = 1


def _no_head(recs: list[dict[str, Any]]) -> None:
    recs[1]["versions"][1]["recorded_to_ms"] = recs[1]["versions"][1]["recorded_from_ms"] + 1


def _self_link(recs: list[dict[str, Any]]) -> None:
    recs[-1]["to_id"] = recs[-1]["from_id"]


@pytest.mark.parametrize("damage", [_two_heads, _same_version_twice, _no_head, _self_link])
def test_an_inconsistent_export_is_refused(vault: Vault, clock: Clock, tmp_path: Path, damage: Any) -> None:
    """An edited or damaged file must not leave a vault that check() rejects, nor leak a SQLite error."""
    recs = _two_versions(vault, clock)
    damage(recs)
    line = 2 if damage is not _self_link else len(recs)
    with Vault(tmp_path / "copy.db", clock=clock, embedder=False) as copy:
        copy.remember("note", "existing", "already here")
        before = export_text(copy)
        with pytest.raises(InvalidInput) as err:
            copy.import_jsonl([json.dumps(r) for r in recs])
        assert _line_field(err.value, line), err.value.field
        assert export_text(copy) == before
        assert copy.check().ok


def test_a_link_across_scopes_in_a_file_is_refused(vault: Vault, clock: Clock, tmp_path: Path) -> None:
    """Both ends of a link live in one scope (graph.py); an edited export must not break that."""
    a = vault.remember("note", "a", "agent a's note", agent_id="a").id
    a2 = vault.remember("note", "a2", "agent a's other note", agent_id="a").id
    vault.remember("note", "b", "agent b's note", agent_id="b")
    vault.link(a, a2)
    recs = records(export_text(vault))
    [link] = link_records(recs, inferred=False)  # the other link, a2 -> a, was inferred on write: left as is
    link["to_id"] = next(r["id"] for r in recs if r["record"] == "entity" and r["agent_id"] == "b")
    with Vault(tmp_path / "copy.db", clock=clock, embedder=False) as copy:
        with pytest.raises(InvalidInput) as err:
            copy.import_jsonl([json.dumps(r) for r in recs])
        assert _line_field(err.value, recs.index(link) + 1), err.value.field
        assert copy.stats().entities == 0


# --- progress ------------------------------------------------------------------------------------


def test_progress_reports_done_and_total(vault: Vault) -> None:
    calls: list[tuple[int, int]] = []
    lines = [plain("note", f"n{i}", f"note {i}") for i in range(1200)]
    report = vault.import_jsonl(lines, progress=lambda done, total: calls.append((done, total)))
    assert report.created == 1200
    assert calls, "progress was never called"
    assert calls[-1] == (1200, 1200)
    assert all(total == 1200 for _, total in calls)
    dones = [done for done, _ in calls]
    assert dones == sorted(set(dones)) and all(0 < d <= 1200 for d in dones)
    assert len(calls) > 1  # a long import reports along the way, not only at the end


def test_progress_of_an_export_import_counts_entities_and_links(
    vault: Vault, clock: Clock, tmp_path: Path
) -> None:
    ids = populate(vault, clock)
    calls: list[tuple[int, int]] = []
    with Vault(tmp_path / "copy.db", clock=clock, embedder=False) as copy:
        copy.import_jsonl(io.StringIO(export_text(vault)), progress=lambda d, t: calls.append((d, t)))
    total = len(ids) + 5 + len(INFERRED)  # every entity and link record: written and inferred
    assert calls[-1] == (total, total)


# --- merging into a non-empty vault --------------------------------------------------------------


def test_import_merges_by_scope_category_and_key(vault: Vault, clock: Clock, tmp_path: Path) -> None:
    ids = populate(vault, clock)
    text = export_text(vault)
    with Vault(tmp_path / "other.db", clock=clock, embedder=False) as other:
        mine = [
            other.remember("local", f"own-{i}", f"a note only the other vault has, {i}").id for i in range(12)
        ]
        other.remember("fact", "alice-city", "Alice lives in Rome")  # same address, other content
        # Same address and same newest state as the export: unchanged.
        other.remember("note", "plan", "Agent A's plan", agent_id="agent-a", valid_from_ms=T0)
        # Same category and key, another scope: a different fact.
        other.remember("note", "todo", "someone else's todo", agent_id="agent-z")
        clock.advance(1000)
        top_before = max(e.id for e in other.scan(limit=1000).items)
        report = other.import_jsonl(io.StringIO(text))
        assert report.created == len(ids) - 2
        assert report.updated == 1
        assert report.unchanged == 1
        assert report.links == 5 + len(INFERRED)  # the written links and those the exporting vault inferred

        alice = other.history("fact", "alice-city")
        assert [v.content for v in alice.items] == ["Alice lives in Berlin now", "Alice lives in Rome"]
        assert alice.items[0].change == "import"
        assert other.history("note", "todo", agent_id="agent-z").items[0].content == "someone else's todo"
        assert other.history("note", "todo", agent_id="agent-a").items[0].content == "Agent A's todo"
        assert [e.content for e in other.scan(limit=1000, category="local").items] == [
            f"a note only the other vault has, {i}" for i in range(12)
        ]
        assert [e.id for e in other.scan(limit=1000, category="local").items] == mine  # its own ids untouched
        # New entities got fresh ids above the vault's own, ascending in the export's order.
        everything = other.scan(limit=1000, include_archived=True).items
        imported = [e for e in everything if e.id > top_before]
        assert len(imported) == len(ids) - 2
        assert [e.id for e in imported] == sorted(e.id for e in imported)
        assert [e.key for e in imported] == ["lease", "db-v1", "db-v2", "doomed", "todo", "plan"]
        assert (
            len(set(e.id for e in other.scan(limit=1000, include_archived=True).items))
            == 12 + 3 + len(ids) - 2
        )

        # Links were re-pointed at the entities' ids in this vault.
        lease = other.history("fact", "lease").items[0].id
        alice_id = alice.items[0].id
        walk = other.traverse(alice_id, 1, direction="out")
        assert [(e.from_id, e.to_id, e.relation, e.weight) for e in walk.edges] == [
            (alice_id, lease, "mentions", 0.9)
        ]
        old_db = other.history("decision", "db-v1").items[0]
        new_db = other.history("decision", "db-v2").items[0]
        assert old_db.superseded_by == new_db.id and new_db.supersedes == old_db.id
        assert other.check().ok


def test_imported_ids_never_collide_with_existing_ones(vault: Vault, clock: Clock, tmp_path: Path) -> None:
    vault.remember("note", "one", "exported one")
    vault.remember("note", "two", "exported two")
    text = export_text(vault)
    with Vault(tmp_path / "other.db", clock=clock, embedder=False) as other:
        local = other.remember("note", "local", "the other vault's own note")
        other.import_jsonl(io.StringIO(text))
        items = other.scan().items
        assert [e.key for e in items] == ["local", "one", "two"]
        assert items[0].id == local.id and items[0].content == "the other vault's own note"
        assert len({e.id for e in items}) == 3


# --- review regressions: ids, overlapping histories ------------------------------------------------


def _entity_line(eid: int, versions: list[dict]) -> str:  # type: ignore[type-arg]
    import json as _json

    base = {
        "record": "entity",
        "id": eid,
        "category": "c",
        "key": f"k{eid}",
        "agent_id": None,
        "workspace_hash": None,
        "created_at_ms": 1,
        "retrieval_count": 0,
        "last_accessed_ms": None,
    }
    return _json.dumps({**base, "versions": versions})


def _version(n: int, start: int, end: int | None, text: str = "alpha") -> dict:  # type: ignore[type-arg]
    return {
        "version": n,
        "change": "create",
        "recorded_from_ms": start,
        "recorded_to_ms": end,
        "updated_at_ms": start,
        "type": "note",
        "topic_path": None,
        "content": text,
        "summary": None,
        "body": {},
        "source": None,
        "verified": False,
        "certainty": None,
        "provenance_class": None,
        "recall_when": [],
        "status": "active",
        "valid_from_ms": start,
        "valid_to_ms": None,
        "expires_at_ms": None,
        "supersedes": None,
        "superseded_by": None,
    }


def test_ids_beyond_json_safe_integers_are_refused(vault: Vault) -> None:
    with pytest.raises(InvalidInput) as err:
        vault.import_jsonl([_entity_line(2**63 - 1, [_version(1, 1, None)])])
    assert err.value.field.startswith("line 1")
    vault.remember("fact", "still", "works")  # the vault can still create entities


def test_import_never_reuses_a_purged_id(vault: Vault) -> None:
    ids = [vault.remember("fact", f"k{i}", f"note {i}").id for i in range(3)]
    vault.forget(ids[2])
    vault.purge(ids[2])
    vault.import_jsonl([_entity_line(3, [_version(1, 1, None)])])
    imported = vault.recall("alpha").items[0]
    assert imported.id > ids[2]


def test_overlapping_versions_are_refused(vault: Vault) -> None:
    with pytest.raises(InvalidInput) as err:
        vault.import_jsonl([_entity_line(1, [_version(1, 1, 100), _version(2, 50, None)])])
    assert err.value.field == "line 1.versions.1"
    assert vault.stats().entities == 0
