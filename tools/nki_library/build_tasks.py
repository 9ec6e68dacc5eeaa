"""Build accelopt task folders from public current-NKI kernels (aws-neuron/nki-library and a few
other public collections), each paired with a NumPy reference written here.

    .venv/bin/python -m tools.nki_library.build_tasks --ext /work/ext --out /work/ext/tasks

For every references/<task>.toml (with its references/<task>.py):
    [source]
    collection = "nki-library"          # a checkout folder under --ext (see sources.py)
    file = "src/nkilib_src/nkilib/core/cumsum/cumsum.py"
    entry = '''
    def kernel(x):
        return cumsum(x, axis=-1)
    '''                                  # the task's entry; it sees the file's names
    task_toml = '''...'''                # written as the task's task.toml

the task folder <out>/<task>/ gets
    kernel.py     the entry (jitted) and everything it needs from the checkout, flattened into
                  one module (flatten.py), with a header naming the source and its commit;
    reference.py  references/<task>.py, as it is;
    task.toml     the [source] table's task_toml.

Library code is copied only into --out (outside this repository). The build then checks each
folder: kernel.py compiles, nkibench's task loader accepts the folder, and accelopt's static
check's findings are recorded (not fixed) in <out>/manifest.json, with the NKI API each flat
kernel uses. Exit status 1 if a task could not be built or loaded.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tomllib
import traceback
from collections import Counter
from pathlib import Path
from typing import Any, TypedDict

from nkibench.sandbox.static_check import check_source
from nkibench.task.spec import load_task

from .apis import count_apis
from .flatten import Flattener, FlattenError, Loader
from .sources import LIBRARY, LibraryIndex

HERE = Path(__file__).resolve().parent
REFERENCES = HERE / "references"
"""Our NumPy references and their task tables (data, read here; not part of the package)."""
REPO = HERE.parents[1]

LICENSE_NOTE = {
    "nki-library": "Apache-2.0, Copyright Amazon.com, Inc. or its affiliates",
    "aws-neuron-sdk": (
        "see the aws-neuron-sdk repository's license (Amazon.com, Inc. or its affiliates)"
    ),
    "nki-samples": "see the nki-samples repository's license (Amazon.com, Inc. or its affiliates)",
    "neuron-agentic-development": "Apache-2.0, Copyright Amazon.com, Inc. or its affiliates",
}


Spec = dict[str, Any]
"""A references/<task>.toml, as tomllib reads it (its [source] table: see the docstring)."""


class TaskEntry(TypedDict):
    """A built task's record in manifest.json."""

    task: str
    collection: str
    file: str
    function: str
    commit: str
    modules: list[str]
    """The library modules code was taken from."""
    statements: int
    kernel_lines: int
    kernel_bytes: int
    renamed: dict[str, str]
    external_imports_needed: list[str]
    static_check: dict[str, int]
    """accelopt's static check's findings, counted by kind."""
    static_check_findings: list[str]
    load_task: str
    """nkibench's task loader's error ("": it loads)."""
    apis: list[str]


class BuildFailure(TypedDict):
    """A task that could not be built, in manifest.json."""

    task: str
    error: str
    traceback: str


def commit_of(checkout: Path) -> str:
    marker = checkout / ".source_commit"
    if marker.is_file():
        return marker.read_text().strip()
    try:
        out = subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()
    except Exception:
        return "unknown"


def load_specs(refs: Path, only: set[str] | None) -> list[tuple[str, Spec, Path]]:
    specs: list[tuple[str, Spec, Path]] = []
    for toml in sorted(refs.glob("*.toml")):
        name = toml.stem
        if only and name not in only:
            continue
        spec = tomllib.loads(toml.read_text())
        specs.append((name, spec, refs / f"{name}.py"))
    return specs


def static_findings(source: str) -> list[str]:
    return [v.render("kernel.py") for v in check_source(source, "kernel.py", "nki")]


def summarize_findings(findings: list[str]) -> dict[str, int]:
    kinds: Counter[str] = Counter()
    for f in findings:
        problem = f.split(": ", 1)[-1]
        if "may not be replaced" in problem:
            kinds["attribute assignment"] += 1
        elif "underscore" in problem:
            kinds["underscore attribute"] += 1
        elif "import" in problem:
            kinds["import"] += 1
        elif "is not allowed in a kernel" in problem:
            kinds["forbidden builtin: " + problem.split("`")[1]] += 1
        elif "module" in problem:
            kinds["module used as a value"] += 1
        else:
            kinds[problem[:60]] += 1
    return dict(kinds.most_common())


