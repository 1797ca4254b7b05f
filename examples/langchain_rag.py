"""A small RAG chain (LCEL) over the vault: retriever -> prompt -> chat model -> text.

The chat model is langchain-core's fake (it answers from a script), so this runs offline; put any
real chat model in its place. The vault embeds with its bundled model.

    python examples/langchain_rag.py
"""

import tempfile
from pathlib import Path

from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from perseus_vault_core import Vault
from perseus_vault_integrations.langchain import PerseusVaultRetriever, PerseusVaultVectorStore

with Vault(Path(tempfile.mkdtemp()) / "rag.db") as vault:  # the bundled all-MiniLM-L6-v2, offline
    vault.remember(
        "decision", "storage", "We chose SQLite in WAL mode for the vault.", topic_path="architecture"
    )
    vault.remember("decision", "queue", "Background jobs run on a Redis queue.", topic_path="architecture")
    vault.remember(
        "incident", "OPS-311", "Lock contention took the service down; fixed in src/store/lock.py."
    )
    vault.remember("note", "lunch", "Team lunch is on Fridays.")

    retriever = PerseusVaultRetriever(vault=vault, k=2, mode="hybrid", topic_path="architecture")
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from the context only.\n\nContext:\n{context}"), ("human", "{question}")]
    )
    model = GenericFakeChatModel(messages=iter([AIMessage("The vault keeps its data in SQLite (WAL mode).")]))

    def context(docs: list[Document]) -> str:
        return "\n".join(f"- [{d.metadata['key']}] {d.page_content}" for d in docs)

    chain = (
        {"context": retriever | RunnableLambda(context), "question": RunnablePassthrough()}
        | prompt
        | model
        | StrOutputParser()
    )
    question = "which database engine do we store data in"
    print(
        "retrieved:", [(d.metadata["key"], round(d.metadata["score"], 3)) for d in retriever.invoke(question)]
    )
    print("prompt the model saw:")
    print(
        (({"context": retriever | RunnableLambda(context), "question": RunnablePassthrough()}) | prompt)
        .invoke(question)
        .to_string()
    )
    print("answer:", chain.invoke(question))

    # The same memories behind a VectorStore, for chains written against as_retriever().
    store = PerseusVaultVectorStore(vault, collection="docs")
    store.add_texts(
        ["Deploys go out on Tuesdays.", "Rollbacks need two approvals."], ids=["deploys", "rollbacks"]
    )
    print(
        "vector store:", [d.id for d in store.as_retriever(search_kwargs={"k": 1}).invoke("when do we ship")]
    )
