"""The profiling CLIs, inside the measuring child: `neuron-profile` (SDK 2.29 and older) and
`neuron-explorer` (its successor; `neuron-explorer capture` replaced `neuron-profile capture`
in SDK 2.32 with the same flags, tools/neuron-explorer/how-to-profile-workload.rst).

capture: `-n NEFF -s SESSION.ntff --profile-nth-exec=2 --ignore-exec-errors [NAME FILE.npy ...]`
  runs the NEFF twice and traces the second run (the first warms up), into SESSION_exec_2.ntff;
  without NAME FILE pairs the inputs are zero-filled buffers of the NEFF's sizes.
view: `--output-format summary-json -n NEFF -s TRACE.ntff` prints the summary metrics.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from nkibench.backends.neuron.summary import parse_summary

__all__ = ["PROFILER_TIMEOUT_S", "ProfilerFailed", "capture", "run_tool", "summary", "traced_ms"]

PROFILER_TIMEOUT_S = 600
WARM_RUNS = 2
"""--profile-nth-exec: one warm-up execution, then the traced one."""


class ProfilerFailed(Exception):
    pass


def run_tool(tool: str, *arguments: str) -> str:
    name = Path(tool).name
    try:
        completed = subprocess.run(
            [tool, *arguments],
            capture_output=True,
            text=True,
            timeout=PROFILER_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ProfilerFailed(f"{name} {arguments[0]} did not run: {e}") from None
    if completed.returncode != 0:
        detail = (completed.stderr or completed.stdout).strip()[-500:]
        raise ProfilerFailed(
            f"{name} {arguments[0]} exited with status {completed.returncode}: {detail}"
        )
    return completed.stdout


def summary(tool: str, neff: str, ntff: str) -> dict[str, float]:
    text = run_tool(tool, "view", "--output-format", "summary-json", "-n", neff, "-s", ntff)
    return parse_summary(text)


def capture(tool: str, neff: str, session: Path, inputs: Sequence[str] = ()) -> Path:
    """One traced execution after a warm-up one; the trace file it wrote."""
    run_tool(
        tool,
        "capture",
        "-n",
        neff,
        "-s",
        str(session),
        f"--profile-nth-exec={WARM_RUNS}",
        "--ignore-exec-errors",
        *inputs,
    )
    # With --profile-nth-exec=N the profiler inserts "_exec_N" before the suffix.
    traced = session.with_name(f"{session.stem}_exec_{WARM_RUNS}{session.suffix}")
    found = traced if traced.exists() else session
    if not found.exists():
        raise ProfilerFailed(
            f"{Path(tool).name} capture wrote neither {traced.name} nor {session.name}"
        )
    return found


def traced_ms(tool: str, neff: str, folder: Path, index: int, inputs: Sequence[str] = ()) -> float:
    """The device time of one traced execution (the summary's total_time), in ms."""
    trace = capture(tool, neff, folder / f"run_{index}.ntff", inputs)
    return summary(tool, neff, str(trace))["total_time"] * 1e3
