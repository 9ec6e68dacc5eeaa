import torch
import triton
import triton.language as tl

CHANNELS = 4  # channels per program
CHUNK = 16  # time steps scanned at once
NUM_WARPS = 2


@triton.jit
def linear_recurrence(a_left, b_left, a_right, b_right):
    # composes h -> a_left * h + b_left, then h -> a_right * h + b_right
    return a_left * a_right, b_left * a_right + b_right


@triton.jit
def selective_scan_kernel(
    delta_ptr,
    u_ptr,
    a_ptr,
    b_ptr,
    c_ptr,
    out_ptr,
    C,
    M,
    S,
    BLOCK_C: tl.constexpr,
    BLOCK_S: tl.constexpr,
    BLOCK_T: tl.constexpr,
):
    # one program: BLOCK_C channels over the whole sequence, in chunks of BLOCK_T steps.
    # Inside a chunk the recurrence is an associative scan along time; the state h (BLOCK_C,
    # BLOCK_S) carries from chunk to chunk in registers. Masked lanes read delta = 0, which
    # makes them identity steps (dA = 1, dBu = 0).
    pid = tl.program_id(0)
    chans = pid * BLOCK_C + tl.arange(0, BLOCK_C)
    states = tl.arange(0, BLOCK_S)
    steps = tl.arange(0, BLOCK_T)
    mask_c = chans < C
    mask_s = states < S
    a = tl.load(
        a_ptr + chans[:, None] * S + states[None, :],
        mask=mask_c[:, None] & mask_s[None, :],
        other=0.0,
    ).to(tl.float32)
    row = chans.to(tl.int64)[:, None] * M  # int64: C * M may pass 2^31
    h = tl.zeros((BLOCK_C, BLOCK_S), dtype=tl.float32)
    last = (steps == BLOCK_T - 1)[None, None, :]
    for t0 in range(0, M, BLOCK_T):
        t = t0 + steps
        mask_t = t < M
        mask_ct = mask_c[:, None] & mask_t[None, :]
        mask_st = mask_s[:, None] & mask_t[None, :]
        d = tl.load(delta_ptr + row + t[None, :], mask=mask_ct, other=0.0).to(tl.float32)
        u = tl.load(u_ptr + row + t[None, :], mask=mask_ct, other=0.0).to(tl.float32)
        bt = tl.load(b_ptr + states[:, None] * M + t[None, :], mask=mask_st, other=0.0).to(
            tl.float32
        )
        ct = tl.load(c_ptr + states[:, None] * M + t[None, :], mask=mask_st, other=0.0).to(
            tl.float32
        )
        dA = tl.exp(d[:, None, :] * a[:, :, None])  # (BLOCK_C, BLOCK_S, BLOCK_T)
        dBu = (d * u)[:, None, :] * bt[None, :, :]
        cum_a, cum_b = tl.associative_scan((dA, dBu), 2, linear_recurrence)
        hs = cum_a * h[:, :, None] + cum_b  # h at every step of the chunk
        y = tl.sum(hs * ct[None, :, :], axis=1)  # (BLOCK_C, BLOCK_T)
        tl.store(out_ptr + row + t[None, :], y.to(out_ptr.dtype.element_ty), mask=mask_ct)
        h = tl.sum(tl.where(last, hs, 0.0), axis=2)  # state after the chunk's last step


def run(delta, u, a, b, c):
    ch, m = delta.shape
    s = a.shape[1]
    out = torch.empty_like(delta)
    block_c = min(CHANNELS, triton.next_power_of_2(ch))
    block_t = min(CHUNK, triton.next_power_of_2(m))
    grid = (triton.cdiv(ch, block_c),)
    selective_scan_kernel[grid](
        delta,
        u,
        a,
        b,
        c,
        out,
        ch,
        m,
        s,
        BLOCK_C=block_c,
        BLOCK_S=triton.next_power_of_2(s),
        BLOCK_T=block_t,
        num_warps=NUM_WARPS,
    )
    return out
