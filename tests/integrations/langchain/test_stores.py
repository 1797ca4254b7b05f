"""PerseusVaultStore: op-for-op against LangGraph's InMemoryStore on seeded random sequences, then
query search by meaning, TTL, async, persistence, bad input, and a LangGraph graph using it."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from perseus_vault_core import InvalidInput, StorageError, Vault
from perseus_vault_integrations.langchain import PerseusVaultStore
from perseus_vault_integrations.langchain.stores import matches

from ...conftest import Clock, FakeEmbedder

NAMESPACES = [
    ("a",),
    ("a", "b"),
    ("a", "c"),
    ("b",),
    ("a", "b", "c"),
    ("users", "u1", "memories"),
    ("x/y", "z z"),
]
KEYS = ["k0", "k1", "k2", "k3", "key with spaces", "ключ"]
FILTERS: list[dict[str, Any] | None] = [
    None,
    {"tag": "x"},
    {"n": {"$gt": 2}},
    {"n": {"$gte": 1, "$lt": 4}},
    {"nested": {"m": 1}},
    {"tag": {"$ne": "x"}},
    {"n": {"$eq": 3}},
    {"n": {"$lte": 2}, "tag": "y"},
    {"list": [1, 2]},
    {"missing": 1},
    # where the vault's typed where and LangGraph's Python semantics part: the pushdown keeps a superset
    # (InMemoryStore raises on an order over a missing or non-numeric field: those are tested apart)
    {"n": True},
    {"n": 1.0},
    {"flag": 1},
    {"flag": True},
    {"n": {"$gt": "2"}},
    {"n": {"$lte": True}},
    {"s": "3"},
    {"s": 3},
    {"list": [1]},
    {"list": 1},
    {"list": {"$ne": 1}},
    {"nested": {"m": {"$gte": 1}}},
    {"s": None},
]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[PerseusVaultStore]:
    with Vault(tmp_path / "store.db", embedder=False, synchronous="NORMAL") as vault:
        yield PerseusVaultStore(vault)


def random_value(rng: random.Random) -> dict[str, Any]:
    value: dict[str, Any] = {
        "n": rng.randint(0, 5),
        "tag": rng.choice(["x", "y"]),
        "nested": {"m": rng.randint(0, 2)},
    }
    if rng.random() < 0.3:
        value["list"] = rng.choice([[1, 2], [2, 1], [1], 1, [True]])
    if rng.random() < 0.4:
        value["s"] = rng.choice(["3", "5", "abc", 3, True, None, [3]])
    if rng.random() < 0.3:
        value["flag"] = rng.choice([True, False, 1, 0, 1.0])
    if rng.random() < 0.2:
        value["n"] = rng.choice([True, 1.0, "2"])
    if rng.random() < 0.2:
        value["text"] = rng.choice(["likes tea", "prefers dark mode", "ключ и замок"])
    return value


def random_op(rng: random.Random) -> Op:
    kind = rng.choices(["put", "delete", "get", "search", "list"], weights=[5, 2, 2, 3, 2])[0]
    ns = rng.choice(NAMESPACES)
    if kind == "put":
        return PutOp(ns, rng.choice(KEYS), random_value(rng))
    if kind == "delete":
        return PutOp(ns, rng.choice(KEYS), None)
    if kind == "get":
        return GetOp(ns, rng.choice(KEYS))
    if kind == "search":
        prefix = ns[: rng.randint(0, len(ns))]
        return SearchOp(prefix, rng.choice(FILTERS), rng.choice([1, 2, 3, 10, 100]), rng.choice([0, 0, 1, 3]))
    conditions = []
    if rng.random() < 0.5:
        conditions.append(
            MatchCondition("prefix", tuple(rng.choice(["a", "*"]) for _ in range(rng.randint(1, 2))))
        )
    if rng.random() < 0.4:
        conditions.append(MatchCondition("suffix", (rng.choice(["b", "c", "memories", "*"]),)))
    return ListNamespacesOp(
        tuple(conditions), rng.choice([None, 1, 2]), rng.choice([1, 2, 100]), rng.choice([0, 0, 1])
    )


def same_item(ours: Item | None, theirs: Item | None) -> bool:
    if ours is None or theirs is None:
        return ours is theirs
    return (ours.namespace, ours.key, ours.value) == (theirs.namespace, theirs.key, theirs.value)


def address(item: Item) -> tuple[tuple[str, ...], str]:
    return item.namespace, item.key


def prune(reference: InMemoryStore) -> None:
    """InMemoryStore keeps a namespace once anything touched it (a get, or a delete of its last
    item) and lists it; namespaces with no item are not namespaces of stored items, so drop them."""
    for ns in [ns for ns, items in reference._data.items() if not items]:
        del reference._data[ns]


def check_search(
    op: SearchOp, ours: list[Any], theirs: list[Any], all_ours: list[Any], all_theirs: list[Any]
) -> None:
    """``all_*``: the same search unpaged, answered in the same batch (so before its writes)."""
    assert len(ours) == len(theirs), op
    assert all(o.score is None for o in ours)
    assert {address(i): i.value for i in all_ours} == {address(i): i.value for i in all_theirs}, op
    if len({item.namespace for item in all_ours}) <= 1:
        # One namespace: both keep the order items were first put, so pages agree exactly.
        assert [(address(o), o.value) for o in ours] == [(address(t), t.value) for t in theirs], op
    else:
        # Across namespaces every item ties (no query, no score): the page holds matches, in any order.
        assert {address(o) for o in ours} <= {address(i) for i in all_ours}, op


def run_sequence(store: PerseusVaultStore, seed: int, steps: int) -> int:
    rng = random.Random(seed)
    reference = InMemoryStore()
    compared = 0
    for _ in range(steps):
        ops = [random_op(rng) for _ in range(rng.choice([1, 1, 1, 3]))]  # some calls are mixed batches
        unpaged = [
            SearchOp(op.namespace_prefix, op.filter, 10_000, 0) for op in ops if isinstance(op, SearchOp)
        ]
        prune(reference)
        ours = store.batch(ops + unpaged)
        theirs = reference.batch(ops + unpaged)
        full = iter(zip(ours[len(ops) :], theirs[len(ops) :]))
        for op, mine, expected in zip(ops, ours, theirs):
            if isinstance(op, GetOp):
                assert same_item(mine, expected), op
            elif isinstance(op, SearchOp):
                check_search(op, mine, expected, *next(full))
            elif isinstance(op, ListNamespacesOp):
                assert mine == expected, op
            else:
                assert mine is None and expected is None
            compared += 1
    return compared


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_op_for_op_against_in_memory_store(store: PerseusVaultStore, seed: int) -> None:
    assert run_sequence(store, seed, steps=120) > 120


def test_the_public_methods_agree_too(store: PerseusVaultStore) -> None:
    reference = InMemoryStore()
    for s in (store, reference):
        s.put(("docs", "u1"), "a", {"n": 1, "tag": "x"})
        s.put(("docs", "u1"), "b", {"n": 5, "tag": "y"})
        s.put(("docs", "u2"), "c", {"n": 3, "tag": "x"})
        s.put(("docs", "u1"), "a", {"n": 2, "tag": "x"})  # an update keeps its place
        s.delete(("docs", "u1"), "b")
        s.put(("docs", "u1"), "b", {"n": 4, "tag": "y"})  # a re-put goes last
    for prefix, kwargs in [
        (("docs", "u1"), {}),
        (("docs", "u1"), {"offset": 1}),
        (("docs",), {"filter": {"tag": "x"}}),
    ]:
        ours = [(i.key, i.value) for i in store.search(prefix, **kwargs)]
        theirs = [(i.key, i.value) for i in reference.search(prefix, **kwargs)]
        assert ours == theirs
    assert store.list_namespaces(prefix=("docs",)) == reference.list_namespaces(prefix=("docs",))
    assert store.list_namespaces(max_depth=1) == [("docs",)]
    got = store.get(("docs", "u1"), "a")
    assert got is not None and got.value == {"n": 2, "tag": "x"} and got.created_at <= got.updated_at


def test_filters_follow_langgraph_semantics() -> None:
    value = {"n": 3, "s": "abc", "nested": {"m": 1, "k": [1, 2]}, "flag": True}
    assert matches(value, {"n": 3}) and not matches(value, {"n": 4})
    assert matches(value, {"n": {"$gt": 2, "$lte": 3}}) and not matches(value, {"n": {"$lt": 3}})
    assert matches(value, {"n": {"$ne": 4}}) and matches(value, {"nested": {"m": 1}})
    assert matches(value, {"nested": {"k": [1, 2]}}) and not matches(value, {"nested": {"k": [2, 1]}})
    assert not matches(value, {"missing": {"$gt": 1}})  # a missing field compares false, never raises
    assert not matches(value, {"s": {"$gt": 1}})
    with pytest.raises(InvalidInput) as err:
        matches(value, {"n": {"$regex": "3"}})
    assert err.value.field == "filter"


def test_filters_are_asked_of_the_vault(store: PerseusVaultStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The filter narrows the vault's own query (its where), so a page is never cut before filtering."""
    from perseus_vault_integrations.langchain.stores import pushdown

    for i in range(30):
        store.put(("docs",), f"k{i}", {"n": i, "tag": "x" if i % 10 == 3 else "y"})
    asked: list[Any] = []
    scan = store.vault.scan
    monkeypatch.setattr(store.vault, "scan", lambda **kw: asked.append(kw.get("where")) or scan(**kw))
    assert [i.key for i in store.search(("docs",), filter={"tag": "x"})] == ["k3", "k13", "k23"]
    assert asked[0] == {"value.tag": {"$in": ["x"]}}
    assert pushdown({"n": {"$gt": 2, "$ne": 5}, "nested": {"m": 1}}) == {
        "$and": [
            {
                "$or": [
                    {"value.n": {"$gt": 2.0}},
                    {"value.n": {"$gte": ""}},
                    {"value.n": {"$in": [True, False]}},
                ]
            },
            {"value.nested.m": {"$in": [1, True]}},
        ]
    }
    assert pushdown({"a.b": 1, "$x": 2}) is None  # names the vault cannot address: the exact check alone


