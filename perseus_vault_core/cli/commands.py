"""The commands: one per verb of the registry, and how each appears to a person.

A command's arguments come from its verb's params model (see :mod:`.flags`); this table adds only
what the registry cannot know: the command's words, its human output, a paragraph for ``--help``
and docs/cli.md, and the few commands that read a file or standard input, draw a progress bar or
take a key from the environment (:mod:`.admin`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..contract import verbs
from ..contract.params import validate
from ..facade.vault import Vault
from . import admin
from . import format as f
from .format import Show

Handler = Callable[[Vault, argparse.Namespace, dict[str, Any]], Any]

# Shorter spellings of options, wherever they appear.
SHORT: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"as_of_unix_ms": ("--as-of",), "valid_at_unix_ms": ("--valid-at",)}
)


@dataclass(frozen=True)
class Command:
    """How one verb appears on the command line (everything else comes from the verb)."""

    verb: str  # a registry verb (or the name of a command of the command line's own, without one)
    show: Show  # its result for a person
    words: str = ""  # the command, when it is not the verb's name with dashes ("memory get")
    about: str = ""  # for --help and docs/cli.md: what a person needs beyond the verb's summary
    creates: bool = False  # it may create the vault (a write that starts one); every other command needs one
    serves: bool = False  # it runs on, answering many calls: it builds and keeps the in-memory indexes
    handler: Handler | None = None  # when running it is more than calling the verb with the flags given
    flags: Callable[[argparse.ArgumentParser], None] | None = None  # flags of its own, not the verb's
    skip: tuple[str, ...] = ()  # fields it takes another way (from a file, from the environment)
    stdin: str = ""  # the text field that ``-`` reads from standard input (a hook pipes the prompt)
    aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # more spellings of a field's option
    optional: Mapping[str, str] = field(
        default_factory=dict
    )  # positionals that may be left out, and their value
    summary: str = ""  # the one-line help of a command without a verb
    example: str = ""

    @property
    def name(self) -> str:
        return self.words or self.verb.replace("_", "-")

    @property
    def spec(self) -> verbs.Verb | None:
        return REGISTRY.get(self.verb)

    @property
    def fields(self) -> list[str]:
        """The verb's arguments this command takes as flags or positionals."""
        return [] if self.spec is None else [n for n in verbs.fields(self.spec) if n not in self.skip]

    @property
    def positional(self) -> list[str]:
        """The required fields, in the model's order: positional arguments."""
        if self.spec is None:
            return []
        model = self.spec.params.model_fields
        return [n for n in self.fields if model[n].is_required()]

    @property
    def called(self) -> tuple[str, ...]:
        """The words that name it first on a command line: its own (or its group's), the MCP
        tool's spelling, its verb's aliases."""
        word = self.name.split()[0]
        aliases = self.spec.aliases if self.spec is not None and word == self.name else ()
        return tuple(dict.fromkeys((word, word.replace("-", "_"), *aliases)))

    def option_aliases(self) -> dict[str, tuple[str, ...]]:
        return {**SHORT, **self.aliases}


REGISTRY: Mapping[str, verbs.Verb] = MappingProxyType({v.name: v for v in verbs.VERBS + verbs.ADMIN_VERBS})


def invoke(command: Command, vault: Vault, args: argparse.Namespace) -> None:
    """Call the command's verb with the arguments the user gave (validated here, once, into its params model)
    and print the result."""
    given = {name: getattr(args, name) for name in command.fields if hasattr(args, name)}
    if command.stdin and given.get(command.stdin) == "-":
        given[command.stdin] = admin.standard_input(command.stdin)
    if command.handler is not None:
        result = command.handler(vault, args, given)
    else:
        assert command.spec is not None, f"{command.name}: a command without a verb needs a handler"
        result = vault.call(command.verb, validate(command.spec.params, given))
    if result is not admin.PRINTED:
        f.emit(args, result, command.show)


# --- the table -------------------------------------------------------------------------------------

# Groups of commands under one word, with their help.
GROUPS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "memory": (
            "memory files: import, export, recall, get, list, add, delete",
            "The memory-file layer (docs/memory-files.md): import a folder, recall entries oldest first, read, "
            "list, add and delete entries, export.",
        )
    }
)

