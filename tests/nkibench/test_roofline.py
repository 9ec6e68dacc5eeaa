"""AccelOpt's roofline and % of peak, and counting a reference's work when a task gives none."""

from __future__ import annotations

import shutil
import statistics
from pathlib import Path

import numpy as np
import pytest

from nkibench.backends.nkisim.backend import NkisimBackend
from nkibench.benchmarks.accelopt_measured import ACCELOPT_TRN1_MS
from nkibench.benchmarks.nki import rank_correlation
from nkibench.harness import profile_kernel
from nkibench.policy.flop_count import compulsory_bytes, count_forward
from nkibench.policy.roofline import PEAKS, Work, pct_of_peak, roofline
from nkibench.suites import NKI_LEGACY_SUITE as SUITE
from nkibench.task.spec import load_task

# reference/accelopt.md §3.1: the "baseline % peak" column, recomputed with AccelOpt's formula
ACCELOPT_BASELINE_PCT = {
    "adamw": 50.9,
    "add_rmsnorm_matmul": 59.2,
    "bmm": 54.6,
    "bmm_softmax": 39.0,
    "gqa_full": 30.3,
    "lora": 74.5,
    "mamba": 28.4,
    "matmul": 61.7,
    "matmul_add_rmsnorm": 54.3,
    "rmsnorm_matmul": 68.5,
    "rope_single_freq_apply": 21.1,
    "silu": 40.0,
    "swiglu": 77.1,
    "transpose_matmul": 80.4,
}


def _work(name: str) -> Work:
    task = load_task(SUITE / name)
    counts = task.roofline_counts("full")
    return Work(counts["vec_flops"], counts["mm_flops"], counts["bytes"], "task.toml")


def test_the_suite_reproduces_accelopt_percent_of_peak() -> None:
    """Our task.toml counts and trn1 peaks, with AccelOpt's measured latencies, give back
    AccelOpt's published % of peak for every task, and its 49.24% geomean."""
    pcts = {}
    for name, latency_ms in ACCELOPT_TRN1_MS.items():
        line = roofline(_work(name), "trn1")
        pcts[name] = pct_of_peak(line.seconds, latency_ms * 1e-3)
        assert pcts[name] == pytest.approx(ACCELOPT_BASELINE_PCT[name], abs=0.15), name
    assert statistics.geometric_mean(pcts.values()) == pytest.approx(49.24, abs=0.05)


def test_the_bound_is_the_largest_term() -> None:
    silu = roofline(_work("silu"), "trn1")
    assert silu.bound == "memory"
    assert silu.seconds == pytest.approx(2 * 4096 * 7168 * 4 / (410 * 1024**3))
    matmul = roofline(_work("matmul"), "trn1")
    assert matmul.bound == "matmul"
    assert matmul.seconds == pytest.approx(2 * 4096 * 12288 * 5120 / 23.75e12)
    assert roofline(_work("mamba"), "trn1").bound == "vector"
    # trn2 has less bandwidth per core and a slower fp32 PE array than trn1
    assert roofline(_work("silu"), "trn2").seconds > silu.seconds
    assert roofline(_work("matmul"), "trn2").seconds > matmul.seconds


def test_bfloat16_matmuls_use_the_bfloat16_peak() -> None:
    fp32 = roofline(Work(0, 1e12, 0, "task.toml"), "trn1")
    bf16 = roofline(Work(0, 1e12, 0, "task.toml", matmul_dtype="bfloat16"), "trn1")
    assert fp32.seconds == pytest.approx(4 * bf16.seconds)


def test_percent_of_peak_is_never_clamped() -> None:
    assert pct_of_peak(2.0, 1.0) == 200.0
    with pytest.raises(ValueError, match="positive"):
        pct_of_peak(1.0, 0.0)
    with pytest.raises(ValueError, match="no roofline peaks"):
        roofline(_work("silu"), "trn9")
    for peaks in PEAKS.values():
        assert all(len(p.source) > 10 for p in (peaks.bandwidth, peaks.vector_flops))


def test_counting_follows_accelopt_hand_counts() -> None:
    m, n, k = 64, 32, 16
    a, b = np.ones((m, k), np.float32), np.ones((k, n), np.float32)
    assert count_forward(lambda x, y: x @ y, [a, b]).mm_flops == 2 * m * n * k
    assert count_forward(np.dot, [a, b]).mm_flops == 2 * m * n * k
    assert count_forward(lambda x, y: np.einsum("mk,kn->mn", x, y), [a, b]).mm_flops == (
        2 * m * n * k
    )
    # silu = x / (1 + exp(-x)): negate, exp, divide; "1 +" is fused (a constant operand)
    silu = count_forward(lambda x: x / (1 + np.exp(-x)), [a])
    assert (silu.vec_flops, silu.mm_flops) == (3 * m * k, 0)
    # reductions count their inputs; in-place updates are counted too
    assert count_forward(lambda x: x.sum(axis=1), [a]).vec_flops == m * k

    def in_place(x: np.ndarray) -> np.ndarray:
        y = x.copy()
        y += x
        return y

    assert count_forward(in_place, [a]).vec_flops == m * k
    assert compulsory_bytes([a, b, 3.0], [a @ b]) == a.nbytes + b.nbytes + m * n * 4


def test_a_task_without_counts_gets_them_from_its_reference(tmp_path: Path) -> None:
    folder = tmp_path / "silu"
    shutil.copytree(SUITE / "silu", folder)
    toml = (folder / "task.toml").read_text()
    (folder / "task.toml").write_text(toml[: toml.index("[roofline]")])
    task = load_task(folder)
    assert not task.roofline
    result = profile_kernel(
        task, backend=NkisimBackend(), shapes="small", seeds=(0,), workdir=tmp_path
    )
    assert result.correct, result.message
    assert result.roofline is not None
    work = result.roofline["work"]
    m, n = 256, 2048  # silu's small shapes
    assert work == {
        "vec_flops": 3 * m * n,
        "mm_flops": 0,
        "bytes": 2 * m * n * 4,
        "source": "counted",
        "matmul_dtype": "float32",
    }
    assert result.pct_of_peak is not None


def test_a_reference_that_cannot_be_counted_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "silu"
    shutil.copytree(SUITE / "silu", folder)
    toml = (folder / "task.toml").read_text()
    (folder / "task.toml").write_text(toml[: toml.index("[roofline]")])
    reference = (folder / "reference.py").read_text()
    # einsum in its sublist form is not countable; the kernel stays correct
    (folder / "reference.py").write_text(
        reference.replace("def forward(x):", "def forward(x):\n    np.einsum(x, [0, 1], [0, 1])")
    )
    result = profile_kernel(
        load_task(folder), backend=NkisimBackend(), shapes="small", seeds=(0,), workdir=tmp_path
    )
    assert result.correct, result.message
    assert result.latency_ms is not None
    assert result.roofline is None
    assert result.pct_of_peak is None
    assert any("no roofline" in w and "sublist" in w for w in result.warnings)


def test_rank_correlation() -> None:
    assert rank_correlation([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert rank_correlation([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert rank_correlation([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.9486833)
    with pytest.raises(ValueError, match="two equally long"):
        rank_correlation([1.0], [2.0])
