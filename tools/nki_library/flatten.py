"""Flattening a library kernel into one module: the kernel's module and the helper modules it
needs, inlined into a single kernel.py that imports only what an accelopt task may import
(math, typing, functools, itertools, numpy, nki, nki.language, nki.isa, nki.typing).

What it does, all with `ast` on the checkout's files (nothing of the library runs):
- starting from the task's entry (`def kernel(...)`, written in references/<task>.toml), it
  collects the top-level statements each needed name comes from, across the library's modules
  (relative and absolute `nkilib` imports, package re-exports, `module.name` uses of imported
  modules), and only those;
- orders them so that what a statement needs when it runs (a class base, a decorator, a
  default, a constant's value) comes first;
- renames a top-level name that two modules both define (`name_<module>`), and every use;
- rewrites the NKI imports to one header (`from nki.isa import oob_mode` → `nisa.oob_mode`);
- drops annotations (the library's type hints pull in names no kernel needs), docstrings, and
  `@nki.jit` on library functions (only the entry `kernel` is jitted: a jitted kernel that
  calls another jitted kernel is not how a task runs);
- rewrites `@dataclass` classes into classes with a generated __init__/__eq__/__repr__, and
  `Enum` classes into a NamedTuple of members (iteration, `in`, `.name`, `.value` keep working;
  `isinstance(x, E)` becomes `isinstance(x, E_Member)`), so that neither module is imported;
- renames attributes with one leading underscore (`obj._x` → `obj.u_x`), which accelopt's
  static check refuses, consistently over the file;
- replaces a few statements that need the process (os.environ...) by stubs (STUBS).

What it cannot remove is reported, not hidden: accelopt's static check lists what it still
refuses (rotational_topk's configuration writes temporary .npy files with np.save at trace
time), and build_tasks.py records it per task.
"""

from __future__ import annotations

import ast
import copy
import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .sources import (
    LIBRARY,
    NKI_MODULE_ALIASES,
    LibraryIndex,
    SourceFile,
    parse_file,
    short_module,
)

ALLOWED_EXTERNAL = {"math", "typing", "functools", "itertools", "numpy"}
HEADER_IMPORTS = [
    "import math",
    "import numpy as np",
    "import nki",
    "import nki.language as nl",
    "import nki.isa as nisa",
]
EXTERNAL_STUBS: dict[str, str] = {
    # rotational_topk_utils builds its permutation constants with scipy.linalg.circulant
    "scipy.linalg.circulant": (
        "def circulant(c):\n"
        "    c = np.asarray(c).ravel()\n"
        "    n = len(c)\n"
        "    return c[(np.arange(n)[:, None] - np.arange(n)[None, :]) % n]\n"
    ),
}
"""Names imported from modules a task may not import → a NumPy definition put in their place."""
STUBS: dict[tuple[str, str], str] = {
    # reads os.environ at import time (log levels); a kernel has no environment
    (
        "core.utils.logging",
        "_init_from_env_py",
    ): "def _init_from_env_py():\n    return (None, {})\n",
}
"""(short module, top-level name) → replacement source."""
DROP_DECORATORS = {"nki.jit", "jit", "nki_jit"}


class FlattenError(Exception):
    pass


def _parse_function(source: str) -> ast.FunctionDef:
    """The one top-level def of `source`."""
    stmt = ast.parse(source).body[0]
    if not isinstance(stmt, ast.FunctionDef):
        raise FlattenError(f"not a def: {source.splitlines()[0]}")
    return stmt


def _parse_class(source: str) -> ast.ClassDef:
    """The one top-level class of `source`."""
    stmt = ast.parse(source).body[0]
    if not isinstance(stmt, ast.ClassDef):
        raise FlattenError(f"not a class: {source.splitlines()[0]}")
    return stmt


@dataclass
class Binding:
    kind: str
    """"def" (a top-level statement of this module), "lib" (a symbol of another module),
    "libmod" (another module), "nki" (an NKI module or member: `expr` is how to write it),
    "ext" (another module's name: `module`, `name`)."""
    module: str = ""
    name: str | None = None
    expr: str = ""


@dataclass
class Module:
    key: str
    source: SourceFile
    statements: list[ast.stmt] = field(default_factory=list)
    binds: dict[str, list[int]] = field(default_factory=dict)
    """name → indices of the top-level statements that bind it."""
    imports: dict[str, Binding] = field(default_factory=dict)

    @property
    def short(self) -> str:
        return (
            short_module(self.key)
            if self.source.collection == LIBRARY
            else Path(self.source.rel).stem
        )


def stmt_bindings(stmt: ast.stmt) -> set[str]:
    """Names a top-level statement binds (inside if/try blocks too, not inside defs)."""
    out: set[str] = set()
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return set()
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    elif isinstance(stmt, (ast.If, ast.Try, ast.For, ast.While, ast.With)):
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.stmt):
                out |= stmt_bindings(child)
            elif isinstance(child, ast.ExceptHandler):
                for s in child.body:
                    out |= stmt_bindings(s)
        for s in getattr(stmt, "orelse", []) + getattr(stmt, "finalbody", []):
            out |= stmt_bindings(s)
        return out
    for t in targets:
        for n in ast.walk(t):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.add(n.id)
    return out


