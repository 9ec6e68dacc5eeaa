"""The triton backend as this host has it: without a GPU (as CI runs it) under Triton's CPU
interpreter, on a GPU where there is one (bench/gpu_session.sh runs this module there too):
every GPU-suite baseline is correct at its small shapes, and planted cheats and bugs are
caught."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from nkibench.backends.nkisim.backend import NkisimBackend
from nkibench.backends.triton.backend import REVERIFY_SPEEDUP, TritonBackend, mixed_inputs
from nkibench.backends.triton.phases import DeviceDraws
from nkibench.errors import BackendUnavailable
from nkibench.harness import check_kernel, profile_kernel
from nkibench.sandbox.reference import FixedInputs
from nkibench.suites import GPU_LARGE_SUITE
from nkibench.suites import NKI_LEGACY_SUITE as SUITE
from nkibench.task.spec import load_task
from tests.support import DATA
from tests.support.triton_helpers import GPU_TASKS, SILU, planted, triton_backend

__all__ = ["triton_backend"]

# on a GPU host, xdist's workers take turns at it with the GPU modules' tests
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("gpu_turn")]


@pytest.mark.parametrize("name", GPU_TASKS)
def test_every_gpu_suite_baseline_is_correct_at_small_shapes(
    name: str, triton_backend: TritonBackend
) -> None:
    task = load_task(SILU.parent / name)
    result = check_kernel(task, backend=triton_backend, shapes="small")
    assert result.correct, f"{name}: {result.error_kind}: {result.message}"
    assert result.max_rel_l2 is not None
    assert result.max_rel_l2 <= task.rel_tol
    assert len(result.seeds) == len(task.seeds)


@pytest.mark.parametrize("name", ["embedding_gather", "paged_decode", "rmsnorm_large"])
def test_every_large_input_baseline_is_correct_at_small_shapes(
    name: str, triton_backend: TritonBackend
) -> None:
    task = load_task(GPU_LARGE_SUITE / name)
    result = check_kernel(task, backend=triton_backend, shapes="small")
    assert result.correct, f"{name}: {result.error_kind}: {result.message}"


def test_the_suite_has_the_fourteen_operator_families() -> None:
    assert len(GPU_TASKS) == 14


def test_every_check_draws_fresh_seeds(triton_backend: TritonBackend) -> None:
    task = load_task(SILU)
    first = check_kernel(task, backend=triton_backend, shapes="small")
    second = check_kernel(task, backend=triton_backend, shapes="small")
    assert first.correct
    assert second.correct
    assert not set(first.seeds) & set(second.seeds)


CANARY_OUTPUT = "wrote past the end of output 0: 64 element(s), at offsets 0-63"
CANARY_INPUT = "wrote past the end of input 0: 16 element(s), at offsets 0-15"


@pytest.mark.parametrize(
    ("kernel", "kind", "words", "gpu_words"),
    [
        ("mutates_input", "cheat", "modified its input(s) [0]", "modified its input(s) [0]"),
        ("unwritten_tail", "incorrect", "never written", "never written"),
        ("cached_result", "incorrect", "relative L2 error", "relative L2 error"),
        ("side_stream", "rejected", "torch.cuda.Stream", "torch.cuda.Stream"),
        # a GPU reads past the end quietly: the interpreter checks every access
        ("out_of_bounds", "runtime", "out-of-bounds load", None),
        # a stray write: the interpreter's check, and on a GPU the guard bands
        ("writes_past_output", "runtime", "out-of-bounds store", CANARY_OUTPUT),
        ("writes_past_input", "runtime", "out-of-bounds store", CANARY_INPUT),
    ],
)
def test_planted_cheats_and_bugs_are_caught(
    kernel: str, kind: str, words: str, gpu_words: str | None, triton_backend: TritonBackend
) -> None:
    if triton_backend.host.gpu is not None:
        if gpu_words is None:
            pytest.skip("caught under the interpreter only")
        words = gpu_words
    task = load_task(SILU)
    result = check_kernel(
        task, backend=triton_backend, shapes="medium", kernel_source=planted(kernel)
    )
    assert not result.correct
    assert result.error_kind == kind, result.message
    assert words in result.message


TORCH_SILU = "import torch\n\n\ndef run(x):\n    return x / (1.0 + torch.exp(-x))\n"
OPERATOR_SILU = (
    "import math\n\nimport torch\n\n\ndef run(x):\n    return x / (1.0 + math.e ** -x)\n"
)


SILU_KERNEL = """\
import torch
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (x / (1.0 + tl.exp(-x))).to(out_ptr.dtype.element_ty), mask=mask)
"""
BESIDE_TRITON = SILU_KERNEL + (
    "\n\ndef run(x):\n"
    "    out = torch.empty_like(x)\n"
    "    n = x.numel()\n"
    "    silu_kernel[(triton.cdiv(n, 1024),)](x.view(-1), out.view(-1), n, BLOCK=1024)\n"
    "    return out * torch.ones_like(out)  # torch beside the launch\n"
)
FALLBACK = SILU_KERNEL + (
    "\n\ndef run(x):\n"
    "    if not x.is_cuda:  # a CPU fallback, as real kernels carry: taken here\n"
    "        return x * torch.sigmoid(x)\n"
    "    out = torch.empty_like(x)\n"
    "    n = x.numel()\n"
    "    silu_kernel[(triton.cdiv(n, 1024),)](x.view(-1), out.view(-1), n, BLOCK=1024)\n"
    "    return out\n"
)
EMPTY_GRID = SILU_KERNEL + (
    "\n\ndef run(x):\n"
    "    out = torch.empty_like(x)\n"
    "    silu_kernel[(0,)](x.view(-1), out.view(-1), 0, BLOCK=1024)  # no program\n"
    "    return x * torch.sigmoid(x)\n"
)


def test_a_task_that_allows_torch_compute_accepts_torch_beside_triton_only(
    triton_backend: TritonBackend,
) -> None:
    """allow_torch_compute = true turns the torch guard off (torch.exp, operators on tensors)
    beside Triton launches; a run() that launches none is not correct. Other tasks refuse
    torch compute where it runs, whatever Python spelled it."""
    allowing = load_task(DATA / "adversarial" / "tasks" / "silu_torch")
    result = check_kernel(allowing, backend=triton_backend, kernel_source=BESIDE_TRITON)
    assert result.correct, f"{result.error_kind}: {result.message}"
    for source in (TORCH_SILU, OPERATOR_SILU):
        result = check_kernel(allowing, backend=triton_backend, kernel_source=source)
        assert (result.error_kind, result.correct) == ("incorrect", False), result.message
        assert "run() launched no Triton kernel" in result.message
    silu = load_task(SILU)
    for source in (TORCH_SILU, OPERATOR_SILU):
        caught = check_kernel(silu, backend=triton_backend, kernel_source=source)
        assert (caught.error_kind, caught.correct) == ("cheat", False)
        assert "run() computed with PyTorch: aten.neg" in caught.message


def test_a_run_that_takes_a_torch_fallback_launches_nothing_and_is_not_correct(
    triton_backend: TritonBackend,
) -> None:
    """Under the interpreter the inputs are CPU tensors, so a `not x.is_cuda` fallback runs:
    its outputs are right, and it launched no Triton kernel: not correct, with the reason
    (NoTritonLaunch). On a GPU the fallback never runs: what ran decides, and it is correct.
    A grid of no program launches nothing anywhere."""
    allowing = load_task(DATA / "adversarial" / "tasks" / "silu_torch")
    gpu = triton_backend.host.gpu is not None
    if gpu:
        taken = check_kernel(allowing, backend=triton_backend, kernel_source=FALLBACK)
        assert taken.correct, f"{taken.error_kind}: {taken.message}"
    for source in (EMPTY_GRID,) if gpu else (FALLBACK, EMPTY_GRID):
        result = check_kernel(allowing, backend=triton_backend, kernel_source=source)
        assert (result.error_kind, result.correct) == ("incorrect", False), result.message
        assert "run() launched no Triton kernel (seed " in result.message
        if triton_backend.host.gpu is None:
            assert "Under Triton's CPU interpreter the inputs are CPU tensors" in result.message
    # without allow_torch_compute the torch guard refuses the fallback where it runs: here
    # under the interpreter, saying why; on a GPU it never runs, and the kernel is correct
    guarded = check_kernel(load_task(SILU), backend=triton_backend, kernel_source=FALLBACK)
    if triton_backend.host.gpu is None:
        assert (guarded.error_kind, guarded.correct) == ("cheat", False), guarded.message
        assert "run() computed with PyTorch: aten.sigmoid" in guarded.message
        assert "Under Triton's CPU interpreter the inputs are CPU tensors" in guarded.message
    else:
        assert guarded.correct, f"{guarded.error_kind}: {guarded.message}"


MASKED_ROWS = DATA / "adversarial" / "tasks" / "masked_rows"
PLANNED = (MASKED_ROWS / "kernel.py").read_text().replace(
    "    longest = int(lengths.max())\n",
    "    plan = (int(lengths.max()), int(lengths.sum()))\n"
    "    longest = PLANS.setdefault(plan, plan[0])\n",
) + "\n\nPLANS = {}\n"


def test_integer_inputs_may_be_read_on_the_host_and_what_depends_on_them_alone_kept(
    triton_backend: TritonBackend,
) -> None:
    """A task with an integer input (a length per row): run() reads it on the host
    (`int(lengths.max())`, to size its blocks), and may keep what depends on the integers
    alone (a plan) across calls: the decoy run before each seed's checked run changes only
    the floating-point data. (A result kept by them is caught: int_content_cache.)"""
    task = load_task(MASKED_ROWS)
    for source in (task.kernel_source, PLANNED):
        result = check_kernel(task, backend=triton_backend, kernel_source=source)
        assert result.correct, f"{result.error_kind}: {result.message}"
    assert "PLANS.setdefault" in PLANNED


AUTOTUNED = """\
import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 64, "SPLIT": 1}, num_warps=2),
        triton.Config({"BLOCK": 128, "SPLIT": 1}, num_warps=4),
        triton.Config({"BLOCK": 256, "SPLIT": LAST_SPLIT}, num_warps=4),
    ],
    key=["n"],
)
@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, SPLIT: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK // SPLIT)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (x / (1.0 + tl.exp(-x))).to(out_ptr.dtype.element_ty), mask=mask)


