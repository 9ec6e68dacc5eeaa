"""TEST DOUBLE of `nrtpy` (see tests/data/neuron_double/README.md), the Neuron runtime's Python
layer: NrtpyModel.load_from_neff / input_tensors_info / __call__ / benchmark, NrtpyTensor,
NrtError, configure, reset, as neuron-runtime/nrtpy documents them. It "loads" the JSON
stand-in NEFFs of the nki double and reports their device time as its durations."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "BenchmarkResult",
    "NrtError",
    "NrtpyModel",
    "NrtpyTensor",
    "TensorMetadata",
    "configure",
    "reset",
]


class NrtError(RuntimeError):
    """An error of the Neuron runtime."""


@dataclass(frozen=True)
class TensorMetadata:
    shape: list[int]
    size: int


@dataclass
class BenchmarkResult:
    mean_ms: float
    min_ms: float
    max_ms: float
    std_dev_ms: float
    iterations: int
    warmup_iterations: int
    durations_ms: list[float] = field(default_factory=list)


class NrtpyTensor:
    def __init__(self, array: np.ndarray[Any, Any], name: str | None) -> None:
        self._array = array
        self.name = name

    @classmethod
    def from_numpy(cls, array: np.ndarray[Any, Any], name: str | None = None) -> NrtpyTensor:
        return cls(np.array(array, copy=True), name)

    def numpy(self) -> np.ndarray[Any, Any]:
        return self._array


class NrtpyModel:
    def __init__(self, document: dict[str, Any], name: str) -> None:
        self._document = document
        self.name = name
        self.input_tensors_info = {
            i["name"]: TensorMetadata(i["shape"], int(np.prod(i["shape"])) * 4)
            for i in document.get("inputs", [])
        }
        self.output_tensors_info = {"output_0": TensorMetadata([], 0)}

    @classmethod
    def load_from_neff(
        cls, neff_path: str | Path, name: str | None = None, core_id: int = 0, **_: Any
    ) -> NrtpyModel:
        if "NEURON_RT_VISIBLE_CORES" not in os.environ:
            raise NrtError("[TEST DOUBLE] the test expects NEURON_RT_VISIBLE_CORES to be set")
        try:
            document = json.loads(Path(neff_path).read_text())
        except (OSError, ValueError) as e:
            raise NrtError(f"[TEST DOUBLE] NRT Error NRT_INVALID(2): cannot load NEFF: {e}") from e
        return cls(document, name or Path(neff_path).stem)

    def _check(self, inputs: dict[str, NrtpyTensor]) -> None:
        if set(inputs) != set(self.input_tensors_info):
            raise NrtError(
                f"[TEST DOUBLE] inputs {sorted(inputs)} do not match the NEFF's "
                f"{sorted(self.input_tensors_info)}"
            )
        for name, tensor in inputs.items():
            if list(tensor.numpy().shape) != self.input_tensors_info[name].shape:
                raise NrtError(f"[TEST DOUBLE] input {name} has the wrong shape")

    def __call__(
        self,
        inputs: dict[str, NrtpyTensor],
        outputs: dict[str, NrtpyTensor] | None = None,
        save_trace: bool = False,
        ntff_name: str | None = None,
    ) -> dict[str, NrtpyTensor] | None:
        self._check(inputs)
        return None if outputs is not None else {"output_0": NrtpyTensor(np.zeros(1), None)}

    def benchmark(
        self,
        inputs: dict[str, NrtpyTensor],
        outputs: dict[str, NrtpyTensor] | None = None,
        warmup_iter: int = 5,
        benchmark_iter: int = 5,
        mode: str = "device",
    ) -> BenchmarkResult:
        if mode not in ("device", "host"):
            raise ValueError(f"mode must be 'device' or 'host', not {mode!r}")
        if benchmark_iter < 1:
            raise ValueError("benchmark_iter must be at least 1")
        self._check(inputs)
        amplitude = 0.05 if os.environ.get("NEURON_DOUBLE_PROFILE") == "noisy" else 0.0005
        base = float(self._document["total_time"]) * 1e3
        durations = [base * (1 + amplitude * (1 if i % 2 else -1)) for i in range(benchmark_iter)]
        return BenchmarkResult(
            mean_ms=float(np.mean(durations)),
            min_ms=min(durations),
            max_ms=max(durations),
            std_dev_ms=float(np.std(durations)),
            iterations=benchmark_iter,
            warmup_iterations=warmup_iter,
            durations_ms=durations,
        )


def configure(visible_cores: Any = None) -> None:
    if visible_cores is not None:
        os.environ["NEURON_RT_VISIBLE_CORES"] = ",".join(str(c) for c in visible_cores)


def reset() -> None:
    """Nothing to close in the double."""