def _is_import_only(stmt: ast.stmt) -> bool:
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return True
    if isinstance(stmt, ast.Try):  # try: from x import y / except ImportError
        return all(isinstance(s, (ast.Import, ast.ImportFrom, ast.Pass)) for s in stmt.body)
    return False


class Loader:
    """Modules by key, with their bindings; library modules resolved through LibraryIndex,
    other collections' sibling modules through the file's folder."""

    def __init__(self, index: LibraryIndex | None) -> None:
        self.index = index
        self.modules: dict[str, Module] = {}

    def library_module(self, name: str) -> Module:
        if name in self.modules:
            return self.modules[name]
        if self.index is None or name not in self.index.files:
            raise FlattenError(f"no library module {name}")
        return self._load(name, self.index.files[name])

    def file_module(self, root: Path, collection: str, path: Path) -> Module:
        source = parse_file(root, collection, path)
        key = source.module or f"{collection}:{source.rel}"
        if key in self.modules:
            return self.modules[key]
        return self._load(key, source)

    def _load(self, key: str, source: SourceFile) -> Module:
        if source.tree is None:
            raise FlattenError(f"{source.label} does not parse: {source.error}")
        module = Module(key, source)
        self.modules[key] = module
        for stmt in source.tree.body:
            if _is_import_only(stmt):
                imports = [stmt] if not isinstance(stmt, ast.Try) else stmt.body
                for imp in imports:
                    if isinstance(imp, (ast.Import, ast.ImportFrom)):
                        self._bind_import(module, imp)
                continue
            if isinstance(stmt, ast.If) and ast.unparse(stmt.test) == "__name__ == '__main__'":
                continue
            module.statements.append(stmt)
            i = len(module.statements) - 1
            for name in stmt_bindings(stmt):
                module.binds.setdefault(name, []).append(i)
        return module

    def _bind_import(self, module: Module, node: ast.Import | ast.ImportFrom) -> None:
        source = module.source
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in NKI_MODULE_ALIASES or a.name == "nki" or a.name.startswith("nki."):
                    if a.asname:
                        module.imports[a.asname] = Binding(
                            "nki", expr=NKI_MODULE_ALIASES.get(a.name, a.name)
                        )
                    else:
                        module.imports["nki"] = Binding("nki", expr="nki")
                elif a.name.startswith(("nkilib", "nkilib_src")):
                    name = a.name if a.name.startswith("nkilib_src") else "nkilib_src." + a.name
                    module.imports[a.asname or a.name.split(".")[0]] = Binding(
                        "libmod", module=name
                    )
                else:
                    module.imports[a.asname or a.name.split(".")[0]] = Binding("ext", module=a.name)
            return
        mod = node.module or ""
        if not node.level and (mod in NKI_MODULE_ALIASES or mod == "nki" or mod.startswith("nki.")):
            prefix = NKI_MODULE_ALIASES.get(mod, mod)
            for a in node.names:
                full = f"{mod}.{a.name}"
                expr = NKI_MODULE_ALIASES.get(full, f"{prefix}.{a.name}")
                module.imports[a.asname or a.name] = Binding("nki", expr=expr)
            return
        target = None
        if source.collection == LIBRARY and self.index is not None:
            target = self.index.resolve(source, node)
        elif not node.level and mod and (source.path.parent / f"{mod}.py").is_file():
            sibling = self.file_module(
                source.root, source.collection, source.path.parent / f"{mod}.py"
            )
            for a in node.names:
                module.imports[a.asname or a.name] = Binding("lib", module=sibling.key, name=a.name)
            return
        if target is not None and self.index is not None:
            for a in node.names:
                tmod, tname = self.index.resolve_symbol(target, a.name)
                if tname is None:
                    module.imports[a.asname or a.name] = Binding("libmod", module=tmod)
                else:
                    module.imports[a.asname or a.name] = Binding("lib", module=tmod, name=tname)
            return
        for a in node.names:
            stub = EXTERNAL_STUBS.get(f"{mod}.{a.name}")
            if stub is not None:
                stmt = _parse_function(stub)
                stmt.name = a.asname or a.name
                module.statements.append(stmt)
                module.binds.setdefault(stmt.name, []).append(len(module.statements) - 1)
                continue
            module.imports[a.asname or a.name] = Binding("ext", module=mod, name=a.name)

    def get(self, key: str) -> Module:
        if key in self.modules:
            return self.modules[key]
        return self.library_module(key)


# --- names a statement uses --------------------------------------------------------------------


Scope = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
"""What has a scope of its own: a function, a lambda."""
Comprehension = ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp


