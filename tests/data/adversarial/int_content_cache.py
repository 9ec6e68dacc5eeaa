# dialect: triton
# family: results cached across calls (by the content of an integer input, read on the host)
# task: local/masked_rows
# expect: incorrect
# message: relative L2
# gpu_expect: incorrect
# gpu_message: relative L2
# Integer inputs (lengths, offsets) may be read on the host; a result kept by them alone is
# the one computed for other floating-point data. Each seed's lengths are drawn afresh, so
# the seeds alone never repeat a key: what catches it is the decoy run before each seed's
# checked run, on the same lengths with other floating-point data in the same buffers.
import torch
import triton
import triton.language as tl


@triton.jit
def masked_rows_kernel(x_ptr, lengths_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    length = tl.load(lengths_ptr + row)
    inside = cols < n_cols
    x = tl.load(x_ptr + row.to(tl.int64) * n_cols + cols, mask=inside & (cols < length), other=0.0)
    tl.store(out_ptr + row.to(tl.int64) * n_cols + cols, x, mask=inside)


def masked_rows(x, lengths):
    m, n = x.shape
    out = torch.empty_like(x)
    masked_rows_kernel[(m, triton.cdiv(n, 256))](x, lengths, out, n, BLOCK=256)
    return out

CACHE = {}


def run(x, lengths):
    key = (int(lengths[0]), int(lengths[-1]), int(lengths.sum()), int(lengths.max()))
    if key not in CACHE:
        CACHE[key] = masked_rows(x, lengths)
    masked_rows(x[:1], lengths[:1])  # a launch on every call, for the count
    return CACHE[key]
