"""`accelopt bench fidelity` on an NKIBench-shaped tree of our own kernels (AccelOpt's stay
outside the repository): the estimates are joined to AccelOpt's measured trn1 profiles by
task, % of peak is AccelOpt's on both sides, and a sample is estimated against its baseline."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nkibench.benchmarks.accelopt_measured import ACCELOPT_TRN1, SAMPLES
from nkibench.suites import NKI_LEGACY_SUITE
from tests.support.cli import run_cli

TASKS = ("rope_single_freq_apply", "silu")
"""Cheap at AccelOpt's full shapes; rope has an optimized sample."""
PUBLISHED_PCT = {"rope_single_freq_apply": 21.1, "silu": 40.0}
"""AccelOpt's baseline % of peak on trn1 (its calculate_percentage_of_peak.py)."""


def _nkibench_tree(root: Path) -> Path:
    summary = {}
    for name in TASKS:
        suite = NKI_LEGACY_SUITE / name
        (root / "reference").mkdir(parents=True, exist_ok=True)
        (root / "kernels").mkdir(exist_ok=True)
        (root / "reference" / f"{name}.py").write_text((suite / "reference.py").read_text())
        (root / "kernels" / f"{name}.py").write_text((suite / "kernel.py").read_text())
        summary[name] = {
            "cases": {
                "0": {
                    "values": ACCELOPT_TRN1[name].shape,
                    "impls": [{"task": f"./reference/{name}.py", "kernel": f"./kernels/{name}.py"}],
                }
            }
        }
    (root / "summary.json").write_text(json.dumps(summary))
    return root


def _sample_without_imports(folder: Path) -> Path:
    """rope's baseline as AccelOpt's samples are written: the kernel without its imports."""
    folder.mkdir()
    source = (NKI_LEGACY_SUITE / "rope_single_freq_apply" / "kernel.py").read_text()
    body = re.sub(r"^(import|from) .*\n", "", source, flags=re.M)
    (folder / "rope_optimized.py").write_text(body)
    return folder


def test_fidelity_joins_estimates_to_accelopt_measurements(tmp_path: Path) -> None:
    tree = _nkibench_tree(tmp_path / "NKIBench")
    samples = _sample_without_imports(tmp_path / "samples")
    ran = run_cli("bench", "fidelity", "--nkibench", str(tree), "--samples", str(samples), "--json")
    assert ran.code == 0, ran.err
    result = ran.json()
    rows = {row["task"]: row for row in result["tasks"]}
    assert sorted(rows) == sorted(TASKS)
    for name, row in rows.items():
        measured = ACCELOPT_TRN1[name]
        assert row["correct"], row["message"]
        assert row["measured_ms"] == measured.latency_ms
        assert row["ratio"] == pytest.approx(row["estimated_ms"] / measured.latency_ms)
        assert row["pct_of_peak_measured"] == pytest.approx(PUBLISHED_PCT[name], abs=0.1)
        assert row["pct_of_peak_estimated"] == pytest.approx(
            row["pct_of_peak_measured"] / row["ratio"]
        )
        assert row["hbm_read_bytes"]["measured"] == measured.hbm_read_bytes
        assert row["engines"]["vector"]["measured_ms"] == pytest.approx(measured.busy_ms("vector"))
        assert row["engines"]["vector"]["estimated_ms"] > 0  # both are element-wise kernels
    summary = result["summary"]
    assert summary["tasks"] == 2
    assert summary["predicted"]["tasks"] + summary["fitted"]["tasks"] == 2
    ratios = [rows[n]["ratio"] for n in TASKS]
    assert summary["geomean_ratio"] == pytest.approx((ratios[0] * ratios[1]) ** 0.5)
    estimated = [rows[n]["estimated_ms"] for n in TASKS]
    measured_ms = [rows[n]["measured_ms"] for n in TASKS]
    same_order = (estimated[0] < estimated[1]) == (measured_ms[0] < measured_ms[1])
    assert summary["spearman"] == pytest.approx(1.0 if same_order else -1.0)
    (sample,) = summary["samples"]
    assert sample["sample"] == "rope_optimized.py"
    assert sample["correct"], sample["message"]
    # the sample is the baseline itself, so the estimate cannot tell them apart
    assert sample["estimated_speedup"] == pytest.approx(1.0)
    assert sample["measured_speedup"] == pytest.approx(SAMPLES["rope_optimized.py"].speedup)
    assert sample["measured_speedup"] == pytest.approx(1.300, abs=0.001)


def test_fidelity_refuses_a_tree_at_other_shapes(tmp_path: Path) -> None:
    tree = _nkibench_tree(tmp_path / "NKIBench")
    reference = tree / "reference" / "silu.py"
    reference.write_text(reference.read_text().replace("M = 4096", "M = 256"))
    ran = run_cli("bench", "fidelity", "--nkibench", str(tree), "--tasks", "silu")
    assert ran.code == 1
    assert "silu runs at {'M': 256, 'N': 7168}" in ran.err
    assert "AccelOpt measured it at {'M': 4096, 'N': 7168}" in ran.err
