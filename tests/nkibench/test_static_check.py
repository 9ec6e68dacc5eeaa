"""The allow-list check that runs on kernel source before it executes."""

from __future__ import annotations

import ast
import re
import typing
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from nkibench.benchmarks.nki import suite_tasks
from nkibench.dialects import detect_dialect
from nkibench.sandbox.resolved_check import check_resolved
from nkibench.sandbox.static_check import check_source, violation_kind
from nkibench.suites import GPU_LARGE_SUITE, GPU_SUITE, NKI_LEGACY_SUITE, NKI_SUITE
from tests.support import DATA, REPOSITORY
from tests.support.nki_helpers import shadow_modules

__all__ = ["shadow_modules"]


def test_every_suite_kernel_passes() -> None:
    for dialect in ("nki-legacy", "nki"):
        for folder in suite_tasks(dialect=dialect):
            source = (folder / "kernel.py").read_text()
            assert check_source(source, "kernel.py", dialect) == [], folder.name


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
    violations = check_source(source, "kernel.py", "nki-legacy")
    assert violations, source
    assert any(problem in v.problem for v in violations)
    assert violation_kind(violations) == "rejected"


def test_nki_spellings_that_look_like_numpy_io_are_allowed() -> None:
    source = (
        "import neuronxcc.nki.language as nl\nimport numpy as np\nx = nl.load(a)\ny = np.float32\n"
    )
    assert check_source(source, "kernel.py", "nki-legacy") == []


def test_a_syntax_error_is_a_compile_failure_with_its_line() -> None:
    violations = check_source("x = 1\ndef broken(:\n", "kernel.py", "nki-legacy")
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
    assert check_source(TRITON_KERNEL, "kernel.py", dialect="triton") == []
    refused = check_source(
        TRITON_KERNEL, "kernel.py", "nki-legacy"
    )  # as NKI: torch and triton are not NKI's
    assert {v.problem for v in refused} >= {"import of 'torch' is not allowed"}


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("torch.save(x, 'f')", "`torch.save` is not allowed"),
        ("s = torch.cuda.Stream()", "`torch.cuda.Stream` is not allowed"),
        ("torch.cuda.set_stream(None)", "`torch.cuda.set_stream` is not allowed"),
        ("y = torch.utils.cpp_extension", "`torch.utils` is not allowed"),
        ("p = tl.make_block_ptr(x)", "`triton.language.make_block_ptr` is not allowed"),
        ("c = triton.runtime.autotuner", "`triton.runtime` is not allowed"),
        ("k = triton.knobs.runtime", "`triton.knobs` is not allowed"),
        ("torch.exp = torch.sin", "`torch.exp` may not be replaced"),
        ("m = torch", "the torch module `torch` may only be used as torch.<name>"),
        ("n = x._cdata", "attribute `._cdata` is not allowed"),
    ],
)
def test_triton_kernels_are_refused_the_doors_out(line: str, problem: str) -> None:
    source = TRITON_KERNEL.replace("    return out\n", f"    {line}\n    return out\n")
    problems = [v.problem for v in check_source(source, "kernel.py", dialect="triton")]
    assert any(problem in p for p in problems), problems


def test_triton_imports_outside_the_allow_list_are_refused() -> None:
    for statement in ("import os", "from torch import load", "import torch.utils"):
        source = f"{statement}\n" + TRITON_KERNEL
        assert check_source(source, "kernel.py", dialect="triton"), statement


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("import typing\nos = typing.sys.modules['os']", "`.sys` is the standard library's sys"),
        ("from typing import sys", "import of 'typing.sys' is not allowed"),
        ("import numpy as np\nnp.rec.fromfile('x')", "`.fromfile`"),
        ("import numpy as np\nnp.core.records.fromfile('x')", "`.fromfile`"),
        ("def kernel(a):\n    return a.memmap('x')", "`.memmap`"),
        ("import numpy as np\nnp.genfromtxt('/proc/1/environ')", "`.genfromtxt`"),
        ("import numpy as np\nnp.DataSource(None)", "`.DataSource`"),
        ("import numpy as np\nnp.ma.core.np.load('x')", "`.load` (files"),
        ("import numpy as np\nnp.ma.core.builtins.open('x')", "`.builtins` is the standard"),
        ("import typing\ntyping.get_type_hints(f, {})", "`.get_type_hints`"),
        ("import functools\nfunctools.singledispatch(f)", "`.singledispatch`"),
        ("from functools import singledispatch", "import of 'functools.singledispatch'"),
        ("def kernel(g):\n    return g.gi_frame.f_back", "(frames, tracebacks and code objects)"),
        ("def kernel(x):\n    return x.data", "`.data` is nkisim's own storage"),
        ("def kernel(x):\n    x.alloc.pending = False", "`x.alloc.pending` may not be replaced"),
        ("def kernel(x):\n    del x.shape", "`x.shape` may not be replaced"),
        ("import nki.language as nl\nnl.affine_range = range", "`nki.language.affine_range` may"),
        ("import nki.language as nl\nm = nl", "may only be used as nl.<name>"),
        ("import math\nm = math", "the math module `math` may only be used as math.<name>"),
    ],
)
def test_the_doors_without_underscores_are_refused(source: str, problem: str) -> None:
    dialect = detect_dialect(ast.parse(source), "kernel.py") or "nki-legacy"
    problems = [v.problem for v in check_source(source, "kernel.py", dialect)]
    assert any(problem in p for p in problems), problems


