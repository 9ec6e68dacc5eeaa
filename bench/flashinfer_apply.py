"""On a GPU: FlashInfer-Bench's own `apply` runs the solutions accelopt exported.

FlashInfer's Trace Apply (FLASHINFER_TRACE_APPLY=1) needs FlashInfer itself, which the GPU
machines here do not have; flashinfer-bench's `apply` reads the same folder layout
(definitions/, solutions/, traces/) and picks a solution per definition by its traces. This
script opens TRACE_DIR (what `accelopt export --format flashinfer --out TRACE_DIR` wrote), and
for every definition and every workload traced there calls `apply` with a fallback that
counts its calls, on inputs drawn by flashinfer-bench itself. A hit is a call that did not
fall back; its output is compared with the definition's PyTorch reference.

    python3 bench/flashinfer_apply.py TRACE_DIR   # one JSON object on stdout
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import torch


def reference_of(source: str) -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(source, "<definition reference>", "exec"), namespace)  # the dataset's own code
    return namespace["run"]


def as_tuple(value: Any) -> tuple[torch.Tensor, ...]:
    return tuple(value) if isinstance(value, tuple | list) else (value,)


def main(root: Path) -> dict[str, Any]:
    # flashinfer_bench says what it installs on stdout, which holds the report alone
    with contextlib.redirect_stdout(sys.stderr):
        return _report(root)


def _report(root: Path) -> dict[str, Any]:
    # imported under the redirection: what they print as they load goes to stderr too
    from flashinfer_bench.apply import apply, enable_apply  # noqa: PLC0415
    from flashinfer_bench.bench.utils import gen_inputs, load_safetensors  # noqa: PLC0415
    from flashinfer_bench.data import TraceSet  # noqa: PLC0415

    traces = TraceSet.from_path(str(root))
    report: dict[str, Any] = {}
    fallbacks = [0]

    def fallback(*args: Any, **kwargs: Any) -> Any:
        fallbacks[0] += 1
        raise RuntimeError("apply fell back: no solution was chosen")

    with enable_apply(str(root)):
        for name, definition in traces.definitions.items():
            reference = reference_of(definition.reference)
            rows = []
            for trace in traces.traces.get(name, []):
                workload = trace.workload
                blobs = load_safetensors(definition, workload, root)
                inputs = gen_inputs(definition, workload, "cuda", blobs)
                before = fallbacks[0]
                try:
                    got = as_tuple(apply(name, args=tuple(inputs), fallback=fallback))
                    error = None
                except RuntimeError as e:
                    got, error = (), str(e)
                expected = as_tuple(reference(*inputs))
                diff = None
                if got:
                    pairs = zip(got, expected, strict=True)
                    diff = max(float((g.float() - e.float()).abs().max()) for g, e in pairs)
                rows.append(
                    {
                        "workload": workload.uuid,
                        "hit": fallbacks[0] == before and error is None,
                        "max_abs_diff": diff,
                        "error": error,
                    }
                )
            report[name] = {
                "solutions": [s.name for s in traces.solutions.get(name, [])],
                "calls": rows,
            }
    report["fallbacks"] = fallbacks[0]
    report["device"] = torch.cuda.get_device_name()
    return report


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1])), indent=1))
