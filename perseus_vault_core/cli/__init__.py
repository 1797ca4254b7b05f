"""``perseus-vault``: the command line. A thin layer over :class:`Vault`.

Output is for people by default and JSON with ``--json``. Every failure is one line on
stderr and exit status 1, never a traceback (set ``PERSEUS_VAULT_DEBUG=1`` to see one).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

from pydantic import BaseModel

from . import __version__, conversations
from .connection import read_key_file
from .errors import InvalidInput, SetupError, VaultError
from .models import Entity, HygieneReport, RecallResult, ScanPage
from .ranking import one_line
from .vault import Vault, default_path


def _one_line(text: str) -> str:
    """Messages may quote user text; keep the promise of one line per error."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # No abbreviated options: "--lim" is refused as a misspelling, as an MCP tool refuses it.
        super().__init__(*args, **{"allow_abbrev": False, **kwargs})

    def error(self, message: str) -> NoReturn:  # one line, exit 1, like every other failure
        self.exit(1, f"error: {message} (see {self.prog} --help)\n")


def _emit(args: argparse.Namespace, value: Any, human: Callable[[Any], str]) -> None:
    if args.json:
        if isinstance(value, BaseModel):
            print(value.model_dump_json())
        else:
            print(json.dumps(value, ensure_ascii=False))
    elif value is None:
        print(human(value))
    else:
        print(human(value))


def _short(text: str, width: int = 100) -> str:
    return one_line(text, width)


def _entity_line(e: Any) -> str:
    return f"#{e.id} [{e.category}/{e.key}] {_short(e.content)}"


def _recall_text(result: RecallResult) -> str:
    if not result.items:
        return f"no matches ({result.search_mode})"
    lines = [f"{len(result.items)} result(s), {result.search_mode}:"]
    for item in result.items:
        extra = f"  [actionability {item.actionability:.2f}]" if item.actionability is not None else ""
        if item.validity is not None:
            extra += f"  [{item.validity.grade}, x{item.validity.multiplier:.2f}]"
        lines.append(f"{item.score:7.3f}  {_entity_line(item)}{extra}")
    return "\n".join(lines)


def _filters(args: argparse.Namespace) -> dict[str, Any]:
    names = ("type", "category", "topic_path", "agent_id", "workspace_hash", "min_decay",
             "as_of_unix_ms", "valid_at_unix_ms", "query_time_unix_ms")
    out = {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}
    if args.include_archived:
        out["include_archived"] = True
    return out


# --- commands ----------------------------------------------------------------------------------


def cmd_remember(vault: Vault, args: argparse.Namespace) -> None:
    fields: dict[str, Any] = {}
    for name in ("summary", "type", "topic_path", "agent_id", "workspace_hash", "source", "certainty",
                 "provenance_class", "valid_from_ms", "valid_to_ms", "expires_at_ms"):
        if getattr(args, name) is not None:
            fields[name] = getattr(args, name)
    if args.verified:
        fields["verified"] = True
    if args.recall_when:
        fields["recall_when"] = args.recall_when
    if args.body is not None:
        try:
            fields["body"] = json.loads(args.body)
        except json.JSONDecodeError as exc:
            raise VaultError(f"body: is not valid JSON ({exc.msg})") from None
    entity = vault.remember(args.category, args.key, args.content, **fields)
    _emit(args, entity, lambda e: f"remembered #{e.id} [{e.category}/{e.key}] version {e.version}")


def cmd_recall(vault: Vault, args: argparse.Namespace) -> None:
    params = _filters(args)
    for name in ("mode", "limit", "offset", "min_score", "preview_cap", "trust_weight", "content_weight",
                 "diversity_halving", "recency_half_life_secs"):
        if getattr(args, name) is not None:
            params[name] = getattr(args, name)
    if args.expansion:
        params["expansion"] = True
    if args.startup:
        params["startup"] = True
    if args.profile:
        params["profile"] = args.profile
    if args.validity_annotate:
        params["validity_annotate"] = True
    if args.no_reinforce:
        params["reinforce"] = False
    _emit(args, vault.recall(args.query, **params), _recall_text)


def _scope(args: argparse.Namespace) -> dict[str, Any]:
    return {n: getattr(args, n) for n in ("agent_id", "workspace_hash") if getattr(args, n, None) is not None}


def _given(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}


