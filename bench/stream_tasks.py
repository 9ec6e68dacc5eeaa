"""A stream of candidates as `accelopt bench gpu --stream N` makes one, for any task folders
and on this tree's code or an older one's (it uses only what both have), so that an older
tree gives the rate before:

    python3 bench/stream_tasks.py OUT.json N TASK_DIR...

Each task's own kernel is profiled once first, as a search's baseline, and timed apart; then N
variants (the task's kernel with a numbered comment appended: a new candidate to every cache)
are profiled one after another, task by task in turn, at full shapes with one fresh seed. On
GPU 0, or the one ACCELOPT_BENCH_DEVICE names. Every latency is measured.
"""

import json
import os
import sys
import time
from pathlib import Path

from nkibench.backends.triton.backend import TritonBackend
from nkibench.harness import fresh_seeds, profile_kernel
from nkibench.task.spec import load_task

MARK = "# bench/stream_tasks.py: variant {number}"


def main() -> None:
    out, count = Path(sys.argv[1]), int(sys.argv[2])
    tasks = [load_task(Path(folder)) for folder in sys.argv[3:]]
    backend = TritonBackend(device=os.environ.get("ACCELOPT_BENCH_DEVICE", "0"), require_gpu=True)
    result: dict = {"gpu": backend.host.gpu, "baselines": [], "candidates": []}

    def profile(task, source):  # type: ignore[no-untyped-def]
        began = time.monotonic()
        found = profile_kernel(
            task, backend=backend, kernel_source=source, shapes="full", seeds=fresh_seeds(1)
        )
        row = {
            "task": task.name,
            "correct": found.correct,
            "error": found.message if found.error_kind else None,
            "latency_ms": found.latency_ms,
            "wall_s": time.monotonic() - began,
        }
        print(json.dumps(row), flush=True)
        return row

    began = time.monotonic()
    for task in tasks:
        result["baselines"].append(profile(task, None))
    result["baselines_s"] = time.monotonic() - began
    began = time.monotonic()
    for number in range(count):
        task = tasks[number % len(tasks)]
        source = f"{task.kernel_source.rstrip()}\n\n{MARK.format(number=number)}\n"
        result["candidates"].append(profile(task, source))
        seconds = time.monotonic() - began
        result |= {"seconds": seconds, "per_hour": 3600.0 * (number + 1) / seconds}
        out.write_text(json.dumps(result, indent=1))
    print(
        f"{len(result['candidates'])} candidates in {result['seconds']:.1f} s: "
        f"{result['per_hour']:.0f} per hour (baselines first: {result['baselines_s']:.1f} s)"
    )


main()
