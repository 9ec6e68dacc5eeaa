"""`accelopt bench gpu --stream N`: candidates evaluated one after another as a search does,
and their rate per hour. Without a GPU, under Triton's CPU interpreter (checked, not timed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_cli


def _stream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, warm: bool) -> dict[str, Any]:
    monkeypatch.setenv("ACCELOPT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ACCELOPT_WARM_CHILDREN", "1" if warm else "0")
    saved = tmp_path / f"stream-{warm}.json"
    run = run_cli(
        "bench",
        "gpu",
        "--db",
        f"sqlite:///{tmp_path / 'bench.db'}",
        "--stream",
        "3",
        "--shapes",
        "small",
        "--task",
        "silu",
        "--task",
        "matmul",
        "--save",
        str(saved),
    )
    assert run.code == 0, run.err
    assert "3 candidates in" in run.out
    return dict(json.loads(saved.read_text()))


@pytest.mark.slow
@pytest.mark.usefixtures("gpu_turn")
def test_a_stream_profiles_each_variant_afresh_in_turn_and_says_its_rate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warm = _stream(tmp_path, monkeypatch, warm=True)
    cold = _stream(tmp_path, monkeypatch, warm=False)
    for result in (warm, cold):
        rows = result["candidates"]
        assert [r["task"] for r in rows] == ["matmul", "silu", "matmul"]
        assert [b["task"] for b in result["baselines"]] == ["matmul", "silu"]
        assert all(b["correct"] for b in result["baselines"]), result["baselines"]
        assert result["baselines_s"] >= sum(b["wall_s"] for b in result["baselines"])
        assert all(r["correct"] for r in rows), rows
        assert sum(r["wall_s"] for r in rows) <= result["seconds"]
        assert result["per_hour"] == pytest.approx(3 * 3600 / result["seconds"])
    assert warm["fingerprint"]["children"].startswith("warm")
    assert cold["fingerprint"]["children"] == "cold"
