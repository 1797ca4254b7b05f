"""``hygiene``: the read-only report of low-signal memories (docs/hygiene.md).

Each reason is provoked on its own and checked against what must not trigger it; the similarity search
is checked against a brute-force comparison of every pair; the report must write nothing, never compare
two tenants, and come out the same every time.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perseus_vault_core import Cancelled, HygieneReport, InvalidInput, Vault, cancellable
from perseus_vault_core.cli.main import main
from perseus_vault_core.features import hygiene
from perseus_vault_core.recall import curation
from perseus_vault_core.recall.actionability import actionability

from ...conftest import DAY_MS, T0, Clock, FakeEmbedder

pytestmark = pytest.mark.both_backends  # the contract suite: SQLite and PostgreSQL (tests/conftest.py)

GOOD = "We decided to keep the vault on SQLite in WAL mode (ENG-142), see src/store.py for the write path."


def by_key(report: HygieneReport) -> dict[str, Any]:
    return {item.key: item for item in report.items}


def dump(vault: Vault) -> list[dict[str, Any]]:
    """Every entity in every state, as stored (archived ones too)."""
    return [e.model_dump() for e in vault.scan(limit=1000, include_archived=True).items]


# --- the reasons ---------------------------------------------------------------------------------


def test_text_reasons_come_from_actionability(vault: Vault) -> None:
    vault.remember("note", "vague", "Look into something about the stuff from the planning call")
    vault.remember("note", "date", "2026-01-05")
    vault.remember("note", "short", "Ship the thing")
    vault.remember("decision", "good", GOOD)
    report = vault.hygiene()
    items = by_key(report)
    assert items["vague"].reasons == ["vague"]
    assert items["date"].reasons == ["date-only", "very short"]
    assert items["short"].reasons == ["vague", "very short"]  # "thing" is a vague word
    assert "good" not in items
    for item in report.items:
        text = vault.get_entity(item.id).content
        assert item.actionability == actionability(text).score
        assert item.preview == text
    assert (report.scanned, report.total) == (4, 3)


def test_summary_counts_as_text(vault: Vault) -> None:
    # Judged on summary + content, as recall(startup=True) and the embedder see it.
    vault.remember("note", "titled", "Ship it today", summary="Release plan for the storage layer rewrite")
    vault.remember("note", "bare", "Ship it today")
    items = by_key(vault.hygiene())
    assert "titled" not in items
    assert items["bare"].reasons == ["date-only", "very short"]  # "today" and two words


def test_good_memories_are_not_reported(vault: Vault, clock: Clock) -> None:
    vault.remember("decision", "db", GOOD)
    vault.remember(
        "runbook", "deploy", "Escalate a failed deploy to the on-call owner, runbook at https://wiki/x"
    )
    clock.advance(30 * DAY_MS)
    assert vault.recall("SQLite WAL deploy escalate").total == 2  # both retrieved once
    report = vault.hygiene()
    assert report.items == [] and report.total == 0 and report.scanned == 2
    assert set(report.counts.values()) == {0}


def test_never_retrieved_after_min_age_days(vault: Vault, clock: Clock) -> None:
    vault.remember("decision", "db", GOOD)
    vault.remember("decision", "used", GOOD.replace("ENG-142", "ENG-143 and ENG-144 and OPS-9 too"))
    assert vault.hygiene().items == []  # young memories are not judged yet
    clock.advance(7 * DAY_MS)
    assert vault.hygiene().items == []  # exactly seven days: not yet older than that
    assert vault.recall("OPS-9").items[0].key == "used"
    clock.advance(1)
    items = by_key(vault.hygiene())
    assert list(items) == ["db"] and items["db"].reasons == ["never retrieved"]
    assert items["db"].retrieval_count == 0 and items["db"].created_at_ms == T0
    assert list(by_key(vault.hygiene(min_age_days=8))) == []
    assert list(by_key(vault.hygiene(min_age_days=0))) == ["db"]


def test_expired_memories_are_examined_and_flagged(vault: Vault, clock: Clock) -> None:
    vault.remember("decision", "freeze", GOOD, expires_at_ms=T0 + DAY_MS)
    vault.remember("decision", "gone", GOOD.replace("ENG-142", "ENG-7"))
    vault.forget(2)  # archived memories are not examined at all
    assert vault.hygiene().scanned == 1 and vault.hygiene().items == []
    clock.advance(DAY_MS)  # expiry is inclusive: at expires_at_ms it has expired
    assert vault.recall("SQLite").items == []  # recall already hides it...
    report = vault.hygiene()
    assert [(i.key, i.reasons) for i in report.items] == [("freeze", ["expired"])]  # ...hygiene names it
    assert report.scanned == 1


def test_exact_duplicates_point_at_the_earliest(vault: Vault) -> None:
    first = vault.remember("decision", "a", GOOD)
    vault.remember("decision", "b", "  " + GOOD.upper().replace(" ", "   \n") + " ", keep_duplicate=True)
    vault.remember(
        "decision", "c", GOOD.lower(), keep_duplicate=True
    )  # stored all the same (an import would)
    items = by_key(vault.hygiene())
    assert "a" not in items
    assert items["b"].reasons == ["duplicate"] and items["b"].duplicate_of == first.id
    assert items["c"].reasons == ["duplicate"] and items["c"].duplicate_of == first.id


def test_near_duplicates_by_words(vault: Vault) -> None:
    vault.remember("note", "base", "alpha bravo charlie delta echo foxtrot golf hotel")
    vault.remember(
        "note", "edge", "alpha bravo charlie delta echo foxtrot golf hotel india kilo"
    )  # Jaccard 8/10
    vault.remember("note", "below", "alpha bravo charlie delta echo foxtrot golf lima mike")  # 7/10 with base
    vault.remember(
        "note", "closer", "Alpha bravo charlie delta echo foxtrot golf hotel india"
    )  # 9/10 with edge
    items = by_key(vault.hygiene())
    assert "base" not in items and "below" not in items
    assert items["edge"].reasons == ["near-duplicate"] and items["edge"].duplicate_of == 1
    # 8/9 with base, 9/10 with edge: the most similar earlier memory
    assert items["closer"].reasons == ["near-duplicate"] and items["closer"].duplicate_of == 2


def test_near_duplicates_by_vectors(dense_vault: Vault, fake_embedder: FakeEmbedder) -> None:
    """Both have vectors: the cosine brings a pair up, curation judges it (docs/curation.md). The same
    statement reworded is flagged; one whose values differ (another port, another ticket) is not, however
    close the vectors."""
    same_meaning = (
        "Deploys ship from the release branches after reviews on Tuesdays",
        "deploy ship from the release branch after review on tuesday",
    )
    other_values = (
        "The billing API listens on port 8080 in the staging cluster",
        "The billing API listens on port 9090 in the staging cluster",
    )
    for pair in (same_meaning, other_values):
        a, b = fake_embedder.embed(pair)
        assert float(a @ b) >= hygiene.NEAR_COSINE  # the premise: both pairs close in meaning
    for i, text in enumerate(same_meaning + other_values):
        dense_vault.remember("note", f"k{i}", text)
    items = by_key(dense_vault.hygiene())
    assert items["k1"].reasons == ["near-duplicate"] and items["k1"].duplicate_of == 1
    assert "k3" not in items


def test_words_decide_when_one_side_has_no_vector(
    db_path: Path, clock: Clock, fake_embedder: FakeEmbedder
) -> None:
    with Vault(db_path, clock=clock, embedder=False) as plain:
        plain.remember("note", "old", "alpha bravo charlie delta echo foxtrot golf hotel")
    with Vault(db_path, clock=clock, embedder=fake_embedder) as dense:
        dense.remember("note", "new", "alpha bravo charlie delta echo foxtrot golf hotel india kilo")
        dense.remember(
            "note", "newer", "alpha bravo charlie delta echo foxtrot golf hotel india kilo lima mike"
        )
        items = by_key(dense.hygiene())
    assert items["new"].reasons == ["near-duplicate"] and items["new"].duplicate_of == 1  # Jaccard 0.8
    # With "new" the cosine brings the pair up (both have vectors: 0.93 here), curation judges it the same
    # statement with two more words; with "old" (no vector) Jaccard is 8/12, under 0.8.
    assert items["newer"].reasons == ["near-duplicate"] and items["newer"].duplicate_of == items["new"].id


def hygiene_jaccard(a: str, b: str) -> float:
    x, y = hygiene.words(a), hygiene.words(b)
    return len(x & y) / len(x | y)


# --- scope ---------------------------------------------------------------------------------------


def test_duplicates_never_cross_tenants(vault: Vault) -> None:
    near = GOOD.replace("for the write path", "for the write path today")
    for agent, workspace in (("a", None), ("b", None), ("a", "ws-1"), (None, None)):
        vault.remember("decision", "db", GOOD, agent_id=agent, workspace_hash=workspace)
        vault.remember("decision", "db-2", near, agent_id=agent, workspace_hash=workspace)
    report = vault.hygiene()
    assert report.scanned == 8
    assert {(i.id, i.duplicate_of) for i in report.items} == {(2, 1), (4, 3), (6, 5), (8, 7)}
    only_b = vault.hygiene(agent_id="b")
    assert only_b.scanned == 2 and [(i.id, i.duplicate_of) for i in only_b.items] == [(4, 3)]


def test_attribute_filters(vault: Vault) -> None:
    vault.remember("note", "a", "stuff", type="fact", topic_path="ops/deploy")
    vault.remember("todo", "b", "stuff", topic_path="ops", keep_duplicate=True)
    vault.remember("note", "c", "stuff", topic_path="design", keep_duplicate=True)
    assert [i.key for i in vault.hygiene(category="note").items] == ["a", "c"]
    assert [i.key for i in vault.hygiene(type="fact").items] == ["a"]
    assert [i.key for i in vault.hygiene(topic_path="ops").items] == ["a", "b"]
    assert vault.hygiene(category="note").items[1].reasons == ["vague", "very short", "duplicate"]


# --- the report as a whole -----------------------------------------------------------------------


def test_order_limit_and_counts(vault: Vault, clock: Clock) -> None:
    vault.remember("decision", "good", GOOD)
    vault.remember("note", "short", "Ship the release")
    vault.remember("note", "vague", "stuff")
    vault.remember("note", "date", "2026-02-01")
    vault.remember("note", "plain", "A note about how the build cache gets warmed on each runner")
    clock.advance(8 * DAY_MS)
    full = vault.hygiene()
    keys = [i.key for i in full.items]
    assert keys == ["vague", "date", "short", "plain", "good"]
    assert [i.actionability for i in full.items] == sorted(i.actionability for i in full.items)
    assert full.counts == {
        "vague": 1,
        "date-only": 1,
        "very short": 3,
        "duplicate": 0,
        "near-duplicate": 0,
        "expired": 0,
        "never retrieved": 5,
    }
    page = vault.hygiene(limit=2)
    assert [i.key for i in page.items] == keys[:2]
    assert (page.total, page.scanned, page.counts) == (5, 5, full.counts)


def test_preview_is_the_first_200_characters(vault: Vault) -> None:
    long = "stuff " * 100
    vault.remember("note", "long", long)
    item = vault.hygiene().items[0]
    assert item.preview == long[:200] and len(item.preview) == 200


def test_same_store_same_report(db_path: Path, clock: Clock) -> None:
    rng = random.Random(3)
    words = "alpha bravo charlie delta echo foxtrot golf hotel india kilo stuff maybe".split()
    with Vault(db_path, clock=clock, embedder=False) as vault:
        vault.remember_many(
            {
                "category": "note",
                "key": f"k{i}",
                "agent_id": rng.choice([None, "a"]),
                "content": " ".join(rng.choices(words, k=rng.randint(1, 9))),
            }
            for i in range(300)
        )
        clock.advance(10 * DAY_MS)
        first = vault.hygiene(limit=1000).model_dump_json()
        assert vault.hygiene(limit=1000).model_dump_json() == first
    with Vault(db_path, clock=clock, embedder=False) as again:
        assert again.hygiene(limit=1000).model_dump_json() == first
    report = HygieneReport.model_validate_json(first)
    assert report.counts["duplicate"] > 0 and report.counts["near-duplicate"] > 0  # the run exercised both


def test_read_only(dense_vault: Vault, clock: Clock) -> None:
    dense_vault.remember("decision", "db", GOOD, expires_at_ms=T0 + DAY_MS)
    dense_vault.remember("decision", "db-copy", GOOD, keep_duplicate=True)
    dense_vault.remember("note", "vague", "stuff")
    dense_vault.recall("SQLite")
    clock.advance(10 * DAY_MS)
    in_memory = {"keyword_index", "vector_index"}  # the background indexes' progress, not the file
    before, stats = dump(dense_vault), dense_vault.stats().model_dump(exclude=in_memory)
    assert dense_vault.hygiene().total == 3
    clock.advance(1000)  # a write by hygiene would now carry a different time
    dense_vault.hygiene()
    clock.now -= 1000
    assert dump(dense_vault) == before
    assert dense_vault.stats().model_dump(exclude=in_memory) == stats


# --- arguments -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 1001}, "limit"),
        ({"limit": "5"}, "limit"),
        ({"limit": True}, "limit"),
        ({"min_age_days": -1}, "min_age_days"),
        ({"min_age_days": 1.5}, "min_age_days"),
        ({"include_archived": True}, "include_archived"),
        ({"as_of_unix_ms": 5}, "as_of_unix_ms"),
        ({"query": "x"}, "query"),
        ({"agent_id": 5}, "agent_id"),
        ({"category": ["note"]}, "category"),
    ],
)
def test_invalid_arguments_name_the_field(vault: Vault, arguments: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInput) as info:
        vault.hygiene(**arguments)
    assert info.value.field == field


def test_limit_bounds_are_accepted(vault: Vault) -> None:
    vault.remember("note", "a", "stuff")
    assert len(vault.hygiene(limit=1).items) == 1
    assert len(vault.hygiene(limit=1000).items) == 1


# --- the similarity search against brute force -----------------------------------------------------


def brute_force(memories: list[hygiene.Memory]) -> dict[int, tuple[float, int]]:
    """Every earlier pair weighed one by one, by the documented rules."""
    out: dict[int, tuple[float, int]] = {}
    for later in memories:
        for earlier in memories:
            if earlier.id >= later.id or earlier.tenant != later.tenant:
                continue
            if later.vector is not None and earlier.vector is not None:
                similarity = float(np.dot(later.vector.astype(np.float64), earlier.vector.astype(np.float64)))
                ok = similarity >= hygiene.NEAR_COSINE
            else:
                a, b = hygiene.words(later.text), hygiene.words(earlier.text)
                if not a or not b:
                    continue
                similarity = len(a & b) / len(a | b)
                ok = 5 * len(a & b) >= 4 * len(a | b)
            cosine = similarity if later.vector is not None and earlier.vector is not None else None
            ok = ok and curation.relation(earlier.said, later.said, cosine) == "duplicate"  # docs/curation.md
            if ok and (later.id not in out or similarity > out[later.id][0]):
                out[later.id] = (similarity, earlier.id)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_near_duplicate_search_equals_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(14)]
    bases = [rng.normal(size=16) for _ in range(5)]
    memories = []
    for i in range(1, 241):
        text = " ".join(rng.choice(vocab, size=int(rng.integers(1, 12))))
        vector = None
        if rng.random() < 0.6:
            v = bases[int(rng.integers(5))] + rng.normal(scale=float(rng.choice([0.05, 0.2, 0.4])), size=16)
            vector = (v / np.linalg.norm(v)).astype(np.float32)
        memories.append(
            hygiene.Memory(
                id=i,
                tenant=(str(rng.integers(2)), ""),
                category="c",
                key=str(i),
                content=text,
                text=text,
                created_at_ms=0,
                retrieval_count=0,
                expires_at_ms=None,
                vector=vector,
            )
        )
    found = hygiene.near_duplicates(memories)
    expected = brute_force(memories)
    assert set(found) == set(expected) and len(expected) > 20
    for memory_id, (similarity, other) in expected.items():
        assert found[memory_id][1] == other, memory_id
        assert found[memory_id][0] == pytest.approx(similarity, abs=1e-6)


def test_an_exact_duplicate_is_not_also_a_near_duplicate() -> None:
    def memory(i: int, text: str) -> hygiene.Memory:
        return hygiene.Memory(
            id=i,
            tenant=("", ""),
            category="c",
            key=str(i),
            content=text,
            text=text,
            created_at_ms=0,
            retrieval_count=0,
            expires_at_ms=None,
            vector=None,
        )

    report = hygiene.report(
        [memory(1, "a b c d e"), memory(2, "A  b c d e"), memory(3, "a b c d e f")],
        now_ms=0,
        min_age_days=7,
        limit=10,
    )
    reasons = {i.id: (i.reasons, i.duplicate_of) for i in report.items}
    assert reasons == {
        1: (["very short"], None),
        2: (["very short", "duplicate"], 1),
        3: (["near-duplicate"], 1),
    }


def test_a_caller_that_gives_up_stops_the_report_midway(vault: Vault) -> None:
    """The web inspector computes a report for a page that may be closed meanwhile; it gives up on it, and
    the report stops at its next checkpoint instead of weighing every memory to the end."""
    rng = random.Random(3)
    vocab = [f"w{i}" for i in range(400)]
    vault.remember_many(
        [
            {"category": "note", "key": f"k{i}", "content": " ".join(rng.choices(vocab, k=10))}
            for i in range(3 * hygiene._CHUNK)
        ]
    )
    checks: list[int] = []

    def given_up_at(n: int) -> bool:
        checks.append(1)
        return len(checks) >= n

    with cancellable(lambda: given_up_at(4)), pytest.raises(Cancelled):
        vault.hygiene()
    assert len(checks) == 4  # it stopped at the check that said so
    checks.clear()
    with cancellable(lambda: given_up_at(10**9)):
        waited = vault.hygiene()
    # Reading, weighing words and judging each memory all check, a chunk at a time.
    assert len(checks) >= 3 * 3
    assert waited == vault.hygiene()  # a caller that waits gets the whole report


def test_cosine_blocks_check_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hygiene, "_BLOCK_CELLS", 16 * 40)  # blocks of 16 rows, as 20,000 memories get ~200
    memories = [
        hygiene.Memory(
            id=i,
            tenant=("", ""),
            category="c",
            key=str(i),
            content="x",
            text="x",
            created_at_ms=0,
            retrieval_count=0,
            expires_at_ms=None,
            vector=np.eye(4, dtype=np.float32)[i % 4],
        )
        for i in range(1, 41)
    ]
    checks: list[int] = []
    with cancellable(lambda: bool(checks.append(1))):
        hygiene.near_duplicates(memories)
    assert len(checks) >= 3  # one per block of 16 rows
    with cancellable(lambda: True), pytest.raises(Cancelled):
        hygiene.near_duplicates(memories)


# --- CLI -----------------------------------------------------------------------------------------


def test_cli_hygiene(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "cli.db"
    long_ago = Clock(1_000_000_000_000)  # 2001: "never retrieved" and expiry hold by the wall clock too
    with Vault(db, clock=long_ago, embedder=False) as vault:
        vault.remember("decision", "db", GOOD, agent_id="a")
        vault.remember("decision", "db-copy", GOOD, agent_id="a", keep_duplicate=True)
        vault.remember("note", "vague", "stuff", agent_id="b")
    assert main(["hygiene", "--db", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert (
        lines[0]
        == "3 of 3 active memories flagged, showing 3: vague 1, very short 1, duplicate 1, never retrieved 3"
    )
    assert lines[1] == "#3 [note/vague] actionability 0.00: vague, very short, never retrieved  stuff"
    assert lines[3].startswith(
        "#2 [decision/db-copy] actionability 0.95: duplicate of #1, never retrieved  We decided"
    )

    assert (
        main(["hygiene", "--db", str(db), "--json", "--agent-id", "a", "--limit", "1", "--min-age-days", "0"])
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert (data["total"], data["scanned"], len(data["items"])) == (2, 2, 1)
    assert data["items"][0]["id"] == 1 and data["counts"]["duplicate"] == 1

    assert main(["hygiene", "--db", str(db), "--category", "todo"]) == 0
    assert capsys.readouterr().out == "nothing to flag among 0 active memories\n"

    assert main(["hygiene", "--db", str(db), "--limit", "0"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == "error: limit: must be at least 1\n"


def test_community_summaries_are_not_examined(vault: Vault, clock: Clock) -> None:
    a = vault.remember("storage", "a", "We chose SQLite in WAL mode for storage.").id
    b = vault.remember("storage", "b", "Backups copy the SQLite storage file nightly.").id
    vault.link(a, b)
    summary = vault.community_summary(vault.communities().communities[0].id).entity.id
    clock.advance(30 * DAY_MS)
    report = vault.hygiene()
    assert summary not in {item.id for item in report.items}
    assert report.scanned == 2
