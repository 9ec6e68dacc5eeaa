"""Tensors between the sandboxed phases and PyTorch (child side: imports torch).

The phases exchange `.npy` files (nkibench.sandbox.arrays keeps bfloat16 as ml_dtypes.bfloat16);
NumPy has no bfloat16 or float8 of its own and torch.from_numpy knows no ml_dtypes, so they
cross as their bits; integers, booleans and the other floats cross as themselves.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import torch

__all__ = ["extent", "is_tensor", "to_numpy", "to_torch", "upcast"]

_BITS = {
    torch.bfloat16: (np.dtype(ml_dtypes.bfloat16), torch.int16, np.int16),
    torch.float8_e4m3fn: (np.dtype(ml_dtypes.float8_e4m3fn), torch.uint8, np.uint8),
    torch.float8_e5m2: (np.dtype(ml_dtypes.float8_e5m2), torch.uint8, np.uint8),
}
"""The dtypes NumPy lacks, crossing as their bits (torch's .numpy() refuses them)."""
LOW_PRECISION = (torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.float8_e5m2)


def is_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor)


def extent(tensor: torch.Tensor) -> int:
    """The elements from a tensor's first to its last, both included (its strides' reach in
    its storage; 0 for an empty tensor)."""
    if tensor.numel() == 0:
        return 0
    return 1 + sum((s - 1) * abs(st) for s, st in zip(tensor.shape, tensor.stride(), strict=True))


def to_numpy(tensor: torch.Tensor) -> np.ndarray[Any, Any]:
    tensor = tensor.detach().to("cpu").contiguous()
    if tensor.dtype in _BITS:
        numpy_dtype, int_dtype, _ = _BITS[tensor.dtype]
        bits: np.ndarray[Any, Any] = tensor.view(int_dtype).numpy()
        return bits.view(numpy_dtype)
    return tensor.numpy()


def to_torch(array: np.ndarray[Any, Any], device: str) -> torch.Tensor:
    for torch_dtype, (numpy_dtype, _, numpy_int) in _BITS.items():
        if array.dtype == numpy_dtype:
            bits = torch.from_numpy(np.ascontiguousarray(array).view(numpy_int))
            return bits.view(torch_dtype).to(device)
    return torch.from_numpy(np.ascontiguousarray(array)).to(device)


def upcast(value: Any) -> Any:
    """The reference's view of an input: bfloat16, float16 and float8 tensors in float32 (a
    higher-precision reference than the kernel's own arithmetic)."""
    if isinstance(value, torch.Tensor) and value.dtype in LOW_PRECISION:
        return value.float()
    return value
