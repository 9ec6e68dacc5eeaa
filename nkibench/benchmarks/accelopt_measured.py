"""AccelOpt's measured trn1 profiles of its 14 NKIBench baseline kernels, and the measured
latencies of the best kernels its agents found for two of them. Facts with their source; the
kernels themselves stay outside this repository (`accelopt bench fidelity` reads a copy of
AccelOpt's tree that the user fetches).

Sources, zhang677/AccelOpt at commit 47e29a7:
- `experiments/full_complete_local/profile_results.csv`: one neuron-profile summary per
  baseline, mean of 10 runs on one NeuronCore-v2 of a trn1.32xlarge. `*_active_time_percent`
  are fractions of the latency in [0, 1], as neuron-profile writes them.
- `experiments/full_complete_local/results/11110904_best_plan_id.csv`: the best kernel of the
  run per task, measured the same way. `samples/nki/README.md` calls `mamba_optimized.py` and
  `rope_optimized.py` "the best kernel AccelOpt has discovered"; that they are the kernels of
  these rows is an assumption (the README warns that numbers fluctuate between runs).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ACCELOPT_TRN1", "ACCELOPT_TRN1_MS", "SAMPLES", "MeasuredProfile", "MeasuredSample"]


@dataclass(frozen=True)
class MeasuredProfile:
    shape: dict[str, int]
    """The task's parameters (NKIBench `summary.json` values)."""
    latency_ms: float
    hbm_read_bytes: int
    hbm_write_bytes: int
    spill_save_bytes: int
    spill_reload_bytes: int
    active: dict[str, float]
    """Per engine (scalar, vector, gpsimd): busy time as a fraction of the latency."""

    def busy_ms(self, engine: str) -> float:
        return self.active[engine] * self.latency_ms


@dataclass(frozen=True)
class MeasuredSample:
    """An optimized kernel of `samples/nki/` and its measured latency."""

    task: str
    latency_ms: float

    @property
    def speedup(self) -> float:
        return ACCELOPT_TRN1[self.task].latency_ms / self.latency_ms