def test_query_search_goes_through_the_vault(tmp_path: Path) -> None:
    with Vault(tmp_path / "dense.db", embedder=FakeEmbedder()) as vault:
        store = PerseusVaultStore(vault, index={"dims": 64, "fields": ["text"]})
        store.put(("mem", "ada"), "1", {"text": "Ada drinks green tea every morning", "kind": "habit"})
        store.put(("mem", "ada"), "2", {"text": "Ada works on the storage engine", "kind": "work"})
        store.put(("mem", "bob"), "3", {"text": "Bob drinks black tea", "kind": "habit"})
        store.put(("mem", "ada"), "4", {"text": "tea tea tea", "kind": "note"}, index=False)
        hits = store.search(("mem", "ada"), query="which tea does Ada drink")
        assert [h.key for h in hits][:2] == ["1", "2"]
        assert hits[0].score is not None and hits[0].score >= (hits[1].score or 0)
        assert hits[-1].key == "4" and hits[-1].score is None  # unindexed: after the hits, unscored
        assert [h.key for h in store.search(("mem",), query="tea", filter={"kind": "habit"})] == [
            "1",
            "3",
        ] or [h.key for h in store.search(("mem",), query="tea", filter={"kind": "habit"})] == ["3", "1"]
        assert [h.key for h in store.search(("mem",), query="storage engine", limit=1)] == ["2"]
        assert (
            store.search(("mem", "ada"), query="tea", limit=1, offset=1)[0].key
            != store.search(("mem", "ada"), query="tea", limit=1)[0].key
        )
        # the vault sees the items as memories too
        assert vault.recall("storage engine", category="langgraph", limit=1).items[0].body["key"] == "2"


