"""Bad input (docs/limits.md), property-based: recall queries, filters, cursors, entity bodies, batches and
MCP arguments drawn by hypothesis, hostile on purpose (deep nesting, huge strings, control characters,
unpaired surrogates, NaN and infinities, wrong types, unknown names).

Every call either answers or raises one of the vault's own errors (``InvalidInput`` names the field);
nothing else escapes, and a refused call leaves the file byte-for-byte as it was (compared as a dump
of every table a write touches). The MCP server answers a tool error and keeps serving.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perseus_vault_core import InvalidInput, Vault, VaultError
from perseus_vault_core.contract.params import MAX_BATCH, MAX_BODY_BYTES, MAX_BODY_DEPTH, Filters

from ..conftest import BACKENDS, FakeEmbedder, vault_location

# PERSEUS_VAULT_FUZZ_EXAMPLES raises the count for a longer hunt (the suite's default stays quick).
SCALE = max(1, int(os.environ.get("PERSEUS_VAULT_FUZZ_EXAMPLES", "60")) // 60)
EXAMPLES = settings(
    max_examples=60 * SCALE,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Text as hostile as Python strings get: every category, surrogates and controls included.
any_char = st.characters(codec=None, exclude_categories=())
hostile_text = st.one_of(
    st.text(any_char, max_size=40),
    st.text(st.sampled_from(list("\"*:^-+()NEARANDORNOT{}[]\\'\x00\x1b\u200b\ud800\udfff")), max_size=30),
    st.sampled_from(
        [
            "",
            " ",
            "\x00",
            "\ud800",
            "a\udfffb",
            "NEAR(a b)",
            '"unterminated',
            "a*",
            "-x",
            "col:x",
            "AND",
            "OR NOT",
            "^start",
            "\u202e\u0000\n\r\t",
        ]
    ),
)
numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, 2**63, -1, 0, True, False]),
)
json_leaf = st.one_of(st.none(), st.booleans(), numbers, hostile_text)
json_values = st.recursive(
    json_leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(hostile_text, inner, max_size=4)),
    max_leaves=20,
)


def deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(levels):
        value = {"d": value}
    return value


bodies = st.one_of(
    st.dictionaries(hostile_text, json_values, max_size=5),
    st.integers(min_value=MAX_BODY_DEPTH - 2, max_value=MAX_BODY_DEPTH + 40).map(deep),
    st.integers(min_value=MAX_BODY_BYTES - 64, max_value=MAX_BODY_BYTES + 4096).map(
        lambda n: {"big": "x" * n}
    ),
    json_values,  # not even an object, sometimes
)


def fingerprint(vault: Vault) -> str:
    """A digest of every table a write can touch (reinforcement counters included)."""
    digest = hashlib.sha256()
    conn = vault.engine.conn()
    for table in (
        "entities",
        "entity_versions",
        "links",
        "version_vectors",
        "head_changes",
        "trigger_vectors",
        "vault_meta",
    ):
        for row in conn.execute(f"SELECT * FROM {table} ORDER BY 1"):
            digest.update(repr(row).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


@pytest.fixture(scope="module", params=BACKENDS)
def vault(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Vault]:
    with (
        vault_location(request.param, request, tmp_path_factory.mktemp("bad")) as where,
        Vault(where, embedder=FakeEmbedder()) as v,
    ):
        a = v.remember(
            "note", "db", "We chose SQLite for durable storage", agent_id="alice", recall_when=["database"]
        )
        b = v.remember("note", "cache", "The cache sits near the storage engine", agent_id="alice")
        v.link(a.id, b.id, "related")
        for i in range(12):
            v.remember("bulk", f"k{i}", f"bulk memory number {i} about storage")
        yield v


def refused_cleanly(vault: Vault, before: str, exc: BaseException) -> None:
    assert isinstance(exc, VaultError), f"{type(exc).__name__}: {exc}"
    assert str(exc).strip()
    if isinstance(exc, InvalidInput):
        assert isinstance(exc.field, str) and exc.message  # the field is named (as the caller spelled it)
    assert fingerprint(vault) == before, "a refused call changed the store"


def attempt(vault: Vault, call: Any) -> Any:
    """Run ``call``; a refusal must be a VaultError that changed nothing. Returns the answer or None."""
    before = fingerprint(vault)
    try:
        return call()
    except Exception as exc:  # the property: only the vault's own errors, store unchanged
        refused_cleanly(vault, before, exc)
        return None


@EXAMPLES
@given(
    query=hostile_text,
    mode=st.sampled_from([None, "fts5", "dense", "hybrid", "bogus", 3]),
    limit=st.one_of(st.integers(min_value=-5, max_value=2000), numbers),
)
def test_recall_queries(vault: Vault, query: str, mode: Any, limit: Any) -> None:
    before = fingerprint(vault)
    result = attempt(vault, lambda: vault.recall(query, mode=mode, limit=limit, reinforce=False))
    if result is not None:
        assert fingerprint(vault) == before  # reinforce=False: a read writes nothing
        assert len(result.items) <= limit
    attempt(vault, lambda: vault.recall_when(query, limit=5))
    attempt(vault, lambda: vault.prepare(query))
    attempt(vault, lambda: vault.memory_recall(query))


FILTER_NAMES = [*Filters.model_fields, "bogus", "query", "limit", "cursor", "__class__", ""]


@EXAMPLES
@given(filters=st.dictionaries(st.sampled_from(FILTER_NAMES), json_values, max_size=4))
def test_filters(vault: Vault, filters: dict[str, Any]) -> None:
    for call in (
        lambda: vault.recall(
            "storage", reinforce=False, **{k: v for k, v in filters.items() if k not in ("query",)}
        ),
        lambda: vault.scan(**{k: v for k, v in filters.items() if k not in ("cursor", "limit")}),
        lambda: vault.traverse(1, **filters),
        lambda: vault.communities(**filters),
        lambda: vault.hygiene(**filters),
    ):
        before = fingerprint(vault)
        try:
            call()
        except Exception as exc:
            refused_cleanly(vault, before, exc)


@EXAMPLES
@given(
    cursor=st.one_of(
        hostile_text,
        st.binary(max_size=60).map(lambda b: __import__("base64").urlsafe_b64encode(b).decode()),
        json_values,
    ),
    scope=st.sampled_from([{}, {"agent_id": "alice"}, {"category": "bulk"}]),
)
def test_cursors(vault: Vault, cursor: Any, scope: dict[str, Any]) -> None:
    page = attempt(vault, lambda: vault.scan(cursor=cursor, limit=5, **scope))
    if page is not None:  # only an empty cursor is a valid start; anything else was issued by the vault
        assert cursor in (None, "")


def test_cursors_are_bound_to_their_filters_and_tamper_evident(vault: Vault) -> None:
    import base64
    import json

    first = vault.scan(limit=3, category="bulk")
    assert first.next_cursor
    with pytest.raises(InvalidInput, match="cursor"):
        vault.scan(cursor=first.next_cursor, limit=3, agent_id="alice")  # a cursor cannot change the scope
    data = json.loads(base64.urlsafe_b64decode(first.next_cursor + "=="))
    for forged in (
        {**data, "f": "0" * 16},
        {**data, "after": -1},
        {**data, "after": 2**64},
        {**data, "v": 99},
    ):
        token = base64.urlsafe_b64encode(json.dumps(forged).encode()).decode().rstrip("=")
        with pytest.raises(InvalidInput, match="cursor"):
            vault.scan(cursor=token, limit=3, category="bulk")


KEYS = itertools.count()


def test_a_body_past_the_recursion_limit_is_refused(vault: Vault) -> None:
    before = fingerprint(vault)
    with pytest.raises(InvalidInput, match="nested"):
        vault.remember(
            "note", "very-deep", "c", body={"deep": deep(5000)}
        )  # deeper than Python walks naively
    assert fingerprint(vault) == before


@EXAMPLES
@given(
    body=bodies,
    content=st.one_of(hostile_text, st.integers(0, 300_000).map(lambda n: "y" * n)),
    summary=st.one_of(st.none(), hostile_text),
    category=st.one_of(hostile_text, st.just("note")),
    extra=st.dictionaries(
        st.sampled_from(
            [
                "certainty",
                "valid_from_ms",
                "recall_when",
                "verified",
                "bogus",
                "expires_at_ms",
                "type",
                "topic_path",
            ]
        ),
        json_values,
        max_size=2,
    ),
)
def test_entity_bodies(
    vault: Vault, body: Any, content: str, summary: Any, category: str, extra: dict[str, Any]
) -> None:
    key = f"k{next(KEYS)}"
    saved = attempt(
        vault, lambda: vault.remember(category, key, content, summary=summary, body=body, **extra)
    )
    if saved is not None:  # accepted: it reads back as written, and the indexes took it
        back = vault.get_entity(saved.id)
        assert back.content == content and back.body == saved.body
        assert {k: v for k, v in back.body.items() if k not in ("content", "summary")} == {
            k: v for k, v in (body or {}).items() if k not in ("content", "summary")
        }  # None: no body


@settings(max_examples=25 * SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    items=st.lists(
        st.one_of(
            st.fixed_dictionaries(
                {"category": st.just("batch"), "key": st.uuids().map(str), "content": st.just("fine")}
            ),
            st.fixed_dictionaries({"category": hostile_text, "key": hostile_text, "content": hostile_text}),
            st.fixed_dictionaries(
                {
                    "category": st.just("batch"),
                    "key": st.uuids().map(str),
                    "content": st.just("x"),
                    "body": bodies,
                }
            ),
            json_values,
        ),
        min_size=1,
        max_size=6,
    )
)
def test_batches_are_all_or_nothing(vault: Vault, items: list[Any]) -> None:
    made = attempt(vault, lambda: vault.remember_many(items))
    if made is not None:
        assert len(made) == len(items)


def test_a_batch_over_the_limit_is_refused_whole(vault: Vault) -> None:
    before = fingerprint(vault)
    items = [{"category": "over", "key": f"k{i}", "content": "c"} for i in range(MAX_BATCH + 1)]
    with pytest.raises(InvalidInput, match=f"limit is {MAX_BATCH}"):
        vault.remember_many(items)
    assert fingerprint(vault) == before


def test_limits_named_in_docs_are_the_enforced_ones(vault: Vault) -> None:
    """docs/limits.md states each limit; each is enforced exactly there (one past it is refused)."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "limits.md").read_text(encoding="utf-8")
    for stated in ("256 KiB", "32 levels", "10,000 items", "4,096 characters", "4 MiB"):
        assert stated in docs, stated
    content = "z" * (MAX_BODY_BYTES - 10)
    vault.remember("limits", "at", content, body={"k": "1"})  # '{"k": "1"}' is 10 bytes: exactly at the limit
    with pytest.raises(InvalidInput, match="body"):
        vault.remember("limits", "over", content, body={"k": "12"})
    vault.remember("limits", "deep-ok", "c", body=deep(MAX_BODY_DEPTH - 1))
    with pytest.raises(InvalidInput, match="nested"):
        vault.remember("limits", "deep-over", "c", body=deep(MAX_BODY_DEPTH))
    with pytest.raises(InvalidInput, match="query"):
        vault.recall("q" * 4097)