ACCELOPT_TRN1: dict[str, MeasuredProfile] = {
    "adamw": MeasuredProfile(
        shape={"M": 10944, "N": 2048},
        latency_ms=1.9998289999999999,
        hbm_read_bytes=358612992,
        hbm_write_bytes=89653248,
        spill_save_bytes=0,
        spill_reload_bytes=0,
        active={
            "scalar": 0.6162108089769912,
            "vector": 0.9001726880099149,
            "gpsimd": 0.0059427486146838085,
        },
    ),
    "add_rmsnorm_matmul": MeasuredProfile(
        shape={"K": 1024, "M": 4096, "N": 2048},
        latency_ms=1.221911,
        hbm_read_bytes=42012672,
        hbm_write_bytes=33554432,
        spill_save_bytes=0,
        spill_reload_bytes=0,
        active={
            "scalar": 0.22544565543334344,
            "vector": 0.14844821857940613,
            "gpsimd": 0.004347224135124858,
        },
    ),
    "bmm": MeasuredProfile(
        shape={"B": 16, "K": 64, "M": 4096, "N": 4096},
        latency_ms=4.610889,
        hbm_read_bytes=67436544,
        hbm_write_bytes=1086324736,
        spill_save_bytes=12582912,
        spill_reload_bytes=33816576,
        active={
            "scalar": 0.3725796722076541,
            "vector": 3.0755423029578e-05,
            "gpsimd": 0.026057301164791213,
        },
    ),
    "bmm_softmax": MeasuredProfile(
        shape={"B": 16, "K": 64, "M": 4096, "N": 4096},
        latency_ms=11.999614000000001,
        hbm_read_bytes=794361856,
        hbm_write_bytes=1827405824,
        spill_save_bytes=753664000,
        spill_reload_bytes=756547584,
        active={
            "scalar": 0.43404200746383176,
            "vector": 0.4638674165596265,
            "gpsimd": 0.010344609470157562,
        },
    ),
    "gqa_full": MeasuredProfile(
        shape={"B": 1, "D": 128, "KH": 8, "N": 4096, "QH": 16},
        latency_ms=19.110503,
        hbm_read_bytes=1194393600,
        hbm_write_bytes=1132986368,
        spill_save_bytes=1099431936,
        spill_reload_bytes=1127219200,
        active={
            "scalar": 0.38597222224498373,
            "vector": 0.31386626669325846,
            "gpsimd": 0.0016558011310815726,
        },
    ),
    "lora": MeasuredProfile(
        shape={"K": 5120, "M": 4096, "N": 12288, "R": 128},
        latency_ms=30.16637,
        hbm_read_bytes=2341797888,
        hbm_write_bytes=1269563392,
        spill_save_bytes=1068236800,
        spill_reload_bytes=1907097600,
        active={
            "scalar": 0.034446963223463335,
            "vector": 0.098055592781463,
            "gpsimd": 0.0018322627404995684,
        },
    ),
    "mamba": MeasuredProfile(
        shape={"C": 256, "M": 7168, "S": 16},
        latency_ms=2.888663,
        hbm_read_bytes=181682176,
        hbm_write_bytes=62390272,
        spill_save_bytes=55050240,
        spill_reload_bytes=55050240,
        active={
            "scalar": 0.18617154597645577,
            "vector": 0.6131518651432173,
            "gpsimd": 0.0003827223540591918,
        },
    ),
    "matmul": MeasuredProfile(
        shape={"K": 5120, "M": 4096, "N": 12288},
        latency_ms=35.199742,
        hbm_read_bytes=9059762176,
        hbm_write_bytes=201326592,
        spill_save_bytes=0,
        spill_reload_bytes=0,
        active={
            "scalar": 0.06802961330956193,
            "vector": 4.16984238779581e-06,
            "gpsimd": 0.0006857777435035958,
        },
    ),
    "matmul_add_rmsnorm": MeasuredProfile(
        shape={"K": 2048, "M": 4096, "N": 2048},
        latency_ms=2.66658,
        hbm_read_bytes=98115584,
        hbm_write_bytes=33554432,
        spill_save_bytes=0,
        spill_reload_bytes=0,
        active={
            "scalar": 0.1678625340200107,
            "vector": 0.12419785152366919,
            "gpsimd": 0.0011352644052111582,
        },
    ),
    "rmsnorm_matmul": MeasuredProfile(
        shape={"K": 1024, "M": 4096, "N": 2048},
        latency_ms=1.05576,
        hbm_read_bytes=39387136,
        hbm_write_bytes=33554432,
        spill_save_bytes=0,
        spill_reload_bytes=0,
        active={
            "scalar": 0.17750705431023017,
            "vector": 0.0387800620142612,
            "gpsimd": 0.005086295470539929,
        },
    ),
    "rope_single_freq_apply": MeasuredProfile(
        shape={"B": 1, "D": 128, "H": 64, "N": 4096},
        latency_ms=4.33301,
        hbm_read_bytes=268435456,
        hbm_write_bytes=134217728,
        spill_save_bytes=0,
        spill_reload_bytes=0,
        active={
            "scalar": 0.14111698433373762,
            "vector": 0.7164212276647561,
            "gpsimd": 0.007401791060677716,
        },
    ),
    "silu": MeasuredProfile(
        shape={"M": 4096, "N": 7168},
        latency_ms=1.333232,
        hbm_read_bytes=117440512,
        hbm_write_bytes=117440512,
        spill_save_bytes=0,
        spill_reload_bytes=0,
        active={
            "scalar": 0.31480337032995714,
            "vector": 0.7387849379303731,
            "gpsimd": 0.011804421021376792,
        },
    ),
    "swiglu": MeasuredProfile(
        shape={"K": 1024, "M": 4096, "N": 3072},
        latency_ms=4.221777,
        hbm_read_bytes=141623296,
        hbm_write_bytes=83886080,
        spill_save_bytes=67108864,
        spill_reload_bytes=83886080,
        active={
            "scalar": 0.09331290680344906,
            "vector": 0.13473373139898395,
            "gpsimd": 0.000717737082076154,
        },
    ),
    "transpose_matmul": MeasuredProfile(
        shape={"K": 2048, "M": 4096, "N": 10944},
        latency_ms=9.610311,
        hbm_read_bytes=392167424,
        hbm_write_bytes=179306496,
        spill_save_bytes=0,
        spill_reload_bytes=0,
        active={
            "scalar": 0.03794637727598188,
            "vector": 1.5448071099686097e-05,
            "gpsimd": 0.0023436970062009886,
        },
    ),
}

ACCELOPT_TRN1_MS = {task: profile.latency_ms for task, profile in ACCELOPT_TRN1.items()}

SAMPLES: dict[str, MeasuredSample] = {
    # 11110904_best_plan_id.csv, mamba_C256_M7168_S16 (best_speedup 1.268)
    "mamba_optimized.py": MeasuredSample("mamba", 2.277542),
    # 11110904_best_plan_id.csv, rope_single_freq_apply_B1_D128_H64_N4096 (best_speedup 1.300)
    "rope_optimized.py": MeasuredSample("rope_single_freq_apply", 3.332587),
}