TRITON_RUN = """\
import math

import torch
import triton
import triton.language as tl


@triton.jit
def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n).to(tl.float32)
    y = tl.sum(x[:, None] @ x[None, :], axis=0).exp()
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=offs < n)


def run(x, w):
    m, k = x.shape
    out = torch.empty((m, w.shape[1]), dtype=x.dtype, device=x.device)
    flat = x.reshape(-1).view(torch.int16).contiguous()
    scale[(triton.cdiv(x.numel(), 256),)](flat, out.view(-1), x.stride(0), BLOCK=256)
    width = math.sqrt(k) * torch.cuda.current_device() + x.T.shape[0] + x.dim()
    return out
"""


def test_torch_in_run_may_allocate_view_and_query_and_triton_may_compute() -> None:
    """Allocation, views and queries of torch in run(); anything Triton's own tensors do in
    @triton.jit bodies (`.to`, `.exp()`, `@`), which share names with torch's compute."""
    assert check_source(TRITON_RUN, "kernel.py", dialect="triton") == []


@pytest.mark.parametrize(
    "line",
    [
        "y = torch.rsqrt(x)",
        "y = x @ w",
        "y = torch.matmul(x, w)",
        "y = torch.nn.functional.silu(x)",
        "y = x.sum(dim=1)",
        "y = x.float().exp()",
        "y = x.softmax(-1)",
        "y = torch.where(x > 0, x, w)",
        "x.zero_()",
        "y = x.float()",
        "from torch import rsqrt",
        "if not x.is_cuda:\n        return torch.nn.functional.silu(x)",
        "y = x.untyped_storage()[0]",  # the storage's elements: empty, set_, ...
        "y = str(x)",  # the text of a tensor: refused at run time
    ],
)
def test_torch_compute_in_run_is_left_to_the_run_time_guard(line: str) -> None:
    """What torch computes runs aten ops, which the kernel child's guard sees and refuses
    where they run (nkibench.backends.triton.torch_guard): a branch that never runs computes
    nothing, so the static check does not decide."""
    source = TRITON_RUN.replace("    return out\n", f"    {line}\n    return out\n")
    assert check_source(source, "kernel.py", dialect="triton") == []


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("y = x.numpy()", "`.numpy` reads PyTorch tensor data on the host outside a @triton.jit"),
        ("y = x.tolist()", "`.tolist` reads PyTorch tensor data on the host"),
        ("x.apply_(math.exp)", "`.apply_` reads PyTorch tensor data on the host"),
        ("x.map_(w, max)", "`.map_` reads PyTorch tensor data on the host"),
        ("x.map2_(w, w, max)", "`.map2_` reads PyTorch tensor data on the host"),
        ("y = x.storage().tolist()", "`.tolist` reads PyTorch tensor data"),
        ("y = torch.Tensor.tolist(x)", "`.tolist` reads PyTorch tensor data"),
        ("torch.set_num_threads(1)", "`torch.set_num_threads` changes torch's or triton's global"),
    ],
)
def test_reads_the_run_time_guard_cannot_see_are_refused_with_the_line(
    line: str, problem: str
) -> None:
    source = TRITON_RUN.replace("    return out\n", f"    {line}\n    return out\n")
    violations = check_source(source, "kernel.py", dialect="triton")
    assert [v.problem for v in violations if problem in v.problem], violations
    assert violations[0].line == source.splitlines().index(f"    {line}") + 1
    assert violation_kind(violations) == "rejected"