def test_query_search_by_meaning_with_the_bundled_model(tmp_path: Path, real_embedder: Any) -> None:
    with Vault(tmp_path / "real.db", embedder=real_embedder) as vault:
        store = PerseusVaultStore(vault, index={"dims": 384, "fields": ["memory"]})
        store.put(("users", "ada"), "pets", {"memory": "Ada has two cats called Pixel and Vector"})
        store.put(("users", "ada"), "job", {"memory": "Ada maintains the billing service"})
        store.put(("users", "ada"), "food", {"memory": "Ada is vegetarian"})
        # No word in common with the memories: meaning alone finds them.
        assert store.search(("users", "ada"), query="pets at home", limit=1)[0].key == "pets"
        assert (
            store.search(("users", "ada"), query="which payments system does she look after")[0].key == "job"
        )


def test_index_dims_must_match_the_embedder(tmp_path: Path) -> None:
    with Vault(tmp_path / "dims.db", embedder=FakeEmbedder()) as vault:
        with pytest.raises(InvalidInput) as err:
            PerseusVaultStore(vault, index={"dims": 384})
        assert err.value.field == "index.dims"
        with pytest.raises(InvalidInput) as err:
            PerseusVaultStore(vault, index={"embed": FakeEmbedder})  # type: ignore[typeddict-item]
        assert err.value.field == "index.embed"


