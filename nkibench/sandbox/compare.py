"""The comparison phase, inside the sandboxed child: the task's output transform (AccelOpt's
transform_nki_outputs, for dialects that have one), then the relative-L2 rule per seed,
stopping at the first seed that fails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nkibench.policy.correctness import compare_outputs
from nkibench.sandbox.arrays import expected_folder, load_array, restore
from nkibench.sandbox.reference import reference_module

__all__ = ["compare_phase"]


def compare_phase(request: dict[str, Any]) -> dict[str, Any]:
    # Without an output transform the reference (and torch, for Triton tasks) need not load
    module = reference_module(request) if request.get("transform", True) else None
    transform = getattr(module, "transform_nki_outputs", None)
    data, outputs = Path(request["data_dir"]), Path(request["out_dir"])
    seeds: dict[str, Any] = {}
    for seed in request["seeds"]:
        manifest = request["manifest"][str(seed)]
        hidden = expected_folder(data, seed)
        expected = [restore(spec, hidden) for spec in manifest["expected"]]
        count = request["output_counts"][str(seed)]
        got = [load_array(outputs / f"seed_{seed}" / f"output_{i}.npy") for i in range(count)]
        reference = expected[0] if len(expected) == 1 else tuple(expected)
        result = got[0] if len(got) == 1 else tuple(got)
        if transform is not None:
            try:
                result = transform(result, reference)
            except Exception as e:
                seeds[str(seed)] = {
                    "correct": False,
                    "max_rel_l2": None,
                    "message": "transform_nki_outputs failed on the kernel's outputs: "
                    f"{type(e).__name__}: {e}",
                }
                continue
        comparison = compare_outputs(result, reference, request["rel_tol"])
        seeds[str(seed)] = {
            "correct": comparison.correct,
            "max_rel_l2": comparison.max_rel_l2,
            "message": comparison.message,
        }
        if not comparison.correct:
            break
    return {"ok": True, "seeds": seeds}
