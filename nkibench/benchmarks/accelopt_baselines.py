"""AccelOpt's measured trn1 latencies of the 14 NKIBench baselines (ms; mean of 10 runs on a
trn1.32xlarge NeuronCore; zhang677/AccelOpt experiments/full_complete_local/
profile_results.csv). Their kernels are NKIBench's; ours (nkibench/suites/nki_legacy) are
rewrites of the same computations, so a comparison is between different kernels of the same
task."""

from __future__ import annotations

__all__ = ["ACCELOPT_TRN1_MS"]

ACCELOPT_TRN1_MS = {
    "adamw": 2.000,
    "add_rmsnorm_matmul": 1.222,
    "bmm": 4.611,
    "bmm_softmax": 12.000,
    "gqa_full": 19.111,
    "lora": 30.166,
    "mamba": 2.889,
    "matmul": 35.200,
    "matmul_add_rmsnorm": 2.667,
    "rmsnorm_matmul": 1.056,
    "rope_single_freq_apply": 4.333,
    "silu": 1.333,
    "swiglu": 4.222,
    "transpose_matmul": 9.610,
}
