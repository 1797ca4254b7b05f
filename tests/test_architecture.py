"""The boundaries between the packages, read from the source (``ast``; nothing is imported):

- the adapters (``perseus_vault_integrations``) use only the names in ``perseus_vault_core.__all__``,
  imported as ``from perseus_vault_core import ...``;
- the core never imports an adapter, not even inside a function;
- neither package, nor ``benchmarks/``, has an import cycle among its modules, counting a package's
  ``__init__`` as a module and an import under ``if TYPE_CHECKING:`` as an import (naming a type ties two
  modules as much);
- the core's tree is the drawing in docs/architecture.md: its top holds only the layer packages of
  :data:`LAYERS`, drawn in that order, and each layer imports only the layers beneath it;
- SQLite stays behind the storage seam: outside ``perseus_vault_core/storage/``, no module imports
  the SQLite backend (the package's ``open_backend`` picks it) and no SQL names an SQLite-only thing
  (FTS5 tables, sqlite-vec functions, pragmas, the change log, ``INSERT OR``);
- the tests mirror the modules (:func:`unmirrored_tests`, :func:`untested_modules`): a module's own tests
  are ``tests/core/<its path>/test_<its name>.py`` (``tests/integrations/...`` for an adapter), a package's
  ``__init__`` that defines something is tested by ``test_package.py`` in its folder, and every test file
  under ``tests/core/`` and ``tests/integrations/`` is one module's;
- the facade has one convention: each verb method of ``Vault`` validates its arguments and ends in one
  call down, ``self.call(<its verb>, <params model>)``, and facade/dispatch.py hands each verb's model to
  one function of a layer below; outside the facade, no module reads a private attribute of ``Vault``
  (``vault.engine`` is the public way to its engine);
- ruff passes: the tree is formatted and clean by pyproject.toml's rules (:func:`test_ruff_passes`).

And, at run time, importing the core loads no framework and no adapter.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = "perseus_vault_core"
INTEGRATIONS = "perseus_vault_integrations"
FRAMEWORKS = ("langchain", "langchain_core", "langgraph", "llama_index", "mcp", "uvicorn")


# The core's layers, top to bottom, as docs/architecture.md draws them: each a package of the core ('' is
# perseus_vault_core/__init__.py, the public names). A module imports modules of its own layer and of the
# layers below it, never of one above; packages that share a row stand side by side and import neither.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("cli",),
    ("resident",),
    ("",),
    ("state",),
    ("facade",),
    ("features",),
    ("engine",),
    ("recall",),
    ("records",),
    ("indexes",),
    ("storage", "embeddings"),
    ("primitives",),
    ("contract",),
)


@dataclass(frozen=True)
class Import:
    """One import statement: the module it names (absolute), the names it takes from it (``None`` for
    ``import x``), and where it stands."""

    module: str
    names: tuple[str, ...] | None
    line: int


def package_modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` under ``root`` by its dotted name (a package by its ``__init__``)."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports_of(module: str, path: Path) -> list[Import]:
    """Every import in the module at ``path``, at any depth (functions, classes, ``try``, ``if
    TYPE_CHECKING:``), relative ones made absolute."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Import] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.extend(Import(alias.name, None, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            found.append(Import(base, tuple(alias.name for alias in node.names), node.lineno))
    return sorted(found, key=lambda imp: imp.line)


def public_names(init: Path) -> set[str]:
    """The names in the literal ``__all__`` of a package's ``__init__.py``."""
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return set(ast.literal_eval(node.value))
    raise AssertionError(f"{init} has no literal __all__")


# --- the checks, each a list of what breaks the rule -------------------------------------------------


def non_public_uses(root: Path) -> list[str]:
    """Imports of the core by the adapters that are not ``from perseus_vault_core import <public names>``."""
    allowed = public_names(root / CORE / "__init__.py")
    bad = []
    for module, path in package_modules(root, INTEGRATIONS).items():
        for imp in imports_of(module, path):
            if imp.module.split(".")[0] != CORE:
                continue
            where = f"{module}:{imp.line}"
            if imp.module != CORE or imp.names is None:
                bad.append(f"{where} imports {imp.module} (use: from {CORE} import <public names>)")
            else:
                bad += [
                    f"{where} imports {name} from {CORE}, which is not in its __all__"
                    for name in imp.names
                    if name not in allowed
                ]
    return bad


