"""A daemon without an LLM endpoint still sweeps a task's tunables; a tunable choice that
breaks the kernel is rejected like any failing candidate, and no fixer is asked for."""

from __future__ import annotations

from pathlib import Path

from structlog.testing import capture_logs

from events.catalog import CandidateGenerated, CandidateRejected, ProfileRecorded, SearchFinished
from nkibench.suites import NKI_LEGACY_SUITE
from tests.support.inprocess_daemon import Running, wait_for


def tunable_silu(folder: Path, choices: str) -> None:
    """silu with its tile width as a module-level tunable, COLS."""
    folder.mkdir()
    (folder / "reference.py").write_text((NKI_LEGACY_SUITE / "silu" / "reference.py").read_text())
    kernel = (NKI_LEGACY_SUITE / "silu" / "kernel.py").read_text()
    kernel = kernel.replace("    cols = 1024\n", "    cols = COLS\n")
    kernel = kernel.replace("@nki.jit", "COLS = 1024\n\n\n@nki.jit")
    (folder / "kernel.py").write_text(kernel)
    toml = (NKI_LEGACY_SUITE / "silu" / "task.toml").read_text()
    (folder / "task.toml").write_text(f"{toml}\n[tunables]\nCOLS = {choices}\n")


def test_a_tunable_that_breaks_the_kernel_is_rejected_without_a_fixer(home: Path) -> None:
    with capture_logs() as logs:
        running = Running(home)
        try:
            tunable_silu(running.watch / "silu", "[512, 1024, 100000]")
            finished = wait_for(
                lambda: running.events(SearchFinished, "silu"), 120, "the search to finish"
            )
            tuned = {
                e.candidate_id: e
                for e in running.events(CandidateGenerated, "silu")
                if e.origin == "tunable"
            }
            profiles = {
                p.candidate_id: p
                for p in running.events(ProfileRecorded, "silu")
                if p.candidate_id in tuned
            }
            rejected = {
                r.candidate_id: r
                for r in running.events(CandidateRejected, "silu")
                if r.candidate_id in tuned
            }
            (baseline,) = [
                p for p in running.events(ProfileRecorded, "silu") if p.purpose == "baseline"
            ]
            limits_from = {}
            for candidate, profile in profiles.items():
                job = running.daemon.queue.get(profile.job_id)
                assert job is not None
                limits_from[candidate] = job.payload["baseline_kernel_s"]
        finally:
            code = running.stop()
    assert code == 0
    assert not [e for e in logs if e.get("log_level") in ("error", "critical")]
    assert finished[0].reason == "completed"
    # iteration 1 sweeps 512 and 100000 from 1024; a later one repeats kernels already seen,
    # which are not profiled again
    assert len(tuned) >= 2
    assert sorted(p.correct for p in profiles.values()) == [False, True]
    (broken,) = (c for c, p in profiles.items() if not p.correct)
    assert "COLS = 100000" in running.daemon.store.get_text(tuned[broken].source_blob)
    failed = {c for c, r in rejected.items() if r.duplicate_of is None}
    assert failed == {broken}
    assert rejected[broken].reason != "duplicate"
    assert not [e for e in running.events(CandidateGenerated, "silu") if e.origin == "fixer"]
    # the baseline's run on this host sets its candidates' time limit (the task sets none)
    assert baseline.kernel_seconds is not None
    assert baseline.kernel_seconds > 0
    assert set(limits_from.values()) == {baseline.kernel_seconds}
