"""The kernel's process never judges itself, and the parent never follows what a child made
(issue 23): results that are junk, forgeries by code that got past every Python-level layer,
links to host files and folders, and latencies that are not positive numbers. Every child runs
under bubblewrap, as in the daemon."""

from __future__ import annotations

import math
import os
import shutil
import stat
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from nkibench import harness
from nkibench.backend import Phase, PhaseOwner, Session
from nkibench.backends.nkisim.backend import NkisimBackend
from nkibench.harness import check_kernel, profile_kernel
from nkibench.result import KernelResult
from nkibench.sandbox.process import ChildOutcome, run_child
from nkibench.task.spec import TaskSpec, load_task
from tests.support import REPOSITORY
from tests.support.hostile import HOSTILE, JUNK

SILU = REPOSITORY / "nkibench" / "suites" / "nki" / "silu"
SECRET = "TOP-SECRET-" + "c0ffee" * 4
OWNERS: dict[str, PhaseOwner] = {
    "reference": "task",
    "kernel": "kernel",
    "compare": "task",
    "check": "backend",
}
KIND_OF = {"task": "task", "kernel": "runtime", "backend": "measurement"}
"""Whose failure a phase's junk is: its owner's (nkibench.harness.DEATH_KIND)."""


class HostileBackend(NkisimBackend):
    """nkisim, with every phase able to misbehave (tests/support/hostile.py)."""

    phases = MappingProxyType(
        {
            name: Phase(f"tests.support.hostile:{name}_phase", runs, True)
            for name, runs in OWNERS.items()
        }
    )

    def __init__(self, mode: str) -> None:
        super().__init__()
        self.mode = mode

    def environment(self) -> dict[str, str]:
        return {HOSTILE: self.mode}


class LyingMeasure(NkisimBackend):
    """A backend whose latency is not a positive number (a broken profiler, a forged file)."""

    def __init__(self, latency: float) -> None:
        super().__init__()
        self.latency = latency

    def measure(self, session: Session, kernel: dict[str, Any]) -> None:
        super().measure(session, kernel)
        session.result.latency_ms = self.latency


@pytest.fixture(scope="module")
def silu() -> TaskSpec:
    return load_task(SILU)


@pytest.fixture(scope="module")
def transformed(tmp_path_factory: pytest.TempPathFactory) -> TaskSpec:
    """silu with AccelOpt's output hook: its comparison runs task code, so the trace is checked
    in a child of its own."""
    folder = tmp_path_factory.mktemp("transformed") / "silu"
    shutil.copytree(SILU, folder)
    with (folder / "reference.py").open("a") as reference:
        reference.write("\n\ndef transform_nki_outputs(kernel_result, reference_result):\n")
        reference.write("    return kernel_result\n")
    return load_task(folder)


@pytest.fixture(scope="module")
def honest(silu: TaskSpec) -> KernelResult:
    result = profile_kernel(silu, backend=NkisimBackend(), seeds=(0, 1))
    assert result.correct, result.message
    return result


def _one_line(result: KernelResult) -> str:
    message = result.message or ""
    assert message
    assert "\n" not in message
    assert "Traceback" not in message
    return message


JUNK_CASES = [
    pytest.param(phase, form, marks=() if (i + j) % 4 == 0 else pytest.mark.slow)
    for i, phase in enumerate(OWNERS)
    for j, form in enumerate(JUNK)
]


@pytest.mark.parametrize(("phase", "form"), JUNK_CASES)
def test_a_junk_result_is_a_typed_failure_of_the_phase_that_wrote_it(
    transformed: TaskSpec, phase: str, form: str
) -> None:
    backend = HostileBackend(f"junk:{phase}:{form}")
    result = check_kernel(transformed, backend=backend, seeds=(0,))
    assert not result.correct
    assert result.error_kind == KIND_OF[OWNERS[phase]]
    message = _one_line(result)
    said = {
        "empty": "an empty result",
        "truncated": "not JSON",
        "huge": "larger than",
        "not_json": "not JSON",
    }[form]
    assert said in message, message


