"""A small FlashInfer Trace dataset made up for the tests (never fetched): an RMSNorm over a
variable batch, with two workloads (the second loads its weight from a safetensors file) and
two Triton solutions with traces, and an elementwise scale-and-add with a scalar input and
one untraced Triton solution. Written as plain JSON, as a dataset on disk is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

RMSNORM = "rmsnorm_h64"
SCALE_ADD = "scale_add"
BLOB = "blob/workloads/rmsnorm/rmsnorm_h64/rmsnorm_h64_w2.safetensors"

RMSNORM_REFERENCE = """import torch


@torch.no_grad()
def run(hidden_states, weight):
    batch_size, hidden_size = hidden_states.shape
    assert hidden_size == 64
    x = hidden_states.to(torch.float32)
    inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6)
    return (x * inv_rms * weight.to(torch.float32)).to(hidden_states.dtype)
"""

SCALE_ADD_REFERENCE = """import torch


def run(x, y, alpha):
    return x * alpha + y
"""

RMSNORM_KERNEL = """import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, H: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, H)
    x = tl.load(x_ptr + row * H + offs).to(tl.float32)
    w = tl.load(w_ptr + offs).to(tl.float32)
    inv = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / H + 1e-6)
    tl.store(out_ptr + row * H + offs, (x * inv * w).to(out_ptr.dtype.element_ty))


def run(hidden_states, weight, out):
    rmsnorm_kernel[(hidden_states.shape[0],)](hidden_states, weight, out, H=hidden_states.shape[1])
