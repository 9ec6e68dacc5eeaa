"""The allow-list check that runs on kernel source before it executes."""

from __future__ import annotations

import pytest

from nkibench.benchmarks.nki import suite_tasks
from nkibench.sandbox.static_check import check_source, violation_kind


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


TRITON_KERNEL = """\
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def double(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def run(x):
    out = torch.empty_like(x)
    double[(triton.cdiv(x.numel(), 256),)](out, x.numel(), BLOCK=256)
    return out
"""


def test_a_triton_kernel_passes_in_its_own_dialect_only() -> None:
    assert check_source(TRITON_KERNEL, dialect="triton") == []
    refused = check_source(TRITON_KERNEL)  # as NKI: torch and triton are not NKI's
    assert {v.problem for v in refused} >= {"import of 'torch' is not allowed"}


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("torch.save(x, 'f')", "`torch.save` is not allowed"),
        ("s = torch.cuda.Stream()", "`torch.cuda.Stream` is not allowed"),
        ("torch.cuda.set_stream(None)", "`torch.cuda.set_stream` is not allowed"),
        ("y = torch.utils.cpp_extension", "`torch.utils` is not allowed"),
        ("p = tl.make_block_ptr(x)", "`triton.language.make_block_ptr` is not allowed"),
        ("c = triton.autotune", "`triton.autotune` is not allowed"),
        ("torch.exp = torch.sin", "`torch.exp` may not be replaced"),
        ("m = torch", "the torch module `torch` may only be used as torch.<name>"),
        ("n = x._cdata", "attribute `._cdata` is not allowed"),
    ],
)
def test_triton_kernels_are_refused_the_doors_out(line: str, problem: str) -> None:
    source = TRITON_KERNEL.replace("    return out\n", f"    {line}\n    return out\n")
    problems = [v.problem for v in check_source(source, dialect="triton")]
    assert any(problem in p for p in problems), problems


def test_triton_imports_outside_the_allow_list_are_refused() -> None:
    for statement in ("import os", "from torch import load", "import torch.utils"):
        source = f"{statement}\n" + TRITON_KERNEL
        assert check_source(source, dialect="triton"), statement
