"""The adversarial corpus (tests/data/adversarial): kernels that try to game the check, the
timer or the sandbox, each with a header naming what must happen to it. Shared by the CPU
test (tests/nkibench/test_adversarial_corpus.py) and the GPU one (test_triton_gpu.py).

Header fields (comment lines at the top of each file, `# key: value`):
    dialect      nki (current: `import nki`), nki-legacy (`neuronxcc.nki`) or triton
    family       the exploit family (the issue's list)
    task         nki/<name> and gpu/<name>: the suites'; local/<name>: tests/data/adversarial/tasks
    shapes       the shape set (default small)
    seeds        NKI tasks: the seeds, comma-separated (default 0)
    run          check (default) or profile (timing involved)
    expect       the error kind here (none: correct, no error)
    message      a fragment of the message
    gpu_expect, gpu_message, gpu_shapes   the same on a GPU (test_triton_gpu.py runs these)
    gpu_not_faster_than                   honest: on a GPU its latency is no better than its
                                          honest self's (the file without the lines that end
                                          in `# trick`)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nkibench.backend import Backend
from nkibench.harness import check_kernel, profile_kernel
from nkibench.result import KernelResult
from nkibench.sandbox.process import Limits
from nkibench.suites import GPU_SUITE, NKI_LEGACY_SUITE, NKI_SUITE
from nkibench.task.spec import TaskSpec, load_task
from tests.support import DATA

CORPUS = DATA / "adversarial"
TASK_ROOTS = {
    "nki": NKI_SUITE,
    "nki_legacy": NKI_LEGACY_SUITE,
    "gpu": GPU_SUITE,
    "local": CORPUS / "tasks",
}


@dataclass(frozen=True)
class Entry:
    path: Path
    fields: dict[str, str]

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def dialect(self) -> str:
        return self.fields["dialect"]

    @property
    def expect(self) -> str:
        return self.fields["expect"]

    @property
    def gpu(self) -> bool:
        return "gpu_expect" in self.fields

    def task(self) -> TaskSpec:
        root, _, name = self.fields["task"].partition("/")
        return load_task(TASK_ROOTS[root] / name)

    @property
    def honest_source(self) -> str:
        """The kernel without its trick: the lines that end in `# trick` dropped."""
        lines = self.path.read_text().splitlines(keepends=True)
        return "".join(line for line in lines if not line.rstrip().endswith("# trick"))

    def run(
        self, backend: Backend, *, gpu: bool = False, kernel_source: str | None = None
    ) -> KernelResult:
        """Through the real sandboxed harness: check_kernel, or profile_kernel where timing
        is involved (always on a GPU, where the timer is what is gamed); `kernel_source` in
        place of the file's (its honest self, say)."""
        task = self.task()
        shapes = self.fields.get("shapes", "small")
        if gpu:
            shapes = self.fields.get("gpu_shapes", shapes)
        seeds = None
        if task.dialect == "nki":
            seeds = tuple(int(s) for s in self.fields.get("seeds", "0").split(","))
        limits = Limits(timeout_s=120, memory_mb=4096) if task.dialect == "nki" else None
        evaluate = profile_kernel if gpu or self.fields.get("run") == "profile" else check_kernel
        return evaluate(
            task,
            backend=backend,
            kernel_source=kernel_source or self.path.read_text(),
            shapes=shapes,
            seeds=seeds,
            limits=limits,
        )


def header(path: Path) -> dict[str, str]:
    fields = {}
    for line in path.read_text().splitlines():
        if not line.startswith("# ") or ":" not in line:
            break
        key, _, value = line[2:].partition(":")
        if " " in key.strip():
            break  # the free-text comment after the header
        fields[key.strip()] = value.strip()
    return fields


ENTRIES = [Entry(p, header(p)) for p in sorted(CORPUS.glob("*.py"))]
