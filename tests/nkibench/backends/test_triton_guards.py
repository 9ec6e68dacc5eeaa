"""The triton backend's run-time guards, in this process (the kernel child installs them):
the torch-compute guard sees every aten op whatever Python spelled it, outputs must be plain
tensors, and the modules the harness relies on must stay as they were."""

from __future__ import annotations

import contextlib
import re

import pytest

pytest.importorskip("torch")  # first: the module is skipped without torch

import torch

from nkibench.backends.triton.canaries import Canaries
from nkibench.backends.triton.guards import (
    Cheat,
    ModuleSnapshot,
    check_outputs,
    poison,
)
from nkibench.backends.triton.torch_guard import (
    ALLOWED_OPS,
    TorchCompute,
    TorchComputeGuard,
    guard_tensor_text,
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


def test_integer_data_may_be_read_on_the_host_beside_floating_point_inputs() -> None:
    """Lengths and offsets: the scalar read and the full reductions to one integer, on
    integer and bool tensors, where the inputs hold floating-point data."""
    x = torch.randn(6, 8)
    lengths = torch.tensor([3, 0, 8, 5, 8, 1], dtype=torch.int32)
    mask = lengths > 2
    with TorchComputeGuard([x, lengths]):
        read = (int(lengths[-1]), lengths[0].item(), int(lengths.max()), int(lengths.sum()))
        flags = (bool(mask.any()), bool(mask[0]), int(lengths.amin()))
        scratch = torch.empty(4, dtype=torch.int64)  # what a Triton kernel would fill
        int(scratch[0])
    assert read == (1, 3, 8, 25)
    assert flags == (True, True, 0)


@pytest.mark.parametrize(
    ("read", "words"),
    [
        (lambda x, n: float(x[0, 0]), "read torch.float32 tensor data on the host"),
        (lambda x, n: x[0, 0].item(), "aten._local_scalar_dense"),
        (lambda x, n: bool(x[0, 0] > 0), "computed with PyTorch: aten.gt"),
        (lambda x, n: int(x.max()), "computed with PyTorch: aten.max"),
        (lambda x, n: x.view(torch.int32)[0, 0].item(), "a floating-point input's data as"),
        (lambda x, n: int(x.view(torch.int32).t().contiguous()[0, 0]), "input's data as"),
        (lambda x, n: int(x.view(torch.int32).clone().sum()), "input's data as integers"),
        (lambda x, n: int(n.max(dim=0).values), "a reduction to more than one value"),
        (lambda x, n: n.cumsum(0), "computed with PyTorch: aten.cumsum"),
    ],
)
def test_floating_point_data_is_never_read_on_the_host(read: object, words: str) -> None:
    """Nor integers that alias a floating-point input (a view of it as integers, or a clone
    of one made in the run), nor integer compute beyond a reduction to one integer."""
    x = torch.randn(6, 8)
    lengths = torch.arange(6, dtype=torch.int64).reshape(2, 3)
    with pytest.raises(TorchCompute, match=re.escape(words)), TorchComputeGuard([x, lengths]):
        read(x, lengths)  # type: ignore[operator]


def test_integer_data_is_the_data_where_every_input_is_integer() -> None:
    counts = torch.arange(8, dtype=torch.int32)
    with (
        pytest.raises(TorchCompute, match="every input here is integer data"),
        TorchComputeGuard([counts]),
    ):
        int(counts[3])


def _catches_the_refusal(x: torch.Tensor) -> torch.Tensor:
    """A run() that computes with torch where nothing watches, in Triton where a guard does."""
    with contextlib.suppress(TorchCompute):
        return torch.sigmoid(x)
    return x.view(-1)


def _raises_another_error(x: torch.Tensor) -> None:
    try:
        x.exp()
    except Exception:
        raise ValueError("something else") from None


def test_a_refusal_caught_inside_run_stands() -> None:
    """A kernel that catches the guard's refusal fails all the same: the first refusal is
    raised again when the guard closes, whatever run() raised instead."""
    x = torch.randn(4)
    with pytest.raises(TorchCompute, match=r"aten\.sigmoid") as caught, TorchComputeGuard():
        _catches_the_refusal(x)
    assert caught.value.kind == "cheat"
    with pytest.raises(TorchCompute, match=r"aten\.exp"), TorchComputeGuard():
        _raises_another_error(x)
    with TorchComputeGuard():  # a guard that refused nothing closes quietly
        x.view(2, 2)


def test_the_text_of_a_tensor_is_a_read_the_guard_refuses() -> None:
    """torch prints a tensor with every dispatch mode off: its data as text (str, repr, an
    f-string) would reach run() without an op the guard sees."""
    x = torch.randn(3)
    original = torch._tensor_str._str
    try:
        guard_tensor_text()
        for read in (str, repr, lambda t: f"{t}"):
            with (
                pytest.raises(TorchCompute, match="read tensor data on the host as text"),
                TorchComputeGuard(),
            ):
                read(x)
        assert "tensor(" in repr(x)  # outside a guard, and within trusted(): the harness's
        with TorchComputeGuard(), trusted():
            assert "tensor(" in str(x)
    finally:
        setattr(torch._tensor_str, "_str", original)  # noqa: B010


def test_the_harness_own_ops_are_trusted() -> None:
    """The interpreter's argument copies and the poisoning of fresh allocations run inside
    run(), and are not the kernel's."""
    x = torch.randn(4)
    with TorchComputeGuard():
        with trusted():
            (x * 2).sum()
        with Canaries().allocations(poison):
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
