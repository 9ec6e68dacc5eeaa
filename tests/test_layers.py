"""The dependency rules of the layout, read from the source: which package may import which, no
import cycle between modules nor between packages, the layers inside nkibench, what agents
may take from nkibench, and the one room of each heavy third-party package.

Every import counts: at module level, inside a function, and under `if TYPE_CHECKING:` (a
type-only import is a dependency of the design even when it costs nothing at run time). Each
rule is a function of the import graph, so the tests at the end feed it small graphs that
break it and see it fail. `python -m tests.test_layers [ROOT]` prints the cycle counts of a
source tree (default: this checkout).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Container, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

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
"""Task folders: kernels and references, not the package's code. (Alembic's revisions are
read: one of them is a room of procrastinate's.)"""

NKIBENCH_LAYERS: tuple[tuple[str, ...], ...] = (
    ("nkibench", "nkibench.errors", "nkibench.result", "nkibench.dtypes", "nkibench.python_ast"),
    ("nkibench.targets", "nkibench.dialects", "nkibench.policy", "nkibench.backends"),
    ("nkibench.task",),
    ("nkibench.nkisim",),
    ("nkibench.cost",),
    ("nkibench.sandbox",),
    ("nkibench.backend", "nkibench.breakdown"),
    ("nkibench.harness",),
    ("nkibench.backends.*",),
    ("nkibench.benchmarks",),
)
"""Bottom to top; a module may import its own layer and those below. A name covers the module
or package and everything under it, the most specific name deciding ("nkibench.backends" is
the catalogue, "nkibench.backends.*" what lies under it: the backends and their opening); the
bare "nkibench" is its __init__ only (every other module must be named)."""
BACKEND_ROOMS = "nkibench.backends.*"
"""The layer whose packages are independent of each other: one backend does not import
another."""
NKIBENCH_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("nkibench.backends.neuron.backend", "nkibench.backends.nkisim.backend"): (
        "the neuron backend reuses nkisim's kernel and check phases (the trace check) for a "
        "kernel it checks on the CPU"
    ),
}
"""(importer, imported) pairs that break the layers or the backends' independence, each with
why it stands. A pair that no longer occurs fails the test, so the list stays true."""

AGENTS_FROM_NKIBENCH = ("nkibench.result", "nkibench.dialects", "nkibench.errors")
"""What agents take from nkibench: result types, the dialects and the errors they raise."""
AGENTS_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("agents.port", "nkibench.harness"): "porting a legacy kernel checks it with the harness",
    ("agents.port", "nkibench.backend"): "porting checks the kernel on the backend it is given",
    ("agents.port", "nkibench.task.files"): "a ported task is written as the task files it reads",
    ("agents.search.steps", "nkibench.cost.caveats"): "the search shows the model's caveats",
    ("agents.memory", "nkibench.task.operators"): "memory items are keyed by a task's operators",
    ("agents.search.loop", "nkibench.task.operators"): "the search reads its task's operators",
    ("agents.search.tunables", "nkibench.sandbox.parse_child"): (
        "a kernel's constants are read in the parse child, never parsed in the daemon"
    ),
    **{
        (module, "nkibench.sandbox.isolation"): "the parse child's sandbox (the tunables)"
        for module in ("agents.search.loop", "agents.search.steps", "agents.search.tunables")
    },
    **{
        (module, "nkibench.task.spec"): "the task being optimized or ported (TaskSpec)"
        for module in (
            "agents.port",
            "agents.roles",
            "agents.search.loop",
            "agents.search.profiling",
            "agents.search.promotion",
            "agents.search.steps",
        )
    },
}
"""(agents module, nkibench module) pairs beyond AGENTS_FROM_NKIBENCH, each with why."""

