"""The cost model ranks what the Neuron documentation says is faster as faster, and its
output is internally consistent. Kernels run under nkisim in the test process; the model
schedules their traces."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from nkibench.cost import GENERATIONS, MODEL_VERSION, Estimate, estimate
from nkibench.nkisim.machine import Config
from nkibench.nkisim.runtime import execute
from nkibench.nkisim.trace import ENGINES
from nkibench.sandbox.loader import load_kernel
from nkibench.suites import CALIBRATION
from tests.support.nki_helpers import FILENAME, run

pytestmark = pytest.mark.usefixtures("shadow_modules")
rng = np.random.default_rng(11)
BF16 = ml_dtypes.bfloat16


def randn(*shape: int, dtype: object = np.float32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def modelled(body: str, *args: object, target: str = "trn1") -> Estimate:
    ran = run(body, *args, config=Config(target=target, kernel_file=FILENAME))
    return estimate(ran.trace.instructions, target)


# --- the matmul tutorial's ladder (bf16, as in the tutorial) ---------------------------------

LADDER = ("kernel.py", "hoisted.py", "blocked.py", "optimized.py")


@pytest.fixture(scope="module")
def ladder() -> dict[str, Estimate]:
    """The tutorial's four kernels at the calibration task's small shapes (2048 cubed)."""
    folder = CALIBRATION / "matmul_tutorial"
    lhsT, rhs = randn(2048, 2048, dtype=BF16), randn(2048, 2048, dtype=BF16)
    expected = lhsT.astype(np.float32).T @ rhs.astype(np.float32)
    rungs = {}
    for name in LADDER:
        filename = str(folder / name)
        kernel = load_kernel((folder / name).read_text(), filename, "kernel")
        ran = execute(kernel, [lhsT, rhs], Config(kernel_file=filename))
        relative = np.linalg.norm(ran.outputs[0].astype(np.float32) - expected)
        assert relative < 1e-2 * np.linalg.norm(expected), name  # the same computation
        rungs[name] = estimate(ran.trace.instructions)
    return rungs


def test_the_matmul_tutorial_ladder_gets_faster(ladder: dict[str, Estimate]) -> None:
    tiled, hoisted, blocked, optimized = (ladder[name] for name in LADDER)
    assert tiled.latency_ns > hoisted.latency_ns > blocked.latency_ns > optimized.latency_ns
    # the tutorial's reasons: fewer HBM bytes and fewer, wider transfers for the same flops
    hbm = [e.counters["hbm_read_bytes"] for e in (tiled, hoisted, blocked, optimized)]
    assert hbm == sorted(hbm, reverse=True)
    transfers = [e.counters["dma_transfer_count"] for e in (tiled, hoisted, blocked, optimized)]
    assert transfers == sorted(transfers, reverse=True)
    assert {e.counters["hardware_flops"] for e in ladder.values()} == {2.0 * 2048**3}
    assert (tiled.bound_by, optimized.bound_by) == ("dma", "tensor")


def test_the_same_work_twice_takes_about_twice_as_long() -> None:
    body = """
    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for r in nl.sequential_range(REPEATS):
            for i in nl.affine_range(x.shape[0] // 128):
                t = nl.load(x[i * 128:(i + 1) * 128, :])
                e = nisa.activation(op=nl.exp, data=t)
                y = nl.multiply(e, t)
                nl.store(out[i * 128:(i + 1) * 128, :], value=y)
        return out
    """
    x = randn(1024, 2048)
    once = modelled(body.replace("REPEATS", "1"), x)
    twice = modelled(body.replace("REPEATS", "2"), x)
    assert 1.7 < twice.latency_ns / once.latency_ns < 2.05
    for engine in ENGINES:
        assert twice.busy_ns[engine] == pytest.approx(2 * once.busy_ns[engine])


def test_fp32_matmul_operands_cost_four_times_bf16() -> None:
    body = """
    @nki.jit
    def kernel(a, b):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        a_tile = nl.load(a)
        b_tile = nl.load(b)
        acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
        for r in nl.affine_range(64):  # on-chip reuse: TensorE is the bottleneck
            acc += nisa.nc_matmul(a_tile, b_tile)
        nl.store(out, value=nl.copy(acc))
        return out
    """
    fp32 = modelled(body, randn(128, 128), randn(128, 512))
    bf16 = modelled(body, randn(128, 128, dtype=BF16), randn(128, 512, dtype=BF16))
    assert fp32.bound_by == "tensor"
    assert fp32.busy_ns["tensor"] == pytest.approx(4 * bf16.busy_ns["tensor"])
    assert fp32.latency_ns > 2.5 * bf16.latency_ns


DMA_RUNS = """
@nki.jit
def kernel(x):
    T, G, RUN = TILES, 2048 // RUN_ELEMENTS, RUN_ELEMENTS
    out = nl.ndarray((128, T * G, RUN), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(T):
        # x rows hold runs of RUN elements, each at the start of a STRIDE-element slot
        tile = nl.load(x[:, t * G:(t + 1) * G, 0:RUN])
        nl.store(out[:, t * G:(t + 1) * G, :], value=tile)
    return out
"""


def _dma_runs(run_elements: int, stride: int, tiles: int = 8) -> Estimate:
    body = DMA_RUNS.replace("TILES", str(tiles)).replace("RUN_ELEMENTS", str(run_elements))
    return modelled(body, randn(128, tiles * 2048 // run_elements, stride))


def test_tiny_dma_runs_are_slower_than_two_kib_runs() -> None:
    # 128 x 2048 fp32 (1 MiB) per transfer either way: runs of 4 B, 256 B and 2 KiB in HBM
    tiny, small, full = _dma_runs(1, 2), _dma_runs(64, 128), _dma_runs(512, 1024)
    assert full.counters["hbm_read_bytes"] == tiny.counters["hbm_read_bytes"]
    assert tiny.latency_ns > 5 * small.latency_ns
    assert small.latency_ns > 1.2 * full.latency_ns
    assert tiny.counters["dma_small_transfer_percent"] > 0.45  # the loads, not the stores
    assert full.counters["dma_small_transfer_percent"] == 0.0
    assert full.bound_by == "dma"


def test_all_partitions_beat_a_few_for_the_same_bytes() -> None:
    body = """
    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(x.shape[0] // P):
            t = nl.load(x[i * P:(i + 1) * P, :])
            nl.store(out[i * P:(i + 1) * P, :], value=t)
        return out
    """
    wide = modelled(body.replace("P", "128"), randn(1024, 1024))
    narrow = modelled(body.replace("P", "8"), randn(128, 8192))
    assert wide.counters["hbm_read_bytes"] == narrow.counters["hbm_read_bytes"]
    assert narrow.latency_ns > 2 * wide.latency_ns


OVERLAP = """
@nki.jit
def kernel(x, y):
    out = nl.ndarray((128, 2048), dtype=x.dtype, buffer=nl.shared_hbm)
    s = nl.load(x)
    v = nl.load(y)
    for step in nl.sequential_range(8):
        s = nisa.activation(op=nl.tanh, data=SCALAR_INPUT)  # ScalarE
        v = nisa.tensor_scalar(data=VECTOR_INPUT, op0=nl.multiply, operand0=0.5)  # VectorE
    nl.store(out, value=nl.add(s, v))
    return out
"""


def test_vector_and_scalar_overlap_unless_dependencies_serialise_them() -> None:
    x, y = randn(128, 2048), randn(128, 2048)
    # two independent chains, or one chain alternating between the engines
    parallel = modelled(OVERLAP.replace("SCALAR_INPUT", "s").replace("VECTOR_INPUT", "v"), x, y)
    serial = modelled(OVERLAP.replace("SCALAR_INPUT", "v").replace("VECTOR_INPUT", "s"), x, y)
    assert parallel.busy_ns == pytest.approx(serial.busy_ns)  # the same work on each engine
    work = parallel.busy_ns["vector"] + parallel.busy_ns["scalar"]
    assert serial.latency_ns > 0.95 * work
    assert parallel.latency_ns < 0.75 * serial.latency_ns


def test_trn2_vector_fast_mode_needs_two_byte_operands() -> None:
    body = """
    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        for r in nl.affine_range(16):
            t2 = nisa.tensor_scalar(data=t, op0=nl.multiply, operand0=0.5)
            nl.store(out, value=t2)
        return out
    """
    busy = {
        (target, name): modelled(body, randn(128, 4096, dtype=dtype), target=target).busy_ns[
            "vector"
        ]
        for target in ("trn1", "trn2")
        for name, dtype in (("fp32", np.float32), ("bf16", BF16))
    }
    assert busy["trn1", "bf16"] == pytest.approx(busy["trn1", "fp32"])
    assert busy["trn2", "fp32"] > 1.9 * busy["trn2", "bf16"]


def test_the_estimate_is_consistent() -> None:
    body = """
    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(x.shape[0] // 128):
            t = nl.load(x[i * 128:(i + 1) * 128, :])
            e = nisa.activation(op=nl.exp, data=t)
            nl.store(out[i * 128:(i + 1) * 128, :], value=nl.multiply(e, t))
        return out
    """
    x = randn(512, 1024)
    result = modelled(body, x)
    assert result.model_version == MODEL_VERSION
    assert result.counters["hbm_read_bytes"] == x.nbytes
    assert result.counters["hbm_write_bytes"] == x.nbytes
    assert result.counters["total_time"] == pytest.approx(result.latency_ns * 1e-9)
    # a load, then compute, then a store: at least two transfers' fixed time in series
    fixed = GENERATIONS["trn1"].dma_transfer_ns.value
    assert result.latency_ns > 2 * fixed + result.busy_ns["scalar"] / 4
    assert result.latency_ns >= max(result.busy_ns.values())
    for engine, use in result.engines().items():
        assert 0.0 <= use["utilisation"] <= 1.0, engine
    assert result.engines()["scalar"]["instructions"] == 4
    assert {hot["engine"] for hot in result.hot_lines} <= set(ENGINES)
    assert result.to_json()["latency_kind"] == "estimated"


def test_every_constant_names_its_source() -> None:
    for generation in GENERATIONS.values():
        constants = generation.constants()
        assert len(constants) >= 20
        for name, entry in constants.items():
            assert isinstance(entry["source"], str)
            assert len(entry["source"]) > 10, name
            assert math.isfinite(float(entry["value"])), name  # type: ignore[arg-type]


def test_an_unknown_target_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown target 'trn9'"):
        estimate([], "trn9")
