"""What a Triton task's run() did in Triton, counted by the harness in the kernel's child
(child side: imports triton), and how the autotuner picks a config here.

**Launches.** A Triton task's run() that launched no Triton kernel is not correct, whatever
its outputs (a PyTorch fallback taken where CUDA is absent, say; `allow_torch_compute` lets
torch compute beside Triton launches, never instead of them). While each checked run
executes, every launch of at least one program is counted, at the lowest level Python sees
on each host:

- on a GPU, the driver's launcher (`CudaLauncher.__call__`, the grid in its first three
  arguments), which every way of launching goes through (`kernel[grid](...)`, `kernel.run`,
  a CompiledKernel's own `[grid]`, the autotuner's runs);
- under Triton's CPU interpreter, `GridExecutor.__call__`, the grid read where the
  interpreter sets it (`InterpreterBuilder.set_grid_dim`).

A launch is counted after it returns: a launch that fails counts nothing, and so does a grid
of zero programs. The count is the harness's own: it lives in this module, which a kernel
cannot import (the import guard) or reach (no module outside torch and triton, no underscore
attribute, no frame, no `gc`), and the hooks are attributes of Triton's runtime, which the
static check refuses by path (`triton.runtime`, `triton.knobs`). It travels to the parent
with the run's other results on the child's result channel, as the torch guard's findings
do, and the parent, not this process, turns a zero into the failure
(nkibench.backends.triton.backend). Forging it needs what forging the torch guard's
verdict needs: code that got past every Python-level layer and writes the result channel.
What it cannot tell: a launch that does no useful work (an empty kernel beside a torch
computation, in a task that allows torch compute) counts as a launch.

**Autotuning.** `triton.autotune` picks a config at the first call for each key, by timing
every config (`triton.testing.do_bench`: warm-up, L2 flushes, CUDA events). On a GPU that is
what happens, inside the checked run: the benchmarker's own L2 flush (`clear_cache`) and the
autotuner's default `reset_to_zero` / `restore_value` hooks on plain tensors are the
harness's ops for the torch guard (they compute nothing of the kernel's), and the kernel's
own hooks stay guarded. Under the interpreter timing means nothing (and Triton has no driver
to time with on a host without a GPU): each call of an autotuned kernel uses its configs in
turn, after the kernel's own pruning (the k-th call uses config k mod N), without
benchmarking. The seeds run one after another in one child, so a check of five seeds runs
up to five configs, each of which the GPU may pick. The configs used are recorded per
kernel, and the parent shows them in the result (`KernelResult.autotuned`).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from triton.runtime.autotuner import Autotuner

from nkibench.backends.triton.torch_guard import trusted

__all__ = [
    "CONFIG_TEXT_LIMIT",
    "RunRecord",
    "autotuned",
    "counting",
    "install_launch_counting",
]

CONFIG_TEXT_LIMIT = 300
"""Characters of one config's description kept."""
MAX_CONFIGS_RECORDED = 16
"""Configs recorded per autotuned kernel."""


@dataclass
class RunRecord:
    """One checked run's launches: those of at least one program that returned."""

    launches: int = 0


@dataclass
class _State:
    active: list[RunRecord] = field(default_factory=list)
    grid: tuple[int, ...] | None = None
    chosen: dict[str, list[str]] = field(default_factory=dict)
    turns: weakref.WeakKeyDictionary[Any, int] = field(default_factory=weakref.WeakKeyDictionary)
    installed: bool = False


_state = _State()


@contextlib.contextmanager
def counting() -> Iterator[RunRecord]:
    """Count the launches made within (one checked run)."""
    record = RunRecord()
    _state.active.append(record)
    try:
        yield record
    finally:
        _state.active.remove(record)


def _launched(programs: int) -> None:
    if programs > 0 and _state.active:
        _state.active[-1].launches += 1


def autotuned() -> dict[str, list[str]]:
    """Autotuned kernel's name → the configs its calls used in this process, in order of
    first use."""
    return {name: list(configs) for name, configs in _state.chosen.items()}


def _programs(grid: tuple[Any, ...]) -> int:
    total = 1
    for size in grid:
        total *= int(size)
    return total


