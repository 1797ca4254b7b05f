"""The write path: remember, get_entity, forget, purge, supersede, expiry (remember_many as one
transaction, and what a write judges, are features/test_remembering.py's)."""

from __future__ import annotations

import pytest

from perseus_vault_core import Conflict, InvalidInput, NotFound, Vault

from ...conftest import DAY_MS, Clock, FakeEmbedder

pytestmark = pytest.mark.both_backends  # the contract suite: SQLite and PostgreSQL (tests/conftest.py)


def count_rows(vault: Vault, table: str) -> int:
    return int(vault.engine.conn().execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def test_remember_creates_with_every_field(vault: Vault, clock: Clock) -> None:
    e = vault.remember(
        category="decision",
        key="db-engine",
        content="We chose SQLite in WAL mode.",
        summary="SQLite, WAL",
        type="decision",
        topic_path="/architecture/storage/",
        body={"ticket": "ENG-12", "nested": {"a": [1, 2]}},
        agent_id="agent-a",
        workspace_hash="ws-1",
        source="meeting",
        verified=True,
        certainty=0.9,
        provenance_class="human",
        recall_when=["choosing a database", "  "],
        valid_to_ms=clock.now + DAY_MS,
        expires_at_ms=clock.now + 2 * DAY_MS,
    )
    assert e.id == 1 and e.version == 1 and e.change == "create"
    assert e.topic_path == "architecture/storage"
    assert e.recall_when == ["choosing a database"]
    assert e.body == {
        "ticket": "ENG-12",
        "nested": {"a": [1, 2]},
    }  # content and summary have their own fields
    assert e.model_extra == {"ticket": "ENG-12", "nested": {"a": [1, 2]}}  # body fields at top level
    assert (e.created_at_ms, e.updated_at_ms, e.valid_from_ms) == (clock.now, clock.now, clock.now)
    assert e.status == "active" and e.decay == 1.0 and e.retrieval_count == 0
    assert e.written and not e.repeated and e.similar == []  # what only remember answers: the first memory
    assert vault.get_entity(e.id).model_dump() == e.model_dump(exclude={"repeated", "written", "similar"})


def test_identical_content_is_a_no_op(vault: Vault, clock: Clock) -> None:
    first = vault.remember("fact", "k", "same words", topic_path="t")
    clock.advance(1000)
    again = vault.remember("fact", "k", "same words")  # unset fields keep their values
    assert again.id == first.id and again.version == 1 and again.updated_at_ms == first.updated_at_ms
    assert count_rows(vault, "entity_versions") == 1


def test_content_change_keeps_prior_version(vault: Vault, clock: Clock) -> None:
    first = vault.remember("fact", "k", "old words", topic_path="t")
    clock.advance(1000)
    second = vault.remember("fact", "k", "new words")
    assert second.id == first.id and second.version == 2 and second.change == "update"
    assert second.topic_path == "t"
    versions = vault.history("fact", "k").items
    assert [v.content for v in versions] == ["new words", "old words"]
    assert versions[1].recorded_to_ms == second.recorded_from_ms


def test_an_explicit_field_change_is_a_new_version(vault: Vault) -> None:
    vault.remember("fact", "k", "words", certainty=0.2)
    e = vault.remember("fact", "k", "words", certainty=0.8)
    assert e.version == 2 and e.certainty == 0.8


def test_same_key_in_other_scopes_are_other_entities(vault: Vault) -> None:
    a = vault.remember("fact", "k", "x", agent_id="a")
    b = vault.remember("fact", "k", "x", agent_id="b")
    c = vault.remember("fact", "k", "x", workspace_hash="w")
    d = vault.remember("fact", "k", "x")
    assert len({a.id, b.id, c.id, d.id}) == 4


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"content": "x"}, "key"),
        ({"key": "k", "content": "x", "colour": "red"}, "colour"),
        ({"key": "k", "content": 5}, "content"),
        ({"key": "k", "content": "x", "verified": "yes"}, "verified"),
        ({"key": "k", "content": "x", "certainty": 1.5}, "certainty"),
        ({"key": "k", "content": "x", "certainty": float("nan")}, "certainty"),
        ({"key": "  ", "content": "x"}, "key"),
        ({"key": "k", "content": "x" * (256 * 1024 + 1)}, "content"),  # too long, with no body given
        ({"key": "k", "content": "x", "body": {"v": float("inf")}}, "body"),
        ({"key": "k", "content": "x", "body": {"content": "other"}}, "body"),
        ({"key": "k", "content": "bad \ud800 text"}, "content"),
        ({"key": "k", "content": "x", "recall_when": ["t"] * 33}, "recall_when"),
        ({"key": "k", "content": "x", "valid_from_ms": 10, "valid_to_ms": 5}, "valid_to_ms"),
        ({"key": "k", "content": "x", "expires_at_ms": -1}, "expires_at_ms"),
    ],
)
def test_bad_input_names_the_field_and_changes_nothing(vault: Vault, fields: dict, field: str) -> None:
    vault.remember("fact", "existing", "keep me")
    args = {"category": "fact", **fields}
    with pytest.raises(InvalidInput) as err:
        vault.remember(**args)
    assert err.value.field == field
    assert str(err.value).startswith(field)
    assert count_rows(vault, "entities") == 1 and count_rows(vault, "entity_versions") == 1


