"""The idioms real LLM-written Triton programs use (issue 25, part 1), accepted by the static
check, each on its own; and the doors they might open, refused: statically, on the real
modules (check_resolved), and at run time in the kernel's builtins (nkibench.sandbox.facades,
the loader). The end-to-end runs are in tests/nkibench/backends/test_triton_backend.py and the
escapes in the adversarial corpus."""

from __future__ import annotations

import functools
import inspect
from pathlib import Path

import pytest

from nkibench.errors import KernelError
from nkibench.sandbox.facades import FacadeRefused, inspect_facade, module_getattr
from nkibench.sandbox.loader import load_kernel
from nkibench.sandbox.main_block import is_main_guard, without_main_blocks
from nkibench.sandbox.resolved_check import check_resolved
from nkibench.sandbox.static_check import check_source

KERNEL = """\
import torch
import triton
import triton.language as tl
{imports}

@triton.jit
def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

{module}

def run(x):
    out = torch.empty_like(x)
    n = x.numel()
{body}
    double[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
    return out
"""


def kernel(*, imports: str = "", module: str = "", body: str = "    pass") -> str:
    return KERNEL.format(imports=imports, module=module, body=body)


def problems(source: str, *, torch_compute: bool = False) -> list[str]:
    return [
        v.render("kernel.py")
        for v in check_source(source, "kernel.py", "triton", torch_compute=torch_compute)
    ]


ACCEPTED = {
    "autotune, Config as decorators": kernel(
        module=(
            "@triton.autotune(\n"
            "    configs=[triton.Config({'BLOCK': 64}, num_warps=2),\n"
            "             triton.Config({'BLOCK': 128}, num_warps=4, num_stages=3)],\n"
            "    key=['n'], prune_configs_by={'early_config_prune': lambda c, a, **k: c},\n"
            ")\n"
            "@triton.jit\n"
            "def tuned(x_ptr, n, BLOCK: tl.constexpr):\n"
            "    pass\n"
        )
    ),
    "heuristics as a decorator": kernel(
        module=(
            "@triton.heuristics({'EVEN': lambda args: args['n'] % args['BLOCK'] == 0})\n"
            "@triton.jit\n"
            "def even(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):\n"
            "    pass\n"
        )
    ),
    "autotune, Config, heuristics as calls": kernel(
        module=(
            "CONFIGS = [triton.Config({'BLOCK': b}) for b in (64, 128)]\n"
            "tuned = triton.autotune(CONFIGS, key=['n'])(double)\n"
            "guessed = triton.heuristics(values={'BLOCK': lambda a: 64})(double)\n"
        )
    ),
    "torch.cuda.synchronize()": kernel(body="    torch.cuda.synchronize()"),
    "inspect.signature binding arguments": kernel(
        imports="import inspect",
        body=(
            "    bound = inspect.signature(run).bind(x)\n"
            "    bound.apply_defaults()\n"
            "    kinds = [p.kind == inspect.Parameter.VAR_POSITIONAL\n"
            "             for p in bound.signature.parameters.values()]\n"
            "    assert inspect.isfunction(run) and not inspect.isclass(run)"
        ),
    ),
    "from inspect import signature": kernel(
        imports="from inspect import Parameter, signature",
        body="    names = list(signature(run).parameters)",
    ),
    "dataclasses, from __future__ import annotations": kernel(
        imports="from __future__ import annotations\nimport dataclasses",
        module=(
            "@dataclasses.dataclass(frozen=True)\n"
            "class Plan:\n"
            "    block: int = 256\n"
            "    warps: int = dataclasses.field(default=4)\n"
        ),
        body="    plan = dataclasses.replace(Plan(), block=128)\n    dataclasses.fields(plan)",
    ),
    "enum": kernel(
        imports="import enum",
        module="class Mode(enum.Enum):\n    FAST = enum.auto()\n    SAFE = enum.auto()\n",
        body="    mode = Mode.FAST",
    ),
    "collections, collections.abc": kernel(
        imports="import collections\nimport collections.abc\nfrom collections import abc",
        module="Shape = collections.namedtuple('Shape', ['m', 'n'])\n",
        body=(
            "    counts = collections.Counter([1, 1, 2])\n"
            "    queue = collections.deque([1])\n"
            "    assert isinstance(counts, collections.abc.Mapping)\n"
            "    assert isinstance(queue, abc.Sequence) or True"
        ),
    ),
    "operator, functools, itertools, math": kernel(
        imports="import functools\nimport itertools\nimport math\nimport operator",
        body=(
            "    total = functools.reduce(operator.mul, x.shape, 1)\n"
            "    pairs = list(itertools.product(range(2), range(2)))\n"
            "    width = math.ceil(math.log2(max(n, 1)))"
        ),
    ),
    "numbers, abc, heapq, bisect, cmath, typing": kernel(
        imports=(
            "import abc\nimport bisect\nimport cmath\nimport heapq\nimport numbers\nimport typing"
        ),
        module="class Base(abc.ABC):\n    @abc.abstractmethod\n    def size(self) -> int: ...\n",
        body=(
            "    assert isinstance(n, numbers.Integral)\n"
            "    heap: typing.List[int] = []\n"
            "    heapq.heappush(heap, n)\n"
            "    where = bisect.bisect_left([64, 128, 256], n)\n"
            "    root = cmath.sqrt(-1)"
        ),
    ),
    "hasattr and getattr on triton's modules": kernel(
        module=(
            "EXP = getattr(tl, 'exp2', tl.exp)\n"
            "FAST = getattr(tl, 'fast_expf', None)\n"
            "HAS_EXTRA = hasattr(tl, 'extra')\n"
            "LANGUAGE_EXP = getattr(triton.language, 'exp')\n"
            "MATH_EXP = getattr(tl.math, 'exp')\n"
            "HAS_FP8 = hasattr(torch, 'float8_e5m2')\n"
        )
    ),
    "host queries and no-op moves": kernel(
        body=(
            "    if x.device.type != 'cuda' or not x.is_cuda:\n"
            "        x = x.cuda()\n"
            "    x = x.contiguous().to(x.device).to(device=x.device)\n"
            "    rows = x.shape[0] * x.stride(0) + x.numel()\n"
            "    kind = x.dtype\n"
            "    length = x[0].item()\n"
            "    back = x.cpu() if False else x"
        )
    ),
}