def _scope_locals(fn: Scope) -> set[str]:
    """Names bound inside a function (its parameters, assignments, loops, nested defs...), not
    counting those declared global."""
    out: set[str] = set()
    glob: set[str] = set()
    args = fn.args
    for a in args.posonlyargs + args.args + args.kwonlyargs:
        out.add(a.arg)
    if args.vararg:
        out.add(args.vararg.arg)
    if args.kwarg:
        out.add(args.kwarg.arg)
    todo: list[ast.AST] = [fn.body] if isinstance(fn, ast.Lambda) else list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
            if isinstance(node, ast.ClassDef):
                todo.extend(node.decorator_list + node.bases)
            else:
                todo.extend(
                    node.decorator_list
                    + node.args.defaults
                    + [d for d in node.args.kw_defaults if d]
                )
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Global):
            glob |= set(node.names)
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        if isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                out.add(alias.asname or alias.name.split(".")[0])
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue  # their targets are their own
        todo.extend(ast.iter_child_nodes(node))
    return out - glob


class _Uses(ast.NodeVisitor):
    """Global names a statement reads (scope-aware), and `module.attr` chains on names."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.attrs: set[tuple[str, str]] = set()
        self.shadow: list[set[str]] = []

    def _shadowed(self, name: str) -> bool:
        return any(name in s for s in self.shadow)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and not self._shadowed(node.id):
            self.names.add(node.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.value, ast.Name) and not self._shadowed(node.value.id):
            self.attrs.add((node.value.id, node.attr))
        self.generic_visit(node)

    def _function(self, node: Scope) -> None:
        for d in getattr(node, "decorator_list", []):
            self.visit(d)
        for d in node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(d)
        self.shadow.append(_scope_locals(node))
        body: list[ast.AST] = [node.body] if isinstance(node, ast.Lambda) else list(node.body)
        for s in body:
            self.visit(s)
        self.shadow.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def _comprehension(self, node: Comprehension) -> None:
        bound: set[str] = set()
        for gen in node.generators:
            for n in ast.walk(gen.target):
                if isinstance(n, ast.Name):
                    bound.add(n.id)
        self.visit(node.generators[0].iter)
        self.shadow.append(bound)
        for i, gen in enumerate(node.generators):
            if i:
                self.visit(gen.iter)
            for cond in gen.ifs:
                self.visit(cond)
        for part in ("elt", "key", "value"):
            if hasattr(node, part):
                self.visit(getattr(node, part))
        self.shadow.pop()

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension


def uses(nodes: Sequence[ast.AST]) -> _Uses:
    u = _Uses()
    for n in nodes:
        u.visit(n)
    return u


def eager_parts(stmt: ast.stmt) -> list[ast.AST]:
    """The parts of a top-level statement that run when the module is imported."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [
            *stmt.decorator_list,
            *stmt.args.defaults,
            *(d for d in stmt.args.kw_defaults if d),
        ]
    if isinstance(stmt, ast.ClassDef):
        parts: list[ast.AST] = [
            *stmt.decorator_list,
            *stmt.bases,
            *(k.value for k in stmt.keywords),
        ]
        for s in stmt.body:
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                parts += eager_parts(s)
            elif isinstance(s, ast.AnnAssign):
                if s.value is not None:
                    parts.append(s.value)
            else:
                parts.append(s)
        return parts
    if isinstance(stmt, ast.AnnAssign):
        return [stmt.value] if stmt.value is not None else []
    return [stmt]


# --- the flattener -------------------------------------------------------------------------------


@dataclass
class Result:
    source: str
    modules: list[str]
    """The library modules code was taken from."""
    statements: int
    renamed: dict[str, str]
    externals: list[str]
    """Names of other modules still needed (each a problem for the task's import rule)."""


Node = tuple[str, int]
"""A top-level statement: (module key, index in the module's statements)."""
Symbol = tuple[str, str]
"""A top-level name: (module key, name), bound by one or more of the module's statements."""
Resolved = (
    tuple[Literal["stmt"], Symbol]
    | tuple[Literal["nki"], str]
    | tuple[Literal["ext"], Binding]
    | tuple[Literal["libmod"], str]
)
"""What a name is (Flattener.resolve): a top-level name of a module, how to write an NKI name,
another module's name, a library module (its key)."""


def _import_order(needed: dict[Node, None], eager: dict[Node, set[Node]]) -> list[Node]:
    """The needed statements, each after the statements it needs at import time; otherwise
    first-seen order reversed (helpers before their users)."""
    natural = {n: i for i, n in enumerate(reversed(list(needed)))}
    indeg = dict.fromkeys(needed, 0)
    users: dict[Node, list[Node]] = {n: [] for n in needed}
    for n, deps in eager.items():
        for d in deps:
            if d != n:
                indeg[n] += 1
                users[d].append(n)
    heap = [(natural[n], n) for n in needed if indeg[n] == 0]
    heapq.heapify(heap)
    order: list[Node] = []
    while heap:
        _, n = heapq.heappop(heap)
        order.append(n)
        for u in users[n]:
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(heap, (natural[u], u))
    if len(order) != len(needed):
        stuck = [f"{k}:{i}" for k, i in needed if indeg[(k, i)] > 0][:5]
        raise FlattenError(f"circular import-time dependencies: {stuck}")
    return order


