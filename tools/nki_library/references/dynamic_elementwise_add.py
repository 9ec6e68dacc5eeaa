"""nki-library experimental/dynamic_shapes/dynamic_elementwise_add: out = a + b in bfloat16 for
[M, H] (M % 128 == 0, H % 512 == 0); the trip count num_m_tiles (an int32 [1, 1] tensor) is
M // 128 here, so every row is written."""

import ml_dtypes
import numpy as np

M = 512
H = 1024


def _bf16(x):
    return x.astype(ml_dtypes.bfloat16).astype(np.float32)


def get_inputs():
    a = _bf16(np.random.randn(M, H))
    b = _bf16(np.random.randn(M, H))
    return [a, b, np.array([[M // 128]], dtype=np.int32)]


def transform_to_nki_inputs(inputs):
    a, b, n = inputs
    return [a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16), n]


def forward(a, b, num_m_tiles):
    return a + b
