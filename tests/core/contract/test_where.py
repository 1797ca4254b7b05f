"""``where`` filters (perseus_vault_core/contract/where.py, docs/filters.md): what they take and refuse, their
semantics on both backends, through every verb built on recall and scan, and a property: the filtered
answer of every mode and path is the unfiltered ranking cut to what a plain Python evaluation of the
filter keeps, inside the query (the page is never cut first)."""

from __future__ import annotations

import asyncio
import io
import json
import random
import re
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perseus_vault_core import InvalidInput, Vault
from perseus_vault_core.contract.where import MAX_CONDITIONS, parse

from ...conftest import BACKENDS, FakeEmbedder, vault_location

pytestmark = pytest.mark.both_backends


# --- what a where takes and refuses (pure) ------------------------------------------------------------


@pytest.mark.parametrize(
    "where, field, says",
    [
        ({"prio": {"$gtx": 1}}, "prio.$gtx", "not an operator"),
        ({"prio": {"$regex": "a"}}, "prio.$regex", "not an operator"),
        ({"$nor": [{"a": 1}]}, "$nor", "not an operator"),
        ({"$gt": 1}, "$gt", "applies to a field"),
        ({"$or": []}, "$or", "non-empty list"),
        ({"$and": {"a": 1}}, "$and", "non-empty list"),
        ({"$or": [{"a": 1}, 3]}, "$or.1", "JSON object"),
        ({"tags": ["a", "b"]}, "tags", "$in"),
        ({"meta": {"author": "ann"}}, "meta", "dots"),
        ({"a": {"$eq": 1, "b": 2}}, "a", "dots"),
        ({"a": {}}, "a", "empty condition"),
        ({"a": {"$gt": True}}, "a.$gt", "number or a string"),
        ({"a": {"$lt": None}}, "a.$lt", "number or a string"),
        ({"a": {"$gte": [1]}}, "a.$gte", "number or a string"),
        ({"a": {"$in": "x"}}, "a.$in", "list of values"),
        ({"a": {"$in": [1, [2]]}}, "a.$in.1", "single value"),
        ({"a": {"$nin": [{"b": 1}]}}, "a.$nin.0", "single value"),
        ({"a": {"$exists": 1}}, "a.$exists", "true or false"),
        ({"a": {"$not": 3}}, "a.$not", "takes operators"),
        ({"a": {"$eq": float("nan")}}, "a.$eq", "finite"),
        ({"a": 2**64}, "a", "64 bits"),
        ({"content": "x"}, "content", "takes only $contains, $not_contains, $substring, $isubstring"),
        ({"summary": {"$eq": "x"}}, "summary", "takes only $contains"),
        ({"content": {"$contains": "a", "$gt": "b"}}, "content", "takes only $contains"),
        ({"content": {"$not": {"$in": ["a"]}}}, "content.$not", "takes only $contains"),
        ({"decay": {"$gt": 0.5}}, "decay", "min_decay"),
        ({"body": {"$exists": True}}, "body", "not a field"),
        ({"a..b": 1}, "a..b", "not a field name"),
        ({'a"b': 1}, 'a"b', "not a field name"),
        ({"$x.y": 1}, "$x.y", "not an operator"),
        ({"a": {"$in": list(range(1001))}}, "a.$in", "limit is 1000"),
        (
            {"\ud800": 1},
            "",
            "not valid Unicode",
        ),  # named without the surrogate, which no error line could print
        ({"a": {"$\ud800": 1}}, "a", "not valid Unicode"),
        ({"a": "\udfff"}, "a", "valid Unicode"),
    ],
)
def test_refusals_name_the_part(where: Any, field: str, says: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse(where)
    assert caught.value.field == field and says in caught.value.message


def test_a_whole_filter_refusal_names_the_where_once() -> None:
    """Through a verb's params the path is the param's: ``where``, not ``where.where``."""
    from perseus_vault_core.contract.params import RecallParams, validate

    for where in (
        {"$or": [{"a": i} for i in range(MAX_CONDITIONS + 1)]},
        {"a": {"$in": list(range(1000))}, **{f"b{i}": {"$in": list(range(1000))} for i in range(10)}},
    ):
        with pytest.raises(InvalidInput) as caught:
            validate(RecallParams, {"query": "x", "where": where})
        assert caught.value.field == "where", caught.value
    with pytest.raises(InvalidInput) as caught:
        validate(RecallParams, {"query": "x", "where": {"prio": {"$gtx": 1}}})
    assert caught.value.field == "where.prio.$gtx"


def test_limits_on_size_and_nesting() -> None:
    with pytest.raises(InvalidInput, match="more than 256 conditions"):
        parse({"$or": [{"a": i} for i in range(MAX_CONDITIONS + 1)]})
    deep: dict[str, Any] = {"a": 1}
    for _ in range(20):
        deep = {"$not": deep}
    with pytest.raises(InvalidInput, match="deeper than 16"):
        parse(deep)
    assert parse({}) is not None  # {} keeps everything, as in MongoDB


# --- semantics, on both backends ---------------------------------------------------------------------


MEMORIES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    # key, body, other fields
    ("a", {"prio": 3, "tags": ["ops", "urgent"], "meta": {"author": "ann"}}, {"category": "note"}),
    ("b", {"prio": "5", "tags": "ops", "status": "open"}, {"category": "note", "verified": True}),
    ("c", {"prio": 1.5, "flag": True, "tags": []}, {"category": "fact", "source": "wiki"}),
    ("d", {"prio": None, "flag": False}, {"category": "fact", "certainty": 0.9, "topic_path": "ops/db"}),
    ("e", {"prio": [1, 7], "meta": {"author": "bob", "n": 2}}, {"category": "decision", "type": "decision"}),
]