def run(x):
    out = torch.empty_like(x)
    n = x.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    silu_kernel[grid](x.view(-1), out.view(-1), n)
    return out
"""


def test_an_autotuned_kernel_runs_each_config_in_turn_under_the_interpreter(
    triton_backend: TritonBackend,
) -> None:
    """triton.autotune with three configs: on a GPU it times them and picks one; under the
    interpreter the seeds' runs use them in turn (no timing), so each config the GPU could
    pick is checked, and the result names them. A config that skips half of every block
    (the third, which a first-config rule would never run) is caught."""
    task = load_task(SILU)
    if triton_backend.host.gpu is not None:
        pytest.skip("under the interpreter only: on a GPU the autotuner times its configs")
    result = check_kernel(
        task, backend=triton_backend, kernel_source=AUTOTUNED.replace("LAST_SPLIT", "1")
    )
    assert result.correct, f"{result.error_kind}: {result.message}"
    assert len(result.seeds) == 3
    assert result.autotuned == {
        "silu_kernel": [
            "BLOCK=64, SPLIT=1, num_warps=2, num_ctas=1, num_stages=3",
            "BLOCK=128, SPLIT=1, num_warps=4, num_ctas=1, num_stages=3",
            "BLOCK=256, SPLIT=1, num_warps=4, num_ctas=1, num_stages=3",
        ]
    }
    broken = check_kernel(
        task, backend=triton_backend, kernel_source=AUTOTUNED.replace("LAST_SPLIT", "2")
    )
    assert (broken.error_kind, broken.correct) == ("incorrect", False), broken.message
    assert f"seed {broken.seeds[2]}: output 0:" in broken.message
    assert "never written" in broken.message


IDIOMS = (DATA / "triton_kernels" / "idioms.py").read_text()


def test_the_idioms_of_real_triton_kernels_run(triton_backend: TritonBackend) -> None:
    """A kernel written as LLM agents write them: autotune and heuristics, an argument binder
    built with inspect.signature, getattr on triton.language, a dataclass and an enum, host
    queries and no-op moves, torch.cuda.synchronize() at the end, and a self-test under
    `if __name__ == "__main__":` that imports what a kernel may not (never run)."""
    result = check_kernel(load_task(SILU), backend=triton_backend, kernel_source=IDIOMS)
    assert result.correct, f"{result.error_kind}: {result.message}"
    assert set(result.autotuned) == {"silu_kernel"}


def test_a_triton_task_needs_the_triton_backend(triton_backend: TritonBackend) -> None:
    with pytest.raises(BackendUnavailable, match="a triton task; the nkisim backend"):
        check_kernel(load_task(SILU), backend=NkisimBackend())
    nki_task = load_task(SUITE / "silu")
    with pytest.raises(BackendUnavailable, match="a nki-legacy task; the triton backend"):
        check_kernel(nki_task, backend=triton_backend)


def test_without_a_gpu_nothing_is_timed(triton_backend: TritonBackend) -> None:
    if triton_backend.host.gpu is not None:
        pytest.skip("this host has a GPU")
    result = profile_kernel(load_task(SILU), backend=triton_backend, shapes="small")
    assert result.correct
    assert (result.error_kind, result.latency_ms) == ("measurement", None)
    assert "no GPU here" in result.message
    with pytest.raises(BackendUnavailable, match="no CUDA GPU"):
        TritonBackend(require_gpu=True)


def test_switching_streams_at_run_time_is_a_cheat(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run-time layer under the static check (the kernel child installs it)."""
    import torch

    from nkibench.backends.triton.guards import Cheat, forbid_streams

    for name in ("stream", "set_stream", "StreamContext", "graph", "CUDAGraph"):
        monkeypatch.setattr(torch.cuda, name, getattr(torch.cuda, name))
    forbid_streams()
    with pytest.raises(Cheat, match="another CUDA stream"):
        torch.cuda.stream(None)
    with pytest.raises(Cheat, match="another CUDA stream"):
        # None on purpose: torch documents it (a no-op) though it annotates a Stream
        torch.cuda.set_stream(None)  # type: ignore[arg-type]


