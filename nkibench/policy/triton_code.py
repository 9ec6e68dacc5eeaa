"""What a Triton kernel may use of torch and triton, read by the static check through the
`triton` dialect's record (nkibench.dialects).

torch's and triton's doors to files, other processes, foreign code, other streams, global state
and Triton's runtime and compiler are refused by their full dotted path; the autotuner's
front (`triton.autotune`, `triton.Config`, `triton.heuristics`) is allowed, and the kernel
child decides what it does (nkibench.backends.triton.launches). Outside @triton.jit functions,
torch may only allocate, view and query tensors (TORCH_ALLOWED, and no compute method or `@`)
unless the task allows torch compute; the kernel child checks the same at run time, op by op
(nkibench.backends.triton.torch_guard), and what decides is what ran: a branch that never runs
may hold anything the other rules allow. Plain data: importing it imports neither torch nor
triton.
"""

from __future__ import annotations

__all__ = [
    "BY_NAME_MODULES",
    "FORBIDDEN_PATHS",
    "GLOBAL_STATE_ROOTS",
    "JIT_DECORATOR",
    "MODULE_SUBSETS",
    "STDLIB_MODULES",
    "TENSOR_COMPUTE_METHODS",
    "TORCH_ALLOWED",
    "TORCH_COMPUTE_HINT",
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
        # waits for the device: no compute, and run()'s own time
        "torch.cuda.synchronize",
    }
)
"""What a Triton task's run() may use of the torch module unless the task allows torch compute:
allocation, types and queries. Tensor methods that view and query (`.view`, `.reshape`,
`.contiguous`, `.stride()`, `.shape`, `.numel()`...) are not listed: on an unknown object the
check refuses compute methods by name instead (TENSOR_COMPUTE_METHODS), and the kernel child
refuses every aten op outside its allowed set at run time."""

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
    # casts, and tensor data read on the host as a NumPy array or a list (`.item()`, `.to()`,
    # `.cuda()`, `.cpu()` and `.type()` are left to the run-time guard: `x.device.type`,
    # `x.to(x.device)` and `x.cuda()` on a CUDA tensor are queries or no-ops, and what they
    # do at run time is seen op by op there)
    "type_as float double half bfloat16 int long short bool byte char numpy tolist "
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