def cmd_memory(vault: Vault, args: argparse.Namespace) -> None:
    scope = _scope(args)
    action = args.memory_action
    if action == "import":
        report = vault.memory_import(args.folder, memory_dir=args.memory_dir, bind=args.bind, **scope)
        _emit(args, report, lambda r: "\n".join(
            [f"{r.files} file(s): {r.entries_created} entries written, {r.entries_unchanged} unchanged, "
             f"{r.entries_archived} archived; {r.notes} note(s), {r.links} link(s)"
             + (f"; bound to {r.bound_folder}" if r.bound_folder else "")]
            + [f"skipped {s.file}.md:{s.line}: {s.reason}: {_short(s.text, 60)}" for s in r.skipped]))
    elif action == "export":
        _emit(args, vault.memory_export(args.folder, **scope), lambda r: f"wrote {r.files} file(s) to {r.folder}")
    elif action == "recall":
        params = {**scope, **_given(args, "file", "limit")}
        _emit(args, vault.memory_recall(args.query, **params), _memory_recall_text)
    elif action == "get":
        _emit(args, vault.get_memory(args.file, args.section, **scope), lambda r: r.text)
    elif action == "list":
        _emit(args, vault.list_memory_files(**scope), lambda r: "\n".join(
            f"{f.file}  {f.entries} entries  [{', '.join(f.sections)}]" for f in r.files) or "no memory files")
    elif action == "add":
        change = vault.add_memory(args.file, args.section, args.text, args.date, **scope)
        _emit(args, change, lambda r: f"added to {r.file} / {r.entry.section} ({r.entry.date})"
              + (f"; rewrote {r.written}" if r.written else ""))
    else:
        change = vault.delete_memory(args.file, args.section, date=args.date, text=args.text, **scope)
        _emit(args, change, lambda r: f"deleted from {r.file} / {r.entry.section} ({r.entry.date}): {_short(r.entry.text, 60)}"
              + (f"; rewrote {r.written}" if r.written else ""))


def _memory_recall_text(r: Any) -> str:
    if not r.entries:
        return "no matching entries"
    head = f"{r.total} matching entr{'y' if r.total == 1 else 'ies'} ({r.search_mode}" + (
        f", showing the {len(r.entries)} most relevant" if r.truncated else "") + "), oldest first:"
    return "\n".join([head] + [f"{e.date}  {e.file} / {e.section}: {_short(e.text)}" for e in r.entries])


def cmd_search(vault: Vault, args: argparse.Namespace) -> None:
    params = {**_scope(args), **_given(args, "limit", "mode")}
    _emit(args, vault.search(args.query, **params), _recall_text)


def cmd_remember_conversation(vault: Vault, args: argparse.Namespace) -> None:
    report = vault.remember_conversation(args.session, _read_messages(args.file), **_scope(args))
    _emit(args, report, lambda r: f"conversation {r.session}: {r.created} new, {r.updated} updated, "
          f"{r.unchanged} unchanged" + (f", {r.skipped} forgotten (left so)" if r.skipped else "")
          + f" turn(s); last turn {r.last_turn}")


def _read_messages(source: str) -> list[Any]:
    """Messages from a file (or ``-``, standard input): a JSON array, or JSON Lines (one object a line)."""
    try:
        if source == "-":
            text = sys.stdin.read()
        else:
            with open(source, encoding="utf-8") as handle:
                text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput("file", f"cannot read {source}: {getattr(exc, 'strerror', None) or exc}") from None
    if text.lstrip().startswith("["):
        try:
            messages: list[Any] = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInput("messages", f"is not a valid JSON array ({exc.msg}, line {exc.lineno})") from None
        return messages
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InvalidInput("messages", f"line {number} is not valid JSON ({exc.msg})") from None
    return out


def cmd_conversation(vault: Vault, args: argparse.Namespace) -> None:
    params = {**_scope(args), **_given(args, "around", "before", "after", "from_turn", "limit")}
    result = vault.conversation(args.session, **params)
    _emit(args, result, lambda r: conversations.transcript(r, around=args.around))


def cmd_serve(vault: Vault, args: argparse.Namespace) -> None:
    try:
        from perseus_vault_integrations import mcp_http, mcp_server
    except ImportError as exc:
        raise SetupError(f"the MCP server needs the mcp extra: pip install 'perseus-vault[mcp]' ({exc})") from None
    scope = {"agent_id": args.agent, "workspace_hash": args.workspace}
    if args.tools:  # the tool profile; an unknown one is refused before serving
        mcp_server.served(args.tools, {})
        os.environ[mcp_server.TOOLS_ENV] = args.tools
    if args.http is None and args.token_file is not None:
        raise VaultError("--token-file: a token is for HTTP; add --http HOST:PORT")
    address, token = None, None
    if args.http is not None:  # checked before the indexes start building in the background
        address, token = _http_address(args.http), mcp_http.resolve_token(args.token_file)
    # A server is long-lived: build the in-memory indexes now, in the background (SQL answers meanwhile).
    vault.wait_for_keyword_index(timeout=0)
    vault.wait_for_vector_index(timeout=0)
    if address is None:
        mcp_server.serve_stdio(vault, **scope)
        return
    host, port = address
    mcp_http.serve_http(vault, host, port, token, **scope)


def _http_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (an IPv6 host in brackets, ``[::1]:8765``; no host means 127.0.0.1)."""
    host, _, port = text.rpartition(":")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise VaultError(f"--http: expected HOST:PORT with a port from 1 to 65535, got {text!r}")
    if ":" in host and not (host.startswith("[") and host.endswith("]")):
        raise VaultError(f"--http: write an IPv6 address in brackets, e.g. [::1]:{port}, got {text!r}")
    return host or "127.0.0.1", int(port)


class _TokenOnCommandLine(argparse.Action):
    """``--token`` is gone: any user on the machine can read a process's arguments (``ps``)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        parser.error("--token is no longer accepted, since the command line is visible to every user (ps); "
                     "set PERSEUS_VAULT_HTTP_TOKEN, or put the token in a file and pass --token-file PATH")