def test_ceilings_are_measured_once_per_device_and_read_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from daemon.backends import EventLogDeviceMemo
    from nkibench.backends.triton.backend import DeviceCeilings, TritonHost
    from nkibench.backends.triton.provider import ceilings
    from store.memory import MemoryEventStore

    fingerprint = {"gpu": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "driver": "580"}
    backend = TritonBackend(host=TritonHost("NVIDIA H100 80GB HBM3", fingerprint))
    rates = {"bfloat16": 6.9e14, "float16": 6.6e14, "float32": 3.7e14, "float32_ieee": 5.2e13}
    measured = DeviceCeilings(backend.target, fingerprint, 3e12, 6.6e13, rates, {"copy": "1 GiB"})
    calls: list[int] = []

    def measure() -> DeviceCeilings:
        calls.append(1)
        return measured

    monkeypatch.setattr(backend, "measure_ceilings", measure)
    store = MemoryEventStore()
    assert ceilings(backend, EventLogDeviceMemo(store)) == measured
    assert ceilings(backend, EventLogDeviceMemo(store)) == measured  # read back from the event
    assert calls == [1]
    peaks = measured.peaks()
    assert peaks.matmul_rate("bfloat16").value == 6.9e14
    assert peaks.matmul_rate("float32").value == 3.7e14  # tf32: Triton's float32 dot


