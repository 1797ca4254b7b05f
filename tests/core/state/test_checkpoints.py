"""Checkpoints (checkpoints.py): a graph's saved states beside the memories, on both backends: the latest
and a given checkpoint with its channel values and pending writes, listing newest first across pages,
filters, runs deleted with the values they alone held, threads copied and scoped, bad input refused."""

from __future__ import annotations

import pytest

from perseus_vault_core import ChannelBlob, Checkpoints, InvalidInput, TaskWrite, Vault
from perseus_vault_core.state import checkpoints

pytestmark = pytest.mark.both_backends


def save(
    store: Checkpoints,
    thread: str,
    cid: str,
    versions: dict[str, str],
    *,
    ns: str = "",
    parent: str | None = None,
    run: str | None = None,
    step: int = 0,
    new: tuple[str, ...] = (),
) -> None:
    store.put(
        thread,
        ns,
        cid,
        parent_checkpoint_id=parent,
        type="json",
        checkpoint=f"state {cid}".encode(),
        metadata={"step": step, "source": "loop", **({"run_id": run} if run else {})},
        channel_versions=versions,
        blobs=[ChannelBlob(c, versions[c], "json", f"{c}@{versions[c]}".encode()) for c in new],
    )


def test_the_latest_and_a_given_checkpoint_come_back_whole(vault: Vault) -> None:
    store = Checkpoints(vault)
    assert store.get("t") is None
    save(store, "t", "01", {"a": "1", "b": "1"}, new=("a", "b"))
    save(store, "t", "02", {"a": "2", "b": "1"}, parent="01", new=("a",))  # b unchanged: not written again
    latest = store.get("t")
    assert latest is not None and latest.checkpoint_id == "02" and latest.parent_checkpoint_id == "01"
    assert latest.checkpoint == b"state 02" and latest.metadata == {"step": 0, "source": "loop"}
    assert {b.channel: b.data for b in latest.blobs} == {"a": b"a@2", "b": b"b@1"}
    first = store.get("t", "", "01")
    assert first is not None and {b.channel: b.data for b in first.blobs} == {"a": b"a@1", "b": b"b@1"}
    assert store.get("t", "", "03") is None and store.get("t", "other-ns") is None
    save(store, "t", "02", {"a": "2"}, parent="01", step=5)  # saved again: replaced
    again = store.get("t")
    assert again is not None and again.metadata["step"] == 5 and [b.channel for b in again.blobs] == ["a"]


def test_pending_writes_are_ordered_kept_once_and_special_ones_replaced(vault: Vault) -> None:
    store = Checkpoints(vault)
    save(store, "t", "01", {})
    store.put_writes(
        "t",
        "",
        "01",
        [TaskWrite("task-b", "~0", 0, "x", "json", b"b0"), TaskWrite("task-b", "~0", 1, "y", "json", b"b1")],
    )
    store.put_writes("t", "", "01", [TaskWrite("task-a", "~1", 0, "x", "json", b"a0")])
    store.put_writes(
        "t", "", "01", [TaskWrite("task-b", "~0", 0, "x", "json", b"again")]
    )  # kept as first written
    store.put_writes("t", "", "01", [TaskWrite("task-a", "~1", -1, "__error__", "json", b"first error")])
    store.put_writes("t", "", "01", [TaskWrite("task-a", "~1", -1, "__error__", "json", b"last error")])
    stored = store.get("t")
    assert stored is not None
    assert [(w.task_id, w.idx, w.data) for w in stored.writes] == [
        ("task-b", 0, b"b0"),
        ("task-b", 1, b"b1"),
        ("task-a", -1, b"last error"),
        ("task-a", 0, b"a0"),
    ]


def test_listing_is_newest_first_across_pages_with_filters(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoints, "PAGE", 3)
    store = Checkpoints(vault)
    for i in range(8):
        save(store, "t", f"{i:02}", {}, step=i % 2, run="r1" if i < 4 else "r2")
    save(store, "t", "03", {}, ns="child:1")
    save(store, "u", "05", {})
    ids = lambda found: [(c.thread_id, c.checkpoint_ns, c.checkpoint_id) for c in found]  # noqa: E731
    assert [c.checkpoint_id for c in store.list("t", "")] == [f"{i:02}" for i in range(7, -1, -1)]
    assert ids(store.list(None))[:4] == [("t", "", "07"), ("t", "", "06"), ("u", "", "05"), ("t", "", "05")]
    assert len(list(store.list(None))) == 10 and len(list(store.list("t"))) == 9
    assert [c.checkpoint_id for c in store.list("t", "", metadata={"step": 1})] == ["07", "05", "03", "01"]
    assert [c.checkpoint_id for c in store.list("t", "", metadata={"step": 1, "run_id": "r1"})] == [
        "03",
        "01",
    ]
    assert [c.checkpoint_id for c in store.list("t", "", metadata={"step": 1}, limit=3)] == ["07", "05", "03"]
    assert [c.checkpoint_id for c in store.list("t", "", before="04", limit=2)] == ["03", "02"]
    assert ids(store.list("t", None, "03")) == [("t", "child:1", "03"), ("t", "", "03")]
    assert list(store.list("t", "", metadata={"missing": None})) == []
    assert list(store.list("t", limit=0)) == []


