"""A child's whole environment, built from nothing (nkibench.sandbox.process: a cold child's;
nkibench.sandbox.warm: a zygote's and each warm child's)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["child_environment"]


def child_environment(
    workdir: Path, threads: int, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The whole environment of a child: built from nothing, never copied from the parent.
    `extra` is what a backend needs (the Neuron tools' PATH, the NeuronCore to use); the
    caller vouches that it holds no secret."""
    thread_count = str(max(1, threads))
    return {
        "PATH": os.defpath,
        "HOME": str(workdir),
        # Triton reads HOME once, at import: a child forked by a warm process
        # (nkibench.sandbox.warm) would compile into its zygote's folder, which it cannot write
        "TRITON_HOME": str(workdir),
        "TMPDIR": str(workdir),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        # who the child is, for getpass and the like: the sandbox's user has no entry in the
        # passwd file of every image (the GPU machine's lacks nobody)
        "USER": "accelopt-sandbox",
        "LOGNAME": "accelopt-sandbox",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
        "OMP_NUM_THREADS": thread_count,
        "OPENBLAS_NUM_THREADS": thread_count,
        "MKL_NUM_THREADS": thread_count,
        **(extra or {}),
    }