def _manifest(*dtypes: str) -> dict[str, object]:
    arrays = [{"kind": "array", "file": f"input_{i}.npy", "dtype": d} for i, d in enumerate(dtypes)]
    return {"7": {"inputs": [*arrays, {"kind": "scalar", "value": 3}]}}


@pytest.mark.parametrize(
    ("dtypes", "mixed"),
    [
        (("float32", "int32"), True),
        (("float8_e4m3fn", "bool"), True),
        (("bfloat16", "uint8", "int64"), True),
        (("float32", "float16"), False),
        (("int32", "int64"), False),
        ((), False),
    ],
)
def test_a_kernel_on_integer_and_floating_point_inputs_is_reverified_when_faster_at_all(
    dtypes: tuple[str, ...], mixed: bool
) -> None:
    """Where run() may read integers on the host (beside floating-point data), a result kept
    by them is unseen by the timing however little it saves: any speed-up over the baseline
    sends the kernel to re-verification; elsewhere only a 10x one does, and the baseline
    itself never (an infinite threshold stays infinite)."""
    manifest = _manifest(*dtypes)
    assert mixed_inputs(manifest) is mixed
    backend = TritonBackend.__new__(TritonBackend)
    session = SimpleNamespace(inputs=SimpleNamespace(manifest=manifest))
    backend.reverify_speedup = REVERIFY_SPEEDUP
    assert backend._reverify_above(session) == (1.0 if mixed else REVERIFY_SPEEDUP)
    backend.reverify_speedup = float("inf")
    assert backend._reverify_above(session) == float("inf")


