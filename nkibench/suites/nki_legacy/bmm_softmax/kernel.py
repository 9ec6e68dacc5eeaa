import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def kernel(lhs, rhs):
    B, M, K = lhs.shape
    _, _, N = rhs.shape
    out = nl.ndarray((B, M, N), dtype=lhs.dtype, buffer=nl.shared_hbm)
    TILE_M, TILE_N = 128, 512
    for b in nl.affine_range(B):
        rhs_tile = nl.load(rhs[b])
        for m in nl.affine_range(M // TILE_M):
            lhs_t = nl.load_transpose2d(lhs[b, m * TILE_M:(m + 1) * TILE_M, :])
            scores = nl.ndarray((TILE_M, N), dtype=nl.float32, buffer=nl.sbuf)
            for n in nl.affine_range(N // TILE_N):
                scores[:, n * TILE_N:(n + 1) * TILE_N] = nl.copy(
                    nisa.nc_matmul(lhs_t, rhs_tile[:, n * TILE_N:(n + 1) * TILE_N])
                )
            # softmax along the row: exp(x - max) / sum
            row_max = nl.max(scores, axis=1)
            negated = nl.multiply(row_max, -1.0)
            exps = nisa.activation(op=nl.exp, data=scores, bias=negated)
            total = nl.sum(exps, axis=1)
            inverse = nisa.reciprocal(total)
            probs = nisa.tensor_scalar(data=exps, op0=nl.multiply, operand0=inverse)
            nl.store(out[b, m * TILE_M:(m + 1) * TILE_M, :], value=probs)
    return out
