"""One FlashInfer Trace dataset folder from public checkouts: their Triton solutions, the
definitions those solve, the traces of those solutions and the workloads (with any safetensors
blobs) of those definitions, every file as flashinfer_bench's models read it.

    .venv/bin/python -m tools.flashinfer_suite.assemble --from DIR_OR_GIT_URL... --out DATASET

DATASET (outside this repository, new or empty) gets definitions/<op_type>/<name>.json,
solutions/<op_type>/<definition>/<solution>.json, workloads/<op_type>/<definition>.jsonl,
traces/<op_type>/<definition>.jsonl, the blobs at the paths the workloads name, and
PROVENANCE.json: for each file (each line of a .jsonl) the repository, commit and path it came
from, then what was refused (flashinfer_bench's reason, the file never fixed up) and what was
left out (valid, but not a traced Triton solution's, or met before). flashinfer_bench's own
loader (TraceSet.from_path) reads the folder at the end.

Sources are read in the order given and the first copy of a name is kept: a later copy that
is the same JSON only adds its origin; one that differs is refused, and so are the traces of a
solution whose copy in their own source differs from the one kept. A solution without a trace
in any source is left out unless --keep-untraced. A workload that only a trace holds becomes a
workload line of its own (the trace's workload, unchanged; PROVENANCE says so). A workload whose
blob is not in its source is refused, with the traces on it.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from flashinfer_bench.data import SafetensorsInput, TraceSet

from .sources import Item, Origin, Refused, Scan, find_blob, open_source, scan

__all__ = ["Suite", "assemble", "main"]

REPOSITORY = Path(__file__).resolve().parents[2]
SAFE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+-]*$")
PROVENANCE = "PROVENANCE.json"


def _same(a: Item, b: Item) -> bool:
    return bool(a.data == b.data)


@dataclass
class Kept:
    item: Item
    origins: list[Origin] = field(default_factory=list)
    derived: bool = False
    """A workload line taken from a trace's workload."""
    blobs: dict[str, Path] = field(default_factory=dict)
    """A workload's safetensors files: its path for them -> the file in its source."""


@dataclass
class Suite:
    definitions: dict[str, Kept] = field(default_factory=dict)
    solutions: dict[str, Kept] = field(default_factory=dict)
    workloads: dict[tuple[str, str], Kept] = field(default_factory=dict)
    """(definition, workload uuid) -> the workload line."""
    traces: list[Kept] = field(default_factory=list)
    blobs: dict[str, Path] = field(default_factory=dict)
    """A blob's path in the dataset -> the file it is copied from."""
    refused: list[dict[str, Any]] = field(default_factory=list)
    left_out: list[dict[str, Any]] = field(default_factory=list)

    def refuse(self, origin: Origin, kind: str, reason: str) -> None:
        self.refused.append(Refused(origin, kind, reason).to_json())

    def leave_out(self, origin: Origin, kind: str, reason: str) -> None:
        self.left_out.append({**origin.to_json(), "kind": kind, "reason": reason})


def _first_copies(suite: Suite, items: list[Item], kind: str) -> dict[str, Kept]:
    kept: dict[str, Kept] = {}
    for item in items:
        if not SAFE.match(item.name) or (
            kind == "definition" and not SAFE.match(item.model.op_type)
        ):
            suite.refuse(item.origin, kind, f"{item.name!r}: not usable as a file name")
            continue
        first = kept.get(item.name)
        if first is None:
            kept[item.name] = Kept(item, [item.origin])
        elif _same(first.item, item):
            first.origins.append(item.origin)
        else:
            suite.refuse(
                item.origin,
                kind,
                f"{kind} {item.name} differs from the copy kept ({first.item.origin})",
            )
    return kept


def _solutions(suite: Suite, scans: Sequence[Scan]) -> dict[str, Kept]:
    triton = []
    for found in scans:
        for item in found.of("solution"):
            language = item.model.spec.language.value
            if language == "triton":
                triton.append(item)
            else:
                suite.leave_out(item.origin, "solution", f"not Triton ({language})")
    return _first_copies(suite, triton, "solution")


def _differing_copies(scans: Sequence[Scan], solutions: dict[str, Kept]) -> list[set[str]]:
    """Per source, the solution names whose copy there differs from the one kept."""
    out = []
    for found in scans:
        names = set()
        for item in found.of("solution"):
            kept = solutions.get(item.name)
            if kept is not None and not _same(kept.item, item):
                names.add(item.name)
        out.append(names)
    return out


