"""A candidate's source is held to kernel.py's size limit and parsed only in the parse child
(nkibench.sandbox.parse_child), whose answer the parent reads as data."""

from __future__ import annotations

import ast
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from nkibench.backends.nkisim.backend import NkisimBackend
from nkibench.errors import PhaseFailure
from nkibench.harness import check_kernel
from nkibench.sandbox import parse_child
from nkibench.sandbox.parse_child import (
    ANSWER_LIMIT,
    SOURCE_LIMIT,
    assigned_constants,
    size_refusal,
    static_violations,
    written_dialect,
)
from nkibench.sandbox.process import ChildOutcome, Limits
from nkibench.sandbox.static_check import check_source
from nkibench.task.files import KERNEL_FILE
from nkibench.task.spec import TaskSpec, load_task
from tests.support import PARSE_ISOLATION, REPOSITORY

SILU = REPOSITORY / "nkibench" / "suites" / "nki" / "silu"
DEEP_SUM = "x = " + "+".join(["1"] * 100_000) + "\n"
"""200 KB, within the limit: the parser builds about 40 MB of tree, then gives up
(RecursionError)."""


@pytest.fixture(scope="module")
def silu() -> TaskSpec:
    return load_task(SILU)


def test_a_candidate_over_the_size_limit_is_rejected_without_being_parsed(
    silu: TaskSpec, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    huge = "x = [" + "1," * 6_000_000 + "]\n"  # 12 MB: gigabytes and many seconds to parse
    calls: list[str] = []
    monkeypatch.setattr(ast, "parse", lambda *args, **kwargs: calls.append("ast.parse"))
    monkeypatch.setattr(parse_child, "run_child", lambda *a, **k: calls.append("run_child"))
    started = time.monotonic()
    result = check_kernel(silu, backend=NkisimBackend(), kernel_source=huge, workdir=tmp_path)
    elapsed = time.monotonic() - started
    monkeypatch.undo()
    assert calls == []
    assert elapsed < 5.0  # a length test, where parsing 12 MB takes many seconds
    assert result.error_kind == "rejected"
    assert result.message == (
        "kernel.py: 11.4 MiB (12000007 bytes), over the 256 KiB limit of kernel.py: "
        "refused without being parsed"
    )
    assert not result.compiled


def test_the_limit_counts_bytes_not_characters() -> None:
    assert size_refusal("a" * SOURCE_LIMIT) is None
    refused = size_refusal("é" * (SOURCE_LIMIT // 2 + 1))  # two bytes each in UTF-8
    assert refused is not None
    assert refused.kind == "rejected"
    assert f"({SOURCE_LIMIT + 2} bytes)" in refused.message


def test_the_childs_violations_are_the_static_checks_own(silu: TaskSpec, tmp_path: Path) -> None:
    source = silu.kernel_source.replace("\n", "\nimport os\nx = y.__class__\n", 1)
    expected = check_source(source, KERNEL_FILE, silu.dialect)
    assert len(expected) == 2
    result = check_kernel(silu, backend=NkisimBackend(), kernel_source=source, workdir=tmp_path)
    assert result.error_kind == "rejected"
    assert result.message == "; ".join(v.render(KERNEL_FILE) for v in expected)
    assert result.line == expected[0].line


def _peak_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # Linux: VmHWM starts again from VmRSS


@pytest.mark.parametrize(
    ("source", "error"),
    [(DEEP_SUM, "RecursionError"), ("x = " + "-" * 200_000 + "1\n", "MemoryError")],
)
def test_a_source_that_blows_up_the_parser_is_a_typed_failure(source: str, error: str) -> None:
    with pytest.raises(PhaseFailure) as failure:
        static_violations(source, "nki", torch_compute=False, isolation=PARSE_ISOLATION)
    assert failure.value.kind == "rejected"
    assert failure.value.message == f"the source nests too deeply for Python's parser ({error})"


YARDSTICK = """
import ast
from pathlib import Path

def peak():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])

source = Path({path!r}).read_text()
Path("/proc/self/clear_refs").write_text("5")
before = peak()
try:
    ast.parse(source)
except RecursionError:
    print(peak() - before)
"""


def test_the_parents_memory_stays_flat_while_the_child_parses(tmp_path: Path) -> None:
    # The yardstick: the same parse in a fresh interpreter raises its peak by tens of MB. A fresh
    # one, because in this worker the heap freed by earlier tests absorbs part of the tree
    # without raising the peak (CI saw 12 MB there, 44 MB in a fresh process).
    source = tmp_path / "deep_sum.py"
    source.write_text(DEEP_SUM)
    yardstick = subprocess.run(
        [sys.executable, "-c", YARDSTICK.format(path=str(source))],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    in_fresh_parser = int(yardstick.stdout)
    assert in_fresh_parser > 20_000, in_fresh_parser
    _reset_peak()
    before = _peak_kib()
    with pytest.raises(PhaseFailure):
        static_violations(DEEP_SUM, "nki", torch_compute=False, isolation=PARSE_ISOLATION)
    in_parent = _peak_kib() - before
    assert in_parent < 5_000, in_parent


def _answer(monkeypatch: pytest.MonkeyPatch, result: bytes | None, returncode: int = 0) -> None:
    def fake(*args: Any, **kwargs: Any) -> ChildOutcome:
        return ChildOutcome(returncode, False, 0.01, "", "", result=result)

    monkeypatch.setattr(parse_child, "run_child", fake)


@pytest.mark.parametrize(
    ("raw", "returncode", "problem"),
    [
        (b"", 0, "an empty result"),
        (b"<html>", 0, "not JSON"),
        (None, 0, "larger than"),
        (b'{"ok": true, "violations": [' + b"[1, " * ANSWER_LIMIT, 0, "larger than"),
        (b'{"ok": true}', 0, "no list of violations"),
        (b'{"ok": true, "violations": [[1, 2]]}', 0, "not [line, problem]"),
        (b'{"ok": true, "violations": [[-1, "x"]]}', 0, "not [line, problem]"),
        (b'{"ok": true, "violations": ' + b'[[1, "x"]' + b', [1, "x"]' * 5 + b"]}", 0, "no list"),
        (b'{"ok": false, "kind": "cheat", "message": "x"}', 0, "a failure of kind 'cheat'"),
        (b"", -9, "died (SIGKILL; memory limit"),
        (b"", 1, "died (exit status 1"),
    ],
)
def test_the_childs_answer_is_data(
    monkeypatch: pytest.MonkeyPatch, raw: bytes | None, returncode: int, problem: str
) -> None:
    _answer(monkeypatch, raw, returncode)
    with pytest.raises(PhaseFailure) as failure:
        static_violations("x = 1\n", "nki", torch_compute=False, isolation=PARSE_ISOLATION)
    assert failure.value.kind == "rejected"
    assert problem in failure.value.message


def test_a_malformed_answer_fails_the_candidate_not_the_harness(
    silu: TaskSpec, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _answer(monkeypatch, b'{"ok": true, "violations": "none"}')
    result = check_kernel(silu, backend=NkisimBackend(), workdir=tmp_path)
    assert result.error_kind == "rejected"
    assert result.message == "the child parsing the source handed back no list of violations"


def test_constants_and_dialect_answers_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    _answer(monkeypatch, b'{"ok": true, "constants": {"EVIL": {"line": 1, "end_line": 1}}}')
    with pytest.raises(PhaseFailure, match="not asked for"):
        assigned_constants("TILE = 1\n", ["TILE"], isolation=PARSE_ISOLATION)
    _answer(
        monkeypatch,
        b'{"ok": true, "constants": {"TILE": {"line": 1, "end_line": 1, "value": [1]}}}',
    )
    with pytest.raises(PhaseFailure, match="no scalar"):
        assigned_constants("TILE = 1\n", ["TILE"], isolation=PARSE_ISOLATION)
    _answer(monkeypatch, b'{"ok": true, "dialect": "cuda"}')
    with pytest.raises(PhaseFailure, match="unknown dialect"):
        written_dialect("import nki\n", "k", isolation=PARSE_ISOLATION)


def test_a_child_past_its_time_limit_is_a_typed_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse_child, "PARSE_LIMITS", Limits(timeout_s=0.01, memory_mb=1024))
    with pytest.raises(PhaseFailure, match=r"ran past the 0.01 s limit") as failure:
        static_violations("x = 1\n", "nki", torch_compute=False, isolation=PARSE_ISOLATION)
    assert failure.value.kind == "rejected"


def test_the_child_reads_constants_and_dialect() -> None:
    source = "import nki\nTILE = 512\nNAME = 'a'\nRAW = b'x'\nSPLIT = (\n    1)\nOTHER = 2\n"
    found = assigned_constants(
        source, ["TILE", "NAME", "RAW", "SPLIT", "ABSENT"], isolation=PARSE_ISOLATION
    )
    assert found == {
        "TILE": parse_child.Constant(2, 2, 512, True),
        "NAME": parse_child.Constant(3, 3, "a", True),
        "RAW": parse_child.Constant(4, 4, None, False),
        "SPLIT": parse_child.Constant(5, 6, 1, True),
    }
    assert written_dialect(source, "k", isolation=PARSE_ISOLATION) == "nki"
