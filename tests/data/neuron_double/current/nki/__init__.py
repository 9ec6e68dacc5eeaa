"""TEST DOUBLE of the standalone `nki` package, current NKI (see tests/data/neuron_double/
README.md). `@nki.jit` kernels called with NumPy arrays are "compiled" into
NKI_ARTIFACTS_DIR/kernel.neff (a JSON stand-in no real tool could read) and run under nkisim,
returning NumPy arrays, as the real standalone mode does. NKI_ARTIFACTS_DIR is read once, when
this package is imported, as the real one reads its compile options."""

from __future__ import annotations

import inspect
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from nkibench.cost import estimate
from nkibench.nkisim import isa, language
from nkibench.nkisim.frontend import JitKernel
from nkibench.nkisim.machine import Config
from nkibench.nkisim.runtime import execute

__all__ = ["isa", "jit", "language", "simulate"]

# `import nki.language as nl` finds these before looking for files.
sys.modules[f"{__name__}.language"] = language
sys.modules[f"{__name__}.isa"] = isa

ARTIFACTS_DIR = os.environ.get("NKI_ARTIFACTS_DIR")


class Kernel:
    """What `@nki.jit` returns: called with NumPy arrays, it compiles and runs standalone."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.__name__ = fn.__name__
        self.__wrapped__ = fn

    def _neff(self, args: tuple[Any, ...], seconds: float) -> None:
        if not ARTIFACTS_DIR:
            return
        names = list(inspect.signature(self.fn).parameters)
        inputs = [
            {"name": name, "shape": list(a.shape), "dtype": str(a.dtype)}
            for name, a in zip(names, args, strict=False)
            if isinstance(a, np.ndarray)
        ]
        document = {
            "test_double": True,
            "kernel": self.__name__,
            "total_time": seconds,
            "inputs": inputs,
            "visible_core": os.environ.get("NEURON_RT_VISIBLE_CORES", ""),
            "lnc_config": os.environ.get("NEURON_LOGICAL_NC_CONFIG", ""),
            "target": os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE", ""),
        }
        Path(ARTIFACTS_DIR).mkdir(parents=True, exist_ok=True)
        (Path(ARTIFACTS_DIR) / "kernel.neff").write_text(json.dumps(document))

    def __call__(self, *args: Any) -> Any:
        if not all(isinstance(a, np.ndarray | int | float) for a in args):
            raise TypeError("[TEST DOUBLE] nki: only the standalone (NumPy) mode is implemented")
        failure = os.environ.get("NEURON_DOUBLE_FAIL")
        if failure == "compile":
            raise RuntimeError("[TEST DOUBLE] nki: compilation failed (requested)")
        target = os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")
        config = Config(target=target, kernel_file=self.fn.__code__.co_filename)
        ran = execute(JitKernel(self.fn), list(args), config)
        self._neff(args, estimate(ran.trace.instructions, target).latency_ns * 1e-9)
        if failure == "runtime":
            raise RuntimeError("[TEST DOUBLE] NRT Error NRT_EXEC_OOB(1006): Failed to execute")
        outputs = ran.outputs
        if failure == "wrong":
            outputs = [outputs[0] + 1.0, *outputs[1:]]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


def jit(fn: Callable[..., Any] | None = None, **_options: Any) -> Any:
    if fn is None:
        return jit
    return Kernel(fn)


def simulate(kernel: Any) -> Any:
    raise NotImplementedError("[TEST DOUBLE] nki.simulate: accelopt checks kernels with nkisim")