def test_a_task_that_allows_torch_compute_opens_no_other_door() -> None:
    compute = TRITON_RUN.replace(
        "    return out\n", "    return torch.rsqrt(x @ w).sum(1) + len(x.tolist())\n"
    )
    assert check_source(compute, "kernel.py", dialect="triton", torch_compute=True) == []
    assert check_source(compute, "kernel.py", dialect="triton")
    for line, problem in [
        ("s = torch.cuda.Stream()", "`torch.cuda.Stream` is not allowed"),
        ("torch.cuda.synchronize = print", "`torch.cuda.synchronize` may not be replaced"),
        ("c = torch.cuda\n    c.Event = object", "`c.Event` may not be replaced"),
        ("torch.save(x, 'f')", "`torch.save` is not allowed"),
        ("f = torch.overrides.TorchFunctionMode", "`torch.overrides` is not allowed"),
        ("torch.cuda.nccl.all_reduce([x])", "`torch.cuda.nccl` is not allowed"),
        ("f = torch.cuda.gds.GdsFile", "`torch.cuda.gds` is not allowed"),
        ("pool = torch.cuda.MemPool()", "`torch.cuda.MemPool` is not allowed"),
        ("rt = torch.cuda.cudart()", "`torch.cuda.cudart` is not allowed"),
    ]:
        source = compute.replace("    return torch", f"    {line}\n    return torch")
        for torch_compute in (True, False):
            problems = [
                v.problem
                for v in check_source(
                    source, "kernel.py", dialect="triton", torch_compute=torch_compute
                )
            ]
            assert any(problem in p for p in problems), (line, problems)


def test_a_tensor_subclass_hook_is_refused() -> None:
    source = TRITON_RUN + (
        "\n\nclass Lazy(torch.Tensor):\n"
        "    @classmethod\n"
        "    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):\n"
        "        return func(*args)\n"
    )
    problems = [
        v.problem for v in check_source(source, "kernel.py", dialect="triton", torch_compute=True)
    ]
    assert any("defining `__torch_dispatch__` is not allowed" in p for p in problems), problems


@pytest.mark.usefixtures("shadow_modules")
@pytest.mark.parametrize(
    ("source", "problem"),
    [
        (
            "import typing\nf = typing.stdlib_re.enum.bltns.open",
            "`typing.stdlib_re` is the module re, which a kernel may not use",
        ),
        ("from typing import stdlib_re", "`typing.stdlib_re` is the module re"),
        ("import nki.language as nl\nf = nl.math.sqrt", "nl.math is nkisim's own, not part of NKI"),
        ("import neuronxcc.nki.isa as nisa\nm = nisa.ops", "nisa.ops is nkisim's own"),
        ("from numpy import ma\nf = ma.core.np.load", "`ma.core.np.load` is numpy's load"),
        ("from numpy import ma\nm = ma", "`ma` is the module numpy.ma, which a kernel may only"),
        ("import numpy as np\nm = np.ma", "`np.ma` is the module numpy.ma"),
    ],
)
def test_chains_are_followed_on_the_real_modules_before_the_kernel_runs(
    source: str, problem: str
) -> None:
    """What no name list sees (check_resolved, in the kernel's child): where a chain really
    leads, with nkisim's NKI modules as a kernel sees them."""
    dialect = detect_dialect(ast.parse(source), "kernel.py") or "nki-legacy"
    assert check_source(source, "kernel.py", dialect) == []  # no name list sees it
    problems = [v.problem for v in check_resolved(source, dialect)]
    assert any(problem in p for p in problems), problems


@pytest.mark.usefixtures("shadow_modules")
def test_the_suite_kernels_pass_the_resolved_check_too() -> None:
    for dialect in ("nki-legacy", "nki"):
        for folder in suite_tasks(dialect=dialect):
            source = (folder / "kernel.py").read_text()
            assert check_resolved(source, dialect) == [], folder.name
    for folder in sorted([*GPU_SUITE.iterdir(), *GPU_LARGE_SUITE.iterdir()]):
        if (folder / "kernel.py").is_file():
            source = (folder / "kernel.py").read_text()
            assert check_resolved(source, "triton") == [], folder.name