@pytest.mark.parametrize("name", ACCEPTED)
def test_each_idiom_real_triton_kernels_use_is_accepted(name: str) -> None:
    source = ACCEPTED[name]
    assert problems(source) == []
    assert check_resolved(source, "triton") == []


MAIN_BLOCK = kernel() + (
    '\n\nif __name__ == "__main__":\n'
    "    import os\n"
    "    import subprocess\n"
    "    import sys\n"
    "    x = torch.randn(1024, device='cuda')\n"
    "    print(torch.allclose(run(x), x * 2), sys.argv, os.environ)\n"
    "    subprocess.run(['nvidia-smi'])\n"
)


def test_a_main_block_is_neither_checked_nor_run(tmp_path: Path) -> None:
    assert problems(MAIN_BLOCK) == []
    assert check_resolved(MAIN_BLOCK, "triton") == []
    # the loader empties it: even run as __main__'s sibling it never executes
    runs = (
        "import math\n\ndef run(x):\n    return x\n\n"
        "if __name__ == '__main__':\n    raise SystemExit(math.pi)\n"
    )
    function = load_kernel(runs, str(tmp_path / "kernel.py"), "run", "triton")
    assert function(3) == 3
    loaded = load_kernel(
        "def run():\n    return __name__\n", str(tmp_path / "kernel.py"), "run", "triton"
    )
    assert loaded() == "triton_kernel"


