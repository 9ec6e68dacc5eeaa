"""The GPU's hardware counters for the planner, per launched kernel, through Nsight Compute
(parent side: this module never imports torch).

Why ncu: it runs unprivileged where the driver lets users read the counters (the H100 and H200
machines of this work do), and it can start the sandboxed child itself, inside the sandbox:
no attaching from outside, nothing the child could not already reach. CUPTI's Python binding
(cupti-python 13) exposes its activity and PM-sampling APIs but not the range profiler that
per-kernel counters need, and Triton's Proton counts what a launch declares, not the hardware.

The counters child (nkibench.backends.triton.phases:counters_phase) runs the candidate once to
compile and autotune, then once more inside the NVTX range COUNTED_RANGE, which is all ncu
profiles (each kernel replayed, caches flushed and clocks at base between passes). ncu writes
its CSV into a folder of the child's: what comes back is the candidate's process's
neighbour's report, read as data (bounded, every field checked) and shown to the planner as a
hint. It is never a verdict: correctness and latency come from elsewhere.
"""

from __future__ import annotations

import csv
import io
import math
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nkibench.backends.triton.compiled import REPORTED
from nkibench.result import kernel_counter
from nkibench.sandbox.readback import UnsafeFile, read_beneath

__all__ = [
    "COUNTED_RANGE",
    "CSV_NAME",
    "CountersUnreadable",
    "NsightCompute",
    "checked_kernels",
    "merge_compiled",
    "parse_report",
    "report_phase",
    "summarise",
]

COUNTED_RANGE = "accelopt-counters"
"""The NVTX range around the one run whose kernels ncu profiles."""
CSV_NAME = "counters.csv"
REPORT_LIMIT = 4 * 1024 * 1024
"""Bytes of ncu's CSV read at most: a run launching a few hundred kernels fits."""
KERNELS_KEPT = 64
"""Kernels of one run reported at most (in launch order)."""
NAME_LIMIT = 200

METRICS = {
    "dram__bytes_read.sum": "dram_read_bytes",
    "dram__bytes_write.sum": "dram_write_bytes",
    "lts__t_sector_hit_rate.pct": "l2_hit_rate_pct",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_throughput_pct",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "memory_throughput_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "gpu__time_duration.sum": "duration_ns",
    "launch__registers_per_thread": "registers_per_thread",
    "launch__shared_mem_per_block_static": "static_shared_bytes",
    "launch__shared_mem_per_block_dynamic": "dynamic_shared_bytes",
    "launch__grid_size": "grid_size",
    "launch__block_size": "block_size",
}
"""ncu's metric → our name. Bytes are bytes, `_pct` are percentages (0 to 100), the duration is
under the profiler (base clocks, caches flushed): a hint of the share, never the latency."""
INSTALLS = ("/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda*/nsight-compute*/ncu")
"""Where Nsight Compute itself lies (the newest found is taken). CUDA's bin/ncu is a script
that looks for these at run time, in places the sandbox does not show: the real one is
bound in instead."""


class CountersUnreadable(Exception):
    """ncu's report is missing, too large or malformed: the profile has no counters, and says
    why."""


@dataclass(frozen=True)
class NsightCompute:
    program: str
    """ncu itself (its real path: the front script beside its own libraries)."""

    @classmethod
    def find(cls) -> NsightCompute | None:
        """ACCELOPT_NCU (a path, or `off`), else the newest Nsight Compute installed where
        NVIDIA puts it (INSTALLS), else `ncu` on PATH; None where there is none."""
        chosen = os.environ.get("ACCELOPT_NCU", "")
        if chosen.lower() in ("off", "0", "none"):
            return None
        found = [chosen] if chosen else [*_globbed(INSTALLS)[::-1], shutil.which("ncu") or ""]
        for path in found:
            real = os.path.realpath(path) if path else ""
            if real and os.path.isfile(real) and os.access(real, os.X_OK):
                return cls(real)
        return None

    @property
    def folder(self) -> str:
        """Its installation, bound read-only into the counters child's sandbox."""
        return str(Path(self.program).parent)

    def command(self, report: Path) -> list[str]:
        """ncu's command line before the child's own: the kernels inside COUNTED_RANGE, the
        metrics, CSV into `report`."""
        return [
            self.program,
            "--nvtx",
            "--nvtx-include",
            f"{COUNTED_RANGE}/",
            "--metrics",
            ",".join(METRICS),
            "--csv",
            "--page",
            "raw",
            "--cache-control",
            "all",
            "--clock-control",
            "base",
            "--log-file",
            str(report),
        ]


