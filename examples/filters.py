"""Filters on what memories hold: recall, scan and prepare with a where over body fields.

python examples/filters.py
"""

import tempfile
from pathlib import Path

from perseus_vault_core import InvalidInput, Vault

with Vault(Path(tempfile.mkdtemp()) / "filters.db") as vault:  # the bundled model: dense and hybrid too
    vault.remember_many(
        [
            {
                "category": "incident",
                "key": "inc-1",
                "content": "Checkout latency spiked after the cache deploy.",
                "body": {"team": "payments", "prio": 1, "tags": ["latency", "cache"]},
            },
            {
                "category": "incident",
                "key": "inc-2",
                "content": "Invoices queue stalled during the nightly deploy.",
                "body": {"team": "billing", "prio": 3, "tags": ["queue"]},
            },
            {
                "category": "incident",
                "key": "inc-3",
                "content": "Ledger export failed after the schema deploy.",
                "body": {"team": "billing", "prio": 2, "tags": ["schema", "urgent"]},
            },
            {
                "category": "decision",
                "key": "dec-1",
                "content": "Deploys to billing wait for the freeze to end.",
                "body": {"team": "billing"},
                "type": "decision",
            },
        ]
    )
    vault.remember_conversation(
        "standup", [{"speaker": "Ann", "text": "The billing deploy broke the ledger export again."}]
    )

    billing = {"team": "billing", "prio": {"$gte": 2}}
    # (A word nearly every memory here holds, like "deploy", is no match on its own: recall's min_score.)
    for mode in ("fts5", "dense", "hybrid"):
        keys = [
            i.key for i in vault.recall("which deploys stalled or failed", mode=mode, where=billing).items
        ]
        print(f"{mode:6s} billing, prio >= 2:", keys)
        assert sorted(keys) == ["inc-2", "inc-3"]

    urgent = vault.scan(where={"tags": "urgent"}).items  # a list holds a value when one element is it
    print("tagged urgent:", [e.key for e in urgent])
    untriaged = vault.recall("", where={"category": "incident", "prio": {"$lt": 2}}).items
    print("incidents below prio 2:", [e.key for e in untriaged])

    everything = [i.category for i in vault.recall("billing deploy ledger").items]
    no_turns = [
        i.category
        for i in vault.recall(
            "billing deploy ledger", where={"type": {"$nin": ["turn", "community_summary"]}}
        ).items
    ]
    print("with turns:", everything, "\nwithout:", no_turns)
    assert "conversation" in everything and "conversation" not in no_turns

    block = vault.prepare("I am about to deploy billing", where={"team": "billing"}).markdown
    print(block)
    try:
        vault.recall("deploy", where={"prio": {"$regex": "^2"}})
    except InvalidInput as refused:
        print("refused:", refused)
