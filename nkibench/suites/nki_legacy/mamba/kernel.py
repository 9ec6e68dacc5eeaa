import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def kernel(delta, u, a, b, c):
    C, M = delta.shape
    _, S = a.shape
    out = nl.ndarray((C, M), dtype=delta.dtype, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax
    for ct in nl.affine_range(C // P):
        channels = slice(ct * P, (ct + 1) * P)
        delta_tile = nl.load(delta[channels, :])
        u_tile = nl.load(u[channels, :])
        delta_u = nl.multiply(delta_tile, u_tile)
        acc = nl.zeros((P, M), nl.float32, buffer=nl.sbuf)
        for s in nl.sequential_range(S):
            a_column = nl.load(a[channels, s])
            # exp(delta * a[:, s]) with the per-channel a as the activation's scale
            delta_a = nisa.activation(op=nl.exp, data=delta_tile, scale=a_column)
            b_row = nl.load(b[s:s + 1, :]).broadcast_to((P, M))
            c_row = nl.load(c[s:s + 1, :]).broadcast_to((P, M))
            delta_bu = nl.multiply(delta_u, b_row)
            state = nisa.tensor_tensor_scan(delta_a, delta_bu, initial=0.0, op0=np.multiply, op1=np.add)
            acc += nl.multiply(state, c_row)
        nl.store(out[channels, :], value=acc)
    return out