def test_a_dataclass_with_string_annotations_loads(tmp_path: Path) -> None:
    """dataclasses looks the class's module up in sys.modules to read string annotations:
    the kernel's module is there, under its own name."""
    source = (
        "from __future__ import annotations\nimport dataclasses\n\n"
        "@dataclasses.dataclass(frozen=True)\nclass Plan:\n    block: int = 64\n\n"
        "def run():\n    return dataclasses.replace(Plan(), block=128).block\n"
    )
    assert problems(source) == []
    assert load_kernel(source, str(tmp_path / "kernel.py"), "run", "triton")() == 128


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        # an else: branch runs on import, and anything but the exact guard is checked
        ('if __name__ == "__main__":\n    pass\nelse:\n    import os\n', "import of 'os'"),
        ('if __name__ == "__main__" or True:\n    import os\n', "import of 'os'"),
        ('if __name__ != "__main__":\n    import os\n', "import of 'os'"),
        ('def f():\n    if __name__ == "__main__":\n        import os\n', "import of 'os'"),
        # rebinding __name__ would make the block run: refused in every form
        ('__name__ = "__main__"\n', "binding `__name__` is not allowed"),
        ('def f():\n    global __name__\n    __name__ = "__main__"\n', "binding `__name__`"),
        ("for __name__ in ['__main__']:\n    pass\n", "binding `__name__`"),
        ("import math as __name__\n", "binding `__name__`"),
        ("(__name__ := '__main__')\n", "binding `__name__`"),
        ("del __name__\n", "binding `__name__`"),
    ],
)
def test_what_is_not_exactly_a_main_block_is_checked(source: str, problem: str) -> None:
    found = problems(kernel(module=source))
    assert any(problem in p for p in found), found


def test_the_main_guard_is_recognised_exactly() -> None:
    import ast

    guards = [
        'if __name__ == "__main__":\n    pass',
        'if "__main__" == __name__:\n    pass',
    ]
    others = [
        'if __name__ == "__main__" and x:\n    pass',
        'if __name__ == "main":\n    pass',
        'if name == "__main__":\n    pass',
        'if __name__ is "__main__":\n    pass',
    ]
    assert all(is_main_guard(ast.parse(g).body[0]) for g in guards)
    assert not any(is_main_guard(ast.parse(o).body[0]) for o in others)
    tree = without_main_blocks(ast.parse('x = 1\nif __name__ == "__main__":\n    y = 2\n'))
    assert ast.unparse(tree) == "x = 1\nif __name__ == '__main__':\n    pass"


