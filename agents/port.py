"""Porting a legacy-NKI task to current NKI, verified by the interpreter.

Since Neuron SDK 2.30 a `neuronxcc.nki` kernel no longer compiles, and Trainium3 runs only
current NKI, so a team's legacy kernels must move. The executor ports the kernel (its plan is
the port itself, written in the current dialect's prompts); the port is checked on every seed
of the task against the same reference; a failing port goes to the fixer, with the error, up to
`fixes` times; the verified kernel is profiled on the target so that its estimate is known.
Every step is an event on the port's stream (`port:<id>`), and the LLM calls are keyed by the
port, so a port that is started again replays what it asked instead of asking twice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from agents.calls import stoppable
from agents.llm import Completion, LLMClient
from agents.prompts import Prompts
from agents.roles import executor_messages, extract_code, fixer_messages
from events.catalog import PortAttempted, PortFinished, PortStarted
from nkibench.backend import Backend
from nkibench.dialects import NKI, NKI_LEGACY, check_target
from nkibench.errors import TaskError
from nkibench.harness import check_kernel, profile_kernel
from nkibench.result import KernelResult
from nkibench.task.files import KERNEL_FILE
from nkibench.task.spec import TaskSpec
from store.recorder import Recorder

__all__ = ["PORT_PLAN", "PortOutcome", "Porter", "port_id", "ported_task"]

PORT_PLAN = """\
Port this kernel from legacy NKI (`neuronxcc.nki`) to current NKI (the `nki` package):
keep its algorithm, its tiling and its loop structure, and change only the language.
- Import `nki`, `nki.language as nl` and `nki.isa as nisa`; nothing from `neuronxcc`.
- Every `nisa.*` call takes its destination first (`dst=`), a tile you allocate with
  `nl.ndarray(shape, dtype, buffer=nl.sbuf)` (or `nl.psum` for matmul and TensorE
  transpose results); no `nisa.*` call takes `dtype=` or `mask=`.
- `nisa.nc_matmul(dst=psum_tile, stationary=..., moving=..., accumulate=...)` writes
  `stationary.T @ moving` into PSUM: the first matmul into a PSUM tile overwrites it, later
  ones accumulate (the default, accumulate=None); copy PSUM to SBUF with `nisa.tensor_copy`.
- Move data with `nisa.dma_copy(dst=..., src=...)` (or `nl.load` / `nl.store`); DMA cannot
  read PSUM.
- There is no `nl.arange`, `nl.mgrid`, `nl.par_dim` or `mask=`: index with slices and
  `nl.ds(start, size)`, and bound ragged tiles with `min(...)` instead of masks.
- Allocate the outputs with `nl.ndarray(shape, dtype, buffer=nl.shared_hbm)` and return them.
"""
CURRENT_HEADER = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n"
"""The imports a ported kernel gets when its code block has none (never the legacy ones)."""
FIXES = 3


def port_id(task: TaskSpec, to_dialect: str, target: str) -> str:
    return f"{task.name}@{task.content_hash[:12]}->{to_dialect}@{target}"


def ported_task(task: TaskSpec, source: str) -> TaskSpec:
    """The task as its port runs it: the same reference, seeds and shapes, in current NKI."""
    return task.with_kernel(source, NKI.name)


@dataclass(frozen=True)
class PortOutcome:
    port_id: str
    ported: bool
    attempts: int
    source: str | None
    """The verified current-NKI kernel (None: no attempt passed)."""
    result: KernelResult | None
    """The verified kernel's profile on the target, or the last failing check."""
    message: str