def _globbed(patterns: Sequence[str]) -> list[str]:
    """Every match of `patterns`, oldest version first (by the folder's name)."""
    found: list[str] = []
    for pattern in patterns:
        found += [str(p) for p in Path("/").glob(pattern.lstrip("/"))]
    return sorted(found, key=lambda path: _version(Path(path).parent.name))


def _version(name: str) -> tuple[int, ...]:
    """`2025.3.1` or `nsight-compute-2025.3.1` as numbers, for ordering."""
    digits = "".join(c if c.isdigit() or c == "." else " " for c in name).split()
    return tuple(int(part) for part in (digits[-1].split(".") if digits else []) if part)


def parse_report(data: bytes) -> list[dict[str, float | str]]:
    """ncu's raw CSV page (a header row, a units row, a row per profiled kernel) as one dict
    per kernel: its name and every metric of METRICS it reported, by our names. Lines that are
    not the table (ncu's `==PROF==` notes) are skipped."""
    if len(data) > REPORT_LIMIT:
        raise CountersUnreadable(f"ncu's report is larger than {REPORT_LIMIT} bytes")
    text = data.decode("utf-8", "replace")
    rows = list(csv.reader(io.StringIO("\n".join(_table_lines(text)))))
    if not rows:
        raise CountersUnreadable("ncu profiled no kernel of the run (its report has no table)")
    header = rows[0]
    if "Kernel Name" not in header:
        raise CountersUnreadable("ncu's report has no `Kernel Name` column")
    columns = {name: header.index(name) for name in METRICS if name in header}
    if not columns:
        raise CountersUnreadable("ncu's report holds none of the metrics asked for")
    name_at = header.index("Kernel Name")
    kernels: list[dict[str, float | str]] = []
    for row in rows[1:]:
        if len(row) != len(header):
            raise CountersUnreadable(
                f"a row of ncu's report has {len(row)} fields, not {len(header)}"
            )
        if _is_units(row, columns):
            continue
        kernel: dict[str, float | str] = {"kernel": row[name_at][:NAME_LIMIT]}
        for metric, index in columns.items():
            value = _number(row[index])
            if value is not None:
                kernel[METRICS[metric]] = value
        kernels.append(kernel)
        if len(kernels) == KERNELS_KEPT:
            break
    if not kernels:
        raise CountersUnreadable("ncu profiled no kernel of the run")
    return kernels


def _table_lines(text: str) -> list[str]:
    """The CSV table's lines: from the header (the first line naming `Kernel Name`) on."""
    lines = text.splitlines()
    for start, line in enumerate(lines):
        if '"Kernel Name"' in line:
            return [row for row in lines[start:] if row.startswith('"') or row[:1].isdigit()]
    return []


def _is_units(row: list[str], columns: dict[str, int]) -> bool:
    """The units row: no metric in it is a number."""
    return all(_number(row[i]) is None for i in columns.values())


