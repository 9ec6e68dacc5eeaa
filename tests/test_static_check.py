"""The allow-list check that runs on kernel source before it executes."""

from __future__ import annotations

import pytest

from nkibench.benchmark import suite_tasks
from nkibench.static_check import check_source, violation_kind


def test_every_suite_kernel_passes() -> None:
    for folder in suite_tasks():
        assert check_source((folder / "kernel.py").read_text()) == [], folder.name


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("import subprocess", "import of 'subprocess' is not allowed"),
        ("from os import path", "import from 'os' is not allowed"),
        ("from . import reference", "relative imports are not allowed"),
        ("from numpy import *", "`import *` is not allowed"),
        ("from numpy import load", "import of 'numpy.load' is not allowed"),
        ("import numpy as np\nnp.fromfile('x')", "`.fromfile`"),
        ("import numpy\nnumpy.lib.format", "`.lib`"),
        ("import numpy as np\nx = np", "may only be used as np.<name>"),
        ("def kernel(a):\n    a.tofile('/tmp/x')", "`.tofile`"),
        ("def kernel(a):\n    return a.ctypes", "`.ctypes`"),
        ("def kernel(a):\n    return a.__class__", "no underscore names"),
        ("def kernel(a):\n    return eval('1')", "`eval` is not allowed"),
        ("def kernel(open):\n    return open", "`open` is not allowed"),
        ("def kernel(a):\n    return vars(a)", "`vars` is not allowed"),
    ],
)
def test_forbidden_code_is_found(source: str, problem: str) -> None:
    violations = check_source(source)
    assert violations, source
    assert any(problem in v.problem for v in violations)
    assert violation_kind(violations) == "rejected"


def test_nki_spellings_that_look_like_numpy_io_are_allowed() -> None:
    source = (
        "import neuronxcc.nki.language as nl\nimport numpy as np\nx = nl.load(a)\ny = np.float32\n"
    )
    assert check_source(source) == []


def test_a_syntax_error_is_a_compile_failure_with_its_line() -> None:
    violations = check_source("x = 1\ndef broken(:\n")
    assert violations[0].line == 2
    assert violation_kind(violations) == "compile"
    assert violations[0].render("kernel.py").startswith("kernel.py line 2: SyntaxError")
