"""`accelopt port` end to end: every legacy suite task ported to current NKI by the executor
of a real OpenAI-compatible HTTP server on loopback, whose answers are our current-NKI suite
kernels; verified by nkisim on every seed, recorded step by step, written beside the user's
folder without touching it. A wrong port (silu's first answer) is rejected and the fixer is
called with its error."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from events.catalog import LLMCallCompleted, PortAttempted, PortFinished, PortStarted
from nkibench.suites import NKI_LEGACY_SUITE, NKI_SUITE
from nkibench.task.files import folder_hash, read_task_files
from nkibench.task.spec import load_task
from tests.e2e.test_agents import llm_environment
from tests.support.cli import events_of, run_cli
from tests.support.llm_server import Reply, Request, running_llm

TASKS = sorted(p.name for p in NKI_LEGACY_SUITE.iterdir() if (p / "kernel.py").is_file())
WRONG_SILU = (NKI_SUITE / "silu" / "kernel.py").read_text()
# the same port with exp(-x) not negated: silu(x) computed as x / (1 + exp(x))
WRONG_SILU = WRONG_SILU.replace("scale=-1.0", "scale=1.0")


def fenced(code: str) -> str:
    return f"The kernel in current NKI:\n\n```python\n{code}```\n"


def port_answer(request: Request) -> Reply:
    """The executor ports each task to our current-NKI suite kernel (silu wrongly at first);
    the fixer answers with the right one."""
    task = re.match(r"([\w.-]+)@", request.call_id)
    assert task is not None, request.call_id
    current = (NKI_SUITE / task.group(1) / "kernel.py").read_text()
    if "/executor/" in request.call_id and task.group(1) == "silu":
        return Reply(fenced(WRONG_SILU))
    return Reply(fenced(current))


def test_every_legacy_suite_task_is_ported_verified_and_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "scale=-1.0" in (NKI_SUITE / "silu" / "kernel.py").read_text()
    db = f"sqlite:///{tmp_path / 'accelopt.db'}"
    with running_llm(port_answer) as llm:
        llm_environment(monkeypatch, llm, db)
        assert run_cli("db", "upgrade").code == 0
        for name in TASKS:
            folder = tmp_path / "legacy" / name
            shutil.copytree(NKI_LEGACY_SUITE / name, folder)
            before = folder_hash(read_task_files(folder))
            ported = run_cli("port", str(folder), "--to", "nki", "--json")
            assert ported.code == 0, (name, ported.err, ported.out)
            answer = json.loads(ported.out)
            assert answer["ported"]
            assert answer["out_dir"] == str(folder.with_name(f"{name}_nki"))
            assert answer["attempts"] == (2 if name == "silu" else 1), name
            assert answer["result"]["latency_kind"] == "estimated"
            assert answer["result"]["dialect"] == "nki"
            assert folder_hash(read_task_files(folder)) == before  # the user's files untouched
            task = load_task(answer["out_dir"])
            assert task.dialect == "nki"
            expected = (NKI_SUITE / name / "kernel.py").read_text()
            assert task.kernel_source.endswith(expected)
            # a second port into the same place is refused: nothing is overwritten
            again = run_cli("port", str(folder), "--to", "nki")
            assert again.code == 2
            assert "already exists" in again.err
        served = [(r.call_id, reply.text) for r, reply in llm.served]
    fixer_calls = [call for call, _ in served if "/fixer/" in call]
    assert fixer_calls
    assert all(call.startswith("silu@") for call in fixer_calls)
    fixer_prompt = next(r for r, _ in llm.served if "/fixer/" in r.call_id).user
    assert "incorrect" in fixer_prompt
    assert "scale=1.0" in fixer_prompt
    started = events_of(db, PortStarted)
    finished = events_of(db, PortFinished)
    attempts = events_of(db, PortAttempted)
    assert sorted(e.task for e in started) == TASKS
    assert all(e.outcome == "ported" and e.latency_kind == "estimated" for e in finished)
    assert sorted(e.task for e in finished) == TASKS
    silu = [a for a in attempts if a.port_id.startswith("silu@")]
    assert [(a.role, a.correct, a.error_kind) for a in silu] == [
        ("executor", False, "incorrect"),
        ("fixer", True, None),
    ]
    assert all(a.seeds == [0, 21, 42, 63, 84] for a in attempts)
    assert len(events_of(db, LLMCallCompleted)) == len(TASKS) + 1


def test_a_port_that_never_verifies_is_not_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every answer wrong (one without code among them): the executor, then three fixer
    repairs, each rejected and recorded; nothing is written; exit 1. A current-NKI task is
    not ported at all (exit 2)."""

    def always_wrong(request: Request) -> Reply:
        if "/fixer/3" in request.call_id:
            return Reply("I cannot port this kernel.")
        return Reply(fenced(WRONG_SILU))

    db = f"sqlite:///{tmp_path / 'accelopt.db'}"
    folder = tmp_path / "silu"
    shutil.copytree(NKI_LEGACY_SUITE / "silu", folder)
    with running_llm(always_wrong) as llm:
        llm_environment(monkeypatch, llm, db)
        assert run_cli("db", "upgrade").code == 0
        failed = run_cli("port", str(folder), "--to", "nki", "--target", "trn3", "--json")
        current = run_cli(
            "port", str(NKI_SUITE / "silu"), "--to", "nki", "--out", str(tmp_path / "x")
        )
    assert failed.code == 1, failed.err
    answer = json.loads(failed.out)
    assert (answer["ported"], answer["attempts"], answer["out_dir"]) == (False, 4, None)
    assert not folder.with_name("silu_nki").exists()
    attempts = events_of(db, PortAttempted)
    assert [(a.role, a.error_kind) for a in attempts] == [
        ("executor", "incorrect"),
        ("fixer", "incorrect"),
        ("fixer", "no_code"),  # the repair of the same failing port is asked for again
        ("fixer", "incorrect"),
    ]
    [finished] = events_of(db, PortFinished)
    assert (finished.outcome, finished.source_blob, finished.out_dir) == ("failed", None, None)
    assert current.code == 2
    assert "only legacy NKI (nki-legacy) kernels are ported" in current.err
    assert not (tmp_path / "x").exists()
