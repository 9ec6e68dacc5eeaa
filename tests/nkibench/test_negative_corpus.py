"""The negative corpus: every planted-bug kernel under tests/data/kernels fails with the error kind
(and message) its header names, through the real sandboxed harness."""

from __future__ import annotations

from pathlib import Path

import pytest

from nkibench.backends.nkisim.backend import NkisimBackend
from nkibench.errors import CHILD_ERROR_KINDS
from nkibench.harness import check_kernel
from nkibench.sandbox.process import Limits
from nkibench.suites import NKI_LEGACY_SUITE
from nkibench.task.spec import load_task
from tests.support import DATA

CORPUS = DATA / "kernels"
SUITE = NKI_LEGACY_SUITE
PWNED = Path("/tmp/accelopt-negative-corpus-pwned.npy")


def header(path: Path) -> dict[str, str]:
    fields = {}
    for line in path.read_text().splitlines():
        if not line.startswith("# ") or ":" not in line:
            break
        key, _, value = line[2:].partition(":")
        fields[key.strip()] = value.strip()
    return fields


KERNELS = sorted(CORPUS.glob("*.py"))


def test_the_corpus_is_large_and_covers_every_kind_a_kernel_can_cause() -> None:
    kinds = {header(path)["expect"] for path in KERNELS}
    assert len(KERNELS) >= 25
    # "task" is the task folder's fault; "measurement" needs a profiler (test_neuron_backend);
    # "cheat" is a Triton kernel's (test_triton_backend)
    assert kinds == set(CHILD_ERROR_KINDS) - {"task", "measurement", "cheat"}


@pytest.mark.parametrize("path", KERNELS, ids=[p.stem for p in KERNELS])
def test_planted_bug_is_caught_with_the_right_kind(path: Path, tmp_path: Path) -> None:
    fields = header(path)
    task = load_task(SUITE / fields["task"])
    limits = Limits(
        timeout_s=float(fields.get("timeout_s", 60)),
        memory_mb=int(fields.get("memory_mb", 4096)),
        file_size_mb=int(fields.get("file_size_mb", 512)),
    )
    result = check_kernel(
        task,
        backend=NkisimBackend(),
        kernel_source=path.read_text(),
        seeds=(0,),
        limits=limits,
        workdir=tmp_path,
    )
    assert (result.error_kind, result.correct) == (fields["expect"], False), result.message
    assert fields["message"] in result.message
    assert result.compiled is (fields["expect"] == "incorrect")
    assert not PWNED.exists(), "a kernel wrote outside its sandbox"