@pytest.mark.parametrize(
    ("source", "dialect", "problem"),
    [
        (
            "import nki\nimport neuronxcc.nki.language as nl\n",
            "nki",
            "import of 'neuronxcc.nki.language' mixes legacy NKI (neuronxcc.nki) into a NKI "
            "0.3-0.7 (the nki package) kernel (nki)",
        ),
        (
            "import neuronxcc.nki as nki\nfrom nki import isa\n",
            "nki-legacy",
            "import from 'nki' mixes NKI 0.3-0.7 (the nki package) into a legacy NKI",
        ),
        ("import triton\n", "nki", "import of 'triton' mixes Triton (NVIDIA GPUs) into"),
    ],
)
def test_a_kernel_mixing_dialects_is_told_which(source: str, dialect: str, problem: str) -> None:
    problems = [v.problem for v in check_source(source, "kernel.py", dialect)]
    assert any(problem in p for p in problems), problems


def _problems(source: str, dialect: str = "nki-legacy", **options: bool) -> list[str]:
    return [v.problem for v in check_source(source, "kernel.py", dialect, **options)]


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        # class patterns: `case C(name=p)` reads subject.name
        (
            "match print:\n    case object(__self__=b): pass",
            "attribute `.__self__` is not allowed (no underscore names) "
            "(read by the class pattern `object(__self__=...)`)",
        ),
        (
            "match b:\n    case object(exec=run): run('x')",
            "`exec` is not allowed in a kernel (read by the class pattern `object(exec=...)`)",
        ),
        (
            "match g:\n    case object(gi_frame=object(f_back=f)): pass",
            "`.gi_frame` (frames, tracebacks and code objects) is not allowed",
        ),
        (
            "match g:\n    case object(gi_frame=object(f_back=f)): pass",
            "`.f_back` (frames, tracebacks and code objects) is not allowed: a kernel may not "
            "inspect the interpreter (read by the class pattern `object(f_back=...)`)",
        ),
        ("match f:\n    case object(f_globals=g): pass", "`.f_globals` (frames"),
        ("match c:\n    case object(ag_await=a): pass", "`.ag_await` (frames"),
        (
            "match t:\n    case object(data=d): d[...] = 0",
            "`.data` is nkisim's own storage behind a tensor, not NKI: move data with nl.load / "
            "nl.store (or nisa.dma_copy) and compute with nl.* / nisa.* "
            "(read by the class pattern `object(data=...)`)",
        ),
        ("match m:\n    case object(sys=s): pass", "`.sys` is the standard library's sys"),
        ("match m:\n    case object(fromfile=f): pass", "`.fromfile` (files, pickles"),
        ("match m:\n    case object(load=f): pass", "`.load` (files, pickles or pointers)"),
        # positional sub-patterns read what C.__match_args__ lists
        (
            "class Bound:\n    __match_args__ = ('__self__',)\n"
            "match print:\n    case Bound(b): pass",
            "the positional sub-patterns of `case Bound(...)` read the attributes that "
            "Bound.__match_args__ lists, which the check cannot see",
        ),
        (
            "int = Bound\nmatch print:\n    case int(b): pass",  # not the builtin any more
            "the positional sub-patterns of `case int(...)`",
        ),
        # entries by key: mapping patterns, subscripts, format fields
        (
            "match g:\n    case {'__builtins__': b}: pass",
            "the key '__builtins__' is an entry of a namespace (a module's globals, the "
            "builtins), which a kernel may not read or write (read by a mapping pattern)",
        ),
        ("match b:\n    case {'exec': run}: pass", "the key 'exec' is an entry of a namespace"),
        ("b = g['__builtins__']", "the key '__builtins__' is an entry of a namespace"),
        ("match x:\n    case [*open]: pass", "`open` is not allowed in a kernel"),
        # format templates
        (
            "s = '{0.data}'.format(t)",
            "the format field `{0.data}` reads the attribute `.data` by name, out of the "
            "check's sight: write an f-string",
        ),
        (
            "s = '{0.__class__.__mro__}'.format(t)",
            "the format field `{0.__class__.__mro__}` reads the attribute `.__mro__`",
        ),
        ("s = '{x.shape}'.format_map(m)", "the format field `{x.shape}` reads the attribute"),
        ("s = str.format('{0.data}', t)", "the format field `{0.data}`"),
        ("s = '{0:>{1.width}}'.format(t, w)", "the format field `{1.width}`"),  # in a spec
        (
            "s = '{0[__builtins__]}'.format(g)",
            "the key '__builtins__' is an entry of a namespace (a module's globals, the "
            "builtins), which a kernel may not read or write (the format field",
        ),
        ("s = template.format(t)", "`.format` on a template the check cannot read"),
        ("s = f'{{0.{name}}}'.format(t)", "`.format` on a template the check cannot read"),
        ("f = str.format", "`.format` on a template the check cannot read"),
        ("s = str.format(template, t)", "`.format` on a template the check cannot read"),
        ("s = '{0.data'.format(t)", "a format template the check cannot read"),
        # hasattr reads the attribute
        ("ok = hasattr(print, '__self__')", "no underscore names) (read by hasattr)"),
        ("ok = hasattr(t, 'data')", "`.data` is nkisim's own storage"),
        ("ok = hasattr(t, name)", "`hasattr` needs the attribute's name as a string literal"),
        ("probe = hasattr", "`hasattr` needs the attribute's name as a string literal"),
        # functools' wrappers read and write attributes named in strings
        (
            "import functools, typing\n"
            "functools.update_wrapper(sink, typing.cast, assigned=('__globals__',))",
            "`.update_wrapper` reads (or writes) attributes by names in strings",
        ),
        ("from functools import update_wrapper", "import of 'functools.update_wrapper'"),
        (
            "import functools, typing\n"
            "functools.wraps(typing.cast, assigned=('__globals__',))(sink)",
            "`functools.wraps` is allowed only as a def's decorator with the wrapped function "
            "alone",
        ),
        (
            "from functools import wraps\nimport typing\nwraps(typing.cast)(sink)",
            "`functools.wraps` is allowed only as a def's decorator",
        ),
        # hooks that answer a library's own calls, in each spelling
        ("class A:\n    __array_priority__ = 100", "defining `__array_priority__` is not"),
        ("class A:\n    def __array_ufunc__(self, *a): pass", "defining `__array_ufunc__`"),
        (
            "class A:\n    __torch_function__ = classmethod(handler)",
            "defining `__torch_function__` is not allowed: a tensor subclass",
        ),
        ("class A:\n    from functools import partial as __array__", "defining `__array__`"),
        ("ns = dict(__array_function__=f)", "defining `__array_function__`"),
        ("ns = {'__torch_dispatch__': f}", "defining `__torch_dispatch__`"),
        (
            "A = type('A', (object,), ns)",
            "`type(name, bases, namespace)` builds a class from a namespace the check cannot "
            "read: write a class statement",
        ),
    ],
)
def test_reads_by_name_without_an_attribute_are_refused(source: str, problem: str) -> None:
    """What names an attribute or a namespace's entry without an `ast.Attribute` (issue 23):
    each refused with the rule of `.name`, or because the name cannot be seen."""
    problems = _problems(source)
    assert any(problem in p for p in problems), problems
    assert violation_kind(check_source(source, "kernel.py", "nki-legacy")) == "rejected"


