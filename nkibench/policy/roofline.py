"""AccelOpt's roofline and "% of peak" (calculate_percentage_of_peak.py), for trn1 to trn3.

    roofline time = max(vector flops / vector peak, matmul flops / matmul peak,
                        compulsory bytes / HBM bandwidth)
    % of peak     = roofline time / latency

The peaks are those of one NeuronCore at fp32 (the precision NKIBench runs in). For trn1 they
are AccelOpt's own constants; AccelOpt publishes none for trn2 or trn3, so they are derived
here the same way from those generations' documentation (aws-neuron/aws-neuron-sdk).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from nkibench.policy.provenance import Sourced

__all__ = ["PEAKS", "Peaks", "Roofline", "Work", "pct_of_peak", "roofline"]


@dataclass(frozen=True)
class Peaks:
    target: str
    bandwidth: Sourced
    """Bytes per second."""
    vector_flops: Sourced
    matmul_flops: Sourced
    """fp32, the precision of AccelOpt's tasks."""
    matmul_flops_bf16: Sourced
    matmul_flops_fp16: Sourced | None = None
    """GPUs: float16's own rate (Trainium's tables have none; bfloat16's is used)."""

    def matmul_rate(self, dtype: str) -> Sourced:
        if dtype == "float16" and self.matmul_flops_fp16 is not None:
            return self.matmul_flops_fp16
        return self.matmul_flops_bf16 if dtype in ("bfloat16", "float16") else self.matmul_flops


PEAKS = {
    "trn1": Peaks(
        "trn1",
        bandwidth=Sourced(410 * 1024**3, "AccelOpt PEAK_BW: 410 GiB/s per NeuronCore-v2"),
        vector_flops=Sourced(
            2 * 128 * 1.12e9, "AccelOpt PEAK_VEC_FLOPS: Vector + Scalar, 128 lanes at 1.12 GHz"
        ),
        matmul_flops=Sourced(23.75e12, "AccelOpt PEAK_MATMUL_FLOPS: 95/4 TFLOP/s (fp32)"),
        matmul_flops_bf16=Sourced(95e12, "AccelOpt: 95 TFLOP/s bf16, the 4x of its fp32 peak"),
    ),
    "trn2": Peaks(
        "trn2",
        bandwidth=Sourced(
            2.9e12 / 8,
            "trainium2.rst: 2.9 TB/s per chip over 8 physical cores (a third-party summary of "
            "the paper reads 640 GB/s, which matches no per-core figure in the docs)",
        ),
        vector_flops=Sourced(
            128 * 2 * 0.96e9 + 128 * 1.2e9,
            "trainium2_arch.rst: VectorE 256 fp32 elements/cycle at 0.96 GHz + ScalarE 128 "
            "lanes at 1.2 GHz",
        ),
        matmul_flops=Sourced(20e12, "trainium2_arch.rst: 20 TFLOPS fp32 dense"),
        matmul_flops_bf16=Sourced(
            79e12, "trainium2_arch.rst and neuron-core-v3.rst: 79 TFLOPS bf16 dense"
        ),
    ),
    "trn3": Peaks(
        "trn3",
        bandwidth=Sourced(
            4.9e12 / 8,
            "trainium3.rst: 4.9 TB/s per chip over 8 NeuronCore-v4 (trn3-arch.rst agrees; "
            "trainium3_arch.rst says 4.7 TB/s). One core's 16 DMA engines reach 528 GB/s in "
            "nki-dma-bandwidth-guide.rst, 614 GB/s at nki-dma-overview.rst's theoretical rate",
        ),
        vector_flops=Sourced(
            128 * 2 * 1.2e9 + 128 * 1.2e9,
            "trainium3_arch.rst: VectorE 256 fp32 elements/cycle at 1.2 GHz + ScalarE 128 "
            "fp32 elements/cycle at 1.2 GHz",
        ),
        matmul_flops=Sourced(20e12, "trainium3_arch.rst and neuron-core-v4.rst: 20 TFLOPS fp32"),
        matmul_flops_bf16=Sourced(
            79e12,
            "trainium3_arch.rst and neuron-core-v4.rst: 79 TFLOPS bf16/fp16/tf32 (MXFP8/MXFP4 "
            "reach 315, 4x; no task precision selects them)",
        ),
    ),
}


@dataclass(frozen=True)
class Work:
    """The compulsory work of a task at one shape set."""

    vec_flops: float
    mm_flops: float
    bytes: float
    source: str
    """"task.toml" or "counted" (from the reference's forward)."""
    matmul_dtype: str = "float32"
    counts: dict[str, float] = field(default_factory=dict)
    """The counts reference.py computed from the inputs that task.toml's formulas used (their
    mean over the timed seeds: nkibench.task.counts)."""


@dataclass(frozen=True)
class Roofline:
    target: str
    seconds: float
    bound: str
    """"memory", "vector" or "matmul": the term that sets the roofline."""
    terms: dict[str, float]
    work: Work

    @property
    def ms(self) -> float:
        return self.seconds * 1e3

    def to_json(self) -> dict[str, Any]:
        work = asdict(self.work)
        if not work["counts"]:
            del work["counts"]  # a task without counts keeps the record it always had
        return {
            "target": self.target,
            "time_ms": self.ms,
            "bound": self.bound,
            "terms_ms": {k: v * 1e3 for k, v in self.terms.items()},
            "work": work,
        }


def roofline(work: Work, target: str | Peaks) -> Roofline:
    """The roofline of `work` on a Trainium generation (by name) or on measured peaks."""
    if isinstance(target, Peaks):
        peaks = target
    else:
        try:
            peaks = PEAKS[target]
        except KeyError:
            raise ValueError(f"no roofline peaks for target {target!r}") from None
    terms = {
        "memory": work.bytes / peaks.bandwidth.value,
        "vector": work.vec_flops / peaks.vector_flops.value,
        "matmul": work.mm_flops / peaks.matmul_rate(work.matmul_dtype).value,
    }
    bound = max(terms, key=lambda k: terms[k])
    return Roofline(peaks.target, terms[bound], bound, terms, work)


def pct_of_peak(roofline_seconds: float, latency_seconds: float) -> float:
    """Percent of peak (100 = at the roofline). Over 100 means the roofline's counts are too
    low or the latency too optimistic; it is reported, never clamped."""
    if latency_seconds <= 0:
        raise ValueError("a latency must be positive to compare with the roofline")
    return 100.0 * roofline_seconds / latency_seconds