class Flattener:
    def __init__(self, loader: Loader) -> None:
        self.loader = loader

    def resolve(self, module: Module, name: str) -> Resolved | None:
        """What `name` in `module` is: ("stmt", (module key, name)), ("nki", expr),
        ("ext", Binding), ("libmod", key), or None (a builtin or unknown)."""
        seen = 0
        while seen < 20:
            seen += 1
            if name in module.binds:
                return "stmt", (module.key, name)
            b = module.imports.get(name)
            if b is None:
                return None
            if b.kind == "lib":
                if b.name is None:  # a symbol import always names the symbol
                    return None
                module = self.loader.get(b.module)
                name = b.name
                continue
            if b.kind == "libmod":
                return "libmod", b.module
            if b.kind == "nki":
                return "nki", b.expr
            return "ext", b
        raise FlattenError(f"import loop at {module.key}.{name}")

    def flatten(self, start: Module, entry_source: str, entry_name: str = "kernel") -> Result:
        entry = self._entry_module(start, entry_source)
        needed, eager, externals = self._needed(entry)
        order = _import_order(needed, eager)
        emitted, renamed = self._emitted_names(needed, order)
        tree = self._emit(order, emitted, entry_name)
        modules = sorted({k for k, _ in needed if k != "<entry>"})
        typing_names = sorted(_PostProcess.typing_needed(tree))
        header = list(HEADER_IMPORTS)
        if typing_names:
            header.append("from typing import " + ", ".join(typing_names))
        source = "\n".join(header) + "\n\n\n" + ast.unparse(tree) + "\n"
        bad_ext = sorted(
            e
            for e in externals
            if e.split(".")[0] not in ALLOWED_EXTERNAL and e not in ("dataclasses", "enum")
        )
        return Result(source, modules, len(order), renamed, bad_ext)

    def _entry_module(self, start: Module, entry_source: str) -> Module:
        """The task's entry as a module of its own, which sees the start module's names as if
        imported from it."""
        entry = Module("<entry>", start.source)
        entry.imports = dict(start.imports)
        for name in start.binds:
            entry.imports.setdefault(name, Binding("lib", module=start.key, name=name))
        for stmt in ast.parse(entry_source).body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self.loader._bind_import(entry, stmt)
                continue
            entry.statements.append(stmt)
            for n in stmt_bindings(stmt):
                entry.binds.setdefault(n, []).append(len(entry.statements) - 1)
        self.loader.modules["<entry>"] = entry
        return entry

    def _needed(self, entry: Module) -> tuple[dict[Node, None], dict[Node, set[Node]], set[str]]:
        """The statements the entry needs, in first-seen order; each one's import-time
        dependencies; and the names of other modules they use."""
        needed: dict[Node, None] = {}
        eager: dict[Node, set[Node]] = {}
        externals: set[str] = set()
        todo = [("<entry>", i) for i in range(len(entry.statements))]
        for node in todo:
            needed[node] = None
        while todo:
            node = todo.pop(0)
            mkey, idx = node
            module = self.loader.get(mkey)
            stmt = self._stmt(module, idx)
            deps = self._deps(module, [stmt], externals)
            eager[node] = self._deps(module, eager_parts(stmt), externals)
            for d in sorted(
                deps
            ):  # a set: sorted, so that a build does not depend on the hash seed
                if d not in needed:
                    needed[d] = None
                    todo.append(d)
        return needed, eager, externals

    def _emitted_names(
        self, needed: dict[Node, None], order: list[Node]
    ) -> tuple[dict[Symbol, str], dict[str, str]]:
        """(module key, name) → the name it is emitted under: the entry's names first, then
        the first module to define a name keeps it, later ones get `name_<module>`. Also the
        renamed ones, as `module.name` → new name."""
        emitted: dict[Symbol, str] = {}
        taken: set[str] = {"nki", "nl", "nisa", "np", "math", "nt"}
        renamed: dict[str, str] = {}
        ordered_for_names = [n for n in needed if n[0] == "<entry>"] + [
            n for n in order if n[0] != "<entry>"
        ]
        for mkey, idx in ordered_for_names:
            module = self.loader.get(mkey)
            for name in sorted(stmt_bindings(self._stmt(module, idx))):
                if (mkey, name) in emitted:
                    continue
                new = name
                if new in taken:
                    base = f"{name}_{module.short.split('.')[-1]}"
                    new, k = base, 2
                    while new in taken:
                        new, k = f"{base}{k}", k + 1
                    renamed[f"{module.short}.{name}"] = new
                taken.add(new)
                emitted[(mkey, name)] = new
        return emitted, renamed

    def _emit(self, order: list[Node], emitted: dict[Symbol, str], entry_name: str) -> ast.Module:
        """The statements in order, rewritten (_Rewriter) and post-processed (_PostProcess)."""
        self.aliases: dict[str, str] = {}
        body: list[ast.stmt] = []
        for mkey, idx in order:
            module = self.loader.get(mkey)
            stmt = copy.deepcopy(self._stmt(module, idx))
            stmt = _Rewriter(
                self, module, emitted, entry_name if mkey == "<entry>" else None
            ).visit(stmt)
            if stmt is not None:
                body.append(stmt)
        for alias, target in sorted(self.aliases.items()):
            body.append(ast.Assign([ast.Name(alias, ast.Store())], ast.Name(target, ast.Load())))
        tree = _PostProcess().run(ast.Module(body=body, type_ignores=[]))
        ast.fix_missing_locations(tree)
        return tree

    def _stmt(self, module: Module, idx: int) -> ast.stmt:
        stmt = module.statements[idx]
        for name in stmt_bindings(stmt):
            stub = STUBS.get((module.short, name))
            if stub is not None:
                return ast.parse(stub).body[0]
        return stmt

    def _deps(self, module: Module, parts: Sequence[ast.AST], externals: set[str]) -> set[Node]:
        u = uses(parts)
        out: set[Node] = set()
        for name in u.names:
            r = self.resolve(module, name)
            if r is None:
                continue
            if r[0] == "stmt":
                mkey, sym = r[1]
                target = self.loader.get(mkey)
                out |= {(mkey, i) for i in target.binds[sym]}
            elif r[0] == "ext":
                what = r[1]
                externals.add(what.module if what.name is None else f"{what.module}.{what.name}")
        for base, attr in u.attrs:
            r = self.resolve(module, base)
            if r is None or r[0] != "libmod":
                continue
            lib = self.loader.get(r[1])
            r2 = self.resolve(lib, attr)
            if r2 is not None and r2[0] == "stmt":
                mkey, sym = r2[1]
                out |= {(mkey, i) for i in self.loader.get(mkey).binds[sym]}
        return out


