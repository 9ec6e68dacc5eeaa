"""nkisim's current-NKI front (`import nki`): golden kernels against NumPy, and planted bugs
each rejected with a typed error that names the kernel line."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from nkibench.backends.nkisim.phases import _order_check
from nkibench.nkisim.current import UNSUPPORTED
from nkibench.nkisim.current.frontend import SHADOWED, install_shadow_modules
from nkibench.nkisim.errors import (
    ConstraintViolation,
    KernelError,
    OrderDependence,
    OutOfBounds,
    UninitializedRead,
    UnsupportedApi,
)
from nkibench.nkisim.machine import Config
from nkibench.nkisim.runtime import KernelRun, execute
from nkibench.sandbox.kernel import run_error
from nkibench.sandbox.loader import ImportBlocked, load_kernel
from nkibench.sandbox.static_check import check_source

DATA = Path(__file__).resolve().parents[1] / "data" / "nki_current"
rng = np.random.default_rng(11)


@pytest.fixture(autouse=True)
def current_modules(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The current `nki` shadow modules for one test; sys.modules is restored after it."""
    saved = {name: sys.modules[name] for name in SHADOWED if name in sys.modules}
    for name in ("neuronxcc", "neuronxcc.nki", "neuronxcc.nki.language"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    install_shadow_modules()
    yield
    for name in SHADOWED:
        sys.modules.pop(name, None)
    sys.modules.update(saved)


def randn(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def load(name: str, function: str = "kernel") -> tuple[Any, str]:
    path = DATA / f"{name}.py"
    return load_kernel(path.read_text(), str(path), function, "nki"), str(path)


def run(
    name: str, *args: Any, function: str = "kernel", target: str = "trn2", **config: Any
) -> KernelRun:
    kernel, filename = load(name, function)
    return execute(kernel, list(args), Config(target=target, kernel_file=filename, **config))


def run_source(source: str, *args: Any, target: str = "trn2") -> KernelRun:
    kernel = load_kernel(source, "<current kernel>", "kernel", "nki")
    return execute(kernel, list(args), Config(target=target, kernel_file="<current kernel>"))


PRELUDE = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n"


# --- golden kernels ----------------------------------------------------------------------------


def test_tensor_add_records_one_instruction_per_call() -> None:
    a, b = randn(256, 512), randn(256, 512)
    result = run("tensor_add", a, b)
    np.testing.assert_array_equal(result.outputs[0], a + b)
    ops = [(i.op, i.engine) for i in result.trace.instructions]
    assert (
        ops == ([("dma_copy", "dma")] * 2 + [("tensor_tensor", "vector"), ("dma_copy", "dma")]) * 2
    )
    add = result.trace.instructions[2]
    assert add.output is not None
    assert add.output.buffer == "sbuf"
    assert add.line == line_of(DATA / "tensor_add.py", "op=nl.add")
    assert add.index in result.trace.instructions[3].deps


def test_tiled_matmul_accumulates_over_k_in_psum() -> None:
    lhs_t, rhs = randn(256, 256), randn(256, 1024)
    result = run("matmul_tiled", lhs_t, rhs)
    np.testing.assert_allclose(result.outputs[0], lhs_t.T @ rhs, rtol=1e-4, atol=1e-3)
    matmuls = [i for i in result.trace.instructions if i.op == "nc_matmul"]
    assert len(matmuls) == 8
    assert [m.attrs["accumulate"] for m in matmuls] == [False, True] * 4
    assert all(m.output is not None and m.output.buffer == "psum" for m in matmuls)
    assert matmuls[0].index in matmuls[1].deps  # the accumulation depends on the first write


def test_transpose_on_tensor_and_vector_engines() -> None:
    x, small = randn(128, 96), randn(32, 16)
    result = run("transpose", x, small)
    np.testing.assert_array_equal(result.outputs[0], x.T)
    np.testing.assert_array_equal(result.outputs[1], small.T)
    engines = [i.engine for i in result.trace.instructions if i.op == "nc_transpose"]
    assert engines == ["tensor", "vector"]


def test_softmax_with_a_fused_row_sum() -> None:
    x = randn(256, 384)
    result = run("softmax", x)
    expected = np.exp(x - x.max(axis=1, keepdims=True))
    expected /= expected.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(result.outputs[0], expected, rtol=1e-5, atol=1e-6)


def test_rmsnorm_with_a_broadcast_weight_and_a_helper_function() -> None:
    x, w = randn(256, 512), randn(512)
    result = run("rmsnorm", x, w)
    expected = x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(result.outputs[0], expected, rtol=1e-4, atol=1e-5)


def test_fori_loop_with_a_register_bound_and_scalar_offsets() -> None:
    data = randn(8, 64)
    result = run("fori_loop", data, np.array([[5]], dtype=np.int32))
    np.testing.assert_array_equal(result.outputs[0][:5], 2 * data[:5])
    assert result.never_written == [3 * 64]  # rows past the bound stay unwritten


def test_access_patterns_views_iota_and_while_loop() -> None:
    x = randn(128, 64)
    odd, block, swapped, ramp = run("access_patterns", x).outputs
    np.testing.assert_array_equal(odd, x[:, 1::2])
    np.testing.assert_array_equal(block, x[1:9:2, 4:20:2])
    np.testing.assert_array_equal(swapped, x.reshape(128, 2, 32))
    expected = np.arange(128)[:, None] * 8 + np.arange(8)[None, :] + 3
    np.testing.assert_array_equal(ramp, expected.astype(np.float32))


def test_lnc2_grid_runs_each_program_with_its_id() -> None:
    x = randn(256, 64)
    result = run_source(
        PRELUDE
        + """
@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    half = x.shape[0] // nl.num_programs(0)
    i = nl.program_id(0)
    t = nl.ndarray((half, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[i * half:(i + 1) * half, :])
    nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=float(i))
    nisa.dma_copy(dst=out[i * half:(i + 1) * half, :], src=t)
    return out

kernel = kernel[2]
""",
        x,
    )
    shift = np.repeat(np.array([0.0, 1.0], dtype=np.float32), 128)[:, None]
    np.testing.assert_array_equal(result.outputs[0], x + shift)


def test_python_meta_programming_runs_eagerly() -> None:
    x = randn(128, 32)
    result = run_source(
        PRELUDE
        + """
import functools


class Step:
    def __init__(self, op, operand):
        self.op, self.operand = op, operand


def apply(t, steps):
    if not steps:
        return t
    head, *rest = steps
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=out, data=t, op0=head.op, operand0=head.operand)
    return apply(out, rest)


@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    steps = [Step(op, value) for op, value in ((nl.multiply, 3.0), (nl.add, 1.0))]
    scale = functools.partial(apply, steps=steps)
    nisa.dma_copy(dst=out, src=scale(t))
    return out
""",
        x,
    )
    np.testing.assert_allclose(result.outputs[0], x * 3 + 1, rtol=1e-6)


def test_trn3_matmul_writes_bfloat16_and_spans_two_banks() -> None:
    kernel_source = (
        PRELUDE
        + """
@nki.jit
def kernel(a, b):
    out = nl.ndarray((128, 1024), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    s = nl.ndarray(a.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
    m = nl.ndarray(b.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=a)
    nisa.dma_copy(dst=m, src=b)
    acc = nl.ndarray((128, 1024), dtype=nl.bfloat16, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=s, moving=m)
    o = nl.ndarray((128, 1024), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=acc)
    nisa.dma_copy(dst=out, src=o)
    return out
"""
    )
    bf16 = ml_dtypes.bfloat16
    a, b = randn(128, 128, dtype=bf16), randn(128, 1024, dtype=bf16)
    result = run_source(kernel_source, a, b, target="trn3")
    expected = a.astype(np.float32).T @ b.astype(np.float32)
    np.testing.assert_allclose(result.outputs[0].astype(np.float32), expected, rtol=2e-2, atol=0.3)
    with pytest.raises(ConstraintViolation, match="moving free size 1024 exceeds the limit of 512"):
        run_source(kernel_source, a, b, target="trn2")


def test_tile_size_follows_the_target() -> None:
    source = (
        PRELUDE
        + """
@nki.jit
def kernel(x):
    out = nl.ndarray((1, 4), dtype=nl.int32, buffer=nl.shared_hbm)
    t = nl.ndarray((1, 4), dtype=nl.int32, buffer=nl.sbuf)
    for j, value in enumerate((nl.tile_size.pmax, nl.tile_size.psum_bank_fmax,
                               nl.tile_size.gemm_stationary_fmax, nl.tile_size.gemm_moving_fmax)):
        nisa.memset(dst=t[:, j:j + 1], value=value)
    nisa.dma_copy(dst=out, src=t)
    return out
"""
    )
    x = randn(2, 2)
    assert run_source(source, x).outputs[0].tolist() == [[128, 512, 128, 512]]
    assert run_source(source, x, target="trn3").outputs[0].tolist() == [[128, 512, 128, 4096]]


def test_legacy_names_are_refused_with_their_replacement() -> None:
    import nki.language as nl

    for name, replacement in (("arange", "nl.ds"), ("mgrid", "slices"), ("par_dim", "first")):
        with pytest.raises(UnsupportedApi, match=replacement):
            getattr(nl, name)
    assert any("mask=" in api for api, _ in UNSUPPORTED)


# --- planted bugs ------------------------------------------------------------------------------

Inputs = Callable[[], list[Any]]


def square() -> list[Any]:
    return [randn(128, 128)]


BUGS: list[tuple[str, Inputs, type[KernelError], str, dict[str, Any]]] = [
    ("dst_in_hbm", square, ConstraintViolation, r"dst `\w+` is in shared_hbm", {}),
    ("matmul_operand_in_psum", square, ConstraintViolation, "moving `.*` is in psum", {}),
    ("too_many_partitions", lambda: [randn(256, 128)], ConstraintViolation, "partitions 256", {}),
    ("psum_bank_overflow", square, ConstraintViolation, "one bank", {}),
    ("never_written_sbuf", square, UninitializedRead, "no instruction has written", {}),
    ("out_of_bounds_slice", lambda: [randn(200, 128)], OutOfBounds, "bound the slice", {}),
    ("accumulate_onto_unwritten_psum", square, ConstraintViolation, "no matmul has written", {}),
    ("accumulate_onto_memset_psum", square, ConstraintViolation, "non-matmul instruction", {}),
    ("fori_loop_past_the_end", lambda: [randn(4, 32)], OutOfBounds, "dimension 0", {}),
    ("legacy_mask", square, UnsupportedApi, "mask= was removed", {}),
    ("legacy_arange", square, UnsupportedApi, "arange was removed", {}),
    ("legacy_return_style", square, ConstraintViolation, "destination passed first", {}),
    ("dma_from_psum", square, ConstraintViolation, "DMA moves data between HBM and SBUF", {}),
    ("tensor_tensor_both_psum", square, ConstraintViolation, "both in PSUM", {}),
    ("reduce_over_partitions", square, ConstraintViolation, "axis 0 is the partition", {}),
    (
        "stationary_too_wide",
        lambda: [randn(128, 256), randn(128, 128)],
        ConstraintViolation,
        "stationary free size 256",
        {},
    ),
    (
        "moving_too_wide",
        lambda: [randn(128, 128), randn(128, 1024)],
        ConstraintViolation,
        "moving free size 1024 exceeds the limit of 512",
        {},
    ),
    (
        "fp32_with_bf16",
        lambda: [randn(128, 128), randn(128, 128)],
        ConstraintViolation,
        "float32 operand needs a float32 partner",
        {},
    ),
    (
        "matmul_dst_bf16",
        lambda: [randn(128, 128), randn(128, 512)],
        ConstraintViolation,
        "a matmul writes float32 into PSUM",
        {},
    ),
    ("sbuf_capacity", square, ConstraintViolation, "strict capacity", {"strict_capacity": True}),
    ("sbuf_tile_too_large", square, ConstraintViolation, "bytes per partition", {}),
    ("writes_its_input", square, ConstraintViolation, "inputs are read-only", {}),
    (
        "tensor_scalar_operand_partitions",
        square,
        ConstraintViolation,
        r"tile of shape \(128, 1\)",
        {},
    ),
    ("tensor_tensor_shapes", square, ConstraintViolation, "does not broadcast", {}),
    (
        "transpose_into_sbuf_on_tensor_engine",
        square,
        ConstraintViolation,
        "TensorE transpose writes PSUM",
        {},
    ),
    ("gpsimd_reads_psum", square, ConstraintViolation, "GpSimd engine cannot access PSUM", {}),
    ("reduce_registers_never_reset", square, ConstraintViolation, "reset_reduce", {}),
    ("partition_step_of_ap", square, ConstraintViolation, "step must be the tensor's free", {}),
    ("permute_partition_dim", square, ConstraintViolation, "partition dimension first", {}),
    ("register_as_python_int", lambda: [randn(4, 32)], ConstraintViolation, "VirtualRegister", {}),
    ("exponential_on_trn2", square, ConstraintViolation, "NeuronCore-v4", {}),
    ("reduce_axis_not_trailing", lambda: [randn(128, 32)], ConstraintViolation, "last contig", {}),
]


def line_of(path: Path, needle: str, after: int = 0) -> int:
    lines = path.read_text().splitlines()
    return next(i for i in range(after, len(lines)) if needle in lines[i]) + 1


def bug_line(function: str, path: Path = DATA / "planted_bugs.py") -> int:
    """The line marked `# BUG` in `function` of the planted-bug kernels."""
    return line_of(path, "# BUG", after=line_of(path, f"def {function}("))


def rendered(error: BaseException, filename: str) -> dict[str, Any]:
    """The error as the sandboxed child reports it (kind, message with the kernel line)."""
    return run_error(error, {"display_name": "kernel.py", "kernel_file": filename}, seed=0)


@pytest.mark.parametrize(
    ("function", "inputs", "error", "match", "config"), BUGS, ids=[b[0] for b in BUGS]
)
def test_planted_bug_is_rejected_at_its_line(
    function: str, inputs: Inputs, error: type[KernelError], match: str, config: dict[str, Any]
) -> None:
    with pytest.raises(error, match=match) as caught:
        run("planted_bugs", *inputs(), function=function, **config)
    report = rendered(caught.value, str(DATA / "planted_bugs.py"))
    assert f"line {bug_line(function)}" in report["message"], report["message"]
    assert report["kind"] == caught.value.kind


def test_planted_bf16_matmul_dst_is_fine_on_trn3() -> None:
    a, b = randn(128, 128), randn(128, 512)
    result = run("planted_bugs", a, b, function="matmul_dst_bf16", target="trn3")
    expected = a.astype(ml_dtypes.bfloat16).astype(np.float32).T @ b.astype(
        ml_dtypes.bfloat16
    ).astype(np.float32)
    np.testing.assert_allclose(result.outputs[0].astype(np.float32), expected, rtol=2e-2, atol=0.3)


def test_planted_order_dependence_is_blamed_on_its_loop() -> None:
    kernel, filename = load("planted_bugs", "order_dependent_affine_range")
    config = Config(target="trn2", kernel_file=filename)
    a = randn(512, 128)
    first = execute(kernel, [a], config)
    with pytest.raises(OrderDependence) as caught:
        _order_check(kernel, [a], config, first, "kernel.py")
    assert f"line {bug_line('order_dependent_affine_range')}" in str(caught.value)


def test_planted_legacy_import_is_refused_at_load() -> None:
    path = DATA / "mixed_legacy.py"
    with pytest.raises(ImportBlocked, match="neuronxcc") as caught:
        load("mixed_legacy")
    assert f"line {line_of(path, '# BUG')}" in rendered(caught.value, str(path))["message"]


def test_every_planted_bug_is_in_the_table() -> None:
    source = (DATA / "planted_bugs.py").read_text()
    defined = {line[4:].split("(")[0] for line in source.splitlines() if line.startswith("def ")}
    assert defined == {b[0] for b in BUGS} | {"order_dependent_affine_range"}
    assert len(BUGS) >= 20


def test_vector_scalar_and_gpsimd_instructions_match_numpy() -> None:
    x = randn(128, 64)
    (
        reversed_scalar,
        scalar_tensor,
        scan,
        kept,
        row_max,
        window_max,
        sums,
        moments,
        top,
        causal,
        flipped,
        exp,
    ) = run("vector_ops", x).outputs
    p = np.arange(128, dtype=np.float32)[:, None]
    np.testing.assert_allclose(reversed_scalar, (1 - x) * 3, rtol=1e-6)
    np.testing.assert_allclose(scalar_tensor, (x + p) * x, rtol=1e-6)
    np.testing.assert_allclose(scan, np.cumsum(x, axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(kept, np.where(x > 0, x, 0))
    np.testing.assert_array_equal(row_max, np.where(x > 0, x, 0).max(axis=1, keepdims=True))
    np.testing.assert_array_equal(window_max, x[:, 8:24].max(axis=1, keepdims=True))
    np.testing.assert_allclose(sums, 2 * x.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(moments[:, 0], x.mean(axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(moments[:, 1], x.var(axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(top, -np.sort(-x, axis=1)[:, :8])
    f = np.arange(64)[None, :]
    np.testing.assert_array_equal(causal, np.where(p - f >= 0, x, -1.0))
    np.testing.assert_array_equal(flipped, x.T)
    np.testing.assert_allclose(exp, np.exp(x), rtol=1e-6)


MATMUL_MODES = (
    PRELUDE
    + """
@nki.jit
def kernel(a, b):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    s = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    m = nl.ndarray((128, 128), dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=a)
    nisa.dma_copy(dst=m, src=b)
    acc = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.memset(dst=acc, value=5.0)
    for k in range(3):
        nisa.nc_matmul(dst=acc, stationary=s, moving=m, accumulate=ACCUMULATE)
    o = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=acc)
    nisa.dma_copy(dst=out, src=o)
    return out
"""
)


@pytest.mark.parametrize(
    ("accumulate", "target", "factor", "offset"),
    [
        ("None", "trn2", 3, 0),  # the memset does not count: the first matmul overwrites
        ("(k > 0)", "trn2", 3, 0),
        ("False", "trn2", 1, 0),
        ("True", "trn3", 3, 5),  # NeuronCore-v4 accumulates onto memset PSUM
    ],
)
def test_matmul_accumulate_modes(accumulate: str, target: str, factor: int, offset: int) -> None:
    a, b = randn(128, 128), randn(128, 128)
    result = run_source(MATMUL_MODES.replace("ACCUMULATE", accumulate), a, b, target=target)
    np.testing.assert_allclose(result.outputs[0], factor * (a.T @ b) + offset, rtol=1e-4, atol=1e-3)


PSUM_HALVES = (
    PRELUDE
    + """
@nki.jit
def kernel(a, b):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    s = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    m = nl.ndarray((128, 128), dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=a)
    nisa.dma_copy(dst=m, src=b)
    acc = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc[:, 0:64], stationary=s, moving=m[:, 0:64])
    RIGHT_HALF
    nisa.nc_matmul(dst=acc, stationary=s, moving=m, accumulate=ACCUMULATE)
    o = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=acc)
    nisa.dma_copy(dst=out, src=o)
    return out
"""
)


def test_matmul_accumulates_where_a_matmul_wrote_part_of_the_tile() -> None:
    """PSUM written in parts keeps its marks per element: the whole-tile matmul adds onto the
    half a matmul wrote and overwrites the half a memset wrote."""
    a, b = randn(128, 128), randn(128, 128)
    source = PSUM_HALVES.replace("RIGHT_HALF", "nisa.memset(dst=acc[:, 64:128], value=7.0)")
    result = run_source(source.replace("ACCUMULATE", "None"), a, b)
    product = a.T @ b
    expected = np.concatenate([2 * product[:, :64], product[:, 64:]], axis=1)
    np.testing.assert_allclose(result.outputs[0], expected, rtol=1e-4, atol=1e-3)
    with pytest.raises(ConstraintViolation, match="initialised by a non-matmul instruction"):
        run_source(source.replace("ACCUMULATE", "True"), a, b)
    unwritten = PSUM_HALVES.replace("RIGHT_HALF", "pass").replace("ACCUMULATE", "True")
    with pytest.raises(ConstraintViolation, match="onto 8192 element"):
        run_source(unwritten, a, b)


def test_views_slice_select_and_strict_reshape() -> None:
    x = randn(128, 4, 16)
    source = (
        PRELUDE
        + """
@nki.jit
def kernel(x):
    out = nl.ndarray((128, 16), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    row = t.select(1, 2).slice(1, 0, 16, 1)
    assert row.shape == (128, 16) and t.reshape((128, 64)).offset == 0
    assert t.get_pattern() == [[64, 128], [16, 4], [1, 16]]
    nisa.dma_copy(dst=out, src=row)
    t[:, :, 0:8].reshape((128, 32))
    return out
"""
    )
    with pytest.raises(ConstraintViolation, match="not contiguous"):
        run_source(source, x)
    passing = source.replace("    t[:, :, 0:8].reshape((128, 32))\n", "")
    np.testing.assert_array_equal(run_source(passing, x).outputs[0], x[:, 2, :])


def test_double_row_fp8_matmul_contracts_over_two_rows() -> None:
    fp8 = ml_dtypes.float8_e4m3fn
    a = rng.uniform(-1, 1, (128, 2, 64)).astype(fp8)
    b = rng.uniform(-1, 1, (128, 2, 256)).astype(fp8)
    source = (
        PRELUDE
        + """
@nki.jit
def kernel(a, b):
    out = nl.ndarray((64, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    s = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    m = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=a)
    nisa.dma_copy(dst=m, src=b)
    acc = nl.ndarray((64, 256), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=s, moving=m, perf_mode=nisa.matmul_perf_mode.double_row)
    o = nl.ndarray((64, 256), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=acc)
    nisa.dma_copy(dst=out, src=o)
    return out
"""
    )
    expected = np.einsum("kim,kin->mn", a.astype(np.float32), b.astype(np.float32))
    result = run_source(source, a, b)
    np.testing.assert_allclose(result.outputs[0], expected, rtol=1e-4, atol=1e-4)


def test_gathers_predicated_copies_partition_reductions_and_cumulative_scans() -> None:
    x = randn(128, 32)
    indices = rng.integers(0, 32, (128, 8)).astype(np.uint32)
    source = (
        PRELUDE
        + """
class Config(nl.NKIObject):
    pass


@nki.jit
def kernel(x, indices):
    config = Config(width=x.shape[1])
    assert isinstance(x, nl.NkiTensor) and nl.program_id(0) == 0 and nl.num_programs() == 1
    P, F = x.shape
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    idx = nl.ndarray(indices.shape, dtype=indices.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=indices)
    gathered = nl.ndarray(indices.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.nc_n_gather(dst=gathered, data=t, indices=idx)
    positive = nl.ndarray((P, F), dtype=nl.uint8, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=positive, data=t, op0=nl.greater, operand0=0.0)
    clipped = nl.zeros((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy_predicated(dst=clipped, src=t, predicate=positive)
    column_sum = nl.ndarray((1, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_partition_reduce(dst=column_sum, op=nl.add, data=t)
    running_max = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_cumulative(
        dst=running_max, src=t, op0=nl.multiply, op1=nl.maximum, imm0=1.0
    )
    outs = []
    for tile in (gathered, clipped, column_sum, running_max, t[-2:, -config.width // 2:]):
        o = nl.ndarray(tile.shape, dtype=tile.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=tile)
        outs.append(o)
    return tuple(outs)
"""
    )
    gathered, clipped, column_sum, running_max, corner = run_source(source, x, indices).outputs
    np.testing.assert_array_equal(gathered, np.take_along_axis(x, indices.astype(int), axis=1))
    np.testing.assert_array_equal(clipped, np.where(x > 0, x, 0))
    np.testing.assert_allclose(column_sum[0], x.sum(axis=0), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(running_max, np.maximum.accumulate(x, axis=1))
    np.testing.assert_array_equal(corner, x[-2:, 16:])


def test_instruction_errors_name_the_api_the_tensor_and_the_fix() -> None:
    source = (
        PRELUDE
        + """
@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf, name="tile")
    CALL
    return out
"""
    )
    cases = [
        ("nisa.tensor_copy(dst=t, src=x)", "src `arg0` is in shared_hbm.*nisa.dma_copy"),
        ("nisa.memset(dst=t, value=0.0, dtype=nl.float32)", "dtype= was removed"),
        ("nisa.tensor_copy(t, x, mask=None)", "mask= was removed"),
        ("nisa.memset(dst=out, value=1.0)", "dst `\\w+` is in shared_hbm.*nisa.dma_copy"),
        ("nisa.nc_matmul(t, t)", "missing a required argument: 'moving'"),
    ]
    for call, message in cases:
        with pytest.raises(KernelError, match=message):
            run_source(source.replace("CALL", call), randn(128, 64))


def test_indirect_gather_and_scatter_with_vector_offsets() -> None:
    data, rows = randn(16, 8), np.array([[3], [0], [15], [7]], dtype=np.uint32)
    source = (
        PRELUDE
        + """
@nki.jit
def kernel(data, indices):
    P, F = indices.shape[0], data.shape[1]
    gathered = nl.ndarray((P, F), dtype=data.dtype, buffer=nl.shared_hbm)
    scattered = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.shared_hbm)
    idx = nl.ndarray((P, 1), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=indices)
    t = nl.ndarray((P, F), dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=data.ap(pattern=[[F, P], [1, F]], vector_offset=idx, indirect_dim=0))
    nisa.dma_copy(dst=gathered, src=t)
    zeros = nl.zeros(data.shape, dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=scattered, src=zeros)
    nisa.dma_copy(
        dst=scattered.ap(pattern=[[F, P], [1, F]], vector_offset=idx, indirect_dim=0), src=t
    )
    return gathered, scattered
"""
    )
    gathered, scattered = run_source(source, data, rows).outputs
    np.testing.assert_array_equal(gathered, data[rows[:, 0]])
    expected = np.zeros_like(data)
    expected[rows[:, 0]] = data[rows[:, 0]]
    np.testing.assert_array_equal(scattered, expected)
    with pytest.raises(OutOfBounds, match="index range"):
        run_source(source, data, np.array([[3], [0], [16], [7]], dtype=np.uint32))


CONFIGURED = (
    PRELUDE
    + """
class Tiling(nl.NKIObject):
    def __init__(self, rows, cols):
        self.rows = rows
        self.cols: int = cols
        self.count = 0
        self.count += 1


class Plain:
    pass


@nki.jit
def kernel(x):
    tiling = Tiling(rows=x.shape[0], cols=x.shape[1])
    extra = Plain()
    extra.scale = first = 2.0
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray((tiling.rows, tiling.cols), x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    nisa.tensor_scalar(dst=tile, data=tile, op0=nl.multiply, operand0=extra.scale * tiling.count)
    nisa.dma_copy(dst=out, src=tile)
    return out
"""
)


def test_a_kernel_sets_attributes_on_its_own_objects() -> None:
    """NKI 0.7's configuration objects: `self.x = ...`, annotated and augmented writes, and
    chained targets, through the loader's guarded write."""
    assert check_source(CONFIGURED, "kernel.py", "nki") == []
    x = randn(128, 64)
    ran = run_source(CONFIGURED, x)
    np.testing.assert_allclose(ran.outputs[0], 2.0 * x, rtol=1e-6)


@pytest.mark.parametrize(
    "victim",
    [
        "x",  # a tensor: nkisim's own object (its methods feed the cost model)
        "nl.ndarray",  # a function of the simulator
        "nl.tile_size",  # the simulator's constants
        "nisa.engine",  # a class (patching one patches all its uses)
    ],
)
def test_a_method_called_on_anything_but_the_kernels_objects_cannot_write(victim: str) -> None:
    source = (
        PRELUDE
        + f"""
class Patch:
    def apply(self, value):
        self.shape = value


@nki.jit
def kernel(x):
    Patch.apply({victim}, 7)
    return x
"""
    )
    # the write is guarded, not refused (a module itself cannot even be passed: `nl` as a value
    # is refused by the static check)
    assert check_source(source, "kernel.py", "nki") == []
    with pytest.raises(KernelError, match=r"`.shape` may be set only on objects of the kernel's"):
        run_source(source, randn(128, 8))


def test_attribute_writes_stay_refused_where_they_are_not_guarded() -> None:
    for source, dialect in [
        (PRELUDE + "nl.affine_range = range\n", "nki"),  # a module alias, statically
        (PRELUDE + "class C:\n    def f(self):\n        del self.x\n", "nki"),
        (PRELUDE + "def f(t):\n    for t.x in range(2):\n        pass\n", "nki"),
        (
            "import neuronxcc.nki as nki\nclass C:\n    def f(self):\n        self.x = 1\n",
            "nki-legacy",
        ),
    ]:
        problems = [v.problem for v in check_source(source, "kernel.py", dialect)]
        assert any("may not be replaced" in p for p in problems), (source, problems)


PYTHON_IDIOMS = (
    PRELUDE
    + """
@nki.jit
def kernel(x, bias=None):
    assert x != None and not (x == None)  # current NKI refuses `is None`; kernels write this
    assert nisa.get_nc_version() >= nisa.nc_version.gen3
    name = str(x.dtype)  # numpy loads its dtype module lazily, from the kernel's frame
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    row = nl.ndarray((1, x.shape[1]), x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=row, src=x[0:1, :])
    wide = nl.broadcast_to(row, (x.shape[0], x.shape[1]))  # the shape positional
    nisa.dma_copy(dst=out, src=wide)
    return out
"""
)


def test_python_idioms_of_real_kernels_run() -> None:
    x = randn(128, 32)
    ran = run_source(PYTHON_IDIOMS, x)
    np.testing.assert_array_equal(ran.outputs[0], np.broadcast_to(x[0:1], x.shape))


ACCUMULATE_FROM_K0 = (
    PRELUDE
    + """
@nki.jit
def kernel(lhsT, rhs):
    K, M = lhsT.shape
    out = nl.ndarray((M, rhs.shape[1]), nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((M, rhs.shape[1]), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(K // 128):
        a = nl.ndarray((128, M), lhsT.dtype, buffer=nl.sbuf)
        b = nl.ndarray((128, rhs.shape[1]), rhs.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a, src=lhsT[k * 128:(k + 1) * 128, :])
        nisa.dma_copy(dst=b, src=rhs[k * 128:(k + 1) * 128, :])
        nisa.nc_matmul(dst=acc, stationary=a, moving=b, accumulate=k > 0)
    res = nl.ndarray(acc.shape, nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    return out
"""
)


def test_accumulate_from_the_first_iteration_passes_the_order_check() -> None:
    """`accumulate=(k > 0)` (the idiom AWS's skills teach) names which iteration starts the
    sum; the backwards run must not take that for an order dependence."""
    lhsT, rhs = randn(384, 64), randn(384, 96)
    kernel = load_kernel(ACCUMULATE_FROM_K0, "<current kernel>", "kernel", "nki")
    config = Config(target="trn2", kernel_file="<current kernel>")
    first = execute(kernel, [lhsT, rhs], config)
    np.testing.assert_allclose(first.outputs[0], lhsT.T @ rhs, rtol=1e-4, atol=1e-3)
    _order_check(kernel, [lhsT, rhs], config, first, "kernel.py")  # raises OrderDependence


@pytest.mark.parametrize(
    ("shape", "dtype", "problem"),
    [
        ((128, 128), np.float32, "a 2-D src has 16 rows, not 128"),
        ((16, 128), np.float32, "src is a 2-byte dtype, not 4-byte"),
    ],
)
def test_a_hardware_dge_transpose_keeps_its_limits(
    shape: tuple[int, int], dtype: Any, problem: str
) -> None:
    source = (
        PRELUDE
        + f"""
@nki.jit
def kernel(x):
    t = nl.ndarray(({shape[1]}, {shape[0]}), x.dtype, buffer=nl.sbuf)
    nisa.dma_transpose(dst=t, src=x, dge_mode=nisa.dge_mode.hwdge)
    return x
"""
    )
    with pytest.raises(ConstraintViolation, match=re.escape(problem)):
        run_source(source, randn(*shape).astype(dtype))
    fine = source.replace(", dge_mode=nisa.dge_mode.hwdge", "")  # the default mode has none
    run_source(fine, randn(*shape).astype(dtype))


STREAM = (
    PRELUDE
    + """
@nki.jit
def kernel(x):
    tiles, free = x.shape[0], x.shape[2]
    out = nl.ndarray((tiles, 128, free), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(tiles):
        t = nl.ndarray((128, free), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[i])
        u = nl.ndarray((128, free), dtype=x.dtype, buffer=nl.sbuf)
        nisa.activation(dst=u, op=nl.exp, data=t)
        v = nl.ndarray((128, free), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=v, data=u, op0=nl.multiply, operand0=0.5)
        nisa.dma_copy(dst=out[i], src=v)
    return out
"""
)


def test_current_kernels_get_the_same_sbuf_buffers_and_spills() -> None:
    """The cost model's SBUF room reads the machine's lifetimes, whichever front made them:
    three 64 KiB tiles an iteration fill trn2's 224 KiB partition once, so each tile waits for
    the previous iteration's reader of its buffer (load, exp, multiply, store: instructions
    4i..4i+3); four 64 KiB tiles held at once spill one."""
    from nkibench.cost import estimate
    from nkibench.cost.buffers import plan_buffers

    big = run_source(STREAM, randn(8, 128, 16384))
    assert [i.op for i in big.trace.instructions[:4]] == [
        "dma_copy",
        "activation",
        "tensor_scalar",
        "dma_copy",
    ]
    plan = plan_buffers(big.trace.instructions, big.lifetimes, 224 * 1024, lambda size: 0.0)
    assert plan.depth == 1
    assert plan.waits == {4 * i + k: 4 * i + k - 3 for i in range(1, 8) for k in range(3)}
    one_buffer = estimate(big.trace.instructions, "trn2", big.lifetimes)
    assert one_buffer.counters["sbuf_buffers_per_tile"] == 1
    held = (
        PRELUDE
        + """
@nki.jit
def kernel(x):
    out = nl.ndarray((128, 16384), dtype=x.dtype, buffer=nl.shared_hbm)
    tiles = [nl.ndarray((128, 16384), dtype=x.dtype, buffer=nl.sbuf) for _ in range(4)]
    for k in range(4):
        nisa.dma_copy(dst=tiles[k], src=x[k])
    for k in range(1, 4):
        nisa.tensor_tensor(dst=tiles[0], data1=tiles[0], data2=tiles[k], op=nl.add)
    nisa.dma_copy(dst=out, src=tiles[0])
    return out
"""
    )
    ran = run_source(held, randn(4, 128, 16384))
    spilled = estimate(ran.trace.instructions, "trn2", ran.lifetimes)
    assert spilled.counters["spill_reload_bytes"] == 64 * 1024 * 128  # one load, read again
    assert spilled.counters["spill_save_bytes"] == 0
