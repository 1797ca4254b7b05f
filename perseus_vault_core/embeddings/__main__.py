"""``python -m perseus_vault_core.embeddings``: write the bundled model's ONNX graph into the package
(``make setup`` runs it in a checkout; the graph is built, not kept in git). :mod:`.onnx_graph` says how it is
built, :func:`.minilm.write_graph` where it goes and how it is checked."""

from __future__ import annotations

from ..contract.errors import SetupError
from .minilm import GRAPH, GRAPH_SHA256, verify_graph, write_graph


def main() -> None:
    """Write the graph unless the package holds it already, byte for byte (a missing, older or damaged one
    is written)."""
    try:
        verify_graph(GRAPH)
    except SetupError:
        path = write_graph(GRAPH)
        print(f"wrote {path} ({path.stat().st_size:,} bytes), sha256 {GRAPH_SHA256}")
    else:
        print(f"{GRAPH} is up to date (sha256 {GRAPH_SHA256})")


if __name__ == "__main__":
    main()