"""
"""Destination-passing style (FlashInfer-Bench's default): the output is its last argument."""

RMSNORM_RETURNING = """import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_rows(x_ptr, w_ptr, out_ptr, H: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, H)
    x = tl.load(x_ptr + row * H + offs).to(tl.float32)
    w = tl.load(w_ptr + offs).to(tl.float32)
    inv = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / H + 1e-6)
    tl.store(out_ptr + row * H + offs, (x * inv * w).to(out_ptr.dtype.element_ty))


def rmsnorm(hidden_states, weight):
    out = torch.empty_like(hidden_states)
    rmsnorm_rows[(hidden_states.shape[0],)](hidden_states, weight, out, H=hidden_states.shape[1])
    return out
"""
"""Value-returning, its entry not named run."""

SCALE_ADD_KERNEL = """import torch
import triton
import triton.language as tl


@triton.jit
def scale_add_kernel(x_ptr, y_ptr, z_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(z_ptr + offs, x * alpha + y, mask=mask)


def run(x, y, alpha):
    z = torch.empty_like(x)
    n = x.shape[0]
    scale_add_kernel[(triton.cdiv(n, 64),)](x, y, z, n, alpha, BLOCK=64)
    return z
"""


def rmsnorm_definition() -> dict[str, Any]:
    return {
        "name": RMSNORM,
        "op_type": "rmsnorm",
        "description": "RMSNorm over rows of 64, eps 1e-6.",
        "axes": {"batch_size": {"type": "var"}, "hidden_size": {"type": "const", "value": 64}},
        "inputs": {
            "hidden_states": {"shape": ["batch_size", "hidden_size"], "dtype": "bfloat16"},
            "weight": {"shape": ["hidden_size"], "dtype": "bfloat16"},
        },
        "outputs": {"out": {"shape": ["batch_size", "hidden_size"], "dtype": "bfloat16"}},
        "reference": RMSNORM_REFERENCE,
    }


def scale_add_definition() -> dict[str, Any]:
    return {
        "name": SCALE_ADD,
        "op_type": "elementwise",
        "axes": {"n": {"type": "var"}},
        "inputs": {
            "x": {"shape": ["n"], "dtype": "float32"},
            "y": {"shape": ["n"], "dtype": "float32"},
            "alpha": {"shape": None, "dtype": "float32"},
        },
        "outputs": {"z": {"shape": ["n"], "dtype": "float32"}},
        "reference": SCALE_ADD_REFERENCE,
    }


def _solution(name: str, definition: str, source: str, entry: str, dps: bool) -> dict[str, Any]:
    return {
        "name": name,
        "definition": definition,
        "author": "tests",
        "spec": {
            "language": "triton",
            "target_hardware": ["NVIDIA_H100"],
            "entry_point": f"main.py::{entry}",
            "destination_passing_style": dps,
        },
        "sources": [{"path": "main.py", "content": source}],
    }


WORKLOADS = {
    RMSNORM: [
        {
            "uuid": "w1",
            "axes": {"batch_size": 4},
            "inputs": {"hidden_states": {"type": "random"}, "weight": {"type": "random"}},
        },
        {
            "uuid": "w2",
            "axes": {"batch_size": 8},
            "inputs": {
                "hidden_states": {"type": "random"},
                "weight": {"type": "safetensors", "path": BLOB, "tensor_key": "weight"},
            },
        },
    ],
    SCALE_ADD: [
        {
            "uuid": "s1",
            "axes": {"n": 100},
            "inputs": {
                "x": {"type": "random"},
                "y": {"type": "random"},
                "alpha": {"type": "scalar", "value": 0.5},
            },
        },
    ],
}


def _trace(
    definition: str, workload: dict[str, Any], solution: str, latency_ms: float | None
) -> dict[str, Any]:
    evaluation: dict[str, Any] = {
        "environment": {"hardware": "NVIDIA H100", "libs": {}},
        "timestamp": "2026-11-01T00:00:00",
    }
    if latency_ms is None:
        evaluation["status"] = "RUNTIME_ERROR"
    else:
        evaluation |= {
            "status": "PASSED",
            "correctness": {"max_relative_error": 1e-3, "max_absolute_error": 1e-3},
            "performance": {
                "latency_ms": latency_ms,
                "reference_latency_ms": 0.1,
                "speedup_factor": 0.1 / latency_ms,
            },
        }
    return {
        "definition": definition,
        "workload": workload,
        "solution": solution,
        "evaluation": evaluation,
    }


def write_dataset(root: Path, latencies: dict[str, list[float | None]] | None = None) -> Path:
    """The dataset under `root`; `latencies`: each RMSNorm solution's latency on w1 and w2
    (None: a failed run), by default the DPS solution faster."""
    latencies = latencies or {"rmsnorm_dps": [0.010, 0.012], "rmsnorm_returning": [0.020, 0.030]}
    for name, definition, op in (
        (RMSNORM, rmsnorm_definition(), "rmsnorm"),
        (SCALE_ADD, scale_add_definition(), "elementwise"),
    ):
        write_json(root / "definitions" / op / f"{name}.json", definition)
        write_lines(
            root / "workloads" / op / f"{name}.jsonl",
            [{"definition": name, "workload": w} for w in WORKLOADS[name]],
        )
    solutions = [
        _solution("rmsnorm_dps", RMSNORM, RMSNORM_KERNEL, "run", True),
        _solution("rmsnorm_returning", RMSNORM, RMSNORM_RETURNING, "rmsnorm", False),
        _solution("scale_add_triton", SCALE_ADD, SCALE_ADD_KERNEL, "run", False),
    ]
    for solution in solutions:
        op = "rmsnorm" if solution["definition"] == RMSNORM else "elementwise"
        write_json(
            root / "solutions" / op / solution["definition"] / f"{solution['name']}.json", solution
        )
    traces = [
        _trace(RMSNORM, workload, solution, latency)
        for solution, values in latencies.items()
        for workload, latency in zip(WORKLOADS[RMSNORM], values, strict=True)
    ]
    write_lines(root / "traces" / "rmsnorm" / f"{RMSNORM}.jsonl", traces)
    blob = root / BLOB
    blob.parent.mkdir(parents=True, exist_ok=True)
    save_file({"weight": torch.linspace(0.5, 1.5, 64, dtype=torch.bfloat16)}, str(blob))
    return root


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))


def write_lines(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
