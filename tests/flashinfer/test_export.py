"""`accelopt export --format flashinfer`: a task's kernel as a FlashInfer-Bench Solution with a
Trace per measured workload, in a folder flashinfer_bench's own loader accepts."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flashinfer_bench.data import Definition, TraceSet

from daemon.flashinfer.export import Measurement, adapted_source, export_flashinfer
from daemon.flashinfer.logged import per_workload
from events.catalog import WorkloadProfile
from events.codec import encode
from nkibench.task.spec import load_task
from store.sql import SqlEventStore
from tests.flashinfer.dataset import (
    RMSNORM,
    RMSNORM_RETURNING,
    scale_add_definition,
    write_dataset,
)
from tests.support import factories
from tests.support.cli import run_cli

GPU = "NVIDIA H100 80GB HBM3"


def _imported(tmp_path: Path) -> Path:
    root = write_dataset(tmp_path / "ds")
    run = run_cli("import-flashinfer", str(root), str(tmp_path / "tasks"))
    assert run.code == 0, run.err
    return tmp_path / "tasks" / RMSNORM


def _record_profile(url: str, folder: Path, latency_ms: float, **extra: Any) -> None:
    """A correct GPU timing of the folder's own kernel (or of `kernel_hash`), as the triton
    backend records one."""
    task = load_task(folder)
    kernel_hash = extra.pop("kernel_hash", hashlib.sha256(task.kernel_source.encode()).hexdigest())
    store = SqlEventStore.open(url)
    try:
        event = factories.profile(
            task.name,
            task.content_hash,
            latency_ms=latency_ms,
            backend="triton",
            target="h100",
            kernel_hash=kernel_hash,
            dialect="triton",
            fingerprint={"gpu": GPU, "torch": "2.13.0", "triton": "3.4.0"},
            **extra,
        )
        store.append(f"task:{task.name}", [encode(event)])
    finally:
        store.close()


def test_a_measured_kernel_leaves_as_a_solution_with_its_trace(
    tmp_path: Path, fresh_sqlite_url: Callable[[], str]
) -> None:
    folder = _imported(tmp_path)
    url = fresh_sqlite_url()
    _record_profile(url, folder, 0.004, latency_stats={"eager_p50": 0.012})
    out = tmp_path / "apply"
    run = run_cli("export", str(folder), "--format", "flashinfer", "--out", str(out), "--db", url)
    assert run.code == 0, run.err
    summary = run.json()
    assert summary["traces"] == ["w1"]  # accelopt timed the first workload's shapes
    assert summary["not_measured"] == ["w2"]
    loaded = TraceSet.from_path(str(out))  # flashinfer_bench's own loader
    solution = loaded.get_solution(summary["solution"])
    assert solution is not None
    assert solution.author == "accelopt"
    assert solution.spec.language.value == "triton"
    assert solution.spec.target_hardware == [GPU]
    assert solution.spec.entry_point == "kernel.py::flashinfer_run"
    assert loaded.definitions[RMSNORM] == Definition.model_validate_json(
        (folder / "definition.json").read_text()
    )
    (trace,) = loaded.traces[RMSNORM]
    evaluation = trace.evaluation
    assert trace.solution == solution.name
    assert evaluation.status.value == "PASSED"
    assert evaluation.performance.latency_ms == 0.004
    assert evaluation.performance.speedup_factor == pytest.approx(3.0)
    assert evaluation.environment.hardware == GPU
    assert evaluation.correctness.extra["accelopt"]["latency_kind"] == "measured"
    assert "(measured)" in evaluation.log
    assert {w.workload.uuid for w in loaded.workloads[RMSNORM]} == {"w1", "w2"}
    blob = loaded.workloads[RMSNORM][1].workload.inputs["weight"]
    assert (out / blob.path).read_bytes() == (folder / "blobs" / Path(blob.path).name).read_bytes()
    again = run_cli("export", str(folder), "--format", "flashinfer", "--out", str(out), "--db", url)
    assert again.code == 2
    assert "exported there already" in again.err


def test_a_profile_of_another_kernel_is_no_trace_of_this_one(
    tmp_path: Path, fresh_sqlite_url: Callable[[], str]
) -> None:
    folder = _imported(tmp_path)
    url = fresh_sqlite_url()
    _record_profile(url, folder, 0.004)
    other = tmp_path / "other.py"
    other.write_text((folder / "kernel.py").read_text() + "\n# another kernel\n")
    out = tmp_path / "apply"
    run = run_cli(
        "export", str(folder), "--format", "flashinfer", "--out", str(out), "--db", url,
        "--kernel", str(other),
    )  # fmt: skip
    assert run.code == 0, run.err
    assert run.json()["traces"] == []
    loaded = TraceSet.from_path(str(out))
    assert loaded.traces.get(RMSNORM, []) == []
    (solution,) = loaded.solutions[RMSNORM]
    assert solution.sources[0].content.startswith(other.read_text().rstrip())


def test_a_task_without_its_definition_says_what_export_needs(tmp_path: Path) -> None:
    folder = _imported(tmp_path)
    (folder / "definition.json").unlink()
    run = run_cli("export", str(folder), "--format", "flashinfer", "--out", str(tmp_path / "o"))
    assert run.code == 2
    assert f"{folder / 'definition.json'}: missing" in run.err


@pytest.mark.parametrize(
    "kernel",
    [
        "def run(y, alpha, x):\n    return {'z': x * alpha + y}\n",  # by name, in its own order
        "def run(*inputs):\n    x, y, alpha = inputs\n    return x * alpha + y\n",  # by position
    ],
)
def test_flashinfer_bench_calls_the_kernel_as_accelopt_does(kernel: str) -> None:
    """FlashInfer-Bench passes the inputs in the definition's order (x, y, alpha) and takes the
    one output as a value: the entry added to the kernel bridges both conventions."""
    definition = Definition.model_validate(scale_add_definition())
    source, entry = adapted_source(kernel, "run", definition)
    namespace: dict[str, Any] = {}
    exec(source, namespace)  # the test's own source
    assert namespace[entry](1.0, 2.0, 3.0) == 1.0 * 3.0 + 2.0


def test_a_task_named_in_the_log_exports_its_promoted_kernel(
    tmp_path: Path, fresh_sqlite_url: Callable[[], str]
) -> None:
    folder = _imported(tmp_path)
    task = load_task(folder)
    faster = task.kernel_source + "\n# the search's faster kernel\n"
    url = fresh_sqlite_url()
    store = SqlEventStore.open(url)
    try:
        kernel_hash = store.put_blob(faster)
        changed = factories.source_changed(task.name, task.content_hash)
        changed = changed.model_copy(update={"task_dir": str(folder), "dialect": "triton"})
        promoted = factories.promoted(task.name, task.content_hash, "c1", 0.003, 0.004)
        promoted = promoted.model_copy(
            update={"kernel_hash": kernel_hash, "backend": "triton", "latency_kind": "measured"}
        )
        store.append(f"task:{task.name}", [encode(changed), encode(promoted)])
    finally:
        store.close()
    _record_profile(url, folder, 0.003, kernel_hash=kernel_hash, candidate_id="c1")
    _record_profile(url, folder, 0.004)  # the baseline's, later: not the exported kernel's
    out = tmp_path / "apply"
    run = run_cli("export", task.name, "--format", "flashinfer", "--out", str(out), "--db", url)
    assert run.code == 0, run.err
    summary = run.json()
    assert summary["kernel"] == "promoted candidate c1"
    assert summary["traces"] == ["w1"]
    loaded = TraceSet.from_path(str(out))
    (solution,) = loaded.solutions[RMSNORM]
    assert solution.sources[0].content.startswith(faster.rstrip())
    (trace,) = loaded.traces[RMSNORM]
    assert trace.evaluation.performance.latency_ms == 0.003


def test_a_task_without_workloads_is_traced_at_its_full_shapes(
    tmp_path: Path, fresh_sqlite_url: Callable[[], str]
) -> None:
    folder = _imported(tmp_path)
    (folder / "workloads.jsonl").unlink()
    url = fresh_sqlite_url()
    _record_profile(url, folder, 0.004)
    out = tmp_path / "apply"
    run = run_cli("export", str(folder), "--format", "flashinfer", "--out", str(out), "--db", url)
    assert run.code == 0, run.err
    (trace,) = TraceSet.from_path(str(out)).traces[RMSNORM]
    assert trace.workload.axes == {"batch_size": 4}
    assert {i.type for i in trace.workload.inputs.values()} == {"random"}


def test_a_profile_of_every_workload_gives_each_its_own_trace(tmp_path: Path) -> None:
    """A task with workloads profiled on all of them (ProfileRecorded.workloads): each correct
    workload's Trace carries its own latency, not the profile's geometric mean."""
    folder = _imported(tmp_path)
    task = load_task(folder)
    measured = Measurement(
        latency_ms=(0.002 * 0.008) ** 0.5,
        latency_kind="measured",
        hardware=GPU,
        backend="triton",
        target="h100",
        recorded_at="2026-11-27T00:00:00",
        job_id="j1",
        reference_ms=0.01,
        per_workload={"w1": (0.002, "measured"), "w2": (0.008, "measured")},
    )
    summary = export_flashinfer(
        task_dir=folder,
        constants=task.constants,
        rule="test",
        kernel=task.kernel_source,
        function=task.kernel_function,
        measured=measured,
        solution_name="accelopt_test",
        description="test",
        out=tmp_path / "apply",
    )
    assert summary["traces"] == ["w1", "w2"]
    assert summary["not_measured"] == []
    traces = TraceSet.from_path(str(tmp_path / "apply")).traces[RMSNORM]
    latency = {t.workload.uuid: t.evaluation.performance for t in traces}
    assert latency["w1"].latency_ms == 0.002
    assert latency["w2"].latency_ms == 0.008
    assert latency["w1"].speedup_factor == 0.0  # the reference was timed on no one workload


def test_each_correct_workload_of_a_profile_is_read() -> None:
    def outcome(uuid: str, latency_ms: float | None) -> WorkloadProfile:
        return WorkloadProfile(
            name=uuid,
            uuid=uuid,
            correct=latency_ms is not None,
            latency_ms=latency_ms,
            latency_kind="measured" if latency_ms is not None else None,
            error_kind=None if latency_ms is not None else "incorrect",
            max_rel_l2=None,
            pct_of_peak=None,
        )

    profile = factories.profile("t", "h", workloads=[outcome("w1", 0.5), outcome("w2", None)])
    assert per_workload(profile) == {"w1": (0.5, "measured")}
    assert per_workload(factories.profile("t", "h")) == {}  # a profile without workloads


def test_a_kernel_that_names_its_entry_run_is_called_so(tmp_path: Path) -> None:
    """The task's kernel_function is the import's bridge; a candidate written as Triton tasks
    are (`def run`) is called by that name."""
    folder = _imported(tmp_path)
    assert load_task(folder).kernel_function == "run_returning_outputs"
    candidate = tmp_path / "candidate.py"
    candidate.write_text(RMSNORM_RETURNING.replace("def rmsnorm(", "def run("))
    out = tmp_path / "apply"
    run = run_cli(
        "export", str(folder), "--format", "flashinfer", "--out", str(out),
        "--kernel", str(candidate),
    )  # fmt: skip
    assert run.code == 0, run.err
    (solution,) = TraceSet.from_path(str(out)).solutions[RMSNORM]
    assert "result = run(hidden_states=hidden_states, weight=weight)" in solution.sources[0].content
