# dialect: triton
# family: library fallback: half the work in torch (torch.rsqrt), half in Triton
# task: gpu/rmsnorm_matmul
# expect: cheat
# message: run() computed with PyTorch: aten._to_copy
# The static check leaves torch compute to the run-time guard, which refuses the first
# aten op that computes, wherever Python spelled it, in every checked run.
import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        rk = k + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a.to(tl.float32), b.to(tl.float32))
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def run(x, w):
    normed = x * torch.rsqrt((x.float() ** 2).mean(dim=1, keepdim=True)).to(x.dtype)
    m, k = x.shape
    n = w.shape[1]
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    matmul_kernel[(triton.cdiv(m, 32), triton.cdiv(n, 32))](normed, w, out, m, n, k, BM=32, BN=32, BK=32)
    return out
