"""Running small kernels in the test process (the shadow NKI modules are installed for the
test session only; production installs them in the sandboxed child alone)."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from nkibench.nkisim.current.frontend import (
    install_shadow_modules as install_current_shadow_modules,
)
from nkibench.nkisim.frontend import install_shadow_modules
from nkibench.nkisim.machine import Config
from nkibench.nkisim.runtime import KernelRun, execute
from nkibench.sandbox.loader import load_kernel

PRELUDE = """\
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
"""
FILENAME = "<test kernel>"
SHADOW = ("neuronxcc", "nki")


@pytest.fixture(scope="session")
def shadow_modules() -> Iterator[None]:
    before = set(sys.modules)
    install_shadow_modules()  # legacy NKI's names (neuronxcc.nki.*)
    install_current_shadow_modules()  # current NKI's (nki.*)
    yield
    for name in set(sys.modules) - before:
        if name.split(".")[0] in SHADOW:
            del sys.modules[name]


def run(body: str, *args: Any, config: Config | None = None, function: str = "kernel") -> KernelRun:
    source = PRELUDE + textwrap.dedent(body)
    kernel = load_kernel(source, FILENAME, function, "nki-legacy")
    return execute(kernel, list(args), config or Config(kernel_file=FILENAME))


def line_of(body: str, needle: str) -> int:
    """The line number of `needle` in a kernel written with `run`."""
    lines = (PRELUDE + textwrap.dedent(body)).splitlines()
    return next(i for i, text in enumerate(lines, start=1) if needle in text)
