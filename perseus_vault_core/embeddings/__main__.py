"""``python -m perseus_vault_core.embeddings``: write the bundled model's ONNX graph into the package
(``make setup`` runs it in a checkout; the graph is built, not kept in git). :mod:`.graph` says how it is
built, :func:`.minilm.write_graph` where it goes and how it is checked."""

from __future__ import annotations

from .minilm import GRAPH, GRAPH_SHA256, _sha256, write_graph


def main() -> None:
    """Write the graph unless the package holds it already, byte for byte (an older one is replaced)."""
    if GRAPH.exists() and _sha256(GRAPH) == GRAPH_SHA256:
        print(f"{GRAPH} is up to date (sha256 {GRAPH_SHA256})")
        return
    path = write_graph(GRAPH)
    print(f"wrote {path} ({path.stat().st_size:,} bytes), sha256 {GRAPH_SHA256}")


if __name__ == "__main__":
    main()
