"""The neuron backend on a real Trainium host: run with ACCELOPT_NEURON=1 (README, "Running on
Trainium"). ACCELOPT_NEURON_CORE picks the NeuronCore (default 0). Elsewhere these tests are
skipped: no Neuron device or compiler can exist in CI (test_neuron_backend.py beside this file
covers the backend's logic there, against a test double)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from nkibench.backends.neuron import NeuronBackend, detect_neuron
from nkibench.harness import profile_kernel
from nkibench.suites import NKI_SUITE as SUITE
from nkibench.task.spec import load_task

pytestmark = pytest.mark.skipif(
    os.environ.get("ACCELOPT_NEURON") != "1",
    reason="real Trainium tests: set ACCELOPT_NEURON=1 on a Trainium host",
)
CORE = int(os.environ.get("ACCELOPT_NEURON_CORE", "0"))


@pytest.fixture(scope="module")
def neuron() -> NeuronBackend:
    return NeuronBackend(core=CORE)


def test_this_host_has_a_compiler_a_profiler_and_the_core() -> None:
    host = detect_neuron()
    assert host.compiler_version not in ("", "unknown")
    assert CORE in host.cores
    assert host.instance_type is not None


def test_a_suite_kernel_is_measured_and_estimated(neuron: NeuronBackend, tmp_path: Path) -> None:
    task = load_task(SUITE / "silu")
    result = profile_kernel(task, backend=neuron, shapes="full", workdir=tmp_path)
    assert result.correct, f"{result.error_kind}: {result.message}"
    assert result.latency_kind == "measured"
    assert result.latency_ms is not None
    assert result.latency_ms > 0
    assert result.latency_stats["runs"] == neuron.iterations
    assert result.counters["total_time"] > 0
    assert result.counters["hbm_read_bytes"] >= 4096 * 7168 * 4
    assert result.pct_of_peak is not None
    assert 0 < result.pct_of_peak <= 100
    assert result.estimate is not None
    assert result.estimate["latency_kind"] == "estimated"
    assert result.fingerprint["neuron_core"] == str(CORE)


def test_a_kernel_the_compiler_rejects_is_a_compile_error(
    neuron: NeuronBackend, tmp_path: Path
) -> None:
    folder = tmp_path / "silu"
    shutil.copytree(SUITE / "silu", folder)
    source = (folder / "kernel.py").read_text()
    # 256 partitions: beyond the 128 of every NeuronCore
    (folder / "kernel.py").write_text(source.replace("rows = nl.tile_size.pmax", "rows = 256"))
    result = profile_kernel(load_task(folder), backend=neuron, shapes="small", seeds=(0,))
    assert not result.correct
    assert result.error_kind == "compile"
    assert result.message
