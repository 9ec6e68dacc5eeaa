"""What every backend's kernel phase shares, inside the sandboxed child: load the kernel with
restricted builtins, read each seed's inputs, save its outputs, and report what went wrong in
the kernel's own terms (error kind, message, kernel line)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import numpy as np

from nkibench.errors import KernelError
from nkibench.sandbox.arrays import restore, save_array
from nkibench.sandbox.loader import kernel_line, load_kernel
from nkibench.sandbox.resolved_check import check_resolved
from nkibench.sandbox.resources import split_memory
from nkibench.sandbox.static_check import check_source, violation_kind

__all__ = ["error_result", "load_phase_kernel", "run_error", "save_outputs", "seed_arguments"]


def error_result(kind: str, message: str, line: int = 0, seed: int | None = None) -> dict[str, Any]:
    return {"ok": False, "kind": kind, "message": message, "line": line, "seed": seed}


def _located(message: str, display: str, line: int) -> str:
    return f"{display} line {line}: {message}" if line else message


def load_phase_kernel(request: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
    """The kernel function of a kernel phase's request, or the error result that says why
    it does not load. The shadow NKI modules must be installed first if nkisim runs it: the
    static check runs again here, then its attribute chains are followed on the modules the
    kernel will really see (check_resolved), before any of its code runs."""
    display = request["display_name"]
    filename = request["kernel_file"]
    dialect = request["dialect"]
    torch_compute = bool(request.get("allow_torch_compute", False))
    source = request["kernel_source"]
    violations = check_source(source, display, dialect, torch_compute=torch_compute)
    if not violations:
        violations = check_resolved(source, dialect)
    if violations:
        message = "; ".join(v.render(display) for v in violations[:5])
        return None, error_result(violation_kind(violations), message, violations[0].line)
    try:
        kernel = load_kernel(request["kernel_source"], filename, request["function"], dialect)
        return kernel, None
    except KernelError as e:
        line = kernel_line(e, filename)
        return None, error_result(e.kind, _located(e.message, display, line), line)
    except SyntaxError as e:
        return None, error_result(
            "compile", f"{display} line {e.lineno}: SyntaxError: {e.msg}", e.lineno or 0
        )
    except MemoryError:
        raise
    except Exception as e:
        line = kernel_line(e, filename)
        full = out_of_space(e, request)
        if full is not None:
            return None, error_result("resource", _located(full, display, line), line)
        return None, error_result(
            "compile", _located(f"{type(e).__name__}: {e}", display, line), line
        )


def run_error(
    error: BaseException, request: dict[str, Any], seed: int, kind: str = "runtime"
) -> dict[str, Any]:
    """The result of a kernel that raised while running on `seed`."""
    display, filename = request["display_name"], request["kernel_file"]
    line = kernel_line(error, filename)
    if isinstance(error, KernelError):
        return error_result(error.kind, _located(error.message, display, line), line, seed)
    if isinstance(error, RecursionError):
        return error_result("runtime", f"RecursionError: {error}", line, seed)
    if isinstance(error, OSError) and error.errno == errno.EFBIG:
        # Python ignores SIGXFSZ: the write fails instead
        return error_result(
            "resource", "the kernel wrote more than the file size limit", line, seed
        )
    full = out_of_space(error, request)
    if full is not None:
        return error_result("resource", _located(full, display, line), line, seed)
    return error_result(
        kind, _located(f"{type(error).__name__}: {error}", display, line), line, seed
    )


FULL_BELOW_BYTES = 1024 * 1024
"""A tmpfs with less free than this is the one a write found full."""


def out_of_space(error: BaseException, request: dict[str, Any]) -> str | None:
    """What a write that found no space (ENOSPC) ran into, in words: the sandbox's /tmp or
    /dev/shm, which are memory and as large as the job's share of memory_mb allows, or the
    disk of the work folder; None for any other error."""
    if not (isinstance(error, OSError) and error.errno == errno.ENOSPC):
        return None
    limits = request.get("limits", {})
    memory = limits.get("memory_mb")
    split = split_memory(memory)
    for folder, size in (("/tmp", split.tmp_mb), ("/dev/shm", split.shm_mb)):
        try:
            found = os.statvfs(folder)
        except OSError:
            continue
        if found.f_bavail * found.f_frsize < FULL_BELOW_BYTES:
            share = f"a share of memory_mb = {memory}" if memory else "a fixed share"
            return (
                f"{folder} is full: the sandbox's {folder} is memory, limited to {size} MB "
                f"({share}); write large files to the working folder instead"
            )
    return f"no space left on the disk of the work folder ({error})"


def save_outputs(request: dict[str, Any], seed: int, outputs: list[Any]) -> None:
    folder = Path(request["out_dir"]) / f"seed_{seed}"
    folder.mkdir()
    for i, array in enumerate(outputs):
        save_array(folder / f"output_{i}.npy", np.asarray(array))


def seed_arguments(request: dict[str, Any], seed: int) -> list[Any]:
    manifest = request["manifest"][str(seed)]
    folder = Path(request["data_dir"]) / f"seed_{seed}"
    return [restore(spec, folder) for spec in manifest["inputs"]]
