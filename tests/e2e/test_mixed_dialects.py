"""A watched directory that mixes legacy NKI and current NKI: the real daemon serves each task
in its own dialect on trn2 (where both run); on trn3, where only current NKI runs, it ports
the legacy task first (the scripted executor answers with our current-NKI kernel), says so in
its log, and searches the port."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from events.catalog import KernelSourceChanged, PortFinished, PortStarted, ProfileRecorded
from nkibench.suites import NKI_LEGACY_SUITE, NKI_SUITE
from tests.e2e.test_agents_resilience import environment
from tests.support import agent_script
from tests.support.cli import ONE_STEP
from tests.support.daemon_process import DaemonProcess, wait_until
from tests.support.llm_server import Reply, Request, running_llm

LEGACY, CURRENT = "rmsnorm_matmul", "transpose_matmul"
SEARCH = [arg for arg in ONE_STEP if arg != "--json"]


def script(request: Request) -> Reply:
    """A port call gets our current-NKI kernel of its task; the rest, agent_script's."""
    port = re.match(r"([\w.-]+)@[0-9a-f]+->nki@", request.call_id)
    if port is not None:
        kernel = (NKI_SUITE / port.group(1) / "kernel.py").read_text()
        return Reply(f"```python\n{kernel}```\n")
    return agent_script.answer(request)


def baseline(daemon: DaemonProcess, task: str) -> ProfileRecorded | None:
    found = daemon.events(ProfileRecorded, task=task, purpose="baseline")
    return found[0] if found else None


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_a_mixed_directory_serves_each_task_in_its_dialect(tmp_path: Path, target: str) -> None:
    with running_llm(script) as llm:
        env = environment(llm, f"sqlite:///{tmp_path / 'state' / 'accelopt.db'}")
        daemon = DaemonProcess(tmp_path, "--shapes", "small", "--target", target, *SEARCH, env=env)
        daemon.drop(NKI_LEGACY_SUITE / LEGACY, LEGACY)
        daemon.drop(NKI_SUITE / CURRENT, CURRENT)
        daemon.start()
        try:
            legacy = wait_until(lambda: baseline(daemon, LEGACY), 240, "the legacy baseline")
            current = wait_until(lambda: baseline(daemon, CURRENT), 240, "the current baseline")
        finally:
            assert daemon.stop() == 0
    revisions = {e.task: e.dialect for e in daemon.events(KernelSourceChanged)}
    assert revisions == {LEGACY: "nki-legacy", CURRENT: "nki"}
    assert (current.correct, current.dialect, current.target) == (True, "nki", target)
    assert (legacy.correct, legacy.target) == (True, target)
    ports = daemon.events(PortStarted)
    if target == "trn2":  # both dialects run here: nothing is ported
        assert legacy.dialect == "nki-legacy"
        assert not ports
        return
    assert legacy.dialect == "nki"  # the port was searched, not the legacy kernel
    assert [p.task for p in ports] == [LEGACY]
    assert "runs only current NKI" in ports[0].reason
    finished = daemon.events(PortFinished)
    assert [(f.task, f.outcome, f.target) for f in finished] == [(LEGACY, "ported", "trn3")]
    assert "porting a legacy NKI task before optimizing it" in daemon.log_text()
