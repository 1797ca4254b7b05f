"""PerseusVaultSaver: LangGraph's own conformance suite on both backends, then graphs as a user writes them
(a thread resumed from the reopened file, an interrupt resumed by a new process, async runs, create_agent
with the checkpointer and the store in one vault), scopes, storage per channel version, and bad input."""

from __future__ import annotations

import asyncio
import operator
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from perseus_vault_core import InvalidInput, StorageError, Vault
from perseus_vault_integrations.langchain import PerseusVaultSaver, PerseusVaultStore

pytestmark = pytest.mark.both_backends


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


# --- LangGraph's conformance suite ---------------------------------------------------------------


def test_langgraph_conformance_suite(vault_path: str | Path, backend: str, tmp_path: Path) -> None:
    """Every capability the saver offers passes langgraph-checkpoint-conformance; each suite gets a fresh
    saver: a new file on SQLite, a new scope in the one database on Postgres."""

    @checkpointer_test(name=f"PerseusVaultSaver-{backend}")
    async def saver() -> AsyncIterator[PerseusVaultSaver]:
        if backend == "postgres":
            with Vault(vault_path, embedder=False) as vault:
                yield PerseusVaultSaver(vault, workspace_hash=uuid.uuid4().hex)
        else:
            with PerseusVaultSaver.from_conn_string(str(tmp_path / f"{uuid.uuid4().hex}.db")) as made:
                yield made

    report = asyncio.run(validate(saver))
    failures = {name: result.failures for name, result in report.results.items() if result.failures}
    assert failures == {}
    assert report.passed_all_base()
    offered = {name for name, result in report.results.items() if result.detected}
    assert offered == {
        "put",
        "put_writes",
        "get_tuple",
        "list",
        "delete_thread",
        "delete_for_runs",
        "copy_thread",
    }
    assert sum(r.tests_passed for r in report.results.values()) >= 70


# --- graphs, as a user writes them -------------------------------------------------------------


class Tally(TypedDict):
    seen: Annotated[list[str], operator.add]


def tally_graph(saver: PerseusVaultSaver) -> Any:
    builder = StateGraph(Tally)
    builder.add_node("note", lambda state: {"seen": [f"step {len(state['seen']) + 1}"]})
    builder.add_edge(START, "note")
    builder.add_edge("note", END)
    return builder.compile(checkpointer=saver)


def _script(saver: Any) -> list[Any]:
    """Runs on two threads, a replay from an earlier state and a fork by update_state; what each step leaves."""
    graph = tally_graph(saver)
    out: list[Any] = [
        graph.invoke({"seen": ["hello"]}, thread("ada")),
        graph.invoke({"seen": ["again"]}, thread("ada")),
        graph.invoke({"seen": ["other"]}, thread("bob")),
    ]
    history = list(graph.get_state_history(thread("ada")))
    earlier = next(h for h in history if h.values.get("seen") == ["hello", "step 2"] and h.next)
    out.append(graph.invoke(None, earlier.config))  # time travel: replayed from there
    forked = graph.update_state(history[-1].config, {"seen": ["forked"]})
    out.append(graph.invoke(None, forked))
    for name in ("ada", "bob"):
        out.append(
            [
                (h.values, h.next, h.metadata["source"], h.metadata["step"])  # type: ignore[index]
                for h in graph.get_state_history(thread(name))
            ]
        )
    return out


def test_graphs_behave_as_with_langgraph_s_in_memory_saver(vault_path: str | Path) -> None:
    """The same script on InMemorySaver and on the vault gives the same states, histories and forks."""
    from langgraph.checkpoint.memory import InMemorySaver

    with Vault(vault_path, embedder=False) as vault:
        assert _script(PerseusVaultSaver(vault)) == _script(InMemorySaver())


def test_a_thread_resumes_from_the_reopened_vault(vault_path: str | Path) -> None:
    with PerseusVaultSaver.from_conn_string(str(vault_path)) as saver:
        graph = tally_graph(saver)
        graph.invoke({"seen": ["hello"]}, thread("ada"))
        graph.invoke({"seen": ["other"]}, thread("bob"))
    with PerseusVaultSaver.from_conn_string(str(vault_path)) as saver:  # a new process's saver
        graph = tally_graph(saver)
        assert graph.invoke({"seen": ["back"]}, thread("ada"))["seen"] == [
            "hello",
            "step 2",
            "back",
            "step 4",
        ]
        assert graph.get_state(thread("bob")).values["seen"] == ["other", "step 2"]
        assert len(list(graph.get_state_history(thread("ada")))) == 6  # per run: input, step, end


