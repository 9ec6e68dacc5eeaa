"""On a GPU (skipped elsewhere, as in CI): FlashInfer-Bench's round trip through a running
daemon. A definition of the made-up dataset is imported; the daemon, with a scripted LLM and
`--flashinfer-trace`, profiles its baseline, promotes the executor's faster kernel, and the
trace folder holds it, where flashinfer-bench's own `apply` runs it (bench/flashinfer_apply.py
counts its hits). Restarted on every workload with a short re-verification period, the daemon
demotes it, and the folder lets it go.

The baseline is the dataset's RMSNorm with its square root taken by Newton's iteration run far
past converging (a slow kernel that is right). The candidate takes `tl.sqrt`, and caps its grid
at four programs, one per row of the first workload's batch: right there, where the first
daemon searches (`--shapes w0`), and wrong on the second workload's eight rows. Fresh inputs
cannot stand in for that: the triton backend checks every kernel on seeds drawn anew, so a
kernel wrong on some of its inputs is caught when it is a candidate, not later."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from flashinfer_bench.data import TraceSet

from events.catalog import KernelDemoted, KernelPromoted
from tests.flashinfer.dataset import RMSNORM, write_dataset
from tests.support.agent_script import fenced, llm_env
from tests.support.cli import run_cli
from tests.support.daemon_process import DaemonProcess, wait_until
from tests.support.llm_server import Reply, Request, running_llm

pytestmark = [
    pytest.mark.slow,
    pytest.mark.gpu_alone,
    pytest.mark.usefixtures("cuda_gpu", "gpu_turn"),
]

APPLY = Path(__file__).parents[2] / "bench" / "flashinfer_apply.py"
SQRT = "    inv = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / H + 1e-6)\n"
NEWTON = (
    "    v = tl.sum(x * x, axis=0) / H + 1e-6\n"
    "    r = v * 0.0 + 1.0\n"
    "    for _ in range(400):  # Newton's iteration for the square root\n"
    "        r = 0.5 * (r + v / r)\n"
    "    inv = 1.0 / r\n"
)
GRID = "rmsnorm_kernel[(hidden_states.shape[0],)]"
CAPPED = "rmsnorm_kernel[(min(hidden_states.shape[0], 4),)]"


def imported_task(tmp_path: Path) -> tuple[Path, str]:
    """The RMSNorm definition imported, its kernel made slow; the folder and the candidate the
    executor will answer."""
    dataset = write_dataset(tmp_path / "dataset")
    staging = tmp_path / "staging"
    run = run_cli("import-flashinfer", str(dataset), str(staging), "--definition", RMSNORM)
    assert run.code == 0, run.err
    folder = tmp_path / "staging" / RMSNORM
    kernel = (folder / "kernel.py").read_text()
    assert SQRT in kernel, kernel
    assert GRID in kernel, kernel
    (folder / "kernel.py").write_text(kernel.replace(SQRT, NEWTON))
    return folder, kernel.replace(GRID, CAPPED)


def apply_report(trace: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, str(APPLY), str(trace)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, object] = json.loads(done.stdout)
    return report


def solutions_in(folder: Path) -> list[str]:
    """The solutions flashinfer_bench's loader finds in `folder` (none before it exists)."""
    if not folder.exists():
        return []
    loaded = TraceSet.from_path(str(folder))
    return [s.name for found in loaded.solutions.values() for s in found]


def test_a_promotion_reaches_trace_apply_and_a_demotion_takes_it_out(tmp_path: Path) -> None:
    folder, candidate = imported_task(tmp_path)

    def script(request: Request) -> Reply:
        if request.model == "planner-model":
            return Reply("PLAN-SQRT: take the square root with tl.sqrt, not by iteration.")
        if request.model == "executor-model":
            return Reply(fenced(candidate))
        return Reply("**One square root**\n\ntl.sqrt is one instruction; iterating is not.")

    trace = tmp_path / "trace"
    common = ["--backend", "triton", "--iterations", "1", "--beam", "1", "--plans", "1"]
    common += ["--samples", "1", "--flashinfer-trace", str(trace)]
    with running_llm(script) as llm:
        searching = DaemonProcess(tmp_path / "run", *common, "--shapes", "w0", env=llm_env(llm.url))
        searching.drop(folder, RMSNORM)
        searching.start(ready_s=300)  # a fresh GPU machine measures its ceilings first
        try:
            promoted = wait_until(
                lambda: searching.events(KernelPromoted, task=RMSNORM), 600, "a promotion"
            )[0]
            name = f"accelopt_{RMSNORM}_{promoted.kernel_hash[:12]}"
            wait_until(lambda: solutions_in(trace) == [name], 60, "the trace folder")
            exported = searching.accelopt(
                "export", RMSNORM, "--format", "flashinfer", "--out", str(tmp_path / "export")
            )
            assert exported.returncode == 0, exported.stderr
            assert solutions_in(tmp_path / "export") == [name]
            report = apply_report(trace)
        finally:
            assert searching.stop() == 0
        print(json.dumps(report, indent=1))
        print(f"promoted: {promoted.latency_ms:.4f} ms measured, {promoted.speedup:.2f}x")
        assert promoted.latency_kind == "measured"
        assert promoted.speedup > 1.0
        calls = report[RMSNORM]["calls"]  # type: ignore[index]
        assert report[RMSNORM]["solutions"] == [name]  # type: ignore[index]
        assert len(calls) == 1  # the workload it was measured on
        assert all(call["hit"] for call in calls), calls
        assert report["fallbacks"] == 0

        # the same state and folder, every workload, fresh inputs every 7.2 s
        checking = DaemonProcess(
            tmp_path / "run",
            *common,
            "--shapes",
            "full",
            "--reverify-hours",
            "0.002",
            env=llm_env(llm.url),
        )
        checking.start(ready_s=300)
        try:
            demoted = wait_until(
                lambda: checking.events(KernelDemoted, task=RMSNORM), 300, "the demotion"
            )[0]
            wait_until(lambda: solutions_in(trace) == [], 60, "the folder to let it go")
        finally:
            assert checking.stop() == 0
    assert demoted.candidate_id == promoted.candidate_id
    assert "re-verification on seeds" in demoted.reason
    assert "w1" in demoted.reason, demoted.reason  # the second workload's rows
    assert os.path.islink(trace)
