"""The adversarial corpus (issue 14): kernels that cheat the check or the timer, or try to get
out of their sandbox, in legacy NKI, current NKI and Triton. Each runs through the real
sandboxed harness and must fail with exactly the kind its header names, and a message that
says why: refused statically ("rejected"), caught at run time ("cheat"), or run and found out
("incorrect", "runtime", "constraint"). Entries whose exploit needs a GPU to show also run in
tests/nkibench/backends/test_triton_gpu.py; here they must pass or fail as their header says
under Triton's CPU interpreter."""

from __future__ import annotations

from pathlib import Path

import pytest

from nkibench.backends.nkisim.backend import NkisimBackend
from nkibench.backends.triton.backend import TritonBackend
from nkibench.errors import ERROR_KINDS
from tests.support.adversarial import ENTRIES, Entry
from tests.support.triton_helpers import triton_backend

__all__ = ["triton_backend"]

FAMILIES = (
    "side stream",
    "defer work past the timer",
    "patching the timer",
    "patching module attributes",
    "cached across calls (by pointer)",
    "cached across calls (by content",
    "L2 cache",
    "through gc",
    "through frames",
    "through inspect",
    "zeroing or editing inputs",
    "hard-coded shapes",
    "torch compute",
    "NumPy compute inside an NKI kernel",
    "np.linalg",
    "uninitialised memory",
    "recycled buffer",
    'typing.sys.modules["os"]',
    "__subclasses__",
    "np.rec.fromfile",
    "np.core.records.fromfile",
    "np.memmap",
    "np.load of another path",
    "os.fork / setsid",
    "socket connections",
    "writing files",
    "reading /proc/<ppid>/environ",
    # issue 23: attributes and entries read by name without an attribute in the source
    "by class pattern",
    "by positional class pattern",
    "by format field",
    "a format template the check cannot read",
    "functools.update_wrapper",
    "by mapping pattern",
    # issue 25: the doors the idioms of real Triton kernels could open
    "inspect (getmembers",
    "through inspect.signature",
    "(eval_str)",
    "(Signature.from_callable)",
    "getattr with a computed name",
    "getattr on a tensor",
    'getattr(triton, "runtime")',
    "held as a value through getattr",
    "get_capture_scope",
    "main block (rebinding __name__)",
    "main block (its else: branch)",
    "enum.bltns",
    "dataclasses.asdict",
    "enum.global_enum",
    "autotuner hook",
    "PyTorch fallback instead of Triton",
    "launch of no program",
    "Triton while checked, PyTorch once timed",
    # issue 25, part 2: torch compute decided where it runs
    "a PyTorch fallback that does run",
    "a PyTorch fallback for CPU tensors",
    "whose refusal run() catches",
    "the torch guard in the runs that close the timing",
    "NumPy compute on the host",
    "Tensor.apply_",
    "read as text",
    "by the content of an integer input",
    "by an integer input, only once the checks are over",
    "a floating-point input read as integers",
)
"""The issues' exploit families (14, then 23, then 25): every one has at least one kernel."""
PWNED = Path("/tmp/pwned")


def _param(entry: Entry) -> object:
    """Triton kernels that get past the static check start three children of torch and
    triton each (several seconds): slow."""
    slow = entry.dialect == "triton" and entry.expect != "rejected"
    return pytest.param(entry, id=entry.name, marks=[pytest.mark.slow] if slow else [])


def test_the_corpus_covers_every_family_and_dialect() -> None:
    assert len(ENTRIES) >= 30
    assert {e.dialect for e in ENTRIES} == {"nki", "nki-legacy", "triton"}
    families = " | ".join(e.fields["family"] for e in ENTRIES)
    missing = [f for f in FAMILIES if f not in families]
    assert not missing, missing
    for entry in ENTRIES:
        assert entry.expect in (*ERROR_KINDS, "none"), entry.name
        assert entry.fields["message"] or entry.expect == "none", entry.name
        if entry.gpu:
            assert entry.dialect == "triton", entry.name
        source = entry.path.read_text()
        if entry.dialect == "nki":  # current NKI: `import nki`, never the legacy package
            assert "import nki" in source, entry.name
            assert "neuronxcc" not in source, entry.name
        if entry.dialect == "nki-legacy":
            assert "import neuronxcc.nki" in source, entry.name


@pytest.mark.parametrize("entry", [_param(e) for e in ENTRIES])
def test_each_exploit_fails_with_its_kind(
    entry: Entry, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    backend = (
        request.getfixturevalue("triton_backend") if entry.dialect == "triton" else NkisimBackend()
    )
    if isinstance(backend, TritonBackend) and backend.host.gpu is not None and entry.gpu:
        pytest.skip("on a GPU host this entry runs in test_triton_gpu.py")
    result = entry.run(backend)
    kind = None if entry.expect == "none" else entry.expect
    # correct, and then not timed (no GPU here), is a measurement failure of a correct kernel
    correct = kind in (None, "measurement")
    assert (result.error_kind, result.correct) == (kind, correct), result.message
    assert entry.fields["message"] in result.message, result.message
    assert not PWNED.exists(), "a kernel ran a command outside its sandbox"