def cmd_link(vault: Vault, args: argparse.Namespace) -> None:
    params = {**_scope(args), **_given(args, "weight", "source")}
    link = vault.link(args.from_id, args.to_id, args.relation, **params)
    _emit(args, link, lambda l: f"link #{l.id}: #{l.from_id} -[{l.relation} {l.weight:g}]-> #{l.to_id}")


def cmd_unlink(vault: Vault, args: argparse.Namespace) -> None:
    closed = vault.unlink(args.from_id, args.to_id, args.relation, **_scope(args))
    _emit(args, {"closed": closed}, lambda r: f"closed {r['closed']} link(s)")


def cmd_traverse(vault: Vault, args: argparse.Namespace) -> None:
    walk = vault.traverse(args.start, args.depth, args.relation or None, args.direction, **_filters(args))

    def human(w: Any) -> str:
        lines = [f"{'  ' * n.depth}{_entity_line(n.entity)}" for n in w.nodes]
        return "\n".join(lines + [f"{len(w.nodes)} node(s), {len(w.edges)} link(s)"])

    _emit(args, walk, human)


def cmd_communities(vault: Vault, args: argparse.Namespace) -> None:
    params = {**_filters(args), **_given(args, "method", "min_size", "limit", "central")}

    def human(r: Any) -> str:
        lines = [f"{r.total} communit{'y' if r.total == 1 else 'ies'} ({r.method}; {r.nodes} entities, {r.edges} links)"]
        for c in r.communities:
            central = "; ".join(f"#{m.id} {_short(m.title, 40)}" for m in c.central[:3])
            summary = f"  summary #{c.summary_id}" if c.summary_id is not None else ""
            lines.append(f"{c.id}  {c.size:5d} members  {central}{summary}")
        return "\n".join(lines)

    _emit(args, vault.communities(**params), human)


def cmd_community_summary(vault: Vault, args: argparse.Namespace) -> None:
    params = {**_scope(args), **_given(args, "method", "max_chars")}
    if args.refresh:
        params["refresh"] = True
    result = vault.community_summary(args.community_id, **params)
    _emit(args, result, lambda r: f"#{r.entity.id} {r.entity.summary} "
          f"({'written' if r.materialized else 'unchanged'})\n{r.text}")


def cmd_global_recall(vault: Vault, args: argparse.Namespace) -> None:
    params = {**_scope(args), **_given(args, "mode", "communities", "per_community", "max_chars", "method", "min_size")}
    if args.no_reinforce:
        params["reinforce"] = False
    _emit(args, vault.global_recall(args.query, **params), lambda r: r.context)


def cmd_recall_when(vault: Vault, args: argparse.Namespace) -> None:
    params = {**_scope(args), **_given(args, "limit", "type", "category", "topic_path", "min_similarity")}
    if args.no_semantic:
        params["semantic"] = False

    def human(r: Any) -> str:
        if not r.items:
            return "no trigger matches"
        return "\n".join(f"{i.score:6.3f}  {i.match:8s} \"{i.trigger}\"  {_entity_line(i)}" for i in r.items)

    _emit(args, vault.recall_when(args.context, **params), human)


def cmd_prepare(vault: Vault, args: argparse.Namespace) -> None:
    params = {**_scope(args), **_given(args, "max_chars", "triggered", "related", "mode", "min_score")}
    if args.no_semantic:
        params["semantic"] = False
    _emit(args, vault.prepare(args.context, **params), lambda r: r.markdown)


def cmd_init(vault: Vault, args: argparse.Namespace) -> None:
    stats = vault.stats()
    _emit(args, stats, lambda s: f"vault ready at {s.path} (schema {s.schema_version}, {s.entities} memories)")


def cmd_get_entity(vault: Vault, args: argparse.Namespace) -> None:
    _emit(args, vault.get_entity(args.id, **_scope(args)), _entity_text)


def cmd_forget(vault: Vault, args: argparse.Namespace) -> None:
    _emit(args, vault.forget(args.id, **_scope(args)), lambda e: f"archived #{e.id} [{e.category}/{e.key}]")


def cmd_purge(vault: Vault, args: argparse.Namespace) -> None:
    _emit(args, vault.purge(args.id, **_scope(args)),
          lambda r: f"purged #{r.id}: {r.versions} version(s), {r.links} link(s)")


def cmd_supersede(vault: Vault, args: argparse.Namespace) -> None:
    _emit(args, vault.supersede(args.old_id, args.new_id, **_scope(args)),
          lambda e: f"#{e.id} [{e.category}/{e.key}] is superseded by #{e.superseded_by}")


def cmd_as_of(vault: Vault, args: argparse.Namespace) -> None:
    found = vault.as_of(args.category, args.key, args.as_of_unix_ms, **_scope(args))
    _emit(args, found, lambda e: _entity_text(e) if e else f"no version of {args.category}/{args.key} was "
          f"believed at {args.as_of_unix_ms}")