COMMANDS: tuple[Command, ...] = (
    Command(
        "init",
        f.line("vault ready at {path} (schema {schema_version}, {entities} memories)"),
        creates=True,
        handler=admin.init,
        summary="create an empty vault (every other read needs one)",
        about="Create an empty vault at --db (and its folder), or say that one is there.",
        example="perseus-vault --db memory.db init",
    ),
    Command(
        "remember",
        f.remembered,
        creates=True,
        stdin="content",
        about="Create or update the memory at (category, key); fields not given keep their values.",
    ),
    Command(
        "recall",
        f.recall,
        stdin="query",
        about="Find memories: by keyword (fts5), by meaning (dense) or both fused (hybrid, the default when the "
        'vault holds vectors). "" lists everything in the default order. Rules in docs/recall.md.',
    ),
    Command(
        "hygiene",
        f.hygiene,
        about="Report the active memories that weaken a startup block (vague, date-only, very short, duplicate or "
        "near-duplicate, expired, never retrieved), least actionable first, with a header of counts. "
        "Read-only. Rules in docs/hygiene.md.",
    ),
    Command(
        "counts",
        f.counts,
        about="How many memories there are, by status, scope (agent/workspace), type and category, largest first "
        "(--top of each). Recall's filters apply, --as-of too: the store's shape at that time. See "
        "docs/scan.md.",
    ),
    Command(
        "recent",
        f.recent,
        about="The latest writes, newest first, one line each: when (unix ms), the change (create, update, "
        "archive, restore, supersede), the version and the memory; prints the cursor of older ones. See "
        "docs/time.md.",
    ),
    Command(
        "embed",
        f.line("embedded {embedded} version(s) with {model} ({dimension} dimensions)"),
        handler=admin.embed,
        flags=admin.progress_flags,
        about="Give every memory version a vector with the configured model (the bundled all-MiniLM-L6-v2 unless "
        "PERSEUS_VAULT_EMBEDDER says otherwise): backfills what is missing, current versions first, with a "
        "progress bar. --reembed replaces every vector (after changing models; the vault refuses to mix "
        "two).",
    ),
    Command(
        "scan",
        f.scan,
        handler=admin.scan,
        flags=admin.scan_flags,
        about="One page of memories by ascending id (prints the next cursor), or every page with --all (one "
        "line, or one JSON object, per memory). The same filters as recall. See docs/scan.md.",
    ),
    Command(
        "memory_import",
        f.memory_import,
        words="memory import",
        creates=True,
        about="Import a folder: its memory files entry by entry (from --memory-dir, or the folder itself when "
        "there is none) and its other notes with their wikilinks. Importing again reconciles: unchanged "
        "entries are left alone, entries gone from a file are archived. Lines it cannot read are listed as "
        "skipped. --bind lets memory add and memory delete rewrite the files there.",
    ),
    Command(
        "memory_export",
        f.line("wrote {files} file(s) to {folder}"),
        words="memory export",
        about="Write every memory file to a folder, byte for byte as stored.",
    ),
    Command(
        "memory_recall",
        f.memory_recall,
        words="memory recall",
        about="The entries about a topic, oldest first, so that a changed view shows (what do I think of X).",
    ),
    Command(
        "get_memory",
        f.line("{text}"),
        words="memory get",
        about="A memory file, or one of its sections, verbatim.",
    ),
    Command(
        "list_memory_files",
        f.memory_files,
        words="memory list",
        about="The memory files, with their entry counts and sections.",
    ),
    Command(
        "add_memory",
        f.memory_change("added to"),
        words="memory add",
        creates=True,
        about="Add a dated entry to a section of a memory file (both created if missing); in a bound folder the "
        "file is rewritten too.",
    ),
    Command(
        "delete_memory",
        f.memory_change("deleted from"),
        words="memory delete",
        about="Delete the one entry of a section that --date and/or --text match (refused when none or several "
        "do; history keeps it).",
    ),
    Command(
        "search",
        f.recall,
        stdin="query",
        about="Recall over an imported folder's notes (outside the memory files).",
    ),
    Command(
        "remember_conversation",
        f.conversation_write,
        creates=True,
        handler=admin.remember_conversation,
        flags=admin.messages_file,
        skip=("messages",),
        about="Store a chat's messages as the next turns of a session, in order, in one transaction (all or "
        "none). FILE holds the messages as a JSON array or as JSON Lines (one object a line), or is - for "
        'standard input; each message is {"speaker": ..., "text": ..., "time": ..., "role": ..., '
        '"id": ...} (text and a speaker or a role are required; time is unix ms or ISO 8601). A message '
        "whose id the session already holds keeps its turn (unchanged, or updated when its text changed). "
        "A bad message is refused naming it, counted from 0 (messages.3.text: must not be empty), and "
        "nothing is written. See docs/conversations.md.",
    ),
    Command(
        "conversation",
        f.conversation,
        about="A session's turns in order, one line each: #id turn speaker (time): text (time in UTC, to the "
        "minute; a text's line breaks shown as spaces; --json gives everything as stored). With --around ID "
        "(a turn's id, e.g. from recall), that turn, marked >, with --before and --after turns around it; "
        "without it, a page of --limit turns from --from-turn. A last line (more from turn N; T turns in "
        "all) says where the next page starts.",
    ),
    Command(
        "link",
        f.line("link #{id}: #{from_id} -[{relation} {weight:g}]-> #{to_id}"),
        about="Link two memories of one scope: a typed, weighted, directed edge. The same link again is a no-op; "
        "a new weight or source replaces it (the old row stays as history). See docs/graph.md.",
    ),
    Command(
        "unlink",
        f.line("closed {closed} link(s)"),
        handler=admin.unlink,
        about="Close the link(s) from one memory to another (one relation, or all); prints how many.",
    ),
    Command(
        "traverse",
        f.traverse,
        aliases={"relations": ("--relation",)},
        about="Walk the link graph breadth-first from a memory; the human output indents each memory by its "
        "depth.",
    ),
    Command(
        "prepare",
        f.prepare,
        stdin="context",
        about="The markdown block to inject before an agent turn: triggered memories first, then the most "
        "relevant others, within --max-chars, each line dated. When nothing applies it prints nothing "
        "(stderr says so). See docs/proactive.md.",
    ),
    Command(
        "resident",
        f.line(""),
        handler=admin.resident,
        flags=admin.resident_flags,
        serves=True,
        summary="keep the vault loaded for the CLI's later calls (a hook's prepare, recall)",
        about="Serve this vault, for one scope (--agent-id, --workspace-hash), to the CLI's later prepare, recall, "
        "recall-when and search calls over a private Unix socket, with the model and the indexes kept "
        "loaded, until --idle seconds pass without a call; --stop stops it. The CLI uses a running helper "
        "whenever one serves its vault, scope and settings, and answers alone otherwise, with the same "
        "output; PERSEUS_VAULT_RESIDENT=1 lets a call start one, =0 never uses one. See docs/hooks.md.",
        example="perseus-vault --db memory.db resident --idle 3600",
    ),
    Command(
        "recall_when",
        f.recall_when,
        stdin="context",
        about="Memories whose recall_when trigger phrases match a context, best first, with the phrase and how it "
        "matched (phrase, terms, meaning). See docs/proactive.md.",
    ),
    Command(
        "communities",
        f.communities,
        about="Clusters of the link graph, largest first, each with its id, size, most central members and "
        "summary memory (if written). See docs/graphrag.md.",
    ),
    Command(
        "community_summary",
        f.community_summary,
        about="The extractive summary of one community, written once as a community_summary memory linked to its "
        "members; --refresh rewrites it from the members' current text.",
    ),
    Command(
        "global_recall",
        f.line("{context}"),
        about="Answer a question that spans clusters: the best communities by their summaries, then evidence "
        "from their members; prints the answer context (markdown).",
    ),
    Command("get_entity", f.entity, about="One memory, whole, by id (recall's previews name it)."),
    Command(
        "forget",
        f.line("archived #{id} [{category}/{key}]"),
        about="Archive a memory (reversible: remembering its category and key again restores it).",
    ),
    Command(
        "purge",
        f.line("purged #{id}: {versions} version(s), {links} link(s)"),
        about="Delete an archived memory, its history and its links for good.",
    ),
    Command(
        "supersede",
        f.line("#{id} [{category}/{key}] is superseded by #{superseded_by}"),
        about="Mark a memory replaced by a newer one (OLD_ID then NEW_ID).",
    ),
    Command(
        "as_of",
        f.as_of,
        about="The version of a fact the vault believed at a time; says so when there was "
        "none. See docs/time.md.",
    ),
    Command("valid_at", f.valid_at, about="The version of a fact that was true in the world at a time."),
    Command(
        "bitemporal", f.bitemporal, about="The version believed at the first time to be true at the second."
    ),
    Command("history", f.history, about="Every version of a fact, newest first."),
    Command(
        "import_jsonl",
        f.line("imported: {created} created, {updated} updated, {unchanged} unchanged, {links} links"),
        words="import",
        creates=True,
        handler=admin.import_jsonl,
        flags=admin.progress_flags,
        about="Import a JSONL file (an export, or lines shaped like remember's arguments), or - for standard "
        "input, in one transaction. Shows a progress bar on a terminal (--progress forces it, --quiet hides "
        "it). See docs/import-export.md.",
    ),
    Command(
        "export_jsonl",
        f.line("exported {lines} lines to {file}"),
        words="export",
        handler=admin.export_jsonl,
        optional={"target": "-"},
        about="Write every memory (with its history) and link as JSONL to TARGET, or to standard output.",
    ),
    Command(
        "stats",
        f.stats,
        about="Counts, sizes, schema version, SQLite driver and versions, and whether the file is encrypted.",
    ),
    Command(
        "check",
        f.check,
        handler=admin.check,
        about="Integrity of the file, keyword indexes in sync with their rows, the vault's invariants. Exit "
        "status 1 when a problem is found.",
    ),
    Command(
        "reindex",
        f.reindex,
        handler=admin.reindex,
        flags=admin.progress_flags,
        about="Rebuild both keyword indexes from the rows, judge the relations of memories an earlier version "
        "wrote without judging them (a progress bar on a terminal), then check.",
    ),
    Command(
        "migrate",
        f.line(
            "copied {entities} memories ({versions} versions, {links} links, {vectors} vectors) "
            "and {state_rows} rows of framework state from {source} to {target}; both export the "
            "same {lines} lines"
        ),
        handler=admin.migrate,
        flags=admin.migrate_flags,
        summary="copy a vault to another backend, losslessly",
        about="Copy every memory, its whole history, every link and every vector from SRC to DST: a SQLite file "
        "to an empty PostgreSQL database or back (docs/postgres.md). DST must hold no memory. The copy is "
        "proved: both are exported and must match byte for byte.",
        example="perseus-vault migrate memory.db postgresql://agent@db.internal/memory",
    ),
    Command(
        "bind_role",
        f.role_binding,
        handler=admin.bind_role,
        flags=admin.bind_role_flags,
        creates=True,
        summary="bind a PostgreSQL role to one scope (row-level security)",
        about="On a PostgreSQL vault, as its owner: bind an existing database role to one scope and grant it a "
        "vault's reads and writes there. A server connecting as that role sees and writes that scope only, "
        "even if its own filters failed or it sends SQL of its own. Where the vault's role owns the "
        "database, binding also takes temporary objects away there (from PUBLIC, which holds them by "
        "default); elsewhere the answer says the role may still make them (docs/postgres.md).",
        example="perseus-vault --db postgresql://owner@db/memory bind-role alice_srv --agent-id alice",
    ),
    Command(
        "backup",
        f.line("backed up to {backup}"),
        handler=admin.backup,
        about="A consistent copy of the vault, safe while others write.",
    ),
    Command(
        "rekey",
        f.line("rekeyed {rekeyed}: from now on only the new key opens it"),
        handler=admin.rekey,
        flags=admin.rekey_flags,
        skip=("new_key",),
        about="Re-encrypt an encrypted vault (docs/encryption.md) under a new key, without loss: the current key "
        "comes from PERSEUS_VAULT_KEY / PERSEUS_VAULT_KEY_FILE, the new one from --new-key-file PATH or "
        "PERSEUS_VAULT_NEW_KEY (never from an argument). Afterwards only the new key opens the file. It is "
        "refused, with nothing changed, while another process has the vault open.",
        example="PERSEUS_VAULT_KEY_FILE=old.key perseus-vault rekey --new-key-file new.key",
    ),
)