def test_deeply_nested_body_is_refused(vault: Vault) -> None:
    body: dict = {}
    cursor = body
    for _ in range(40):
        cursor["x"] = {}
        cursor = cursor["x"]
    with pytest.raises(InvalidInput) as err:
        vault.remember("fact", "k", "x", body=body)
    assert err.value.field == "body"


def test_get_entity_missing_or_out_of_scope(vault: Vault) -> None:
    e = vault.remember("fact", "k", "x", agent_id="a")
    with pytest.raises(NotFound):
        vault.get_entity(999)
    with pytest.raises(NotFound):
        vault.get_entity(e.id, agent_id="b")
    assert vault.get_entity(e.id, agent_id="a").id == e.id
    with pytest.raises(InvalidInput) as err:
        vault.get_entity("1")  # type: ignore[arg-type]
    assert err.value.field == "id"


def test_forget_archives_and_remember_restores(vault: Vault, clock: Clock) -> None:
    e = vault.remember("fact", "k", "the archived words")
    clock.advance(10)
    archived = vault.forget(e.id)
    assert archived.status == "archived" and archived.version == 2 and archived.change == "archive"
    assert vault.forget(e.id).version == 2  # already archived: no new version
    assert vault.recall("archived").items == []
    assert [i.id for i in vault.recall("archived", include_archived=True).items] == [e.id]
    clock.advance(10)
    restored = vault.remember("fact", "k", "the archived words")
    assert restored.status == "active" and restored.change == "restore" and restored.version == 3
    assert [i.id for i in vault.recall("archived").items] == [e.id]


def test_purge_needs_archive_and_removes_everything(vault: Vault) -> None:
    a = vault.remember("fact", "a", "purge me please")
    b = vault.remember("fact", "b", "neighbour")
    vault.link(a.id, b.id, "related")
    with pytest.raises(Conflict):
        vault.purge(a.id)
    vault.forget(a.id)
    result = vault.purge(a.id)
    assert (result.id, result.versions, result.links) == (a.id, 2, 1)
    with pytest.raises(NotFound):
        vault.get_entity(a.id)
    assert vault.recall("purge", include_archived=True).items == []
    assert vault.check().ok
    c = vault.remember("fact", "c", "after purge")
    assert c.id > b.id  # ids are never reused


def test_supersede_keeps_the_chain(vault: Vault, clock: Clock) -> None:
    old = vault.remember("decision", "db-v1", "We use MySQL")
    new = vault.remember("decision", "db-v2", "We use SQLite")
    clock.advance(5)
    result = vault.supersede(old.id, new.id)
    assert result.status == "superseded" and result.superseded_by == new.id
    assert vault.get_entity(new.id).supersedes == old.id
    assert vault.supersede(old.id, new.id).version == result.version  # idempotent
    assert [i.id for i in vault.recall("mysql sqlite").items] == [new.id]  # the superseded one is not shown
    with pytest.raises(Conflict):
        vault.remember("decision", "db-v1", "We use MySQL 8")
    with pytest.raises(InvalidInput):
        vault.supersede(new.id, new.id)
    other = vault.remember("decision", "x", "y", agent_id="someone-else")
    with pytest.raises(InvalidInput):
        vault.supersede(new.id, other.id)


def test_expiry_is_honoured_at_read_time(vault: Vault, clock: Clock) -> None:
    e = vault.remember("fact", "k", "temporary token", expires_at_ms=clock.now + 1000)
    assert [i.id for i in vault.recall("token").items] == [e.id]
    clock.advance(1000)
    assert vault.recall("token").items == []
    assert vault.get_entity(e.id).status == "expired"
    shown = vault.recall("token", include_archived=True).items
    assert [(i.id, i.status) for i in shown] == [(e.id, "expired")]
    assert vault.recall("token", query_time_unix_ms=clock.now - 1).items[0].status == "active"


def test_writes_keep_indexes_in_sync(vault: Vault) -> None:
    ids = [vault.remember("fact", f"k{i}", f"note number {i}").id for i in range(20)]
    for i in ids[:5]:
        vault.remember("fact", f"k{i - 1}", "rewritten note")
    vault.forget(ids[10])
    vault.forget(ids[11])
    vault.purge(ids[11])
    vault.supersede(ids[12], ids[13])
    assert vault.check().ok


def test_valid_to_before_a_defaulted_or_kept_valid_from_is_refused(vault: Vault, clock: Clock) -> None:
    with pytest.raises(InvalidInput) as err:
        vault.remember("fact", "k", "x", valid_to_ms=5)  # valid_from defaults to now
    assert err.value.field == "valid_to_ms"
    vault.remember("fact", "k2", "x")
    with pytest.raises(InvalidInput) as err:
        vault.remember("fact", "k2", "x", valid_to_ms=clock.now - 1)  # valid_from kept from before
    assert err.value.field == "valid_to_ms"