CONFINED: dict[str, tuple[str, ...]] = {
    "openai": ("agents.llm",),
    "procrastinate": (
        "store.jobs.fleet",
        "store.jobs.patient",
        "store.migrations.versions.0003_fleet",
    ),
    "torch": ("nkibench.backends.triton",),
    "triton": ("nkibench.backends.triton",),
    "matplotlib": ("daemon.views.report",),
    "jinja2": ("daemon.views.report",),
    "starlette": ("daemon.views.web",),
    "uvicorn": ("daemon.views.web", "daemon.mcp.server"),
    "mcp": ("daemon.mcp",),
    "prometheus_client": ("daemon.views.web",),
    "flashinfer_bench": ("daemon.flashinfer",),
    "tools": (),
}
"""Each heavy third-party package and the only modules (or packages) that may import it; and
`tools`, which accelopt never imports (it is not installed with it)."""

DAEMON_FORBIDDEN: dict[str, tuple[str, ...]] = {
    "daemon.process": (
        "daemon.cli",
        "daemon.coordinator",
        "daemon.workers",
        "daemon.views",
        "daemon.bench",
    ),
    "daemon.views": ("daemon.cli", "daemon.coordinator", "daemon.workers", "daemon.bench"),
    "daemon.workers": ("daemon.cli", "daemon.coordinator", "daemon.views", "daemon.bench"),
    "daemon.coordinator": ("daemon.cli", "daemon.bench"),
    "daemon.bench": ("daemon.cli",),
}
"""The daemon's rooms, by the process that runs them: what each must not import. Views only
read (no coordinator or worker code in a report); a worker host runs no coordinator code;
nothing but the CLI reaches the benchmarks (BENCH_IMPORTERS), and no room reaches the CLI."""
BENCH_IMPORTERS = ("daemon.bench", "daemon.cli.bench")
"""The only modules that import the benchmarks, the soak and the scripted LLM (and the tests)."""

Kind = Literal["runtime", "function", "type"]
"""Where an import stands: at module level, inside a function, under `if TYPE_CHECKING:`."""
ALL_KINDS: frozenset[Kind] = frozenset({"runtime", "function", "type"})


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    """The project module it resolves to, or the name as written for any other package."""
    kind: Kind


# --- reading the source ------------------------------------------------------------------------


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path) -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            if path.relative_to(root).as_posix().startswith(SKIPPED):
                continue
            found[module_name(path, root)] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(path: Path, root: Path = ROOT) -> Iterator[tuple[str, Kind]]:
    """Every absolute name a file imports (`from a import b` gives "a.b": the module b if there
    is one, else a's name b), with where the import stands; a type-only import inside a
    function is "type"."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def visit(nodes: Iterable[ast.stmt], kind: Kind) -> Iterator[tuple[str, Kind]]:
        for node in nodes:
            if isinstance(node, ast.Import):
                yield from ((alias.name, kind) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{parent}.{base}" if base else parent
                yield from ((f"{base}.{alias.name}", kind) for alias in node.names)
            elif isinstance(node, ast.If) and _type_checking(node):
                yield from visit(node.body, "type")
                yield from visit(node.orelse, kind)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield from visit(node.body, "function" if kind == "runtime" else kind)
            else:
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, ast.stmt):
                        yield from visit([child], kind)
                    elif isinstance(child, ast.ExceptHandler):
                        yield from visit(child.body, kind)

    yield from visit(tree.body, "runtime")


def internal(name: str, known: Container[str]) -> str | None:
    """The project module an import resolves to (a name imported from a module counts as that
    module)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def read_edges(root: Path = ROOT) -> list[Edge]:
    """The import graph of a source tree."""
    known = modules(root)
    edges = []
    for name, path in known.items():
        for imported, kind in imports(path, root):
            target = internal(imported, known)
            if target != name:
                edges.append(Edge(name, target or imported, kind))
    return edges


# --- the rules, each a function of the graph ---------------------------------------------------


def _top(name: str) -> str:
    return name.split(".", maxsplit=1)[0]


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(f"{prefix}.")