class _Rewriter(ast.NodeTransformer):
    """Renames a module's global names to their emitted names, NKI names to the header's
    modules, `libmodule.name` to the emitted name; drops annotations, docstrings, @nki.jit."""

    def __init__(
        self,
        flattener: Flattener,
        module: Module,
        emitted: dict[Symbol, str],
        entry_name: str | None,
    ) -> None:
        self.f = flattener
        self.module = module
        self.emitted = emitted
        self.entry_name = entry_name
        self.shadow: list[set[str]] = []
        self.class_depth = 0
        self.aliases = flattener.aliases

    def _global_expr(self, name: str) -> ast.expr | None:
        if any(name in s for s in self.shadow):
            return None
        r = self.f.resolve(self.module, name)
        if r is None:
            return None
        if r[0] == "stmt":
            new = self.emitted.get(r[1])
            if new and new != name and any(new in s for s in self.shadow):
                # the target's emitted name is a local here (an `import f as g` used in a
                # function with a parameter `f`): reach it through a module-level alias
                alias = f"{new}_global"
                self.aliases[alias] = new
                return ast.Name(alias, ast.Load())
            return ast.Name(new, ast.Load()) if new and new != name else None
        if r[0] == "nki":
            return ast.parse(r[1], mode="eval").body if r[1] != name else None
        return None

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load):
            expr = self._global_expr(node.id)
            if expr is not None:
                return ast.copy_location(expr, node)
        elif not self.shadow and not self.class_depth:  # a module-level store: the emitted name
            r = self.f.resolve(self.module, node.id)
            if r and r[0] == "stmt" and self.emitted.get(r[1], node.id) != node.id:
                return ast.copy_location(ast.Name(self.emitted[r[1]], node.ctx), node)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if isinstance(node.value, ast.Name) and not any(node.value.id in s for s in self.shadow):
            r = self.f.resolve(self.module, node.value.id)
            if r is not None and r[0] == "libmod":
                lib = self.f.loader.get(r[1])
                r2 = self.f.resolve(lib, node.attr)
                if r2 is not None and r2[0] == "stmt":
                    return ast.copy_location(ast.Name(self.emitted[r2[1]], ast.Load()), node)
                if r2 is not None and r2[0] == "nki":
                    return ast.copy_location(ast.parse(r2[1], mode="eval").body, node)
        self.generic_visit(node)
        return node

    def _strip_doc(self, body: list[ast.stmt]) -> list[ast.stmt]:
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            body = body[1:]
        return body or [ast.Pass()]

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        node.decorator_list = [
            self.visit(d)
            for d in node.decorator_list
            if ast.unparse(d.func if isinstance(d, ast.Call) else d) not in DROP_DECORATORS
        ]
        if not self.shadow and self.entry_name and node.name == self.entry_name:
            node.decorator_list.insert(0, ast.parse("nki.jit", mode="eval").body)
        if not self.shadow:  # a top-level def: its emitted name
            r = self.f.resolve(self.module, node.name)
            if r and r[0] == "stmt":
                node.name = self.emitted.get(r[1], node.name)
        node.returns = None
        for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
            a.annotation = None
        for star in (node.args.vararg, node.args.kwarg):
            if star is not None:
                star.annotation = None
        node.args.defaults = [self.visit(d) for d in node.args.defaults]
        node.args.kw_defaults = [
            self.visit(d) if d is not None else None for d in node.args.kw_defaults
        ]
        self.shadow.append(_scope_locals(node))
        node.body = self._strip_doc(
            [x for x in (self.visit(s) for s in node.body) if x is not None]
        )
        self.shadow.pop()
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        node.args.defaults = [self.visit(d) for d in node.args.defaults]
        self.shadow.append(_scope_locals(node))
        node.body = self.visit(node.body)
        self.shadow.pop()
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        if not self.shadow:
            r = self.f.resolve(self.module, node.name)
            if r and r[0] == "stmt":
                node.name = self.emitted.get(r[1], node.name)
        node.bases = [self.visit(b) for b in node.bases]
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        self.class_depth += 1
        node.body = self._strip_doc(
            [x for x in (self.visit(s) for s in node.body) if x is not None]
        )
        self.class_depth -= 1
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST | None:
        # class-level annotations are kept for the dataclass/enum rewrite (they name the
        # fields) and removed afterwards; elsewhere the annotation goes
        if self.shadow or not self.class_depth:
            if node.value is None:
                return None
            return ast.copy_location(
                ast.Assign([self.visit(node.target)], self.visit(node.value)), node
            )
        node.annotation = ast.Constant(ast.unparse(node.annotation))
        if node.value is not None:
            node.value = self.visit(node.value)
        return node

    def _comprehension(self, node: Comprehension) -> ast.AST:
        bound = {
            n.id for gen in node.generators for n in ast.walk(gen.target) if isinstance(n, ast.Name)
        }
        node.generators[0].iter = self.visit(node.generators[0].iter)
        self.shadow.append(bound)
        for i, gen in enumerate(node.generators):
            if i:
                gen.iter = self.visit(gen.iter)
            gen.ifs = [self.visit(c) for c in gen.ifs]
        for part in ("elt", "key", "value"):
            if hasattr(node, part):
                setattr(node, part, self.visit(getattr(node, part)))
        self.shadow.pop()
        return node

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension


