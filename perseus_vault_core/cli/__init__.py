"""``perseus-vault``: the command line. A thin layer over :class:`Vault`.

Each command runs one verb of the registry (:mod:`perseus_vault_core.contract.verbs`), and its arguments are
generated from that verb's params model (:mod:`.flags`): names, types, choices, defaults and help,
as the MCP tools' schemas are. Written by hand are only what a person reads: each command's output
(:mod:`.format`) and the paragraph its ``--help`` shows (:mod:`.commands`). Other packages add
commands through an entry point group (:mod:`perseus_vault_core.facade.plugins`): the integrations add
``serve`` and ``ui``. :mod:`.main` runs a command line (``run`` is the console script), handing it to the
vault's resident helper first when one can answer (:mod:`perseus_vault_core.resident`).

Output is for people by default and JSON with ``--json``. Every failure is one line on stderr and
exit status 1, never a traceback (set ``PERSEUS_VAULT_DEBUG=1`` to see one). Ctrl-C is one line too:
a server (``serve``, ``ui``) stops with status 0, any other command with 130. docs/cli.md is
generated from the parser (:mod:`.reference`).
"""
