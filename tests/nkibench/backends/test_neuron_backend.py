"""The neuron backend's logic, run here against the TEST DOUBLE of the Neuron SDK in
tests/data/neuron_double (documented signatures and output formats; kernels run under nkisim).
The same tests on real hardware: test_neuron_hardware.py beside this file (ACCELOPT_NEURON=1)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from nkibench.backends.neuron import NeuronBackend, NeuronHost, detect_neuron
from nkibench.backends.neuron.summary import SummaryError, latency_stats, parse_summary
from nkibench.errors import BackendUnavailable
from nkibench.harness import profile_kernel
from nkibench.result import KernelResult
from nkibench.suites import NKI_SUITE as SUITE
from nkibench.task.spec import load_task
from tests.support import DATA

DOUBLE = DATA / "neuron_double"


def _tools(folder: Path) -> Path:
    """Executables `neuron-profile` and `neuron-ls` that run the double's tools.py."""
    folder.mkdir()
    for name in ("neuron-profile", "neuron-ls"):
        script = folder / name
        script.write_text(
            f"#!{sys.executable}\n"
            f"import sys; sys.path.insert(0, {str(DOUBLE)!r})\n"
            "import tools; tools.main()\n"
        )
        script.chmod(0o755)
    return folder


@pytest.fixture
def double_host(tmp_path: Path) -> NeuronHost:
    bin_dir = _tools(tmp_path / "bin")
    return detect_neuron(python_path=[str(DOUBLE / "python")], path=f"{bin_dir}:{os.defpath}")


def _profile(host: NeuronHost, tmp_path: Path, **backend: Any) -> KernelResult:
    task = load_task(SUITE / "silu")
    neuron = NeuronBackend(host=host, target="trn1", iterations=3, **backend)
    return profile_kernel(task, backend=neuron, shapes="small", seeds=(0, 1), workdir=tmp_path)


def test_detection_reads_the_compiler_version_and_cores(double_host: NeuronHost) -> None:
    assert double_host.compiler_version == "0.0.0+testdouble"
    assert double_host.cores == (0, 1)
    assert double_host.devices == 1
    assert double_host.profiler.endswith("neuron-profile")


def test_detection_names_everything_missing(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailable) as caught:
        detect_neuron(python_path=[str(tmp_path)], path=str(tmp_path))
    message = caught.value.message
    assert "neuronxcc package does not import" in message
    assert "neuron-profile is not on PATH" in message
    assert "neuron-ls is not on PATH" in message
    assert "pip.repos.neuron.amazonaws.com" in message


def test_detection_recognises_the_pypi_placeholder(tmp_path: Path) -> None:
    placeholder = tmp_path / "site" / "neuronxcc"
    placeholder.mkdir(parents=True)
    (placeholder / "__init__.py").write_text("")
    bin_dir = _tools(tmp_path / "bin")
    with pytest.raises(BackendUnavailable, match="empty PyPI placeholder"):
        detect_neuron(python_path=[str(tmp_path / "site")], path=f"{bin_dir}:{os.defpath}")


def test_a_core_the_host_lacks_is_refused(double_host: NeuronHost) -> None:
    with pytest.raises(BackendUnavailable, match="NeuronCore 7 is not on this host"):
        NeuronBackend(host=double_host, core=7, target="trn1")


def test_the_target_must_match_the_instance(double_host: NeuronHost) -> None:
    host = NeuronHost(**{**double_host.__dict__, "instance_type": "trn2.48xlarge"})
    with pytest.raises(BackendUnavailable, match=r"does not match this trn2\.48xlarge"):
        NeuronBackend(host=host, target="trn1")
    assert NeuronBackend(host=host).target == "trn2"
    unknown = NeuronHost(**{**double_host.__dict__, "instance_type": "m7i.large"})
    with pytest.raises(BackendUnavailable, match="pass --target"):
        NeuronBackend(host=unknown)