@settings(max_examples=40 * SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    session=st.one_of(st.just("chat"), hostile_text),
    messages=st.lists(
        st.one_of(
            st.fixed_dictionaries({"speaker": st.just("Ann"), "text": st.just("fine")}),
            st.fixed_dictionaries(
                {"speaker": hostile_text, "text": hostile_text},
                optional={"role": hostile_text, "time": st.one_of(numbers, hostile_text), "id": hostile_text},
            ),
            json_values,
        ),
        min_size=1,
        max_size=5,
    ),
)
def test_conversations_are_all_or_nothing(vault: Vault, session: Any, messages: list[Any]) -> None:
    made = attempt(vault, lambda: vault.remember_conversation(session, messages))
    if (
        made is not None
    ):  # accepted: every message is a turn that reads back as sent; new turns follow in order
        assert [vault.get_entity(t.id).content for t in made.turns] == [m["text"] for m in messages]
        new = [t.turn for t in made.turns if t.change == "created"]
        assert new == sorted(new) and len(set(new)) == len(new)
    attempt(vault, lambda: vault.conversation(session, around=1))


# --- text a database or a reader would take apart (docs/limits.md) -------------------------------

plain = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12)


def holding(char: str) -> st.SearchStrategy[str]:
    """Ordinary text with ``char`` somewhere in it (and nothing else wrong with it)."""
    return st.tuples(plain, plain).map(lambda ab: f"x{ab[0]}{char}y{ab[1]}")


