import torch
import triton
import triton.language as tl

LR = 1e-3
BETA1 = 0.9
BETA2 = 0.999
EPS = 1e-8
WEIGHT_DECAY = 0.01

BLOCK = 2048


@triton.jit
def adamw_kernel(
    theta_ptr,
    grad_ptr,
    m_ptr,
    v_ptr,
    out_ptr,
    n_elements,
    lr,
    beta1,
    beta2,
    eps,
    weight_decay,
    BLOCK_SIZE: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    theta = tl.load(theta_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    g = tl.load(grad_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    m = tl.load(m_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    v = tl.load(v_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    m_new = beta1 * m + (1.0 - beta1) * g
    v_new = beta2 * v + (1.0 - beta2) * g * g
    # bias corrections at t = 1: 1 - beta1 and 1 - beta2
    m_hat = m_new / (1.0 - beta1)
    v_hat = v_new / (1.0 - beta2)
    theta_new = theta * (1.0 - lr * weight_decay) - lr * m_hat / (tl.sqrt(v_hat) + eps)
    tl.store(out_ptr + offs, theta_new.to(out_ptr.dtype.element_ty), mask=mask)


def run(theta, grad, m, v):
    out = torch.empty_like(theta)
    n = theta.numel()
    block = min(BLOCK, triton.next_power_of_2(n))
    grid = (triton.cdiv(n, block),)
    adamw_kernel[grid](
        theta.reshape(-1),
        grad.reshape(-1),
        m.reshape(-1),
        v.reshape(-1),
        out.view(-1),
        n,
        LR,
        BETA1,
        BETA2,
        EPS,
        WEIGHT_DECAY,
        BLOCK_SIZE=block,
        num_warps=8,
    )
    return out
