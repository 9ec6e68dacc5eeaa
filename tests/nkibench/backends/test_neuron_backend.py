"""The neuron backend's logic, run here against the TEST DOUBLE of the Neuron SDK in
tests/data/neuron_double (documented signatures and output formats; kernels run under nkisim),
in three flavours: SDK 2.28 (legacy NKI only, neuron-profile), SDK 2.29 (legacy NKI and NKI 0.3,
both profilers) and SDK 2.32 (NKI 0.6, neuron-explorer; nrtpy where a test asks for it).
The same tests on real hardware: test_neuron_hardware.py beside this file (ACCELOPT_NEURON=1)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from daemon.backends import open_for_command
from daemon.settings import Settings
from nkibench.backends.neuron import (
    CURRENT,
    LEGACY,
    NeuronBackend,
    NeuronHost,
    detect_neuron,
    runnable_dialects,
)
from nkibench.backends.neuron.backend import CURRENT_COMPILE
from nkibench.backends.neuron.current import parameter_names
from nkibench.backends.neuron.detect import sdk_of
from nkibench.backends.neuron.nrtpy_runner import _matched
from nkibench.backends.neuron.summary import (
    SummaryError,
    best_latency,
    latency_stats,
    parse_summary,
)
from nkibench.dialects import needs_port
from nkibench.errors import BackendUnavailable, PhaseFailure
from nkibench.harness import profile_kernel
from nkibench.result import KernelResult
from nkibench.sandbox.isolation import Isolation
from nkibench.suites import NKI_LEGACY_SUITE as SUITE
from nkibench.task.spec import load_task
from tests.support import DATA

DOUBLE = DATA / "neuron_double"
SCALE = DOUBLE / "tasks" / "scale"  # a current-NKI task
FLAVOURS = {
    "2.28": (("sdk/2.28", "python"), ("neuron-profile", "neuron-ls")),
    "2.29": (("sdk/2.29", "python", "current"), ("neuron-profile", "neuron-explorer", "neuron-ls")),
    "2.32": (("sdk/2.32", "python", "current"), ("neuron-explorer", "neuron-ls")),
}
"""SDK → (the double's Python folders, its tools on PATH)."""

HostFactory = Callable[..., NeuronHost]


def _tools(folder: Path, names: tuple[str, ...]) -> Path:
    """Executables named after the tools that run the double's tools.py."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        script = folder / name
        script.write_text(
            f"#!{sys.executable}\n"
            f"import sys; sys.path.insert(0, {str(DOUBLE)!r})\n"
            "import tools; tools.main()\n"
        )
        script.chmod(0o755)
    return folder


def _nrtpy_interpreter(folder: Path) -> Path:
    """A Python of its own environment that has (the double of) nrtpy, as the nrtpy docs
    advise: the standalone nrtpy and nki wheels cannot share one environment."""
    shutil.copytree(DOUBLE / "nrtpy" / "nrtpy", folder / "site" / "nrtpy")
    python = folder / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nPYTHONPATH={folder / "site"} exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return python


@pytest.fixture
def make_host(tmp_path: Path) -> HostFactory:
    def make(sdk: str, *, nrtpy: str | None = None) -> NeuronHost:
        folders, tools = FLAVOURS[sdk]
        python_path = [str(DOUBLE / f) for f in folders]
        given = None
        if nrtpy == "separate":
            env = tmp_path / "nrtpy-env"
            given = str(env / "bin" / "python" if env.exists() else _nrtpy_interpreter(env))
        elif nrtpy == "same":
            python_path.append(str(DOUBLE / "nrtpy"))
        bin_dir = _tools(tmp_path / f"bin-{sdk}", tools)
        return detect_neuron(python_path, f"{bin_dir}:{os.defpath}", nrtpy_python=given)

    return make


@pytest.fixture
def double_host(make_host: HostFactory) -> NeuronHost:
    return make_host("2.28")


def _profile(
    host: NeuronHost, tmp_path: Path, task: Path = SUITE / "silu", **backend: Any
) -> KernelResult:
    options = {"target": "trn1" if task.is_relative_to(SUITE) else "trn2", **backend}
    neuron = NeuronBackend(host=host, iterations=3, **options)
    return profile_kernel(
        load_task(task), backend=neuron, shapes="small", seeds=(0, 1), workdir=tmp_path
    )


# --- detection -------------------------------------------------------------------------------


def test_detection_reads_the_versions_of_a_legacy_sdk(double_host: NeuronHost) -> None:
    assert double_host.compiler_version == "2.23.6484.0+testdouble"
    assert double_host.sdk_version == "2.28"
    assert double_host.legacy_nki
    assert double_host.nki_version is None
    assert double_host.cores == (0, 1)
    assert double_host.devices == 1
    assert double_host.profiler(LEGACY).endswith("neuron-profile")
    assert double_host.neuron_explorer is None
    assert runnable_dialects(double_host, "trn1") == (LEGACY,)
    assert runnable_dialects(double_host, "trn2") == (LEGACY,)


def test_detection_reads_the_versions_of_a_current_sdk(make_host: HostFactory) -> None:
    host = make_host("2.32")
    assert host.compiler_version == "2.27.5334.0+testdouble"
    assert host.nki_version == "0.6.0+testdouble"
    assert host.sdk_version == "2.32"
    assert host.profiler(CURRENT).endswith("neuron-explorer")
    assert host.profiler(LEGACY).endswith("neuron-explorer")  # the only profiler there
    assert host.nrtpy_python is None
    assert runnable_dialects(host, "trn2") == (CURRENT,)
    assert runnable_dialects(host, "trn3") == (CURRENT,)
    backend = NeuronBackend(host=host, target="trn2")
    assert backend.dialects == frozenset({CURRENT})
    refusal = backend.refusal(LEGACY)
    assert refusal is not None
    assert "nki-legacy" in refusal
    assert "Neuron SDK 2.32" in refusal
    assert "accelopt port" in refusal


def test_sdk_2_29_with_nki_0_3_runs_both_dialects(make_host: HostFactory) -> None:
    host = make_host("2.29")
    assert (host.sdk_version, host.nki_version) == ("2.29", "0.3.0+testdouble")
    assert NeuronBackend(host=host, target="trn2").dialects == frozenset({CURRENT, LEGACY})
    # current NKI runs on trn2 and trn3 only
    assert NeuronBackend(host=host, target="trn1").dialects == frozenset({LEGACY})
    assert host.profiler(LEGACY).endswith("neuron-profile")
    assert host.profiler(CURRENT).endswith("neuron-explorer")


def test_a_current_sdk_on_trn1_runs_nothing_and_says_why(make_host: HostFactory) -> None:
    with pytest.raises(BackendUnavailable) as caught:
        NeuronBackend(host=make_host("2.32"), target="trn1")
    message = caught.value.message
    assert "runs no NKI kernel here" in message
    assert "Neuron SDK 2.32" in message
    assert "trn2 or trn3" in message


@pytest.mark.parametrize(
    ("compiler", "nki", "sdk"),
    [
        ("2.15.128.0", None, (2, 20)),
        ("2.23.6484.0", None, (2, 28)),
        ("2.25.3371.0", None, (2, 30)),
        (None, "0.5.0", (2, 31)),
        ("2.27.5334.0", "0.6.0", (2, 32)),
        ("2.24.5133.0", "0.6.0", (2, 32)),  # a newer nki in an older venv: nki governs
        ("2.28.100.0", "0.7.0", (2, 33)),
        ("0.0.0+testdouble", None, None),
        ("unknown", "unknown", None),
    ],
)
def test_the_sdk_release_is_read_off_its_packages(
    compiler: str | None, nki: str | None, sdk: tuple[int, int] | None
) -> None:
    assert sdk_of(compiler, nki) == sdk


def test_detection_names_everything_missing(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailable) as caught:
        detect_neuron(python_path=[str(tmp_path)], path=str(tmp_path))
    message = caught.value.message
    assert "neuronxcc package does not import" in message
    assert "nki package does not import" in message
    assert "neuron-profile is not on PATH" in message
    assert "neuron-ls is not on PATH" in message
    assert "pip.repos.neuron.amazonaws.com" in message


def test_detection_recognises_the_pypi_placeholders(tmp_path: Path) -> None:
    for package in ("neuronxcc", "nki"):
        placeholder = tmp_path / "site" / package
        placeholder.mkdir(parents=True)
        (placeholder / "__init__.py").write_text("")
    bin_dir = _tools(tmp_path / "bin", FLAVOURS["2.32"][1])
    with pytest.raises(BackendUnavailable) as caught:
        detect_neuron(python_path=[str(tmp_path / "site")], path=f"{bin_dir}:{os.defpath}")
    assert "neuronxcc is the empty PyPI placeholder" in caught.value.message
    assert "nki is the empty PyPI placeholder" in caught.value.message


def test_nrtpy_is_found_beside_the_compiler_or_named(
    make_host: HostFactory, tmp_path: Path
) -> None:
    assert make_host("2.32", nrtpy="same").nrtpy_python == sys.executable
    separate = make_host("2.32", nrtpy="separate").nrtpy_python
    assert separate == str(tmp_path / "nrtpy-env" / "bin" / "python")
    with pytest.raises(BackendUnavailable, match="not an executable file"):
        detect_neuron(
            [str(DOUBLE / "sdk/2.32"), str(DOUBLE / "current")],
            f"{_tools(tmp_path / 'bin', FLAVOURS['2.32'][1])}:{os.defpath}",
            nrtpy_python=str(tmp_path / "missing" / "python"),
        )


@pytest.mark.parametrize(("sdk", "runs"), [("2.28", {"nki-legacy"}), ("2.32", {"nki"})])
def test_the_opened_backend_runs_what_the_sdk_runs_with_the_nrtpy_setting(
    sdk: str, runs: set[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the daemon serves and ports by: the dialects of the SDK found, not the backend's
    list; and ACCELOPT_NRTPY_PYTHON reaches the detection."""
    folders, tools = FLAVOURS[sdk]
    for folder in folders:
        monkeypatch.syspath_prepend(str(DOUBLE / folder))
    monkeypatch.setenv("PATH", f"{_tools(tmp_path / 'bin', tools)}:{os.defpath}")
    nrtpy = _nrtpy_interpreter(tmp_path / "nrtpy-env")
    monkeypatch.setenv("ACCELOPT_NRTPY_PYTHON", str(nrtpy))
    opened = open_for_command(
        "neuron", ["0"], "trn2", None, isolation=Isolation.unsafe("test"), settings=Settings.load()
    )
    assert opened.dialects == runs
    backend = opened.first()
    assert isinstance(backend, NeuronBackend)
    assert backend.host.nrtpy_python == str(nrtpy)
    assert needs_port("nki-legacy", opened.target, opened.dialects) == (runs == {"nki"})


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
    assert "NEURON_LOGICAL_NC_CONFIG" not in environment  # the legacy route is as it was
    assert "OPENAI_API_KEY" not in environment
    assert "ACCELOPT_DB" not in environment
    assert environment["PYTHONPATH"].startswith(str(DOUBLE / "sdk/2.28"))


# --- the legacy route (SDK 2.29 and older) ---------------------------------------------------


def test_a_legacy_profile_is_measured_with_the_estimate_beside_it(
    double_host: NeuronHost, tmp_path: Path
) -> None:
    result = _profile(double_host, tmp_path, core=1)
    assert result.correct, result.message
    assert result.backend == "neuron"
    assert result.latency_kind == "measured", (result.error_kind, result.message)
    stats = result.latency_stats
    assert stats["runs"] == 3
    assert result.latency_ms is not None
    assert stats["min"] <= result.latency_ms <= stats["max"]
    assert stats["attempts"] == 1  # 0.1% jitter is within the 1% tolerance
    counters = result.counters
    assert counters["test_double_visible_core"] == 1
    assert counters["test_double_auto_cast_none"] == 1
    assert "neff_name" not in counters  # strings are not counters
    assert result.bound_by == "vector"  # 0.8 active
    estimate = result.estimate
    assert estimate is not None
    assert estimate["latency_kind"] == "estimated"
    # the double's device time is nkisim's estimate give or take its 0.1% jitter
    assert estimate["ratio_to_measured"] == pytest.approx(1.0, rel=0.01)
    assert result.pct_of_peak is not None
    assert 0 < result.pct_of_peak <= 100
    fingerprint = result.fingerprint
    assert fingerprint["dialect"] == LEGACY
    assert fingerprint["neuron_sdk"] == "2.28"
    assert fingerprint["neuronx_cc"] == "2.23.6484.0+testdouble"
    assert fingerprint["nki"] == "none"
    assert fingerprint["timer"] == "neuron-profile capture"
    assert fingerprint["compile_options"] == "--disable-dge --logical-nc-config=1"
    assert fingerprint["neuron_core"] == "1"
    assert fingerprint["latency_kind"] == "measured"


def test_a_legacy_kernel_takes_the_legacy_route_on_sdk_2_29(
    make_host: HostFactory, tmp_path: Path
) -> None:
    result = _profile(make_host("2.29"), tmp_path, target="trn2")
    assert result.correct, result.message
    assert result.latency_kind == "measured", (result.error_kind, result.message)
    assert result.fingerprint["dialect"] == LEGACY
    assert result.fingerprint["timer"] == "neuron-profile capture"
    assert result.counters["vector_engine_active_time_percent"] == 0.8


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
def test_legacy_failures_are_typed(
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


# --- the current route (SDK 2.29 and later: nki, neuron-explorer, nrtpy) ----------------------


def test_a_current_kernel_is_measured_by_neuron_explorer_captures(
    make_host: HostFactory, tmp_path: Path
) -> None:
    result = _profile(make_host("2.32"), tmp_path, task=SCALE, core=1, estimate=False)
    assert result.correct, result.message
    assert result.dialect == CURRENT
    assert result.latency_kind == "measured", (result.error_kind, result.message)
    stats = result.latency_stats
    assert stats["runs"] == 3
    assert stats["attempts"] == 1
    assert result.latency_ms is not None
    assert stats["min"] <= result.latency_ms <= stats["max"]
    counters = result.counters
    assert counters["total_time"] > 0
    # neuron-explorer's *_percent are in percent: stored as fractions, like every counter
    assert counters["vector_engine_active_time_percent"] == pytest.approx(0.8)
    assert counters["mfu_estimated_percent"] == pytest.approx(0.005)
    assert "profile_schema_version" not in counters
    assert counters["test_double_visible_core"] == 1
    assert counters["test_double_lnc_config"] == 1  # NEURON_LOGICAL_NC_CONFIG=1, as kernel[1]
    assert counters["test_double_inputs_given"] == 1  # the seed's x, by its parameter's name
    assert result.bound_by == "vector"
    assert result.pct_of_peak is not None
    fingerprint = result.fingerprint
    assert fingerprint["dialect"] == CURRENT
    assert fingerprint["neuron_sdk"] == "2.32"
    assert fingerprint["nki"] == "0.6.0+testdouble"
    assert fingerprint["neuronx_cc"] == "2.27.5334.0+testdouble"
    assert fingerprint["timer"] == "neuron-explorer capture"
    assert fingerprint["compile_options"] == CURRENT_COMPILE
    assert fingerprint["target"] == "trn2"


def test_a_current_kernel_is_timed_by_nrtpy_where_it_is_installed(
    make_host: HostFactory, tmp_path: Path
) -> None:
    host = make_host("2.32", nrtpy="separate")
    result = _profile(host, tmp_path, task=SCALE, estimate=False)
    assert result.correct, result.message
    assert result.latency_kind == "measured", (result.error_kind, result.message)
    assert result.fingerprint["timer"] == "nrtpy"
    assert result.latency_stats["runs"] == 3  # nrtpy's benchmark_iter
    assert result.latency_stats["rel_spread"] < 0.01
    assert result.counters["total_time"] * 1e3 == pytest.approx(result.latency_ms, rel=0.01)
    assert result.counters["test_double_inputs_given"] == 1


def test_a_current_kernel_on_sdk_2_29_takes_the_current_route(
    make_host: HostFactory, tmp_path: Path
) -> None:
    result = _profile(make_host("2.29"), tmp_path, task=SCALE, estimate=False)
    assert result.correct, result.message
    assert result.latency_kind == "measured", (result.error_kind, result.message)
    assert result.fingerprint["dialect"] == CURRENT
    assert result.fingerprint["neuron_sdk"] == "2.29"
    assert result.fingerprint["timer"] == "neuron-explorer capture"


@pytest.mark.parametrize(
    "case",
    [
        ("NEURON_DOUBLE_FAIL", "compile", "compile", "compilation failed"),
        ("NEURON_DOUBLE_FAIL", "runtime", "runtime", "NRT_EXEC_OOB"),
        ("NEURON_DOUBLE_FAIL", "wrong", "incorrect", "seed 0"),
        ("NEURON_DOUBLE_PROFILE", "fail", "measurement", "neuron-explorer capture exited"),
    ],
)
def test_current_failures_are_typed(
    make_host: HostFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    case: tuple[str, str, str, str],
) -> None:
    variable, value, kind, needle = case
    monkeypatch.setenv(variable, value)
    result = _profile(make_host("2.32"), tmp_path, task=SCALE, estimate=False)
    assert result.error_kind == kind
    assert needle in result.message
    assert result.latency_ms is None
    assert result.correct == (kind == "measurement")


def test_a_legacy_kernel_on_a_current_sdk_is_refused_naming_dialect_and_sdk(
    make_host: HostFactory, tmp_path: Path
) -> None:
    host = make_host("2.32")
    backend = NeuronBackend(host=host, target="trn2")
    legacy_task = load_task(SUITE / "silu")
    assert legacy_task.dialect == LEGACY
    # asked directly, the backend refuses it before any child starts: a compile error, as
    # the SDK's own would be
    session = SimpleNamespace(task=legacy_task, common={"out_dir": str(tmp_path)})
    with pytest.raises(PhaseFailure) as refused:
        backend.kernel_request(session, True)
    assert refused.value.kind == "compile"
    assert "a nki-legacy kernel" in refused.value.message
    assert "Neuron SDK 2.32" in refused.value.message
    assert "neuronxcc.nki" in refused.value.message
    # the harness refuses the task first, by the dialects the opened backend declares
    with pytest.raises(BackendUnavailable, match="nki-legacy"):
        profile_kernel(legacy_task, backend=backend, shapes="small", workdir=tmp_path)


# --- pure parts ------------------------------------------------------------------------------


def test_summary_json_shapes() -> None:
    keyed = 'INFO: log line\n{"n_1a2b": {"total_time": 0.002, "hfu_estimated_percent": 36.0}}'
    assert parse_summary(keyed) == {"total_time": 0.002, "hfu_estimated_percent": 0.36}
    listed = '{"summary": [{"total_time": 0.5, "name": "x", "flag": true}], "instruction": []}'
    assert parse_summary(listed) == {"total_time": 0.5}
    # neuron-explorer: flat; one percent above 1 means all are percent
    flat = '{"total_time": 0.001, "a_percent": 50.0, "b_percent": 0.5, "hbm_read_bytes": 8}'
    assert parse_summary(flat) == {
        "total_time": 0.001,
        "a_percent": 0.5,
        "b_percent": 0.005,
        "hbm_read_bytes": 8.0,
    }
    assert parse_summary('{"latency": 2.5}') == {"latency": 2.5, "total_time": 0.0025}
    for broken in ("no json here", '{"n_1": {"hbm_read_bytes": 4}}', '{"n_1": {"total_time": 0}}'):
        with pytest.raises(SummaryError):
            parse_summary(broken)


def test_latency_stats() -> None:
    stats = latency_stats([2.0, 1.0, 4.0])
    assert stats["mean"] == pytest.approx(7 / 3)
    assert (stats["min"], stats["max"], stats["p50"], stats["runs"]) == (1.0, 4.0, 2.0, 3.0)
    assert stats["rel_spread"] == 3.0


def test_best_latency_samples_again_while_the_spread_is_wide() -> None:
    samples = {0: [1.0, 2.0], 1: [1.0, 1.5], 2: [1.0, 1.001]}
    best, attempts = best_latency(samples.__getitem__, retries=5, tolerance=0.01)
    assert (attempts, best["max"]) == (3, 1.001)
    best, attempts = best_latency(samples.__getitem__, retries=1, tolerance=0.01)
    assert (attempts, best["max"]) == (2, 1.5)


def test_nrtpy_inputs_match_by_name_then_by_position() -> None:
    given = {"x": "x.npy", "w": "w.npy"}
    assert _matched(["w", "x"], given) == {"w": "w.npy", "x": "x.npy"}
    assert _matched(["input0", "input1"], given) == {"input0": "x.npy", "input1": "w.npy"}
    with pytest.raises(ValueError, match="the NEFF's inputs"):
        _matched(["x"], given)


def test_parameter_names_name_the_neff_inputs() -> None:
    source = (SCALE / "kernel.py").read_text()
    assert parameter_names(source, "kernel") == ["x"]
    assert parameter_names("def f(a, /, b, *, c): pass", "f") == ["a", "b"]
    assert parameter_names("x = 1", "kernel") == []
