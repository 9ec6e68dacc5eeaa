"""The GPU counters' trusted side (nkibench.backends.triton.nsight): ncu's CSV read as data,
every field checked, a malformed report a typed failure; and a profiler's command line
starting a sandboxed child (nkibench.sandbox.process). The counters of real kernels, moving
the right way between a memory-bound and a compute-bound variant, are tested on a GPU
(tests/nkibench/backends/test_triton_gpu.py)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from daemon.views.report.view import counters_text
from nkibench.backends.triton.backend import counters_skipped
from nkibench.backends.triton.compiled import COMPILE_CACHE_FIELD, share_compile_cache
from nkibench.backends.triton.nsight import (
    REPORT_LIMIT,
    CountersUnreadable,
    NsightCompute,
    checked_kernels,
    merge_compiled,
    parse_report,
    report_phase,
    summarise,
)
from nkibench.result import GPU_RUN_COUNTERS
from tests.support.processes import MARK
from tests.support.triton_helpers import SILU
from tests.support.warm_pool import child_of_a_fresh_pool

HEADER = (
    '"ID","Process ID","Process Name","Host Name","thread Domain:Push/Pop_Range:PL_Type",'
    '"Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC",'
    '"dram__bytes_read.sum","dram__bytes_write.sum","gpu__time_duration.sum",'
    '"launch__registers_per_thread","lts__t_sector_hit_rate.pct",'
    '"sm__throughput.avg.pct_of_peak_sustained_elapsed"'
)
UNITS = '"","","","","","","","","","","","","byte","byte","nsecond","register/thread","%","%"'


def _row(number: int, name: str, read: str, duration: str, sm: str) -> str:
    return (
        f'"{number}","546","python3.12","127.0.0.1","546 <default domain>:accelopt-counters",'
        f'"{name}","1","7","(128, 1, 1)","(32768, 1, 1)","0","9.0",'
        f'"{read}","134,217,728","{duration}","26","15.52","{sm}"'
    )


REPORT = "\n".join(
    [
        "==PROF== Connected to process 546 (/usr/bin/python3.12)",
        HEADER,
        UNITS,
        _row(1, "add", "268,435,456", "100,000", "10.5"),
        _row(2, "fma", "134,217,728", "300,000", "99.13"),
        "==PROF== Disconnected from process 546",
    ]
).encode()


def test_a_report_gives_each_kernel_its_counters_by_our_names() -> None:
    kernels = parse_report(REPORT)
    assert [k["kernel"] for k in kernels] == ["add", "fma"]
    assert kernels[0]["dram_read_bytes"] == 268435456.0  # thousands separators read
    assert kernels[1]["sm_throughput_pct"] == 99.13
    assert kernels[0]["registers_per_thread"] == 26.0
    assert "memory_throughput_pct" not in kernels[0]  # not in this report: not invented


def test_the_run_sums_bytes_and_weights_rates_by_duration() -> None:
    summary = summarise(parse_report(REPORT))
    assert summary["gpu_kernels_profiled"] == 2.0
    assert summary["gpu_dram_read_bytes"] == 268435456.0 + 134217728.0
    # 10.5% for a quarter of the time, 99.13% for three quarters
    assert summary["gpu_sm_throughput_pct"] == pytest.approx(0.25 * 10.5 + 0.75 * 99.13)
    assert summary["gpu_registers_per_thread"] == 26.0
    assert set(GPU_RUN_COUNTERS) <= set(summary)  # every counter the planner is shown


def test_the_report_gives_a_line_per_kernel_or_says_why_there_is_none() -> None:
    kernels = merge_compiled(parse_report(REPORT), [{"kernel": "add", "spilled_registers": 3}])
    lines = counters_text(kernels, None).splitlines()
    assert lines[0] == (
        "add: DRAM read 268.4 MB, written 134.2 MB, L2 hit 16%, SM 10%, memory 0% of peak, "
        "26 registers, 3 spilled"
    )
    assert lines[1].startswith("fma: DRAM read 134.2 MB")
    assert counters_text([], "no ncu here") == "no GPU counters: no ncu here"


@pytest.mark.parametrize(
    ("report", "said"),
    [
        (b"==PROF== Disconnected from process 12\n", "no table"),
        (HEADER.replace('"Kernel Name"', '"Kernel"').encode(), "no table"),
        (f"{HEADER}\n{UNITS}\n".encode(), "no kernel"),
        (f'{HEADER}\n{UNITS}\n"1","2"\n'.encode(), "fields"),
        (b"x" * (REPORT_LIMIT + 1), "larger than"),
    ],
)
def test_a_malformed_report_is_a_typed_failure(report: bytes, said: str) -> None:
    with pytest.raises(CountersUnreadable, match=said):
        parse_report(report)


def test_what_a_reader_child_hands_back_is_checked_field_by_field() -> None:
    good = checked_kernels([{"kernel": "add", "dram_read_bytes": 5, "l2_hit_rate_pct": 50.0}])
    assert good == [{"kernel": "add", "dram_read_bytes": 5.0, "l2_hit_rate_pct": 50.0}]
    for bad in (
        [],
        {"kernel": "add"},
        [{"dram_read_bytes": 1.0}],
        [{"kernel": "add", "latency_ms": 0.001}],  # not a counter of ours
        [{"kernel": "add", "dram_read_bytes": "many"}],
        [{"kernel": "add", "dram_read_bytes": True}],
        [{"kernel": "add"}] * 65,
    ):
        with pytest.raises(CountersUnreadable):
            checked_kernels(bad)


def test_tritons_compile_report_joins_the_kernel_of_its_name() -> None:
    kernels: list[dict[str, float | str]] = [
        {"kernel": "add", "dram_read_bytes": 1.0},
        {"kernel": "other"},
    ]
    compiled = [
        {"kernel": "add", "registers_per_thread": 40, "spilled_registers": 3, "shared_bytes": 0},
        {"kernel": "other", "spilled_registers": -1, "num_warps": True},  # not believed
        "junk",
    ]
    merged = merge_compiled(kernels, compiled)
    assert merged[0]["triton_spilled_registers"] == 3.0
    assert merged[0]["triton_registers_per_thread"] == 40.0
    assert merged[1] == {"kernel": "other"}
    assert merge_compiled(kernels, "junk") == kernels


def test_the_report_is_read_in_a_child_beneath_its_folder(tmp_path: Path) -> None:
    (tmp_path / "counters.csv").write_bytes(REPORT)
    assert [k["kernel"] for k in report_phase({"report_dir": str(tmp_path)})["kernels"]] == [
        "add",
        "fma",
    ]
    (tmp_path / "counters.csv").unlink()
    (tmp_path / "counters.csv").symlink_to("/etc/passwd")  # a link the kernel planted
    answer = report_phase({"report_dir": str(tmp_path)})
    assert answer["ok"] is False
    assert answer["kind"] == "measurement"


def test_ncu_is_found_where_asked_and_can_be_turned_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = tmp_path / "nsight" / "ncu"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("ACCELOPT_NCU", str(program))
    found = NsightCompute.find()
    assert found is not None
    assert found.folder == str(program.parent)
    command = found.command(tmp_path / "out.csv")
    assert command[0] == str(program)
    assert command[command.index("--log-file") + 1] == str(tmp_path / "out.csv")
    assert "accelopt-counters/" in command
    monkeypatch.setenv("ACCELOPT_NCU", "off")
    assert NsightCompute.find() is None
    monkeypatch.setenv("ACCELOPT_NCU", str(tmp_path / "missing"))
    assert NsightCompute.find() is None


def test_a_launcher_starts_the_child_cold_inside_the_sandbox(tmp_path: Path) -> None:
    """A profiler's command line before the child's: the child it starts runs the phase as
    any other (its result comes back), cold even where a zygote could fork it (a fork would
    escape the profiler)."""
    env = shutil.which("env")
    assert env is not None
    _, outcome = child_of_a_fresh_pool(
        ("nkibench.sandbox.child",),
        "nkibench.sandbox.child",
        {"entry": "tests.support.warm_probe:echo_phase"},
        launcher=[env, f"{MARK}=set by the launcher"],
    )
    assert outcome.result, outcome.stderr_tail
    assert not outcome.warm
    assert json.loads(outcome.result)["marker"] == "set by the launcher"


def test_counters_are_taken_for_the_tasks_own_kernel_and_for_a_clear_lead_alone() -> None:
    assert counters_skipped(1.0, None) is None  # the task's own kernel
    assert counters_skipped(0.97, 1.0) is None  # 3% faster: it can lead the search
    for latency in (0.99, 1.0, 1.3):  # within the timer's spread, or slower
        said = counters_skipped(latency, 1.0)
        assert said is not None, latency
        assert said.startswith("not taken"), said
        assert f"{latency:.4f} ms is not 2% faster" in said


LOAD_FOR = """
import json, sys
from pathlib import Path
from nkibench.backends.triton.phases import _load
from nkibench.task.spec import load_task
task = load_task(Path(sys.argv[1]))
request = {
    "kernel_source": task.kernel_source, "display_name": "kernel.py",
    "kernel_file": "kernel.py", "function": task.kernel_function, "dialect": "triton",
    "manifest": {},
}
kernel, failure = _load(request, guard=sys.argv[2] == "guarded")
print(json.dumps([kernel is not None, failure, "torch._dynamo" in sys.modules]))
"""


@pytest.mark.parametrize("runs", ["guarded", "counted"])
def test_the_counters_child_loads_the_kernel_without_the_guards_imports(
    runs: str, tmp_path: Path
) -> None:
    """The counters' child runs the kernel unguarded, as a hint: it leaves out the torch
    guard's first use, whose imports (torch._dynamo, sympy) took seconds of that cold child's
    start; a checked or timed child still makes it before the kernel's code runs."""

    environment = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    answer = subprocess.run(
        [sys.executable, "-c", LOAD_FOR, str(SILU), runs],
        cwd=tmp_path,
        env={**environment, "PYTHONPATH": str(Path.cwd())},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    loaded, failure, dynamo = json.loads(answer.stdout.strip().splitlines()[-1])
    assert (loaded, failure) == (True, None)
    assert dynamo is (runs == "guarded")


def test_a_child_compiles_into_the_sessions_cache_only_where_its_request_names_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel's child and the counters' child of a task's own kernel share a compile cache
    (TritonBackend.begin); any other child keeps Triton's under its own home."""
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    share_compile_cache({"seeds": [1]})
    assert "TRITON_CACHE_DIR" not in os.environ
    share_compile_cache({COMPILE_CACHE_FIELD: 7})  # not a folder's name: ignored
    assert "TRITON_CACHE_DIR" not in os.environ
    share_compile_cache({COMPILE_CACHE_FIELD: str(tmp_path)})
    assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path)
