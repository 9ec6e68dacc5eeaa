"""nki-library core/attention/attention_tkg, default AttnTKGConfig (flat KV cache, k_prior not
transposed, no RoPE, no position ids, no sink), one program, bfloat16 inputs.

Inputs as the library's test builds them for qk_in_sb (which the kernel requires without RoPE):
    q [D, B*H*Sa] (q[d, b*H*Sa + h*Sa + a]), k_active [D, B*Sa] (k[d, b*Sa + a]),
    v_active [B, 1, Sa, D], k_prior [B, 1, D, Sp], v_prior [B, 1, Sp, D],
    mask [Sp, B, H, Sa] (uint8).
The last Sa cache positions are replaced by the active K/V; then, with no 1/sqrt(D) scaling,
    score[b, h, p, a] = sum_d K[b, d, p] q[b, h, a, d]   (-inf where mask[p, b, h, a] == 0)
    out[b, h, d, a]   = sum_p softmax_p(score)[b, h, p, a] V[b, p, d].
The mask is the library's full attention mask: p < cache_len[b], and causal over the active tail.
"""

import ml_dtypes
import numpy as np

B = 2
H = 4
S_ACTIVE = 4
S_PRIOR = 512
D = 128


def _bf16(x):
    return np.asarray(x, dtype=np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)


def get_inputs():
    q = _bf16(np.random.randn(D, B * H * S_ACTIVE) * 0.1)
    k_active = _bf16(np.random.randn(D, B * S_ACTIVE))
    v_active = _bf16(np.random.randn(B, 1, S_ACTIVE, D))
    k_prior = _bf16(np.random.randn(B, 1, D, S_PRIOR))
    v_prior = _bf16(np.random.randn(B, 1, S_PRIOR, D))
    cache_lens = np.random.randint(1, S_PRIOR - S_ACTIVE, size=B)
    mask = np.zeros((B, H, S_ACTIVE, S_PRIOR), dtype=np.uint8)
    for b in range(B):
        mask[b, :, :, : cache_lens[b]] = 1
    mask[:, :, :, S_PRIOR - S_ACTIVE :] = np.tril(np.ones((S_ACTIVE, S_ACTIVE), dtype=np.uint8))
    mask = np.ascontiguousarray(mask.transpose(3, 0, 1, 2))
    return [q, k_active, v_active, k_prior, v_prior, mask]


def transform_to_nki_inputs(inputs):
    return [x.astype(ml_dtypes.bfloat16) if x.dtype == np.float32 else x for x in inputs]


def forward(q, k_active, v_active, k_prior, v_prior, mask):  # noqa: PLR0917 (the task's inputs, in order)
    b, _, s_active, d = v_active.shape
    h = q.shape[1] // (b * s_active)
    q = q.astype(np.float64).reshape(d, b, h, s_active).transpose(1, 2, 3, 0)  # [B, H, Sa, D]
    k = k_prior[:, 0].astype(np.float64).copy()  # [B, D, Sp]
    v = v_prior[:, 0].astype(np.float64).copy()  # [B, Sp, D]
    k[:, :, -s_active:] = k_active.astype(np.float64).reshape(d, b, s_active).transpose(1, 0, 2)
    v[:, -s_active:, :] = v_active[:, 0].astype(np.float64)
    score = np.einsum("bdp,bhad->bhpa", k, q.astype(np.float64))
    score = np.where(mask.transpose(1, 2, 0, 3) == 0, -np.inf, score)
    score = score - score.max(axis=2, keepdims=True)
    prob = np.exp(score)
    prob /= prob.sum(axis=2, keepdims=True)
    return np.einsum("bhpa,bpd->bhda", prob, v).astype(np.float32)