def test_deleting_runs_frees_the_values_only_they_held(vault: Vault) -> None:
    store = Checkpoints(vault)
    save(store, "t", "01", {"a": "1", "big": "1"}, run="r1", new=("a", "big"))
    save(store, "t", "02", {"a": "2", "big": "1"}, run="r2", new=("a",))
    store.put_writes("t", "", "01", [TaskWrite("x", "", 0, "a", "json", b"w")])
    store.delete_runs(["r1", "no-such-run"])
    assert [c.checkpoint_id for c in store.list("t")] == ["02"]
    kept = store.get("t")
    assert kept is not None and {b.channel: b.data for b in kept.blobs} == {"a": b"a@2", "big": b"big@1"}
    rows = vault.engine.conn().execute("SELECT count(*) FROM checkpoint_blobs").fetchone()[0]
    assert rows == 2  # a@1 went with the run that alone held it
    assert vault.engine.conn().execute("SELECT count(*) FROM checkpoint_writes").fetchone()[0] == 0
    store.delete_runs([])


def test_threads_are_copied_deleted_and_scoped(vault: Vault) -> None:
    mine, theirs = Checkpoints(vault, agent_id="me"), Checkpoints(vault, agent_id="them")
    save(mine, "t", "01", {"a": "1"}, new=("a",))
    save(mine, "t", "01", {"a": "1"}, ns="child:1", new=("a",))
    mine.put_writes("t", "", "01", [TaskWrite("x", "", 0, "a", "json", b"w")])
    assert theirs.get("t") is None and list(theirs.list(None)) == []
    mine.copy_thread("t", "copy")
    copied = mine.get("copy")
    assert copied is not None and copied.blobs[0].data == b"a@1" and copied.writes[0].data == b"w"
    assert len(list(mine.list("copy"))) == 2
    theirs.delete_thread("t")  # another scope's thread of the same name: untouched
    mine.delete_thread("t")
    assert list(mine.list("t")) == [] and mine.get("copy") is not None


def test_bad_input_is_refused_by_name(vault: Vault) -> None:
    store = Checkpoints(vault)
    with pytest.raises(InvalidInput, match="metadata: must be JSON"):
        store.put(
            "t",
            "",
            "01",
            parent_checkpoint_id=None,
            type="json",
            checkpoint=b"",
            metadata={"x": object()},
            channel_versions={},
        )
    with pytest.raises(InvalidInput, match="thread_id: must be a string"):
        store.get(7)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="limit"):
        store.list(limit=-1)
    with pytest.raises(InvalidInput, match="run_ids: must be a list"):
        store.delete_runs("r1")
    with pytest.raises(InvalidInput, match="vault: must be a Vault"):
        Checkpoints("memory.db")  # type: ignore[arg-type]
    assert list(store.list()) == []


def test_nul_or_an_unpaired_surrogate_is_refused_by_name_alike_on_both_backends(vault: Vault) -> None:
    """A NUL fails PostgreSQL's text (it was 'the database failed' there, and stored on SQLite) and an unpaired
    surrogate fails either driver's encoding (a raw UnicodeEncodeError): both are refused by name first."""
    store = Checkpoints(vault)
    save(store, "t", "01", {"a": "1"}, new=("a",))
    before = list(store.list())

    def put(thread: str = "t", ns: str = "", cid: str = "02", **more: object) -> None:
        args: dict[str, object] = {
            "parent_checkpoint_id": "01",
            "type": "json",
            "checkpoint": b"",
            "metadata": {},
            "channel_versions": {},
            **more,
        }
        store.put(thread, ns, cid, **args)  # type: ignore[arg-type]

    for bad in ("x\x00y", "x\ud800y", "\udfff"):
        for call, field in (
            (lambda: put(thread=bad), "thread_id"),
            (lambda: put(ns=bad), "checkpoint_ns"),
            (lambda: put(cid=bad), "checkpoint_id"),
            (lambda: put(parent_checkpoint_id=bad), "parent_checkpoint_id"),
            (lambda: put(type=bad), "type"),
            (lambda: put(metadata={"run_id": bad}), "metadata.run_id"),
            (
                lambda: put(channel_versions={"a": "2"}, blobs=[ChannelBlob(bad, "2", "json", b"")]),
                r"blobs\[0\].channel",
            ),
            (
                lambda: store.put_writes(bad, "", "01", [TaskWrite("task", "~0", 0, "x", "json", b"")]),
                "thread_id",
            ),
            (lambda: store.put_writes("t", "", "01", [TaskWrite(bad, "~0", 0, "x", "json", b"")]), "task_id"),
            (
                lambda: store.put_writes("t", "", "01", [TaskWrite("task", "~0", 0, bad, "json", b"")]),
                "channel",
            ),
            (lambda: store.get(bad), "thread_id"),
            (lambda: list(store.list(bad)), "thread_id"),
            (lambda: list(store.list(before=bad)), "before"),
            (lambda: store.delete_thread(bad), "thread_id"),
            (lambda: store.delete_runs(["r", bad]), "run_ids"),
            (lambda: store.copy_thread("t", bad), "target_thread_id"),
            (lambda: Checkpoints(vault, workspace_hash=bad), "workspace_hash"),
        ):
            with pytest.raises(InvalidInput, match=f"^{field}: contains"):
                call()
    with pytest.raises(InvalidInput, match="^metadata: contains an unpaired surrogate"):
        put(metadata={"note": "a\ud800"})
    assert list(store.list()) == before and store.get("t", "", "01") == before[0]
    put(metadata={"note": "a\x00b"})  # inside metadata (JSON), a NUL is its escape: stored alike, read back
    latest = store.get("t")
    assert latest is not None and latest.checkpoint_id == "02" and latest.metadata == {"note": "a\x00b"}
