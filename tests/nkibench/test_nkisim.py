"""nkisim's semantics, one construct at a time, against NumPy (in the test process)."""

from __future__ import annotations

import numpy as np
import pytest

from nkibench.nkisim.errors import (
    ConstraintViolation,
    OutOfBounds,
    UninitializedRead,
    UnsupportedApi,
)
from nkibench.nkisim.machine import Config
from tests.support.nki_helpers import FILENAME, line_of, run

pytestmark = pytest.mark.usefixtures("shadow_modules")
rng = np.random.default_rng(7)


def randn(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def test_load_compute_store_and_the_trace() -> None:
    x = randn(256, 512)
    run_ = run(
        """
        @nki.jit
        def kernel(x):
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            for i in nl.affine_range(2):
                t = nl.load(x[i * 128:(i + 1) * 128, :])
                out_tile = nl.exp(t)
                nl.store(out[i * 128:(i + 1) * 128, :], value=out_tile)
            return out
        """,
        x,
    )
    np.testing.assert_allclose(run_.outputs[0], np.exp(x), rtol=1e-6)
    assert run_.never_written == [0]
    ops = [i.op for i in run_.trace.instructions]
    assert ops == ["dma_load", "exp", "dma_store"] * 2
    load, exp, store = run_.trace.instructions[:3]
    assert (load.engine, exp.engine, store.engine) == ("dma", "scalar", "dma")
    assert load.index in exp.deps  # read after write
    assert exp.index in store.deps
    assert load.inputs[0].contiguous_bytes == 512 * 4
    assert load.output is not None
    assert load.output.partitions == 128
    assert exp.line == line_of(
        """
        @nki.jit
        def kernel(x):
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            for i in nl.affine_range(2):
                t = nl.load(x[i * 128:(i + 1) * 128, :])
                out_tile = nl.exp(t)
        """,
        "nl.exp",
    )


def test_arange_indexing_matches_numpy_and_uses_views_or_gathers() -> None:
    x = randn(256, 1024)
    run_ = run(
        """
        @nki.jit
        def kernel(x):
            out = nl.ndarray((3, 128, 256), dtype=x.dtype, buffer=nl.shared_hbm)
            i_p = nl.arange(128)[:, None]
            i_f = nl.arange(256)[None, :]
            nl.store(out[0], value=nl.load(x[128 + i_p, 2 * i_f]))          # strided: a view
            nl.store(out[1], value=nl.load(x[i_p, 1023 - i_f]))             # reversed: a gather
            grid = nl.mgrid[0:128, 0:256]
            nl.store(out[2], value=nl.load(x[grid.p, grid.x + 5]))
            return out
        """,
        x,
    )
    result = run_.outputs[0]
    np.testing.assert_array_equal(result[0], x[128:256, 0:512:2])
    np.testing.assert_array_equal(result[1], x[0:128, 1023:767:-1])
    np.testing.assert_array_equal(result[2], x[0:128, 5:261])


def test_masked_load_and_store_of_a_ragged_tile() -> None:
    x = randn(200, 64)
    run_ = run(
        """
        @nki.jit
        def kernel(x):
            M, N = x.shape
            out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
            i_p = nl.arange(128)[:, None]
            i_f = nl.arange(64)[None, :]
            for i in nl.affine_range((M + 127) // 128):
                valid = i * 128 + i_p < M
                t = nl.load(x[i * 128 + i_p, i_f], mask=valid)
                nl.store(out[i * 128 + i_p, i_f], value=nl.multiply(t, 2.0, mask=valid), mask=valid)
            return out
        """,
        x,
    )
    np.testing.assert_array_equal(run_.outputs[0], 2 * x)


def test_out_of_bounds_without_a_mask_names_the_dimension() -> None:
    with pytest.raises(
        OutOfBounds, match=r"on dimension 0: index range \[128, 255\] exceeds dimension size 200"
    ):
        run(
            """
            @nki.jit
            def kernel(x):
                out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
                t = nl.load(x[128 + nl.arange(128)[:, None], nl.arange(64)[None, :]])
                return out
            """,
            randn(200, 64),
        )


def test_a_one_dimensional_load_is_a_column_tile() -> None:
    a = randn(256, 4)
    run_ = run(
        """
        @nki.jit
        def kernel(a):
            out = nl.ndarray((128, 1), dtype=a.dtype, buffer=nl.shared_hbm)
            column = nl.load(a[0:128, 2])
            assert column.shape == (128, 1)
            nl.store(out, value=column)
            return out
        """,
        a,
    )
    np.testing.assert_array_equal(run_.outputs[0][:, 0], a[:128, 2])


def test_nc_matmul_accumulates_in_psum_without_extra_instructions() -> None:
    lhs_t, rhs = randn(256, 128), randn(256, 512)
    run_ = run(
        """
        @nki.jit
        def kernel(lhs_t, rhs):
            out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(2):
                rows = slice(k * 128, (k + 1) * 128)
                acc += nisa.nc_matmul(nl.load(lhs_t[rows, :]), nl.load(rhs[rows, :]))
            nl.store(out, value=nl.copy(acc))
            return out
        """,
        lhs_t,
        rhs,
    )
    np.testing.assert_allclose(run_.outputs[0], lhs_t.T @ rhs, rtol=1e-4, atol=1e-4)
    matmuls = [i for i in run_.trace.instructions if i.op == "nc_matmul"]
    assert len(matmuls) == 2
    assert all(m.attrs.get("accumulate") for m in matmuls)
    assert all(m.output is not None and m.output.buffer == "psum" for m in matmuls)
    assert matmuls[0].index in matmuls[1].deps  # accumulating into the same bank
    assert not any(i.op == "tensor_tensor" for i in run_.trace.instructions)


@pytest.mark.parametrize(
    "accumulate",
    [
        "acc += nisa.nc_matmul(s, m)",
        # AccelOpt's compiled NKIBench kernels: an arange-indexed block of a PSUM tensor
        "acc3[1, nl.arange(128)[:, None], nl.arange(512)[None, :]] += nisa.nc_matmul(s, m)",
        "acc3[1, :, :] += nisa.nc_matmul(s, m)",
        # a gather of the same elements (a reversed index is no view)
        "acc[nl.arange(128)[:, None], 511 - nl.arange(512)[None, :]] += nisa.nc_matmul(s, m)",
    ],
)
def test_indexed_matmul_accumulation_is_no_copy(accumulate: str) -> None:
    """`t[index] += matmul` reads t[index], accumulates in place and stores the view back onto
    itself: no instruction, whatever the index (AccelOpt's trn1 profiles of kernels written
    this way show no VectorE work)."""
    lhs_t, rhs = randn(256, 128), randn(256, 512)
    run_ = run(
        f"""
        @nki.jit
        def kernel(lhs_t, rhs):
            out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            acc3 = nl.zeros((2, nl.par_dim(128), 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(2):
                rows = slice(k * 128, (k + 1) * 128)
                s = nl.load(lhs_t[rows, :])
                m = nl.load(rhs[rows, :])
                {accumulate}
            result = acc3[1] if "acc3" in {accumulate!r} else acc
            nl.store(out, value=nl.copy(result))
            return out
        """,
        lhs_t,
        rhs,
    )
    expected = lhs_t.T @ rhs
    if "511 -" in accumulate:
        expected = expected[:, ::-1]
    np.testing.assert_allclose(run_.outputs[0], expected, rtol=1e-4, atol=1e-4)
    ops = [i.op for i in run_.trace.instructions]
    assert ops.count("nc_matmul") == 2
    vector = [i.op for i in run_.trace.instructions if i.engine == "vector"]
    assert vector == ["tensor_copy"]  # only nl.copy(acc) out of PSUM


def test_matmul_operand_rules() -> None:
    body = """
        @nki.jit
        def kernel(a, b):
            out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
            r = nisa.nc_matmul(nl.load(a), nl.load(b))
            return out
        """
    with pytest.raises(ConstraintViolation, match="contraction \\(partition\\) sizes differ"):
        run(body, randn(128, 128), randn(64, 128))
    with pytest.raises(ConstraintViolation, match="stationary free size 256"):
        run(body, randn(128, 256), randn(128, 128))
    with pytest.raises(ConstraintViolation, match="number of partitions 256"):
        run(body, randn(256, 128), randn(256, 128))


def test_transposes_on_tensor_and_vector_engines() -> None:
    x = randn(128, 96)
    small = randn(32, 16)
    run_ = run(
        """
        @nki.jit
        def kernel(x, small):
            a = nl.ndarray((96, 128), dtype=nl.float32, buffer=nl.shared_hbm)
            b = nl.ndarray((16, 32), dtype=nl.float32, buffer=nl.shared_hbm)
            t = nisa.nc_transpose(nl.load(x))
            nl.store(a, value=nl.copy(t))
            nl.store(b, value=nisa.nc_transpose(nl.load(small), engine=nisa.vector_engine))
            return a, b
        """,
        x,
        small,
    )
    np.testing.assert_array_equal(run_.outputs[0], x.T)
    np.testing.assert_array_equal(run_.outputs[1], small.T)
    engines = [i.engine for i in run_.trace.instructions if i.op == "nc_transpose"]
    assert engines == ["tensor", "vector"]


def test_tensor_scalar_activation_and_reductions() -> None:
    x = randn(128, 64)
    s = randn(128, 1)
    run_ = run(
        """
        @nki.jit
        def kernel(x, s):
            outs = [nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm) for _ in range(3)]
            sums = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
            t = nl.load(x)
            scale = nl.load(s)
            shifted = nisa.tensor_scalar(
                t, np.subtract, scale, reverse0=True, op1=np.multiply, operand1=2.0
            )
            nl.store(outs[0], value=shifted)
            nl.store(outs[1], value=nisa.activation(op=nl.exp, data=t, scale=scale, bias=scale))
            nl.store(outs[2], value=nl.maximum(t, 0.5))
            nl.store(sums, value=nisa.tensor_reduce(np.add, t, axis=[1], negate=True))
            return outs[0], outs[1], outs[2], sums
        """,
        x,
        s,
    )
    np.testing.assert_allclose(run_.outputs[0], (s - x) * 2.0, rtol=1e-6)
    np.testing.assert_allclose(run_.outputs[1], np.exp(x * s + s), rtol=1e-5)
    np.testing.assert_array_equal(run_.outputs[2], np.maximum(x, 0.5))
    np.testing.assert_allclose(run_.outputs[3], -x.sum(axis=1, keepdims=True), rtol=1e-5)


def test_tensor_tensor_scan_is_the_linear_recurrence() -> None:
    a, b, h0 = randn(128, 300) * 0.5, randn(128, 300), randn(128, 1)
    run_ = run(
        """
        @nki.jit
        def kernel(a, b, h0):
            out = nl.ndarray((128, 300), dtype=nl.float32, buffer=nl.shared_hbm)
            maxes = nl.ndarray((128, 300), dtype=nl.float32, buffer=nl.shared_hbm)
            ta, tb, init = nl.load(a), nl.load(b), nl.load(h0)
            scan = nisa.tensor_tensor_scan
            nl.store(out, value=scan(ta, tb, initial=init, op0=np.multiply, op1=np.add))
            nl.store(maxes, value=scan(ta, tb, initial=0.0, op0=np.maximum, op1=np.add))
            return out, maxes
        """,
        a,
        b,
        h0,
    )
    expected, maxed = np.empty_like(a), np.empty_like(a)
    carry, running = h0[:, 0], np.zeros(128, np.float32)
    for i in range(a.shape[1]):
        carry = a[:, i] * carry + b[:, i]
        running = np.maximum(a[:, i], running) + b[:, i]
        expected[:, i], maxed[:, i] = carry, running
    np.testing.assert_allclose(run_.outputs[0], expected, rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(run_.outputs[1], maxed, rtol=1e-6)


def test_loop_reduce_initialises_an_uninitialised_destination() -> None:
    x = randn(128, 1024)
    run_ = run(
        """
        @nki.jit
        def kernel(x):
            out = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.shared_hbm)
            row_max = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
            row_sum = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
            for j in nl.affine_range(2):
                chunk = nl.load(x[:, j * 512:(j + 1) * 512])
                chunk_max = nisa.tensor_reduce(nl.max, chunk, axis=[1])
                row_max[...] = nl.loop_reduce(chunk_max, op=np.max, loop_indices=[j])
                row_sum[...] = nl.loop_reduce(nl.sum(chunk, axis=1), op=np.add, loop_indices=[j])
            nl.store(out[:, 0:1], value=row_max)
            nl.store(out[:, 1:2], value=row_sum)
            return out
        """,
        x,
    )
    np.testing.assert_allclose(run_.outputs[0][:, 0], x.max(axis=1))
    np.testing.assert_allclose(run_.outputs[0][:, 1], x.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_iota_spmd_grid_and_shared_output() -> None:
    run_ = run(
        """
        @nki.jit
        def body():
            out = nl.ndarray((2, 128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
            pid = nl.program_id(0)
            index = nl.arange(128)[:, None] * 4 + nl.arange(4)[None, :] + 1000 * pid
            nl.store(out[pid], value=nisa.iota(index, dtype=nl.float32))
            return out

        kernel = body[2]  # two SPMD instances share the output
        """,
    )
    expected = np.arange(512, dtype=np.float32).reshape(128, 4)
    np.testing.assert_array_equal(run_.outputs[0], np.stack([expected, expected + 1000]))


def test_reading_memory_never_written_is_an_error() -> None:
    body = """
        @nki.jit
        def kernel(x):
            out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
            scratch = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
            scratch[:, 0:32] = nl.load(x[:, 0:32])
            nl.store(out, value=nl.copy(scratch))
            return out
        """
    with pytest.raises(UninitializedRead, match=r"reads 4096 element\(s\) of `t\d+`"):
        run(body, randn(128, 64))


def test_unwritten_output_elements_are_counted() -> None:
    run_ = run(
        """
        @nki.jit
        def kernel(x):
            out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
            nl.store(out[:, 0:60], value=nl.load(x[:, 0:60]))
            return out
        """,
        randn(128, 64),
    )
    assert run_.never_written == [128 * 4]


def test_tile_operators_reshape_and_broadcast() -> None:
    x, g = randn(128, 32), randn(1, 32)
    run_ = run(
        """
        @nki.jit
        def kernel(x, g):
            out = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.shared_hbm)
            t = nl.load(x)
            gain = nl.load(g).broadcast_to((128, 32))
            nl.store(out, value=(t * 2.0 + gain) / 4.0 - 1.0)
            return out
        """,
        x,
        g,
    )
    np.testing.assert_allclose(run_.outputs[0], (x * 2 + g) / 4 - 1, rtol=1e-6)


def test_control_flow_on_tile_values_is_refused() -> None:
    with pytest.raises(ConstraintViolation, match="truth value of a tile is ambiguous"):
        run(
            """
            @nki.jit
            def kernel(x):
                t = nl.load(x)
                if t:
                    pass
                return x
            """,
            randn(128, 4),
        )


def test_unknown_apis_are_unsupported_not_kernel_bugs() -> None:
    with pytest.raises(UnsupportedApi, match=r"nisa\.bn_stats is not implemented"):
        run(
            """
            @nki.jit
            def kernel(x):
                return nisa.bn_stats(nl.load(x))
            """,
            randn(128, 4),
        )


def test_sbuf_capacity_is_a_warning_or_an_error() -> None:
    body = """
        @nki.jit
        def kernel(x):
            out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
            big = nl.zeros((128, 60000), nl.float32, buffer=nl.sbuf)
            nl.store(out, value=nl.add(big[:, 0:64], nl.load(x)))
            return out
        """
    lenient = run(body, randn(128, 64))
    assert lenient.capacity.sbuf_peak_bytes >= 60000 * 4
    assert any("SBUF" in w and "spill" in w for w in lenient.warnings)
    with pytest.raises(ConstraintViolation, match="strict capacity"):
        run(body, randn(128, 64), config=Config(kernel_file=FILENAME, strict_capacity=True))
    roomy = run(body, randn(128, 64), config=Config(kernel_file=FILENAME, target="trn2"))
    assert roomy.capacity.sbuf_limit == 224 * 1024


def test_reversed_affine_loops() -> None:
    x = randn(256, 8)
    body = """
        @nki.jit
        def kernel(x):
            out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
            last = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
            for i in nl.affine_range(2):
                last[...] = nl.load(x[i * 128:(i + 1) * 128, :])
            nl.store(out, value=last)
            return out
        """
    forward = run(body, x)
    backward = run(body, x, config=Config(kernel_file=FILENAME, reverse_affine=frozenset()))
    np.testing.assert_array_equal(forward.outputs[0], x[128:])
    np.testing.assert_array_equal(backward.outputs[0], x[:128])  # the order leaked
    assert forward.affine_lines == {line_of(body, "nl.affine_range")}


def test_nl_matmul_with_and_without_transpose_x() -> None:
    x, y = randn(128, 128), randn(128, 512)
    run_ = run(
        """
        @nki.jit
        def kernel(x, y):
            plain = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
            transposed = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
            a, b = nl.load(x), nl.load(y)
            nl.store(plain, value=nl.copy(nl.matmul(a, b)))
            nl.store(transposed, value=nl.copy(nl.matmul(a, b, transpose_x=True)))
            return plain, transposed
        """,
        x,
        y,
    )
    np.testing.assert_allclose(run_.outputs[0], x @ y, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(run_.outputs[1], x.T @ y, rtol=1e-4, atol=1e-4)
    tensor_ops = [i.op for i in run_.trace.instructions if i.engine == "tensor"]
    assert tensor_ops == ["nc_transpose", "nc_matmul", "nc_matmul"]


def test_identity_transposes_block_dims_and_lazy_psum_like_compiled_nkibench() -> None:
    x = randn(256, 128)
    run_ = run(
        """
        @nki.jit
        def kernel(v1):
            out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
            identity = nl.shared_constant(np.identity(128, dtype=np.float32))
            i_p = nl.arange(128)[:, None]
            i_f = nl.arange(128)[None, :]
            eye = nl.ndarray((nl.par_dim(128), 128), dtype=np.float32, buffer=nl.sbuf)
            eye[i_p, i_f] = nl.load(identity[i_p, i_f])
            tiles = nl.ndarray((2, nl.par_dim(128), 128), dtype=np.float32, buffer=nl.sbuf)
            psum = nl.zeros((2, nl.par_dim(128), 128), dtype=np.float32, buffer=nl.psum,
                            lazy_initialization=True)
            for i0 in nl.affine_range(2):
                tiles[i0, i_p, i_f] = nl.load(v1[i0 * 128 + i_p, i_f])
                psum[i0, i_p, i_f] = nisa.nc_matmul(tiles[i0, i_p, i_f], eye[i_p, i_f],
                                                   is_moving_onezero=True, is_transpose=True)
                nl.store(out[i_p, i0 * 128 + i_f], value=nl.copy(psum[i0, i_p, i_f]))
            return out
        """,
        x,
    )
    np.testing.assert_array_equal(run_.outputs[0], x.T)
    assert [i.attrs["transpose"] for i in run_.trace.instructions if i.op == "nc_matmul"] == [
        True,
        True,
    ]


def test_memset_and_compute_rules_on_buffers() -> None:
    x = randn(128, 8)
    run_ = run(
        """
        @nki.jit
        def kernel(x):
            out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
            zero = nisa.memset(shape=(nl.par_dim(128), 1), value=np.uint16(0), dtype=nl.float32)
            nl.store(out, value=nisa.activation(op=nl.exp, data=nl.load(x), bias=zero))
            return out
        """,
        x,
    )
    np.testing.assert_allclose(run_.outputs[0], np.exp(x), rtol=1e-6)
    with pytest.raises(ConstraintViolation, match=r"load it into SBUF first with nl\.load"):
        run(
            """
            @nki.jit
            def kernel(x):
                return nl.exp(x)
            """,
            x,
        )
    with pytest.raises(ConstraintViolation, match="the GpSimd engine cannot read PSUM"):
        run(
            """
            @nki.jit
            def kernel(x):
                psum = nl.zeros((128, 8), nl.float32, buffer=nl.psum)
                return nisa.tensor_copy(psum, engine=nisa.gpsimd_engine)
            """,
            x,
        )
    with pytest.raises(ConstraintViolation, match="outputs live in HBM"):
        run(
            """
            @nki.jit
            def kernel(x):
                return nl.load(x)
            """,
            x,
        )
