"""Survey of the public current-NKI kernels: every kernel (a top-level @nki.jit function, or a
library function that nki-library's own tests launch as a kernel), its inputs and library
dependencies, and the NKI API and Python features the kernel-side code uses.

    .venv/bin/python -m tools.nki_library.survey --ext /work/ext [--preamble report.md]

writes <ext>/survey.md (tables), <ext>/api_usage.json ({name: {calls, refs, kwargs, files}})
and <ext>/kernels.json (the kernel list). Only parses the checkouts; runs none of their code.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

from .apis import ApiCount, ApiJson, count_apis, nki_bindings
from .sources import (
    LIBRARY,
    LibraryIndex,
    SourceFile,
    collect,
    import_closure,
    short_module,
)

JIT_NAMES = ("jit", "nki_jit")


def decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    return ast.unparse(target)


def is_jit(fn: ast.FunctionDef) -> bool:
    return any(decorator_name(d).split(".")[-1] in JIT_NAMES for d in fn.decorator_list)


def docstring_summary(fn: ast.FunctionDef) -> str:
    doc = ast.get_docstring(fn) or ""
    for line in doc.splitlines():
        if line.strip():
            return line.strip()
    return ""


def arg_docs(fn: ast.FunctionDef) -> dict[str, str]:
    """`name (type): text` lines of the docstring's Args section → the first line of text."""
    doc = ast.get_docstring(fn) or ""
    out: dict[str, str] = {}
    in_args = False
    for line in doc.splitlines():
        stripped = line.strip()
        if re.match(r"^(Args|Arguments|Parameters|Inputs)\s*:", stripped):
            in_args = True
            continue
        if in_args and re.match(r"^[A-Z][A-Za-z ]*:\s*$", stripped):
            in_args = False
        if not in_args:
            continue
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(\([^)]*\))?\s*:\s*(.*)$", stripped)
        if m and m.group(1) not in out:
            out[m.group(1)] = (m.group(2) or "") + " " + m.group(3)
    return {k: v.strip() for k, v in out.items()}


def signature(fn: ast.FunctionDef) -> list[str]:
    args = fn.args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    out = []
    for a, d in zip(positional, defaults, strict=True):
        text = a.arg
        if a.annotation is not None:
            text += ": " + ast.unparse(a.annotation)
        if d is not None:
            text += " = " + ast.unparse(d)
        out.append(text)
    if args.vararg:
        out.append("*" + args.vararg.arg)
    for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        out.append(a.arg + ("" if d is None else " = " + ast.unparse(d)))
    if args.kwarg:
        out.append("**" + args.kwarg.arg)
    return out


NOT_KERNELS = {
    "kernel_assert",
    "is_hbm_buffer",
    "get_program_sharding_info",
    "get_verified_program_sharding_info",
    "div_ceil",
    "assert_shape",
    "resize_cache_block_len_for_attention_tkg_kernel",
}


def kernel_like(module: str, name: str | None) -> bool:
    """A library function a test wrapper calls that is a kernel, not a helper (None: the name
    is a module)."""
    return (
        name is not None
        and not name.startswith("_")
        and name not in NOT_KERNELS
        and name[:1].islower()
    )


# --- kernels launched by nki-library's tests -----------------------------------------------


Launched = tuple[str, str | None]
"""(library module, function name); name None where the symbol is a module."""
Bindings = tuple[dict[str, Launched], dict[str, str]]
"""A test file's names imported from the library: symbols, and modules."""


def _library_imports(tree: ast.Module, index: LibraryIndex) -> Bindings:
    imported: dict[str, Launched] = {}
    modules: dict[str, str] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith(("nkilib_src.nkilib", "nkilib."))
        ):
            mod = (
                node.module if node.module.startswith("nkilib_src") else "nkilib_src." + node.module
            )
            for a in node.names:
                target, name = index.resolve_symbol(mod, a.name)
                if name is None:
                    modules[a.asname or a.name] = target
                else:
                    imported[a.asname or a.name] = (target, name)
    return imported, modules


def _library_ref(expr: ast.expr, bindings: Bindings, index: LibraryIndex) -> list[Launched]:
    """The library function `expr` names directly (`f` or `module.f`), if any."""
    imported, modules = bindings
    if isinstance(expr, ast.Name) and expr.id in imported:
        return [imported[expr.id]]
    if (
        isinstance(expr, ast.Attribute)
        and isinstance(expr.value, ast.Name)
        and expr.value.id in modules
    ):
        return [index.resolve_symbol(modules[expr.value.id], expr.attr)]
    return []


