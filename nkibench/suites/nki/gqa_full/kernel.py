import math

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(q, k, v):
    B, N, QH, D = q.shape
    _, _, KH, _ = k.shape
    TILE_Q = nl.tile_size.gemm_stationary_fmax  # 128 queries per tile
    TILE_KV = nl.tile_size.pmax  # 128 keys per contraction tile
    TILE_S = 512  # one PSUM bank of float32 scores
    assert D <= nl.tile_size.pmax and N % TILE_S == 0 and QH % KH == 0
    NT = N // TILE_KV
    group = QH // KH
    scale = 1.0 / math.sqrt(D)
    out = nl.ndarray((B, QH, N, D), dtype=q.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(B):
        for kv in nl.affine_range(KH):
            # this kv head's keys transposed, [D, N], and its values, [128 keys, NT, D]
            k_t = nl.ndarray((D, N), dtype=nl.float32, buffer=nl.sbuf)
            values = nl.ndarray((TILE_KV, NT, D), dtype=nl.float32, buffer=nl.sbuf)
            for t in nl.affine_range(NT):
                keys = nl.ds(t * TILE_KV, TILE_KV)
                k_tile = nl.ndarray((TILE_KV, D), dtype=nl.float32, buffer=nl.sbuf)
                nisa.dma_copy(dst=k_tile, src=k[b, keys, kv, :])
                k_flipped = nl.ndarray((D, TILE_KV), dtype=nl.float32, buffer=nl.psum)
                nisa.nc_transpose(dst=k_flipped, data=k_tile)
                nisa.tensor_copy(dst=k_t[:, keys], src=k_flipped)
                nisa.dma_copy(dst=values[:, t, :], src=v[b, keys, kv, :])
            # every query head of the group shares them
            for j in nl.affine_range(group):
                h = kv * group + j
                for i in nl.affine_range(N // TILE_Q):
                    queries = nl.ds(i * TILE_Q, TILE_Q)
                    q_tile = nl.ndarray((TILE_Q, D), dtype=nl.float32, buffer=nl.sbuf)
                    nisa.dma_copy(dst=q_tile, src=q[b, queries, h, :])
                    q_flipped = nl.ndarray((D, TILE_Q), dtype=nl.float32, buffer=nl.psum)
                    nisa.nc_transpose(dst=q_flipped, data=q_tile)
                    q_t = nl.ndarray((D, TILE_Q), dtype=nl.float32, buffer=nl.sbuf)
                    nisa.tensor_copy(dst=q_t, src=q_flipped)
                    # raw scores q k^T for this query tile, [128, N]
                    scores = nl.ndarray((TILE_Q, N), dtype=nl.float32, buffer=nl.sbuf)
                    for s in nl.affine_range(N // TILE_S):
                        cols = nl.ds(s * TILE_S, TILE_S)
                        block = nl.ndarray((TILE_Q, TILE_S), dtype=nl.float32, buffer=nl.psum)
                        nisa.nc_matmul(dst=block, stationary=q_t, moving=k_t[:, cols])
                        nisa.tensor_copy(dst=scores[:, cols], src=block)
                    # exp(scale * (s - max)) and its row sum; the scale is folded into exp
                    row_max = nl.ndarray((TILE_Q, 1), dtype=nl.float32, buffer=nl.sbuf)
                    nisa.tensor_reduce(dst=row_max, op=nl.maximum, data=scores, axis=1)
                    bias = nl.ndarray((TILE_Q, 1), dtype=nl.float32, buffer=nl.sbuf)
                    nisa.tensor_scalar(dst=bias, data=row_max, op0=nl.multiply, operand0=-scale)
                    exps = nl.ndarray((TILE_Q, N), dtype=nl.float32, buffer=nl.sbuf)
                    total = nl.ndarray((TILE_Q, 1), dtype=nl.float32, buffer=nl.sbuf)
                    nisa.activation_reduce(
                        dst=exps,
                        op=nl.exp,
                        data=scores,
                        reduce_op=nl.add,
                        reduce_res=total,
                        bias=bias,
                        scale=scale,
                    )
                    # unnormalised exps @ values, keys on partitions: transpose exps per block
                    acc = nl.ndarray((TILE_Q, D), dtype=nl.float32, buffer=nl.psum)
                    for t in nl.affine_range(NT):
                        e_flipped = nl.ndarray((TILE_KV, TILE_Q), dtype=nl.float32, buffer=nl.psum)
                        nisa.nc_transpose(dst=e_flipped, data=exps[:, nl.ds(t * TILE_KV, TILE_KV)])
                        e_t = nl.ndarray((TILE_KV, TILE_Q), dtype=nl.float32, buffer=nl.sbuf)
                        nisa.tensor_copy(dst=e_t, src=e_flipped)
                        nisa.nc_matmul(dst=acc, stationary=e_t, moving=values[:, t, :])
                    # divide by the row sums on the way out of PSUM
                    inverse = nl.ndarray((TILE_Q, 1), dtype=nl.float32, buffer=nl.sbuf)
                    nisa.reciprocal(dst=inverse, data=total)
                    result = nl.ndarray((TILE_Q, D), dtype=out.dtype, buffer=nl.sbuf)
                    nisa.tensor_scalar(dst=result, data=acc, op0=nl.multiply, operand0=inverse)
                    nisa.dma_copy(dst=out[b, h, queries, :], src=result)
    return out
