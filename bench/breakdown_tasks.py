"""Where the wall time of `accelopt profile --backend triton --shapes full` goes for task
folders outside the GPU suite (nkibench/suites/gpu_large): the breakdown table of
`accelopt bench gpu --breakdown`, for any folders. Runs on this tree's code or on an older
one's (it uses only what both have):

    python3 bench/breakdown_tasks.py OUT.json TASK_DIR...

on GPU 0, or the one ACCELOPT_BENCH_DEVICE names.
"""

import json
import os
import sys
import time
from pathlib import Path

from daemon.cli.breakdown import print_breakdown
from nkibench.backends.triton.backend import TritonBackend
from nkibench.breakdown import recording
from nkibench.harness import fresh_seeds, profile_kernel
from nkibench.task.spec import load_task


def main() -> None:
    out = Path(sys.argv[1])
    backend = TritonBackend(device=os.environ.get("ACCELOPT_BENCH_DEVICE", "0"), require_gpu=True)
    rows = []
    result = {"gpu": backend.host.gpu, "passes": [rows]}
    for folder in sys.argv[2:]:
        task = load_task(Path(folder))
        started = time.monotonic()
        with recording() as recorded:
            found = profile_kernel(task, backend=backend, shapes="full", seeds=fresh_seeds(1))
        rows.append(
            {
                "task": task.name,
                "correct": found.correct,
                "error": found.message if found.error_kind else None,
                "latency_ms": found.latency_ms,
                "wall_s": time.monotonic() - started,
                "breakdown": recorded.to_json(),
            }
        )
        print(task.name, found.correct, found.latency_ms, found.message, flush=True)
        out.write_text(json.dumps(result, indent=1))
    print_breakdown(result, "full")


main()