def load_check(folder: Path) -> str:
    try:
        load_task(folder)
        return ""
    except Exception as e:
        return f"{type(e).__name__}: {e}"


def kernel_header(name: str, source: dict[str, Any], commit: str, helper_modules: int) -> str:
    """The flat kernel.py's docstring: where it was flattened from, and the license."""
    collection = source["collection"]
    function = f" (function {source['function']})" if source.get("function") else ""
    return (
        f'"""accelopt task `{name}`: flattened by tools/nki_library/build_tasks.py from\n'
        f"{collection}@{commit[:12]} {source['file']}{function}\n"
        f"and {helper_modules} helper module(s); {LICENSE_NOTE.get(collection, '')}.\n"
        'Generated: edit the reference entry, not this file."""\n'
    )


def build_one(
    name: str, spec: Spec, ref: Path, *, ext: Path, out: Path, loaders: dict[str, Loader]
) -> TaskEntry:
    source = spec["source"]
    collection = source["collection"]
    checkout = ext / collection
    if not checkout.is_dir():
        raise FlattenError(f"no checkout {checkout} (fetch it first)")
    if collection not in loaders:
        index = LibraryIndex.load(checkout) if collection == LIBRARY else None
        loaders[collection] = Loader(index)
    loader = loaders[collection]
    path = checkout / source["file"]
    start = loader.file_module(checkout, collection, path)
    result = Flattener(loader).flatten(start, source["entry"])
    commit = commit_of(checkout)
    header = kernel_header(name, source, commit, len(result.modules) - 1 if result.modules else 0)
    kernel_src = header + result.source
    compile(kernel_src, f"{name}/kernel.py", "exec")
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernel.py").write_text(kernel_src)
    (folder / "reference.py").write_text(ref.read_text())
    (folder / "task.toml").write_text(source.get("task_toml", "").lstrip())
    apis = count_apis(ast.parse(kernel_src), name)
    findings = static_findings(kernel_src)
    return {
        "task": name,
        "collection": collection,
        "file": source["file"],
        "function": source.get("function", ""),
        "commit": commit,
        "modules": result.modules,
        "statements": result.statements,
        "kernel_lines": kernel_src.count("\n"),
        "kernel_bytes": len(kernel_src.encode()),
        "renamed": result.renamed,
        "external_imports_needed": result.externals,
        "static_check": summarize_findings(findings),
        "static_check_findings": findings[:50],
        "load_task": load_check(folder),
        "apis": sorted(apis),
    }


def main() -> int:
    ap = argparse.ArgumentParser(
        prog="python -m tools.nki_library.build_tasks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "--ext", type=Path, default=Path("/work/ext"), help="folder holding the checkouts"
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=Path("/work/ext/tasks"),
        help="where task folders go (outside the repo)",
    )
    ap.add_argument("--refs", type=Path, default=REFERENCES)
    ap.add_argument("--only", help="comma-separated task names")
    args = ap.parse_args()
    out: Path = args.out.resolve()
    if REPO in out.parents or out == REPO:
        print(
            f"--out {out} is inside the repository; library code must stay outside it",
            file=sys.stderr,
        )
        return 2
    out.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    loaders: dict[str, Loader] = {}
    manifest: list[TaskEntry | BuildFailure] = []
    failed = 0
    for name, spec, ref in load_specs(args.refs, only):
        try:
            entry = build_one(name, spec, ref, ext=args.ext, out=out, loaders=loaders)
        except Exception as e:
            failed += 1
            failure: BuildFailure = {
                "task": name,
                "error": f"{type(e).__name__}: {e}",
                "traceback": traceback.format_exc(limit=3),
            }
            print(f"{'BUILD FAILED':12} {name:40} {failure['error']}")
            manifest.append(failure)
            continue
        status = "ok" if not entry["load_task"] else "LOAD FAILED"
        failed += bool(entry["load_task"])
        refused = sum(entry["static_check"].values())
        print(
            f"{status:12} {name:40} {entry['kernel_lines']:6} lines, "
            f"{len(entry['modules']):2} modules, static check: {refused} finding(s) "
            f"{entry['load_task']}"
        )
        manifest.append(entry)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(manifest) - failed}/{len(manifest)} tasks built into {out}; manifest.json written")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
