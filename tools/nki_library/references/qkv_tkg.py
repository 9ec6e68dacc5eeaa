"""nki-library core/qkv qkv_tkg (RMS norm, no fused add, no quantization, BSD output, one program).

x' = hidden / sqrt(mean(hidden^2, -1) + eps) * norm_w
out[b, s, :] = x'[b, s, :] @ qkv_w            ([B, S, H] x [H, I_OUT] -> [B, S, I_OUT])."""

import numpy as np

B = 2
S = 4
H = 2048
I_OUT = 768
EPS = 1e-6


def get_inputs():
    hidden = np.random.randn(B, S, H).astype(np.float32)
    qkv_w = (np.random.randn(H, I_OUT) / np.sqrt(H)).astype(np.float32)
    norm_w = np.random.randn(1, H).astype(np.float32)
    return [hidden, qkv_w, norm_w]


def forward(hidden, qkv_w, norm_w):
    x = hidden.astype(np.float64)
    x = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * norm_w.astype(np.float64)
    return (x @ qkv_w.astype(np.float64)).astype(np.float32)