def package_breaches(edges: Iterable[Edge]) -> list[str]:
    return sorted(
        f"{e.importer} imports {e.imported}"
        for e in edges
        if _top(e.imported) in PACKAGES and _top(e.imported) not in ALLOWED[_top(e.importer)]
    )


def _project_graph(edges: Iterable[Edge], kinds: frozenset[Kind]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for e in edges:
        graph.setdefault(e.importer, set())
        if e.kind in kinds and _top(e.imported) in PACKAGES:
            graph[e.importer].add(e.imported)
            graph.setdefault(e.imported, set())
    return graph


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(found)


def module_cycles(edges: Iterable[Edge], kinds: frozenset[Kind] = ALL_KINDS) -> list[list[str]]:
    return cycles(_project_graph(edges, kinds))


def package_node(module: str, packages: Container[str]) -> tuple[str, str]:
    """The package whose folder holds a module, and the module's node in the package graph: a
    package's __init__ (what importing the package gives) is a node apart from the other
    modules of its folder ("package.*"), so that a package may put a catalogue in its
    __init__ below the machinery beside it (nkibench.backends)."""
    if module in packages:
        return module, module
    package = module.rpartition(".")[0]
    return package, f"{package}.*"


def package_cycles(edges: Iterable[Edge], kinds: frozenset[Kind] = ALL_KINDS) -> list[list[str]]:
    """Cycles between packages. An import between a package and its own subpackages does not
    count: a package's modules assemble its subpackages, and its subpackages read its shared
    modules (a real cycle there is one between modules, which the module rule sees)."""
    graph = _project_graph(edges, kinds)
    packages = {m.rpartition(".")[0] for m in graph if "." in m}
    collapsed: dict[str, set[str]] = {}
    for importer, targets in graph.items():
        source, source_node = package_node(importer, packages)
        collapsed.setdefault(source_node, set())
        for target in targets:
            sink, sink_node = package_node(target, packages)
            if not (_under(source, sink) or _under(sink, source)):
                collapsed[source_node].add(sink_node)
    return cycles(collapsed)


def _matches(entry: str, module: str) -> int:
    """How specifically a layer entry names a module (0: not at all)."""
    if entry.endswith(".*"):
        return len(entry) if module.startswith(entry[:-1]) else 0
    if entry == "nkibench":
        return len(entry) if module == entry else 0
    return len(entry) if _under(module, entry) else 0


def layer_of(module: str, layers: tuple[tuple[str, ...], ...]) -> tuple[int, str] | None:
    """The layer a module belongs to and the entry that placed it there."""
    best = max(
        (
            (_matches(entry, module), level, entry)
            for level, row in enumerate(layers)
            for entry in row
        ),
        default=(0, 0, ""),
    )
    return (best[1], best[2]) if best[0] else None


def _room(module: str) -> str:
    """A backend's package ("nkibench.backends.neuron") or module ("nkibench.backends.open")."""
    return ".".join(module.split(".")[:3])


def layer_breaches(
    edges: Iterable[Edge],
    layers: tuple[tuple[str, ...], ...] = NKIBENCH_LAYERS,
    exceptions: Mapping[tuple[str, str], str] = NKIBENCH_EXCEPTIONS,
) -> list[str]:
    """Imports inside nkibench that go up a layer or from one backend into another, and
    modules the layers do not place."""
    breaches = []
    for e in edges:
        if _top(e.importer) != "nkibench" or _top(e.imported) != "nkibench":
            continue
        source, target = layer_of(e.importer, layers), layer_of(e.imported, layers)
        if source is None or target is None:
            unplaced = e.importer if source is None else e.imported
            breaches.append(f"{unplaced} is in no layer")
            continue
        upward = target[0] > source[0]
        across = source[1] == target[1] == BACKEND_ROOMS and _room(e.importer) != _room(e.imported)
        if (upward or across) and (e.importer, e.imported) not in exceptions:
            breaches.append(f"{e.importer} imports {e.imported} ({e.kind})")
    return sorted(set(breaches))


def agents_breaches(
    edges: Iterable[Edge],
    allowed: tuple[str, ...] = AGENTS_FROM_NKIBENCH,
    exceptions: Mapping[tuple[str, str], str] = AGENTS_EXCEPTIONS,
) -> list[str]:
    return sorted(
        {
            f"{e.importer} imports {e.imported} ({e.kind})"
            for e in edges
            if _top(e.importer) == "agents"
            and _top(e.imported) == "nkibench"
            and not any(_under(e.imported, a) for a in allowed)
            and (e.importer, e.imported) not in exceptions
        }
    )


def confinement_breaches(
    edges: Iterable[Edge], confined: Mapping[str, tuple[str, ...]] = CONFINED
) -> list[str]:
    return sorted(
        {
            f"{e.importer} imports {e.imported} ({e.kind})"
            for e in edges
            if _top(e.imported) in confined
            and _top(e.imported) not in PACKAGES
            and not any(_under(e.importer, room) for room in confined[_top(e.imported)])
        }
    )


def room_breaches(
    edges: Iterable[Edge],
    forbidden: Mapping[str, tuple[str, ...]] = DAEMON_FORBIDDEN,
    bench_importers: tuple[str, ...] = BENCH_IMPORTERS,
) -> list[str]:
    """Imports between the daemon's rooms that DAEMON_FORBIDDEN and BENCH_IMPORTERS rule out."""
    breaches = set()
    for e in edges:
        for room, banned in forbidden.items():
            if _under(e.importer, room) and any(_under(e.imported, b) for b in banned):
                breaches.add(f"{e.importer} imports {e.imported} ({e.kind})")
        bench = bench_importers[0]
        if _under(e.imported, bench) and not any(_under(e.importer, m) for m in bench_importers):
            breaches.add(f"{e.importer} imports {e.imported} ({e.kind})")
    return sorted(breaches)


def stale_exceptions(edges: Iterable[Edge], *listed: Mapping[tuple[str, str], str]) -> list[str]:
    pairs = {(e.importer, e.imported) for e in edges}
    return sorted(
        f"{a} -> {b}" for exceptions in listed for a, b in exceptions if (a, b) not in pairs
    )


# --- the tree as it is --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def edges() -> list[Edge]:
    return read_edges(ROOT)


def test_every_package_imports_only_what_the_layering_allows(edges: list[Edge]) -> None:
    assert package_breaches(edges) == []


def test_there_is_no_cycle_between_modules_type_only_imports_included(edges: list[Edge]) -> None:
    assert module_cycles(edges) == []


def test_there_is_no_cycle_between_packages(edges: list[Edge]) -> None:
    assert package_cycles(edges) == []


def test_nkibench_imports_only_down_its_layers(edges: list[Edge]) -> None:
    assert layer_breaches(edges) == []


def test_agents_take_result_types_and_dialects_from_nkibench(edges: list[Edge]) -> None:
    assert agents_breaches(edges) == []


def test_each_heavy_third_party_package_stays_in_its_room(edges: list[Edge]) -> None:
    assert confinement_breaches(edges) == []


def test_each_daemon_room_imports_only_what_its_process_runs(edges: list[Edge]) -> None:
    assert room_breaches(edges) == []


def test_every_listed_exception_still_occurs(edges: list[Edge]) -> None:
    assert stale_exceptions(edges, NKIBENCH_EXCEPTIONS, AGENTS_EXCEPTIONS) == []


def test_the_harness_the_backend_protocols_and_the_child_name_no_backend() -> None:
    for relative in ("nkibench/harness.py", "nkibench/backend.py", "nkibench/sandbox/child.py"):
        named = [i for i, _ in imports(ROOT / relative) if i.startswith("nkibench.backends")]
        assert named == [], relative


def test_the_gpu_backend_imports_neither_the_nki_interpreter_nor_the_cost_model() -> None:
    for path in (ROOT / "nkibench/backends/triton").glob("*.py"):
        named = [i for i, _ in imports(path) if i.startswith(("nkibench.nkisim", "nkibench.cost"))]
        assert named == [], path.name


# --- each rule fails when broken ---------------------------------------------------------------


def test_the_reader_sees_relative_function_level_and_type_only_imports(tmp_path: Path) -> None:
    package = tmp_path / "nkibench" / "nkisim"
    package.mkdir(parents=True)
    (tmp_path / "nkibench" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "tensor.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import trace\n"
        "if TYPE_CHECKING:\n"
        "    from nkibench.nkisim.machine import Machine\n"
        "def f() -> None:\n"
        "    import openai\n"
    )
    (package / "trace.py").write_text("")
    (package / "machine.py").write_text("from nkibench.nkisim import tensor\n")
    found = {(e.importer, e.imported, e.kind) for e in read_edges(tmp_path)}
    assert found == {
        ("nkibench.nkisim.tensor", "typing.TYPE_CHECKING", "runtime"),
        ("nkibench.nkisim.tensor", "nkibench.nkisim.trace", "runtime"),
        ("nkibench.nkisim.tensor", "nkibench.nkisim.machine", "type"),
        ("nkibench.nkisim.tensor", "openai", "function"),
        ("nkibench.nkisim.machine", "nkibench.nkisim.tensor", "runtime"),
    }
    assert module_cycles(read_edges(tmp_path)) == [
        ["nkibench.nkisim.machine", "nkibench.nkisim.tensor"]
    ]


def test_a_type_only_cycle_between_modules_is_found() -> None:
    graph = [
        Edge("nkibench.nkisim.machine", "nkibench.nkisim.tensor", "runtime"),
        Edge("nkibench.nkisim.tensor", "nkibench.nkisim.machine", "type"),
    ]
    assert module_cycles(graph) == [["nkibench.nkisim.machine", "nkibench.nkisim.tensor"]]
    assert module_cycles(graph, frozenset({"runtime"})) == []


def test_a_cycle_between_packages_that_no_two_modules_close_is_found() -> None:
    graph = [
        Edge("nkibench.nkisim.machine", "nkibench.cost.tables", "runtime"),
        Edge("nkibench.cost.model", "nkibench.nkisim.trace", "runtime"),
    ]
    assert module_cycles(graph) == []
    assert package_cycles(graph) == [["nkibench.cost.*", "nkibench.nkisim.*"]]


def test_a_package_using_its_own_subpackage_both_ways_is_left_to_the_module_rule() -> None:
    graph = [
        Edge("store.benchmark", "store.projections.runner", "runtime"),
        Edge("store.projections.runner", "store.base", "runtime"),
    ]
    assert package_cycles(graph) == []


def test_an_upward_import_inside_nkibench_is_found_type_only_included() -> None:
    graph = [
        Edge("nkibench.nkisim.machine", "nkibench.cost.tables", "runtime"),
        Edge("nkibench.backends", "nkibench.backend", "type"),
        Edge("nkibench.cost.model", "nkibench.nkisim.trace", "runtime"),
    ]
    assert layer_breaches(graph) == [
        "nkibench.backends imports nkibench.backend (type)",
        "nkibench.nkisim.machine imports nkibench.cost.tables (runtime)",
    ]


def test_one_backend_importing_another_is_found_unless_listed() -> None:
    listed = Edge("nkibench.backends.neuron.backend", "nkibench.backends.nkisim.backend", "runtime")
    other = Edge("nkibench.backends.triton.phases", "nkibench.backends.nkisim.phases", "function")
    assert layer_breaches([listed, other]) == [
        "nkibench.backends.triton.phases imports nkibench.backends.nkisim.phases (function)"
    ]
    assert layer_breaches([listed], exceptions={}) != []


def test_a_module_no_layer_places_is_reported() -> None:
    graph = [Edge("nkibench.newroom", "nkibench.errors", "runtime")]
    assert layer_breaches(graph) == ["nkibench.newroom is in no layer"]


def test_agents_reaching_past_result_types_and_dialects_is_found() -> None:
    graph = [
        Edge("agents.roles", "nkibench.result", "runtime"),
        Edge("agents.roles", "nkibench.sandbox.process", "type"),
        Edge("agents.port", "nkibench.harness", "runtime"),
    ]
    assert agents_breaches(graph) == ["agents.roles imports nkibench.sandbox.process (type)"]


def test_a_heavy_package_outside_its_room_is_found() -> None:
    graph = [
        Edge("agents.llm", "openai.OpenAI", "runtime"),
        Edge("daemon.views.report.plots", "matplotlib.pyplot", "function"),
        Edge("daemon.coordinator.service", "uvicorn", "function"),
        Edge("nkibench.backends.triton.phases", "torch", "function"),
        Edge("nkibench.harness", "torch", "function"),
    ]
    assert confinement_breaches(graph) == [
        "daemon.coordinator.service imports uvicorn (function)",
        "nkibench.harness imports torch (function)",
    ]


def test_an_import_across_the_daemon_rooms_is_found() -> None:
    graph = [
        Edge("daemon.views.report.view", "daemon.coordinator.portfolio", "type"),
        Edge("daemon.workers.host", "daemon.coordinator.library", "function"),
        Edge("daemon.coordinator.service", "daemon.bench.scripted_llm", "runtime"),
        Edge("daemon.projections", "daemon.bench.soak", "runtime"),
        Edge("daemon.cli.bench", "daemon.bench.soak", "runtime"),
        Edge("daemon.coordinator.service", "daemon.workers.worker", "runtime"),
        Edge("daemon.views.web.app", "daemon.views.report.model", "runtime"),
    ]
    assert room_breaches(graph) == [
        "daemon.coordinator.service imports daemon.bench.scripted_llm (runtime)",
        "daemon.projections imports daemon.bench.soak (runtime)",
        "daemon.views.report.view imports daemon.coordinator.portfolio (type)",
        "daemon.workers.host imports daemon.coordinator.library (function)",
    ]


def test_an_exception_that_no_longer_occurs_is_reported() -> None:
    assert stale_exceptions([], {("a.b", "c.d"): "gone"}) == ["a.b -> c.d"]


def test_an_import_against_the_package_rules_is_found() -> None:
    graph = [Edge("nkibench.harness", "store.base", "type"), Edge("daemon.x", "store.y", "runtime")]
    assert package_breaches(graph) == ["nkibench.harness imports store.base"]


# --- the numbers ---------------------------------------------------------------------------


def cycle_counts(root: Path = ROOT) -> dict[str, list[list[str]]]:
    """The cycles of a source tree, counting runtime imports only, then adding function-level
    ones, then type-only ones as well."""
    graph = read_edges(root)
    rows: dict[str, frozenset[Kind]] = {
        "runtime": frozenset({"runtime"}),
        "runtime+function": frozenset({"runtime", "function"}),
        "runtime+function+type": ALL_KINDS,
    }
    counts: dict[str, list[list[str]]] = {}
    for label, kinds in rows.items():
        counts[f"modules, {label}"] = module_cycles(graph, kinds)
        counts[f"packages, {label}"] = package_cycles(graph, kinds)
    return counts


def main(argv: list[str]) -> None:
    root = Path(argv[0]).resolve() if argv else ROOT
    for label, found in cycle_counts(root).items():
        print(f"{label}: {len(found)}")
        for component in found:
            print(f"    {' <-> '.join(component)}")


if __name__ == "__main__":
    main(sys.argv[1:])
