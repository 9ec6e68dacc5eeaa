"""The allow-list check run on kernel source before any of it executes.

Kernels are written by LLMs and treated as untrusted. The check is the first of three
layers (then restricted builtins, a guarded import and run-time guards in the child, then the
OS sandbox: no network, a private file system, limits, a wall-clock kill). It is the layer
with the clearest messages, so it refuses everything it can see:

- imports outside the dialect's allow-list, and the builtins that reach files, code or other
  objects' attributes by name;
- every attribute starting with an underscore (the doors to `__class__.__subclasses__()`,
  frames and globals), and the attributes without one that lead to the same places: the
  standard library's modules that other modules hold (`typing.sys`, `np.ma.core.builtins`),
  frames, tracebacks and code objects (`gen.gi_frame.f_back`), and the evaluators of string
  annotations (`typing.get_type_hints`, `functools.singledispatch`: eval in disguise);
- file readers and writers on any object (`np.rec.fromfile`, `np.memmap`, `x.tofile`,
  `torch.UntypedStorage.from_file`), and numpy's file, pointer and build APIs anywhere under
  numpy (`np.load`, `np.ma.core.np.load`; NKI's own `nl.load` stays allowed);
- assigning to or deleting any attribute: a kernel writes tensors, never another object's
  attributes (that is how a module, a timer or `torch.cuda.synchronize` gets patched);
- defining `__torch_function__` or `__torch_dispatch__` (a tensor subclass that answers the
  harness's own torch calls, or defers work past the timer);
- using an imported module other than as `module.<name>`: a module held in a variable hides
  its attributes from the check.

Triton kernels (the `triton` dialect) may import torch and triton instead of NKI; torch's and
triton's doors to files, other processes, foreign code, other streams, global state and the
autotuner are refused by their full dotted path. Outside @triton.jit functions, torch may
only allocate, view and query tensors (TORCH_ALLOWED, and no compute method or `@`) unless
the task allows torch compute; the kernel child checks the same at run time, op by op
(nkibench.backends.triton.torch_guard).

NKI kernels may not touch nkisim's own storage behind a tensor (`.data`, `.alloc`...): that
would compute with NumPy beside the simulator, which then counts no instruction.

A list of names can never be complete (typing holds `re`, which holds `enum`, which holds
builtins as `bltns`), so the kernel's child runs check_resolved too, before any kernel code:
every attribute chain on an imported module is followed on the real modules, and a chain that
reaches a module outside the dialect's packages, or numpy's file functions from anywhere, or
nkisim's own internals, is refused ("rejected") there.

Python reads attributes by name without an `ast.Attribute` in more places than `.name`; each
is held to the same rules, or refused where the name cannot be seen (the parsing is in
nkibench.sandbox.named_reads):

- class patterns: `case object(__self__=b)` is `b = subject.__self__` (and `print.__self__` is
  the builtins module), so every keyword of a class pattern passes the checks of `.name`, and
  numpy's file functions' and the refused builtins' names too (`object(exec=run)`: the subject
  is never a path the check can follow; check_resolved follows a pattern on an imported
  module's chain). Positional sub-patterns (`case C(a, b)`)
  read the attributes `C.__match_args__` lists, which the source does not show (a kernel's
  class may list `"__self__"`, a library's dataclass its internals, and a metaclass's
  `__instancecheck__` lets any subject in): they are refused except on the builtin types that
  match themselves (`case int(n)`, no attribute read), where the kernel does not rebind the
  type's name. Kernels name the attributes instead: `case Tile(rows=r)`.
- mapping patterns, subscripts and format fields read entries by key: a key that names a
  namespace's entry (a dunder, or a name the kernel may not use: `{"__builtins__": b}`,
  `g["exec"]`) is refused. A kernel reaches no namespace mapping (globals, `__dict__`,
  `f_globals` are refused names), so this is a second line, with a message that says why.
- format templates: `"{0.__class__.__mro__}".format(x)` reads attributes by the names in the
  template. A literal template's fields are parsed with str.format's own parser: attribute
  fields are refused (an f-string says the same, and its expressions are checked nodes), entry
  fields go through the key rule. `.format` / `.format_map` / `str.format` on a template that
  is not a literal is refused: it cannot be read. `format(value, spec)` takes a spec, not a
  template (no field lookup), and `"%(key)s" % mapping` reads entries by key, never
  attributes, and gives back text: both stay allowed.
- `hasattr(x, "name")` reads the attribute (it runs a property's getter, and answers whether
  a door exists): its name must be a literal and passes the checks of `.name`.
- `functools.update_wrapper` (and `wraps` with `assigned=` / `updated=`) reads attributes of
  one object and writes them on another, by names in strings: with a property named
  `__globals__` on a kernel's class, `update_wrapper(sink, typing.cast, ("__globals__",))`
  hands the kernel typing's globals, and their `__builtins__`. `update_wrapper` is refused;
  `functools.wraps` only as `@functools.wraps(fn)` on a def (then it reads `fn`'s name and
  doc and writes them on the kernel's own function). `operator.attrgetter` / `methodcaller`
  and `inspect.getattr_static` are refused by name (their modules cannot be imported or
  reached either).
- hooks that make a kernel's object answer a library's own calls on it, or hand it the other
  operands (the harness's own arrays): `__torch_function__`, `__torch_dispatch__`,
  `__array__`, `__array_ufunc__`, `__array_function__` and the rest of OBJECT_HOOKS are
  refused under any binding (def, class attribute, pattern capture, import alias), as a
  namespace's key (`{"__torch_function__": f}`, `dict(__torch_function__=f)`), and the
  three-argument `type(name, bases, namespace)` is refused: the class statement is the form
  the check reads.

Looked at and left allowed, with why:

- `type(x)` is `x.__class__`; what a class offers without underscores (`.mro()`, its methods)
  leads nowhere new, and building a function or code object needs `__code__`, `gi_code` or
  `compile`, all refused. (`type(x)(name, bases, ns)`, or `type` under another name, calls a
  metaclass the check cannot name: a class built that way escapes the hook rule, not the
  attribute rules.)
- `dir(x)` and `str.join` over it: names only, as text; turning a name into a value needs
  getattr, vars, a format field or update_wrapper, all refused.
- `__getattr__` / `__getattribute__` / descriptors (`__get__`, `__set_name__`),
  `__init_subclass__`, `__class_getitem__`, metaclasses, `super()`: they run the kernel's own
  code on the kernel's own classes and objects; the reads inside are `.name` nodes the check
  sees (`super().__getattribute__` is an underscore name).
- dunders the harness may call on a returned object (`__eq__`, `__float__`, `__index__`,
  `__len__`, `__bool__`): they can lie, but only inside the kernel's own process, whose results
  the trusted side never believes (outputs are read as data); NKI 0.7's configuration classes
  define `__eq__` and `__init__` legitimately.
- the walrus binds a Name (checked as any Name); decorators receive the kernel's own
  functions; `typing.final` / `no_type_check` / `dataclass_transform` / `runtime_checkable`
  write fixed flag attributes, and a runtime-checkable Protocol's isinstance answers booleans.
- `copy`, `pickle`, `copyreg`, `dataclasses` (`fields`, `asdict`), `operator`, `inspect`,
  `string` (`Formatter`, `Template`) cannot be imported by any dialect (dialects.py), and as
  another module's attribute they are refused by name (FORBIDDEN_MODULE_ATTRIBUTES) or, in the
  kernel's child, by check_resolved; `__reduce_ex__` and `__deepcopy__` are underscore names.
"""