def calls_with(bad: str) -> list[tuple[str, Any]]:
    """(the field a refusal must name, the call) for every text of a write or a read that reaches the database."""
    return [
        ("category", lambda v: v.remember(bad, "k", "c")),
        ("key", lambda v: v.remember("note", bad, "c")),
        ("content", lambda v: v.remember("note", "k", bad)),
        ("summary", lambda v: v.remember("note", "k", "c", summary=bad)),
        ("type", lambda v: v.remember("note", "k", "c", type=bad)),
        ("topic_path", lambda v: v.remember("note", "k", "c", topic_path=bad)),
        ("source", lambda v: v.remember("note", "k", "c", source=bad)),
        ("provenance_class", lambda v: v.remember("note", "k", "c", provenance_class=bad)),
        ("recall_when", lambda v: v.remember("note", "k", "c", recall_when=[bad])),
        ("body", lambda v: v.remember("note", "k", "c", body={"a": [{"b": bad}]})),
        ("body", lambda v: v.remember("note", "k", "c", body={bad: 1})),
        ("agent_id", lambda v: v.remember("note", "k", "c", agent_id=bad)),
        (
            "items.1.content",
            lambda v: v.remember_many(
                [{"category": "n", "key": "a", "content": "c"}, {"category": "n", "key": "b", "content": bad}]
            ),
        ),
        ("relation", lambda v: v.link(1, 2, bad)),
        ("source", lambda v: v.link(1, 2, "related", source=bad)),
        ("session", lambda v: v.remember_conversation(bad, [{"speaker": "Ann", "text": "x"}])),
        ("messages.0.speaker", lambda v: v.remember_conversation("s", [{"speaker": bad, "text": "x"}])),
        ("messages.0.text", lambda v: v.remember_conversation("s", [{"speaker": "Ann", "text": bad}])),
        ("file", lambda v: v.add_memory(bad, "Notes", "an entry")),
        ("section", lambda v: v.add_memory("notes", bad, "an entry")),
        ("text", lambda v: v.add_memory("notes", "Notes", bad)),
        # Reads: refused alike on both backends (PostgreSQL would fail on a NUL parameter).
        ("query", lambda v: v.recall(bad, reinforce=False)),
        ("category", lambda v: v.recall("x", category=bad)),
        ("where.f", lambda v: v.recall("x", where={"f": bad})),
        ("where.category.$in.1", lambda v: v.scan(where={"category": {"$in": ["note", bad]}})),
        ("context", lambda v: v.prepare(bad)),
        ("context", lambda v: v.recall_when(bad)),
        ("query", lambda v: v.memory_recall(bad)),
        ("key", lambda v: v.as_of("note", bad, 1)),
        ("session", lambda v: v.conversation(bad)),
    ]