@pytest.mark.parametrize(
    ("imports", "body", "problem"),
    [
        # the standard library's doors stay shut
        ("import os", "    pass", "import of 'os' is not allowed"),
        ("import sys", "    pass", "import of 'sys' is not allowed"),
        ("import subprocess", "    pass", "import of 'subprocess' is not allowed"),
        ("import socket", "    pass", "import of 'socket' is not allowed"),
        ("import ctypes", "    pass", "import of 'ctypes' is not allowed"),
        ("import importlib", "    pass", "import of 'importlib' is not allowed"),
        ("import builtins", "    pass", "import of 'builtins' is not allowed"),
        ("import types", "    pass", "import of 'types' is not allowed"),
        ("import gc", "    pass", "import of 'gc' is not allowed"),
        ("import contextlib", "    pass", "import of 'contextlib' is not allowed"),
        ("import copy", "    pass", "import of 'copy' is not allowed"),
        ("import dataclasses", "    s = dataclasses.sys", "`.sys` is the standard library's"),
        ("import enum", "    s = enum.sys.modules", "`.sys` is the standard library's"),
        ("import dataclasses", "    i = dataclasses.inspect", "`.inspect` is the standard"),
        # inspect: frames, modules, sources, globals, every attribute by name
        ("import inspect", "    f = inspect.currentframe()", "`inspect.currentframe` is not"),
        ("import inspect", "    f = inspect.stack()", "`inspect.stack` is not allowed"),
        ("import inspect", "    m = inspect.getmembers(run)", "`inspect.getmembers` is not"),
        ("import inspect", "    m = inspect.getmodule(run)", "`inspect.getmodule` is not"),
        ("import inspect", "    s = inspect.getsource(run)", "`inspect.getsource` is not"),
        ("import inspect", "    g = inspect.getclosurevars(run)", "`inspect.getclosurevars`"),
        ("import inspect", "    u = inspect.unwrap(run)", "`inspect.unwrap` is not allowed"),
        ("from inspect import currentframe", "    pass", "import of 'inspect.currentframe'"),
        ("import inspect", "    a = inspect.get_annotations(run)", "`.get_annotations`"),
        ("import inspect", "    s = inspect.Signature.from_callable(run)", "`.from_callable`"),
        ("import inspect", "    s = inspect.signature(run, eval_str=True)", "`eval_str=`"),
        ("import inspect", "    f = inspect.currentframe().f_back", "`.f_back` (frames"),
        # dataclasses' and operator's readers by name, enum's writer into other modules
        ("import dataclasses", "    d = dataclasses.asdict(x)", "`dataclasses.asdict` is not"),
        ("import dataclasses", "    d = dataclasses.astuple(x)", "`dataclasses.astuple` is"),
        ("import enum", "    g = enum.global_enum", "`enum.global_enum` is not allowed"),
        ("import operator", "    g = operator.attrgetter('shape')", "`.attrgetter` reads"),
        ("import operator", "    g = operator.methodcaller('sum')", "`.methodcaller` reads"),
        # getattr: a literal name, on a module of triton, checked as the attribute
        ("", "    s = getattr(x, 'shape')", "`getattr` is allowed only on a module of Triton"),
        ("", "    s = getattr(tl, 'ex' + 'p')", "`getattr` is allowed only on a module of"),
        ("", "    s = getattr(torch, 'empty')", "`getattr` is allowed only on a module of"),
        ("", "    s = getattr(tl, 'exp', default=None)", "`getattr` is allowed only on a"),
        ("", "    s = getattr(*[tl, 'exp'])", "`getattr` is allowed only on a module of"),
        ("", "    g = getattr", "`getattr` is allowed only on a module of Triton"),
        ("", "    r = getattr(triton, 'runtime')", "`triton.runtime` is not allowed"),
        ("", "    r = getattr(triton, 'knobs')", "`triton.knobs` is not allowed"),
        ("", "    r = getattr(tl, '_core')", "attribute `._core` is not allowed"),
        ("", "    r = getattr(tl, 'make_block_ptr')", "`triton.language.make_block_ptr`"),
        ("", "    h = hasattr(torch, 'save')", "`torch.save` is not allowed"),
        ("", "    h = hasattr(tl, name)", "`hasattr` needs the attribute's name"),
        # a @jit function's globals (Triton's own hold the real builtins)
        ("", "    g = tl.sigmoid.get_capture_scope()", "`.get_capture_scope` (frames"),
        ("", "    g = double.used_global_vals", "`.used_global_vals` (frames"),
        # Triton's runtime stays shut; the autotuner's timings in files too
        ("", "    t = triton.runtime.autotuner.Autotuner", "`triton.runtime` is not allowed"),
        ("", "    t = double.check_disk_cache", "`.check_disk_cache` (files"),
        # reads of tensor data that the run-time torch guard cannot see
        ("", "    y = x.numpy()", "`.numpy` reads PyTorch tensor data on the host"),
        ("", "    y = x.tolist()", "`.tolist` reads PyTorch tensor data on the host"),
        ("", "    torch.cuda.synchronize = print", "`torch.cuda.synchronize` may not be"),
    ],
)
def test_the_doors_the_idioms_could_open_stay_shut(imports: str, body: str, problem: str) -> None:
    found = problems(kernel(imports=imports, body=body))
    assert any(problem in p for p in found), found


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        # what no name list sees: where a chain on an allowed module really leads
        ("import enum\nf = enum.bltns.open", "`enum.bltns` is the module builtins"),
        ("import dataclasses\nc = dataclasses.copy", "`dataclasses.copy` is the module copy"),
        # getattr is read as the attribute: a module held as a value is refused
        ("import triton\nm = getattr(triton, 'language')", "is the module triton.language"),
        ("import triton.language as tl\nm = getattr(tl, 'math')", "the module triton.language"),
    ],
)
def test_chains_on_the_allowed_modules_are_followed_on_the_real_ones(
    source: str, problem: str
) -> None:
    assert problems(source) == []
    found = [v.problem for v in check_resolved(source, "triton")]
    assert any(problem in p for p in found), found