def test_the_child_environment_pins_one_core_and_holds_no_secrets(
    double_host: NeuronHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("ACCELOPT_DB", "postgresql://user:pw@db/accelopt")
    monkeypatch.setenv("NEURON_RT_LOG_LEVEL", "WARN")
    environment = NeuronBackend(host=double_host, core=1, target="trn1").environment()
    assert environment["NEURON_RT_VISIBLE_CORES"] == "1"
    assert environment["NEURON_CC_FLAGS"] == "--auto-cast=none"
    assert environment["NEURON_RT_LOG_LEVEL"] == "WARN"
    assert "OPENAI_API_KEY" not in environment
    assert "ACCELOPT_DB" not in environment
    assert environment["PYTHONPATH"].startswith(str(DOUBLE / "python"))


def test_a_profile_is_measured_with_the_estimate_beside_it(
    double_host: NeuronHost, tmp_path: Path
) -> None:
    result = _profile(double_host, tmp_path, core=1)
    assert result.correct, result.message
    assert result.backend == "neuron"
    assert result.latency_kind == "measured", (result.error_kind, result.message)
    stats = result.latency_stats
    assert stats["runs"] == 3
    assert stats["min"] <= result.latency_ms <= stats["max"]
    assert stats["attempts"] == 1  # 0.1% jitter is within the 1% tolerance
    counters = result.counters
    assert counters["test_double_visible_core"] == 1
    assert counters["test_double_auto_cast_none"] == 1
    assert "neff_name" not in counters  # strings are not counters
    assert result.bound_by == "vector"  # 0.8 active
    estimate = result.estimate
    assert estimate["latency_kind"] == "estimated"
    # the double's device time is nkisim's estimate give or take its 0.1% jitter
    assert estimate["ratio_to_measured"] == pytest.approx(1.0, rel=0.01)
    assert result.pct_of_peak is not None
    assert 0 < result.pct_of_peak <= 100
    fingerprint = result.fingerprint
    assert fingerprint["neuronx_cc"] == "0.0.0+testdouble"
    assert fingerprint["neuron_core"] == "1"
    assert fingerprint["latency_kind"] == "measured"


def test_a_noisy_device_is_measured_again(
    double_host: NeuronHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEURON_DOUBLE_PROFILE", "noisy")
    result = _profile(double_host, tmp_path, retries=2)
    assert result.correct
    assert result.latency_stats["attempts"] == 3
    assert result.latency_stats["rel_spread"] > 0.01


@pytest.mark.parametrize(
    "case",
    [
        ("NEURON_DOUBLE_FAIL", "compile", "compile", "compilation failed"),
        ("NEURON_DOUBLE_FAIL", "wrong", "incorrect", "seed 0"),
        ("NEURON_DOUBLE_PROFILE", "fail", "measurement", "neuron-profile view exited"),
    ],
)
def test_failures_are_typed(
    double_host: NeuronHost,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    case: tuple[str, str, str, str],
) -> None:
    variable, value, kind, needle = case
    monkeypatch.setenv(variable, value)
    result = _profile(double_host, tmp_path)
    assert result.error_kind == kind
    assert needle in result.message
    assert result.latency_ms is None
    # a kernel that is correct but could not be timed stays correct
    assert result.correct == (kind == "measurement")


def test_summary_json_shapes() -> None:
    keyed = 'INFO: log line\n{"n_1a2b": {"total_time": 0.002, "hfu_estimated_percent": 36.0}}'
    assert parse_summary(keyed) == {"total_time": 0.002, "hfu_estimated_percent": 0.36}
    listed = '{"summary": [{"total_time": 0.5, "name": "x", "flag": true}], "instruction": []}'
    assert parse_summary(listed) == {"total_time": 0.5}
    for broken in ("no json here", '{"n_1": {"hbm_read_bytes": 4}}', '{"n_1": {"total_time": 0}}'):
        with pytest.raises(SummaryError):
            parse_summary(broken)


def test_latency_stats() -> None:
    stats = latency_stats([2.0, 1.0, 4.0])
    assert stats["mean"] == pytest.approx(7 / 3)
    assert (stats["min"], stats["max"], stats["p50"], stats["runs"]) == (1.0, 4.0, 2.0, 3.0)
    assert stats["rel_spread"] == 3.0