def _number(field: str) -> float | None:
    """A metric's value as ncu prints it (thousands separated by commas), None where it is
    none (`n/a`, a unit); only finite numbers."""
    try:
        value = float(field.replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def summarise(kernels: list[dict[str, float | str]]) -> dict[str, float]:
    """The run's counters over its kernels, for the profile's flat counters: bytes summed, the
    rates weighted by each kernel's duration, registers and shared memory at their largest."""
    total_ns = sum(kernel_counter(k, "duration_ns") for k in kernels)

    def weighted(name: str) -> float:
        if total_ns <= 0:
            return sum(kernel_counter(k, name) for k in kernels) / len(kernels)
        return (
            sum(kernel_counter(k, name) * kernel_counter(k, "duration_ns") for k in kernels)
            / total_ns
        )

    return {
        "gpu_kernels_profiled": float(len(kernels)),
        "gpu_dram_read_bytes": sum(kernel_counter(k, "dram_read_bytes") for k in kernels),
        "gpu_dram_write_bytes": sum(kernel_counter(k, "dram_write_bytes") for k in kernels),
        "gpu_l2_hit_rate_pct": weighted("l2_hit_rate_pct"),
        "gpu_sm_throughput_pct": weighted("sm_throughput_pct"),
        "gpu_memory_throughput_pct": weighted("memory_throughput_pct"),
        "gpu_registers_per_thread": max(kernel_counter(k, "registers_per_thread") for k in kernels),
        "gpu_shared_bytes_per_block": max(
            kernel_counter(k, "static_shared_bytes") + kernel_counter(k, "dynamic_shared_bytes")
            for k in kernels
        ),
    }


def report_phase(request: dict[str, Any]) -> dict[str, Any]:
    """ncu's report read and parsed in a child that runs no kernel (the parent opens nothing a
    child wrote)."""
    try:
        data = read_beneath(Path(request["report_dir"]), CSV_NAME, REPORT_LIMIT)
        return {"ok": True, "kernels": parse_report(data)}
    except (UnsafeFile, CountersUnreadable) as e:
        return {"ok": False, "kind": "measurement", "message": str(e)[:300]}


def checked_kernels(found: Any) -> list[dict[str, float | str]]:
    """A child's list of per-kernel counters, every entry checked: a name and finite numbers
    by the names METRICS gives, at most KERNELS_KEPT of them."""
    known = set(METRICS.values())
    if not isinstance(found, list) or not found or len(found) > KERNELS_KEPT:
        raise CountersUnreadable("the report's reader handed back no list of kernels")
    kernels: list[dict[str, float | str]] = []
    for entry in found:
        if not isinstance(entry, dict) or not isinstance(entry.get("kernel"), str):
            raise CountersUnreadable("a kernel's counters are not a named record")
        kernel: dict[str, float | str] = {"kernel": entry["kernel"][:NAME_LIMIT]}
        for key, value in entry.items():
            if key == "kernel":
                continue
            if key not in known or not isinstance(value, int | float) or isinstance(value, bool):
                raise CountersUnreadable(f"a kernel's counter {str(key)[:40]!r} is not one of ours")
            if not math.isfinite(value):
                raise CountersUnreadable(f"a kernel's counter {key} is not finite")
            kernel[key] = float(value)
        kernels.append(kernel)
    return kernels


def merge_compiled(
    kernels: list[dict[str, float | str]], compiled: Any
) -> list[dict[str, float | str]]:
    """Each profiled kernel with what Triton's compiler reported of the kernel of its name
    (registers, spills, shared memory, warps, stages), where the counters child reported it;
    entries that are not well-formed are left out."""
    by_name: dict[str, dict[str, float]] = {}
    for entry in compiled if isinstance(compiled, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("kernel"), str):
            continue
        numbers = {
            f"triton_{key}": float(entry[key])
            for key in REPORTED
            if isinstance(entry.get(key), int)
            and not isinstance(entry.get(key), bool)
            and 0 <= entry[key] < 2**31
        }
        by_name[entry["kernel"][:NAME_LIMIT]] = numbers
    return [{**kernel, **by_name.get(str(kernel["kernel"]), {})} for kernel in kernels]
