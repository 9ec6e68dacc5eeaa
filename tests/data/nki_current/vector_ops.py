"""One instruction per output, each checked against NumPy: reversed tensor_scalar,
scalar_tensor_tensor, a scan, select_reduce, range_select, tensor_scalar_reduce,
bn_stats/bn_aggr, max8, a causal affine_select, dma_transpose, and nl.load/nl.exp/nl.store."""

import nki
import nki.isa as nisa
import nki.language as nl


def hbm_like(t, dtype=None):
    return nl.ndarray(t.shape, dtype=dtype or t.dtype, buffer=nl.shared_hbm)


def sbuf(shape, dtype=nl.float32):
    return nl.ndarray(shape, dtype=dtype, buffer=nl.sbuf)


def out(t):
    result = hbm_like(t)
    nisa.dma_copy(dst=result, src=t)
    return result


@nki.jit
def kernel(x):
    P, F = x.shape
    t = sbuf((P, F))
    nisa.dma_copy(dst=t, src=x)
    results = []

    r = sbuf((P, F))  # (1 - x) * 3
    nisa.tensor_scalar(
        dst=r, data=t, op0=nl.subtract, operand0=1.0, reverse0=True, op1=nl.multiply, operand1=3.0
    )
    results.append(out(r))

    col = sbuf((P, 1))
    nisa.iota(dst=col, pattern=[[1, 1]], channel_multiplier=1)  # partition index
    s = sbuf((P, F))  # (x + p) * x
    nisa.scalar_tensor_tensor(dst=s, data=t, op0=nl.add, operand0=col, op1=nl.multiply, operand1=t)
    results.append(out(s))

    ones = sbuf((P, F))
    nisa.memset(dst=ones, value=1.0)
    scan = sbuf((P, F))  # running sum along the free axis
    nisa.tensor_tensor_scan(dst=scan, data0=ones, data1=t, initial=0.0, op0=nl.multiply, op1=nl.add)
    results.append(out(scan))

    positive = sbuf((P, F), nl.uint8)
    nisa.tensor_scalar(dst=positive, data=t, op0=nl.greater, operand0=0.0)
    kept = sbuf((P, F))
    row_max = sbuf((P, 1))
    nisa.select_reduce(
        dst=kept,
        predicate=positive,
        on_true=t,
        on_false=0.0,
        reduce_res=row_max,
        reduce_cmd=nisa.reduce_cmd.reset_reduce,
    )
    results.append(out(kept))
    results.append(out(row_max))

    low, high = sbuf((P, 1)), sbuf((P, 1))
    nisa.memset(dst=low, value=8.0)
    nisa.memset(dst=high, value=24.0)
    window = sbuf((P, F))
    window_max = sbuf((P, 1))
    nisa.range_select(
        dst=window,
        on_true_tile=t,
        comp_op0=nl.greater_equal,
        comp_op1=nl.less,
        bound0=low,
        bound1=high,
        reduce_res=window_max,
    )
    results.append(out(window_max))

    doubled = sbuf((P, F))
    sums = sbuf((P, 1))
    nisa.tensor_scalar_reduce(
        dst=doubled, data=t, op0=nl.multiply, operand0=2.0, reduce_op=nl.add, reduce_res=sums
    )
    results.append(out(sums))

    stats = sbuf((P, 6))
    nisa.bn_stats(dst=stats, data=t)
    moments = sbuf((P, 2))
    nisa.bn_aggr(dst=moments, data=stats)
    results.append(out(moments))

    top = sbuf((P, 8))
    nisa.max8(dst=top, src=t)
    results.append(out(top))

    causal = sbuf((P, F))
    nisa.affine_select(
        dst=causal,
        pattern=[[-1, F]],
        channel_multiplier=1,
        on_true_tile=t,
        on_false_value=-1.0,
        cmp_op=nl.greater_equal,
    )
    results.append(out(causal))

    flipped = sbuf((F, P))
    nisa.dma_transpose(dst=flipped, src=x)
    results.append(out(flipped))

    loaded = nl.load(x)
    exp_out = hbm_like(loaded)
    nl.store(exp_out, nl.exp(loaded))
    results.append(exp_out)
    return tuple(results)