def cmd_valid_at(vault: Vault, args: argparse.Namespace) -> None:
    found = vault.valid_at(args.category, args.key, args.valid_at_unix_ms, **_scope(args))
    _emit(args, found, lambda e: _entity_text(e) if e else f"no version of {args.category}/{args.key} was "
          f"true at {args.valid_at_unix_ms}")


def cmd_bitemporal(vault: Vault, args: argparse.Namespace) -> None:
    found = vault.bitemporal(args.category, args.key, args.as_of_unix_ms, args.valid_at_unix_ms, **_scope(args))
    _emit(args, found, lambda e: _entity_text(e) if e else f"no version of {args.category}/{args.key} was "
          f"believed at {args.as_of_unix_ms} to be true at {args.valid_at_unix_ms}")


def _entity_text(e: Entity) -> str:
    lines = [f"#{e.id} [{e.category}/{e.key}] {e.type}, version {e.version}, {e.status}"]
    if e.summary:
        lines.append(e.summary)
    lines.append(e.content)
    return "\n".join(lines)


def cmd_scan(vault: Vault, args: argparse.Namespace) -> None:
    filters = _filters(args)
    if not args.all:
        _emit(args, vault.scan(cursor=args.cursor, limit=args.limit, **filters), _scan_text)
        return
    cursor = None
    while True:  # --all streams every page: one JSON object (or line) per entity
        page = vault.scan(cursor=cursor, limit=args.limit, **filters)
        for e in page.items:
            print(e.model_dump_json() if args.json else _entity_line(e))
        if not page.has_more:
            break
        cursor = page.next_cursor


def _scan_text(page: ScanPage) -> str:
    lines = [_entity_line(e) for e in page.items]
    lines.append(f"next cursor: {page.next_cursor}" if page.has_more else "(end)")
    return "\n".join(lines)


def cmd_history(vault: Vault, args: argparse.Namespace) -> None:
    page = vault.history(args.category, args.key, agent_id=args.agent_id, workspace_hash=args.workspace_hash,
                         limit=args.limit, offset=args.offset)

    def human(p: Any) -> str:
        lines = [f"{p.total} version(s) of {args.category}/{args.key}, newest first:"]
        lines += [f"v{e.version} {e.change:<9} {e.status:<10} from {e.recorded_from_ms}: {_short(e.content, 80)}"
                  for e in p.items]
        return "\n".join(lines)

    _emit(args, page, human)


@contextmanager
def _progress_bar(args: argparse.Namespace, unit: str, desc: str) -> Iterator[Callable[[int, int], None]]:
    """A progress callback drawing on stderr (on a terminal, or with --progress; never with --quiet)."""
    from tqdm import tqdm

    bar = tqdm(total=0, unit=unit, desc=desc, disable=args.quiet or not sys.stderr.isatty() and not args.progress)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    try:
        yield progress
    finally:
        bar.close()


def cmd_import(vault: Vault, args: argparse.Namespace) -> None:
    with _progress_bar(args, "rec", "import") as progress:
        report = _import(vault, args, progress)
    _emit(args, report, lambda r: f"imported: {r.created} created, {r.updated} updated, "
                                  f"{r.unchanged} unchanged, {r.links} links")


def _import(vault: Vault, args: argparse.Namespace, progress: Callable[[int, int], None]) -> Any:
    if args.file == "-":
        return vault.import_jsonl(sys.stdin, progress=progress)
    return vault.import_jsonl(args.file, progress=progress)


def cmd_embed(vault: Vault, args: argparse.Namespace) -> None:
    with _progress_bar(args, "vec", "embed") as progress:
        report = vault.embed(reembed=args.reembed, progress=progress)
    _emit(args, report, lambda r: f"embedded {r.embedded} version(s) with {r.model} ({r.dimension} dimensions)")


def cmd_export(vault: Vault, args: argparse.Namespace) -> None:
    if args.file == "-":
        vault.export_jsonl(sys.stdout, agent_id=args.agent_id, workspace_hash=args.workspace_hash)
        return
    count = vault.export_jsonl(args.file, agent_id=args.agent_id, workspace_hash=args.workspace_hash)
    _emit(args, {"file": args.file, "lines": count}, lambda r: f"exported {r['lines']} lines to {r['file']}")


def cmd_stats(vault: Vault, args: argparse.Namespace) -> None:
    _emit(args, vault.stats(), lambda s: "\n".join(f"{k}: {v}" for k, v in s.model_dump().items()))


def cmd_check(vault: Vault, args: argparse.Namespace) -> None:
    report = vault.check()
    _emit(args, report, lambda r: "ok" if r.ok else "problems:\n" + "\n".join(f"- {p}" for p in r.problems))
    if not report.ok:
        raise SystemExit(1)


def cmd_reindex(vault: Vault, args: argparse.Namespace) -> None:
    report = vault.reindex()
    _emit(args, report, lambda r: "reindexed; check ok" if r.ok else "reindexed; problems remain:\n"
          + "\n".join(f"- {p}" for p in r.problems))
    if not report.ok:
        raise SystemExit(1)


def cmd_backup(vault: Vault, args: argparse.Namespace) -> None:
    target = vault.backup(args.target)
    _emit(args, {"backup": target}, lambda r: f"backed up to {r['backup']}")


