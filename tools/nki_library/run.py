"""Run `accelopt check` over every built task and count the outcomes.

    .venv/bin/python -m tools.nki_library.run --tasks /work/ext/tasks [--shapes small]
        [--target trn2] [--only a,b] [-j 2] [--json summary.json]

Outcomes per task:
    correct       the kernel ran under nkisim and matched the reference
    unsupported   nkisim refused an API it lists as unsupported (error_kind "unsupported");
                  the API is taken from the message
    rejected      accelopt's static check refused the kernel (error_kind "rejected"), e.g.
                  rotational_topk, whose configuration writes temporary .npy files with np.save
                  at trace time
    other         anything else (a wrong result, a constraint nkisim enforces, a crash, a bad
                  task), with the error kind and message

Prints the counts and a line per task, and writes a JSON summary (--json, default
<tasks>/run_summary_<shapes>.json).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NotRequired, TypedDict

UNSUPPORTED_API = re.compile(r"^(?:\S+ line \d+: )?(.*?)\s+is not (?:implemented|supported)")


class TaskOutcome(TypedDict):
    """One task's line in the summary; the check's own fields where it answered in JSON."""

    task: str
    outcome: str
    """correct, unsupported, rejected or other."""
    detail: str
    message: str
    seconds: float
    error_kind: NotRequired[str | None]
    line: NotRequired[int | None]
    max_rel_l2: NotRequired[float | None]
    instructions: NotRequired[int | None]


def accelopt_binary() -> str:
    candidate = Path(sys.executable).parent / "accelopt"
    return str(candidate) if candidate.exists() else "accelopt"


def classify(result: dict[str, Any]) -> tuple[str, str]:
    """The outcome and its detail, from `accelopt check --json`'s result."""
    if result.get("correct"):
        return "correct", ""
    kind = result.get("error_kind") or ""
    message = result.get("message") or ""
    if kind == "unsupported":
        m = UNSUPPORTED_API.search(message)
        return "unsupported", (m.group(1) if m else message[:80])
    if kind == "rejected":
        if "may not be replaced" in message:
            return "rejected", "attribute assignment (static check)"
        m = re.search(r"import of '([^']+)' is not allowed", message)
        if m:
            return "rejected", f"import {m.group(1)} at run time"
        return "rejected", message.split(": ", 1)[-1][:60]
    return "other", kind or "wrong result"


def run_task(task: Path, args: argparse.Namespace) -> TaskOutcome:
    command = [accelopt_binary(), "check", str(task), "--shapes", args.shapes, "--json"]
    if args.target:
        command += ["--target", args.target]
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            command, capture_output=True, text=True, timeout=args.timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return {
            "task": task.name,
            "outcome": "other",
            "detail": "timeout",
            "message": f"over {args.timeout}s",
            "seconds": args.timeout,
        }
    seconds = time.perf_counter() - started
    result = None
    for line in reversed(proc.stdout.splitlines()):
        text = line.strip()
        if text.startswith("{"):
            try:
                result = json.loads(text)
                break
            except json.JSONDecodeError:
                continue
    if result is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {
            "task": task.name,
            "outcome": "other",
            "detail": f"exit {proc.returncode}",
            "message": " | ".join(tail)[:500],
            "seconds": round(seconds, 1),
        }
    outcome, detail = classify(result)
    return {
        "task": task.name,
        "outcome": outcome,
        "detail": detail,
        "error_kind": result.get("error_kind"),
        "message": (result.get("message") or "")[:500],
        "line": result.get("line"),
        "max_rel_l2": result.get("max_rel_l2"),
        "instructions": result.get("instructions"),
        "seconds": round(seconds, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(
        prog="python -m tools.nki_library.run",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--tasks", type=Path, default=Path("/work/ext/tasks"))
    ap.add_argument("--shapes", default="small")
    ap.add_argument("--target", default="trn2", help="current NKI runs on trn2/trn3 (default trn2)")
    ap.add_argument("--only", help="comma-separated task names")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    tasks = sorted(p for p in args.tasks.iterdir() if (p / "kernel.py").is_file())
    if args.only:
        wanted = set(args.only.split(","))
        tasks = [t for t in tasks if t.name in wanted]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda t: run_task(t, args), tasks))

    counts = Counter(r["outcome"] for r in results)
    unsupported = Counter(r["detail"] for r in results if r["outcome"] == "unsupported")
    width = max((len(r["task"]) for r in results), default=10)
    for r in results:
        detail = r["detail"] if r["outcome"] != "correct" else f"rel_l2 {r.get('max_rel_l2')}"
        message = "" if r["outcome"] == "correct" else r["message"][:160]
        print(f"{r['outcome']:12} {r['task']:{width}} {r['seconds']:7}s  {detail}  {message}")
    print()
    print(
        f"{len(results)} tasks ({args.shapes} shapes, {args.target}): "
        + ", ".join(
            f"{k} {counts.get(k, 0)}" for k in ("correct", "unsupported", "rejected", "other")
        )
    )
    if unsupported:
        print("unsupported APIs: " + ", ".join(f"{k} ({v})" for k, v in unsupported.most_common()))
    summary = {
        "shapes": args.shapes,
        "target": args.target,
        "counts": dict(counts),
        "unsupported_apis": dict(unsupported.most_common()),
        "tasks": results,
    }
    out = args.json or args.tasks / f"run_summary_{args.shapes}.json"
    out.write_text(json.dumps(summary, indent=1) + "\n")
    print(f"summary: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