from __future__ import annotations

import ast
import importlib
import types
from dataclasses import dataclass

from nkibench.dialects import IMPORT_ROOTS, get_dialect
from nkibench.errors import ErrorKind, KernelError
from nkibench.sandbox.attributes import guarded_targets
from nkibench.sandbox.named_reads import (
    MATCH_SELF_TYPES,
    binder_names,
    bound_names,
    pattern_chains,
    template_reads,
)

__all__ = [
    "FORBIDDEN_ATTRIBUTES",
    "FORBIDDEN_MODULE_ATTRIBUTES",
    "FORBIDDEN_NAMES",
    "FORBIDDEN_NUMPY_ATTRIBUTES",
    "FORBIDDEN_PATHS",
    "INTROSPECTION_ATTRIBUTES",
    "NKISIM_INTERNALS",
    "OBJECT_HOOKS",
    "TENSOR_COMPUTE_METHODS",
    "TORCH_ALLOWED",
    "Violation",
    "check_resolved",
    "check_source",
    "module_allowed",
    "violation_kind",
]

FORBIDDEN_PATHS = (
    # files, pickles, processes, foreign code, global state of the process
    "torch.load",
    "torch.save",
    "torch.from_file",
    "torch.serialization",
    "torch.hub",
    "torch.utils",
    "torch.library",
    "torch.ops",
    "torch.classes",
    "torch.package",
    "torch.multiprocessing",
    "torch.distributed",
    "torch.jit",
    "torch.compile",
    "torch.compiler",
    "torch.fx",
    "torch.export",
    "torch.onnx",
    "torch.profiler",
    "torch.autograd",
    "torch.overrides",
    "torch.testing",
    "torch.futures",
    "torch.backends",
    "torch.use_deterministic_algorithms",
    "torch.set_default_device",
    "torch.set_default_dtype",
    "torch.set_rng_state",
    "torch.cuda.set_device",
    "torch.manual_seed",
    "torch.seed",
    "torch.random",
    "torch.cuda.manual_seed",
    "torch.cuda.memory",
    "torch.cuda.empty_cache",
    "torch.cuda.jiterator",
    "torch.cuda.tunable",
    "torch.cuda.profiler",
    # work outside the stream the harness times
    "torch.cuda.Stream",
    "torch.cuda.stream",
    "torch.cuda.set_stream",
    "torch.cuda.streams",
    "torch.cuda.ExternalStream",
    "torch.cuda.graph",
    "torch.cuda.graphs",
    "torch.cuda.CUDAGraph",
    "torch.cuda.Event",
    "torch.cuda.synchronize",
    "torch.Stream",
    "torch.accelerator",
    "torch.get_device_module",
    # the compiler's and the runtime's internals, the autotuner (timing runs of its own)
    "triton.runtime",
    "triton.compiler",
    "triton.testing",
    "triton.tools",
    "triton.backends",
    "triton.knobs",
    "triton.autotune",
    "triton.Config",
    "triton.heuristics",
    # removed from Triton 3.9 (say so before the kernel fails on the GPU host)
    "triton.language.make_block_ptr",
    "triton.language.advance",
    "triton.language.make_tensor_descriptor",
)
"""Refused with everything under them. Besides these, any `torch.<...>.set_*` is refused (torch's
global state: default device and dtype, threads, precision, the current stream)."""

