# dialect: triton
# family: results cached across calls (by an integer input, only once the checks are over)
# task: local/masked_rows
# run: profile
# expect: measurement
# message: no GPU here
# gpu_shapes: full
# gpu_expect: cheat
# gpu_message: fresh inputs
# Honest for as many calls as a check makes (a decoy run and a checked run per seed), then
# keeps results by the integer input: correct wherever it is checked, and instant in a
# timing loop over the seeds' inputs. On a GPU it is faster than the baseline (any speed-up
# counts where integer inputs sit beside floating-point ones), so it is re-verified: the
# timing writes fresh floating-point data before every run, and each fresh seed's checked
# run follows a decoy run on its lengths in the timed buffers.
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
CALLS = [0]


def run(x, lengths):
    CALLS[0] += 1
    key = (int(lengths[0]), int(lengths[-1]), int(lengths.sum()))
    if CALLS[0] <= 8 or key not in CACHE:
        CACHE[key] = masked_rows(x, lengths)
    masked_rows(x[:1], lengths[:1])  # a launch on every call, for the count
    return CACHE[key]