@pytest.fixture
def filled(vault: Vault) -> Vault:
    for key, body, other in MEMORIES:
        vault.remember(
            key=key, content=f"deploy checklist item {key}", body=body, **{"category": "note", **other}
        )
    return vault


@pytest.mark.parametrize(
    "where, keys",
    [
        (
            {"prio": {"$gt": 1}},
            "ace",
        ),  # numbers with numbers (a list holds when one element does); "5" is a string
        ({"prio": {"$gt": "1"}}, "b"),  # strings with strings
        ({"prio": 3}, "a"),
        ({"prio": 3.0}, "a"),  # 3 == 3.0
        ({"prio": 7}, "e"),  # an element of a list
        ({"prio": {"$ne": 7}}, "abcd"),  # $ne holds for no element equal, and for a missing field
        ({"prio": None}, "d"),  # null is missing
        ({"prio": {"$exists": False}}, "d"),
        ({"prio": {"$exists": True}}, "abce"),
        ({"flag": True}, "c"),
        ({"flag": 1}, ""),  # true is not 1
        ({"flag": {"$ne": True}}, "abde"),
        ({"tags": "urgent"}, "a"),
        ({"tags": {"$in": ["ops", "x"]}}, "ab"),
        ({"tags": {"$nin": ["ops"]}}, "cde"),  # an empty list holds no element
        ({"tags": {"$exists": True}}, "abc"),  # an empty list is there
        ({"meta.author": "ann"}, "a"),
        ({"meta.n": {"$gte": 2}}, "e"),
        ({"meta": {"$exists": True}}, "ae"),
        ({"meta": "ann"}, ""),  # an object equals no value
        ({"body.status": "open"}, "b"),  # a body field named like a memory field
        ({"status": "active"}, "abcde"),  # the memory's own status
        ({"category": "note"}, "ab"),
        ({"category": {"$in": ["fact", "decision"]}}, "cde"),
        ({"category": {"$gte": "f"}}, "abcd"),  # strings by code point: "decision" < "f" < "fact" < "note"
        ({"type": "decision"}, "e"),
        ({"type": {"$nin": ["decision", "turn"]}}, "abcd"),
        ({"verified": True}, "b"),
        ({"verified": 1}, ""),
        ({"source": {"$exists": True}}, "c"),
        ({"source": None}, "abde"),
        ({"certainty": {"$gte": 0.5}}, "d"),
        ({"topic_path": "ops/db"}, "d"),
        ({"topic_path": {"$exists": False}}, "abce"),
        ({"agent_id": None}, "abcde"),  # no scope is missing
        ({"key": {"$in": ["a", "e"]}}, "ae"),
        ({"prio": {"$in": [3, 7]}}, "ae"),  # numbers as one JSON array, list elements included
        ({"prio": {"$in": [1.5, "5", True]}}, "bc"),  # each kind with its own
        ({"prio": {"$nin": [3.0, 1.5]}}, "bde"),
        ({"certainty": {"$in": [0.9, 0.5]}}, "d"),  # a number column
        ({"id": {"$in": [-1, -2]}}, ""),
        ({"verified": {"$in": [True, False]}}, "abcde"),
        ({"$or": [{"category": "fact"}, {"prio": 3}]}, "acd"),
        ({"$and": [{"category": "note"}, {"prio": {"$type": 1}}]}, None),  # refused: unknown operator
        ({"$not": {"category": "note"}}, "cde"),
        ({"prio": {"$not": {"$gt": 2}}}, "bcd"),  # $not of a comparison keeps the missing and other kinds
        (
            {"prio": {"$gt": 1, "$lt": 5}},
            "ace",
        ),  # several operators: all hold (e: 1 < 5 and 7 > 1, per element)
        ({"category": "note", "flag": {"$exists": False}}, "ab"),
        ({"meta.author": {"$substring": "nn"}}, "a"),  # text holding text
        ({"tags": {"$substring": "rg"}}, "a"),  # an element of a list
        ({"topic_path": {"$substring": "ps/"}}, "d"),  # a memory field
        ({"category": {"$isubstring": "NOT"}}, "ab"),  # ASCII letters in either case
        ({"meta.author": {"$substring": "NN"}}, ""),
        ({"prio": {"$substring": "5"}}, "b"),  # a number holds no text: only the string "5"
        ({"meta.author": {"$not": {"$substring": "nn"}}}, "bcde"),
        ({"meta.author": {"$substring": ""}}, None),  # refused: nothing to look for
        ({"meta.author": {"$substring": 5}}, None),
        (
            {"meta.author": {"$contains": "nn"}},
            "a",
        ),  # $contains is $substring's other name, on any text field
        ({"meta.author": {"$not_contains": "nn"}}, "bcde"),
        ({"content": {"$contains": "item a"}}, "a"),  # the memory's text
        ({"content": {"$contains": "ITEM"}}, ""),  # as Chroma's: letters in their case
        ({"content": {"$isubstring": "ITEM A"}}, "a"),
        ({"content": {"$not_contains": "item a"}}, "bcde"),
        ({"content": {"$not": {"$contains": "item a"}}}, "bcde"),
        ({"$or": [{"content": {"$contains": "item a"}}, {"content": {"$substring": "item e"}}]}, "ae"),
        ({"summary": {"$contains": "item"}}, ""),  # none has a summary: a missing text holds nothing
        ({"summary": {"$not_contains": "item"}}, "abcde"),
        ({"content": "deploy checklist item a"}, None),  # refused: its words are searched, its text tested
        ({}, "abcde"),
    ],
)
def test_semantics(filled: Vault, where: dict[str, Any], keys: str | None) -> None:
    if keys is None:
        with pytest.raises(InvalidInput, match="where"):
            filled.recall("deploy", where=where)
        return
    want = sorted(keys)
    assert sorted(i.key for i in filled.recall("deploy", where=where, reinforce=False).items) == want, (
        "recall"
    )
    assert sorted(i.key for i in filled.recall("", where=where, reinforce=False).items) == want, "enumeration"
    assert sorted(i.key for i in filled.scan(where=where).items) == want, "scan"