@settings(max_examples=10 * SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bad=st.one_of(holding("\x00"), holding("\ud800"), holding("\udfff")))
def test_nul_and_unpaired_surrogates_are_refused_by_name_alike_on_both_backends(
    vault: Vault, bad: str
) -> None:
    """SQLite keeps a NUL that PostgreSQL refuses ('the database failed', or a vault ``migrate`` cannot copy);
    neither driver can send an unpaired surrogate. Each is refused as the caller's error, naming the
    field, before the database sees it; nothing is written."""
    for field, call in calls_with(bad):
        before = fingerprint(vault)
        with pytest.raises(InvalidInput) as caught:
            call(vault)
        said = [
            "contains NUL (U+0000)" if "\x00" in bad else "contains an unpaired surrogate",
            "must not contain control characters",
        ]  # what a name a line starts with already said of a NUL
        assert caught.value.field == field and any(s in caught.value.message for s in said), (
            field,
            str(caught.value),
        )
        assert fingerprint(vault) == before


NAMES = [
    ("category", lambda v, bad: v.remember(bad, "k", "c")),
    ("key", lambda v, bad: v.remember("note", bad, "c")),
    ("type", lambda v, bad: v.remember("note", "k", "c", type=bad)),
    ("topic_path", lambda v, bad: v.remember("note", "k", "c", topic_path=bad)),
    ("recall_when", lambda v, bad: v.remember("note", "k", "c", recall_when=[bad])),
    ("relation", lambda v, bad: v.link(1, 2, bad)),
    ("session", lambda v, bad: v.remember_conversation(bad, [{"speaker": "Ann", "text": "x"}])),
    ("messages.0.speaker", lambda v, bad: v.remember_conversation("s", [{"speaker": bad, "text": "x"}])),
    ("messages.0.role", lambda v, bad: v.remember_conversation("s", [{"role": bad, "text": "x"}])),
    ("section", lambda v, bad: v.add_memory("notes", bad, "an entry")),
    ("file", lambda v, bad: v.add_memory(bad, "Notes", "an entry")),
]


