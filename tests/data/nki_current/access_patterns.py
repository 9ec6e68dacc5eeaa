"""Views: .ap() on SBUF (odd columns) and HBM (a strided block), slice/select/permute/
reshape, iota, memset, and a while_loop counting down a register."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(x):
    P, F = x.shape
    odd = nl.ndarray((P, F // 2), dtype=x.dtype, buffer=nl.shared_hbm)
    block = nl.ndarray((4, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    swapped = nl.ndarray((P, 2, F // 2), dtype=x.dtype, buffer=nl.shared_hbm)
    ramp = nl.ndarray((P, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    odd_sb = nl.ndarray((P, F // 2), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=odd_sb, src=t.ap(pattern=[[F, P], [2, F // 2]], offset=1))
    nisa.dma_copy(dst=odd, src=odd_sb)
    nisa.dma_copy(dst=block, src=x.ap(pattern=[[2 * F, 4], [2, 8]], offset=F + 4))
    halves = t.reshape((P, 2, F // 2)).permute((0, 2, 1))
    copied = nl.ndarray((P, F // 2, 2), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=copied, src=halves)
    nisa.dma_copy(dst=swapped, src=copied.permute((0, 2, 1)))
    r = nl.ndarray((P, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.iota(dst=r, pattern=[[1, 8]], offset=0, channel_multiplier=8)
    counter = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=counter, value=3)
    one = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=one, value=1)
    reg = nisa.register_alloc()
    nisa.register_load(reg, counter)

    def body(r_):
        nisa.tensor_scalar(dst=r, data=r, op0=nl.add, operand0=1.0)
        nisa.tensor_tensor(dst=counter, data1=counter, data2=one, op=nl.subtract)
        nisa.register_load(r_, counter)
        return r_

    nl.while_loop(reg, body)
    nisa.dma_copy(dst=ramp, src=r)
    return odd, block, swapped, ramp