NEW_KEY_ENV = "PERSEUS_VAULT_NEW_KEY"


def cmd_rekey(vault: Vault, args: argparse.Namespace) -> None:
    # Keys come from a file or the environment only: a key on the command line lands in shell history
    # and in every process listing.
    if args.new_key_file:
        new_key = read_key_file(args.new_key_file, "--new-key-file")
    elif os.environ.get(NEW_KEY_ENV):
        new_key = os.environ[NEW_KEY_ENV]
    else:
        raise InvalidInput("new key", f"set {NEW_KEY_ENV} or pass --new-key-file PATH")
    vault.rekey(new_key)
    _emit(args, {"rekeyed": vault.path}, lambda r: f"rekeyed {r['rekeyed']}: from now on only the new key opens it")


def cmd_hygiene(vault: Vault, args: argparse.Namespace) -> None:
    params = {n: getattr(args, n) for n in ("type", "category", "topic_path", "agent_id", "workspace_hash",
                                          "limit", "min_age_days") if getattr(args, n) is not None}
    _emit(args, vault.hygiene(**params), _hygiene_text)


def _hygiene_text(report: HygieneReport) -> str:
    if not report.total:
        return f"nothing to flag among {report.scanned} active memories"
    tally = ", ".join(f"{reason} {n}" for reason, n in report.counts.items() if n)
    lines = [f"{report.total} of {report.scanned} active memories flagged, showing {len(report.items)}: {tally}"]
    for item in report.items:
        reasons = ", ".join(f"{r} of #{item.duplicate_of}" if r.endswith("duplicate") else r for r in item.reasons)
        lines.append(f"#{item.id} [{item.category}/{item.key}] actionability {item.actionability:.2f}: {reasons}"
                     f"  {_short(item.preview)}")
    return "\n".join(lines)


# --- parser ------------------------------------------------------------------------------------


def _add_filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--type")
    p.add_argument("--category")
    p.add_argument("--topic-path", dest="topic_path", help="topic path prefix, e.g. architecture")
    p.add_argument("--agent-id", dest="agent_id")
    p.add_argument("--workspace-hash", dest="workspace_hash")
    p.add_argument("--include-archived", action="store_true", help="also show archived, expired, superseded")
    p.add_argument("--min-decay", type=float, dest="min_decay")
    p.add_argument("--as-of-unix-ms", "--as-of", type=_time, dest="as_of_unix_ms",
                   help="the store as believed at this instant (unix ms or ISO 8601)")
    p.add_argument("--valid-at-unix-ms", "--valid-at", type=_time, dest="valid_at_unix_ms",
                   help="what was true at this instant")
    p.add_argument("--query-time-unix-ms", type=_time, dest="query_time_unix_ms", help="anchor 'now' (replay)")


def _min_score(text: str) -> float | str:
    """A relevance threshold: a number, or ``auto``."""
    if text == "auto":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or auto, got {text!r}") from None


def _time(text: str) -> int | str:
    """A time argument: unix ms as an integer, anything else as ISO 8601 text for the vault to read."""
    return int(text) if text.strip().isdigit() else text


def _add_scope(p: argparse.ArgumentParser) -> None:
    p.add_argument("--agent-id", dest="agent_id")
    p.add_argument("--workspace-hash", dest="workspace_hash")


def _hidden(sub: Any, alias: str, parser: argparse.ArgumentParser) -> None:
    """Another name for a command, accepted but not listed (the same verb's name elsewhere)."""
    sub._name_parser_map[alias] = parser