@settings(max_examples=10 * SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bad=st.sampled_from(list("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")).flatmap(holding))
def test_a_line_break_in_a_name_an_agent_reads_on_its_own_line_is_refused(vault: Vault, bad: str) -> None:
    """Names head the lines of prepare's block and of a transcript: a line break there would let a stored
    memory add a line of its own (a bullet, a turn), so each is refused by name."""
    for field, call in NAMES:
        before = fingerprint(vault)
        with pytest.raises(InvalidInput) as caught:
            call(vault, bad)
        assert caught.value.field == field, str(caught.value)
        assert fingerprint(vault) == before


def test_an_import_refuses_nul_in_any_field_alike_on_both_backends(vault: Vault) -> None:
    import json

    entity = json.loads(
        next(
            line for line in vault_lines(vault) if '"record": "entity"' in line or '"record":"entity"' in line
        )
    )
    link = json.loads(
        next(line for line in vault_lines(vault) if '"record": "link"' in line or '"record":"link"' in line)
    )
    for field, record in (
        ("agent_id", {**entity, "agent_id": "a\x00"}),
        (
            "versions.0.provenance_class",
            {**entity, "versions": [{**entity["versions"][0], "provenance_class": "x\x00"}]},
        ),
        ("relation", {**link, "relation": "rel\x00"}),
        ("content", {"category": "note", "key": "k", "content": "c\x00"}),
    ):
        before = fingerprint(vault)
        with pytest.raises(InvalidInput, match=f"^line 1: the text at {re.escape(field)} contains NUL"):
            vault.import_jsonl([json.dumps(record)])
        assert fingerprint(vault) == before


def vault_lines(vault: Vault) -> list[str]:
    import io

    out = io.StringIO()
    vault.export_jsonl(out)
    return out.getvalue().splitlines()


# --- MCP arguments -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mcp(vault: Vault) -> Iterator[tuple[Any, Any, list[str]]]:
    """An in-process MCP client on the vault, kept open across examples (a blocking portal runs it)."""
    from anyio.from_thread import start_blocking_portal
    from mcp import Client

    from perseus_vault_integrations.mcp import build_server

    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(Client(build_server(vault=vault, tools="all"))) as client,
    ):
        names = [t.name for t in portal.call(client.list_tools).tools]
        yield portal, client, names


ARG_NAMES = [
    "query",
    "id",
    "limit",
    "mode",
    "cursor",
    "category",
    "key",
    "content",
    "body",
    "items",
    "start",
    "depth",
    "agent_id",
    "workspace_hash",
    "context",
    "file",
    "section",
    "text",
    "as_of_unix_ms",
    "relations",
    "direction",
    "from_id",
    "to_id",
    "old_id",
    "new_id",
    "community_id",
    "bogus",
    "reinforce",
    "session",
    "messages",
    "around",
    "before",
]


# What a stack trace or a source path looks like in a message.
LEAKS = re.compile(r'Traceback|File "|\.py[":]|site-packages|/perseus_vault_')


def no_surrogates(value: Any) -> bool:
    """JSON on the wire cannot carry an unpaired surrogate as UTF-8 (the client cannot even encode it);
    the raw HTTP tests send them as ``\\ud800`` escapes instead."""
    if isinstance(value, str):
        return not any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, dict):
        return all(no_surrogates(k) and no_surrogates(v) for k, v in value.items())
    if isinstance(value, list):
        return all(no_surrogates(v) for v in value)
    return True


