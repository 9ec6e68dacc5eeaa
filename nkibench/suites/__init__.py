"""The task folders accelopt ships: the 14 NKIBench tasks with NKI baselines (nki/), the same
operator families at LLM shapes with Triton baselines (gpu/), and the kernels whose latencies
on hardware are published, for the cost model (calibration/). Each folder is standalone data,
not package code: the sandbox loads it alone, and users copy folders."""

from pathlib import Path

__all__ = ["CALIBRATION", "GPU_SUITE", "NKI_SUITE"]

NKI_SUITE = Path(__file__).with_name("nki")
GPU_SUITE = Path(__file__).with_name("gpu")
CALIBRATION = Path(__file__).with_name("calibration")
