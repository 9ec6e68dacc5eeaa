"""The task folders accelopt ships: the 14 NKIBench tasks with baselines in legacy NKI
(nki_legacy/: trn1/trn2, and the comparison with AccelOpt's published numbers) and in current
NKI (nki/: trn2/trn3), the same operator families at LLM shapes with Triton baselines (gpu/),
three Triton tasks whose inputs are large (gpu_large/: where an evaluation's time goes when a
seed's inputs weigh up to a gigabyte), and the kernels whose latencies on hardware are
published, for the cost model (calibration/). Each folder is standalone data, not package
code: the sandbox loads it alone, and users copy folders."""

from pathlib import Path

__all__ = ["CALIBRATION", "GPU_LARGE_SUITE", "GPU_SUITE", "NKI_LEGACY_SUITE", "NKI_SUITE"]

NKI_SUITE = Path(__file__).with_name("nki")
NKI_LEGACY_SUITE = Path(__file__).with_name("nki_legacy")
GPU_SUITE = Path(__file__).with_name("gpu")
GPU_LARGE_SUITE = Path(__file__).with_name("gpu_large")
CALIBRATION = Path(__file__).with_name("calibration")