def _launched(
    expr: ast.expr,
    bindings: Bindings,
    local: dict[str, tuple[ast.FunctionDef, Bindings]],
    index: LibraryIndex,
) -> list[Launched]:
    """The library kernels a launched expression stands for: a library function, `nki.jit(f)`
    / `nki.jit()(f)` of one, or a test wrapper (then the kernel-like library functions it
    calls)."""
    if isinstance(expr, ast.Call):  # nki.jit(f), nki.jit()(f)
        return [r for a in expr.args for r in _launched(a, bindings, local, index)]
    direct = _library_ref(expr, bindings, index)
    if direct:
        return direct
    if isinstance(expr, ast.Name) and expr.id in local:  # a test wrapper
        fn, wrapper_bindings = local[expr.id]
        called = []
        for n in ast.walk(fn):
            if isinstance(n, ast.Call):
                called += [
                    r for r in _library_ref(n.func, wrapper_bindings, index) if kernel_like(*r)
                ]
        return called
    return []


def _launch_values(node: ast.AST) -> list[ast.expr]:
    """What a test passes as the kernel: `kernel_entry=`/`kernel_func=` keywords or
    assignments, and the arguments of `nki.jit(...)`."""
    if (isinstance(node, ast.keyword) and node.arg in ("kernel_entry", "kernel_func")) or (
        isinstance(node, ast.Assign)
        and any(
            isinstance(t, ast.Name) and t.id in ("kernel_func", "kernel_entry")
            for t in node.targets
        )
    ):
        return [node.value]
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "nki.jit":
        return list(node.args)
    return []


