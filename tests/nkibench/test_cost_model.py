"""The cost model ranks what the Neuron documentation says is faster as faster, and its
output is internally consistent. Kernels run under nkisim in the test process; the model
schedules their traces."""

from __future__ import annotations

import math
import re
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from nkibench.benchmarks.nki import _ladder_summary
from nkibench.cost import GENERATIONS, MODEL_VERSION, Estimate, estimate, tables
from nkibench.cost.buffers import plan_buffers
from nkibench.nkisim.language import tile_size
from nkibench.nkisim.machine import TARGETS, Config, TargetSpec
from nkibench.nkisim.runtime import execute
from nkibench.nkisim.trace import ENGINES, Instruction, Lifetime
from nkibench.policy.roofline import PEAKS
from nkibench.sandbox.loader import load_kernel
from nkibench.suites import CALIBRATION
from tests.support.nki_helpers import FILENAME, run

pytestmark = pytest.mark.usefixtures("shadow_modules")
rng = np.random.default_rng(11)
BF16 = ml_dtypes.bfloat16


def randn(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def modelled(body: str, *args: object, target: str = "trn1") -> Estimate:
    ran = run(body, *args, config=Config(target=target, kernel_file=FILENAME))
    return estimate(ran.trace.instructions, target, ran.lifetimes)


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
        kernel = load_kernel((folder / name).read_text(), filename, "kernel", "nki-legacy")
        ran = execute(kernel, [lhsT, rhs], Config(kernel_file=filename))
        relative = np.linalg.norm(ran.outputs[0].astype(np.float32) - expected)
        assert relative < 1e-2 * np.linalg.norm(expected), name  # the same computation
        rungs[name] = estimate(ran.trace.instructions, "trn1", ran.lifetimes)
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


# --- the current-NKI tutorial's ladder (the nki package; documented order, on trn2) ----------


def test_a_ladder_is_ranked_right_only_when_every_rung_is_faster_and_correct() -> None:
    ladder = {"order": ["a.py", "b.py", "c.py"], "target": "trn2", "shapes": "small", "source": "s"}

    def rung(name: str, ms: float | None, *, correct: bool = True) -> dict[str, Any]:
        return {"kernel": name, "estimated_ms": ms, "correct": correct}

    def ranked(*rows: dict[str, Any]) -> bool:
        return bool(_ladder_summary("t", ladder, "trn2", list(rows))["ranked_right"])

    assert ranked(rung("a.py", 3.0), rung("b.py", 2.0), rung("c.py", 1.0))
    assert not ranked(rung("a.py", 3.0), rung("b.py", 2.0), rung("c.py", 2.0))  # a tie
    assert not ranked(rung("a.py", 2.0), rung("b.py", 3.0), rung("c.py", 1.0))
    assert not ranked(rung("a.py", 3.0), rung("b.py", 2.0), rung("c.py", 1.0, correct=False))
    assert not ranked(rung("a.py", 3.0), rung("b.py", None), rung("c.py", 1.0))


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
        v = nisa.tensor_scalar(
            data=VECTOR_INPUT, op0=nl.multiply, operand0=0.5, engine=nisa.vector_engine
        )
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
            t2 = nisa.tensor_scalar(
                data=t, op0=nl.multiply, operand0=0.5, engine=nisa.vector_engine
            )
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


# --- trn3 (NeuronCore-v4) --------------------------------------------------------------------


def test_every_source_names_a_listed_document_or_says_what_it_is() -> None:
    """A source starts with a key of the tables' docstring (ARCH3, CHIP3, ...), or says it is an
    ASSUMPTION, CALIBRATED, FITTED or derived: a citation of an unlisted document fails here;
    a FITTED constant names a task of FITTED_TASKS, the data it was fitted on."""
    keys = set(re.findall(r"^- (\w+):", tables.__doc__ or "", flags=re.MULTILINE))
    assert {"ARCH3", "CORE3", "CHIP3", "ISA4"} <= keys
    kinds = keys | {"ASSUMPTION", "CALIBRATED", "FITTED", "derived"}
    for generation in GENERATIONS.values():
        for name, entry in generation.constants().items():
            source = str(entry["source"])
            first_word = re.split(r"\W", source, maxsplit=1)[0]
            assert first_word in kinds, (generation.name, name, source)
            if first_word == "FITTED":
                assert any(task in source for task in tables.FITTED_TASKS), source


def test_trn3_numbers_are_the_documented_ones_and_the_rest_say_assumption() -> None:
    trn2, trn3 = GENERATIONS["trn2"], GENERATIONS["trn3"]
    documented = {
        "tensor_ghz": 2.4,
        "vector_ghz": 1.2,
        "scalar_ghz": 1.2,
        "gpsimd_ghz": 1.2,
        "fp32_matmul_factor": 4,
        "vector_elements_per_cycle_4byte": 2,
        "vector_elements_per_cycle_2byte": 4,
        "dma_engines": 16,
        "dma_bytes_per_ns_per_engine": 33,
        "hbm_bytes_per_ns_per_core": 4900 / 8,
        "sbuf_bytes_per_partition": 32 * 1024**2 / 128,
        "psum_bytes_per_partition": 2 * 1024**2 / 128,
        "psum_tile_bytes": 4096 * 4,
    }
    constants = trn3.constants()
    for name, value in documented.items():
        assert constants[name]["value"] == pytest.approx(value), name
        assert not str(constants[name]["source"]).startswith("ASSUMPTION"), name
    # what no document gives for NC-v4 is NC-v2's number, and says so
    for name in (
        "matmul_init_cycles",
        "min_ii_cycles",
        "vector_static_cycles",
        "scalar_static_cycles",
        "gpsimd_static_cycles",
        "dma_transfer_ns",
        "dma_engine_transfer_ns",
        "dma_transpose_efficiency",
    ):
        assert str(constants[name]["source"]).startswith("ASSUMPTION"), name
        assert constants[name]["value"] == trn2.constants()[name]["value"], name
    # a whole PSUM partition per matmul on trn3, one 2 KiB bank before it
    assert trn3.psum_tile_bytes.value == trn3.psum_bytes_per_partition.value
    assert trn2.psum_tile_bytes.value == trn2.psum_bank_bytes.value == 2048


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_roofline_peaks_follow_the_generation_table(target: str) -> None:
    """The documented TFLOPS are a 128x128 array at TensorE's clock (2 flops a multiply-add),
    the fp32 rate is the bf16 one over the fp32 factor, and both tables agree on bandwidth
    and on the VectorE + ScalarE rate."""
    g, peaks = GENERATIONS[target], PEAKS[target]
    array = 128 * 128 * 2 * g.tensor_ghz.value * 1e9
    assert peaks.matmul_flops_bf16.value == pytest.approx(array, rel=0.015)
    fp32 = peaks.matmul_flops_bf16.value / g.fp32_matmul_factor.value
    assert peaks.matmul_flops.value == pytest.approx(fp32, rel=0.015)
    assert peaks.bandwidth.value / 1e9 == pytest.approx(
        g.hbm_bytes_per_ns_per_core.value, rel=0.002
    )
    lanes = 128 * (
        g.vector_elements_per_cycle_4byte.value * g.vector_ghz.value + g.scalar_ghz.value
    )
    assert peaks.vector_flops.value == pytest.approx(lanes * 1e9)


MIXED = """
@nki.jit
def kernel(x, a, b):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    mm = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    a_tile = nl.load(a)
    b_tile = nl.load(b)
    acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    for r in nl.affine_range(8):
        acc += nisa.nc_matmul(a_tile, b_tile)
    nl.store(mm, value=nl.copy(acc))
    for i in nl.affine_range(x.shape[0] // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        e = nisa.activation(op=nl.exp, data=t)
        y = nisa.tensor_scalar(data=e, op0=nl.multiply, operand0=0.5)
        nl.store(out[i * 128:(i + 1) * 128, :], value=y)
    return out, mm
"""


def test_a_trn3_estimate_of_a_trn2_trace_follows_the_clocks() -> None:
    """One trace, two tables: VectorE runs at 1.2 instead of 0.96 GHz, TensorE and ScalarE
    keep their clocks, and the DMA engines move 33 instead of 23 B/ns."""
    ran = run(
        MIXED,
        randn(512, 2048),
        randn(128, 128, dtype=BF16),
        randn(128, 512, dtype=BF16),
        config=Config(target="trn2", kernel_file=FILENAME),
    )
    trn2 = estimate(ran.trace.instructions, "trn2", ran.lifetimes)
    trn3 = estimate(ran.trace.instructions, "trn3", ran.lifetimes)
    assert trn3.busy_ns["vector"] == pytest.approx(trn2.busy_ns["vector"] * 0.96 / 1.2)
    assert trn3.busy_ns["scalar"] == pytest.approx(trn2.busy_ns["scalar"])
    assert trn3.busy_ns["tensor"] == pytest.approx(trn2.busy_ns["tensor"])
    assert trn3.busy_ns["tensor"] > 0
    # faster engines, but the fixed 550 ns per transfer stays: between 23/33 and 1
    ratio = trn3.busy_ns["dma"] / trn2.busy_ns["dma"]
    assert 23 / 33 < ratio < 1
    assert trn3.latency_ns < trn2.latency_ns


def test_target_specs_keep_one_bank_until_trn3_takes_the_whole_psum() -> None:
    for name in ("trn1", "trn2"):
        spec = TARGETS[name]
        assert (spec.psum_bank_bytes, spec.psum_tile_bytes) == (2048, 2048), name
        assert spec.psum_tile_fmax(4) == tile_size.psum_bank_fmax == 512
        assert spec.psum_bytes_per_partition // spec.psum_bank_bytes == 8
        assert spec.matmul_psum_dtypes == ("float32",)
    trn3 = TARGETS["trn3"]
    assert trn3.sbuf_bytes_per_partition == 256 * 1024
    assert trn3.psum_bytes_per_partition // trn3.psum_bank_bytes == 8
    assert (trn3.psum_tile_fmax(4), trn3.psum_tile_fmax(2)) == (4096, 8192)
    assert "bfloat16" in trn3.matmul_psum_dtypes
    assert set(TARGETS) == set(GENERATIONS)


@pytest.mark.parametrize("tile", [0, 3000, 32 * 1024])
def test_a_psum_tile_must_be_whole_banks_within_a_partition(tile: int) -> None:
    with pytest.raises(ValueError, match="whole banks"):
        TargetSpec("trnX", 1024, psum_tile_bytes=tile)


# --- what the compiler does to loads (nkibench/cost/compiler.py) -------------------------------

REPEATED_LOADS = """
@nki.jit
def kernel(x, y):
    out = nl.ndarray((128, 1024), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        cols = slice(i * 256, (i + 1) * 256)
        a = nl.load(x[:, cols])
        SECOND_LOAD
        nl.store(out[:, cols], value=nl.multiply(a, b))
    return out
"""


def test_a_load_repeated_by_another_statement_is_served_from_sbuf() -> None:
    x, y = randn(128, 1024), randn(128, 1024)
    once = modelled(REPEATED_LOADS.replace("SECOND_LOAD", "b = a"), x, y)
    twice = modelled(REPEATED_LOADS.replace("SECOND_LOAD", "b = nl.load(x[:, cols])"), x, y)
    other = modelled(REPEATED_LOADS.replace("SECOND_LOAD", "b = nl.load(y[:, cols])"), x, y)
    assert twice.counters["hbm_read_bytes"] == once.counters["hbm_read_bytes"] == 128 * 1024 * 4
    assert twice.counters["dma_transfer_count"] == once.counters["dma_transfer_count"]
    assert twice.busy_ns["dma"] == pytest.approx(once.busy_ns["dma"])
    assert other.counters["hbm_read_bytes"] == 2 * once.counters["hbm_read_bytes"]


def test_a_load_after_a_store_to_its_source_is_paid() -> None:
    """The store may have changed what the first load read: the second load reads HBM again."""
    body = """
    @nki.jit
    def kernel(x):
        out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
        a = nl.load(x)
        nl.store(out, value=nl.exp(a))
        b = nl.load(out)
        c = nl.load(out)
        nl.store(out, value=nl.add(b, c))
        d = nl.load(out)
        nl.store(out, value=nl.exp(d))
        return out
    """
    run_ = modelled(body, randn(128, 512))
    tile = 128 * 512 * 4
    # x once, then `out` after the first store (c is b again), then after the second store
    assert run_.counters["hbm_read_bytes"] == 3 * tile


def test_a_load_repeated_by_its_loop_is_paid_every_time() -> None:
    """The compiler hoists no loop-invariant load (the matmul tutorial's hoisting step is
    measured to save time): the same statement loading the same tile again reads HBM again."""
    body = """
    @nki.jit
    def kernel(x):
        out = nl.ndarray((4, 128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(4):
            a = nl.load(x)
            nl.store(out[i], value=nl.exp(a))
        return out
    """
    run_ = modelled(body, randn(128, 512))
    assert run_.counters["hbm_read_bytes"] == 4 * 128 * 512 * 4


PSUM_EVACUATION = """
@nki.jit
def kernel(a, b):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    acc += nisa.nc_matmul(nl.load(a), nl.load(b))
    nl.store(out, value=COPY)
    return out
"""


@pytest.mark.parametrize(
    ("copy", "engine"),
    [
        ("nl.copy(acc)", "scalar"),  # left to the compiler, which evacuates PSUM on ScalarE
        ("nisa.tensor_copy(acc)", "scalar"),
        ("nisa.tensor_copy(acc, engine=nisa.vector_engine)", "vector"),  # the kernel's choice
    ],
)
def test_psum_is_evacuated_where_the_compiler_puts_it(copy: str, engine: str) -> None:
    estimated = modelled(PSUM_EVACUATION.replace("COPY", copy), randn(128, 128), randn(128, 512))
    other = "vector" if engine == "scalar" else "scalar"
    assert estimated.busy_ns[engine] > 0
    assert estimated.busy_ns[other] == 0
    assert estimated.instructions[engine] == 1


SCALED_TILES = """
@nki.jit
def kernel(x):
    out = nl.ndarray((8, 128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(8):
        t = nl.load(x[i])
        y = [nisa.tensor_scalar(t, np.multiply, k, op1=np.add, operand1=1.0ENGINE)
             for k in range(4)]
        nl.store(out[i], value=nl.add(nl.add(y[0], y[1]), nl.add(y[2], y[3])))
    return out
"""


def test_work_the_kernel_leaves_to_the_compiler_spreads_over_vector_and_scalar() -> None:
    """32 affine updates left to the compiler beside 24 tile additions VectorE must do: ScalarE
    takes part of them, and the kernel is faster than with all of them pinned to VectorE."""
    x = randn(8, 128, 512)
    placed = modelled(SCALED_TILES.replace("ENGINE", ""), x)
    pinned = modelled(SCALED_TILES.replace("ENGINE", ", engine=nisa.vector_engine"), x)
    assert pinned.instructions["vector"] == 56
    assert pinned.busy_ns["scalar"] == 0
    assert placed.instructions["vector"] + placed.instructions["scalar"] == 56
    assert 24 < placed.instructions["vector"] < 56
    assert placed.latency_ns < pinned.latency_ns


def test_work_scalar_engine_cannot_express_stays_on_vector() -> None:
    body = SCALED_TILES.replace("np.multiply, k, op1=np.add, operand1=1.0ENGINE", "np.maximum, k")
    placed = modelled(body, randn(8, 128, 512))
    assert placed.instructions["vector"] == 56
    assert placed.busy_ns["scalar"] == 0


# --- SBUF buffers per tile, and spills --------------------------------------------------------

STREAM = """
@nki.jit
def kernel(x):
    tiles, free = x.shape[0], x.shape[2]
    out = nl.ndarray((tiles, 128, free), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(tiles):
        t = nl.load(x[i])
        u = nisa.activation(op=nl.exp, data=t)
        v = nisa.tensor_scalar(data=u, op0=nl.multiply, operand0=0.5, engine=nisa.vector_engine)
        nl.store(out[i], value=v)
    return out
"""


def _without_lifetimes(body: str, *args: object) -> Estimate:
    ran = run(body, *args, config=Config(target="trn1", kernel_file=FILENAME))
    return estimate(ran.trace.instructions, "trn1")


def test_loads_run_ahead_of_compute_only_as_far_as_sbuf_has_buffers() -> None:
    """Three 64 KiB tiles per iteration fill a 192 KiB partition: one buffer each, so the next
    load waits for this iteration's compute; 2 KiB tiles leave room for many buffers and run
    exactly as with unlimited ones."""
    big = randn(8, 128, 16384)
    one_buffer = modelled(STREAM, big)
    unlimited = _without_lifetimes(STREAM, big)
    assert one_buffer.counters["sbuf_buffers_per_tile"] == 1
    assert one_buffer.busy_ns == pytest.approx(unlimited.busy_ns)  # the same work
    assert one_buffer.latency_ns > 1.2 * unlimited.latency_ns
    small = randn(64, 128, 512)
    many = modelled(STREAM, small)
    assert many.counters["sbuf_buffers_per_tile"] == (192 * 1024) // (3 * 2048)
    assert many.latency_ns == pytest.approx(_without_lifetimes(STREAM, small).latency_ns)


HELD = """
@nki.jit
def kernel(x):
    out = nl.ndarray((128, 24576), dtype=x.dtype, buffer=nl.shared_hbm)
    a = nl.load(x[0])
    b = nl.load(x[1])
    c = nl.load(x[2])
    nl.store(out, value=nl.add(nl.add(a, b), c))
    return out
"""


def test_tiles_live_beyond_a_partition_are_spilled_whole_and_charged() -> None:
    """Three 96 KiB tiles at once: a and b fill the 192 KiB partition, so c is spilled whole, a
    load read again from HBM before its reader; a + b's result, written while a and b are
    still live, is spilled too, saved and read back. 12 KiB tiles never spill."""
    tile = 96 * 1024 * 128
    spilled = modelled(HELD, randn(3, 128, 24576))
    assert spilled.counters["spill_save_bytes"] == tile
    assert spilled.counters["spill_reload_bytes"] == 2 * tile
    unlimited = _without_lifetimes(HELD, randn(3, 128, 24576))
    assert spilled.counters["hbm_read_bytes"] == unlimited.counters["hbm_read_bytes"] + 2 * tile
    assert spilled.counters["hbm_write_bytes"] == unlimited.counters["hbm_write_bytes"] + tile
    spill_ns = 3 * tile / GENERATIONS["trn1"].hbm_bytes_per_ns_per_core.value
    assert spilled.latency_ns > unlimited.latency_ns + 0.5 * spill_ns
    fits = modelled(HELD.replace("24576", "3072"), randn(3, 128, 3072))
    assert fits.counters["spill_save_bytes"] == fits.counters["spill_reload_bytes"] == 0


@pytest.mark.parametrize(
    ("capacity_kib", "waits"),
    [
        (192, {4: 1, 5: 1, 6: 3, 7: 3}),
        # 40 KiB left over after two sets: one more buffer for line 10, which allocates first
        (200, {5: 1, 6: 1, 7: 3}),
    ],
)
def test_a_tile_reuses_the_buffer_of_the_tile_depth_iterations_earlier(
    capacity_kib: int, waits: dict[int, int]
) -> None:
    """Two statements (lines 10 and 11) allocate a 40 KiB tile per iteration: 80 KiB an
    iteration, so a 192 KiB partition holds two of each; iteration 2's load (instruction 4)
    waits for iteration 0's last read (instruction 1), iteration 3's for iteration 1's."""
    instructions = [
        Instruction(index, "op", "vector", [], None, line=10 + index % 2) for index in range(8)
    ]
    kib = 1024
    lifetimes = [Lifetime("sbuf", 2 * i, 2 * i + 1, 40 * kib, 128) for i in range(4)]
    lifetimes += [Lifetime("sbuf", 2 * i + 1, 2 * i + 1, 40 * kib, 128) for i in range(4)]
    plan = plan_buffers(instructions, lifetimes, capacity_kib * kib, lambda size: size / 410)
    assert plan.depth == 2
    assert plan.waits == waits
    assert plan.spills == []
