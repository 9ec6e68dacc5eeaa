"""A child whose phase module says so (SKIP_TEARDOWN: the triton backend's, whose torch and
CUDA teardown takes a second of a cold child) ends without the interpreter's teardown, once
its result is written: the result and its buffered output still come back whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nkibench.harness import CHILD
from nkibench.sandbox.folders import SessionFolders
from nkibench.sandbox.isolation import Isolation
from nkibench.sandbox.process import Limits, run_child
from tests.support.teardown_probe import TEARDOWN_MARKS


@pytest.mark.parametrize("skip", [True, False])
def test_a_child_skips_the_teardown_only_where_its_phase_module_says_so(
    tmp_path: Path, skip: bool
) -> None:
    isolation = Isolation.detect()
    with SessionFolders(tmp_path, isolation.child_uid) as folders:
        marks = folders.fresh("marks")
        outcome = run_child(
            CHILD,
            {"entry": "tests.support.teardown_probe:phase", "skip": skip},
            workdir=folders.fresh("work"),
            limits=Limits(timeout_s=60),
            isolation=isolation,
            writable=[marks],
            environment={TEARDOWN_MARKS: str(marks)},
        )
        torn_down = (marks / "torn_down").exists()
    assert outcome.result, outcome.stderr_tail
    assert json.loads(outcome.result) == {"ok": True, "skip": skip}
    assert outcome.returncode == 0
    assert "written before the end" in outcome.stdout_tail
    assert torn_down is not skip