TORCH_ALLOWED = frozenset(
    {
        # allocation
        "torch.empty",
        "torch.empty_like",
        "torch.empty_strided",
        "torch.zeros",
        "torch.zeros_like",
        "torch.ones",
        "torch.ones_like",
        "torch.full",
        "torch.full_like",
        # types and dtypes
        "torch.Tensor",
        "torch.Size",
        "torch.dtype",
        "torch.device",
        "torch.finfo",
        "torch.iinfo",
        "torch.float32",
        "torch.float",
        "torch.float16",
        "torch.half",
        "torch.bfloat16",
        "torch.float64",
        "torch.double",
        "torch.float8_e4m3fn",
        "torch.float8_e5m2",
        "torch.int8",
        "torch.int16",
        "torch.int32",
        "torch.int",
        "torch.int64",
        "torch.long",
        "torch.uint8",
        "torch.bool",
        # queries
        "torch.is_tensor",
        "torch.is_floating_point",
        "torch.numel",
        "torch.no_grad",
        "torch.cuda.is_available",
        "torch.cuda.current_device",
        "torch.cuda.device_count",
        "torch.cuda.get_device_properties",
        "torch.cuda.get_device_capability",
        "torch.cuda.get_device_name",
    }
)
"""What a Triton task's run() may use of the torch module unless the task allows torch compute:
allocation, types and queries. Tensor methods that view and query (`.view`, `.reshape`,
`.contiguous`, `.stride()`, `.shape`, `.numel()`...) are not listed: on an unknown object the
check refuses compute methods by name instead (TENSOR_COMPUTE_METHODS), and the kernel child
refuses every aten op outside its allowed set at run time."""


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_TENSOR_COMPUTE = _words(
    # element-wise math
    "abs absolute acos acosh asin asinh atan atan2 atanh ceil clamp clamp_max clamp_min clip "
    "cos cosh erf erfc erfinv exp exp2 expm1 floor frac lerp lgamma log log10 log1p log2 logit "
    "nan_to_num neg negative pow reciprocal relu round rsqrt sigmoid sign sin sinh sqrt square "
    "tan tanh trunc "
    # arithmetic
    "add sub subtract mul multiply div divide true_divide floor_divide fmod remainder addcmul "
    "addcdiv hypot maximum minimum fmax fmin logaddexp "
    # matmuls
    "matmul mm bmm mv dot vdot addmm addbmm baddbmm addmv addr outer inner kron "
    # reductions and normalisations
    "sum mean prod max min amax amin aminmax argmax argmin std var norm logsumexp cumsum "
    "cumprod cummax cummin all any nansum nanmean median quantile count_nonzero softmax "
    "log_softmax topk kthvalue "
    # comparisons and selection
    "eq ne lt le gt ge greater less isclose isnan isinf isfinite equal allclose where "
    "masked_fill masked_scatter masked_select gather scatter scatter_add scatter_reduce "
    "index_select index_add index_copy index_fill index_put put take take_along_dim nonzero "
    "bitwise_and bitwise_or bitwise_xor bitwise_not logical_and logical_or logical_xor "
    "logical_not "
    # new data from old
    "repeat repeat_interleave tile flip roll rot90 tril triu "
    # casts, and tensor data read on the host
    "to type type_as float double half bfloat16 int long short bool byte char cpu cuda numpy "
    "tolist item "
    # in place only
    "fill_ zero_ copy_ set_ uniform_ normal_ random_ bernoulli_ exponential_"
)
TENSOR_COMPUTE_METHODS = frozenset(
    {*_TENSOR_COMPUTE, *(f"{n}_" for n in _TENSOR_COMPUTE if not n.endswith("_"))}
)
"""Tensor methods that compute (or read tensor data on the host), refused by name outside
@triton.jit functions unless the task allows torch compute. (Triton's own tensors have some of
these names, e.g. `x.to(tl.float32)`: the check leaves @triton.jit bodies alone.)"""
TORCH_COMPUTE_HINT = (
    "a Triton task's run() may use torch only to allocate, view and query tensors; compute in "
    "a @triton.jit kernel (or set allow_torch_compute = true in task.toml)"
)

FORBIDDEN_NAMES = frozenset(
    {
        "__import__",
        "__builtins__",
        "__loader__",
        "__spec__",
        "open",
        "eval",
        "exec",
        "compile",
        "globals",
        "locals",
        "vars",
        "getattr",
        "setattr",
        "delattr",
        "input",
        "breakpoint",
        "help",
        "exit",
        "quit",
        "memoryview",
    }
)