def _traces(suite: Suite, scans: Sequence[Scan], solutions: dict[str, Kept]) -> list[Kept]:
    """The traces of `solutions`, each once."""
    differing = _differing_copies(scans, solutions)
    kept: list[Kept] = []
    seen: dict[str, Kept] = {}
    for found, differs in zip(scans, differing, strict=True):
        for item in found.of("trace"):
            name = item.model.solution
            solution = solutions.get(name) if name is not None else None
            if solution is None:
                suite.leave_out(item.origin, "trace", f"solution {name} is not a Triton one kept")
            elif name in differs:
                suite.refuse(
                    item.origin,
                    "trace",
                    f"its source's copy of solution {name} differs from the one kept "
                    f"({solution.item.origin})",
                )
            elif solution.item.model.definition != item.model.definition:
                suite.refuse(
                    item.origin,
                    "trace",
                    f"names definition {item.model.definition}, but solution {name} solves "
                    f"{solution.item.model.definition}",
                )
            else:
                key = json.dumps(item.data, sort_keys=True)
                if key in seen:
                    seen[key].origins.append(item.origin)
                else:
                    seen[key] = Kept(item, [item.origin])
                    kept.append(seen[key])
    return kept


def _blob_paths(item: Item) -> list[str]:
    return [
        given.path
        for given in item.model.workload.inputs.values()
        if isinstance(given, SafetensorsInput)
    ]


def _blobs_found(suite: Suite, item: Item) -> dict[str, Path] | None:
    """The workload's blobs, each found in its source; None (refused) where one is not."""
    found: dict[str, Path] = {}
    for path in _blob_paths(item):
        if Path(path).is_absolute() or ".." in Path(path).parts:
            suite.refuse(item.origin, item.kind, f"blob {path!r} is not a path inside a dataset")
            return None
        blob = find_blob(item.origin, path)
        if blob is None:
            suite.refuse(item.origin, item.kind, f"blob {path} is not in its source")
            return None
        found[path] = blob
    return found


def _workloads(suite: Suite, scans: Sequence[Scan], definitions: set[str]) -> None:
    """The workload lines of `definitions`: the workload files' first, then each kept trace's
    workload that none of them holds; the traces whose workload was refused go too."""
    candidates = [(i, False) for s in scans for i in s.of("workload")]
    candidates += [(t.item, True) for t in suite.traces]
    for item, derived in candidates:
        definition = item.model.definition
        if definition not in definitions:
            if not derived:
                suite.leave_out(item.origin, "workload", f"definition {definition} not kept")
            continue
        key = (definition, item.model.workload.uuid)
        line = {"definition": definition, "workload": item.data["workload"]}
        first = suite.workloads.get(key)
        if first is not None:
            if first.item.data["workload"] != line["workload"]:
                suite.refuse(
                    item.origin,
                    item.kind,
                    f"workload {key[1]} differs from the one kept ({first.item.origin})",
                )
            elif not derived:
                first.origins.append(item.origin)
            continue
        blobs = _blobs_found(suite, item)
        if blobs is None:
            continue
        kept = Item("workload", item.model, line, item.origin)
        suite.workloads[key] = Kept(kept, [item.origin], derived, blobs)
    for trace in list(suite.traces):
        model = trace.item.model
        if (model.definition, model.workload.uuid) not in suite.workloads:
            suite.traces.remove(trace)
            suite.refuse(
                trace.item.origin, "trace", f"its workload {model.workload.uuid} was refused"
            )


def assemble(scans: Sequence[Scan], keep_untraced: bool = False) -> Suite:
    suite = Suite()
    definitions = _first_copies(suite, [i for s in scans for i in s.of("definition")], "definition")
    candidates: dict[str, Kept] = {}
    for name, kept in _solutions(suite, scans).items():
        definition = kept.item.model.definition
        if definition in definitions:
            candidates[name] = kept
        else:
            suite.leave_out(kept.item.origin, "solution", f"no valid definition {definition}")
    suite.traces = _traces(suite, scans, candidates)
    _workloads(suite, scans, {k.item.model.definition for k in candidates.values()})
    traced = {t.item.model.solution for t in suite.traces}
    for name, kept in candidates.items():
        if name in traced or keep_untraced:
            suite.solutions[name] = kept
        else:
            suite.leave_out(kept.item.origin, "solution", "no trace kept (none, or all refused)")
    wanted = {k.item.model.definition for k in suite.solutions.values()}
    suite.definitions = {n: k for n, k in definitions.items() if n in wanted}
    for name, kept in definitions.items():
        if name not in wanted:
            suite.leave_out(kept.item.origin, "definition", "no Triton solution kept")
    for key, kept in list(suite.workloads.items()):
        if key[0] not in wanted:
            del suite.workloads[key]
            if not kept.derived:
                suite.leave_out(kept.item.origin, "workload", f"definition {key[0]} not kept")
    for kept in suite.workloads.values():
        suite.blobs.update(kept.blobs)
    return suite


