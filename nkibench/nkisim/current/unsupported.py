"""What nkisim's current-NKI front does not support, and what a kernel can do instead (for
the README and for error messages)."""

from __future__ import annotations

__all__ = ["UNSUPPORTED"]

UNSUPPORTED: tuple[tuple[str, str], ...] = (
    ("nki.simulate, nki.benchmark, nki.profile, nki.baremetal", "nkisim runs the kernel itself"),
    (
        "nl.arange, nl.mgrid, nl.par_dim, mask= (removed in NKI 0.2+)",
        "slices, nl.ds(start, size), t.ap(pattern=...)",
    ),
    (
        "nl.softmax, nl.rms_norm, nl.dropout, nl.rand, nl.random_seed, nl.gather_flattened",
        "compose them from nisa instructions",
    ),
    ("nl.abs_max, nl.abs_min, nl.bypass, nl.average, nl.gelu_dx as functions", "op= only"),
    ("nl.prelu, nl.gelu_apprx_sigmoid_dx, nl.MemoryRegion, nl.DType", "not implemented"),
    (
        "nl.float8_e8m0fnu and the packed x4 dtypes; nl.float8_e4m3 is stored as e4m3fn",
        "not implemented",
    ),
    ("NkiTensor.view / reinterpret_cast, .ap(dtype=...)", "copy with a cast (tensor_copy)"),
    (
        "NkiTensor.rearrange, vector_select, indirect (tensor indirection)",
        "reshape/permute, .ap(vector_offset=...)",
    ),
    ("slicing an .ap() access again (chained .ap)", "build the whole pattern in one .ap()"),
    ("nisa.dma_copy / dma_transpose oob_mode=skip", "keep indices in bounds"),
    (
        "nisa.nc_matmul_mx, quantize_mx, activate2, local_gather, nc_stream_shuffle, "
        "nc_find_index8, nc_match_replace8, nonzero_with_count, topk, sequence_bounds, "
        "dma_compute, sendrecv, core_barrier, rng, rand2, dropout, set_rng_seed, "
        "rand_set_state, rand_get_state",
        "not implemented",
    ),
    ("NkiInstruction.depends_on (instructions return None), NkiValidationError", "-"),
    ("ScalarE's approximations of transcendental functions", "computed exactly in float32"),
    ("nc_matmul is_stationary_onezero / is_moving_onezero", "accepted, no effect on timing"),
)