# numpy's ways to files, pickles, pointers, foreign code and its own build: refused anywhere
# under numpy (`np.load`, `np.ma.core.np.load`), but not elsewhere (NKI has nl.load)
FORBIDDEN_NUMPY_ATTRIBUTES = frozenset(
    {
        "load",
        "save",
        "savez",
        "savez_compressed",
        "savetxt",
        "ctypeslib",
        "lib",
        "testing",
        "f2py",
        "distutils",
        "show_config",
        "show_runtime",
        "get_include",
    }
)
# methods and functions reaching files, raw pointers or code from a string: refused on any
# object (np.rec.fromfile, np.core.records.fromfile, torch.UntypedStorage.from_file, the
# evaluators of string annotations...)
FORBIDDEN_ATTRIBUTES = frozenset(
    {
        "tofile",
        "dump",
        "dumps",
        "ctypes",
        "open_memmap",
        "fromfile",
        "fromregex",
        "fromtextfile",
        "genfromtxt",
        "loadtxt",
        "memmap",
        "DataSource",
        "from_file",
        # typing's and functools' evaluators of string annotations: eval() in disguise
        "get_type_hints",
        "singledispatch",
        "singledispatchmethod",
        "evaluate_forward_ref",
    }
)
# frames, tracebacks, generators' and coroutines' frames, code objects: the way from a kernel's
# frame to the harness's frames, their locals and their unrestricted builtins
INTROSPECTION_ATTRIBUTES = frozenset(
    {
        "gi_frame",
        "gi_code",
        "gi_yieldfrom",
        "cr_frame",
        "cr_code",
        "cr_await",
        "ag_frame",
        "ag_code",
        "f_back",
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_code",
        "ag_await",
        "tb_frame",
        "tb_next",
        "co_code",
    }
)
# the standard library's modules that reach the process, files, the network, other objects by
# name or the interpreter's state; other modules hold them as attributes (`typing.sys`,
# `np.ma.core.builtins`, `torch.os`), so they are refused as an attribute of anything
FORBIDDEN_MODULE_ATTRIBUTES = frozenset(
    _words(
        "sys os posix nt posixpath ntpath genericpath builtins subprocess importlib imp pkgutil "
        "runpy zipimport gc inspect types operator ctypes socket socketserver ssl selectors "
        "asyncio asynchat asyncore concurrent threading multiprocessing signal faulthandler "
        "atexit io pathlib shutil tempfile glob fileinput filecmp linecache tokenize codecs mmap "
        "pickle pickletools marshal shelve dbm sqlite3 copyreg traceback tracemalloc weakref "
        "logging resource fcntl termios pty tty pwd grp getpass platform sysconfig site code "
        "codeop pdb bdb dis cProfile profile pstats zipfile tarfile gzip bz2 lzma urllib http "
        "ftplib smtplib poplib imaplib telnetlib webbrowser xmlrpc string unittest doctest pydoc "
        "distutils"
    )
)
NKISIM_INTERNALS = frozenset(
    {"data", "alloc", "box", "dims", "producer", "valid", "base", "arrays"}
)
"""nkisim's storage and bookkeeping behind an NKI tensor (not part of NKI): refused in NKI
kernels, which would otherwise compute with NumPy where the simulator counts nothing."""
# functions that read (and write) attributes by names given as strings: getattr by another name
BY_NAME_ATTRIBUTES = frozenset({"update_wrapper", "attrgetter", "methodcaller", "getattr_static"})
TENSOR_HOOKS = frozenset({"__torch_function__", "__torch_dispatch__"})
ARRAY_HOOKS = frozenset(
    _words(
        "__array__ __array_ufunc__ __array_function__ __array_wrap__ __array_prepare__ "
        "__array_finalize__ __array_priority__ __array_interface__ __array_struct__ "
        "__cuda_array_interface__ __dlpack__ __dlpack_device__"
    )
)
OBJECT_HOOKS = TENSOR_HOOKS | ARRAY_HOOKS
"""Names a kernel may not define in any form: a tensor subclass that intercepts torch calls, or
an object that numpy (or torch, or DLPack) asks for its data or hands the other operands of
its own calls, answers the harness's checks itself, sees the harness's arrays, or defers work
past the timer."""
FORMAT_METHODS = frozenset({"format", "format_map"})


@dataclass(frozen=True)
class Violation:
    line: int
    problem: str

    def render(self, filename: str) -> str:
        return f"{filename} line {self.line}: {self.problem}"


def module_allowed(name: str, dialect_name: str) -> bool:
    return name in get_dialect(dialect_name).allowed_modules


def _forbidden_path(path: str) -> str | None:
    for forbidden in FORBIDDEN_PATHS:
        if path == forbidden or path.startswith(forbidden + "."):
            return forbidden
    return None


def _global_setter(path: str) -> bool:
    """`torch.set_default_dtype`, `torch.cuda.set_sync_debug_mode`...: global state."""
    parts = path.split(".")
    return parts[0] in ("torch", "triton") and parts[-1].startswith("set_")


def _attribute_problem(name: str, dialect: str) -> str | None:
    """What is wrong with `.name` on any object (None: nothing)."""
    if name.startswith("_"):
        return f"attribute `.{name}` is not allowed (no underscore names)"
    if name in FORBIDDEN_ATTRIBUTES:
        return f"`.{name}` (files, pickles, pointers or code from text) is not allowed"
    if name in INTROSPECTION_ATTRIBUTES:
        return (
            f"`.{name}` (frames, tracebacks and code objects) is not allowed: a kernel may not "
            "inspect the interpreter"
        )
    if name in BY_NAME_ATTRIBUTES:
        return (
            f"`.{name}` reads (or writes) attributes by names in strings, out of the check's "
            "sight: name the attribute in the source (`x.shape`)"
        )
    if name in FORBIDDEN_MODULE_ATTRIBUTES:
        return f"`.{name}` is the standard library's {name} module, which a kernel may not use"
    if dialect != "triton" and name in NKISIM_INTERNALS:
        return (
            f"`.{name}` is nkisim's own storage behind a tensor, not NKI: move data with "
            "nl.load / nl.store (or nisa.dma_copy) and compute with nl.* / nisa.*"
        )
    return None


