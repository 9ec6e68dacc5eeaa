"""The neuron backend on a real Trainium host: run with ACCELOPT_NEURON=1 (README, "Running on
Trainium"). ACCELOPT_NEURON_CORE picks the NeuronCore (default 0). Elsewhere these tests are
skipped: no Neuron device or compiler can exist in CI (test_neuron_backend.py beside this file
covers the backend's logic there, against a test double)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from nkibench.backends.neuron import CURRENT, LEGACY, NeuronBackend, detect_neuron
from nkibench.harness import profile_kernel
from nkibench.suites import NKI_LEGACY_SUITE, NKI_SUITE
from nkibench.task.spec import load_task

pytestmark = pytest.mark.skipif(
    os.environ.get("ACCELOPT_NEURON") != "1",
    reason="real Trainium tests: set ACCELOPT_NEURON=1 on a Trainium host",
)
CORE = int(os.environ.get("ACCELOPT_NEURON_CORE", "0"))
SUITES = {CURRENT: NKI_SUITE, LEGACY: NKI_LEGACY_SUITE}
TILE_ROWS = {CURRENT: "P = nl.tile_size.pmax", LEGACY: "rows = nl.tile_size.pmax"}
"""The line of each dialect's silu that sets the rows of a tile."""


@pytest.fixture(scope="module")
def neuron() -> NeuronBackend:
    return NeuronBackend(core=CORE)


def _runs(neuron: NeuronBackend, dialect: str) -> None:
    if dialect not in neuron.dialects:
        pytest.skip(f"this host does not run {dialect}: {neuron.refusal(dialect)}")


def test_this_host_has_a_compiler_a_profiler_and_the_core(neuron: NeuronBackend) -> None:
    host = detect_neuron()
    assert host.compiler_version not in ("", "unknown", "none")
    assert host.sdk_version is not None
    assert CORE in host.cores
    assert host.instance_type is not None
    assert neuron.dialects


@pytest.mark.parametrize("dialect", [CURRENT, LEGACY])
def test_a_suite_kernel_is_measured_and_estimated(
    neuron: NeuronBackend, tmp_path: Path, dialect: str
) -> None:
    _runs(neuron, dialect)
    task = load_task(SUITES[dialect] / "silu")
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
    assert result.fingerprint["dialect"] == dialect
    assert result.fingerprint["neuron_sdk"] == neuron.host.sdk_version


@pytest.mark.parametrize("dialect", [CURRENT, LEGACY])
def test_a_kernel_the_compiler_rejects_is_a_compile_error(
    neuron: NeuronBackend, tmp_path: Path, dialect: str
) -> None:
    _runs(neuron, dialect)
    folder = tmp_path / "silu"
    shutil.copytree(SUITES[dialect] / "silu", folder)
    source = (folder / "kernel.py").read_text()
    assert TILE_ROWS[dialect] in source
    # 256 partitions: beyond the 128 of every NeuronCore
    name = TILE_ROWS[dialect].split(" =")[0]
    (folder / "kernel.py").write_text(source.replace(TILE_ROWS[dialect], f"{name} = 256"))
    result = profile_kernel(load_task(folder), backend=neuron, shapes="small", seeds=(0,))
    assert not result.correct
    assert result.error_kind == "compile"
    assert result.message