def test_entries(checkout: Path, index: LibraryIndex) -> dict[tuple[str, str], list[str]]:
    """(module, function) of library functions the tests launch as kernels → the tests."""
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    tests = checkout / "test" / "integration"
    if not tests.is_dir():
        return found
    parsed: dict[Path, tuple[ast.Module, Bindings]] = {}
    all_defs: dict[str, tuple[ast.FunctionDef, Bindings]] = {}
    for path in sorted(tests.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except SyntaxError:
            continue
        bindings = _library_imports(tree, index)
        parsed[path] = (tree, bindings)
        for n in tree.body:
            if isinstance(n, ast.FunctionDef):
                all_defs.setdefault(n.name, (n, bindings))
    for path, (tree, bindings) in parsed.items():
        if not path.name.startswith("test_"):
            continue
        local = {
            **all_defs,
            **{n.name: (n, bindings) for n in tree.body if isinstance(n, ast.FunctionDef)},
        }
        rel = str(path.relative_to(checkout))
        for node in ast.walk(tree):
            for v in _launch_values(node):
                for mod, name in _launched(v, bindings, local, index):
                    source = index.files.get(mod)
                    if source is None or source.tree is None or name is None:
                        continue
                    defs = {n.name for n in source.tree.body if isinstance(n, ast.FunctionDef)}
                    if name in defs and rel not in found[(mod, name)]:
                        found[(mod, name)].append(rel)
    return found


# --- language features ---------------------------------------------------------------------

FEATURE_HELP = {
    ".ap(...) access patterns": "tensor.ap(pattern=..., offset=...) calls",
    "nl.ds(start, size)": "dynamic slices",
    "nl.fori_loop / nl.while_loop": "0.6 dynamic loops",
    "nl.program_id / num_programs / program_ndim": "SPMD / LNC queries",
    "kernel[grid] launches": "subscripted kernels (SPMD/LNC grids) in kernel-side code",
}


COUNTED_BUILTINS = (
    "getattr",
    "setattr",
    "hasattr",
    "isinstance",
    "type",
    "super",
    "print",
    "min",
    "max",
    "range",
    "len",
    "zip",
    "enumerate",
    "list",
    "tuple",
    "dict",
    "int",
    "float",
    "bool",
    "abs",
    "sum",
    "sorted",
    "reversed",
    "any",
    "all",
    "map",
    "filter",
    "divmod",
    "round",
    "str",
    "set",
    "iter",
    "next",
    "id",
    "callable",
    "vars",
    "repr",
    "hash",
    "pow",
    "slice",
    "object",
)
"""Builtins whose calls the survey counts."""


class FeatureCounter(ast.NodeVisitor):
    def __init__(self) -> None:
        self.c: Counter[str] = Counter()
        self.methods: Counter[str] = Counter()
        self.decorators: Counter[str] = Counter()
        self.bases: Counter[str] = Counter()
        self.builtins: Counter[str] = Counter()
        self.loops: Counter[str] = Counter()
        self.depth = 0

    def visit_file(self, tree: ast.Module, bound: dict[str, str]) -> None:
        self.bound = bound
        self.visit(tree)

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        if isinstance(f, ast.Attribute):
            receiver_is_module = isinstance(f.value, ast.Name) and f.value.id in self.bound
            if not receiver_is_module and not (
                isinstance(f.value, ast.Attribute)
                and isinstance(f.value.value, ast.Name)
                and f.value.value.id in self.bound
            ):
                self.methods[f.attr] += 1
            if f.attr == "ap":
                self.c[".ap(...) access patterns"] += 1
        elif isinstance(f, ast.Name) and f.id in COUNTED_BUILTINS:
            self.builtins[f.id] += 1
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        it = node.iter
        name = ast.unparse(it.func) if isinstance(it, ast.Call) else type(it).__name__
        name = re.sub(r"^(nki\.language|nl)\.", "nl.", name)
        self.loops[
            name
            if name.startswith(("nl.", "range", "zip", "enumerate", "reversed"))
            else "other iterable"
        ] += 1
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        for d in node.decorator_list:
            self.decorators[decorator_name(d)] += 1
        if self.depth:
            self.c["nested def (closures)"] += 1
        if node.args.vararg or node.args.kwarg:
            self.c["*args / **kwargs"] += 1
        if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(node)):
            self.c["generators (yield)"] += 1
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.c["classes"] += 1
        for b in node.bases:
            self.bases[ast.unparse(b)] += 1
        for d in node.decorator_list:
            self.decorators[decorator_name(d)] += 1
            if decorator_name(d).endswith("dataclass"):
                self.c["@dataclass classes"] += 1
        if any(ast.unparse(b).endswith("Enum") for b in node.bases):
            self.c["Enum classes"] += 1
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.c["lambda"] += 1
        self.generic_visit(node)

    def visit_ListComp(self, node: ast.AST) -> None:
        self.c["comprehensions"] += 1
        self.generic_visit(node)

    visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.c["attribute assignment (obj.x = ...)"] += 1
        if node.attr.startswith("_"):
            self.c["underscore attribute (obj._x)"] += 1
        self.generic_visit(node)

    def visit_Try(self, node: ast.Try) -> None:
        self.c["try/except"] += 1
        self.generic_visit(node)

    def visit_With(self, node: ast.With) -> None:
        self.c["with statements"] += 1
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        self.c["assert"] += 1
        self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        self.c["f-strings"] += 1
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        self.c["global statements"] += 1

    def visit_While(self, node: ast.While) -> None:
        self.c["Python while loops"] += 1
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        for op in node.ops:
            if isinstance(op, (ast.Is, ast.IsNot)):
                self.c["`is` / `is not` comparisons"] += 1
        self.generic_visit(node)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.c["walrus :="] += 1
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        s = node.slice
        elts = s.elts if isinstance(s, ast.Tuple) else [s]
        for e in elts:
            if isinstance(e, ast.Slice) and e.step is not None:
                self.c["slices with a step (a:b:c)"] += 1
            if isinstance(e, ast.Constant) and e.value is None:
                self.c["None (newaxis) in subscripts"] += 1
            if isinstance(e, ast.Constant) and e.value is Ellipsis:
                self.c["Ellipsis in subscripts"] += 1
        self.generic_visit(node)


def features(
    files: list[SourceFile], kernel_names: set[str]
) -> tuple[Counter[str], FeatureCounter]:
    fc = FeatureCounter()
    grids: Counter[str] = Counter()
    for f in files:
        if f.tree is None:
            continue
        bound = nki_bindings(f.tree)
        fc.visit_file(f.tree, bound)
        for node in ast.walk(f.tree):
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Name)
                and node.value.id in kernel_names
            ):
                grids[f"{node.value.id}[{ast.unparse(node.slice)}]"] += 1
    return grids, fc


