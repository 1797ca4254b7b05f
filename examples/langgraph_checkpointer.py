"""A LangChain agent whose conversation and long-term memory both live in one vault file.

``create_agent`` gets the vault twice: as its checkpointer (PerseusVaultSaver: every step of every
thread, so a conversation resumes where it stopped, in this process or the next) and as its store
(PerseusVaultStore: what the agent chose to remember about the user, searched by meaning with the
bundled model). langchain-core's scripted fake model stands in for a real one, so this runs offline.

    python examples/langgraph_checkpointer.py
"""

import tempfile
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from perseus_vault_core import Vault
from perseus_vault_integrations.langchain import PerseusVaultSaver, PerseusVaultStore

path = Path(tempfile.mkdtemp()) / "agent.db"


class ScriptedModel(GenericFakeChatModel):
    """langchain-core's fake chat model, replaying a script that includes tool calls."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


@tool
def remember(text: str, runtime: ToolRuntime) -> str:
    """Remember something about the user for later conversations."""
    assert runtime.store is not None
    runtime.store.put(("users", "ada"), "drink", {"text": text})
    return "remembered"


@tool
def recall(query: str, runtime: ToolRuntime) -> str:
    """Recall what is known about the user."""
    assert runtime.store is not None
    return "; ".join(
        item.value["text"] for item in runtime.store.search(("users", "ada"), query=query, limit=3)
    )


def agent(vault: Vault, *script: AIMessage) -> Any:
    return create_agent(
        ScriptedModel(messages=iter(script)),
        tools=[remember, recall],
        checkpointer=PerseusVaultSaver(vault),  # the conversation
        store=PerseusVaultStore(vault, index={"fields": ["text"]}),
    )  # what it learned


def call(name: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call-{name}"}])


thread = {"configurable": {"thread_id": "ada-chat"}}
with Vault(path) as vault:  # the bundled model, for the store's search by meaning
    first = agent(vault, call("remember", text="Ada drinks green tea, no sugar"), AIMessage("Noted!"))
    first.invoke({"messages": [{"role": "user", "content": "I only drink green tea, no sugar."}]}, thread)

# Another process: the same thread continues, and a new thread still finds the memory.
with Vault(path) as vault:
    second = agent(vault, AIMessage("You said green tea, no sugar."))
    out = second.invoke({"messages": [{"role": "user", "content": "What did I tell you earlier?"}]}, thread)
    print("thread ada-chat:", [f"{m.type}: {m.content}" for m in out["messages"] if m.content])
    third = agent(vault, call("recall", query="hot beverage preferences"), AIMessage("Green tea it is."))
    out = third.invoke(
        {"messages": [{"role": "user", "content": "Order me a drink."}]},
        {"configurable": {"thread_id": "new-chat"}},
    )
    print("thread new-chat, recalled:", [m.content for m in out["messages"] if m.type == "tool"])
    saver = PerseusVaultSaver(vault)
    print(
        "checkpoints of ada-chat:",
        len(list(saver.list({"configurable": {"thread_id": "ada-chat"}}))),
        "| memories:",
        vault.stats().entities,
    )