def test_every_mode_and_the_point_in_time_views(vault_path: str | Path, clock: Any) -> None:
    with Vault(vault_path, clock=clock, embedder=FakeEmbedder()) as v:
        for key, body, other in MEMORIES:
            v.remember(
                key=key, content=f"deploy checklist item {key}", body=body, **{"category": "note", **other}
            )
        then = clock.advance(1000)
        clock.advance(1000)
        v.remember(category="note", key="a", content="deploy checklist item a, reworded", body={"prio": 0})
        where = {"prio": {"$gt": 1}}
        for mode in ("fts5", "dense", "hybrid"):
            now = {i.key for i in v.recall("deploy checklist", mode=mode, where=where, reinforce=False).items}
            past = {
                i.key for i in v.recall("deploy checklist", mode=mode, where=where, as_of_unix_ms=then).items
            }
            assert (now, past) == ({"c", "e"}, {"a", "c", "e"}), mode  # the body as it was then
        assert {i.key for i in v.scan(where=where, as_of_unix_ms=then).items} == {"a", "c", "e"}
        assert {
            i.key for i in v.recall_by_vector(list(FakeEmbedder().embed(["deploy"])[0]), where=where).items
        } == {"c", "e"}


def test_the_verbs_built_on_recall_and_scan(filled: Vault) -> None:
    v = filled
    ids = {e.key: e.id for e in v.scan().items}
    v.remember(
        category="note",
        key="t",
        content="before you deploy, check the runbook",
        recall_when=["deploy"],
        body={"prio": 0},
    )
    v.remember(
        category="note", key="u", content="deploy only on weekdays", recall_when=["deploy"], body={"prio": 9}
    )
    block = v.prepare("I will deploy the checklist now", where={"prio": {"$gte": 2}})
    assert "note/u" in block.markdown and "note/t" not in block.markdown
    shown = set(block.triggered) | set(block.related)
    assert shown and shown <= {ids["a"], ids["e"]} | {e.id for e in v.scan(where={"key": "u"}).items}
    when = v.recall_when("deploy", where={"prio": 0})
    assert [i.key for i in when.items] == ["t"]
    assert {
        i.key for i in v.search("deploy", where={"prio": 1.5}).items
    } == set()  # search is over notes only
    for a, b in (("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")):
        v.link(ids[a], ids[b])
    walk = v.traverse(ids["a"], depth=4, where={"category": "note"}, inferred=False)  # the links written here
    assert {n.entity.key for n in walk.nodes} == {"a", "b"}  # the walk stops where the filter does
    found = v.global_recall("deploy checklist", where={"category": {"$ne": "note"}})
    evidence = {e.key for c in found.communities for e in c.evidence}
    assert evidence and evidence <= {"c", "d", "e"}
    assert all(item.key != "t" for item in v.hygiene(min_age_days=0, where={"prio": {"$gte": 1}}).items)