def test_a_path_and_a_langchain_embeddings(tmp_path: Path) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    store = PerseusVaultStore(
        tmp_path / "own.db", index={"dims": 8, "embed": DeterministicFakeEmbedding(size=8)}
    )
    store.put(("n",), "k", {"text": "hello"})
    assert store.search(("n",), query="hello")[0].key == "k"
    assert store.vault.stats().embedding_model == "langchain:DeterministicFakeEmbedding:8"
    store.close()


def test_ttl_uses_the_vault_expiry_and_reads_refresh_it(tmp_path: Path, clock: Clock) -> None:
    with Vault(tmp_path / "ttl.db", clock=clock, embedder=False) as vault:
        store = PerseusVaultStore(vault, clock=clock, ttl={"refresh_on_read": True})
        store.put(("s",), "short", {"v": 1}, ttl=1)
        store.put(("s",), "kept", {"v": 2})
        clock.advance(45_000)
        assert store.get(("s",), "short") is not None  # read at 45 s: expiry moves to 1 min 45 s
        clock.advance(45_000)
        assert store.get(("s",), "short", refresh_ttl=False) is not None
        clock.advance(30_000)  # 2 min: past the refreshed expiry
        assert store.get(("s",), "short") is None
        assert [i.key for i in store.search(("s",))] == ["kept"]
        store.put(("gone",), "x", {"v": 3}, ttl=0.5)
        clock.advance(31_000)
        assert store.list_namespaces() == [("s",)]
        with pytest.raises(InvalidInput):
            store.put(("s",), "bad", {"v": 1}, ttl=-1)


def test_items_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "persist.db"
    with Vault(path, embedder=False) as vault:
        PerseusVaultStore(vault).put(("prefs", "ada"), "theme", {"mode": "dark"})
    with Vault(path, embedder=False) as vault:
        item = PerseusVaultStore(vault).get(("prefs", "ada"), "theme")
        assert item is not None and item.value == {"mode": "dark"}


def test_scopes_and_categories_do_not_mix(tmp_path: Path) -> None:
    with Vault(tmp_path / "scoped.db", embedder=False) as vault:
        alice = PerseusVaultStore(vault, agent_id="alice")
        bob = PerseusVaultStore(vault, agent_id="bob")
        shared = PerseusVaultStore(vault)
        alice.put(("m",), "k", {"who": "alice"})
        bob.put(("m",), "k", {"who": "bob"})
        assert alice.get(("m",), "k").value == {"who": "alice"}  # type: ignore[union-attr]
        assert bob.get(("m",), "k").value == {"who": "bob"}  # type: ignore[union-attr]
        assert (
            shared.get(("m",), "k") is None and shared.search(("m",)) == [] and shared.list_namespaces() == []
        )
        vault.remember(category="note", key="k", content="not a store item")
        assert len(alice.search(())) == 1


@pytest.mark.asyncio
async def test_async_batch(store: PerseusVaultStore) -> None:
    await store.aput(("a",), "k", {"v": 1})
    assert (await store.aget(("a",), "k")).value == {"v": 1}  # type: ignore[union-attr]
    assert [i.key for i in await store.asearch(("a",))] == ["k"]
    assert await store.alist_namespaces() == [("a",)]
    await store.adelete(("a",), "k")
    assert await store.aget(("a",), "k") is None


def test_bad_input_is_refused_and_changes_nothing(store: PerseusVaultStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("ok", "a.b"), "k", {"v": 1})])  # straight to batch: still checked
    with pytest.raises(InvalidInput) as err:
        store.put(("a",), "k", {"v": object()})
    assert err.value.field == "value"
    with pytest.raises(InvalidInput):
        store.search(("a",), filter={"v": {"$like": 1}})
    assert store.search(()) == [] and store.list_namespaces() == []