# --- report --------------------------------------------------------------------------------


def md_table(headers: list[str], rows: Sequence[Sequence[object]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for r in rows:
        out.append(
            "| " + " | ".join(str(x).replace("|", "\\|").replace("\n", " ") for x in r) + " |"
        )
    return "\n".join(out)


class KernelRecord(TypedDict):
    """One kernel in kernels.json."""

    id: str
    """`collection:module::function` (the file's path where it is not a library module)."""
    collection: str
    file: str
    function: str
    kind: str
    """`jit`, `jit (private sub-kernel)` or `test entry`."""
    decorators: list[str]
    description: str
    params: list[str]
    param_docs: dict[str, str]
    deps: list[str]
    """The library modules it imports, directly or not (short names)."""
    tests: list[str]
    lines: int
    duplicate_of: str | None
    """The first kernel found with the same body (`label::function`), if any."""


def kernel_entry(
    f: SourceFile,
    fn: ast.FunctionDef,
    kind: str,
    *,
    deps: list[str],
    tests: list[str],
    duplicate_of: str | None,
) -> KernelRecord:
    """One kernel's record in kernels.json."""
    module = short_module(f.module) if f.module else f.rel
    return {
        "id": f"{f.collection}:{module}::{fn.name}",
        "collection": f.collection,
        "file": f.rel,
        "function": fn.name,
        "kind": kind,
        "decorators": [decorator_name(d) for d in fn.decorator_list],
        "description": docstring_summary(fn),
        "params": signature(fn),
        "param_docs": arg_docs(fn),
        "deps": deps,
        "tests": tests,
        "lines": (fn.end_lineno or fn.lineno) - fn.lineno + 1,
        "duplicate_of": duplicate_of,
    }


def find_kernels(
    files: list[SourceFile], entries: dict[tuple[str, str], list[str]], index: LibraryIndex
) -> list[KernelRecord]:
    """Top-level @nki.jit functions and the library functions the tests launch as kernels
    (commented-out @nki.jit kernels that the tests jit at the call site are among the latter)."""
    kernels = []
    seen_bodies: dict[str, str] = {}
    for f in files:
        if f.tree is None:
            continue
        for fn in f.tree.body:
            if not isinstance(fn, ast.FunctionDef):
                continue
            key = (f.module, fn.name) if f.module else None
            jit = is_jit(fn)
            tests = entries.get(key, []) if key else []
            if not jit and not tests:
                continue
            body = ast.dump(fn)
            duplicate = seen_bodies.get(body)
            seen_bodies.setdefault(body, f"{f.label}::{fn.name}")
            deps = [short_module(m) for m in import_closure(index, f.module)] if f.module else []
            kind = "jit" if jit else "test entry"
            if jit and fn.name.startswith("_"):
                kind = "jit (private sub-kernel)"
            kernels.append(
                kernel_entry(f, fn, kind, deps=deps, tests=tests, duplicate_of=duplicate)
            )
    return kernels


def api_usage(files: list[SourceFile]) -> dict[str, ApiJson]:
    """NKI API name → its counts (ApiCount.as_json), the most used first."""
    api: dict[str, ApiCount] = defaultdict(ApiCount)
    for f in files:
        if f.tree is not None:
            count_apis(f.tree, f.label, api)
    return {
        k: v.as_json() for k, v in sorted(api.items(), key=lambda kv: -(kv[1].calls + kv[1].refs))
    }


def kernels_section(files: list[SourceFile], kernels: list[KernelRecord]) -> list[str]:
    # syntax errors are listed here (the kernels of such files are not found)
    broken = [f.label + ": " + f.error for f in files if f.tree is None]
    by_coll = Counter(f.collection for f in files)
    parts = [
        "# Survey tables (generated by tools/nki_library/survey.py)\n",
        "Files scanned (kernel-side, current NKI): "
        + ", ".join(f"{k}: {v}" for k, v in by_coll.items())
        + f". Files that do not parse: {len(broken)}"
        + ("".join(f"\n- {b}" for b in broken))
        + "\n",
        f"## Kernels ({len(kernels)})\n",
        "kind: `jit` = top-level @nki.jit function; `test entry` = a plain library function that "
        "nki-library's tests launch as a kernel (kernel_entry=/kernel_func=, directly or through "
        "a test wrapper).\n",
    ]
    rows = [
        [
            f"`{k['function']}`",
            f"{k['collection']}:{k['file']}",
            k["kind"] + (f" (same as {k['duplicate_of']})" if k["duplicate_of"] else ""),
            k["description"][:110],
            k["lines"],
            ", ".join(k["deps"])
            if len(k["deps"]) <= 6
            else ", ".join(k["deps"][:6]) + f", … ({len(k['deps'])})",
        ]
        for k in kernels
    ]
    parts.append(md_table(["kernel", "file", "kind", "description", "lines", "library deps"], rows))
    return parts


def inputs_section(kernels: list[KernelRecord]) -> list[str]:
    parts = [
        "\n## Kernel inputs\n",
        "Signature, then each argument's docstring line (shapes/dtypes as the library documents "
        "them).\n",
    ]
    for k in kernels:
        parts.append(f"### `{k['function']}` ({k['collection']}:{k['file']})\n")
        parts.append("`" + k["function"] + "(" + ", ".join(k["params"]) + ")`\n")
        for name, text in k["param_docs"].items():
            parts.append(f"- `{name}` {text[:160]}")
        if k["tests"]:
            parts.append(f"- tests: {', '.join(k['tests'])}")
        parts.append("")
    return parts


def api_section(api_json: dict[str, ApiJson]) -> list[str]:
    rows = []
    for name, v in api_json.items():
        kw = ", ".join(f"{k}:{c}" for k, c in v["kwargs"].items())
        rows.append([f"`{name}`", v["calls"], v["refs"], len(v["files"]), kw])
    return [
        f"\n## NKI API usage ({len(api_json)} names)\n",
        "calls = call sites; refs = non-call uses (dtypes, buffers, enums, ops passed as values); "
        "kwargs = keyword arguments at the call sites.\n",
        md_table(["name", "calls", "refs", "files", "kwargs used"], rows),
    ]


def features_section(fc: FeatureCounter, grids: Counter[str]) -> list[str]:
    def counts(header: str, counter: Counter[str], top: int | None = None) -> str:
        return md_table([header, "count"], [[k, v] for k, v in counter.most_common(top)])

    return [
        "\n## Language features (all kernel-side files)\n",
        md_table(
            ["feature", "count"], [[k, v] for k, v in sorted(fc.c.items(), key=lambda kv: -kv[1])]
        ),
        "\n### Loop iterables\n",
        counts("iterable", fc.loops),
        "\n### Decorators\n",
        counts("decorator", fc.decorators),
        "\n### Class bases\n",
        counts("base", fc.bases),
        "\n### Builtins called\n",
        counts("builtin", fc.builtins),
        "\n### Methods called on non-module objects (top 60: tensor methods and the library's "
        "own classes)\n",
        counts("method", fc.methods, 60),
        "\n### Subscripted kernels (grid launches) in kernel-side code\n",
        counts("expression", grids) if grids else "none\n",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(
        prog="python -m tools.nki_library.survey",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--ext", type=Path, default=Path("/work/ext"))
    ap.add_argument("--preamble", type=Path, help="markdown put before the tables")
    ap.add_argument("--out", type=Path, help="survey.md path (default <ext>/survey.md)")
    args = ap.parse_args()
    ext: Path = args.ext

    files = collect(ext)
    checkout = ext / LIBRARY
    index = LibraryIndex.load(checkout) if checkout.is_dir() else LibraryIndex(checkout)
    entries = test_entries(checkout, index) if checkout.is_dir() else {}
    kernels = find_kernels(files, entries, index)
    api_json = api_usage(files)
    (ext / "api_usage.json").write_text(json.dumps(api_json, indent=1) + "\n")
    (ext / "kernels.json").write_text(json.dumps(kernels, indent=1) + "\n")
    grids, fc = features(files, {k["function"] for k in kernels})

    parts = [args.preamble.read_text()] if args.preamble else []
    parts += kernels_section(files, kernels)
    parts += inputs_section(kernels)
    parts += api_section(api_json)
    parts += features_section(fc, grids)
    out = args.out or ext / "survey.md"
    out.write_text("\n".join(parts) + "\n")
    print(
        f"{len(kernels)} kernels, {len(api_json)} API names; "
        f"wrote {out}, api_usage.json, kernels.json"
    )


if __name__ == "__main__":
    main()
