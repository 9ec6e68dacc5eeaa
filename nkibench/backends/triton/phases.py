"""The triton backend's phases inside the sandboxed child (nkibench.sandbox.child imports this
module by name from the backend's phase table; it imports torch and triton, so only a triton
phase loads it).

triton_probe:     what this host has: the GPU and its fingerprint, or Triton's interpreter
triton_reference: get_inputs() under torch.manual_seed(seed) (a workload's scalar and
                  safetensors inputs in place), forward() on float32 copies of
                  low-precision inputs, on the GPU when there is one; saves both per seed,
                  with the seed's roofline_counts() where reference.py defines it
triton_kernel:    run(*inputs) per seed with the guards on (nkibench.backends.triton.guards,
                  and .torch_guard unless the task allows torch compute), its Triton launches
                  counted (nkibench.backends.triton.launches: the parent refuses a run that
                  launched none); where the inputs hold integer and floating-point tensors,
                  each seed's run follows a decoy run on the same integers with other
                  floating-point data (a result kept by its integer inputs comes back wrong);
                  with `time` (a profile on a GPU), then the timing below, in this same
                  process: the kernel compiled, autotuned and checked is the one timed
triton_reverify:  the re-verification: the timing below on the session's seeds, then again
                  with fresh data written into the timed buffers before every run
                  (`fresh_seeds`), and runs on the fresh seeds in those same buffers
timing:           time run() (nkibench.backends.triton.timing), then device-synchronised
                  runs without the guard (the side-stream check) and with it (torch
                  compute); with `eager`, time the reference's forward() in PyTorch too, on
                  the same inputs in their own dtype
triton_ceilings:  the device's ceilings (nkibench.backends.triton.ceilings)
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
import triton
from safetensors import safe_open
from triton.compiler.errors import CompilationError

from nkibench.backends.triton.canaries import Canaries
from nkibench.backends.triton.ceilings import measure_ceilings
from nkibench.backends.triton.compiled import (
    compiled_kernels,
    record_compiled_kernels,
    share_compile_cache,
)
from nkibench.backends.triton.guards import (
    Cheat,
    ModuleSnapshot,
    check_outputs,
    count_poison,
    forbid_streams,
    inputs_changed,
    poison,
    snapshot,
)
from nkibench.backends.triton.interpreter import install_interpreter_fixes, interpreting
from nkibench.backends.triton.launches import (
    RunRecord,
    autotuned,
    counting,
    install_launch_counting,
)
from nkibench.backends.triton.nsight import COUNTED_RANGE
from nkibench.backends.triton.tensors import is_tensor, to_numpy, to_torch, upcast
from nkibench.backends.triton.timing import Timer, TimingPlan
from nkibench.backends.triton.torch_guard import (
    INTEGER_DTYPES,
    guard_tensor_text,
    guarded,
    warm_up,
)
from nkibench.sandbox.arrays import restore, save_array, value_spec
from nkibench.sandbox.kernel import load_phase_kernel, run_error
from nkibench.sandbox.reference import (
    FixedInputs,
    SeedCounts,
    TaskCodeFailed,
    fixed_positions,
    load_reference,
    names_of,
)
from nkibench.sandbox.stopwatch import span
from nkibench.sandbox.values import call, named, ordered, takes_names
from nkibench.sandbox.workload_inputs import WorkloadValues

__all__ = [
    "ceilings_phase",
    "kernel_phase",
    "probe_phase",
    "reference_phase",
    "reverify_phase",
]

SKIP_TEARDOWN = True
"""A child that ran these phases ends without the interpreter's teardown once its result is
written (nkibench.sandbox.child): torch's and CUDA's take about a second of a cold child on a
GPU host (the counters' child under Nsight Compute, whose report does not need them)."""
PERTURBED = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
"""The dtypes whose timed buffers get fresh content by scaling (integers, booleans and float8,
which has no arithmetic on the GPU, are copied from the fresh sets only)."""
REVERIFY_PLAN = TimingPlan(warmup_ms=5.0, block_ms=50.0, min_runs=10, max_runs=40)


def _device() -> str:
    return "cuda" if torch.cuda.is_available() and not interpreting() else "cpu"


def _driver_version() -> str:
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        return "unknown"
    for word in text.split():
        if word.count(".") >= 1 and word.replace(".", "").isdigit():
            return word
    return "unknown"


def probe_phase(request: dict[str, Any]) -> dict[str, Any]:
    common = {
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
    }
    if _device() == "cpu":
        return {"ok": True, "gpu": None, "fingerprint": {**common, "gpu": "none (interpreter)"}}
    properties = torch.cuda.get_device_properties(0)
    return {
        "ok": True,
        "gpu": properties.name,
        "fingerprint": {
            **common,
            "gpu": properties.name,
            "compute_capability": f"{properties.major}.{properties.minor}",
            "driver": _driver_version(),
            "cuda": str(torch.version.cuda),
            "multiprocessors": str(properties.multi_processor_count),
            "memory_gib": f"{properties.total_memory / 2**30:.1f}",
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES", ""),
        },
    }


def _spec(value: Any, folder: Path, stem: str) -> dict[str, Any]:
    return value_spec(to_numpy(value) if is_tensor(value) else value, folder, stem)


def _load_torch(path: Path, key: str) -> torch.Tensor:
    """The tensor `key` of a safetensors file, in its own dtype (bfloat16 and float8 too)."""
    with safe_open(str(path), framework="pt") as opened:
        tensor: torch.Tensor = opened.get_tensor(key)
    return tensor


class DeviceDraws:
    """get_inputs() on the GPU where it can run there: drawing hundreds of millions of random
    numbers on the host took seconds a seed (bench/GPU.md), the GPU takes milliseconds. A draw
    that cannot run there (a CPU generator, NumPy) fails on the first seed: that seed and
    every later one are drawn on the host, under their own seeds, the fixed inputs drawn there
    again. A failure on the GPU after a seed was drawn there is the task's."""

    def __init__(self, fixed: FixedInputs, device: str) -> None:
        self.fixed = fixed
        self.on_gpu = device == "cuda"
        self.drawn = 0

    def draw(self, module: Any, seed: int) -> tuple[list[Any], list[str] | None]:
        if self.on_gpu:
            try:
                with torch.device("cuda"):
                    return self._counted(module, seed)
            except Exception:
                if self.drawn:
                    raise
            self.on_gpu = False
            self.fixed = FixedInputs(self.fixed.declared, self.fixed.reseed, self.fixed.workload)
        return self._counted(module, seed)

    def _counted(self, module: Any, seed: int) -> tuple[list[Any], list[str] | None]:
        drawn = self.fixed.draw(module, seed)
        self.drawn += 1
        return drawn


def reference_phase(request: dict[str, Any]) -> dict[str, Any]:
    path = Path(request["reference"])
    try:
        module = load_reference(path, request["overrides"])
    except Exception as e:
        return {"ok": False, "kind": "task", "message": f"{path.name}: {type(e).__name__}: {e}"}
    device = _device()
    if device == "cuda":
        with span("cuda_init"):
            torch.cuda.init()  # type: ignore[no-untyped-call]
    seeds: dict[str, Any] = {}
    draws = DeviceDraws(
        FixedInputs(
            request.get("fixed_inputs", []), torch.manual_seed, WorkloadValues(request, _load_torch)
        ),
        device,
    )
    roofline_counts = SeedCounts(module, str(path))
    for seed in request["seeds"]:
        folder = Path(request["data_dir"]) / f"seed_{seed}"
        folder.mkdir(parents=True, exist_ok=True)
        hidden = Path(request["expected_dir"]) / f"seed_{seed}"
        hidden.mkdir(parents=True, exist_ok=True)
        try:
            with span("inputs"):
                inputs, names = draws.draw(module, seed)
                counts = roofline_counts.entry(seed, inputs, names)  # as drawn, before forward()
            started = time.perf_counter()
            with span("reference"), torch.no_grad():
                moved = [upcast(x).to(device) if is_tensor(x) else x for x in inputs]
                expected, output_names = named(
                    call(module.forward, moved, names), "forward()'s result"
                )
                if device == "cuda":
                    torch.cuda.synchronize()
            forward_s = time.perf_counter() - started
            with span("outputs"):
                written = {
                    "inputs": [_spec(v, folder, f"input_{i}") for i, v in enumerate(inputs)],
                    "expected": [_spec(v, hidden, f"expected_{i}") for i, v in enumerate(expected)],
                }
            seeds[str(seed)] = {
                **written,
                "forward_s": forward_s,
                **names_of(names, output_names),
                **counts,
            }
        except TaskCodeFailed:
            raise
        except Exception as e:
            return {
                "ok": False,
                "kind": "task",
                "message": f"{path.name}: seed {seed}: {type(e).__name__}: {e}",
            }
    return {"ok": True, "seeds": seeds, "work": None}


def _arguments(
    request: dict[str, Any],
    seed: int,
    device: str,
    *,
    fresh: bool = False,
) -> list[Any]:
    """Seed `seed`'s inputs on `device` (`fresh`: the re-verification's own seeds)."""
    manifest_key, data_key = (
        ("fresh_manifest", "fresh_data_dir") if fresh else ("manifest", "data_dir")
    )
    manifest = request[manifest_key][str(seed)]
    folder = Path(request[data_key]) / f"seed_{seed}"
    values = [restore(spec, folder) for spec in manifest["inputs"]]
    return [to_torch(v, device) if isinstance(v, np.ndarray) else v for v in values]


class Loaded:
    """A kernel loaded in this child, with what its runs are checked against."""

    def __init__(self, run: Any, request: dict[str, Any], modules: ModuleSnapshot) -> None:
        self.run = run
        self.modules = modules
        self.guard_torch = not request.get("allow_torch_compute", False)
        """Whether run() may only allocate, view and query with torch (the torch guard)."""
        self.records: list[RunRecord] = []
        """What each guarded run that returned launched, in order."""
        self.input_names = _names(request, "input_names")
        self.output_names = _names(request, "output_names")
        self.by_name = takes_names(run, self.input_names)
        """Whether run() takes the inputs by keyword (nkibench.sandbox.values)."""
        self.canaries = Canaries()
        """The guard bands around its inputs and what its checked runs allocate."""

    def call(self, args: list[Any]) -> Any:
        """run() on `args`, by keyword where it takes the inputs' names."""
        return call(self.run, args, self.input_names, self.by_name)

    def guarded(self, args: list[Any]) -> Any:
        """run() on `args` with the torch-compute guard on (unless the task allows torch), its
        Triton launches counted."""
        with guarded(self.guard_torch, args), counting() as record:
            produced = self.call(args)
        self.records.append(record)
        return produced


def _names(request: dict[str, Any], key: str) -> list[str] | None:
    """The inputs' or outputs' names in the manifest (the same for every seed), if named."""
    entries = list(request["manifest"].values())
    names = entries[0].get(key) if entries else None
    return list(names) if isinstance(names, list) else None


def _synchronised_nothing(device: Any = None) -> None:
    """torch.cuda.synchronize under the interpreter: a launch has finished when it returns
    (and a CPU-only torch would raise)."""


def _load(
    request: dict[str, Any], *, guard: bool = True
) -> tuple[Loaded | None, dict[str, Any] | None]:
    """The kernel of `request`, with the harness's layers installed before its code runs;
    `guard`: its runs may be guarded (the torch guard's first use is made here, before the
    module snapshot). The counters' child, whose runs are unguarded, leaves it out: the imports
    it makes (torch._dynamo, sympy) are seconds of a cold child's start."""
    if interpreting():
        install_interpreter_fixes()
        torch.cuda.synchronize = _synchronised_nothing  # before the module snapshot
    install_launch_counting(interpreting=interpreting())
    # Triton's @jit reads the kernel's source file: give it the source being checked.
    source_file = Path.cwd() / "kernel.py"
    source_file.write_text(request["kernel_source"], encoding="utf-8")
    forbid_streams()  # before the kernel's module-level code runs
    if _device() == "cuda":
        with span("cuda_init"):
            torch.cuda.init()  # type: ignore[no-untyped-call]  # torch rebinds attributes at start
    if guard:
        with span("imports"):
            warm_up()
        guard_tensor_text()
    modules = ModuleSnapshot()
    with span("imports"):
        kernel, failure = load_phase_kernel({**request, "kernel_file": str(source_file)})
    if failure is not None:
        return None, failure
    return Loaded(kernel, request, modules), None


def _checked_run(kernel: Loaded, args: list[Any], device: str) -> tuple[list[Any], list[int], int]:
    """One guarded run: poisoned allocations, torch only allocating and viewing, the stream
    kept, plain tensors returned, no write outside a buffer (nkibench.backends.triton.canaries),
    inputs and modules unchanged. Returns the outputs, per
    output the elements never written, and the Triton launches it made."""
    copies = snapshot(args)
    stream = torch.cuda.current_stream() if device == "cuda" else None
    with kernel.canaries.allocations(poison):
        produced = kernel.guarded(args)
    kernel.modules.verify()
    if device == "cuda":
        if torch.cuda.current_stream() != stream:
            raise Cheat("run() returned with another CUDA stream current: work escapes the timer")
        stream.synchronize()  # the timed stream only: a side stream's work is not waited for
    outputs = ordered(produced, kernel.output_names, "run()'s result")
    check_outputs(outputs)
    kernel.canaries.check(args, outputs, kernel.input_names, kernel.output_names)
    changed = inputs_changed(args, copies)
    if changed:
        raise Cheat(f"the kernel modified its input(s) {changed}: inputs must be left as given")
    return outputs, [count_poison(o) for o in outputs], kernel.records[-1].launches


def _decoys(args: list[Any]) -> bool:
    """Whether the inputs hold integer and floating-point tensors: then each checked run
    follows a decoy run (the kernel may read the integers on the host: torch_guard)."""
    dtypes = [a.dtype in INTEGER_DTYPES for a in args if is_tensor(a)]
    return any(dtypes) and not all(dtypes)


def _decoy(kernel: Loaded, args: list[Any], device: str) -> None:
    """A run on the same integer inputs with other floating-point data (each element scaled
    by its own factor in [0.5, 1.5)), in the same buffers, its outputs discarded; then the
    inputs as they were. A result kept across calls by its integer inputs alone (the lengths
    and offsets run() may read on the host) is this run's in the checked run that follows:
    wrong."""
    exact = snapshot(args)
    for value in args:
        if is_tensor(value) and value.dtype not in INTEGER_DTYPES and value.numel():
            factors = 0.5 + torch.rand(value.shape, device=value.device)
            wide = value if value.is_complex() else value.to(torch.float32)
            value.copy_(wide * factors)
    try:
        _checked_run(kernel, args, device)
    finally:
        for value, copy in zip(args, exact, strict=True):
            if is_tensor(value):
                value.copy_(copy)


def _kind(error: BaseException) -> str:
    """Triton compiles at the first launch: its errors are compile errors."""
    return "compile" if isinstance(error, CompilationError) else "runtime"


def _save(folder: Path, outputs: list[Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i, output in enumerate(outputs):
        save_array(folder / f"output_{i}.npy", to_numpy(output))


def kernel_phase(request: dict[str, Any]) -> dict[str, Any]:
    share_compile_cache(request)  # before anything compiles
    timer = _timer() if request.get("time") else None  # before the kernel's code runs
    kernel, failure = _load(request)
    if kernel is None:
        return failure or {}
    device = _device()
    seeds: dict[str, Any] = {}
    home: list[Any] | None = None
    timed_sets: list[list[Any]] = []
    for seed in request["seeds"]:
        # Every seed runs in the first seed's buffers, its data copied in: a kernel that
        # remembers results by address returns the last seed's answer, and fails. Where it
        # may read integer inputs on the host, each seed's run follows a decoy run on the same
        # integers: a kernel that remembers results by them returns the decoy's.
        with span("inputs"):
            values = _arguments(request, seed, device)
            if home is None:
                home = kernel.canaries.guard_inputs(values)
            else:
                home = _into(home, values, kernel)
            if timer is not None:
                timed_sets.append(values)  # the timing rotates among the seeds' own buffers
        args = home
        try:
            # Triton compiles at the first launch: the first seed's runs are the compile's
            with span("checked_runs" if seeds else "compile"):
                if _decoys(args):
                    _decoy(kernel, args, device)
                started = time.perf_counter()
                outputs, never_written, launches = _checked_run(kernel, args, device)
        except MemoryError:
            raise
        except Exception as e:
            return run_error(e, request, seed, kind=_kind(e))
        with span("outputs"):
            _save(Path(request["out_dir"]) / f"seed_{seed}", outputs)
        seeds[str(seed)] = {
            "outputs": len(outputs),
            "never_written": never_written,
            "kernel_s": time.perf_counter() - started,
            "launches": launches,
        }
    result: dict[str, Any] = {
        "ok": True,
        "seeds": seeds,
        "warnings": [],
        "capacity": {},
        "autotuned": autotuned(),
    }
    if timer is not None and _worth_timing(seeds):
        result["measured"] = _timed(request, kernel, timer, timed_sets)
    return result


def _timer() -> Timer:
    with span("cuda_init"):
        return Timer(torch.device("cuda"))


def _worth_timing(seeds: dict[str, Any]) -> bool:
    """Whether the checked runs leave the kernel worth timing: each launched a Triton kernel
    and wrote every output element. Not a verdict (the parent judges these counts itself, and
    refuses the kernel before its timing is read); a run the parent will refuse is not timed."""
    return all(entry["launches"] and not any(entry["never_written"]) for entry in seeds.values())


def _into(home: list[Any], values: list[Any], kernel: Loaded) -> list[Any]:
    """`values` copied into the buffers of `home` where they fit, else guarded anew."""
    for i, (buffer, value) in enumerate(zip(home, values, strict=True)):
        if is_tensor(buffer) and buffer.shape == value.shape and buffer.dtype == value.dtype:
            buffer.copy_(value)
        else:
            home[i] = kernel.canaries.guard_inputs([value])[0]
    return home


def _perturb(buffers: list[Any], pool: list[list[Any]], i: int, fixed: list[int]) -> None:
    """Fresh content in the timed buffers before run i: fresh set i mod K, every element
    scaled by its own random factor in [1, 1 + 2^-4) (signs and magnitudes kept), so that no
    content comes back, wherever a cache looks; the inputs FIXED_INPUTS marks (`fixed`) stay
    as the reference drew them. (A first version scaled by a factor that repeated every 97
    runs; on the H100 a cache keyed by two elements survived it.)"""
    for position, (buffer, value) in enumerate(zip(buffers, pool[i % len(pool)], strict=True)):
        if is_tensor(buffer):
            buffer.copy_(value)
            if buffer.dtype in PERTURBED and position not in fixed:
                buffer.mul_(1.0 + torch.rand_like(buffer) * 0.0625)


def reverify_phase(request: dict[str, Any]) -> dict[str, Any]:
    """The re-verification's child: the kernel timed on the session's seeds, then on fresh
    seeds written into the timed buffers (the first timing is the kernel child's own)."""
    timer = _timer()  # before the kernel's code runs
    kernel, failure = _load(request)
    if kernel is None:
        return failure or {}
    # guarded like the checked runs' inputs: the re-verification checks its runs in sets[0]
    with span("inputs"):
        sets = [
            kernel.canaries.guard_inputs(_arguments(request, s, "cuda")) for s in request["seeds"]
        ]
    return _timed(request, kernel, timer, sets)


def _timed(
    request: dict[str, Any], kernel: Loaded, timer: Timer, sets: list[list[Any]]
) -> dict[str, Any]:
    """run() timed over `sets` in turn (nkibench.backends.triton.timing), then the side-stream
    check, guarded runs and the inputs' check; with `eager`, the reference's forward() timed
    on the same inputs; with `fresh_seeds`, the re-verification. A failure is a result of its
    own ({"ok": False, ...}), which the parent reads once the outputs compare correct."""
    with span("inputs"):
        copies = [snapshot(args) for args in sets]
    try:
        with span("timed_runs"):
            stats = timer.measure(lambda i: kernel.call(sets[i % len(sets)]))
            overhead = timer.launch_overhead_ms()
            # the side-stream check runs run() as it was timed, without the guard: the guard's
            # Python cost (a dispatch per aten op) is no hidden work, and on an H200 it was
            # enough to make an honest 0.1 ms kernel look like one hiding 0.2 ms
            synchronised = timer.synchronised_ms(lambda i: kernel.call(sets[i % len(sets)]))
            # then runs watched by the guard, untimed: a kernel that computes with PyTorch once
            # it has passed its checks is caught here (the timed runs themselves carry no guard,
            # whose Python cost would count in small kernels' latency)
            kernel.records.clear()
            timer.synchronised_ms(lambda i: kernel.guarded(sets[i % len(sets)]))
            launches = [record.launches for record in kernel.records]
            kernel.modules.verify()
    except MemoryError:
        raise
    except Exception as e:
        return run_error(e, request, request["seeds"][0], kind=_kind(e))
    result: dict[str, Any] = {
        "ok": True,
        "latency": stats,
        "synchronised_ms": synchronised,
        "launch_overhead_ms": overhead,
        "launches": launches,
    }
    hidden = synchronised - overhead - stats["p50"]
    if hidden > max(0.2, stats["p50"]):
        return _cheat(
            f"run() takes {synchronised - overhead:.3f} ms when the whole device is waited "
            f"for, but {stats['p50']:.3f} ms on the timed stream: its work escapes the timer "
            "(a side stream)"
        )
    for number, (args, copy) in enumerate(zip(sets, copies, strict=True)):
        changed = inputs_changed(args, copy)
        if changed:
            return _cheat(
                f"timing modified input(s) {changed} of set {number}: inputs must be left as given"
            )
    if request.get("eager"):
        module = load_reference(Path(request["reference"]), request["overrides"])
        with span("eager"), torch.no_grad():
            result["eager"] = timer.measure(
                lambda i: call(module.forward, sets[i % len(sets)], kernel.input_names)
            )
    if request.get("fresh_seeds"):
        try:
            with span("timed_runs"):
                result["fresh"] = _reverify(request, kernel, timer, buffers=sets[0], rotated=stats)
        except Cheat as e:
            return _cheat(e.message)
        except MemoryError:
            raise
        except Exception as e:  # the torch guard's, or the kernel's own error on fresh data
            return run_error(e, request, request["fresh_seeds"][0], kind=_kind(e))
    result["autotuned"] = autotuned()
    return result


def counters_phase(request: dict[str, Any]) -> dict[str, Any]:
    """The run Nsight Compute profiles, started by ncu (nkibench.backends.triton.nsight): the
    first seed's inputs, run() once to compile and autotune, then once inside the counted NVTX
    range; and what Triton's compiler reported of each kernel it built."""
    share_compile_cache(request)  # the kernel's child compiled it there
    record_compiled_kernels()
    kernel, failure = _load(request, guard=False)  # a hint, from unguarded runs
    if kernel is None:
        return failure or {}
    seed = request["seeds"][0]
    with span("inputs"):
        args = _arguments(request, seed, "cuda")
    try:
        with span("compile"):
            kernel.call(args)
            torch.cuda.synchronize()
        with span("checked_runs"):  # what ncu replays; the floor leaves this child out
            torch.cuda.nvtx.range_push(COUNTED_RANGE)  # type: ignore[no-untyped-call]
            kernel.call(args)
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()  # type: ignore[no-untyped-call]
    except MemoryError:
        raise
    except Exception as e:
        return run_error(e, request, seed, kind=_kind(e))
    return {"ok": True, "compiled": compiled_kernels()}


def _cheat(message: str) -> dict[str, Any]:
    return {"ok": False, "kind": "cheat", "line": 0, "message": message}


def _reverify(
    request: dict[str, Any],
    kernel: Loaded,
    timer: Timer,
    *,
    buffers: list[Any],
    rotated: dict[str, float],
) -> dict[str, Any]:
    pool = [_arguments(request, s, "cuda", fresh=True) for s in request["fresh_seeds"]]
    fixed = fixed_positions(request.get("fixed_inputs", []), kernel.input_names, len(buffers))
    # a workload's scalar and safetensors inputs are its own, and stay as the file holds them
    named = kernel.input_names or []
    fixed += [
        named.index(name)
        for name, spec in request.get("workload_inputs", {}).items()
        if spec.get("type") != "random" and name in named
    ]
    # few runs: a kernel that keeps a result per input it saw grows by one output a run
    short = Timer(timer.device, REVERIFY_PLAN)
    try:
        fresh = short.measure(
            lambda _i: kernel.call(buffers), before=lambda i: _perturb(buffers, pool, i, fixed)
        )
    except torch.cuda.OutOfMemoryError as e:
        raise Cheat(
            "the device ran out of memory while the kernel ran on fresh inputs (it keeps "
            f"something per input it sees: results cached across calls): {e}"
        ) from e
    seeds: dict[str, Any] = {}
    for seed, values in zip(request["fresh_seeds"], pool, strict=True):
        for buffer, value in zip(buffers, values, strict=True):
            if is_tensor(buffer):
                buffer.copy_(value)  # the timed buffers themselves: a cache keyed by address
        if _decoys(buffers):
            _decoy(kernel, buffers, "cuda")
        outputs, never_written, launches = _checked_run(kernel, buffers, "cuda")
        _save(Path(request["fresh_out_dir"]) / f"seed_{seed}", outputs)
        seeds[str(seed)] = {
            "outputs": len(outputs),
            "never_written": never_written,
            "launches": launches,
        }
    return {"latency": fresh, "seeds": seeds, "rotated_p50": rotated["p50"]}


def ceilings_phase(request: dict[str, Any]) -> dict[str, Any]:
    return {"ok": True, "ceilings": measure_ceilings(torch.device("cuda"))}