def test_a_langgraph_graph_remembers_across_threads(store: PerseusVaultStore) -> None:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.store.base import BaseStore

    class State(TypedDict):
        user: str
        fact: str
        known: list[str]

    def remember_and_recall(state: State, *, store: BaseStore) -> dict[str, Any]:
        ns = ("users", state["user"], "facts")
        if state["fact"]:
            store.put(ns, str(len(store.search(ns)) + 1), {"fact": state["fact"]})
        return {"known": [item.value["fact"] for item in store.search(ns)]}

    builder = StateGraph(State)
    builder.add_node("memory", remember_and_recall)
    builder.add_edge(START, "memory")
    builder.add_edge("memory", END)
    graph = builder.compile(store=store)
    graph.invoke({"user": "ada", "fact": "likes tea", "known": []})
    graph.invoke({"user": "bob", "fact": "likes coffee", "known": []})
    out = graph.invoke({"user": "ada", "fact": "", "known": []})
    assert out["known"] == ["likes tea"]
    assert store.list_namespaces(prefix=("users",)) == [("users", "ada", "facts"), ("users", "bob", "facts")]


def test_ops_run_in_a_worker_thread_for_async(store: PerseusVaultStore) -> None:
    async def main() -> int:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            for _ in range(5):
                await asyncio.sleep(0)
                ticks += 1

        await asyncio.gather(store.abatch([PutOp(("t",), str(i), {"i": i}) for i in range(30)]), ticker())
        return ticks

    assert asyncio.run(main()) == 5
    assert len(store.search(("t",), limit=100)) == 30


def test_create_agent_keeps_long_term_memory_in_the_vault(tmp_path: Path) -> None:
    """LangChain's own agent loop, with the vault as its store: a tool writes a memory through the
    runtime's store, and a new agent on the reopened file reads it back."""

    class ScriptedModel(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:  # the script already names the tool calls
            return self

    @tool
    def save_preference(text: str, runtime: ToolRuntime) -> str:
        """Save one of the user's preferences."""
        assert runtime.store is not None
        runtime.store.put(("users", "ada", "preferences"), "drink", {"text": text})
        return "saved"

    @tool
    def read_preference(runtime: ToolRuntime) -> str:
        """Read the user's drink preference."""
        assert runtime.store is not None
        item = runtime.store.get(("users", "ada", "preferences"), "drink")
        return item.value["text"] if item else "nothing stored"

    def agent(store: PerseusVaultStore, tool_name: str, args: dict[str, Any]) -> Any:
        model = ScriptedModel(
            messages=iter(
                [
                    AIMessage(content="", tool_calls=[{"name": tool_name, "args": args, "id": "call-1"}]),
                    AIMessage(content="done"),
                ]
            )
        )
        return create_agent(model, tools=[save_preference, read_preference], store=store)

    path = tmp_path / "agent.db"
    with Vault(path, embedder=False) as vault:
        out = agent(PerseusVaultStore(vault), "save_preference", {"text": "green tea, no sugar"}).invoke(
            {"messages": [{"role": "user", "content": "I like green tea without sugar"}]}
        )
        assert out["messages"][-1].content == "done"
    with Vault(path, embedder=False) as vault:
        out = agent(PerseusVaultStore(vault), "read_preference", {}).invoke(
            {"messages": [{"role": "user", "content": "what do I drink?"}]}
        )
        tool_answers = [m.content for m in out["messages"] if m.type == "tool"]
        assert tool_answers == ["green tea, no sugar"]


def test_from_conn_string_opens_and_closes_the_vault_as_langgraphs_stores_do(tmp_path: Path) -> None:
    """SqliteStore / PostgresStore's form: ``with X.from_conn_string(...) as store: store.setup(); ...``."""
    path = tmp_path / "store.db"
    with PerseusVaultStore.from_conn_string(str(path)) as store:
        store.setup()
        store.put(("users", "alice"), "prefs", {"theme": "dark"})
    with pytest.raises(StorageError, match="closed"):  # the vault it opened is closed on leaving the block
        store.get(("users", "alice"), "prefs")
    with PerseusVaultStore.from_conn_string(path) as again:  # a PathLike too
        item = again.get(("users", "alice"), "prefs")
        assert item is not None and item.value == {"theme": "dark"}

    async def in_async() -> dict[str, Any]:
        async with PerseusVaultStore.from_conn_string(str(path)) as store:
            found = await store.aget(("users", "alice"), "prefs")
            assert found is not None
            return found.value

    assert asyncio.run(in_async()) == {"theme": "dark"}
    for bad in (None, "", 5):
        with pytest.raises(InvalidInput, match="conn_string"):
            PerseusVaultStore.from_conn_string(bad)  # type: ignore[arg-type]