class Draft(TypedDict):
    text: str
    approved: bool


def review_graph(saver: PerseusVaultSaver) -> Any:
    def review(state: Draft) -> dict[str, Any]:
        answer = interrupt({"question": "publish this?", "text": state["text"]})
        return {"approved": answer == "yes"}

    builder = StateGraph(Draft)
    builder.add_node("review", review)
    builder.add_edge(START, "review")
    builder.add_edge("review", END)
    return builder.compile(checkpointer=saver)


def test_an_interrupted_run_is_resumed_by_a_new_process(vault_path: str | Path) -> None:
    with PerseusVaultSaver.from_conn_string(str(vault_path)) as saver:
        paused = review_graph(saver).invoke({"text": "release notes", "approved": False}, thread("review-1"))
        assert paused["__interrupt__"][0].value == {"question": "publish this?", "text": "release notes"}
    with PerseusVaultSaver.from_conn_string(str(vault_path)) as saver:
        graph = review_graph(saver)
        assert graph.get_state(thread("review-1")).next == ("review",)
        done = graph.invoke(Command(resume="yes"), thread("review-1"))
        assert done == {"text": "release notes", "approved": True}
        assert graph.get_state(thread("review-1")).next == ()


def test_async_runs_share_the_saver_with_sync_ones(vault_path: str | Path) -> None:
    async def main() -> list[str]:
        async with PerseusVaultSaver.from_conn_string(str(vault_path)) as saver:
            graph = tally_graph(saver)
            await asyncio.gather(*(graph.ainvoke({"seen": [f"t{i}"]}, thread(f"t{i}")) for i in range(4)))
            graph.invoke({"seen": ["sync"]}, thread("t0"))
            state = await graph.aget_state(thread("t0"))
            listed = [c async for c in saver.alist(thread("t1"))]
            assert len(listed) == 3
            return list(state.values["seen"])

    assert asyncio.run(main()) == ["t0", "step 2", "sync", "step 4"]


def test_create_agent_keeps_its_thread_and_its_memories_in_one_vault(
    vault_path: str | Path, real_embedder: Any
) -> None:
    """LangChain's agent loop with the checkpointer (the conversation) and the store (what it learned),
    both in one vault with the bundled model: a second turn on the thread sees the first; a new thread
    starts empty, yet finds the memory by meaning."""

    class ScriptedModel(GenericFakeChatModel):  # langchain-core's fake, replaying tool calls
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    @tool
    def remember(text: str, runtime: ToolRuntime) -> str:
        """Remember something about the user."""
        assert runtime.store is not None
        runtime.store.put(("users", "ada"), "drink", {"text": text})
        return "remembered"

    @tool
    def recall(query: str, runtime: ToolRuntime) -> str:
        """Recall what is known about the user."""
        assert runtime.store is not None
        return "; ".join(item.value["text"] for item in runtime.store.search(("users", "ada"), query=query))

    def agent(vault: Vault, *script: AIMessage) -> Any:
        model = ScriptedModel(messages=iter(script))
        return create_agent(
            model,
            tools=[remember, recall],
            checkpointer=PerseusVaultSaver(vault),
            store=PerseusVaultStore(vault, index={"fields": ["text"]}),
        )

    def call(name: str, args: dict[str, Any]) -> AIMessage:
        return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": uuid.uuid4().hex}])

    with Vault(vault_path, embedder=real_embedder) as vault:
        first = agent(
            vault, call("remember", {"text": "Ada drinks green tea without sugar"}), AIMessage("noted")
        )
        first.invoke(
            {"messages": [{"role": "user", "content": "I like green tea, no sugar"}]}, thread("chat-1")
        )
    with Vault(vault_path, embedder=real_embedder) as vault:
        second = agent(vault, AIMessage("You told me: green tea."))
        out = second.invoke({"messages": [{"role": "user", "content": "what did I say?"}]}, thread("chat-1"))
        assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai", "human", "ai"]
        assert out["messages"][0].content == "I like green tea, no sugar"
        third = agent(vault, call("recall", {"query": "hot beverage preference"}), AIMessage("tea"))
        out = third.invoke(
            {"messages": [{"role": "user", "content": "what should I drink?"}]}, thread("chat-2")
        )
        assert [m.content for m in out["messages"] if m.type == "tool"] == [
            "Ada drinks green tea without sugar"
        ]
        assert len(out["messages"]) == 4  # a new thread: none of chat-1's messages


