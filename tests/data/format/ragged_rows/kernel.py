import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(x, lengths):
    M, N = x.shape  # one row per partition
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    rows = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=rows, src=x)
    length = nl.ndarray((M, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=length, src=lengths)
    # each element's column index against its row's length: 1.0 in the valid prefix, else 0.0
    columns = nl.ndarray((M, N), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=columns, pattern=[[1, N]])
    valid = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=valid, data=columns, op0=nl.less, operand0=length)
    nisa.tensor_tensor(dst=rows, data1=rows, data2=valid, op=nl.multiply)
    nisa.tensor_scalar(dst=rows, data=rows, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=out, src=rows)
    return out
