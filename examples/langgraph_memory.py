"""A LangGraph agent with long-term memory in the vault (PerseusVaultStore).

Each turn the agent recalls what it knows about the user (semantic search through the vault),
answers with a chat model (langchain-core's scripted fake, so this runs offline), and stores what
the user told it. Memories outlive the process: a second store on the same file still knows them.

    python examples/langgraph_memory.py
"""

import tempfile
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, SystemMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.store.base import BaseStore

from perseus_vault_integrations.langchain import PerseusVaultStore

path = Path(tempfile.mkdtemp()) / "agent.db"
model = GenericFakeChatModel(
    messages=iter(
        [
            AIMessage("Noted: you like green tea."),
            AIMessage("Noted: you work on the billing service."),
            AIMessage("You like green tea, so tea it is."),
        ]
    )
)


def agent(state: MessagesState, *, store: BaseStore) -> dict[str, Any]:
    user = ("users", "ada", "memories")
    said = str(state["messages"][-1].content)
    known = store.search(user, query=said, limit=3)
    notes = "\n".join(f"- {item.value['text']}" for item in known)
    reply = model.invoke(
        [SystemMessage(f"What you know about the user:\n{notes or '(nothing yet)'}"), *state["messages"]]
    )
    if said.lower().startswith(("i ", "my ")):
        store.put(user, str(len(store.search(user, limit=1000)) + 1), {"text": said})
    print(f"user: {said}\n  recalled: {[item.value['text'] for item in known]}\n  agent: {reply.content}")
    return {"messages": [reply]}


builder = StateGraph(MessagesState)
builder.add_node("agent", agent)
builder.add_edge(START, "agent")
builder.add_edge("agent", END)

store = PerseusVaultStore(path, index={"fields": ["text"]})  # opens the vault with its bundled model
graph = builder.compile(store=store)
for turn in ["I like green tea", "I work on the billing service"]:
    graph.invoke({"messages": [("user", turn)]})
store.close()

# A new process, a new store on the same file: the memories are still there.
store = PerseusVaultStore(path, index={"fields": ["text"]})
graph = builder.compile(store=store)
graph.invoke({"messages": [("user", "what drink should I order")]})
print("namespaces:", store.list_namespaces())
store.close()
