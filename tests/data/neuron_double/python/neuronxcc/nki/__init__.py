"""TEST DOUBLE of legacy `neuronxcc.nki` (see tests/neuron_double/README.md): `baremetal` runs
the kernel under nkisim and writes JSON stand-ins for the NEFF and the NTFF."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nkibench.cost import estimate
from nkibench.nkisim import isa, language
from nkibench.nkisim.frontend import jit
from nkibench.nkisim.machine import Config
from nkibench.nkisim.runtime import execute

__all__ = ["baremetal", "isa", "jit", "language"]

# `import neuronxcc.nki.language as nl` finds these before looking for files.
sys.modules[f"{__name__}.language"] = language
sys.modules[f"{__name__}.isa"] = isa

BAREMETAL_OPTIONS = {"save_neff_name", "save_trace_name", "additional_compile_opt", "artifacts_dir"}


def _write(path: str, document: dict[str, Any]) -> None:
    Path(path).write_text(json.dumps(document))


def baremetal(kernel: Any = None, **options: Any) -> Any:
    if kernel is None:
        return lambda k: baremetal(k, **options)
    unknown = set(options) - BAREMETAL_OPTIONS
    if unknown:
        raise TypeError(f"baremetal() got unexpected keyword arguments {sorted(unknown)}")

    def run(*arrays: Any) -> Any:
        if os.environ.get("NEURON_DOUBLE_FAIL") == "compile":
            raise RuntimeError("[TEST DOUBLE] neuronx-cc: compilation failed (requested)")
        target = os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")
        source_file = kernel.fn.__code__.co_filename  # kernel lines name the DMA queues
        ran = execute(kernel, list(arrays), Config(target=target, kernel_file=source_file))
        outputs = ran.outputs
        if os.environ.get("NEURON_DOUBLE_FAIL") == "wrong":
            outputs = [outputs[0] + 1.0, *outputs[1:]]
        seconds = estimate(ran.trace.instructions, target).latency_ns * 1e-9
        if options.get("save_neff_name"):
            _write(
                options["save_neff_name"],
                {
                    "test_double": True,
                    "total_time": seconds,
                    "visible_core": os.environ.get("NEURON_RT_VISIBLE_CORES", ""),
                    "cc_flags": os.environ.get("NEURON_CC_FLAGS", ""),
                    "compile_options": options.get("additional_compile_opt", ""),
                },
            )
        if options.get("save_trace_name"):
            _write(options["save_trace_name"], {"test_double": True, "total_time": seconds})
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    return run


def benchmark(kernel: Callable[..., Any] | None = None, **_options: Any) -> Any:
    raise NotImplementedError("[TEST DOUBLE] accelopt times kernels with neuron-profile")
