"""On a GPU: the public Triton solutions of a FlashInfer Trace dataset, each imported as a task
with that solution as its kernel, checked and timed by accelopt (measured) on every workload
the dataset's traces timed it on, beside the published latency.

The dataset is assembled outside the repository by tools.flashinfer_suite (README.md); nothing
fetched is committed. Each solution gets its own task folder (import-flashinfer --solution);
each traced workload is profiled on its own (its shape set `w<index>`), as `accelopt profile`
does, by one triton backend this process keeps for the whole suite: its warm processes start
once, not once a profile. Nsight Compute's counters are off (a hint for the planner, not part
of what is compared here).

    python3 bench/flashinfer_suite.py DATASET WORK_DIR [I/N [SKIP]] > suite.json

I/N (e.g. 1/2): only the I-th of N shares of the solutions, after the first SKIP (in the
order this script takes them), to split a run across calls.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch
from flashinfer_bench.data import TraceSet

from nkibench.backends.triton.backend import TritonBackend
from nkibench.errors import NkiBenchError
from nkibench.harness import profile_kernel
from nkibench.task.spec import load_task

IMPORT_TIMEOUT_S = 300
SEED = 20261127
"""One correctness seed per workload (the task's default is three): the suite's run is long,
and every workload is checked on its own inputs besides."""


def accelopt(*argv: str, timeout: float = IMPORT_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "daemon", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def traced_triton(dataset: TraceSet) -> list[tuple[str, str]]:
    """(definition, solution) of every Triton solution with a trace."""
    found = set()
    for definition, traces in dataset.traces.items():
        for trace in traces:
            solution = dataset.get_solution(trace.solution) if trace.solution else None
            if solution is not None and str(solution.spec.language.value) == "triton":
                found.add((definition, solution.name))
    return sorted(found)


def profile(backend: TritonBackend, task: Path, shapes: str) -> dict[str, Any]:
    try:
        result = profile_kernel(load_task(task), backend=backend, shapes=shapes, seeds=(SEED,))
    except NkiBenchError as e:
        return {"error_kind": "task", "message": str(e)}
    return result.to_json()


def main(root: Path, work: Path, share: str = "1/1", skip: int = 0) -> dict[str, Any]:
    dataset = TraceSet.from_path(str(root))
    backend = TritonBackend(require_gpu=True, nsight=False)
    index, shares = (int(part) for part in share.split("/"))
    rows = []
    # the solutions traced on this GPU's model first: theirs are the latencies to compare with
    here = torch.cuda.get_device_name() if torch.cuda.is_available() else ""
    ordered = sorted(
        traced_triton(dataset),
        key=lambda pair: (
            not any(
                t.solution == pair[1] and t.evaluation and t.evaluation.environment.hardware == here
                for t in dataset.traces[pair[0]]
            )
        ),
    )
    for definition, solution in ordered[skip:][index - 1 :: shares]:
        dest = work / solution
        imported = accelopt(
            "import-flashinfer", str(root), str(dest), "--definition", definition,
            "--solution", solution, "--json",
        )  # fmt: skip
        task = dest / definition
        if imported.returncode != 0 or not task.is_dir():
            rows.append({"definition": definition, "solution": solution, "imported": False,
                         "message": (imported.stdout + imported.stderr)[-400:]})  # fmt: skip
            continue
        order = [
            json.loads(line)["uuid"]
            for line in (task / "workloads.jsonl").read_text().splitlines()
            if line.strip()
        ]
        for trace in dataset.traces[definition]:
            if trace.solution != solution or trace.workload.uuid not in order:
                continue
            evaluation = trace.evaluation
            shapes = f"w{order.index(trace.workload.uuid)}"
            ours = profile(backend, task, shapes)
            rows.append(
                {
                    "definition": definition,
                    "solution": solution,
                    "imported": True,
                    "workload": trace.workload.uuid,
                    "shapes": shapes,
                    "published_status": evaluation.status.value if evaluation else None,
                    "published_ms": evaluation.performance.latency_ms
                    if evaluation and evaluation.performance
                    else None,
                    "published_hardware": evaluation.environment.hardware if evaluation else None,
                    "correct": ours.get("correct"),
                    "latency_ms": ours.get("latency_ms"),
                    "latency_kind": ours.get("latency_kind"),
                    "target": ours.get("target"),
                    "error_kind": ours.get("error_kind"),
                    "message": (ours.get("message") or "")[:300],
                }
            )
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return {"rows": rows}


if __name__ == "__main__":
    share, skip = (sys.argv[3:4] or ["1/1"])[0], int((sys.argv[4:5] or ["0"])[0])
    print(json.dumps(main(Path(sys.argv[1]), Path(sys.argv[2]), share, skip), indent=1))