class _Inputs:
    """A reference module whose draws are scripted: `torch.randn` (which needs the device),
    or NumPy (which runs anywhere), and a failure on a later seed."""

    def __init__(self, torch_first: bool) -> None:
        self.torch_first = torch_first
        self.calls = 0

    def get_inputs(self) -> list[object]:
        self.calls += 1
        if self.calls > 2:
            raise ValueError("this task's draw fails on its third call")
        if self.torch_first:
            return [torch.randn(4)]
        return [np.arange(4.0)]


def test_a_draw_that_cannot_run_on_the_device_is_drawn_on_the_host() -> None:
    """The reference's child draws on the GPU first. Here (no CUDA in this torch) the draw
    fails there, and that seed is drawn on the host under the same seed: the values a host
    draw gives. Once a seed was drawn on the device, a later failure is the task's: raised,
    not drawn again elsewhere."""
    if torch.cuda.is_available():
        pytest.skip("torch sees a GPU here: the device draw would succeed")
    module = _Inputs(torch_first=True)
    draws = DeviceDraws(FixedInputs([], torch.manual_seed), "cuda")
    values, _ = draws.draw(module, 7)
    torch.manual_seed(7)
    assert torch.equal(values[0], torch.randn(4))
    assert not draws.on_gpu
    assert module.calls == 2  # the device's attempt, then the host's

    drawn_on_device = DeviceDraws(FixedInputs([], torch.manual_seed), "cuda")
    numpy_module = _Inputs(torch_first=False)
    drawn_on_device.draw(numpy_module, 1)  # NumPy: nothing asks for the device
    drawn_on_device.draw(numpy_module, 2)
    assert drawn_on_device.on_gpu
    with pytest.raises(ValueError, match="third call"):
        drawn_on_device.draw(numpy_module, 3)
    assert numpy_module.calls == 3  # raised once, never drawn again on the host
