"""Selective scan (the Mamba SSM recurrence) of one sequence: channels C, sequence length M,
state size S, float32.

    dA[c, s, i]  = exp(delta[c, i] * a[c, s])
    dBu[c, s, i] = delta[c, i] * b[s, i] * u[c, i]
    h[c, s, i]   = dA[c, s, i] * h[c, s, i - 1] + dBu[c, s, i]        (h[c, s, -1] = 0)
    out[c, i]    = sum_s c[s, i] * h[c, s, i]

delta, u: (C, M) (channel-major, the sequence contiguous); a: (C, S); b, c: (S, M).
out: (C, M). Full shape: C = 4096 inner channels (Mamba-2.8B's d_inner is 5120), M = 8192
tokens, S = 16.
"""

import torch

M = 8192
C = 4096
S = 16


def get_inputs():
    delta = 0.05 * torch.randn(C, M, dtype=torch.float32)
    u = 0.05 * torch.randn(C, M, dtype=torch.float32)
    a = 0.05 * torch.randn(C, S, dtype=torch.float32)
    b = 0.05 * torch.randn(S, M, dtype=torch.float32)
    c = 0.05 * torch.randn(S, M, dtype=torch.float32)
    return [delta, u, a, b, c]


def forward(delta, u, a, b, c):
    state = torch.zeros(delta.shape[0], a.shape[1], dtype=delta.dtype, device=delta.device)
    out = torch.empty_like(delta)
    for i in range(delta.shape[1]):
        d = delta[:, i : i + 1]
        state = torch.exp(d * a) * state + d * u[:, i : i + 1] * b[None, :, i]
        out[:, i] = torch.sum(state * c[None, :, i], dim=1)
    return out
