"""What a Triton kernel may use of torch and triton, read by the static check through the
`triton` dialect's record (nkibench.dialects).

torch's and triton's doors to files, other processes, foreign code, other streams, global state
and Triton's runtime and compiler are refused by their full dotted path; the autotuner's
front (`triton.autotune`, `triton.Config`, `triton.heuristics`) is allowed, and the kernel
child decides what it does (nkibench.backends.triton.launches). Whether run() computes with
torch is decided where it runs: the kernel child's guard sees every aten op while run()
executes and refuses what does not allocate, view or query
(nkibench.backends.triton.torch_guard), so a branch that never runs (a fallback for CPU
tensors, on a GPU host) may hold anything the other rules allow. Statically, outside
@triton.jit functions, only what that guard cannot see is refused unless the task allows torch
compute: the methods that read tensor data on the host without an aten op
(UNSEEN_READ_METHODS). Plain data: importing it imports neither torch nor triton.
"""

from __future__ import annotations

__all__ = [
    "BY_NAME_MODULES",
    "FORBIDDEN_PATHS",
    "GLOBAL_STATE_ROOTS",
    "JIT_DECORATOR",
    "MODULE_SUBSETS",
    "STDLIB_MODULES",
    "UNSEEN_READ_HINT",
    "UNSEEN_READ_METHODS",
]

JIT_DECORATOR = "triton.jit"
"""The decorator of device kernels: the torch guard leaves their bodies alone."""
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
    # doors the allocation/view list used to keep shut for every task, now that torch compute
    # is decided at run time: compute outside aten (NCCL's collectives), files (GPUDirect
    # Storage), the CUDA runtime's own API, the allocator's and the generators' global state,
    # other contexts and graphs
    "torch.cuda.nccl",
    "torch.cuda.comm",
    "torch.cuda.gds",
    "torch.cuda.cudart",
    "torch.cuda.green_contexts",
    "torch.cuda.GreenContext",
    "torch.cuda.MemPool",
    "torch.cuda.use_mem_pool",
    "torch.cuda.CUDAPluggableAllocator",
    "torch.cuda.change_current_allocator",
    "torch.cuda.caching_allocator_alloc",
    "torch.cuda.caching_allocator_delete",
    "torch.cuda.caching_allocator_enable",
    "torch.cuda.make_graphed_callables",
    "torch.cuda.graph_pool_handle",
    "torch.cuda.get_stream_from_external",
    "torch.cuda.manual_seed_all",
    "torch.cuda.seed_all",
    "torch.cuda.default_generators",
    "torch.default_generator",
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
    "torch.Stream",
    "torch.accelerator",
    "torch.get_device_module",
    # the compiler's and the runtime's internals (the autotuner's front is allowed: the
    # kernel's child decides how it picks a config)
    "triton.runtime",
    "triton.compiler",
    "triton.testing",
    "triton.tools",
    "triton.backends",
    "triton.knobs",
    # the standard library's pure modules, but what reads other objects' fields by name
    # (asdict, astuple: private fields too) or writes another module's namespace (global_enum
    # writes a class's members into the module its `__module__` names)
    "dataclasses.asdict",
    "dataclasses.astuple",
    "enum.global_enum",
    # removed from Triton 3.9 (say so before the kernel fails on the GPU host)
    "triton.language.make_block_ptr",
    "triton.language.advance",
    "triton.language.make_tensor_descriptor",
)
"""Refused with everything under them. Besides these, any `torch.<...>.set_*` is refused (torch's
global state: default device and dtype, threads, precision, the current stream)."""
GLOBAL_STATE_ROOTS = ("torch", "triton")
"""Packages whose `set_*` functions, at any depth, change the process's global state."""

STDLIB_MODULES = (
    "__future__",
    "inspect",
    "dataclasses",
    "enum",
    "collections",
    "collections.abc",
    "operator",
    "numbers",
    "abc",
    "heapq",
    "bisect",
    "cmath",
)
"""Standard-library modules a Triton kernel may import besides math, typing, functools and
itertools (`__future__`: compiler directives, `from __future__ import annotations`): none
reaches the OS, files, other processes or the interpreter's state (what they hold of such
modules, `dataclasses.sys`, `enum.bltns`, is refused as their attribute), and what in them
reads by name or evaluates text is refused by its path or name (FORBIDDEN_PATHS,
nkibench.sandbox.policy). Left out on purpose: `os`, `sys`, `subprocess`, `socket`, `ctypes`,
`importlib`, `builtins`, `types`, `gc`, `copy`, `pickle`, `contextlib` (`chdir`), `warnings`
(global filters), `random` and `time` (global state, clocks), `string` (`Formatter` reads
attributes by name), `re`."""
MODULE_SUBSETS = {
    "inspect": frozenset(
        {
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
    ),
}
"""Modules a kernel may use only these names of (any other `inspect.<name>` is refused):
inspect reaches frames (`currentframe`, `stack`), other modules (`getmodule`), source files
(`getsource`), globals (`getclosurevars`), every attribute by name (`getmembers`) and the
evaluator of string annotations (`get_annotations(eval_str=True)`). What is left binds
arguments (`inspect.signature(fn).bind(*args)`) and asks what an object is. In the kernel's
child, `inspect.signature` is a facade that answers for the kernel's own functions only
(nkibench.sandbox.facades): the defaults of a library's function are objects the check never
saw (`torch.save`'s is the pickle module)."""
BY_NAME_MODULES = ("triton",)
"""Packages whose modules a kernel may read by name with `getattr(module, "name"[, default])`
(a string literal, checked as `module.name`): `getattr(tl, "fast_exp", tl.exp)` picks what the
installed Triton has."""


UNSEEN_READ_METHODS = frozenset(
    {
        # a NumPy array or Python values from a tensor's memory: on a CPU tensor (the
        # interpreter's) no aten op reads the data (`.numpy()` runs only `detach`), and NumPy's
        # arithmetic on it is outside torch altogether
        "numpy",
        "tolist",
        # a Python function applied to every element of a CPU tensor, in place: no aten op
        "apply_",
        "map_",
        "map2_",
    }
)
"""Tensor methods that read tensor data on the host without an aten op the kernel child's
run-time guard sees (measured on torch 2.13 with a TorchDispatchMode on CPU tensors), refused
by name outside @triton.jit functions unless the task allows torch compute. Everything else
torch computes or reads, whatever Python spelled it (`x.sum()`, `torch.nn.functional.silu(x)`,
`x @ w`, `float(t)`, `x.item()`, `int(t)`, a storage's elements: `empty`, `set_`,
`_local_scalar_dense`), runs aten ops that the guard decides on where they run
(nkibench.backends.triton.torch_guard); the text of a tensor (`str(x)`, `repr(x)`, `f"{x}"`),
which torch prints with every dispatch mode off, is refused there too. What decides is what
ran, and a branch that never runs (a fallback for CPU tensors on a GPU host) computes nothing.
(Triton's own tensors share some of these names: the check leaves @triton.jit bodies
alone.)"""
UNSEEN_READ_HINT = (
    "a Triton task's run() computes in @triton.jit kernels, and reads integer tensors on the "
    "host only where the run-time guard sees it (`int(lengths[-1])`, `.item()`), or the task "
    "sets allow_torch_compute = true in task.toml"
)