def _string(node: ast.expr) -> str | None:
    """A string literal's value (None: anything else)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _key_problem(key: str | int | None) -> str | None:
    """What is wrong with reading or writing the entry `key` of a mapping (a subscript, a mapping
    pattern, a format field): a dunder or a name the kernel may not use is a namespace's entry
    (a module's globals, the builtins), never kernel data. (None, a number: nothing.)"""
    if isinstance(key, str) and (key.startswith("__") or key in FORBIDDEN_NAMES):
        return (
            f"the key {key!r} is an entry of a namespace (a module's globals, the builtins), "
            "which a kernel may not read or write"
        )
    return None


def _hook_problem(name: str) -> str | None:
    if name in TENSOR_HOOKS:
        return (
            f"defining `{name}` is not allowed: a tensor subclass that intercepts torch calls "
            "answers the harness's checks itself (or defers work past the timer)"
        )
    if name in ARRAY_HOOKS:
        return (
            f"defining `{name}` is not allowed: an object that numpy (or torch) asks for its "
            "data, or hands the other operands of its own calls, answers the harness's checks "
            "itself and sees the harness's arrays"
        )
    return None


class _Checker(ast.NodeVisitor):
    def __init__(
        self,
        dialect: str,
        aliases: dict[str, str],
        modules: dict[str, str],
        jit_names: frozenset[str],
        torch_compute: bool,
        *,
        tree: ast.Module,
    ) -> None:
        self.violations: list[Violation] = []
        self.dialect = dialect
        self.aliases = aliases
        """Names bound to guarded modules → the module's dotted name."""
        self.modules = modules
        """Names bound to any imported module → its dotted name (paths on them are modules')."""
        self.jit_names = jit_names
        """Decorator paths that make a @triton.jit function."""
        self.torch_compute = torch_compute or dialect != "triton"
        """Whether torch may compute outside @triton.jit functions."""
        self._receivers: set[int] = set()
        self._jit_depth = 0
        self._object_writes: set[int] = set()
        """Attribute targets the loader guards (nkibench.sandbox.attributes), where the
        dialect lets kernels set attributes on their own objects."""
        self._objects = get_dialect(dialect).object_base is not None
        self._bound = bound_names(tree)
        """Every name the kernel binds (`int` among them is not the builtin)."""
        self._imported = _import_bindings(tree)
        self._format_templates: dict[int, str] = {}
        """`str.format` attributes called with a literal template → the template."""
        self._seen_calls: set[int] = set()
        """`hasattr` names called with a literal name, `functools.wraps` paths used as a plain
        decorator: checked at their call, allowed where they are visited."""

    def visit(self, node: ast.AST) -> None:
        for name in binder_names(node):  # a Name's own store is checked in visit_Name
            if name in FORBIDDEN_NAMES:
                self._flag(node, f"`{name}` is not allowed in a kernel")
            elif problem := _hook_problem(name):
                self._flag(node, problem)
        super().visit(node)

    def _builtin(self, node: ast.expr, name: str) -> bool:
        """`node` is the builtin `name` (a Name the kernel never rebinds)."""
        return isinstance(node, ast.Name) and node.id == name and name not in self._bound

    def _computes(self, name: str) -> bool:
        """`.name` is a torch compute method, where that is refused."""
        return not self.torch_compute and not self._jit_depth and name in TENSOR_COMPUTE_METHODS

    def _read_problem(self, name: str) -> str | None:
        """What is wrong with reading `name` from an object the source does not name (a
        pattern's subject, hasattr's first argument): the checks of `.name` on an unknown
        object, numpy's file functions too, since no path says it is not numpy, and the builtins
        a kernel may not use (`case object(exec=run)` on a module that holds them)."""
        problem = _attribute_problem(name, self.dialect)
        if problem is None and name in FORBIDDEN_NAMES:
            problem = f"`{name}` is not allowed in a kernel"
        if problem is None and name in FORBIDDEN_NUMPY_ATTRIBUTES:
            problem = f"`.{name}` (files, pickles or pointers) is not allowed"
        if problem is None and self._computes(name):
            problem = (
                f"`.{name}` computes with PyTorch outside a @triton.jit kernel: "
                f"{TORCH_COMPUTE_HINT}"
            )
        return problem

    def _flag(self, node: ast.AST, problem: str) -> None:
        self.violations.append(Violation(getattr(node, "lineno", 0), problem))

    def _refuse_import(self, node: ast.AST, name: str, what: str) -> None:
        other = IMPORT_ROOTS.get(name.partition(".")[0])
        if other is not None and other != self.dialect:
            language = get_dialect(self.dialect).language
            self._flag(
                node,
                f"{what} {name!r} mixes {get_dialect(other).language} into a {language} "
                f"kernel ({self.dialect}); write it in one dialect",
            )
        else:
            self._flag(node, f"{what} {name!r} is not allowed")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if not module_allowed(alias.name, self.dialect):
                self._refuse_import(node, alias.name, "import of")
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self._flag(node, "relative imports are not allowed")
        elif node.module is None:
            self._flag(node, "import from None is not allowed")
        elif not module_allowed(node.module, self.dialect):
            self._refuse_import(node, node.module, "import from")
        else:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                numpy_io = node.module == "numpy" and alias.name in FORBIDDEN_NUMPY_ATTRIBUTES
                if alias.name == "*":
                    self._flag(node, "`import *` is not allowed")
                elif (
                    numpy_io
                    or _forbidden_path(full)
                    or _attribute_problem(alias.name, self.dialect)
                    or self._torch_refused(full)
                ):
                    self._flag(node, f"import of {full!r} is not allowed")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        hook = _hook_problem(node.id) if isinstance(node.ctx, ast.Store) else None
        if node.id in FORBIDDEN_NAMES:
            self._flag(node, f"`{node.id}` is not allowed in a kernel")
        elif hook:
            self._flag(node, hook)
        elif node.id == "hasattr" and id(node) not in self._seen_calls:
            self._flag(
                node,
                "`hasattr` needs the attribute's name as a string literal "
                '(`hasattr(x, "shape")`): a computed name is out of the check\'s sight',
            )
        elif self._imported.get(node.id) == ("functools", "wraps"):
            self._wraps(node)
        elif (
            node.id in self.aliases
            and id(node) not in self._receivers
            and not isinstance(node.ctx, ast.Store)
        ):
            module = self.aliases[node.id]
            self._flag(
                node, f"the {module} module `{node.id}` may only be used as {node.id}.<name>"
            )
        self.generic_visit(node)

    def _dotted(self, node: ast.Attribute, names: dict[str, str]) -> str | None:
        """`tl.make_block_ptr` → "triton.language.make_block_ptr" (None: not on a module)."""
        parts = [node.attr]
        value = node.value
        while isinstance(value, ast.Attribute):
            parts.append(value.attr)
            value = value.value
        if isinstance(value, ast.Name) and value.id in names:
            return ".".join([names[value.id], *reversed(parts)])
        return None

    def _torch_refused(self, path: str) -> bool:
        """A torch path outside the allocation, view and query set, where that matters."""
        root = path.split(".", maxsplit=1)[0]
        return not self.torch_compute and root == "torch" and path not in TORCH_ALLOWED

    def visit_Attribute(self, node: ast.Attribute) -> None:
        inner = id(node) in self._receivers  # the outer attribute of its chain checks the path
        self._receivers.add(id(node.value))
        path = self._dotted(node, self.aliases)
        forbidden = _forbidden_path(path) if path else None
        numpy_path = path is not None and path.split(".")[0] == "numpy"
        problem = _attribute_problem(node.attr, self.dialect)
        writable = (
            id(node) in self._object_writes
            and isinstance(node.value, ast.Name)
            and node.value.id not in self.modules
        )
        if isinstance(node.ctx, ast.Store | ast.Del) and not writable:
            target = path or ast.unparse(node)
            self._flag(
                node,
                f"`{target}` may not be replaced: a kernel writes tensors, never the attributes "
                "of modules or other objects (that is how modules and timers get patched)",
            )
        elif forbidden and path == forbidden:
            self._flag(node, f"`{forbidden}` is not allowed in a kernel")
        elif problem:
            self._flag(node, problem)
        elif numpy_path and node.attr in FORBIDDEN_NUMPY_ATTRIBUTES:
            self._flag(node, f"`.{node.attr}` (files, pickles or pointers) is not allowed")
        elif path and not forbidden and not inner and _global_setter(path):
            self._flag(node, f"`{path}` changes torch's or triton's global state")
        elif path and not forbidden and not inner and self._torch_refused(path):
            self._flag(node, f"`{path}` is not an allocation, view or query: {TORCH_COMPUTE_HINT}")
        elif self._computes(node.attr) and self._dotted(node, self.modules) is None:
            self._flag(
                node,
                f"`.{node.attr}` computes with PyTorch outside a @triton.jit kernel: "
                f"{TORCH_COMPUTE_HINT}",
            )
        if node.attr in FORMAT_METHODS:
            self._format_method(node)
        if path == "functools.wraps":
            self._wraps(node)
        self.generic_visit(node)

    def _wraps(self, node: ast.expr) -> None:
        if id(node) not in self._seen_calls:
            self._flag(
                node,
                "`functools.wraps` is allowed only as a def's decorator with the wrapped "
                "function alone (`@functools.wraps(fn)`): otherwise it reads attributes of one "
                "object and writes them on another by names in strings (`assigned`, `updated`)",
            )

    def _format_method(self, node: ast.Attribute) -> None:
        """`template.format(...)` / `.format_map(...)` / `str.format(template, ...)`."""
        template = _string(node.value)
        if template is None and self._builtin(node.value, "str"):
            template = self._format_templates.get(id(node))
        if template is None:
            self._flag(
                node,
                f"`.{node.attr}` on a template the check cannot read: its fields (`{{0.name}}`) "
                "read attributes by name; write an f-string, whose expressions the check reads",
            )
            return
        try:
            reads = template_reads(template)
        except ValueError as e:
            self._flag(node, f"a format template the check cannot read ({e}): {template!r}")
            return
        for read in reads:
            if read.attribute:
                self._flag(
                    node,
                    f"the format field `{{{read.field}}}` reads the attribute `.{read.name}` by "
                    'name, out of the check\'s sight: write an f-string (f"{x.shape}"), whose '
                    "expressions the check reads",
                )
            elif problem := _key_problem(read.name):
                self._flag(node, f"{problem} (the format field `{{{read.field}}}`)")

    def visit_Call(self, node: ast.Call) -> None:
        func, args = node.func, node.args
        plain = not node.keywords and not any(isinstance(a, ast.Starred) for a in args)
        literal = [_string(a) for a in args]
        if isinstance(func, ast.Attribute) and func.attr in FORMAT_METHODS and args:
            if literal[0] is not None:  # str.format(template, ...)
                self._format_templates[id(func)] = literal[0]
        elif isinstance(func, ast.Name) and func.id == "hasattr":
            name = literal[1] if plain and len(args) == 2 else None
            if name is not None:
                self._seen_calls.add(id(func))
                if problem := self._read_problem(name):
                    self._flag(node, f"{problem} (read by hasattr)")
        elif isinstance(func, ast.Name) and func.id == "type" and not (plain and len(args) == 1):
            # by name, rebound or not (`type = type` would hide the builtin otherwise)
            self._flag(
                node,
                "`type(name, bases, namespace)` builds a class from a namespace the check "
                "cannot read: write a class statement",
            )
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        # a hook's name as a string: a class namespace's key (a metaclass's, a dict handed to
        # a class factory), the one spelling of a definition that is not a binding
        if isinstance(node.value, str) and (problem := _hook_problem(node.value)):
            self._flag(node, problem)

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg is not None and (problem := _hook_problem(node.arg)):
            self._flag(node, problem)  # dict(__array_function__=f)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if problem := _key_problem(_string(node.slice)):
            self._flag(node, problem)
        self.generic_visit(node)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        # `case {"exec": f}` calls subject.get("exec"): an entry read, like a subscript
        for key in node.keys:
            if problem := _key_problem(_string(key)):
                self._flag(node, f"{problem} (read by a mapping pattern)")
        self.generic_visit(node)

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        cls = ast.unparse(node.cls)
        for name in node.kwd_attrs:  # `case C(name=p)` reads subject.name
            if problem := self._read_problem(name):
                self._flag(node, f"{problem} (read by the class pattern `{cls}({name}=...)`)")
        if node.patterns and not any(self._builtin(node.cls, t) for t in MATCH_SELF_TYPES):
            self._flag(
                node,
                f"the positional sub-patterns of `case {cls}(...)` read the attributes that "
                f"{cls}.__match_args__ lists, which the check cannot see: name them "
                f"(`case {cls}(rows=r)`); only a builtin type that matches itself takes one "
                "(`case int(n)`)",
            )
        self.generic_visit(node)

    def _matmul(self, node: ast.BinOp | ast.AugAssign) -> None:
        if not self.torch_compute and not self._jit_depth and isinstance(node.op, ast.MatMult):
            self._flag(
                node,
                f"`@` is a PyTorch matmul outside a @triton.jit kernel: {TORCH_COMPUTE_HINT}",
            )

    def visit_BinOp(self, node: ast.BinOp) -> None:
        # `"%(key)s" % mapping` reads entries by key (mapping[key]) and never attributes, and
        # gives back text: unlike a str.format template, it reaches no other object
        self._matmul(node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._matmul(node)
        self._note_object_writes(node)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        self._note_object_writes(node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._note_object_writes(node)
        self.generic_visit(node)

    def _note_object_writes(self, node: ast.stmt) -> None:
        if self._objects:
            self._object_writes.update(id(t) for t in guarded_targets(node))

    def _is_jit(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if isinstance(target, ast.Name) and target.id in self.jit_names:
                return True
            if isinstance(target, ast.Attribute) and self._dotted(target, self.modules) in (
                "triton.jit",
            ):
                return True
        return False

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._function(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        # its name and parameters: visit's binder check (FORBIDDEN_NAMES, OBJECT_HOOKS)
        for decorator in node.decorator_list:  # `@functools.wraps(fn)`: the def is the wrapper
            if (
                isinstance(decorator, ast.Call)
                and len(decorator.args) == 1
                and not isinstance(decorator.args[0], ast.Starred)
                and not decorator.keywords
            ):
                self._seen_calls.add(id(decorator.func))
        jit = self._is_jit(node)
        self._jit_depth += jit
        self.generic_visit(node)
        self._jit_depth -= jit


def _module_aliases(tree: ast.Module, modules: tuple[str, ...]) -> dict[str, str]:
    """Names bound to the given modules: `import torch`, `import triton.language as tl`,
    `from triton import language as tl`."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in modules:
                    # `import triton.language` binds `triton`; `import ... as x`, the module
                    root = a.name.split(".")[0]
                    aliases[a.asname or root] = a.name if a.asname else root
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                if full in modules:
                    aliases[a.asname or a.name] = full
    return aliases


def _jit_names(tree: ast.Module) -> frozenset[str]:
    """Names bound to triton.jit by `from triton import jit [as x]`."""
    return frozenset(
        a.asname or a.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "triton" and not node.level
        for a in node.names
        if a.name == "jit"
    )


def violation_kind(violations: list[Violation]) -> ErrorKind:
    """A syntax error is a compile failure; anything else the check finds is a rejection."""
    return (
        "compile" if violations and violations[0].problem.startswith("SyntaxError") else "rejected"
    )


def check_source(
    source: str, filename: str, dialect: str, *, torch_compute: bool = False
) -> list[Violation]:
    """The violations of the allow-list in a kernel's source (empty: allowed).

    `torch_compute`: the task lets a Triton kernel's run() compute with PyTorch
    (task.toml's allow_torch_compute). A syntax error is reported as a violation too, so
    callers get one list to show.
    """
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as e:
        return [Violation(e.lineno or 0, f"SyntaxError: {e.msg}")]
    record = get_dialect(dialect)
    checker = _Checker(
        dialect,
        _module_aliases(tree, record.guarded_modules),
        _module_aliases(tree, record.allowed_modules),
        _jit_names(tree),
        torch_compute,
        tree=tree,
    )
    checker.visit(tree)
    return checker.violations


def _reachable_module(name: str, dialect: str) -> bool:
    """A module a kernel of `dialect` may reach through attributes: one it may import, or one
    inside the dialect's packages."""
    record = get_dialect(dialect)
    return name in record.allowed_modules or any(
        name == root or name.startswith(root + ".") for root in record.package_roots
    )


def _import_bindings(tree: ast.Module) -> dict[str, tuple[str, str | None]]:
    """Names bound by imports → (module, attribute or None)."""
    bound: dict[str, tuple[str, str | None]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    bound[a.asname] = (a.name, None)
                else:
                    bound[a.name.split(".")[0]] = (a.name.split(".")[0], None)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                if a.name != "*":
                    bound[a.asname or a.name] = (node.module, a.name)
    return bound


class _Resolver:
    """Follows attribute chains on the real modules (inside the kernel's child only)."""

    def __init__(self, dialect: str, torch_compute: bool) -> None:
        self.dialect = dialect
        self.torch_compute = torch_compute or dialect != "triton"
        self.violations: list[Violation] = []

    def step(self, node: ast.AST, holder: object, path: str, attr: str, written: str) -> object:
        """`holder.attr` (holder's canonical path `path`), or raises _Stop after a violation
        or where the chain cannot be followed without running the kernel."""
        full = f"{path}.{attr}"
        on_numpy = isinstance(holder, types.ModuleType) and holder.__name__.startswith("numpy")
        if on_numpy and attr in FORBIDDEN_NUMPY_ATTRIBUTES:
            return self.refuse(node, f"`{written}` is numpy's {attr} (files, pickles or pointers)")
        try:
            value = getattr(holder, attr)
        except KernelError as e:
            if e.kind == "rejected":
                return self.refuse(node, e.message)
            raise _Stop from None
        except Exception:
            raise _Stop from None  # running it raises the same, with the kernel's line
        if isinstance(value, types.ModuleType):
            if not _reachable_module(value.__name__, self.dialect):
                return self.refuse(
                    node, f"`{written}` is the module {value.__name__}, which a kernel may not use"
                )
            full = value.__name__
        forbidden = _forbidden_path(full)
        if forbidden or _global_setter(full):
            return self.refuse(node, f"`{written}` is {full}, which a kernel may not use")
        return value

    def follow(
        self, node: ast.AST, roots: dict[str, tuple[object, str]], expression: ast.expr
    ) -> tuple[object, str, str]:
        """An attribute chain on an imported module (`nl.tile.shape`) followed to its value:
        (value, canonical path, the chain as written); _Stop where it is refused, cannot be
        followed, or is not such a chain."""
        chain: list[str] = []
        value = expression
        while isinstance(value, ast.Attribute):
            chain.append(value.attr)
            value = value.value
        if not (isinstance(value, ast.Name) and value.id in roots):
            raise _Stop
        holder, path = roots[value.id]
        written = value.id
        for attr in reversed(chain):
            written = f"{written}.{attr}"
            holder = self.step(node, holder, path, attr, written)
            path = _canonical(holder, f"{path}.{attr}")
        return holder, path, written

    def refuse(self, node: ast.AST, problem: str) -> object:
        self.violations.append(Violation(getattr(node, "lineno", 0), problem))
        raise _Stop

    def root(self, node: ast.AST, name: str, module: str, attr: str | None) -> tuple[object, str]:
        try:
            value: object = importlib.import_module(module)
        except Exception:
            raise _Stop from None
        if attr is None:
            return value, module
        return self.step(node, value, module, attr, f"{module}.{attr}"), f"{module}.{attr}"


class _Stop(Exception):
    """A chain that is refused, or that cannot be followed before the kernel runs."""


def check_resolved(source: str, dialect: str, *, torch_compute: bool = False) -> list[Violation]:
    """The attribute chains of a kernel that passed check_source, followed on the real
    modules: every module a chain reaches must be one the kernel may use (`typing.stdlib_re`
    is `re`, whose `enum.bltns` is `builtins`: no name list sees that), and numpy's file
    functions stay refused wherever numpy is reached from (`nl.np.load`). It imports the
    kernel's modules, so it runs in the kernel's child, after nkisim's shadow modules are
    installed and before the kernel's own code runs."""
    tree = ast.parse(source)
    bindings = _import_bindings(tree)
    resolver = _Resolver(dialect, torch_compute)
    roots: dict[str, tuple[object, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            for a in node.names:
                name = a.asname or a.name.split(".")[0]
                if name in bindings and name not in roots:
                    try:
                        roots[name] = resolver.root(node, name, *bindings[name])
                    except _Stop:
                        continue
    receivers: set[int] = set()
    for node in ast.walk(tree):  # outer attributes come before their receivers
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            bound = roots.get(node.id)
            if bound and isinstance(bound[0], types.ModuleType) and id(node) not in receivers:
                resolver.violations.append(Violation(node.lineno, _module_value(node.id, bound[1])))
            continue
        if isinstance(node, ast.Match):
            _follow_patterns(resolver, roots, node)
        if not isinstance(node, ast.Attribute):
            continue
        receivers.add(id(node.value))
        if id(node) in receivers:
            continue
        try:
            holder, path, written = resolver.follow(node, roots, node)
        except _Stop:
            continue
        if isinstance(holder, types.ModuleType):  # `m = np.ma`: a module held as a value
            resolver.violations.append(Violation(node.lineno, _module_value(written, path)))
    return resolver.violations


def _follow_patterns(
    resolver: _Resolver, roots: dict[str, tuple[object, str]], match: ast.Match
) -> None:
    """`match nl.tile: case object(np=n)` is `n = nl.tile.np`: the chains of a match statement's
    class patterns are followed from its subject like attribute chains."""
    try:
        subject = resolver.follow(match, roots, match.subject)
    except _Stop:
        return  # not a chain on an imported module
    for case in match.cases:
        for chain, binds in pattern_chains(case.pattern):
            holder, path, written = subject
            try:
                for attr in chain:
                    written = f"{written}.{attr}"
                    holder = resolver.step(case.pattern, holder, path, attr, written)
                    path = _canonical(holder, f"{path}.{attr}")
            except _Stop:
                continue
            if binds and isinstance(holder, types.ModuleType):
                line = case.pattern.lineno
                resolver.violations.append(Violation(line, _module_value(written, path)))


def _module_value(written: str, module: str) -> str:
    return (
        f"`{written}` is the module {module}, which a kernel may only use as "
        f"{written}.<name> (held as a value, its attributes are out of the check's sight)"
    )


def _canonical(value: object, path: str) -> str:
    """A module's own name (`typing.stdlib_re` is `re`); anything else, the path it was
    reached by."""
    return value.__name__ if isinstance(value, types.ModuleType) else path