@settings(max_examples=80 * SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mcp_arguments(vault: Vault, mcp: tuple[Any, Any, list[str]], data: st.DataObject) -> None:
    portal, client, names = mcp
    name = data.draw(st.sampled_from([n for n in names if n != "perseus_vault_embed"]))
    args = data.draw(
        st.dictionaries(st.sampled_from(ARG_NAMES), json_values, max_size=4).filter(no_surrogates)
    )
    args = {
        k: v for k, v in args.items() if not (isinstance(v, float) and not math.isfinite(v))
    }  # JSON has no NaN
    before = fingerprint(vault)
    result = portal.call(client.call_tool, name, args)  # a protocol-level exception here fails the test
    if result.is_error:
        text = " ".join(getattr(c, "text", "") for c in result.content)
        assert text.strip() and not LEAKS.search(text), text
        assert fingerprint(vault) == before, f"{name} refused {args!r} but changed the store"
    alive = portal.call(
        client.call_tool, "perseus_vault_recall", {"query": "storage", "options": {"reinforce": False}}
    )
    assert not alive.is_error  # the server keeps serving


# --- bounded cost --------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_recall_or_scan_of_a_thousand_large_memories_stays_within_the_response_budget(
    tmp_path: Path,
) -> None:
    """1,000 memories of 100 KB each (100 MB): a recall or scan of all of them must not build a
    response of that size. Recall gives whole memories up to the budget and previews after it (each
    naming the tool that reads it whole); scan ends its page early, and its pages still return every
    memory exactly once; the answer over MCP is bounded the same way."""
    import anyio
    from mcp import Client

    from perseus_vault_core.contract.params import OVERFLOW_PREVIEW_CHARS, RESPONSE_BUDGET_CHARS
    from perseus_vault_integrations.mcp import build_server

    blob = "x" * 100_000
    with Vault(tmp_path / "big.db", embedder=False) as vault:
        for start in range(0, 1000, 100):
            vault.remember_many(
                [
                    {
                        "category": "big",
                        "key": f"k{i}",
                        "content": f"memory {i} about storage",
                        "body": {"blob": blob},
                    }
                    for i in range(start, start + 100)
                ]
            )
        result = vault.recall("storage", limit=1000, reinforce=False)
        wire = result.model_dump_json()
        assert len(result.items) == 1000 and len(wire) < RESPONSE_BUDGET_CHARS + 1000 * (
            OVERFLOW_PREVIEW_CHARS + 2000
        )
        whole = [i for i in result.items if i.body.get("blob") == blob]
        assert 1 <= len(whole) <= RESPONSE_BUDGET_CHARS // 100_000
        assert all(
            "perseus_vault_get_entity" in i.content for i in result.items if i.body.get("blob") != blob
        )
        assert len(vault.recall("", limit=1000, reinforce=False).model_dump_json()) < len(wire) * 1.1
        page = vault.scan(limit=1000)
        assert page.has_more and 1 <= len(page.items) <= RESPONSE_BUDGET_CHARS // 100_000
        assert all(e.body["blob"] == blob for e in page.items)  # a page holds whole memories only
        seen, cursor = [], None
        while True:
            page = vault.scan(limit=1000, cursor=cursor)
            seen += [e.key for e in page.items]
            if not page.has_more:
                break
            cursor = page.next_cursor
        assert sorted(seen) == sorted(f"k{i}" for i in range(1000))

        async def main() -> None:
            async with Client(build_server(vault=vault)) as c:
                answer = await c.call_tool(
                    "perseus_vault_recall",
                    {"query": "storage", "limit": 1000, "options": {"reinforce": False}},
                )
                assert not answer.is_error and len(answer.content[0].text) < len(wire) * 1.1

        anyio.run(main)


def test_recall_when_and_global_recall_answers_stay_within_the_response_budget(tmp_path: Path) -> None:
    from perseus_vault_core.contract.params import OVERFLOW_PREVIEW_CHARS, RESPONSE_BUDGET_CHARS

    blob = "y" * 50_000
    with Vault(tmp_path / "triggers.db", embedder=False) as vault:
        vault.remember_many(
            [
                {
                    "category": "rule",
                    "key": f"r{i}",
                    "content": f"rule {i}: {blob}",
                    "recall_when": ["deploy the service"],
                }
                for i in range(100)
            ]
        )  # 5 MB of rules
        found = vault.recall_when("we deploy the service now", limit=1000)
        assert len(found.items) == 100
        assert len(found.model_dump_json()) < RESPONSE_BUDGET_CHARS + 100 * (OVERFLOW_PREVIEW_CHARS + 2000)
        assert "perseus_vault_get_entity" in found.items[-1].content


def test_a_nul_in_a_path_is_invalid_input_naming_the_argument(tmp_path: Path) -> None:
    """The operating system refuses a path holding NUL with a ValueError; the vault says which argument."""
    bad = str(tmp_path / "a\x00b")
    with Vault(tmp_path / "paths.db", embedder=False) as vault:
        for call, name in (
            (lambda: vault.export_jsonl(bad), "target"),
            (lambda: vault.import_jsonl(bad), "source"),
            (lambda: vault.memory_import(bad), "folder"),
            (lambda: vault.memory_export(bad), "folder"),
            (lambda: vault.backup(bad), "target"),
        ):
            with pytest.raises(InvalidInput) as caught:
                call()
            assert caught.value.field == name and "NUL" in caught.value.message