def test_a_class_pattern_is_held_to_the_unseen_reads_like_an_attribute() -> None:
    source = TRITON_RUN.replace(
        "    return out\n", "    match x:\n        case object(numpy=read):\n    return out\n"
    ).replace("case object(numpy=read):\n", "case object(numpy=read):\n            read()\n")
    assert any("`.numpy` reads PyTorch tensor data" in p for p in _problems(source, "triton"))
    assert _problems(source, "triton", torch_compute=True) == []


LEGITIMATE_READS = """import functools
from functools import wraps


class Tile:
    def __init__(self, rows, cols):
        self.rows = rows
        self.cols = cols

    def __eq__(self, other):
        return (self.rows, self.cols) == (other.rows, other.cols)


def traced(fn):
    @functools.wraps(fn)
    def inner(*args):
        return fn(*args)

    @wraps(fn)
    def again(*args):
        return inner(*args)

    return again


@traced
def plan(shape, config):
    match config:
        case Tile(rows=r, cols=c) if r > 0:
            tiles = (r, c)
        case {"rows": int(r), "cols": int(c)}:
            tiles = (r, c)
        case (int(r), int(c)) | [int(r), int(c), *_]:
            tiles = (r, c)
        case str(name) | bytes(name):
            tiles = (len(name), 1)
        case _:
            tiles = (128, 512)
    label = "{0[0]!r:>{width}}".format(shape, width=4)
    label += "{rows}/{cols} {[1]}".format(shape, rows=tiles[0], cols=tiles[1])
    label += f"{shape[0]:>{tiles[0]}} {config!r}" + "%(rows)d" % {"rows": tiles[0]}
    sized = hasattr(config, "rows") and type(config) is Tile and config == Tile(*tiles)
    return tiles, label, sized, sorted(dir(config))[:1]
"""