SQL = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|CREATE|PRAGMA)\b")
SQLITE_ONLY = re.compile(
    r"(?i)\bfts5\b|_fts\b|\bvec_\w+\(|\bPRAGMA\b|\bhead_changes\b|\bsqlite_\w+|\bMATCH\b|"
    r"\bINSERT OR \w+|\bbm25\("
)
BACKEND = f"{CORE}.storage.sqlite"


def _docstrings(tree: ast.AST) -> set[int]:
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def sqlite_outside_storage(root: Path) -> list[str]:
    """Modules of the core outside ``storage/`` that import the SQLite backend or issue SQLite-only SQL."""
    bad = []
    for module, path in package_modules(root, CORE).items():
        if module == f"{CORE}.storage" or module.startswith(f"{CORE}.storage."):
            continue
        bad += [
            f"{module}:{imp.line} imports {imp.module}"
            for imp in imports_of(module, path)
            if imp.module == BACKEND
            or imp.module.startswith(BACKEND + ".")
            or (imp.module == f"{CORE}.storage" and "sqlite" in (imp.names or ()))
        ]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docs
                and SQL.search(node.value)
                and (found := SQLITE_ONLY.search(node.value))
            ):
                bad.append(f"{module}:{node.lineno} SQL uses {found.group(0)!r}")
            if isinstance(node, ast.Attribute) and node.attr == "lastrowid":  # Postgres has none
                bad.append(f"{module}:{node.lineno} reads cursor.lastrowid (use INSERT ... RETURNING)")
    return bad


def core_imports_of_integrations(root: Path) -> list[str]:
    return [
        f"{module}:{imp.line} imports {imp.module}"
        for module, path in package_modules(root, CORE).items()
        for imp in imports_of(module, path)
        if imp.module.split(".")[0] == INTEGRATIONS
    ]


