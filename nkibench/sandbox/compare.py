"""The comparison phase, inside a sandboxed child that never ran the kernel: the kernel's outputs
are read as data (regular files beneath the output folder, no link followed, each no larger than
its expected output could make it: nkibench.sandbox.arrays), the task's output transform applied
(AccelOpt's transform_nki_outputs, for dialects that have one), then each output judged under
its tolerance (the task's relative L2, or task.toml's `[outputs.<name>]`) per seed, stopping at
the first seed that fails. Where the backend fills new outputs with nkisim's
sentinel, the elements never written are counted here too."""

from __future__ import annotations

import importlib
import math
from pathlib import Path
from typing import Any

from nkibench.nkisim.dtypes import never_written
from nkibench.policy.correctness import compare_outputs, unknown_outputs
from nkibench.policy.tolerance import Tolerance
from nkibench.sandbox.arrays import load_array, restore
from nkibench.sandbox.readback import UnsafeFile
from nkibench.sandbox.reference import reference_module
from nkibench.sandbox.stopwatch import span

__all__ = ["compare_phase"]

LARGEST_ITEM = 16
"""Bytes of the widest element an output may have (complex128): an output file is never larger
than the largest expected output's element count times this."""


def _failed(message: str) -> dict[str, Any]:
    return {"correct": False, "max_rel_l2": None, "message": message}


def _outputs(folder: Path, seed: int, count: int, expected: list[Any]) -> list[Any] | str:
    """The kernel's outputs for `seed`, or why they cannot be read. (Their count is the
    comparison's to judge, after the task's output transform.)"""
    elements = max([1, *(math.prod(getattr(want, "shape", ())) for want in expected)])
    got = []
    for i in range(count):
        try:
            got.append(
                load_array(folder, f"seed_{seed}/output_{i}.npy", limit=elements * LARGEST_ITEM)
            )
        except UnsafeFile as e:
            return f"output {i} cannot be read as the kernel's own array file: {e}"
    return got


def compare_phase(request: dict[str, Any]) -> dict[str, Any]:
    with span("compare"):
        return _compare(request)


def _compare(request: dict[str, Any]) -> dict[str, Any]:
    # Without an output transform the reference (and torch, for Triton tasks) need not load
    module = reference_module(request) if request.get("transform", True) else None
    transform = getattr(module, "transform_nki_outputs", None)
    hidden, outputs = Path(request["expected_dir"]), Path(request["out_dir"])
    tolerances = {
        key: Tolerance.from_json(value) for key, value in request.get("outputs", {}).items()
    }
    seeds: dict[str, Any] = {}
    for seed in request["seeds"]:
        manifest = request["manifest"][str(seed)]
        expected = [restore(spec, hidden / f"seed_{seed}") for spec in manifest["expected"]]
        got = _outputs(outputs, seed, request["output_counts"][str(seed)], expected)
        if isinstance(got, str):
            seeds[str(seed)] = _failed(got)
            break
        unwritten = [never_written(a) for a in got] if request.get("count_unwritten") else []
        reference = expected[0] if len(expected) == 1 else tuple(expected)
        result = got[0] if len(got) == 1 else tuple(got)
        if transform is not None:
            try:
                result = transform(result, reference)
            except Exception as e:
                seeds[str(seed)] = _failed(
                    f"transform_nki_outputs failed on the kernel's outputs: {type(e).__name__}: {e}"
                )
                break
        names = manifest.get("output_names")
        unknown = unknown_outputs(tolerances, names, len(expected))
        if unknown:
            return {
                "ok": False,
                "kind": "task",
                "message": f"task.toml: [outputs.{unknown[0]}]: the reference has no such output "
                f"(its outputs: {', '.join(names or [str(i) for i in range(len(expected))])})",
            }
        comparison = compare_outputs(result, reference, request["rel_tol"], names, tolerances)
        seeds[str(seed)] = {
            "correct": comparison.correct,
            "max_rel_l2": comparison.max_rel_l2,
            "message": comparison.message,
            "never_written": unwritten,
        }
        if not comparison.correct:
            break
    answer: dict[str, Any] = {"ok": True, "seeds": seeds}
    check = request.get("check")
    if check is not None and all(v["correct"] for v in seeds.values()):
        answer["check"] = _checked(check)
    return answer


def _checked(check: dict[str, Any]) -> dict[str, Any]:
    """The backend's trusted check, run here because this child runs no task code (the parent
    asks only then); its failure is the backend's, not the comparison's."""
    module, _, function = check["entry"].partition(":")
    try:
        found: dict[str, Any] = getattr(importlib.import_module(module), function)(check["request"])
    except MemoryError:
        raise
    except Exception as e:
        return {"ok": False, "kind": "measurement", "message": f"{type(e).__name__}: {e}"[:500]}
    return found