class Porter:
    """Ports tasks on one backend and target, asking `llm`, recording with `recorder`."""

    def __init__(
        self,
        *,
        llm: LLMClient,
        recorder: Recorder,
        backend: Backend,
        target: str,
        shapes: str | None = None,
        fixes: int = FIXES,
        say: Callable[[str], None] = lambda _line: None,
        check_stop: Callable[[], None] = lambda: None,
    ) -> None:
        """`check_stop` raises to leave the port (a daemon draining); the next run resumes
        it from its events."""
        self.llm = llm
        self.recorder = recorder
        self.backend = backend
        self.target = target
        self.shapes = shapes
        """The shape set verified (None: each task's smallest)."""
        self.fixes = fixes
        self.say = say
        self.check_stop = check_stop
        self.prompts = Prompts(NKI.name)

    def run(self, task: TaskSpec, reason: str, out_dir: str | None = None) -> PortOutcome:
        if task.dialect != NKI_LEGACY.name:
            raise TaskError(
                f"{task.path / KERNEL_FILE}: a {task.dialect} kernel; only legacy NKI "
                f"({NKI_LEGACY.name}) kernels are ported to {NKI.name}"
            )
        check_target(NKI.name, self.target, str(task.path))
        ident = port_id(task, NKI.name, self.target)
        stream = f"port:{ident}"
        finished = next(self.recorder.of_type(stream, PortFinished), None)
        if finished is not None and finished.outcome == "ported":
            source = self.recorder.text(finished.source_blob) if finished.source_blob else None
            return PortOutcome(ident, True, finished.attempts, source, None, "ported before")
        shapes = self.shapes or task.smallest_shapes
        self.recorder.record(
            stream,
            PortStarted(
                port_id=ident,
                task=task.name,
                task_source_hash=task.content_hash,
                from_dialect=task.dialect,
                to_dialect=NKI.name,
                backend=self.backend.name,
                target=self.target,
                shapes=shapes,
                reason=reason,
            ),
            key=f"{ident}|started",
        )
        self.say(f"porting {task.name} from legacy NKI to current NKI for {self.target} ({reason})")
        source, result, attempts = self._attempts(task, ident, stream, shapes)
        profiled = None
        if source is not None:
            profiled = result = profile_kernel(
                ported_task(task, source), backend=self.backend, shapes=shapes, target=self.target
            )
        self.recorder.record(
            stream,
            PortFinished(
                port_id=ident,
                task=task.name,
                outcome="ported" if source is not None else "failed",
                attempts=attempts,
                kernel_hash=_sha(source) if source is not None else None,
                source_blob=self.recorder.put(source) if source is not None else None,
                target=self.target,
                latency_ms=profiled.latency_ms if profiled is not None else None,
                latency_kind=profiled.latency_kind if profiled is not None else None,
                out_dir=out_dir if source is not None else None,
            ),
            key=f"{ident}|finished",
        )
        message = (
            f"ported after {attempts} attempt(s)"
            if source is not None
            else f"not ported: {attempts} attempt(s) failed"
            + (f"; the last: {result.error_kind}: {result.message}" if result else "")
        )
        self.say(f"{task.name}: {message}")
        return PortOutcome(ident, source is not None, attempts, source, result, message)

    def _attempts(
        self, task: TaskSpec, ident: str, stream: str, shapes: str
    ) -> tuple[str | None, KernelResult | None, int]:
        """Executor, then fixer repairs: the first verified source, the last result, and how
        many attempts were made. An answer without code is asked for again (the port, or the
        repair of the same failing port)."""
        failing: tuple[str, KernelResult] | None = None
        last: KernelResult | None = None
        for attempt in range(1, self.fixes + 2):
            role = "executor" if failing is None else "fixer"
            call_id = f"{ident}/{role}/{attempt}"
            source, result, problem = self._attempt(task, call_id, failing, shapes)
            self._attempted(
                stream=stream,
                ident=ident,
                attempt=attempt,
                role=role,
                call_id=call_id,
                source=source,
                result=result,
                problem=problem,
            )
            if source is None or result is None:
                continue
            last = result
            if result.correct:
                return source, result, attempt
            failing = (source, result)
        return None, last, self.fixes + 1

    def _attempt(
        self,
        task: TaskSpec,
        call_id: str,
        failing: tuple[str, KernelResult] | None,
        shapes: str,
    ) -> tuple[str | None, KernelResult | None, str | None]:
        """One answer and its verdict on every seed: (source, result, None), or (None, None,
        why there is no code)."""

        def answer() -> str:
            completion = self._ask(task, call_id, failing)
            return extract_code(
                completion.text, completion.finish_reason, CURRENT_HEADER, NKI.entry_points
            )

        # on a step thread, as the search's calls: a port asked to stop leaves at once. Asked
        # from the search's own thread, a port call that hung held a draining daemon for the
        # call's whole time limit, past DRAIN_LIMIT_S (the call is asked again, by its id, at
        # the next start).
        (source,) = stoppable([answer], check_stop=self.check_stop, width=1)
        if isinstance(source, Exception):  # an LLMError or NoCode: no code this attempt
            return None, None, str(source)
        result = check_kernel(
            ported_task(task, source),
            backend=self.backend,
            kernel_source=source,
            shapes=shapes,
            target=self.target,
        )
        return source, result, None

    def _ask(
        self, task: TaskSpec, call_id: str, failing: tuple[str, KernelResult] | None
    ) -> Completion:
        if failing is None:
            messages = executor_messages(
                self.prompts,
                kernel=task.kernel_source,
                reference=task.reference_source,
                plan=PORT_PLAN,
            )
            return self.llm.complete(
                call_id=call_id, role="executor", messages=messages, task=task.name
            )
        source, result = failing
        messages = fixer_messages(
            self.prompts,
            kernel=source,
            reference=task.reference_source,
            error_kind=result.error_kind or "failed",
            error=result.message,
        )
        return self.llm.complete(call_id=call_id, role="fixer", messages=messages, task=task.name)

    def _attempted(
        self,
        *,
        stream: str,
        ident: str,
        attempt: int,
        role: str,
        call_id: str,
        source: str | None,
        result: KernelResult | None,
        problem: str | None,
    ) -> None:
        self.recorder.record(
            stream,
            PortAttempted.model_validate(
                {
                    "port_id": ident,
                    "attempt": attempt,
                    "role": role,
                    "llm_call_id": call_id,
                    "kernel_hash": _sha(source) if source is not None else None,
                    "source_blob": self.recorder.put(source) if source is not None else None,
                    "correct": bool(result and result.correct),
                    "error_kind": result.error_kind if result else "no_code",
                    "error_message": (result.message or None) if result else problem,
                    "max_rel_l2": result.max_rel_l2 if result else None,
                    "seeds": list(result.seeds) if result else [],
                }
            ),
            key=f"{ident}|attempt|{attempt}",
        )


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