def _packages_above(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Which of ``package``'s modules each of its modules imports, counting a package's ``__init__`` as a
    module: ``from p import x`` imports ``p`` (it reads that namespace) and the module ``p.x`` when there
    is one; ``import p.x`` imports ``p.x``; and importing ``a.b.c`` runs the ``__init__`` of ``a`` and
    ``a.b`` first, except those of the importer's own packages, which are running already."""
    modules = package_modules(root, package)
    graph: dict[str, set[str]] = {module: set() for module in modules}
    for module, path in modules.items():
        running = _packages_above(module)
        for imp in imports_of(module, path):
            if imp.module not in modules:
                continue
            targets = {imp.module} | {
                f"{imp.module}.{n}" for n in imp.names or () if f"{imp.module}.{n}" in modules
            }
            for target in list(targets):
                targets |= _packages_above(target) - running
            graph[module] |= targets & modules.keys()
    for module in graph:
        graph[module].discard(module)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected group of modules, as ``[a, b, ..., a]``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def connect(node: str) -> None:  # Tarjan's algorithm; the graphs are small enough to recurse
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return [_cycle_in(graph, set(group)) for group in groups]


def _cycle_in(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A path from the group's first module back to itself, within the group (breadth first)."""
    start = min(group)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(graph[node] & group):
            if nxt == start:
                return paths[node] + [start]
            if nxt not in paths:
                paths[nxt] = paths[node] + [nxt]
                queue.append(nxt)
    raise AssertionError(f"no cycle in {group}")  # pragma: no cover - a strongly connected group has one


def described(found: list[list[str]]) -> str:
    return "; ".join(" -> ".join(cycle) for cycle in found)


def layer(module: str) -> str:
    """The layer package of one of the core's modules ('' for the core's own ``__init__``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def upward_imports(graph: dict[str, set[str]], layers: tuple[tuple[str, ...], ...] = LAYERS) -> list[str]:
    """Imports between the core's layers that do not go down ``layers`` (or leave them)."""
    row = {name: i for i, names in enumerate(layers) for name in names}
    bad = []
    for module in sorted(graph):
        for target in sorted(graph[module]):
            here, there = layer(module), layer(target)
            if here != there and (here not in row or there not in row or row[there] <= row[here]):
                bad.append(
                    f"{module} imports {target}: layer {there or '(the package)'!r} is not beneath "
                    f"{here or '(the package)'!r}"
                )
    return bad


def drawn_layers(text: str, packages: set[str]) -> list[tuple[str, ...]]:
    """The rows of the drawing that opens docs/architecture.md's "The layers": on each line, the layer
    packages it names (``name/``, ``__init__.py`` for the core's own)."""
    drawing = text.split("## The layers", 1)[1].split("```", 2)[1]
    rows = []
    for line in drawing.splitlines():
        names = tuple(
            "" if word == "__init__.py" else word.rstrip("/")
            for word in line.split()
            if word == "__init__.py" or (word.endswith("/") and word.rstrip("/") in packages)
        )
        if names:
            rows.append(names)
    return rows


# Where each module's own tests live: ``tests/core/<path>/test_<name>.py`` for
# ``perseus_vault_core/<path>/<name>.py``, ``tests/integrations/...`` for ``perseus_vault_integrations/...``;
# ``test_package.py`` for a package's ``__init__``.
# Tests of the product whole are outside the rule: ``tests/reliability/`` (crashes, concurrency, bad input,
# tenancy), ``tests/benchmarks/`` (the benchmarks' own tests) and the files at the top of ``tests/`` (the
# architecture, the layout, the docs and examples, the install, every surface at once).
TESTS = "tests"
MIRRORS = {"core": CORE, "integrations": INTEGRATIONS}

# Modules still without a test file of their own: none now, every module has its ``test_<name>.py``. An
# entry would wait for its file, and the check fails once it has it, so that the list only shrinks. Do not
# add to it: a new module comes with its test file.
UNTESTED: frozenset[str] = frozenset()

# Test files that still test several modules or a concern no module is named for, each waiting to be
# split into the modules' own files (the check fails once it is gone, so the list only shrinks).
UNMIRRORED: frozenset[str] = frozenset()


def is_face(path: Path) -> bool:
    """A package's ``__init__`` that defines no function or class: a docstring, imports and names (its
    public face), with nothing of its own to test."""
    return path.name == "__init__.py" and not any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
    )


def mirror_of(module: Path, root: Path) -> Path:
    """Where the tests of ``module`` (a path under ``root``) live."""
    side = {package: folder for folder, package in MIRRORS.items()}
    package, *inner, name = module.relative_to(root).parts
    return root.joinpath(
        TESTS, side[package], *inner, "test_package.py" if name == "__init__.py" else f"test_{name}"
    )


def unmirrored_tests(root: Path, allowed: frozenset[str] = frozenset()) -> list[str]:
    """Test files under ``tests/core/`` and ``tests/integrations/`` that are no module's (an allowed one
    that is gone, or mirrors a module now, is named too)."""
    mirrored = {
        mirror_of(path, root) for package in MIRRORS.values() for path in (root / package).rglob("*.py")
    }
    bad = []
    for folder in MIRRORS:
        for test in sorted((root / TESTS / folder).rglob("test_*.py")):
            name = test.relative_to(root).as_posix()
            if test not in mirrored and name not in allowed:
                bad.append(f"{name} tests no module (name it test_<module>.py beside the module's mirror)")
    for name in sorted(allowed):
        if not (root / name).is_file() or root / name in mirrored:
            bad.append(
                f"{name} is allowed as unmirrored but is gone or mirrors a module now: take it off the list"
            )
    return bad


def untested_modules(root: Path, allowed: frozenset[str] = frozenset()) -> list[str]:
    """Modules of both packages without their test file, leaving out ``__main__`` (a script's entry) and
    a package's face (an allowed one that has its test file now, or is gone, is named too)."""
    bad = []
    modules = sorted(path for package in MIRRORS.values() for path in (root / package).rglob("*.py"))
    for module in modules:
        name = module.relative_to(root).as_posix()
        if module.name == "__main__.py" or is_face(module) or mirror_of(module, root).is_file():
            if name in allowed and module.name != "__main__.py" and not is_face(module):
                bad.append(
                    f"{name} has {mirror_of(module, root).relative_to(root).as_posix()} now: "
                    "take it off the untested list"
                )
        elif name not in allowed:
            bad.append(f"{name} has no {mirror_of(module, root).relative_to(root).as_posix()}")
    bad += [
        f"{name} is on the untested list but is no module any more"
        for name in sorted(allowed)
        if not (root / name).is_file()
    ]
    return bad


FACADE = f"{CORE}/facade"
# What a verb method may call besides its one call down: the helpers that turn arguments into a params model.
ARGUMENT_CHECKS = frozenset(
    {
        "validate",
        "given",
        "listed",
        "path_text",
        "check_key",
        "query_vector",
        "isinstance",
        "hasattr",
        "callable",
    }
)


def _class(path: Path, name: str) -> ast.ClassDef:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
    assert found, f"{path} defines no class {name}"
    return found[0]


def vault_private_names(root: Path) -> set[str]:
    """``Vault``'s private attributes: its members named ``_x`` and what its methods assign to ``self._x``
    (dunders aside)."""
    cls = _class(root / FACADE / "vault.py", "Vault")
    names = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    names |= {
        t.attr
        for n in ast.walk(cls)
        if isinstance(n, (ast.Assign, ast.AnnAssign))
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
    }
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def private_vault_reads(root: Path, names: set[str]) -> list[str]:
    """Reads of ``names`` outside the facade, in the core, the adapters, the benchmarks, the examples and
    the tests: ``x._engine`` (or ``getattr(x, "_engine")``) on anything but ``self``, whose attribute of
    that name is its own (state/scoped.py keeps its engine so)."""
    bad = []
    for top in (CORE, INTEGRATIONS, "benchmarks", "examples", "tests"):
        for path in sorted((root / top).rglob("*.py")):
            if path.is_relative_to(root / FACADE):
                continue
            where = path.relative_to(root).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                if isinstance(node, ast.Attribute) and node.attr in names:
                    target, name = node.value, node.attr
                elif (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id in ("getattr", "setattr", "hasattr")
                    and len(node.args) > 1
                    and isinstance(node.args[1], ast.Constant)
                    and node.args[1].value in names
                ):
                    target, name = node.args[0], str(node.args[1].value)
                else:
                    continue
                if not (isinstance(target, ast.Name) and target.id in ("self", "cls")):
                    bad.append(f"{where}:{node.lineno} reads Vault's private {name}")
    return bad


def _is_edge(method: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "edge" for d in method.decorator_list)


def work_table(root: Path) -> dict[str, ast.expr]:
    """facade/dispatch.py's ``WORK``: each verb's name and the expression naming its function."""
    for node in ast.parse((root / FACADE / "dispatch.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "WORK":
            table = next(n for n in ast.walk(node.value) if isinstance(n, ast.Dict))
            return {ast.literal_eval(k): v for k, v in zip(table.keys, table.values) if k is not None}
    raise AssertionError("facade/dispatch.py has no WORK table")


def _self_engine(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "_engine"
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def verbs_with_more_than_one_call_down(root: Path) -> list[str]:
    """``Vault``'s verb methods (wrapped in ``edge``, ``__init__`` and ``call`` aside) that do more than
    check their arguments and make one call down. A verb's body, after its docstring, is statements that
    check its arguments (every call in them is one of ARGUMENT_CHECKS, or the error a ``raise`` makes, or a
    method of a value of its own, such as a dict's ``items``) and then ``return <the call down>``: for a
    verb of facade/dispatch.py's table, ``self.call("<its own name>", ...)``; for another, ``self.call`` of
    a verb of the table or one method of ``self._engine``. ``self`` appears nowhere else and no ``lambda``
    anywhere: a verb that opens a transaction, reads the clock or reaches the backend is named."""
    verbs = set(work_table(root))
    bad = []
    for method in _class(root / FACADE / "vault.py", "Vault").body:
        if not (isinstance(method, ast.FunctionDef) and _is_edge(method)) or method.name in (
            "__init__",
            "call",
        ):
            continue
        where = f"Vault.{method.name}"
        body = method.body[1:] if ast.get_docstring(method) is not None else method.body
        last = body[-1] if body else None
        down = last.value if isinstance(last, ast.Return) and isinstance(last.value, ast.Call) else None
        if down is None:
            bad.append(f"{where} does not end in returning one call down")
            continue
        func, down_nodes = down.func, list(ast.walk(last))
        named = down.args[0].value if down.args and isinstance(down.args[0], ast.Constant) else None
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "call"
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
        ):
            if method.name in verbs and named != method.name:
                bad.append(f"{where} calls {named!r} down, not its own verb")
            elif named not in verbs:
                bad.append(f"{where} calls {named!r} down, which facade/dispatch.py does not name")
        elif not (isinstance(func, ast.Attribute) and _self_engine(func.value)) or method.name in verbs:
            bad.append(f"{where} ends in {ast.unparse(func)}(...), not self.call({method.name!r}, ...)")
        a = method.args
        arguments = a.args + a.kwonlyargs + [n for n in (a.vararg, a.kwarg) if n is not None]
        own = {a.arg for a in arguments} | {
            n.id
            for s in body
            for n in ast.walk(s)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        raised = {id(n.exc) for s in body for n in ast.walk(s) if isinstance(n, ast.Raise) and n.exc}
        for node in (n for s in body for n in ast.walk(s)):
            if isinstance(node, ast.Lambda):
                bad.append(f"{where}:{node.lineno} makes a lambda")
            elif isinstance(node, ast.Name) and node.id == "self" and not any(node is n for n in down_nodes):
                bad.append(f"{where}:{node.lineno} uses self before its call down")
            elif isinstance(node, ast.Call) and node is not down and id(node) not in raised:
                f = node.func
                if not (
                    (isinstance(f, ast.Name) and f.id in ARGUMENT_CHECKS)
                    or (
                        isinstance(f, ast.Attribute)
                        and isinstance(f.value, ast.Name)
                        and f.value.id in own - {"self"}
                    )
                ):
                    bad.append(f"{where}:{node.lineno} calls {ast.unparse(f)}, which checks no argument")
    return bad


def work_not_below(root: Path) -> list[str]:
    """Entries of facade/dispatch.py's table that are not one function of a layer below the facade taking
    ``(engine, params)`` (anything more with a default) and returning what the verb method of that name
    says it returns."""
    dispatch = root / FACADE / "dispatch.py"
    imported = {}  # a name dispatch.py imports -> the module (or class) it names
    for node in ast.walk(ast.parse(dispatch.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = ".".join([CORE, "facade"][: 3 - node.level] + ([node.module] if node.module else []))
            imported |= {alias.asname or alias.name: f"{base}.{alias.name}" for alias in node.names}
    row = {name: i for i, names in enumerate(LAYERS) for name in names}
    modules = package_modules(root, CORE)
    vault = _class(root / FACADE / "vault.py", "Vault")
    methods = {m.name: m for m in vault.body if isinstance(m, ast.FunctionDef)}
    bad = []
    for verb, expr in work_table(root).items():
        if not (
            isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id in imported
        ):
            bad.append(f"{verb}: {ast.unparse(expr)} is not a function of an imported module or class")
            continue
        owner, function = imported[expr.value.id], expr.attr
        module = owner if owner in modules else owner.rpartition(".")[0]
        if module not in modules or row.get(layer(module), -1) <= row["facade"]:
            bad.append(f"{verb}: {owner}.{function} is not of a layer below the facade")
            continue
        scope = (
            ast.parse(modules[module].read_text(encoding="utf-8")).body
            if owner == module
            else _class(modules[module], owner.rpartition(".")[2]).body
        )  # a method: the engine's recall
        defs = [n for n in scope if isinstance(n, ast.FunctionDef) and n.name == function]
        if not defs:
            bad.append(f"{verb}: {owner} defines no function {function}")
            continue
        args = defs[0].args
        names = [a.arg for a in args.posonlyargs + args.args]
        if len(names) < 2 or names[0] not in ("engine", "self") or len(names) - 2 > len(args.defaults):
            bad.append(f"{verb}: {owner}.{function}({', '.join(names)}) does not take (engine, params) alone")
        method = methods.get(verb)
        said, promised = (
            ast.unparse(r) if r is not None else "nothing said"
            for r in (defs[0].returns, method.returns if method is not None else None)
        )
        if method is not None and said != promised:
            bad.append(f"{verb}: {owner}.{function} returns {said}, Vault.{verb} {promised}")
    return bad


# --- the repository keeps the rules -----------------------------------------------------------------


def test_the_adapters_use_only_the_core_s_public_names() -> None:
    bad = non_public_uses(ROOT)
    assert not bad, "\n".join(bad)


def test_the_core_never_imports_an_adapter() -> None:
    bad = core_imports_of_integrations(ROOT)
    assert not bad, "\n".join(bad)


def test_sqlite_stays_behind_the_storage_seam() -> None:
    bad = sqlite_outside_storage(ROOT)
    assert not bad, "\n".join(bad)


def test_the_adapters_have_no_import_cycle() -> None:
    found = cycles(import_graph(ROOT, INTEGRATIONS))
    assert not found, f"import cycles: {described(found)}"


def test_the_core_has_no_import_cycle() -> None:
    found = cycles(import_graph(ROOT, CORE))
    assert not found, f"import cycles: {described(found)}"


def test_the_benchmarks_have_no_import_cycle() -> None:
    """Each part renders its section with benchmarks/report.py; none imports run.py, which runs them all."""
    found = cycles(import_graph(ROOT, "benchmarks"))
    assert not found, f"import cycles: {described(found)}"


def test_each_layer_imports_only_the_layers_beneath_it() -> None:
    bad = upward_imports(import_graph(ROOT, CORE))
    assert not bad, "\n".join(bad)


def test_the_tree_is_the_drawing() -> None:
    core = ROOT / CORE
    loose = sorted(p.name for p in core.glob("*.py") if p.name != "__init__.py")
    assert not loose, f"modules at the core's top, outside every layer: {loose}"
    packages = {p.name for p in core.iterdir() if (p / "__init__.py").is_file()}
    assert packages == {name for row in LAYERS for name in row} - {""}, (
        "a layer package not in LAYERS, or gone"
    )
    shadowing = packages & public_names(
        core / "__init__.py"
    )  # importing one would set the package's attribute
    assert not shadowing, f"layer packages named like public names: {sorted(shadowing)}"
    drawing = drawn_layers((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"), packages)
    assert drawing == list(LAYERS), "docs/architecture.md draws the layers otherwise than LAYERS orders them"


def test_no_module_outside_the_facade_reads_a_private_attribute_of_vault() -> None:
    names = vault_private_names(ROOT)
    assert "_engine" in names
    bad = private_vault_reads(ROOT, names)
    assert not bad, "\n".join(bad)


def test_each_verb_of_the_facade_makes_one_call_down_to_one_function_below() -> None:
    bad = verbs_with_more_than_one_call_down(ROOT) + work_not_below(ROOT)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("command", [["format", "--check"], ["check"]])
def test_ruff_passes(command: list[str]) -> None:
    """The tree is formatted and clean by the rules pyproject.toml sets (``make test`` runs the same first)."""
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *command, "--quiet", "."], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_importing_the_core_loads_no_framework_and_no_adapter() -> None:
    roots = (INTEGRATIONS, *FRAMEWORKS)
    code = (
        f"import sys, {CORE}\nfrom {CORE} import Vault\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {roots!r}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_each_test_file_is_a_module_s() -> None:
    bad = unmirrored_tests(ROOT, UNMIRRORED)
    assert not bad, "\n".join(bad)


def test_each_module_has_its_test_file() -> None:
    bad = untested_modules(ROOT, UNTESTED)
    assert not bad, "\n".join(bad)


# --- the checks can fail ------------------------------------------------------------------------------


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_the_checks_name_each_violation(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            f"{CORE}/__init__.py": "from .vault import Vault\n__all__ = ['Vault']\n",
            f"{CORE}/vault.py": "class Vault: ...\n",
            f"{CORE}/cli.py": f"def serve():\n    from {INTEGRATIONS}.mcp import server\n",
            f"{INTEGRATIONS}/__init__.py": "",
            f"{INTEGRATIONS}/mcp/__init__.py": "from .server import build\n",
            f"{INTEGRATIONS}/mcp/server.py": (
                f"from {CORE} import Vault, secret\nfrom {CORE}.vault import Vault\nimport {CORE}\n"
            ),
        },
    )
    assert non_public_uses(root) == [
        f"{INTEGRATIONS}.mcp.server:1 imports secret from {CORE}, which is not in its __all__",
        f"{INTEGRATIONS}.mcp.server:2 imports {CORE}.vault (use: from {CORE} import <public names>)",
        f"{INTEGRATIONS}.mcp.server:3 imports {CORE} (use: from {CORE} import <public names>)",
    ]
    assert core_imports_of_integrations(root) == [f"{CORE}.cli:2 imports {INTEGRATIONS}.mcp"]


def test_a_cycle_is_found_through_relative_imports_and_type_checking_ones(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from .b import f\nA = 1\n",
            "pkg/b.py": "def f():\n    from .sub.c import C\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/c.py": "from ..a import A\n",
            "pkg/d.py": "import typing\nif typing.TYPE_CHECKING:\n    from .e import E\n",
            "pkg/e.py": "from .d import x\n",
        },
    )
    graph = import_graph(root, "pkg")
    assert (
        graph["pkg.a"] == {"pkg.b"}
        and graph["pkg.b"] == {"pkg.sub", "pkg.sub.c"}
        and graph["pkg.d"] == {"pkg.e"}
    )
    assert sorted(described([c]) for c in cycles(graph)) == [
        "pkg.a -> pkg.b -> pkg.sub.c -> pkg.a",
        "pkg.d -> pkg.e -> pkg.d",
    ]


def test_a_package_s_init_counts_and_an_upward_import_is_named(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "core/__init__.py": "",
            "core/low/__init__.py": "from .b import B\n",
            "core/low/a.py": "A = 1\n",
            "core/low/b.py": "from . import a\nB = a.A\n",  # reads low's namespace, whose __init__ imports b
            "core/low/d.py": "def f():\n    from ..high import c\n",
            "core/high/__init__.py": "",
            "core/high/c.py": "from ..low.a import A\n",  # runs low's __init__ first
        },
    )
    graph = import_graph(root, "core")
    assert graph["core.high.c"] == {"core.low", "core.low.a"} and graph["core.low.b"] == {
        "core.low",
        "core.low.a",
    }
    assert described(cycles(graph)) == "core.low -> core.low.b -> core.low"
    assert upward_imports(graph, (("high",), ("low",))) == [
        "core.low.d imports core.high: layer 'high' is not beneath 'low'",
        "core.low.d imports core.high.c: layer 'high' is not beneath 'low'",
    ]
    assert upward_imports(graph, (("high", "low"),))[0].startswith(
        "core.high.c imports core.low: layer 'low'"
    )


def test_the_drawing_is_read_row_by_row() -> None:
    text = (
        "## The layers\n\n```\n callers   Python code\n cli/      the command line\n __init__.py  names\n"
        " storage/  sqlite/ postgres/     embeddings/  the model\n```\n"
    )
    assert drawn_layers(text, {"cli", "storage", "embeddings"}) == [
        ("cli",),
        ("",),
        ("storage", "embeddings"),
    ]


def test_the_seam_check_names_each_leak(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            f"{CORE}/__init__.py": "",
            f"{CORE}/storage/__init__.py": "from .sqlite import Backend\n",
            f"{CORE}/storage/sqlite/__init__.py": 'SQL = "SELECT bm25(entities_fts) FROM entities_fts WHERE entities_fts MATCH ?"\n',
            f"{CORE}/recall.py": (
                '"""Keyword recall: FTS5 MATCH, as the docs say."""\n'
                "from .storage.sqlite import keyword\n"
                'MODE = "fts5"\n'
                'Q = "SELECT vid FROM entities_fts WHERE entities_fts MATCH :q"\n'
            ),
            f"{CORE}/memory.py": (
                'SET = "INSERT OR REPLACE INTO vault_meta (key, value) VALUES (?, ?)"\n'
                "def add(conn):\n"
                "    return conn.execute('INSERT INTO links (from_id) VALUES (1)').lastrowid\n"
            ),
        },
    )
    assert sqlite_outside_storage(root) == [
        f"{CORE}.memory:1 SQL uses 'INSERT OR REPLACE'",
        f"{CORE}.memory:3 reads cursor.lastrowid (use INSERT ... RETURNING)",
        f"{CORE}.recall:2 imports {CORE}.storage.sqlite",
        f"{CORE}.recall:4 SQL uses '_fts'",
    ]


def test_the_mirror_check_names_each_test_file_and_module_out_of_place(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            f"{CORE}/__init__.py": "from .store import Store\n",  # a face: nothing to test
            f"{CORE}/store.py": "class Store: ...\n",
            f"{CORE}/recall/__init__.py": "def recall(): ...\n",  # defines something: test_package.py
            f"{CORE}/recall/fusion.py": "",
            f"{CORE}/recall/__main__.py": "recall()\n",
            f"{CORE}/gone.py": "",
            f"{INTEGRATIONS}/mcp/server.py": "",
            f"{TESTS}/core/test_store.py": "",
            f"{TESTS}/core/recall/test_dense_recall.py": "",
            f"{TESTS}/core/recall/test_fusion.py": "",
            f"{TESTS}/core/test_gone.py": "",
            f"{TESTS}/integrations/mcp/test_text.py": "",
            f"{TESTS}/reliability/test_crash.py": "",  # the product whole: outside the rule
            f"{TESTS}/test_layout.py": "",
        },
    )
    lost = " tests no module (name it test_<module>.py beside the module's mirror)"
    assert unmirrored_tests(root) == [
        f"{TESTS}/core/recall/test_dense_recall.py{lost}",
        f"{TESTS}/integrations/mcp/test_text.py{lost}",
    ]
    allowed = frozenset({f"{TESTS}/integrations/mcp/test_text.py", f"{TESTS}/core/test_gone.py"})
    assert unmirrored_tests(root, allowed) == [
        f"{TESTS}/core/recall/test_dense_recall.py{lost}",
        f"{TESTS}/core/test_gone.py is allowed as unmirrored but is gone or mirrors a module now: take it off the list",
    ]
    assert untested_modules(root) == [
        f"{CORE}/recall/__init__.py has no {TESTS}/core/recall/test_package.py",
        f"{INTEGRATIONS}/mcp/server.py has no {TESTS}/integrations/mcp/test_server.py",
    ]
    allowed = frozenset({f"{INTEGRATIONS}/mcp/server.py", f"{CORE}/store.py", f"{CORE}/old.py"})
    assert untested_modules(root, allowed) == [
        f"{CORE}/recall/__init__.py has no {TESTS}/core/recall/test_package.py",
        f"{CORE}/store.py has {TESTS}/core/test_store.py now: take it off the untested list",
        f"{CORE}/old.py is on the untested list but is no module any more",
    ]


def test_the_facade_checks_name_each_violation(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            f"{CORE}/facade/vault.py": (
                "class Vault:\n"
                "    def __init__(self):\n        self._engine = open()\n        self.path = ''\n"
                "    def _read(self, work):\n        return self._engine.read(work)\n"
                "    @edge\n    def get(self, id) -> E:\n        'One memory.'\n"
                "        return self.call('get', validate(P, given(id=id)))\n"
                "    @edge\n    def forget(self, id) -> E:\n"
                "        p, e = validate(P, {'id': id}), self._engine\n"
                "        e.write(lambda c: store.forget(c, p.id))\n"
                "        return e.entity(p.id)\n"
                "    @edge\n    def scan(self, **f) -> S:\n"
                "        if 'x' in f:\n            raise InvalidInput('x', 'no')\n"
                "        return self.call('get', validate(P, {k: v for k, v in f.items()}))\n"
                "    @edge\n    def wait(self, t):\n        return self._engine.wait(self._engine.index, t)\n"
                "    @edge\n    def peek(self):\n        return store.peek(self._engine.conn())\n"
            ),
            f"{CORE}/facade/helpers.py": "def scan(engine, p): ...\n",
            f"{CORE}/facade/dispatch.py": (
                "from ..features import work as w\nfrom . import helpers\n"
                "WORK: dict = {'get': w.get, 'forget': w.forget, 'scan': helpers.scan, 'gone': w.gone,\n"
                "              'wait': w.scan}\n"
            ),
            f"{CORE}/features/work.py": (
                "def get(engine, p, progress=None) -> E:\n    ...\n"
                "def forget(engine) -> E:\n    ...\n"
                "def scan(engine, p) -> list[E]:\n    ...\n"
            ),
            f"{CORE}/state/scoped.py": (
                "class Scoped:\n    def __init__(self, vault):\n        self._engine = vault._engine\n"
            ),
            f"{INTEGRATIONS}/mcp/server.py": "def run(vault):\n    return getattr(vault, '_read')(None)\n",
            "benchmarks/speed.py": "def p50(vault):\n    vault._engine.index = None\n",
            "tests/test_x.py": "def test(vault):\n    assert vault._engine.conn() and vault.engine and vault.closing\n",
        },
    )
    assert vault_private_names(root) == {"_engine", "_read"}
    assert private_vault_reads(root, vault_private_names(root)) == [
        f"{CORE}/state/scoped.py:3 reads Vault's private _engine",  # its own self._engine is not Vault's
        f"{INTEGRATIONS}/mcp/server.py:2 reads Vault's private _read",
        "benchmarks/speed.py:2 reads Vault's private _engine",
        "tests/test_x.py:2 reads Vault's private _engine",
    ]
    assert verbs_with_more_than_one_call_down(root) == [
        "Vault.forget ends in e.entity(...), not self.call('forget', ...)",
        "Vault.forget:13 uses self before its call down",  # the engine taken, to open a transaction with
        "Vault.forget:14 makes a lambda",
        "Vault.forget:14 calls store.forget, which checks no argument",
        "Vault.scan calls 'get' down, not its own verb",
        "Vault.wait ends in self._engine.wait(...), not self.call('wait', ...)",  # a verb of the table
        "Vault.peek ends in store.peek(...), not self.call('peek', ...)",
        "Vault.peek:26 calls self._engine.conn, which checks no argument",
    ]
    assert work_not_below(root) == [
        "forget: perseus_vault_core.features.work.forget(engine) does not take (engine, params) alone",
        "scan: perseus_vault_core.facade.helpers.scan is not of a layer below the facade",
        "gone: perseus_vault_core.features.work defines no function gone",
        "wait: perseus_vault_core.features.work.scan returns list[E], Vault.wait nothing said",
    ]
