"""Kernels with one planted bug each; the line that must be blamed ends with `# BUG`.
tests/nkibench/test_nkisim_current.py runs each and checks the error and the line."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def dst_in_hbm(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.tensor_tensor(dst=out, data1=t, data2=t, op=nl.add)  # BUG
    return out


@nki.jit
def matmul_operand_in_psum(a):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    p = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.tensor_copy(dst=p, src=t)
    acc = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=t, moving=p)  # BUG
    return out


@nki.jit
def too_many_partitions(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((256, 128), dtype=a.dtype, buffer=nl.sbuf)  # BUG
    nisa.dma_copy(dst=t, src=a)
    return out


@nki.jit
def psum_bank_overflow(a):
    out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.psum)  # BUG
    return out


@nki.jit
def never_written_sbuf(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    u = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u, src=t)  # BUG
    return out


@nki.jit
def out_of_bounds_slice(a):
    out = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[128:256, :])  # BUG
    return out


@nki.jit
def accumulate_onto_unwritten_psum(a):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    acc = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=t, moving=t, accumulate=True)  # BUG
    return out


@nki.jit
def accumulate_onto_memset_psum(a):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    acc = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.memset(dst=acc, value=0.0)
    nisa.nc_matmul(dst=acc, stationary=t, moving=t, accumulate=True)  # BUG
    return out


@nki.jit
def fori_loop_past_the_end(a):
    rows, cols = a.shape
    out = nl.ndarray((rows, cols), dtype=a.dtype, buffer=nl.shared_hbm)
    row = nl.ndarray((1, cols), dtype=a.dtype, buffer=nl.sbuf)

    def body(i):
        source = a.ap([[cols, 1], [1, cols]], scalar_offset=i, indirect_dim=0)
        nisa.dma_copy(dst=row, src=source)  # BUG
        nisa.dma_copy(dst=out.ap([[cols, 1], [1, cols]], scalar_offset=i, indirect_dim=0), src=row)

    nl.fori_loop(0, rows + 1, body)
    return out


@nki.jit
def legacy_mask(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nl.exp(t, mask=None)  # BUG
    return out


@nki.jit
def legacy_arange(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.arange(128)[:, None]  # BUG
    return out


@nki.jit
def legacy_return_style(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.activation(op=nl.exp, data=t)  # BUG
    return out


@nki.jit
def dma_from_psum(a):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    acc = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=t, moving=t)
    nisa.dma_copy(dst=out, src=acc)  # BUG
    return out


@nki.jit
def tensor_tensor_both_psum(a):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    p = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    q = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.tensor_copy(dst=p, src=t)
    nisa.tensor_copy(dst=q, src=t)
    s = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=s, data1=p, data2=q, op=nl.add)  # BUG
    return out


@nki.jit
def reduce_over_partitions(a):
    out = nl.ndarray((1, 128), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    s = nl.ndarray((1, 128), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=s, op=nl.add, data=t, axis=0)  # BUG
    return out


@nki.jit
def stationary_too_wide(a, b):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    s = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    m = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=a)
    nisa.dma_copy(dst=m, src=b)
    acc = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=s, moving=m)  # BUG
    return out


@nki.jit
def moving_too_wide(a, b):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    s = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    m = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=a)
    nisa.dma_copy(dst=m, src=b)
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=s, moving=m)  # BUG
    return out


@nki.jit
def fp32_with_bf16(a, b):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    s = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    m = nl.ndarray(b.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=a)
    nisa.dma_copy(dst=m, src=b)
    acc = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=s, moving=m)  # BUG
    return out


@nki.jit
def matmul_dst_bf16(a, b):
    out = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    s = nl.ndarray(a.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
    m = nl.ndarray(b.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=a)
    nisa.dma_copy(dst=m, src=b)
    acc = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=s, moving=m)  # BUG
    o = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=acc)
    nisa.dma_copy(dst=out, src=o)
    return out


@nki.jit
def order_dependent_affine_range(a):
    out = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    t = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(a.shape[0] // 128):  # BUG
        nisa.dma_copy(dst=t, src=a[i * 128 : (i + 1) * 128, :])
        nisa.tensor_scalar(dst=acc, data=acc, op0=nl.multiply, operand0=0.5)
        nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
    nisa.dma_copy(dst=out, src=acc)
    return out


@nki.jit
def sbuf_capacity(a):
    out = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.shared_hbm)
    tiles = [nl.ndarray((128, 16384), dtype=nl.float32, buffer=nl.sbuf) for _ in range(16)]
    for t in tiles:
        nisa.memset(dst=t, value=1.0)  # BUG
    for t in tiles:
        nisa.dma_copy(dst=out, src=t[:, 0:128])
    return out


@nki.jit
def sbuf_tile_too_large(a):
    out = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.ndarray((128, 65536), dtype=nl.float32, buffer=nl.sbuf)  # BUG
    return out


@nki.jit
def writes_its_input(a):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.memset(dst=t, value=0.0)
    nisa.dma_copy(dst=a, src=t)  # BUG
    return a


@nki.jit
def tensor_scalar_operand_partitions(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    scale = nl.ndarray((64, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=scale, value=2.0)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=scale)  # BUG
    return out


@nki.jit
def tensor_tensor_shapes(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    col = nl.ndarray((128, 1), dtype=a.dtype, buffer=nl.sbuf)
    nisa.memset(dst=col, value=1.0)
    nisa.tensor_tensor(dst=t, data1=t, data2=col, op=nl.add)  # BUG
    return out


@nki.jit
def transpose_into_sbuf_on_tensor_engine(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    u = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.nc_transpose(dst=u, data=t)  # BUG
    return out


@nki.jit
def gpsimd_reads_psum(a):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    acc = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=t, moving=t)
    u = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u, src=acc, engine=nisa.engine.gpsimd)  # BUG
    return out


@nki.jit
def reduce_registers_never_reset(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    e = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    sums = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=e, op=nl.exp, data=t, reduce_op=nl.add, reduce_res=sums)  # BUG
    return out


@nki.jit
def partition_step_of_ap(a):
    out = nl.ndarray((64, 128), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.dma_copy(dst=out, src=t.ap(pattern=[[256, 64], [1, 128]]))  # BUG
    return out


@nki.jit
def permute_partition_dim(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    t.permute((1, 0))  # BUG
    return out


@nki.jit
def register_as_python_int(a):
    rows, cols = a.shape
    out = nl.ndarray((rows, cols), dtype=a.dtype, buffer=nl.shared_hbm)
    row = nl.ndarray((1, cols), dtype=a.dtype, buffer=nl.sbuf)

    def body(i):
        nisa.dma_copy(dst=row, src=a[i : i + 1, :])  # BUG

    nl.fori_loop(0, rows, body)
    return out


@nki.jit
def exponential_on_trn2(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.exponential(dst=t, src=t)  # BUG
    return out


@nki.jit
def reduce_axis_not_trailing(a):
    out = nl.ndarray((128, 8), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 4, 8), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    s = nl.ndarray((128, 8), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=s, op=nl.add, data=t, axis=1)  # BUG
    return out
