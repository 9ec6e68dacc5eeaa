"""Reading a candidate's source without parsing it in this process: the parent side of the
parse child (nkibench.sandbox.source_facts).

A candidate (an LLM's answer, an outside agent's submission, a promoted kernel read back from
the log) reaches the daemon as text. A source over kernel.py's size limit (nkibench.task.files)
is refused before anything parses it; any other is parsed in a short-lived sandboxed child
under a memory and a time limit, which hands back the few facts asked for (the static check's
violations, the module's constants, the dialect its imports name). Its answer is data: read up
to ANSWER_LIMIT, schema-checked, and a malformed one, like a crash, an out-of-memory kill or a
timeout of the child, is a typed failure of the candidate (PhaseFailure "rejected"), never an
exception of the daemon. The issue that made this (27): 5 MB and 12 MB kernels parsed in the
daemon took it to 1.3 GB and 2.6 GB and past its memory ceiling, twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nkibench.dialects import DIALECTS
from nkibench.errors import ErrorKind, PhaseFailure, TaskError
from nkibench.sandbox.folders import SessionFolders
from nkibench.sandbox.isolation import Isolation
from nkibench.sandbox.process import Limits, run_child
from nkibench.sandbox.results import MalformedResult, decode
from nkibench.sandbox.source_facts import SHOWN_VIOLATIONS
from nkibench.sandbox.static_check import Violation
from nkibench.task.files import FILE_LIMITS, KERNEL_FILE, describe_size

__all__ = [
    "PARSE_LIMITS",
    "PARSE_PREFIX",
    "SOURCE_LIMIT",
    "Constant",
    "assigned_constants",
    "size_refusal",
    "static_violations",
    "written_dialect",
]

SOURCE_LIMIT = FILE_LIMITS[KERNEL_FILE]
"""A candidate is a kernel.py: it is held to that file's limit, as the user's own is."""
PARSE_LIMITS = Limits(timeout_s=20.0, memory_mb=1024, cpu_s=20, file_size_mb=1, output_mb=1)
"""A source at SOURCE_LIMIT takes about 120 MB and well under a second to parse and check;
the interpreter and the policy modules take about 60 MB more."""
ANSWER_LIMIT = 256 * 1024
"""Bytes of the child's answer read: a few violations, constants or a dialect's name."""
PARSE_PREFIX = "nkibench-parse-"
"""Its folders' prefix, under the harness's own: a SIGKILL of the daemon during a parse
leaves one, which the next start's sweep (daemon.coordinator.startup) must remove like a
job's."""
CHILD = "nkibench.sandbox.child"
ENTRY = "nkibench.sandbox.source_facts:answer"
FAILURE_KINDS: tuple[ErrorKind, ...] = ("rejected", "compile")
"""What the parse child may say of a source: the parser gave up on it, or it is no Python."""


@dataclass(frozen=True)
class Constant:
    """A module-level `NAME = constant` of a source: its lines, and its value where JSON
    carries it (`comparable`; another constant equals no tunable's choice)."""

    line: int
    end_line: int
    value: Any = None
    comparable: bool = False


def size_refusal(source: str) -> PhaseFailure | None:
    """The rejection of a source over SOURCE_LIMIT bytes (None: within it), decided on its
    length alone."""
    size = len(source)  # a character is at least a byte: no need to encode a huge one
    if size <= SOURCE_LIMIT:
        size = len(source.encode("utf-8", "surrogatepass"))
    if size <= SOURCE_LIMIT:
        return None
    return PhaseFailure(
        "rejected",
        f"{KERNEL_FILE}: {describe_size(size)} ({size} bytes), over the "
        f"{describe_size(SOURCE_LIMIT)} limit of {KERNEL_FILE}: refused without being parsed",
    )