def test_transcripts_and_summaries_can_be_kept_out(filled: Vault) -> None:
    v = filled
    v.remember_conversation("s1", [{"speaker": "ann", "text": "shall we deploy the checklist today?"}])
    turns = {"type": {"$nin": ["turn", "community_summary"]}}
    assert any(i.category == "conversation" for i in v.recall("deploy checklist", reinforce=False).items)
    kept = v.recall("deploy checklist", where=turns, reinforce=False).items
    assert kept and all(i.category != "conversation" for i in kept)


# --- every interface: Python, the command line, MCP -----------------------------------------------------


def test_the_command_line_takes_where_as_json(
    filled: Vault, vault_path: str | Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from perseus_vault_core.cli.main import main

    monkeypatch.setenv("PERSEUS_VAULT_EMBEDDER", "none")
    filled.close()

    def run(*argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(["--db", str(vault_path), *argv])
            except SystemExit as exit:
                code = int(exit.code or 0)
        return code, out.getvalue(), err.getvalue()

    code, out, _ = run("recall", "deploy", "--where", '{"prio": {"$gt": 1}}', "--json")
    assert code == 0 and sorted(i["key"] for i in json.loads(out)["items"]) == ["a", "c", "e"]
    code, out, _ = run("scan", "--where", '{"tags": "ops"}', "--json")
    assert code == 0 and sorted(i["key"] for i in json.loads(out)["items"]) == ["a", "b"]
    code, _, err = run("recall", "deploy", "--where", '{"prio": {"$gtx": 1}}')
    assert (
        code == 1
        and err.strip()
        == "error: where.prio.$gtx: is not an operator the vault takes (it takes "
        "$eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $exists, $not, $contains, "
        "$not_contains, $substring, $isubstring)"
    )
    code, _, err = run("recall", "deploy", "--where", "{prio: 1}")
    assert code != 0 and "where" in err and "JSON" in err


def test_mcp_tools_take_where(filled: Vault) -> None:
    from mcp import Client

    from perseus_vault_integrations.mcp import build_server

    async def main() -> None:
        async with Client(build_server(vault=filled)) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert tools["perseus_vault_recall"].input_schema["properties"]["where"]["type"] == "object"
            got = await c.call_tool(
                "perseus_vault_recall", {"query": "deploy", "where": {"tags": {"$in": ["urgent"]}}}
            )
            assert not got.is_error and [i["key"] for i in got.structured_content["items"]] == ["a"]
            bad = await c.call_tool("perseus_vault_scan", {"where": {"prio": {"$gt": [1]}}})
            assert (
                bad.is_error and "where.prio.$gt: compares with a number or a string" in bad.content[0].text
            )

    asyncio.run(main())


# --- the property: inside the query, in every mode and path, as a plain evaluation says ----------------------


FIELDS = [
    "n",
    "s",
    "flag",
    "meta.k",
    "body.status",
    "category",
    "type",
    "verified",
    "certainty",
    "source",
    "topic_path",
    "created_at_ms",
]
VALUES: list[Any] = [0, 1, 2, 2.5, -1, 10**12, "", "a", "b", "B", "é", "ops", True, False, None]
CATEGORIES, TYPES = ["alpha", "beta", "gamma"], ["note", "fact", "turn"]


def _value(rng: random.Random) -> Any:
    pick = rng.random()
    if pick < 0.15:
        return [rng.choice(VALUES[:-1]) for _ in range(rng.randint(0, 3))]
    if pick < 0.2:
        return {"k": rng.choice(VALUES)}
    return rng.choice(VALUES)


def _memory(rng: random.Random, i: int) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for name in ("n", "s", "flag", "status"):
        if rng.random() < 0.7:
            body[name] = _value(rng)
    if rng.random() < 0.5:
        body["meta"] = {"k": _value(rng)} if rng.random() < 0.8 else _value(rng)
    words = " ".join(rng.choices("ledger deploy canary cache queue backup".split(), k=4))
    return {
        "category": rng.choice(CATEGORIES),
        "key": f"m{i}",
        "content": f"memo {words}",
        "body": body,
        "type": rng.choice(TYPES),
        "verified": rng.random() < 0.3,
        "certainty": rng.choice([None, 0, 0.5, 1.0]),
        "source": rng.choice([None, "a", "b"]),
        "topic_path": rng.choice([None, "a", "ops/db"]),
    }


MISSING = object()


def _lookup(doc: dict[str, Any], name: str) -> Any:
    """The value a where's field names in a memory (as the API returns it), by the documented rules."""
    if name in doc["top"]:
        return doc["top"][name]
    value: Any = doc["body"]
    for part in name.removeprefix("body.").split("."):
        if not isinstance(value, dict) or part not in value:
            return MISSING
        value = value[part]
    return value


def _kind(x: Any) -> str:
    return (
        "bool"
        if isinstance(x, bool)
        else "number"
        if isinstance(x, (int, float))
        else "text"
        if isinstance(x, str)
        else "other"
    )


def _elements(value: Any) -> list[Any]:
    if value is MISSING or value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _same(a: Any, b: Any) -> bool:
    return _kind(a) == _kind(b) != "other" and a == b


def _ordered(a: Any, op: str, b: Any) -> bool:
    if _kind(a) != _kind(b) or _kind(a) not in ("number", "text"):
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def _holds(value: Any, op: str, x: Any) -> bool:
    present = value is not MISSING and value is not None
    if op == "$eq":
        return not present if x is None else any(_same(e, x) for e in _elements(value))
    if op == "$ne":
        return not _holds(value, "$eq", x)
    if op == "$in":
        return any(_holds(value, "$eq", y) for y in x)
    if op == "$nin":
        return not _holds(value, "$in", x)
    if op == "$exists":
        return present == x
    if op == "$not":
        return not _condition(value, x)
    if op in ("$substring", "$isubstring"):  # text holding x; isubstring: ASCII letters in either case
        fold = (
            (lambda t: t.translate(str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")))
            if op == "$isubstring"
            else (lambda t: t)
        )
        return any(isinstance(e, str) and fold(x) in fold(e) for e in _elements(value))
    return any(_ordered(e, op, x) for e in _elements(value))


def _condition(value: Any, cond: Any) -> bool:
    if isinstance(cond, dict):
        return all(_holds(value, op, x) for op, x in cond.items())
    return _holds(value, "$eq", cond)


def _matches(doc: dict[str, Any], where: dict[str, Any]) -> bool:
    for key, cond in where.items():
        if key == "$and" and not all(_matches(doc, w) for w in cond):
            return False
        if key == "$or" and not any(_matches(doc, w) for w in cond):
            return False
        if key == "$not" and _matches(doc, cond):
            return False
        if not key.startswith("$") and not _condition(_lookup(doc, key), cond):
            return False
    return True


def _comparison(name: str) -> st.SearchStrategy[Any]:
    scalar = st.sampled_from(VALUES)
    ordered = st.sampled_from([v for v in VALUES if v is not None and not isinstance(v, bool)])
    compare = st.builds(lambda op, v: {op: v}, st.sampled_from(["$gt", "$gte", "$lt", "$lte"]), ordered)
    ops = st.one_of(  # the comparisons that keep some and drop some, more often than equality to one value
        scalar,
        st.fixed_dictionaries({"$eq": scalar}),
        st.fixed_dictionaries({"$ne": scalar}),
        compare,
        compare,
        st.builds(lambda op, v: {op: v}, st.sampled_from(["$in", "$nin"]), st.lists(scalar, max_size=4)),
        st.fixed_dictionaries({"$exists": st.booleans()}),
        st.fixed_dictionaries({"$exists": st.booleans()}),
        st.builds(lambda lo, hi: {"$gte": lo, "$lt": hi}, ordered, ordered),
        st.builds(
            lambda op, v: {op: v},
            st.sampled_from(["$substring", "$isubstring"]),
            st.sampled_from(["a", "b", "B", "é", "É", "p", "ops", "lph", "ETA", "ote", "/", "x"]),
        ),
    )
    return st.one_of(ops, ops.map(lambda c: {"$not": c if isinstance(c, dict) else {"$eq": c}})).map(
        lambda c: {name: c}
    )


wheres = st.recursive(
    st.sampled_from(FIELDS).flatmap(_comparison),
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3).map(lambda ws: {"$and": ws}),
        st.lists(inner, min_size=1, max_size=3).map(lambda ws: {"$or": ws}),
        inner.map(lambda w: {"$not": w}),
        st.tuples(inner, inner).map(lambda ab: {**ab[0], **ab[1]}),
    ),
    max_leaves=5,
)


@pytest.fixture(scope="module", params=BACKENDS)
def store(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[tuple[Vault, list[Any]]]:
    with (
        vault_location(request.param, request, tmp_path_factory.mktemp("where")) as location,
        Vault(location, embedder=FakeEmbedder()) as v,
    ):
        rng = random.Random(20)
        for i in range(90):
            v.remember(**_memory(rng, i))
        for e in rng.sample(
            v.scan(limit=200).items, 8
        ):  # a few updated: heads and closed versions both exist
            v.remember(
                category=e.category, key=e.key, content=e.content + " updated", body=_memory(rng, 0)["body"]
            )
        assert v.wait_for_keyword_index() and v.wait_for_vector_index()
        docs = []
        for e in v.scan(limit=200).items:
            top = {
                name: getattr(e, name) for name in FIELDS if "." not in name and name in type(e).model_fields
            }
            docs.append({"id": e.id, "top": top, "body": e.body})
        yield v, docs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(where=wheres, limit=st.sampled_from([3, 10, 200]))
def test_filtered_answers_are_the_plain_evaluation(
    store: tuple[Vault, list[Any]], where: dict[str, Any], limit: int
) -> None:
    v, docs = store
    expected = {d["id"] for d in docs if _matches(d, where)}
    assert {e.id for e in v.scan(where=where, limit=1000).items} == expected
    assert {
        i.id for i in v.recall("", where=where, limit=1000, reinforce=False, curate=False).items
    } == expected
    engine = v.engine
    indexes = engine.keyword_index, engine.vector_index
    for mode in ("fts5", "dense", "hybrid"):
        # Every memory holds "memo": the unfiltered ranking of everything, cut to the matching ones, is the
        # filtered page, whether the in-memory indexes answer or SQL does.
        ranking = [
            i.id for i in v.recall("memo deploy", mode=mode, limit=200, reinforce=False, curate=False).items
        ]
        want = [i for i in ranking if i in expected][:limit]
        for path in ("indexes", "sql"):
            if path == "sql":
                engine.keyword_index = engine.vector_index = None
            try:
                got = [
                    i.id
                    for i in v.recall(
                        "memo deploy", mode=mode, where=where, limit=limit, reinforce=False, curate=False
                    ).items
                ]
            finally:
                engine.keyword_index, engine.vector_index = indexes
            assert got == want, (mode, path)


# --- a filter that keeps few: answered by one pass, remembered, and still exactly --------------------------


@pytest.fixture(scope="module", params=BACKENDS)
def big(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Vault]:
    """2,500 memories (more than the dense arm's first 1,500 candidates); one in a hundred is ``rare``."""
    words = (
        "ledger deploy canary cache queue backup restore shard index vacuum billing invoice session token "
        "retry replica leader quorum schema migration rollout feature flag metric alert pager runbook oncall "
        "latency budget quota tenant region bucket object lambda cron batch stream topic"
    ).split()
    rng = random.Random(5)
    with (
        vault_location(request.param, request, tmp_path_factory.mktemp("big")) as location,
        Vault(location, embedder=FakeEmbedder()) as v,
    ):
        v.remember_many(
            [
                {
                    "category": "note",
                    "key": f"k{i}",
                    "content": "memo " + " ".join(rng.choices(words, k=5)),
                    "body": {"rare": i % 100 == 7, "group": i % 3},
                }
                for i in range(2_500)
            ]
        )
        assert v.wait_for_keyword_index() and v.wait_for_vector_index()
        yield v


def _nearest(v: Vault, query: str, where: dict[str, Any], limit: int) -> list[int]:
    """The exact answer: every memory the filter keeps, by the canonical cosine, ties by id."""
    from perseus_vault_core.embeddings import embedding_text
    from perseus_vault_core.primitives.dense import cosine

    kept = [e for e in v.scan(where=where, limit=1000).items]
    vectors = FakeEmbedder().embed([embedding_text(e.content, e.summary) for e in kept])
    scores = cosine(vectors, FakeEmbedder().embed([query])[0])
    return [e.id for s, e in sorted(zip(scores.tolist(), kept), key=lambda p: (-p[0], p[1].id))][:limit]


def test_a_filter_that_keeps_few_is_answered_exactly_by_every_path(
    big: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    from perseus_vault_core.indexes import heads
    from perseus_vault_core.primitives import hits

    asked: list[int] = []  # each question to the database: how many versions, or -1 for every head
    real = hits.ask

    def ask(conn: Any, cond: Any, vids: Any, whole: bool) -> Any:
        asked.append(-1 if whole else len(vids))
        return real(conn, cond, vids, whole)

    monkeypatch.setattr(hits, "ask", ask)
    monkeypatch.setattr(heads, "ask", ask)
    engine = big.engine
    rare = {"rare": True}
    everything = [
        i.id
        for offset in (0, 1000, 2000)
        for i in big.recall(
            "memo canary",
            mode="fts5",
            limit=1000,
            offset=offset,
            reinforce=False,
            curate=False,
            min_score=None,
        ).items
    ]
    assert len(everything) == 2_500  # the ranking of every memory, for the cut below
    kept = {e.id for e in big.scan(where=rare, limit=1000).items}
    want = [i for i in everything if i in kept][:10]
    nearest = _nearest(big, "canary queue", rare, 10)
    got = [
        i.id
        for i in big.recall(
            "memo canary", mode="fts5", where=rare, reinforce=False, curate=False, min_score=None
        ).items
    ]
    assert got == want and asked == [-1]  # one pass over the heads, not a walk through the ranking
    assert [
        i.id
        for i in big.recall(
            "canary queue", mode="dense", where=rare, reinforce=False, curate=False, min_score=None
        ).items
    ] == nearest
    assert asked == [-1], "the filter's answers were remembered"
    fresh = big.remember(category="note", key="new", content="memo canary canary canary", body={"rare": True})
    assert (
        big.recall("memo canary", mode="fts5", where=rare, reinforce=False, curate=False, min_score=None)
        .items[0]
        .id
        == fresh.id
    )
    assert asked == [-1, 1], "after a write, only the new head was asked about"
    indexes = engine.keyword_index, engine.vector_index
    engine.keyword_index = engine.vector_index = None
    try:  # a new process, before its indexes: SQL answers, the same
        nearest = _nearest(big, "canary queue", rare, 10)
        assert [
            i.id
            for i in big.recall(
                "canary queue", mode="dense", where=rare, reinforce=False, curate=False, min_score=None
            ).items
        ] == nearest
        assert [
            i.id
            for i in big.recall(
                "memo canary", mode="fts5", where=rare, reinforce=False, curate=False, min_score=None
            ).items
        ][1:] == want[:9]
    finally:
        engine.keyword_index, engine.vector_index = indexes
    unselective = {"group": {"$ne": 0}}  # keeps two in three (and the new one, which has no group)
    before = len(asked)
    cut = {e.id for e in big.scan(where=unselective, limit=1000).items} | {
        e.id
        for e in big.scan(
            where=unselective, limit=1000, cursor=big.scan(where=unselective, limit=1000).next_cursor
        ).items
    }
    got = big.recall(
        "canary queue", mode="dense", where=unselective, reinforce=False, curate=False, min_score=None
    ).items
    assert (
        len(got) == 10
        and {i.id for i in got} <= cut
        and [i.score for i in got] == sorted((i.score for i in got), reverse=True)
    )
    assert len(asked) == before  # a filter that keeps most: the walk asked it along the way, no pass


# --- the work one where may ask (docs/limits.md) --------------------------------------------------


@pytest.mark.parametrize(
    "where, says",
    [
        ({f"f{i}": {"$in": list(range(1_000))} for i in range(11)}, "more than 10000 values in all"),
        ({"f": {"$in": [f"{i:03d}" + "x" * 4_093 for i in range(65)]}}, "more than 262144 characters"),
        ({"$or": [{"f": {"$isubstring": f"needle {i}"}} for i in range(17)]}, "more than 16 text tests"),
        ({"$or": [{"content": {"$contains": f"needle {i}"}} for i in range(17)]}, "more than 16 text tests"),
        ({"content": {"$not_contains": "n" * 257}}, "looks for 257 characters; the limit is 256"),
        ({"f": {"$substring": "n" * 257}}, "looks for 257 characters; the limit is 256"),
    ],
)
def test_a_filter_past_its_work_limits_is_refused_up_front(where: dict[str, Any], says: str) -> None:
    with pytest.raises(InvalidInput, match=re.escape(says)):
        parse(where)
