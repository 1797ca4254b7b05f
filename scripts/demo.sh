#!/usr/bin/env bash
# The vault's main job: serve memory to agents over MCP, on the default store
# (./perseus_vault.db, or $PERSEUS_VAULT_DB). Seeds a few memories first (idempotent), prints how to
# register the server in an MCP client and where to look inside with a browser (the web inspector at /,
# docs/ui.md), then serves streamable HTTP on loopback until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
pv() { .venv/bin/perseus-vault "$@"; }
DB="${PERSEUS_VAULT_DB:-perseus_vault.db}"
ADDR="${PERSEUS_VAULT_HTTP:-127.0.0.1:8765}"
echo "== a few memories in $DB"
pv --db "$DB" remember decision db-engine "We chose SQLite in WAL mode for the vault: one file, many readers, no server." \
   --topic-path architecture/storage --recall-when "choosing a database" --verified
pv --db "$DB" remember incident OPS-311 "Recall latency spiked during the nightly import; fixed by batching writes." \
   --topic-path operations
pv --db "$DB" recall "which database did we pick" --limit 1
cat <<JSON

== register it in an MCP client (stdio: the client starts the server itself), e.g. in claude_desktop_config.json:
{
  "mcpServers": {
    "perseus-vault": {
      "command": "$(pwd)/.venv/bin/perseus-vault",
      "args": ["serve", "--db", "$(cd "$(dirname "$DB")" && pwd)/$(basename "$DB")"]
    }
  }
}
== or connect over streamable HTTP: http://$ADDR/mcp${PERSEUS_VAULT_HTTP_TOKEN:+ with the header Authorization: Bearer \$PERSEUS_VAULT_HTTP_TOKEN}
== look inside the memory in a browser (the web inspector): http://$ADDR/${PERSEUS_VAULT_HTTP_TOKEN:+  (sign in with the token)}
   (serving both now; Ctrl-C to stop)
JSON
exec .venv/bin/perseus-vault serve --db "$DB" --http "$ADDR"