def _ask(
    fact: str, source: str, isolation: Isolation, workdir: Path | None, **request: Any
) -> dict[str, Any]:
    """The child's answer to `fact` about `source`: a dict with `ok` true, or PhaseFailure."""
    refusal = size_refusal(source)
    if refusal is not None:
        raise refusal
    with SessionFolders(workdir, isolation.child_uid, prefix=PARSE_PREFIX) as folders:
        outcome = run_child(
            CHILD,
            {"entry": ENTRY, "fact": fact, "source": source, **request},
            workdir=folders.fresh("parse"),
            limits=PARSE_LIMITS,
            isolation=isolation,
        )
    if outcome.timed_out:
        raise PhaseFailure(
            "rejected",
            f"parsing the source ran past the {PARSE_LIMITS.timeout_s:g} s limit and was killed",
        )
    if outcome.flooded or (outcome.returncode and not outcome.result):
        death = outcome.describe_signal() or f"exit status {outcome.returncode}"
        raise PhaseFailure(
            "rejected",
            f"the child parsing the source died ({death}; memory limit "
            f"{PARSE_LIMITS.memory_mb} MiB, CPU limit {PARSE_LIMITS.cpu_s} s)",
        )
    raw = outcome.result
    try:
        answer = decode(None if raw is None or len(raw) > ANSWER_LIMIT else raw, ANSWER_LIMIT)
    except MalformedResult as e:
        raise malformed(str(e)) from None
    if not answer["ok"]:
        kind = answer.get("kind")
        if kind not in FAILURE_KINDS:
            raise malformed(f"a failure of kind {str(kind)[:50]!r}")
        raise PhaseFailure(kind, answer["message"], answer.get("line"))
    return answer


def malformed(problem: str) -> PhaseFailure:
    return PhaseFailure("rejected", f"the child parsing the source handed back {problem}")


def _line(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def static_violations(
    source: str,
    dialect: str,
    *,
    torch_compute: bool,
    isolation: Isolation,
    workdir: Path | None = None,
) -> list[Violation]:
    """The first SHOWN_VIOLATIONS violations of nkibench.sandbox.static_check.check_source in
    `source` (a kernel.py), found in the parse child."""
    answer = _ask(
        "violations",
        source,
        isolation,
        workdir,
        filename=KERNEL_FILE,
        dialect=dialect,
        torch_compute=torch_compute,
    )
    found = answer.get("violations")
    if not isinstance(found, list) or len(found) > SHOWN_VIOLATIONS:
        raise malformed("no list of violations")
    violations = []
    for entry in found:
        if not (
            isinstance(entry, list)
            and len(entry) == 2
            and _line(entry[0])
            and isinstance(entry[1], str)
        ):
            raise malformed(f"a violation that is not [line, problem]: {str(entry)[:100]}")
        violations.append(Violation(entry[0], entry[1]))
    return violations


def assigned_constants(
    source: str, names: Sequence[str], *, isolation: Isolation
) -> dict[str, Constant]:
    """The module-level `NAME = constant` assignments of `names` in `source`, found in the
    parse child."""
    answer = _ask("constants", source, isolation, None, names=list(names))
    found = answer.get("constants")
    if not isinstance(found, dict) or not set(found) <= set(names):
        raise malformed("constants that were not asked for")
    constants = {}
    for name, entry in found.items():
        if not (
            isinstance(entry, dict)
            and _line(entry.get("line"))
            and _line(entry.get("end_line"))
            and set(entry) <= {"line", "end_line", "value"}
        ):
            raise malformed(f"a constant that is not {{line, end_line[, value]}}: {name}")
        value = entry.get("value")
        if value is not None and not isinstance(value, int | float | str):
            raise malformed(f"a constant whose value is no scalar: {name}")
        constants[name] = Constant(entry["line"], entry["end_line"], value, "value" in entry)
    return constants


def written_dialect(source: str, where: str, *, isolation: Isolation) -> str | None:
    """The dialect `source`'s imports name (nkibench.dialects.detect_dialect), found in the
    parse child; TaskError where they name two."""
    answer = _ask("dialect", source, isolation, None, where=where)
    if isinstance(answer.get("dialect_error"), str):
        raise TaskError(answer["dialect_error"])
    dialect = answer.get("dialect")
    if dialect is not None and dialect not in DIALECTS:
        raise malformed(f"an unknown dialect: {str(dialect)[:100]}")
    return dialect
