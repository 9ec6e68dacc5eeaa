"""The dependency rules of the layout, read from the source: which package may import which,
no import cycle at import time, and the generic harness and child naming no backend."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("events", "store", "nkibench", "agents", "daemon")
ALLOWED = {
    "events": {"events"},
    "store": {"store", "events"},
    "nkibench": {"nkibench"},
    "agents": {"agents", "events", "store", "nkibench"},
    "daemon": set(PACKAGES),
}
SKIPPED = ("nkibench/suites/",)
"""Task folders: kernels and references, not the package's code."""


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            relative = path.relative_to(ROOT).as_posix()
            if relative.startswith(SKIPPED) or "/migrations/versions/" in relative:
                continue
            found[module_name(path)] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(path: Path, *, at_import_time: bool) -> Iterator[str]:
    """The absolute module names a file imports; at import time: those at module level, not
    under `if TYPE_CHECKING:` nor inside a function."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module_name(path) if path.name == "__init__.py" else module_name(path.parent)

    def visit(nodes: list[ast.stmt]) -> Iterator[str]:
        for node in nodes:
            if isinstance(node, ast.Import):
                yield from (alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    yield f"{base}.{node.module}" if node.module else base
                elif node.module:
                    yield node.module
            elif isinstance(node, ast.If) and at_import_time and _type_checking(node):
                yield from visit(node.orelse)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and at_import_time:
                continue
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    inner = getattr(node, field, None)
                    if isinstance(inner, list):
                        yield from visit([n for n in inner if isinstance(n, ast.stmt)])
                if isinstance(node, ast.ExceptHandler):
                    yield from visit(node.body)

    yield from visit(tree.body)


def internal(name: str, known: dict[str, Path]) -> str | None:
    """The project module an import resolves to (a `from package import name` of a module
    counts as that module)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def test_every_package_imports_only_what_the_layering_allows() -> None:
    known = modules()
    breaches = []
    for name, path in known.items():
        top = name.split(".")[0]
        for imported in imports(path, at_import_time=False):
            target = imported.split(".")[0]
            if target in PACKAGES and target not in ALLOWED[top]:
                breaches.append(f"{name} imports {imported}")
    assert breaches == []


def test_the_harness_the_backend_protocols_and_the_child_name_no_backend() -> None:
    for relative in ("nkibench/harness.py", "nkibench/backend.py", "nkibench/sandbox/child.py"):
        named = [
            i
            for i in imports(ROOT / relative, at_import_time=False)
            if i.startswith("nkibench.backends")
        ]
        assert named == [], relative


def test_the_gpu_backend_imports_neither_the_nki_interpreter_nor_the_cost_model() -> None:
    for path in (ROOT / "nkibench/backends/triton").glob("*.py"):
        named = [
            i
            for i in imports(path, at_import_time=False)
            if i.startswith(("nkibench.nkisim", "nkibench.cost"))
        ]
        assert named == [], path.name


def test_there_is_no_import_cycle_at_import_time() -> None:
    known = modules()
    graph = {
        name: {
            target
            for i in imports(path, at_import_time=True)
            if (target := internal(i, known)) is not None and target != name
        }
        for name, path in known.items()
    }
    # a package's __init__ re-exporting its own modules is not a cycle worth the name
    for name, targets in graph.items():
        graph[name] = {t for t in targets if not name.startswith(f"{t}.")}
    cycles = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                walk(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            walk(node)
    assert cycles == []


@pytest.mark.parametrize("relative", ["nkibench/harness.py"])
def test_the_reader_sees_relative_and_guarded_imports(relative: str) -> None:
    """The reader itself: it must see the harness's imports, else the tests above pass on
    nothing."""
    found = set(imports(ROOT / relative, at_import_time=True))
    assert "nkibench.backend" in found
    assert "nkibench.sandbox.process" in found