@pytest.mark.parametrize("dialect", ["nki", "nki-legacy", "triton"])
def test_legitimate_patterns_templates_and_wrappers_pass(dialect: str) -> None:
    """Class patterns with keywords, builtin types' positional patterns, mapping patterns on
    data keys, literal templates without attribute fields, f-strings, `%`, a literal
    hasattr, `@functools.wraps(fn)`, `type(x)`: none reads a name the check cannot see."""
    if dialect != "nki":  # only NKI 0.7 sets attributes, on its own objects
        source = LEGITIMATE_READS.replace("self.rows = rows\n        self.cols = cols", "pass")
    else:
        source = LEGITIMATE_READS
    assert _problems(source, dialect) == []


def _kernel_files() -> list[Path]:
    """The kernels shipped in the repository: the suites, the test data's kernels (but the
    negative corpus's refused ones and the kernels planted to be refused), the examples."""
    refused_on_purpose = {
        DATA / "triton_kernels" / "side_stream.py",  # a side stream
        DATA / "nki_current" / "mixed_legacy.py",  # two dialects in one kernel
    }
    files = [
        *NKI_SUITE.glob("*/kernel.py"),
        *NKI_LEGACY_SUITE.glob("*/kernel.py"),
        *GPU_SUITE.glob("*/kernel.py"),
        *(REPOSITORY / "examples").rglob("kernel.py"),
        *(DATA / "nki_current").glob("*.py"),
        *(DATA / "triton_kernels").glob("*.py"),
        *(DATA / "agent_kernels").glob("*.py"),
    ]
    for path in sorted((DATA / "kernels").glob("*.py")):
        expect = re.search(r"^# expect: (\w+)", path.read_text(), re.MULTILINE)
        if expect is None or expect.group(1) not in ("rejected", "compile"):
            files.append(path)
    return [f for f in files if f not in refused_on_purpose]


def test_every_kernel_shipped_in_the_repository_passes() -> None:
    files = _kernel_files()
    assert len(files) >= 60  # the suites alone hold more: a moved folder fails here
    for path in files:
        source = path.read_text()
        dialect = detect_dialect(ast.parse(source), str(path))
        assert dialect is not None, path
        torch_compute = "allow_torch_compute = true" in (
            path.with_name("task.toml").read_text() if path.with_name("task.toml").is_file() else ""
        )
        problems = _problems(source, dialect, torch_compute=torch_compute)
        assert problems == [], (path, problems)


@pytest.mark.usefixtures("shadow_modules")
def test_a_class_pattern_on_a_module_chain_is_followed_like_the_chain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`match typing.holder: case object(kit=k)` is `k = typing.holder.kit`: check_resolved
    follows it on the real objects, as it follows attribute chains (no name list knows what
    `kit` holds)."""
    monkeypatch.setattr(typing, "holder", SimpleNamespace(kit=re, np=np), raising=False)
    source = (
        "import typing\n"
        "match typing.holder:\n"
        "    case object(kit=k): pass\n"
        "    case object(np=object(float32=f)) | object(np=n): pass\n"
    )
    assert check_source(source, "kernel.py", "nki-legacy") == []
    problems = [(v.line, v.problem) for v in check_resolved(source, "nki-legacy")]
    assert (3, "`typing.holder.kit` is the module re, which a kernel may not use") in problems
    # numpy is a module the kernel may reach, but not hold as a value
    assert any(line == 4 and "`typing.holder.np` is the module numpy" in p for line, p in problems)
    assert not any("float32" in p for _, p in problems), problems
    plain = "import typing\nmatch typing.holder:\n    case object(np=object(float32=f)): pass\n"
    assert check_resolved(plain, "nki-legacy") == []
