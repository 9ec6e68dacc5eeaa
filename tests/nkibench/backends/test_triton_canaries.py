"""Guard bands around a checked run's buffers (nkibench.backends.triton.canaries), on CPU
tensors: what a GPU kernel's stray write does to the memory beside its buffer is done here by
hand, through a view that reaches past the buffer. (Under Triton's interpreter the launch's own
bounds check refuses such a store first: tests/nkibench/backends/test_triton_backend.py.)"""

from __future__ import annotations

import pytest
import torch

from nkibench.backends.triton.canaries import CANARY, GUARD_BYTES, Canaries, OutOfBounds
from nkibench.backends.triton.guards import count_poison, poison


def reach(tensor: torch.Tensor, start: int, count: int) -> torch.Tensor:
    """`count` elements of the storage under `tensor`, from `start` elements after its first
    (negative: before it), as a stray pointer would address them."""
    return torch.as_strided(tensor, (count,), (1,), tensor.storage_offset() + start)


def test_a_write_past_an_output_names_it_and_the_offsets() -> None:
    canaries = Canaries()
    with canaries.allocations(poison):
        out = torch.empty(4, 100)
        scratch = torch.zeros(16, dtype=torch.int32)
    out.fill_(1.0)
    canaries.check([], [out], None, ["out"])  # in bounds: nothing to say
    reach(out, 400, 64).fill_(2.0)
    with pytest.raises(OutOfBounds) as caught:
        canaries.check([], [out], None, ["out"])
    assert caught.value.kind == "runtime"
    assert caught.value.message.startswith(
        "run() wrote past the end of output 'out': 64 element(s), at offsets 0-63 after its last"
    )
    reach(out, 400, 64).view(torch.uint8).fill_(CANARY)  # the band as it was
    canaries.check([], [out], None, ["out"])
    reach(scratch, 16, 3).fill_(7)
    reach(scratch, 20, 1).fill_(7)
    with pytest.raises(OutOfBounds, match=r"end of a \(16,\) int32 buffer run\(\) allocated: "
                       r"4 element\(s\), at offsets 0-2 and 4 after"):  # fmt: skip
        canaries.check([], [out], None, ["out"])


def test_a_write_before_an_input_names_it() -> None:
    canaries = Canaries()
    x = torch.randn(8, 8)
    n = torch.tensor(3)  # a 0-d tensor is guarded too
    guarded = canaries.guard_inputs([x, 2.5, n])
    assert torch.equal(guarded[0], x)
    assert guarded[1] == 2.5
    assert int(guarded[2]) == 3
    canaries.check(guarded, [], ["x", "alpha", "n"], None)
    reach(guarded[0], -5, 1).fill_(0.0)
    with pytest.raises(OutOfBounds, match=r"before the start of input 'x', 5 element\(s\) ahead"):
        canaries.check(guarded, [], ["x", "alpha", "n"], None)


def test_allocations_keep_their_shape_strides_dtype_and_contents() -> None:
    canaries = Canaries()
    base = torch.randn(2, 3, 4, 5)
    given = torch.empty(3)
    with canaries.allocations(poison):
        empty = torch.empty(6, 7, dtype=torch.bfloat16)
        strided = torch.empty_strided((3, 4), (1, 3))
        like = torch.empty_like(base, memory_format=torch.channels_last)
        new = base.new_empty((5,))
        zeros = torch.zeros_like(base)
        new_zeros = base.new_zeros(2, 2, dtype=torch.int64)
        asked_out = torch.empty(3, out=given)  # made as asked: no band
    assert count_poison(empty) == 42
    assert strided.stride() == (1, 3)
    assert like.stride() == base.contiguous(memory_format=torch.channels_last).stride()
    assert new.dtype == base.dtype
    assert not zeros.any()
    assert new_zeros.dtype == torch.int64
    assert not new_zeros.any()
    assert len(canaries.allocated) == 6
    assert asked_out.untyped_storage().nbytes() == 12
    for tensor in (empty, strided, like, new, zeros, new_zeros):
        storage = tensor.untyped_storage()
        assert storage.nbytes() > 2 * GUARD_BYTES
        # the band keeps the allocation's alignment (Triton specialises on 16 bytes)
        assert (tensor.data_ptr() - storage.data_ptr()) % 16 == 0
    canaries.check([], [empty, strided, like, new, zeros, new_zeros], None, None)
    # outside `allocations`, torch allocates as it always does
    assert torch.empty(3).untyped_storage().nbytes() == 12