# --- dataclasses, enums, private attributes --------------------------------------------------


def _decorator_name(d: ast.expr) -> str:
    return ast.unparse(d.func if isinstance(d, ast.Call) else d)


Field = tuple[str, ast.expr | None]
"""A dataclass field: its name and its value in the class body (None: no default)."""


def _dataclass_fields(cls: ast.ClassDef, fields_of: dict[str, list[Field]]) -> list[Field]:
    """A dataclass's fields, (name, value in the class body), the inherited ones first."""
    inherited: list[Field] = []
    for b in cls.bases:
        inherited = fields_of.get(ast.unparse(b), inherited)
    own: list[Field] = []
    for s in cls.body:
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name):
            # _Rewriter keeps a class-level annotation as its source text
            annotation = s.annotation
            ann = (
                annotation.value
                if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str)
                else ast.unparse(annotation)
            )
            if "ClassVar" in ann:
                continue
            own.append((s.target.id, s.value))
    return [f for f in inherited if f[0] not in {o[0] for o in own}] + own


def _field_default(value: ast.expr | None) -> tuple[ast.expr | None, ast.expr | None]:
    """A field's default (None: none) and default_factory, from its value in the class body
    (a plain value, `field(default=...)` or `field(default_factory=...)`)."""
    if isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1] == "field":
        kws = {k.arg: k.value for k in value.keywords}
        if "default_factory" in kws:
            return ast.Constant(None), kws["default_factory"]
        return kws.get("default"), None
    return value, None


def _set_self(name: str, value: ast.expr) -> ast.Assign:
    """`self.<name> = <value>`."""
    return ast.Assign([ast.Attribute(ast.Name("self", ast.Load()), name, ast.Store())], value)


def _dataclass_init(cls: ast.ClassDef, fields: list[Field], *, post_init: bool) -> ast.FunctionDef:
    """The __init__ @dataclass would generate (renaming __post_init__ to post_init_, which it
    calls)."""
    params: list[ast.arg] = []
    defaults: list[ast.expr] = []
    assigns: list[ast.stmt] = []
    for name, value in fields:
        default, factory = _field_default(value)
        params.append(ast.arg(name))
        if default is not None:
            defaults.append(default)
        elif defaults:
            raise FlattenError(
                f"dataclass {cls.name}: field {name} without a default after one with"
            )
        rhs: ast.expr = ast.Name(name, ast.Load())
        if factory is not None:
            rhs = ast.IfExp(
                ast.Compare(ast.Name(name, ast.Load()), [ast.Is()], [ast.Constant(None)]),
                ast.Call(factory, [], []),
                ast.Name(name, ast.Load()),
            )
        assigns.append(_set_self(name, rhs))
    if post_init:
        assigns.append(
            ast.Expr(
                ast.Call(
                    ast.Attribute(ast.Name("self", ast.Load()), "post_init_", ast.Load()), [], []
                )
            )
        )
        for s in cls.body:
            if isinstance(s, ast.FunctionDef) and s.name == "__post_init__":
                s.name = "post_init_"
    # Class attributes without an annotation are no dataclass fields in CPython, but the
    # library constructs NKIObject dataclasses with them as keywords (attention_cte's
    # SectionParams(section_idx=...)): NKI's own front end accepts that, so they become
    # keyword-only parameters with their value as the default.
    field_names = {f[0] for f in fields}
    kwonly = [
        (s.targets[0].id, s.value)
        for s in cls.body
        if isinstance(s, ast.Assign)
        and len(s.targets) == 1
        and isinstance(s.targets[0], ast.Name)
        and s.targets[0].id not in field_names
    ]
    assigns += [_set_self(name, ast.Name(name, ast.Load())) for name, _ in kwonly]
    init = _parse_function("def __init__(self):\n    pass\n")  # this Python's fields
    init.args = ast.arguments(
        posonlyargs=[],
        args=[ast.arg("self"), *params],
        vararg=None,
        kwonlyargs=[ast.arg(n) for n, _ in kwonly],
        kw_defaults=[copy.deepcopy(v) for _, v in kwonly],
        kwarg=None,
        defaults=defaults,
    )
    if assigns:
        init.body = assigns
    return init


