"""Link memories and walk the graph: follow a decision to its evidence.

python examples/graph_walk.py
"""

import tempfile
from pathlib import Path

from perseus_vault_core import Vault

with Vault(Path(tempfile.mkdtemp()) / "graph.db") as vault:
    decision = vault.remember("decision", "db-engine", "We chose SQLite in WAL mode.")
    bench = vault.remember("evidence", "bench-7", "Benchmark: WAL gives 3x read throughput under load.")
    incident = vault.remember("incident", "OPS-90", "Lock contention outage on the old rollback journal.")
    owner = vault.remember("person", "alice", "Alice owns the storage layer.")
    vault.link(decision.id, bench.id, "supported_by", weight=0.9)
    vault.link(bench.id, incident.id, "motivated_by")
    vault.link(owner.id, decision.id, "decided")

    walk = vault.traverse(decision.id, depth=2, direction="both")
    for node in walk.nodes:
        print(f"depth {node.depth}: {node.entity.category}/{node.entity.key}  path={node.path}")
    print("edges:", [(e.from_id, e.relation, e.to_id) for e in walk.edges])
    assert {n.entity.key for n in walk.nodes} == {"db-engine", "bench-7", "OPS-90", "alice"}
    only_out = vault.traverse(decision.id, depth=2, direction="out", relations=["supported_by"])
    print("evidence only:", [n.entity.key for n in only_out.nodes])
