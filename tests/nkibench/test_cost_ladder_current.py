"""The cost model ranks current NKI's matmul ladder (the calibration suite's
matmul_tutorial_nki/ladder.toml) in its documented order on trn2, each rung run under nkisim's
current-NKI front and checked against the task's reference first. Apart from
test_cost_model.py so that this ladder's minute of simulation runs beside that file's own
ladder, on another worker."""

from __future__ import annotations

import importlib.util
import itertools
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from nkibench.cost import Estimate, estimate
from nkibench.nkisim.current.frontend import SHADOWED
from nkibench.nkisim.current.frontend import (
    install_shadow_modules as install_current_shadow_modules,
)
from nkibench.nkisim.machine import Config
from nkibench.nkisim.runtime import execute
from nkibench.sandbox.loader import load_kernel
from nkibench.suites import CALIBRATION

pytestmark = pytest.mark.usefixtures("shadow_modules")
rng = np.random.default_rng(11)
BF16 = ml_dtypes.bfloat16
NKI_LADDER = CALIBRATION / "matmul_tutorial_nki"


def randn(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def _reference(folder: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"{folder.name}_reference", folder / "reference.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def nki_ladder() -> tuple[dict[str, Any], dict[str, Estimate]]:
    """ladder.toml, and its kernels run under nkisim's current-NKI front on its target at the
    task's small shapes, each checked against reference.py's forward and estimated."""
    ladder = tomllib.loads((NKI_LADDER / "ladder.toml").read_text())
    task = tomllib.loads((NKI_LADDER / "task.toml").read_text())
    shapes = task["shapes"][ladder["shapes"]]
    lhsT = randn(shapes["K"], shapes["M"], dtype=BF16)
    rhs = randn(shapes["K"], shapes["N"], dtype=BF16)
    expected = _reference(NKI_LADDER).forward(lhsT, rhs)
    rungs = {}
    with pytest.MonkeyPatch.context() as patch:  # current NKI's `nki` modules, this fixture only
        for name in SHADOWED:  # put back (or removed) when the context ends
            patch.setitem(sys.modules, name, sys.modules.get(name))
        install_current_shadow_modules()
        for name in ladder["order"]:
            filename = str(NKI_LADDER / name)
            kernel = load_kernel((NKI_LADDER / name).read_text(), filename, "kernel", "nki")
            ran = execute(
                kernel, [lhsT, rhs], Config(target=ladder["target"], kernel_file=filename)
            )
            (result,) = ran.outputs
            assert result.dtype == BF16, name
            assert result.shape == expected.shape, name
            error = np.linalg.norm(result.astype(np.float32) - expected)
            assert error < task["correctness"]["rel_tol"] * np.linalg.norm(expected), name
            assert ran.never_written == [0], name  # every element of the result written
            rungs[name] = estimate(ran.trace.instructions, ladder["target"], ran.lifetimes)
    return ladder, rungs


def test_the_current_nki_ladder_is_ranked_in_its_documented_order_on_trn2(
    nki_ladder: tuple[dict[str, Any], dict[str, Estimate]],
) -> None:
    ladder, rungs = nki_ladder
    assert ladder["target"] == "trn2"
    assert ladder["order"] == ["kernel.py", "hoisted.py", "blocked.py", "optimized.py"]
    latencies = [rungs[name].latency_ns for name in ladder["order"]]
    assert all(a > b for a, b in itertools.pairwise(latencies)), latencies
    # the tutorial's reasons: fewer HBM bytes (every step) and fewer, wider transfers
    for counter, key in (
        ("hbm_read_bytes", "hbm_read_bytes_fall"),
        ("dma_transfer_count", "dma_transfers_fall"),
    ):
        values = [rungs[name].counters[counter] for name in ladder[key]]
        assert all(a > b for a, b in itertools.pairwise(values)), (counter, values)
    # the same flops on every rung; memory bound at the top, TensorE bound at the bottom
    assert {e.counters["hardware_flops"] for e in rungs.values()} == {2.0 * 2048**3}
    tiled, optimized = rungs[ladder["order"][0]], rungs[ladder["order"][-1]]
    assert (tiled.bound_by, optimized.bound_by) == ("dma", "tensor")
