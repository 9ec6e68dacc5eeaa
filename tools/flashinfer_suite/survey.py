"""Counts of FlashInfer-Bench material per checkout: definitions, solutions by language, the
Triton solutions and the definitions they solve, their traces by GPU and status, and what
flashinfer_bench's models refused.

    .venv/bin/python -m tools.flashinfer_suite.survey --from DIR_OR_GIT_URL... [--json FILE]

prints a Markdown table (one row a source, then all together: a solution or definition met in
several sources counts once there). Reads files only.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .sources import Scan, open_source, scan

__all__ = ["count", "main"]

COLUMNS = (
    ("definitions", "definitions"),
    ("definitions_refused", "refused"),
    ("solutions", "solutions"),
    ("solutions_refused", "refused"),
    ("triton_solutions", "Triton"),
    ("triton_definitions", "their definitions"),
    ("triton_traced", "Triton traced"),
    ("triton_traces", "their traces"),
    ("triton_passed", "PASSED"),
    ("traces_refused", "traces refused"),
)


def _hardware(trace: Any) -> str:
    evaluation = trace.evaluation
    return str(evaluation.environment.hardware) if evaluation is not None else "no evaluation"


def count(scans: Sequence[Scan]) -> dict[str, Any]:
    """The counts of `scans` taken together (names counted once)."""
    definitions = {i.name for s in scans for i in s.of("definition")}
    solutions: dict[str, Any] = {}
    for s in scans:
        for item in s.of("solution"):
            solutions.setdefault(item.name, item.model)
    triton = {n: m for n, m in solutions.items() if m.spec.language.value == "triton"}
    traces = {
        json.dumps(i.data, sort_keys=True): i.model
        for s in scans
        for i in s.of("trace")
        if i.model.solution in triton
    }
    refused = Counter(r.kind for s in scans for r in s.refused)
    return {
        "definitions": len(definitions),
        "definitions_refused": refused["definition"],
        "solutions": len(solutions),
        "solutions_by_language": dict(
            sorted(Counter(m.spec.language.value for m in solutions.values()).items())
        ),
        "solutions_refused": refused["solution"],
        "triton_solutions": len(triton),
        "triton_definitions": len({m.definition for m in triton.values()}),
        "triton_with_definition": sum(m.definition in definitions for m in triton.values()),
        "triton_traced": len({t.solution for t in traces.values()}),
        "triton_traces": len(traces),
        "triton_traces_by_hardware": dict(
            sorted(Counter(_hardware(t) for t in traces.values()).items())
        ),
        "triton_passed": sum(t.is_successful() for t in traces.values()),
        "traces_refused": refused["trace"],
        "refusals": dict(Counter(r.reason for s in scans for r in s.refused).most_common(5)),
    }


def table(rows: list[tuple[str, dict[str, Any]]]) -> str:
    head = ["source", *(title for _, title in COLUMNS), "Triton traces by GPU"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, counts in rows:
        gpus = ", ".join(f"{k}: {v}" for k, v in counts["triton_traces_by_hardware"].items())
        cells = [name, *(str(counts[key]) for key, _ in COLUMNS), gpus or "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.flashinfer_suite.survey")
    parser.add_argument("--from", dest="sources", nargs="+", required=True)
    parser.add_argument("--clones", type=Path, default=Path("/work/ext/clones"))
    parser.add_argument("--json", type=Path, help="write the counts (and refusals) here")
    args = parser.parse_args(argv)
    scans = [scan(open_source(given, args.clones)) for given in args.sources]
    rows = []
    for given, found in zip(args.sources, scans, strict=True):
        commit = f"@{found.source.commit[:10]}" if found.source.commit else ""
        rows.append((f"{given}{commit}", count([found])))
    rows.append(("all", count(scans)))
    print(table(rows), end="")
    if args.json:
        args.json.write_text(json.dumps(dict(rows), indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