# --- scope, storage, construction, bad input ----------------------------------------------------


def test_scopes_keep_their_threads_apart(vault_path: str | Path) -> None:
    with Vault(vault_path, embedder=False) as vault:
        alice, bob = PerseusVaultSaver(vault, agent_id="alice"), PerseusVaultSaver(vault, agent_id="bob")
        tally_graph(alice).invoke({"seen": ["a"]}, thread("shared-name"))
        assert bob.get_tuple(thread("shared-name")) is None
        assert list(bob.list(None)) == [] and len(list(alice.list(None))) == 3
        bob.delete_thread("shared-name")
        assert alice.get_tuple(thread("shared-name")) is not None


def test_an_unchanged_channel_is_stored_once(vault_path: str | Path) -> None:
    """A long value that does not change (here ``book``) is one blob, however many steps read it; the
    changing counter is one blob per step; deleting the runs that made them frees them."""

    class State(TypedDict):
        book: str
        n: int

    with Vault(vault_path, embedder=False) as vault:
        saver = PerseusVaultSaver(vault)
        builder = StateGraph(State)
        builder.add_node("count", lambda s: {"n": s["n"] + 1})
        builder.add_conditional_edges("count", lambda s: END if s["n"] >= 5 else "count")
        builder.add_edge(START, "count")
        graph = builder.compile(checkpointer=saver)
        run_id = str(uuid.uuid4())  # as LangGraph's server names its runs: in the config's metadata
        graph.invoke({"book": "x" * 100_000, "n": 0}, {**thread("t"), "metadata": {"run_id": run_id}})
        conn = vault.engine.conn()
        blobs = dict(
            conn.execute("SELECT channel, count(*) FROM checkpoint_blobs GROUP BY channel").fetchall()
        )
        assert blobs["book"] == 1 and blobs["n"] == 6
        assert conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 7
        assert {c.metadata["run_id"] for c in saver.list(thread("t"))} == {run_id}
        saver.delete_for_runs([run_id])
        assert conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM checkpoint_blobs").fetchone()[0] == 0
        assert vault.stats().entities == 0  # checkpoints are not memories


def test_made_from_a_path_or_a_vault(tmp_path: Path) -> None:
    path = tmp_path / "saver.db"
    saver = PerseusVaultSaver(path)
    tally_graph(saver).invoke({"seen": ["x"]}, thread("t"))
    saver.setup()  # LangGraph's savers ask for it; the vault made its tables when it opened
    saver.close()
    with pytest.raises(StorageError, match="closed"):
        saver.get_tuple(thread("t"))
    with Vault(path, embedder=False) as vault:
        with PerseusVaultSaver(vault) as kept:
            assert kept.get_tuple(thread("t")) is not None
        assert vault.stats().entities == 0  # still open after the saver's block
    with pytest.raises(
        InvalidInput, match="serd: is not an argument of PerseusVaultSaver; did you mean 'serde'"
    ):
        PerseusVaultSaver(tmp_path / "never.db", serd=None)  # type: ignore[call-arg]
    with pytest.raises(InvalidInput, match="conn_string"):
        PerseusVaultSaver.from_conn_string(42)  # type: ignore[arg-type]
    assert not (tmp_path / "never.db").exists()


def test_bad_input_is_refused_and_changes_nothing(vault_path: str | Path) -> None:
    from langgraph.checkpoint.base import empty_checkpoint

    with Vault(vault_path, embedder=False) as vault:
        saver = PerseusVaultSaver(vault)
        with pytest.raises(InvalidInput, match="thread_id: is required"):
            saver.put({"configurable": {}}, empty_checkpoint(), {}, {})
        with pytest.raises(InvalidInput, match="config: must be a RunnableConfig"):
            saver.get_tuple({})  # type: ignore[typeddict-item]
        with pytest.raises(InvalidInput, match="metadata: must be JSON"):
            saver.put(
                {"configurable": {"thread_id": "t", "checkpoint_ns": ""}},
                empty_checkpoint(),
                {"source": "input", "step": -1, "parents": {}, "bad": {1, 2}},
                {},
            )  # type: ignore[typeddict-unknown-key]
        with pytest.raises(InvalidInput, match="checkpoint_id: is required"):
            saver.put_writes(thread("t"), [("ch", 1)], "task")
        with pytest.raises(InvalidInput, match="limit"):
            list(saver.list(None, limit=-1))
        assert list(saver.list(None)) == []
        assert vault.engine.conn().execute("SELECT count(*) FROM checkpoint_blobs").fetchone()[0] == 0