def _install_gpu_launch_counting() -> None:
    from triton.runtime.driver import driver  # noqa: PLC0415 (only where a GPU drives it)

    active = driver.active
    launcher = active.launcher_cls
    launch = launcher.__call__

    def counted(self: Any, grid_x: int, grid_y: int, grid_z: int, *rest: Any) -> Any:
        result = launch(self, grid_x, grid_y, grid_z, *rest)
        _launched(_programs((grid_x, grid_y, grid_z)))
        return result

    launcher.__call__ = counted
    clear_cache = active.clear_cache

    def cleared(cache: Any) -> Any:
        # the benchmarker's own L2 flush (`cache.zero_()` on the buffer it allocated)
        if type(cache) is torch.Tensor:
            with trusted():
                return clear_cache(cache)
        return clear_cache(cache)

    active.clear_cache = cleared


def _install_interpreter_launch_counting() -> None:
    from triton.runtime import interpreter  # noqa: PLC0415

    builder = interpreter.InterpreterBuilder
    set_grid_dim = builder.set_grid_dim
    executor = interpreter.GridExecutor
    launch = executor.__call__

    def grid_set(self: Any, nx: int, ny: int, nz: int) -> Any:
        _state.grid = (nx, ny, nz)
        return set_grid_dim(self, nx, ny, nz)

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        _state.grid = None
        result = launch(self, *args, **kwargs)
        grid = _last_grid()  # set by the launch, if it got as far as its grid
        if grid is not None:
            _launched(_programs(grid))
        return result

    builder.set_grid_dim = grid_set
    executor.__call__ = counted


def _last_grid() -> tuple[int, ...] | None:
    return _state.grid


def _describe(config: Any) -> str:
    """A config as text, from its plain values only (a kernel's object in a config could
    answer str() with anything)."""
    try:
        values = dict(config.all_kwargs())
    except Exception:
        return "(a config that does not describe itself)"
    shown = [
        f"{k}={v!r}"
        for k, v in values.items()
        if type(k) is str and type(v) in (int, float, bool, str, type(None))
    ]
    return ", ".join(shown)[:CONFIG_TEXT_LIMIT]


def _record(tuner: Any) -> None:
    config = getattr(tuner, "best_config", None)
    base = getattr(tuner, "base_fn", None)
    name = getattr(base, "__name__", None)
    if config is None or type(name) is not str:
        return
    configs = _state.chosen.setdefault(name[:100], [])
    text = _describe(config)
    if text not in configs and len(configs) < MAX_CONFIGS_RECORDED:
        configs.append(text)


def _trusted_hook(hook: Callable[..., Any], names: list[str]) -> Callable[..., Any]:
    """The autotuner's default reset_to_zero / restore_value hook, whose `zero_`, `clone` and
    `copy_` on the named arguments are Triton's bookkeeping, trusted only on plain tensors
    (a kernel's object posing as one would run its own code there)."""

    def run(kwargs: dict[str, Any], *args: Any, **more: Any) -> Any:
        values = [kwargs.get(name) for name in names]
        if all(v is None or type(v) is torch.Tensor for v in values):
            with trusted():
                return hook(kwargs, *args, **more)
        return hook(kwargs, *args, **more)

    return run


def _install_autotuning(interpreting: bool) -> None:
    init = Autotuner.__init__
    run = Autotuner.run
    prune = Autotuner.prune_configs

    def initialised(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        names = [*self.reset_to_zero, *self.restore_value]
        if not self.user_defined_pre_hook:
            self.pre_hook = _trusted_hook(self.pre_hook, names)
        if not self.user_defined_post_hook:
            self.post_hook = _trusted_hook(self.post_hook, names)

    def ran(self: Any, *args: Any, **kwargs: Any) -> Any:
        if interpreting:
            self.cache.clear()  # no timing here: every call picks its config in turn
        try:
            return run(self, *args, **kwargs)
        finally:
            _record(self)

    def in_turn(self: Any, kwargs: dict[str, Any]) -> list[Any]:
        configs = prune(self, kwargs)
        turn = _state.turns.get(self, 0)
        _state.turns[self] = turn + 1
        return [configs[turn % len(configs)]]

    Autotuner.__init__ = initialised
    Autotuner.run = ran
    if interpreting:
        Autotuner.prune_configs = in_turn


def install_launch_counting(*, interpreting: bool) -> None:
    """Install the launch counter and the autotuner's behaviour in this process (once, before
    the kernel's module loads)."""
    if _state.installed:
        return
    _state.installed = True
    if interpreting:
        _install_interpreter_launch_counting()
    else:
        _install_gpu_launch_counting()
    _install_autotuning(interpreting)