def build_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument("--db", default=argparse.SUPPRESS, help="vault file (default: $PERSEUS_VAULT_DB or perseus_vault.db)")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")

    parser = _Parser(prog="perseus-vault", description="Long-term memory for AI agents in one SQLite file.",
                     parents=[common])
    parser.add_argument("--version", action="version", version=f"perseus-vault {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="command")

    p = sub.add_parser("init", parents=[common], help="create an empty vault (every other read needs one)")
    p.set_defaults(func=cmd_init, creates=True)

    p = sub.add_parser("remember", parents=[common], help="create or update a memory by (category, key)")
    p.add_argument("category")
    p.add_argument("key")
    p.add_argument("content")
    p.add_argument("--summary")
    p.add_argument("--type")
    p.add_argument("--topic-path", dest="topic_path")
    p.add_argument("--agent-id", dest="agent_id")
    p.add_argument("--workspace-hash", dest="workspace_hash")
    p.add_argument("--source")
    p.add_argument("--verified", action="store_true")
    p.add_argument("--certainty", type=float)
    p.add_argument("--provenance-class", dest="provenance_class")
    p.add_argument("--recall-when", dest="recall_when", action="append", help="trigger phrase (repeatable)")
    p.add_argument("--body", help="extra body fields as a JSON object")
    p.add_argument("--valid-from-ms", type=_time, dest="valid_from_ms", help="unix ms or ISO 8601")
    p.add_argument("--valid-to-ms", type=_time, dest="valid_to_ms", help="unix ms or ISO 8601")
    p.add_argument("--expires-at-ms", type=_time, dest="expires_at_ms", help="unix ms or ISO 8601")
    p.set_defaults(func=cmd_remember, creates=True)

    p = sub.add_parser("recall", parents=[common], help="find memories (keyword, meaning, or both)")
    p.add_argument("query", help='words to find ("" lists everything in the default order)')
    p.add_argument("--mode", choices=["fts5", "dense", "hybrid"])
    p.add_argument("--limit", type=int)
    p.add_argument("--offset", type=int)
    _add_filters(p)
    p.add_argument("--min-score", type=_min_score, dest="min_score",
                   help="leave out memories scoring below this (a number, or auto: the mode's threshold)")
    p.add_argument("--expansion", action="store_true", help="add stem variants from the index")
    p.add_argument("--preview-cap", type=int, dest="preview_cap")
    p.add_argument("--trust-weight", type=float, dest="trust_weight")
    p.add_argument("--content-weight", type=float, dest="content_weight")
    p.add_argument("--diversity-halving", type=float, dest="diversity_halving")
    p.add_argument("--recency-half-life-secs", type=float, dest="recency_half_life_secs")
    p.add_argument("--startup", action="store_true", help="re-rank by actionability (start-of-session blocks)")
    p.add_argument("--profile", choices=["validity"], help="weigh freshness, scope, provenance, expiry")
    p.add_argument("--validity-annotate", action="store_true", dest="validity_annotate")
    p.add_argument("--no-reinforce", action="store_true", dest="no_reinforce", help="do not count this retrieval")
    p.set_defaults(func=cmd_recall)

    p = sub.add_parser("hygiene", parents=[common], help="low-signal memories and why (read-only)")
    p.add_argument("--limit", type=int, help="items to show (default 100, at most 1000)")
    p.add_argument("--min-age-days", type=int, dest="min_age_days", help="'never retrieved' from this age (default 7)")
    p.add_argument("--type")
    p.add_argument("--category")
    p.add_argument("--topic-path", dest="topic_path", help="topic path prefix, e.g. architecture")
    p.add_argument("--agent-id", dest="agent_id")
    p.add_argument("--workspace-hash", dest="workspace_hash")
    p.set_defaults(func=cmd_hygiene)

    p = sub.add_parser("embed", parents=[common], help="give every memory a vector (backfill), or re-embed all")
    p.add_argument("--reembed", action="store_true", help="replace every vector with the configured model's")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--progress", action="store_true", help="show progress even when stderr is not a terminal")
    p.set_defaults(func=cmd_embed)

    p = sub.add_parser("scan", parents=[common], help="list entities by id, page by page (read-only)")
    p.add_argument("--cursor")
    p.add_argument("--limit", type=int, default=100)
    p.add_argument("--all", action="store_true", help="follow the cursor to the end")
    _add_filters(p)
    p.set_defaults(func=cmd_scan)

    p = sub.add_parser("serve", parents=[common], help="serve the vault over MCP (stdio, or streamable HTTP)")
    p.set_defaults(creates=True)
    p.add_argument("--tools", help="tool profile: core (default), all, or a comma-separated list of verbs")
    p.add_argument("--http", metavar="HOST:PORT", help="streamable HTTP instead of stdio (loopback by default)")
    p.add_argument("--token-file", dest="token_file", metavar="PATH",
                   help="file holding the bearer token HTTP clients must send (default: $PERSEUS_VAULT_HTTP_TOKEN, "
                        "or the file $PERSEUS_VAULT_HTTP_TOKEN_FILE names)")
    p.add_argument("--token", action=_TokenOnCommandLine, help=argparse.SUPPRESS)
    p.add_argument("--agent", help="bind the server to this agent_id (no argument can escape it)")
    p.add_argument("--workspace", help="bind the server to this workspace_hash")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("memory", parents=[common], help="memory files: import, export, recall, get, list, add, delete")
    actions = p.add_subparsers(dest="memory_action", required=True, parser_class=_Parser)
    m = actions.add_parser("import", parents=[common], help="import a folder (its memory files and notes)")
    m.add_argument("folder")
    m.add_argument("--memory-dir", dest="memory_dir", default="About Me", help="subfolder of memory files (default: About Me)")
    m.add_argument("--bind", action="store_true", help="let add/delete rewrite the files in that folder")
    _add_scope(m)
    m.set_defaults(creates=True)
    m = actions.add_parser("export", parents=[common], help="write every memory file to a folder")
    m.add_argument("folder")
    _add_scope(m)
    m = actions.add_parser("recall", parents=[common], help="entries about a topic, oldest first")
    m.add_argument("query")
    m.add_argument("--file", help="one memory file, exact letter case, without .md")
    m.add_argument("--limit", type=int)
    _add_scope(m)
    m = actions.add_parser("get", parents=[common], help="a memory file or one section, verbatim")
    m.add_argument("file")
    m.add_argument("--section")
    _add_scope(m)
    m = actions.add_parser("list", parents=[common], help="the memory files")
    _add_scope(m)
    m = actions.add_parser("add", parents=[common], help="add a dated entry to a section")
    m.add_argument("file")
    m.add_argument("section")
    m.add_argument("text")
    m.add_argument("--date", help="YYYY-MM-DD (default: today, UTC)")
    _add_scope(m)
    m.set_defaults(creates=True)
    m = actions.add_parser("delete", parents=[common], help="delete the one entry matching --date and/or --text")
    m.add_argument("file")
    m.add_argument("section")
    m.add_argument("--date")
    m.add_argument("--text")
    _add_scope(m)
    p.set_defaults(func=cmd_memory)

    p = sub.add_parser("search", parents=[common], help="recall over an imported folder's notes")
    p.add_argument("query")
    p.add_argument("--limit", type=int)
    p.add_argument("--mode", choices=["fts5", "dense", "hybrid"])
    _add_scope(p)
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("remember-conversation", parents=[common], help="store chat messages as a session's next turns")
    p.add_argument("session", help="the conversation's name (no '#')")
    p.add_argument("file", help="messages as a JSON array or JSON Lines ({speaker, text, time, role, id}), or - for stdin")
    _add_scope(p)
    p.set_defaults(func=cmd_remember_conversation, creates=True)

    p = sub.add_parser("conversation", parents=[common], help="a session's turns in order, or around one turn")
    p.add_argument("session")
    p.add_argument("--around", type=int, help="a turn's id (e.g. a recall hit): show it with its neighbours")
    p.add_argument("--before", type=int, help="with --around: turns before it (default 3)")
    p.add_argument("--after", type=int, help="with --around: turns after it (default 3)")
    p.add_argument("--from-turn", type=int, dest="from_turn", help="without --around: the first turn (default 1)")
    p.add_argument("--limit", type=int, help="without --around: most turns (default 100)")
    _add_scope(p)
    p.set_defaults(func=cmd_conversation)

    p = sub.add_parser("link", parents=[common], help="link two memories (typed, weighted, directed)")
    p.add_argument("from_id", type=int)
    p.add_argument("to_id", type=int)
    p.add_argument("--relation", default="related")
    p.add_argument("--weight", type=float)
    p.add_argument("--source")
    _add_scope(p)
    p.set_defaults(func=cmd_link)

    p = sub.add_parser("unlink", parents=[common], help="close the link(s) from one memory to another")
    p.add_argument("from_id", type=int)
    p.add_argument("to_id", type=int)
    p.add_argument("--relation", help="only this relation (default: all)")
    _add_scope(p)
    p.set_defaults(func=cmd_unlink)

    p = sub.add_parser("traverse", parents=[common], help="walk the link graph breadth-first from a memory")
    p.add_argument("start", type=int)
    p.add_argument("--depth", type=int, default=2)
    p.add_argument("--relation", action="append", help="follow only this relation (repeatable)")
    p.add_argument("--direction", choices=["out", "in", "both"], default="both")
    _add_filters(p)
    p.set_defaults(func=cmd_traverse)

    p = sub.add_parser("prepare", parents=[common], help="markdown block to inject before an agent turn")
    _hidden(sub, "context", p)
    p.add_argument("context", help="what the agent is about to do (the coming turn)")
    p.add_argument("--max-chars", type=int, dest="max_chars", help="size budget (default 1500)")
    p.add_argument("--triggered", type=int, help="most triggered entities (default 5)")
    p.add_argument("--related", type=int, help="most related entities (default 5)")
    p.add_argument("--mode", choices=["fts5", "dense", "hybrid"], help="how related entities are found")
    p.add_argument("--min-score", type=_min_score, dest="min_score",
                   help="related memories scoring below this are left out (default auto)")
    p.add_argument("--no-semantic", action="store_true", dest="no_semantic", help="match triggers by words only")
    _add_scope(p)
    p.set_defaults(func=cmd_prepare)

    p = sub.add_parser("recall-when", parents=[common], help="entities whose recall_when triggers match a context")
    p.add_argument("context")
    p.add_argument("--limit", type=int)
    p.add_argument("--type")
    p.add_argument("--category")
    p.add_argument("--topic-path", dest="topic_path")
    p.add_argument("--min-similarity", type=float, dest="min_similarity")
    p.add_argument("--no-semantic", action="store_true", dest="no_semantic", help="match triggers by words only")
    _add_scope(p)
    p.set_defaults(func=cmd_recall_when)

    p = sub.add_parser("communities", parents=[common], help="clusters of the link graph (GraphRAG)")
    p.add_argument("--method", choices=["label_propagation", "modularity"])
    p.add_argument("--min-size", type=int, dest="min_size")
    p.add_argument("--limit", type=int)
    p.add_argument("--central", type=int, help="central members listed per community")
    _add_filters(p)
    p.set_defaults(func=cmd_communities)

    p = sub.add_parser("community-summary", parents=[common], help="a community's extractive summary (written once)")
    p.add_argument("community_id")
    p.add_argument("--method", choices=["label_propagation", "modularity"])
    p.add_argument("--max-chars", type=int, dest="max_chars")
    p.add_argument("--refresh", action="store_true", help="rewrite it even if the membership is unchanged")
    _add_scope(p)
    p.set_defaults(func=cmd_community_summary)

    p = sub.add_parser("global-recall", parents=[common], help="answer from the best communities and their members")
    p.add_argument("query")
    p.add_argument("--mode", choices=["fts5", "dense", "hybrid"])
    p.add_argument("--communities", type=int, help="communities to open (default 3)")
    p.add_argument("--per-community", type=int, dest="per_community", help="evidence items each (default 5)")
    p.add_argument("--max-chars", type=int, dest="max_chars", help="context budget (default 4000)")
    p.add_argument("--method", choices=["label_propagation", "modularity"])
    p.add_argument("--min-size", type=int, dest="min_size")
    p.add_argument("--no-reinforce", action="store_true", dest="no_reinforce")
    _add_scope(p)
    p.set_defaults(func=cmd_global_recall)

    for name, func, text in (("get-entity", cmd_get_entity, "one memory, whole, by id"),
                             ("forget", cmd_forget, "archive a memory (reversible)"),
                             ("purge", cmd_purge, "delete an archived memory for good")):
        p = sub.add_parser(name, parents=[common], help=text)
        p.add_argument("id", type=int)
        _add_scope(p)
        p.set_defaults(func=func)

    p = sub.add_parser("supersede", parents=[common], help="mark a memory replaced by a newer one")
    p.add_argument("old_id", type=int)
    p.add_argument("new_id", type=int)
    _add_scope(p)
    p.set_defaults(func=cmd_supersede)

    for name, func, times in (("as-of", cmd_as_of, ("as_of_unix_ms",)),
                              ("valid-at", cmd_valid_at, ("valid_at_unix_ms",)),
                              ("bitemporal", cmd_bitemporal, ("as_of_unix_ms", "valid_at_unix_ms"))):
        p = sub.add_parser(name, parents=[common], help=f"the version of a fact at {', '.join(times)}")
        p.add_argument("category")
        p.add_argument("key")
        for t in times:
            p.add_argument(t, type=_time, help="unix ms or ISO 8601 (e.g. 2026-01-31T09:30:00Z)")
        _add_scope(p)
        p.set_defaults(func=func)

    p = sub.add_parser("history", parents=[common], help="every version of a fact, newest first")
    p.add_argument("category")
    p.add_argument("key")
    p.add_argument("--agent-id", dest="agent_id")
    p.add_argument("--workspace-hash", dest="workspace_hash")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--offset", type=int, default=0)
    p.set_defaults(func=cmd_history)

    p = sub.add_parser("import", parents=[common], help="import JSONL (an export, or remember-shaped lines)")
    p.set_defaults(creates=True)
    p.add_argument("file", help="JSONL file, or - for standard input")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--progress", action="store_true", help="show progress even when stderr is not a terminal")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("export", parents=[common], help="export entities, history and links as JSONL")
    p.add_argument("file", nargs="?", default="-", help="output file (default: standard output)")
    p.add_argument("--agent-id", dest="agent_id")
    p.add_argument("--workspace-hash", dest="workspace_hash")
    p.set_defaults(func=cmd_export)

    for name, func, text in (
        ("stats", cmd_stats, "counts, sizes and versions"),
        ("check", cmd_check, "integrity and index sync (exit 1 on problems)"),
        ("reindex", cmd_reindex, "rebuild the keyword indexes, then check"),
    ):
        p = sub.add_parser(name, parents=[common], help=text)
        p.set_defaults(func=func)

    p = sub.add_parser("backup", parents=[common], help="consistent copy of the vault (safe while writing)")
    p.add_argument("target")
    p.set_defaults(func=cmd_backup)

    p = sub.add_parser("rekey", parents=[common], help="re-encrypt an encrypted vault under a new key")
    p.add_argument("--new-key-file", dest="new_key_file",
                   help=f"file holding the new key (default: ${NEW_KEY_ENV})")
    p.set_defaults(func=cmd_rekey)
    for name in list(sub._name_parser_map):  # the MCP tools' names for the same verbs
        if "-" in name:
            _hidden(sub, name.replace("-", "_"), sub._name_parser_map[name])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.db = getattr(args, "db", None) or default_path()
    args.json = getattr(args, "json", False)
    try:
        # A one-shot command answers with SQL; building the in-memory indexes would be wasted work.
        # A server is long-lived: it builds them.
        oneshot = args.command != "serve"
        # Only a write (or init, import, serve) creates a vault; a read of a missing one is an error.
        creates = bool(getattr(args, "creates", False))
        with Vault(args.db, keyword_index=not oneshot, vector_index=not oneshot, create=creates) as vault:
            args.func(vault, args)
    except VaultError as exc:
        print(f"error: {_one_line(str(exc))}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the CLI never shows a traceback unless asked
        if os.environ.get("PERSEUS_VAULT_DEBUG"):
            raise
        print(f"error: {type(exc).__name__}: {_one_line(str(exc))}", file=sys.stderr)
        return 1
    return 0


def run() -> NoReturn:
    """The console script: ``main``, then exit at once. The vault is closed by then and every
    write committed; skipping the interpreter's teardown (unloading the model runtime, collecting
    modules) saves about a tenth of a second per call, which ``prepare`` pays before every turn."""
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":
    run()