def test_getattr_in_the_kernel_holds_the_same_rules_at_run_time() -> None:
    import torch
    import triton
    import triton.language as tl

    kernel_getattr = module_getattr("triton")
    assert kernel_getattr(tl, "exp") is tl.exp
    assert kernel_getattr(tl, "no_such_function", None) is None
    assert kernel_getattr(triton, "cdiv") is triton.cdiv
    with pytest.raises(AttributeError):
        kernel_getattr(tl, "no_such_function")
    for obj, name, words in [
        (torch, "empty", "only on a module of the packages triton"),
        (torch.empty(1), "shape", "only on a module of the packages triton"),
        (tl, "_core", "no underscore names"),
        (tl, "get_capture_scope", "frames, tracebacks and code objects"),
        (triton, "runtime", "`triton.runtime` is not allowed"),
        (triton, "language", "is the module triton.language"),
        (tl, 3, "only on a module of the packages triton"),
    ]:
        with pytest.raises(FacadeRefused, match=words):
            kernel_getattr(obj, name)
    assert FacadeRefused("x").kind == "rejected"


def _own(a: int, b: int = 2, *rest: int) -> int:
    return a


def test_the_kernels_inspect_answers_for_its_own_functions_only() -> None:
    facade = inspect_facade("triton", __file__)
    names = {n for n in vars(facade) if not n.startswith("_")}
    assert names == {
        "signature",
        "Signature",
        "Parameter",
        "BoundArguments",
        "isclass",
        "isfunction",
        "ismethod",
        "isroutine",
        "isbuiltin",
        "isgeneratorfunction",
        "iscoroutinefunction",
    }
    bound = facade.signature(_own).bind(1, 5, 6)
    assert bound.arguments == {"a": 1, "b": 5, "rest": (6,)}
    assert list(facade.signature(functools.partial(_own, 1)).parameters) == ["b", "rest"]

    @functools.wraps(_own)
    def wrapper(*args: int) -> int:
        return _own(*args)

    assert list(facade.signature(wrapper).parameters) == ["a", "b", "rest"]
    # another library's function: its defaults are objects the check never saw
    import torch

    @functools.wraps(torch.save)
    def wraps_foreign(*args: object) -> None:
        return None

    for foreign in (torch.save, torch.empty_like, print, wraps_foreign, functools.partial(print)):
        with pytest.raises(FacadeRefused, match="the kernel's own functions only"):
            facade.signature(foreign)
    with pytest.raises(TypeError):
        facade.signature(_own, eval_str=True)
    elsewhere = inspect_facade("triton", "/elsewhere/kernel.py")
    with pytest.raises(FacadeRefused):
        elsewhere.signature(_own)


def test_triton_wrappers_are_seen_through_to_the_kernels_function(tmp_path: Path) -> None:
    source = (
        "import inspect\nimport triton\nimport triton.language as tl\n\n"
        "@triton.autotune(configs=[triton.Config({'B': 8})], key=['n'])\n"
        "@triton.heuristics({'C': lambda a: 1})\n@triton.jit\n"
        "def k(x_ptr, n, B: tl.constexpr, C: tl.constexpr):\n    pass\n\n"
        "def run():\n    return list(inspect.signature(k).parameters)\n"
    )
    path = tmp_path / "kernel.py"
    path.write_text(source)
    assert problems(source) == []
    assert load_kernel(source, str(path), "run", "triton")() == ["x_ptr", "n", "B", "C"]
    refused = (
        "import inspect\nimport torch\n\n"
        "def run():\n    return inspect.signature(torch.empty_like)\n"
    )
    assert problems(refused) == []  # the path is allowed; what it hands out is not
    with pytest.raises(KernelError, match="the kernel's own functions only"):
        load_kernel(refused, str(path), "run", "triton")()
    assert inspect.signature(_own)  # the harness's own inspect is the real one