def _dataclass_methods(
    cls_name: str, names: list[str], methods: set[str], *, frozen: bool
) -> list[str]:
    """Source of the __eq__, __hash__ (frozen) and __repr__ @dataclass would generate, where
    the class does not define its own."""

    def tuple_of(who: str) -> str:
        return "(" + "".join(f"{who}.{n}, " for n in names) + ")"

    extra = []
    if "__eq__" not in methods:
        extra.append(
            "def __eq__(self, other):\n"
            f"    return type(self) == type(other) and {tuple_of('self')} == {tuple_of('other')}\n"
        )
    if frozen and "__hash__" not in methods:
        extra.append(f"def __hash__(self):\n    return hash({tuple_of('self')})\n")
    if "__repr__" not in methods:
        inner = ", ".join(f"{n}={{self.{n}!r}}" for n in names)
        extra.append(f"def __repr__(self):\n    return f'{cls_name}({inner})'\n")
    return extra


RENAMED_BUILTINS = {"input", "vars", "compile", "open", "exit", "quit", "help", "globals", "locals"}
"""Builtins accelopt's static check refuses by name, which library code uses as variable names."""
CLASH_ATTRIBUTES = {"data", "alloc", "box", "dims", "producer", "valid", "base", "arrays"}
"""Attribute names accelopt's static check keeps for nkisim's own tensors (NKISIM_INTERNALS):
renamed where the flat module's own classes define them."""


