"""nki-library experimental/conv depthwise_conv1d_implicit_gemm (stride (1, 2) fixed by the entry,
no padding): out[n, c, 0, q] = sum_s img[n, c, 0, q * 2 + s] * filt[c, 0, 0, s],
Q = (W - S) // 2 + 1 (cross-correlation, as torch conv2d with groups=C)."""

import numpy as np

N = 1
C = 128
W = 512
S = 64
STRIDE = 2


def get_inputs():
    img = np.random.randn(N, C, 1, W).astype(np.float32)
    filt = np.random.randn(C, 1, 1, S).astype(np.float32)
    return [img, filt]


def forward(img, filt):
    n, c, _, w = img.shape
    s = filt.shape[3]
    q = (w - s) // STRIDE + 1
    x = img[:, :, 0, :].astype(np.float64)
    k = filt[:, 0, 0, :].astype(np.float64)
    out = np.zeros((n, c, q), dtype=np.float64)
    for j in range(s):
        out += x[:, :, j : j + STRIDE * (q - 1) + 1 : STRIDE] * k[None, :, j : j + 1]
    return out[:, :, None, :].astype(np.float32)
