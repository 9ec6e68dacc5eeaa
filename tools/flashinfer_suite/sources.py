"""A checkout's FlashInfer Trace files, wherever in its tree they lie, each read with
flashinfer_bench's own models (Definition, Solution, Trace): what validates is an Item, what
does not is Refused with pydantic's reason, never fixed up.

A file is FlashInfer material by its content, not its folder: a JSON object with a `reference`
is a Definition, one with a `spec` a Solution, one with a `workload` (or a bare workload's
`axes`, `inputs` and `uuid`) a Trace; a .jsonl file is read line by line once one of its lines
looks like a Trace. Other JSON is not looked at further. Reads files; runs none of their code.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from flashinfer_bench.data import Definition, Solution, Trace
from pydantic import BaseModel, ValidationError

# one rendering of flashinfer_bench's refusals, the importer's, so both say the same
from daemon.flashinfer.dataset import problem

__all__ = [
    "Item",
    "Origin",
    "Refused",
    "Scan",
    "Source",
    "find_blob",
    "open_source",
    "scan",
]

Kind = Literal["definition", "solution", "workload", "trace"]
SKIPPED_FOLDERS = {".git", "node_modules", "__pycache__", ".venv"}
LARGEST = 64 * 1024 * 1024
"""Bytes: a larger JSON file is not read (safetensors blobs are found separately)."""


@dataclass(frozen=True)
class Source:
    root: Path
    """The folder read (a checkout, or a folder inside one)."""
    repo: str
    """Where it came from: the checkout's origin URL, or the folder when it has none."""
    commit: str | None
    prefix: str = ""
    """`root` relative to the checkout's top, so that paths name files in the repository."""

    def to_json(self) -> dict[str, Any]:
        return {"repo": self.repo, "commit": self.commit, "folder": str(self.root)}


@dataclass(frozen=True)
class Origin:
    source: Source
    path: str
    """Relative to the checkout's top."""
    line: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "repo": self.source.repo,
            "commit": self.source.commit,
            "path": self.path,
        }
        if self.line is not None:
            out["line"] = self.line
        return out

    def __str__(self) -> str:
        commit = f"@{self.source.commit[:10]}" if self.source.commit else ""
        line = f" line {self.line}" if self.line is not None else ""
        return f"{self.source.repo}{commit}:{self.path}{line}"


@dataclass(frozen=True)
class Item:
    kind: Kind
    model: Any
    """flashinfer_bench's Definition, Solution or Trace."""
    data: Any
    """The JSON value as read (written back unchanged, compared to spot conflicts)."""
    origin: Origin

    @property
    def name(self) -> str:
        """A definition's or solution's name; a trace's definition."""
        return str(self.model.definition if self.kind in ("workload", "trace") else self.model.name)


@dataclass(frozen=True)
class Refused:
    origin: Origin
    kind: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {**self.origin.to_json(), "kind": self.kind, "reason": self.reason}


@dataclass
class Scan:
    source: Source
    items: list[Item] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)

    def of(self, kind: Kind) -> list[Item]:
        return [i for i in self.items if i.kind == kind]


def _git(folder: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def is_url(text: str) -> bool:
    return "://" in text or text.startswith("git@")


def open_source(given: str, clones: Path) -> Source:
    """A local folder as it is, or a git URL cloned (`--depth 1`) under `clones` (a clone
    already there is reused)."""
    if is_url(given):
        bare = given.rsplit("://", maxsplit=1)[-1].removesuffix(".git")
        name = re.sub(r"[^A-Za-z0-9._-]+", "+", bare)
        root = clones / name
        if not root.is_dir():
            clones.mkdir(parents=True, exist_ok=True)
            done = subprocess.run(
                ["git", "clone", "--quiet", "--depth", "1", given, str(root)],
                capture_output=True,
                text=True,
                timeout=1800,
                check=False,
            )
            if done.returncode != 0:
                raise ValueError(f"{given}: git clone failed: {done.stderr.strip()}")
    else:
        root = Path(given)
        if not root.is_dir():
            raise ValueError(f"{given}: not a folder (nor a git URL)")
    root = root.resolve()
    top = _git(root, "rev-parse", "--show-toplevel")
    prefix = ""
    if top:
        relative = root.relative_to(Path(top).resolve())
        prefix = "" if str(relative) == "." else relative.as_posix() + "/"
    repo = _git(root, "remote", "get-url", "origin") or (given if is_url(given) else str(root))
    return Source(root, repo, _git(root, "rev-parse", "HEAD"), prefix)


def kind_of(data: object) -> Literal["definition", "solution", "trace"] | None:
    if not isinstance(data, dict):
        return None
    if "reference" in data:
        return "definition"
    if "spec" in data:
        return "solution"
    if "workload" in data or {"axes", "inputs", "uuid"} <= data.keys():
        return "trace"
    return None


MODELS: dict[str, type[BaseModel]] = {
    "definition": Definition,
    "solution": Solution,
    "trace": Trace,
}


def _files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*.json*")):
        if path.suffix not in (".json", ".jsonl") or not path.is_file():
            continue
        if SKIPPED_FOLDERS.intersection(path.relative_to(root).parts):
            continue
        if path.stat().st_size <= LARGEST:
            yield path


def _read(scan: Scan, origin: Origin, kind: str, data: Any) -> None:
    try:
        model = MODELS[kind].model_validate(data)
    except ValidationError as e:
        what = {"trace": "Trace"}.get(kind, kind.capitalize())
        scan.refused.append(Refused(origin, kind, f"not a valid {what}: {problem(e)}"))
        return
    found: Kind
    if isinstance(model, Trace):
        found = "workload" if model.is_workload_trace() else "trace"
    else:
        found = "definition" if kind == "definition" else "solution"
    scan.items.append(Item(found, model, data, origin))


def _lines(text: str) -> list[tuple[int, Any]]:
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((number, json.loads(line)))
        except json.JSONDecodeError as e:
            out.append((number, e))
    return out


def scan(source: Source) -> Scan:
    """Every FlashInfer file of the source, validated."""
    found = Scan(source)
    for path in _files(source.root):
        relative = source.prefix + path.relative_to(source.root).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if path.suffix == ".json":
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                continue
            kind = kind_of(data)
            if kind is not None:
                _read(found, Origin(source, relative), kind, data)
            continue
        lines = _lines(text)
        if not any(kind_of(d) == "trace" for _, d in lines):
            continue
        for number, data in lines:
            origin = Origin(source, relative, number)
            if isinstance(data, json.JSONDecodeError):
                found.refused.append(Refused(origin, "trace", f"not JSON: {data}"))
            else:
                _read(found, origin, "trace", data)
    return found


def find_blob(origin: Origin, path: str) -> Path | None:
    """A workload's safetensors file: `path` taken relative to each folder above the workload's
    file, the nearest first, up to the source's folder."""
    source = origin.source
    here = (source.root / origin.path.removeprefix(source.prefix)).parent
    while True:
        candidate = (here / path).resolve()
        if candidate.is_file() and candidate.is_relative_to(source.root):
            return candidate
        if here == source.root or source.root not in here.parents:
            return None
        here = here.parent
