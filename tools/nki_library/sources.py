"""Where current-NKI kernels live in the public checkouts, and how their modules import each
other (shared by survey.py and build_tasks.py).

A checkout is read, never imported: every file is parsed with `ast`. Nothing of it is copied
into this repository; build_tasks.py copies what a task needs into an output folder outside it.

Checkouts (each optional; give the folder that holds them with --ext, default /work/ext):
    nki-library                aws-neuron/nki-library (src/nkilib_src/nkilib/...)
    aws-neuron-sdk             aws-neuron/aws-neuron-sdk (nki/examples, nki/deep-dives/src)
    nki-samples                aws-neuron/nki-samples (src/nki_samples/tutorials)
    neuron-agentic-development aws-neuron/neuron-agentic-development (skills/*/examples)
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

LIBRARY = "nki-library"
LIBRARY_ROOT = "src"  # the folder that holds the package `nkilib_src` (nkilib_src.nkilib...)
NKI_MODULE_ALIASES = {
    "nki": "nki",
    "nki.language": "nl",
    "nki.isa": "nisa",
    "nki.isa.constants": "nisa",
    "nki.typing": "nt",
    "nki.collectives": "ncc",
    "neuronxcc.nki.typing": "nt",
}
"""The short name each NKI module is counted and emitted under (nki.isa.constants' names are
nki.isa's: `from nki.isa.constants import oob_mode` is `nisa.oob_mode`)."""


@dataclass(frozen=True)
class Collection:
    name: str
    """The checkout folder's name under --ext."""
    globs: tuple[str, ...]
    exclude: tuple[str, ...] = ()
    """Substrings of a file's path that keep it out (PyTorch references, test drivers)."""


COLLECTIONS = (
    Collection(
        LIBRARY,
        ("src/nkilib_src/nkilib/**/*.py",),
        ("_torch", "torch_ref.py", "mx_torch_common.py", "/version/"),
    ),
    Collection(
        "aws-neuron-sdk",
        ("nki/examples/**/*.py", "nki/deep-dives/src/**/*.py"),
        (
            "_torch.py",
            "_jax.py",
            "getting_started_torch",
            "getting_started_jax",
            "mx_cpu_utils",
            "mx_toplevel",
        ),
    ),
    Collection(
        "nki-samples",
        ("src/nki_samples/tutorials/**/*.py",),
        ("_torch.py", "_jax.py", "mx_cpu_utils"),
    ),
    Collection("neuron-agentic-development", ("skills/**/examples/*.py",)),
)


def is_current_nki(tree: ast.Module) -> bool:
    """Imports `nki` (0.3+), not the legacy `neuronxcc.nki`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
            a.name == "nki" or a.name.startswith("nki.") for a in node.names
        ):
            return True
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and (node.module == "nki" or node.module.startswith("nki."))
        ):
            return True
    return False


@dataclass
class SourceFile:
    collection: str
    root: Path
    """The checkout's folder."""
    path: Path
    tree: ast.Module | None
    text: str
    error: str = ""

    @property
    def rel(self) -> str:
        return str(self.path.relative_to(self.root))

    @property
    def label(self) -> str:
        return f"{self.collection}:{self.rel}"

    @property
    def module(self) -> str | None:
        """The dotted module name inside nki-library (`nkilib_src.nkilib.core.cumsum.cumsum`)."""
        if self.collection != LIBRARY:
            return None
        rel = self.path.relative_to(self.root / LIBRARY_ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        return ".".join(parts)


@cache
def parse_file(root: Path, collection: str, path: Path) -> SourceFile:
    text = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(text, filename=str(path))
        return SourceFile(collection, root, path, tree, text)
    except SyntaxError as e:
        return SourceFile(
            collection, root, path, None, text, f"SyntaxError line {e.lineno}: {e.msg}"
        )


def collect(ext: Path, current_only: bool = True) -> list[SourceFile]:
    """Every kernel-side Python file of the checkouts present under `ext`."""
    files: list[SourceFile] = []
    for coll in COLLECTIONS:
        root = ext / coll.name
        if not root.is_dir():
            continue
        seen: set[Path] = set()
        for pattern in coll.globs:
            for path in sorted(root.glob(pattern)):
                if path in seen or any(x in str(path) for x in coll.exclude):
                    continue
                seen.add(path)
                source = parse_file(root, coll.name, path)
                if (
                    current_only
                    and coll.name != LIBRARY
                    and (source.tree is None or not is_current_nki(source.tree))
                ):
                    continue
                files.append(source)
    return files


@dataclass
class LibraryIndex:
    """nki-library's modules by dotted name, and relative imports resolved to them."""

    root: Path
    files: dict[str, SourceFile] = field(default_factory=dict)

    @classmethod
    def load(cls, checkout: Path) -> LibraryIndex:
        index = cls(checkout)
        pkg = checkout / LIBRARY_ROOT / "nkilib_src"
        for path in sorted(pkg.rglob("*.py")):
            source = parse_file(checkout, LIBRARY, path)
            if source.module:
                index.files[source.module] = source
        return index

    def resolve(self, importer: SourceFile, node: ast.ImportFrom) -> str | None:
        """The dotted module an ImportFrom names (None: not inside the library)."""
        if node.level:
            if importer.module is None:  # a relative import outside the library
                return None
            base = importer.module.split(".")
            if importer.path.name != "__init__.py":
                base = base[:-1]
            base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
            name = ".".join(base + ([node.module] if node.module else []))
        else:
            name = node.module or ""
            if name.startswith("nkilib."):
                name = "nkilib_src." + name
        if name.startswith("nkilib_src.nkilib"):
            return name
        return None

    def resolve_symbol(self, module: str, name: str, depth: int = 0) -> tuple[str, str | None]:
        """Where `from module import name` leads: (module, name) of the definition, following
        re-exports in package __init__ files; (submodule, None) when name is a module."""
        source = self.files.get(module)
        if source is not None and source.tree is not None and depth < 10:
            for node in source.tree.body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
                    return module, name
                if isinstance(node, (ast.Assign, ast.AnnAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                        return module, name
            for node in source.tree.body:
                if isinstance(node, ast.ImportFrom):
                    for a in node.names:
                        if (a.asname or a.name) == name:
                            target = self.resolve(source, node)
                            if target is not None:
                                return self.resolve_symbol(target, a.name, depth + 1)
        sub = f"{module}.{name}"
        if sub in self.files:
            return sub, None
        return module, name

    def submodule(self, package: str, name: str) -> str | None:
        """`from ..utils import common_types`: the module package.name, if it is one."""
        full = f"{package}.{name}"
        return full if full in self.files else None


def module_imports(index: LibraryIndex, source: SourceFile) -> list[str]:
    """The library modules a file imports at module level (direct)."""
    out: list[str] = []
    if source.tree is None:
        return out
    for node in ast.walk(source.tree):
        if isinstance(node, ast.ImportFrom):
            target = index.resolve(source, node)
            if target is None:
                continue
            if target in index.files:
                out.append(target)
            for alias in node.names:
                sub = index.submodule(target, alias.name)
                if sub:
                    out.append(sub)
    return sorted(set(out))


def import_closure(index: LibraryIndex, module: str) -> list[str]:
    seen: set[str] = set()
    todo = [module]
    while todo:
        m = todo.pop()
        if m in seen or m not in index.files:
            continue
        seen.add(m)
        todo.extend(module_imports(index, index.files[m]))
    seen.discard(module)
    return sorted(seen)


def short_module(name: str) -> str:
    return name.removeprefix("nkilib_src.nkilib.")