def _phases_run(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The phases of the children started from now on, in order."""
    started: list[str] = []
    original = run_child  # the harness's own, imported from nkibench.sandbox.process

    def counted(module: str, request: dict[str, Any], **options: Any) -> ChildOutcome:
        started.append(request["entry"].rpartition(":")[2])
        return original(module, request, **options)

    monkeypatch.setattr(harness, "run_child", counted)
    return started


def test_the_trace_is_checked_in_the_comparisons_child_unless_that_runs_task_code(
    silu: TaskSpec, transformed: TaskSpec, honest: KernelResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child fewer per evaluation where the comparison runs only our code; where it runs
    the task's output hook, the estimate has a child of its own. The same numbers either way."""
    started = _phases_run(monkeypatch)
    plain = profile_kernel(silu, backend=NkisimBackend(), seeds=(0, 1))
    assert started == ["reference_phase", "kernel_phase", "compare_phase"]
    started.clear()
    hooked = profile_kernel(transformed, backend=NkisimBackend(), seeds=(0, 1))
    assert started == ["reference_phase", "kernel_phase", "compare_phase", "estimate_phase"]
    for result in (plain, hooked):
        assert result.correct, result.message
        assert result.latency_ms == honest.latency_ms
        assert result.instructions == honest.instructions


def test_what_a_kernel_claims_about_itself_changes_nothing(
    silu: TaskSpec, honest: KernelResult
) -> None:
    """Its own result says 1e-9 ms, one instruction, nothing unwritten: the recorded profile
    is the honest one, from the trace, estimated in a child that never ran the kernel."""
    forged = profile_kernel(silu, backend=HostileBackend("forge:claims"), seeds=(0, 1))
    assert forged.correct, forged.message
    assert forged.latency_ms == honest.latency_ms
    assert forged.latency_kind == "estimated"
    assert forged.instructions == honest.instructions
    assert forged.instructions is not None
    assert forged.instructions > 1
    assert forged.capacity == honest.capacity


@pytest.mark.parametrize(
    ("task", "mode", "kind", "said"),
    [
        ("silu", "forge:link_seed_folders", "incorrect", "not a folder"),
        ("silu", "forge:link_output_files", "incorrect", "cannot be opened"),
        ("silu", "forge:storage_without_instructions", "cheat", "written by no instruction"),
        ("silu", "forge:unwritten", "incorrect", "never written"),
        # a trace the cost model cannot read is the kernel's failure, not the backend's
        ("matmul", "forge:no_attributes", "cheat", "cannot be estimated"),
    ],
)
def test_a_forged_output_is_refused(task: str, mode: str, kind: str, said: str) -> None:
    spec = load_task(SILU.parent / task)
    result = profile_kernel(spec, backend=HostileBackend(mode), seeds=(0, 1))
    assert not result.correct
    assert result.latency_ms is None
    assert result.error_kind == kind, result.message
    assert said in _one_line(result)


@pytest.mark.parametrize("latency", [0.0, -1.0, math.nan, math.inf])
def test_a_latency_that_is_not_a_positive_finite_number_is_refused(
    silu: TaskSpec, latency: float
) -> None:
    result = profile_kernel(silu, backend=LyingMeasure(latency), seeds=(0,))
    assert result.error_kind == "measurement"
    assert result.latency_ms is None
    assert "not a positive, finite number" in _one_line(result)


# --- links: a reference (unrestricted task code) and a kernel that got past the Python layers


def _hostile_reference(folder: Path, secret: Path, host_dir: Path, *, die: bool) -> TaskSpec:
    """silu, with a reference that links everything it can think of to host paths first."""
    shutil.copytree(SILU, folder)
    attack = f"""
import os as _os, sys as _sys
for _name in ("stderr.txt", "stdout.txt", "result.json", "output_0.npy"):
    _os.symlink({str(secret)!r}, _name)
for _sibling in ("kernel", "compare", "estimate", "outputs", "inputs", "expected", "task",
                 "kernel.2", "outputs.2", "reference.2"):
    try:
        _os.symlink({str(host_dir)!r}, "../" + _sibling)
    except OSError:
        pass
_sys.stderr.write("the reference was here\\n")
"""
    if die:
        attack += "_sys.stderr.flush()\n_os._exit(1)\n"
    reference = folder / "reference.py"
    reference.write_text(reference.read_text() + attack)
    return load_task(folder)


def _state(folder: Path) -> tuple[int, int, int, list[str]]:
    status = folder.stat()
    return status.st_uid, status.st_gid, stat.S_IMODE(status.st_mode), sorted(os.listdir(folder))


@pytest.fixture
def host(tmp_path: Path) -> tuple[Path, Path]:
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET + "\n")
    secret.chmod(0o600)
    host_dir = tmp_path / "host_dir"
    host_dir.mkdir(mode=0o700)
    (host_dir / "keep.txt").write_text("mine")
    return secret, host_dir


@pytest.mark.parametrize("die", [True, False])
def test_a_reference_that_links_its_files_and_siblings_to_the_host_reaches_nothing(
    tmp_path: Path, host: tuple[Path, Path], die: bool
) -> None:
    secret, host_dir = host
    before = _state(host_dir)
    task = _hostile_reference(tmp_path / "task", secret, host_dir, die=die)
    work = tmp_path / "work"
    work.mkdir()
    result = profile_kernel(task, backend=NkisimBackend(), seeds=(0, 1), workdir=work)
    assert SECRET not in (result.message or "")
    assert SECRET not in str(result.to_json())
    assert _state(host_dir) == before
    assert (host_dir / "keep.txt").read_text() == "mine"
    if die:
        assert result.error_kind == "task"
        assert "the reference was here" in _one_line(result)  # its stderr, from our descriptor
    else:
        assert result.correct, result.message  # the links changed nothing the phases use
        assert result.latency_ms is not None
    assert os.listdir(work) == []  # the session's tree is gone, links and all


def test_a_kernel_that_links_its_streams_and_result_to_a_host_file_reads_nothing(
    silu: TaskSpec, host: tuple[Path, Path]
) -> None:
    secret, _ = host
    backend = HostileBackend(f"links:{secret}")
    result = check_kernel(silu, backend=backend, seeds=(0,))
    assert result.error_kind == "runtime"
    message = _one_line(result)
    assert "the kernel was here" in message
    assert SECRET not in message
