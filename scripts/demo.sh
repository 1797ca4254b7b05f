#!/usr/bin/env bash
# The vault's main job for now: remember and recall through the CLI on the default store
# (./perseus_vault.db, or $PERSEUS_VAULT_DB). Safe to run again: remembering is idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
pv() { .venv/bin/perseus-vault "$@"; }
echo "== remembering into ${PERSEUS_VAULT_DB:-perseus_vault.db}"
pv remember decision db-engine "We chose SQLite in WAL mode for the vault: one file, many readers, no server." \
   --topic-path architecture/storage --recall-when "choosing a database" --verified
pv remember decision embedding-model "Embeddings come from the bundled all-MiniLM-L6-v2 model, fully offline." \
   --topic-path architecture/recall
pv remember incident OPS-311 "Recall latency spiked during the nightly import; fixed by batching writes." \
   --topic-path operations
pv remember preference answer-style "Alice prefers short answers with the command first."
echo; echo "== recall: which database did we pick? (hybrid: keyword + meaning)"
pv recall "which database did we pick"
echo; echo "== recall: latency incident (json, first item id)"
pv recall "latency incident" --json --limit 1 | .venv/bin/python -c "import json,sys; r=json.load(sys.stdin); print(r['search_mode'], [i['key'] for i in r['items']])"
echo; echo "== everything, page by page"
pv scan --limit 10
echo; echo "== history of decision/db-engine"
pv history decision db-engine
echo; echo "== health"
pv check