class _PostProcess:
    """Rewrites @dataclass and Enum classes, and `._x` attributes, over the whole flat module."""

    def run(self, tree: ast.Module) -> ast.Module:
        classes = {s.name: s for s in tree.body if isinstance(s, ast.ClassDef)}
        self.enums = {
            n
            for n, c in classes.items()
            if any(ast.unparse(b).split(".")[-1] in ("Enum", "IntEnum") for b in c.bases)
        }
        body: list[ast.stmt] = []
        fields_of: dict[str, list[Field]] = {}
        for stmt in tree.body:
            if isinstance(stmt, ast.ClassDef) and stmt.name in self.enums:
                body.extend(self._enum(stmt))
            elif isinstance(stmt, ast.ClassDef) and any(
                _decorator_name(d).split(".")[-1] == "dataclass" for d in stmt.decorator_list
            ):
                body.append(self._dataclass(stmt, fields_of))
            else:
                if isinstance(stmt, ast.ClassDef):
                    self._drop_class_annotations(stmt)
                body.append(stmt)
        tree.body = body
        self._isinstance_enums(tree)
        self._private_attributes(tree)
        self._forbidden_parameters(tree)
        return tree

    def _forbidden_parameters(self, tree: ast.Module) -> None:
        """Parameters and locals named like builtins the static check refuses (`input`) get a
        trailing underscore, with the keywords of calls to the functions that take them."""
        functions: dict[str, set[str]] = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.Lambda)):
                args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                bad = {a.arg for a in args if a.arg in RENAMED_BUILTINS}
                if bad and isinstance(node, ast.FunctionDef):
                    functions.setdefault(node.name, set()).update(bad)
                for a in args:
                    if a.arg in RENAMED_BUILTINS:
                        a.arg += "_"
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in RENAMED_BUILTINS:
                node.id += "_"
            elif isinstance(node, ast.Call):
                callee = (
                    node.func.id
                    if isinstance(node.func, ast.Name)
                    else node.func.attr
                    if isinstance(node.func, ast.Attribute)
                    else None
                )
                for kw in node.keywords:
                    if callee in functions and kw.arg in functions[callee]:
                        kw.arg += "_"

    @staticmethod
    def typing_needed(tree: ast.Module) -> set[str]:
        if any(
            isinstance(s, ast.ClassDef) and any(ast.unparse(b) == "NamedTuple" for b in s.bases)
            for s in tree.body
        ):
            return {"NamedTuple"}
        return set()

    def _drop_class_annotations(self, cls: ast.ClassDef) -> None:
        new: list[ast.stmt] = []
        for s in cls.body:
            if isinstance(s, ast.AnnAssign):
                if s.value is not None:
                    new.append(ast.copy_location(ast.Assign([s.target], s.value), s))
                continue
            new.append(s)
        cls.body = new or [ast.Pass()]

    def _dataclass(self, cls: ast.ClassDef, fields_of: dict[str, list[Field]]) -> ast.ClassDef:
        deco = next(
            d for d in cls.decorator_list if _decorator_name(d).split(".")[-1] == "dataclass"
        )
        options = {k.arg: k.value for k in deco.keywords} if isinstance(deco, ast.Call) else {}
        frozen_option = options.get("frozen")
        frozen = isinstance(frozen_option, ast.Constant) and frozen_option.value is True
        cls.decorator_list = [d for d in cls.decorator_list if d is not deco]
        fields = _dataclass_fields(cls, fields_of)
        fields_of[cls.name] = fields
        methods = {s.name for s in cls.body if isinstance(s, ast.FunctionDef)}
        init = _dataclass_init(cls, fields, post_init="__post_init__" in methods)
        extra = _dataclass_methods(cls.name, [f[0] for f in fields], methods, frozen=frozen)
        body = [s for s in cls.body if not isinstance(s, ast.AnnAssign)]
        body = [s for s in body if not (isinstance(s, ast.Pass))]
        cls.body = [init] + [ast.parse(e).body[0] for e in extra] + body
        return cls

    def _enum(self, cls: ast.ClassDef) -> list[ast.stmt]:
        members: list[tuple[str, ast.expr]] = []
        methods: list[ast.FunctionDef] = []
        static: list[ast.FunctionDef] = []
        counter = 0
        for s in cls.body:
            if (
                isinstance(s, ast.Assign)
                and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name)
            ):
                value = s.value
                if isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1] == "auto":
                    counter += 1
                    value = ast.Constant(counter)
                elif isinstance(value, ast.Constant) and isinstance(value.value, int):
                    counter = value.value
                members.append((s.targets[0].id, value))
            elif isinstance(s, ast.FunctionDef):
                kinds = {_decorator_name(d) for d in s.decorator_list}
                (static if kinds & {"staticmethod", "classmethod"} else methods).append(s)
        name = cls.name
        member_cls = f"{name}_Member"
        lines = [
            f"class {member_cls}(NamedTuple):",
            "    enum: str",
            "    name: str",
            "    value: object",
            "",
        ]
        lines.append("    def __repr__(self):\n        return self.enum + '.' + self.name\n")
        member_def = _parse_class("\n".join(lines))
        member_def.body.extend(methods)
        ns_lines = [f"class {name}_Enum(NamedTuple):"]
        ns_lines += [f"    {m}: object" for m, _ in members] or ["    pass"]
        ns_def = _parse_class("\n".join(ns_lines))
        for s in static:
            if any(_decorator_name(d) == "classmethod" for d in s.decorator_list):
                raise FlattenError(f"enum {name}: classmethod {s.name} is not rewritten")
        ns_def.body.extend(static)
        call = ast.Call(
            ast.Name(f"{name}_Enum", ast.Load()),
            [
                ast.Call(
                    ast.Name(member_cls, ast.Load()), [ast.Constant(name), ast.Constant(m), v], []
                )
                for m, v in members
            ],
            [],
        )
        instance = ast.Assign([ast.Name(name, ast.Store())], call)
        return [member_def, ns_def, instance]

    def _isinstance_enums(self, tree: ast.Module) -> None:
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "isinstance"
                and len(node.args) == 2
            ):
                t = node.args[1]
                if isinstance(t, ast.Name) and t.id in self.enums:
                    node.args[1] = ast.Name(f"{t.id}_Member", ast.Load())

    def _private_attributes(self, tree: ast.Module) -> None:
        """`._x` → `.u_x` everywhere, with the names that define them (methods, class
        attributes, dataclass fields and __init__ parameters, keywords of calls)."""
        private = set()
        defined = set()
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                private.add(node.attr)
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                defined.add(node.attr)
            if isinstance(node, ast.ClassDef):
                defined |= {s.name for s in node.body if isinstance(s, ast.FunctionDef)}
                for s in node.body:
                    if isinstance(s, ast.FunctionDef) and s.name == "__init__":
                        defined |= {a.arg for a in s.args.args}
        private |= defined & CLASH_ATTRIBUTES
        existing = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        mapping = {}
        for p in private:
            new = "u" + p if p.startswith("_") else "u_" + p
            while new in existing:
                new = "u" + new
            mapping[p] = new
        if not mapping:
            return
        classes = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in mapping:
                node.attr = mapping[node.attr]
            elif isinstance(node, ast.Call):
                callee = node.func.id if isinstance(node.func, ast.Name) else None
                for kw in node.keywords:
                    if kw.arg in mapping and (kw.arg.startswith("_") or callee in classes):
                        kw.arg = mapping[kw.arg]
            elif isinstance(node, ast.ClassDef):
                for s in node.body:
                    if isinstance(s, ast.FunctionDef) and s.name in mapping:
                        s.name = mapping[s.name]
                    if isinstance(s, ast.FunctionDef) and s.name == "__init__":
                        for a in s.args.args:
                            if a.arg in mapping:
                                old = a.arg
                                a.arg = mapping[old]
                                for n in ast.walk(s):
                                    if isinstance(n, ast.Name) and n.id == old:
                                        n.id = mapping[old]
                    if isinstance(s, ast.Assign):
                        for t in s.targets:
                            if isinstance(t, ast.Name) and t.id in mapping:
                                t.id = mapping[t.id]