def test_a_superseded_memory_stays_superseded_after_archive(vault: Vault) -> None:
    old = vault.remember("fact", "old", "v1")
    new = vault.remember("fact", "new", "v2")
    vault.supersede(old.id, new.id)
    vault.forget(old.id)
    with pytest.raises(Conflict):
        vault.remember("fact", "old", "v1 again")


def test_an_item_carries_each_text_once(vault: Vault) -> None:
    content, note = "c" * 5000, "n" * 3000
    vault.remember("note", "k", content, summary="short", body={"note": note, "score": 5})
    item = vault.recall("", reinforce=False).items[0]
    wire = item.model_dump_json()
    assert wire.count(content) == 1 and wire.count(note) == 1  # not again inside body
    data = item.model_dump()
    assert data["note"] == note and data["body"] == {"score": 5}  # a result-field name stays in body
    assert type(item).model_validate(data).body == {"note": note, "score": 5}  # and reads back whole


def test_a_key_family_is_the_key_and_the_keys_that_extend_it_by_a_dash(vault: Vault) -> None:
    """store.key_family (what a write's candidates read of its key's family): the first word itself and the keys
    that go on after it with a dash, newest first; not a key that goes on with a space, a dot or a letter."""
    from perseus_vault_core.records import store

    keys = [
        "prod",
        "prod-region",
        "prod region",
        "prod.x",
        "prodx",
        "prod!",
        "prod-",
        "pro",
        "prod-region-2024",
    ]
    ids = {k: vault.remember(category="note", key=k, content=f"text of {k}").id for k in keys}
    vault.remember(category="other", key="prod-db", content="another category")
    family = store.key_family(vault.engine.conn(), "note", "prod-anything", None, None, 20)
    assert family == sorted(
        (ids[k] for k in ("prod", "prod-region", "prod-", "prod-region-2024")), reverse=True
    )
    assert store.key_family(vault.engine.conn(), "note", "prod-anything", None, None, 2) == family[:2]


def test_a_planned_write_embeds_what_its_plan_missed_and_runs_again() -> None:
    """The retry-on-missing-vectors protocol (store.write_planned), with no database: a run that meets a text
    the plan lacks rolls back, only that text is embedded, and the next run finds it; a write that keeps
    meeting new texts gives up."""
    import numpy as np

    from perseus_vault_core import StorageError
    from perseus_vault_core.records.store import PLANNED_ATTEMPTS, VectorPlan, write_planned

    plan = VectorPlan("model", 2, {"known": np.array([1.0, 0.0])})
    embedded: list[list[str]] = []
    runs: list[list[np.ndarray]] = []

    def embed(texts: list[str]) -> np.ndarray:
        embedded.append(texts)
        return np.array([[0.0, 1.0]] * len(texts))

    def work(conn: object) -> str:
        runs.append([])
        for text in ("known", "new"):
            runs[-1].append(plan.vector(text))
        return "written"

    assert write_planned(lambda w: w(None), embed, plan, work) == "written"  # type: ignore[arg-type]
    assert (
        embedded == [["new"]] and len(runs) == 2 and [v.tolist() for v in runs[1]] == [[1.0, 0.0], [0.0, 1.0]]
    )
    fresh = iter(range(100))

    def changing(conn: object) -> None:
        plan.vector(f"text {next(fresh)}")

    with pytest.raises(StorageError, match="kept changing"):
        write_planned(lambda w: w(None), embed, plan, changing)  # type: ignore[arg-type]
    assert len(embedded) == 1 + PLANNED_ATTEMPTS


# --- every version written has its vector, and unchanged text keeps the one it had ---


def test_unchanged_text_keeps_its_vector(dense_vault: Vault, fake_embedder: FakeEmbedder) -> None:
    e = dense_vault.remember("note", "k", "same words")
    calls = fake_embedder.texts
    dense_vault.remember("note", "k", "same words", certainty=0.9)  # a new version, same text
    dense_vault.forget(e.id)
    dense_vault.remember("note", "k", "same words")  # restored
    assert fake_embedder.texts == calls
    assert dense_vault.stats().embedding_coverage == 1.0
    dense_vault.forget(e.id)
    dense_vault.purge(e.id)
    conn = dense_vault.engine.conn()
    assert conn.execute("SELECT count(*) FROM version_vectors").fetchone()[0] == 0


def test_no_version_goes_without_its_vector(dense_vault: Vault) -> None:
    dense_vault.remember("note", "k", "alpha")
    dense_vault.remember_many(
        [
            {"category": "note", "key": "k", "content": "beta"},
            {"category": "note", "key": "k", "content": "alpha"},
        ]
    )
    dense_vault.remember_many(
        [
            {"category": "note", "key": "s", "content": "one", "summary": "S"},
            {"category": "note", "key": "s", "content": "two"},
        ]
    )
    import json as _json

    dense_vault.import_jsonl([_json.dumps({"category": "note", "key": "s", "content": "three"})])
    conn = dense_vault.engine.conn()
    unvectored = conn.execute(
        "SELECT count(*) FROM entity_versions v WHERE NOT EXISTS (SELECT 1 FROM version_vectors x WHERE x.vid = v.vid)"
    ).fetchone()[0]
    assert unvectored == 0
