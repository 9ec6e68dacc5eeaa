"""The triton backend's run-time guards, in this process (the kernel child installs them):
the torch-compute guard sees every aten op whatever Python spelled it, outputs must be plain
tensors, and the modules the harness relies on must stay as they were."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")  # first: the module is skipped without torch

import torch

from nkibench.backends.triton.guards import (
    Cheat,
    ModuleSnapshot,
    check_outputs,
    poisoned_allocations,
)
from nkibench.backends.triton.torch_guard import (
    ALLOWED_OPS,
    TorchCompute,
    TorchComputeGuard,
    trusted,
)


def test_allocation_views_and_queries_pass_the_guard() -> None:
    x = torch.randn(6, 8)
    with TorchComputeGuard():
        out = torch.empty((6, 8), dtype=x.dtype, device=x.device)
        torch.zeros_like(x)
        torch.full((2,), 1.0)
        x.new_empty(3)
        x.view(-1)
        x.reshape(2, 24)
        x.t().reshape(-1)  # a copy of a strided tensor (clone)
        x.t().contiguous()
        x.T.unsqueeze(0).squeeze(0)
        x[1:3, ::2].narrow(0, 0, 1)
        x.split(2)  # type: ignore[no-untyped-call]  # torch's Tensor.split is untyped
        x.expand(2, 6, 8)
        sizes = (x.shape, x.stride(0), x.numel(), x.dtype, x.device, x.data_ptr(), x.dim())
    assert out.shape == (6, 8)
    assert sizes[0] == (6, 8)


@pytest.mark.parametrize(
    ("compute", "op"),
    [
        (lambda x: x * 2, "aten.mul"),
        (lambda x: 2.718 ** (-x), "aten.neg"),
        (lambda x: x @ x.t(), "aten.mm"),
        (lambda x: x.sum(), "aten.sum"),
        (torch.rsqrt, "aten.rsqrt"),
        (lambda x: torch.nn.functional.softmax(x, dim=-1), "aten._softmax"),
        (lambda x: torch.where(x > 0, x, 0.0), "aten.gt"),
        (lambda x: float(x[0, 0]), "aten._local_scalar_dense"),
        (lambda x: x.to(torch.float16), "aten._to_copy"),
        (lambda x: torch.empty_like(x).copy_(x), "aten.copy_"),
        (lambda x: x.zero_(), "aten.zero_"),
    ],
)
def test_any_torch_compute_is_a_cheat_naming_the_op(compute: object, op: str) -> None:
    x = torch.randn(6, 8)
    expected = f"run\\(\\) computed with PyTorch: {op} "
    with pytest.raises(TorchCompute, match=expected) as caught, TorchComputeGuard():
        compute(x)  # type: ignore[operator]
    assert caught.value.kind == "cheat"


def test_the_harness_own_ops_are_trusted() -> None:
    """The interpreter's argument copies and the poisoning of fresh allocations run inside
    run(), and are not the kernel's."""
    x = torch.randn(4)
    with TorchComputeGuard():
        with trusted():
            (x * 2).sum()
        with poisoned_allocations():
            out = torch.empty_like(x)
    assert torch.isnan(out).all()
    assert "fill_" not in ALLOWED_OPS


class Deferred(torch.Tensor):
    pass


def test_outputs_must_be_plain_tensors() -> None:
    plain = torch.zeros(3)
    check_outputs([plain, plain.view(-1)])
    with pytest.raises(Cheat, match=r"output 1 is a Deferred, a subclass of torch\.Tensor"):
        check_outputs([plain, plain.as_subclass(Deferred)])
    with pytest.raises(TypeError, match="output 0 is a list, not a tensor"):
        check_outputs([[1.0]])


def test_a_replaced_module_attribute_is_a_cheat(monkeypatch: pytest.MonkeyPatch) -> None:
    modules = ModuleSnapshot()
    assert modules.changed() == []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args: None)
    monkeypatch.setattr(torch.Tensor, "clone", lambda self: self)
    with pytest.raises(Cheat, match=r"replaced torch\.cuda\.synchronize, torch\.Tensor\.clone"):
        modules.verify()
    monkeypatch.undo()
    modules.verify()