def _origin_json(kept: Kept) -> dict[str, Any]:
    out: dict[str, Any] = kept.origins[0].to_json()
    if len(kept.origins) > 1:
        out["also_in"] = [o.to_json() for o in kept.origins[1:]]
    if kept.derived:
        out["derived"] = "the workload of the trace at this origin"
    return out


def _write(suite: Suite, out: Path) -> dict[str, Any]:
    """The files, and their provenance."""
    files: dict[str, Any] = {}
    op_type = {n: k.item.model.op_type for n, k in suite.definitions.items()}
    for name, kept in suite.definitions.items():
        files[f"definitions/{op_type[name]}/{name}.json"] = kept
    for name, kept in suite.solutions.items():
        definition = kept.item.model.definition
        files[f"solutions/{op_type[definition]}/{definition}/{name}.json"] = kept
    lines: dict[str, list[Kept]] = {}
    for (definition, _), kept in suite.workloads.items():
        lines.setdefault(f"workloads/{op_type[definition]}/{definition}.jsonl", []).append(kept)
    for kept in suite.traces:
        definition = kept.item.model.definition
        lines.setdefault(f"traces/{op_type[definition]}/{definition}.jsonl", []).append(kept)
    provenance: dict[str, Any] = {}
    for relative, kept in files.items():
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(kept.item.data, indent=2) + "\n", encoding="utf-8")
        provenance[relative] = _origin_json(kept)
    for relative, group in lines.items():
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(json.dumps(k.item.data) + "\n" for k in group)
        path.write_text(text, encoding="utf-8")
        provenance[relative] = [
            {"line": n, "from": _origin_json(k)} for n, k in enumerate(group, 1)
        ]
    for relative, source in suite.blobs.items():
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, path)
        provenance[relative] = {"copied_from": str(source)}
    return provenance


def counts(suite: Suite) -> dict[str, Any]:
    traces = [k.item.model for k in suite.traces]
    return {
        "definitions": len(suite.definitions),
        "triton_solutions": len(suite.solutions),
        "traced_solutions": len({t.solution for t in traces}),
        "workloads": len(suite.workloads),
        "workloads_from_traces": sum(k.derived for k in suite.workloads.values()),
        "traces": len(traces),
        "traces_passed": sum(t.is_successful() for t in traces),
        "traces_by_hardware": dict(
            sorted(
                Counter(
                    t.evaluation.environment.hardware if t.evaluation else "no evaluation"
                    for t in traces
                ).items()
            )
        ),
        "blobs": len(suite.blobs),
        "refused": len(suite.refused),
        "left_out": len(suite.left_out),
    }


def _check_out(out: Path) -> str | None:
    resolved = out.resolve()
    if resolved == REPOSITORY or REPOSITORY in resolved.parents:
        return f"{out}: inside the repository {REPOSITORY} (fetched material stays outside)"
    if resolved.exists() and (not resolved.is_dir() or any(resolved.iterdir())):
        return f"{out}: exists and is not an empty folder (never written over)"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.flashinfer_suite.assemble")
    parser.add_argument("--from", dest="sources", nargs="+", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--clones", type=Path, default=Path("/work/ext/clones"), help="where URLs are cloned"
    )
    parser.add_argument("--keep-untraced", action="store_true")
    args = parser.parse_args(argv)
    trouble = _check_out(args.out)
    if trouble is not None:
        print(f"error: {trouble}", file=sys.stderr)
        return 2
    try:
        opened = [open_source(given, args.clones) for given in args.sources]
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    scans = [scan(source) for source in opened]
    suite = assemble(scans, args.keep_untraced)
    for found in scans:
        for refused in found.refused:
            suite.refused.append(refused.to_json())
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    files = _write(suite, out)
    summary = counts(suite)
    provenance = {
        "tool": "python -m tools.flashinfer_suite.assemble",
        "flashinfer_bench": metadata.version("flashinfer-bench"),
        "sources": [s.to_json() for s in opened],
        "counts": summary,
        "files": files,
        "refused": suite.refused,
        "left_out": suite.left_out,
    }
    (out / PROVENANCE).write_text(json.dumps(provenance, indent=2) + "\n", encoding="utf-8")
    loaded = TraceSet.from_path(str(out))
    read_back = (
        len(loaded.definitions),
        sum(len(v) for v in loaded.solutions.values()),
        sum(len(v) for v in loaded.traces.values()),
    )
    if read_back != (summary["definitions"], summary["triton_solutions"], summary["traces"]):
        print(f"error: flashinfer_bench read back {read_back} from {out}", file=sys.stderr)
        return 1
    print(json.dumps({"dataset": str(out), **summary}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
