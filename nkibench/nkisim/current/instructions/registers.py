"""Register instructions: register_alloc, register_move, register_load, register_store."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nkibench.nkisim.current import operands as _o
from nkibench.nkisim.current.registers import VirtualRegister, runtime_int
from nkibench.nkisim.current.state import state as _state
from nkibench.nkisim.errors import ConstraintViolation as _Violation


def register_alloc(x: Any = None) -> VirtualRegister:
    register = VirtualRegister()
    if x is not None:
        register.set(runtime_int(x, "nisa.register_alloc"))
    return register


def _register(value: Any, api: str) -> VirtualRegister:
    if not isinstance(value, VirtualRegister):
        raise _Violation(f"{api}: expected a VirtualRegister (nisa.register_alloc())")
    return value


def register_move(dst: Any, src: Any) -> None:
    _register(dst, "nisa.register_move dst").set(runtime_int(src, "nisa.register_move src"))


def register_load(dst: Any, src: Any) -> None:
    api = "nisa.register_load"
    register = _register(dst, f"{api} dst")
    tile = _o.tensor(src, api, "src")
    _o.check_buffer(tile, api, "src", _o.DMA_BUFFERS)
    register.set(runtime_int(tile, f"{api} src"))


def register_store(dst: Any, src: Any) -> None:
    api = "nisa.register_store"
    machine, _ = _state()
    value = _register(src, f"{api} src").value
    target = _o.tensor(dst, api, "dst")
    _o.check_buffer(target, api, "dst", _o.DMA_BUFFERS)
    if math.prod(target.shape) != 1:
        raise _Violation(f"{api}: dst holds one element, `{target.alloc.name}` {target.shape}")
    out, picked = machine._target(target, api, None)
    engine_name = "gpsimd" if target.alloc.on_chip else "dma"
    machine.record("register_store", engine_name, [], (out, target.alloc.block_of(out.box)))
    machine._store_values(target, np.full(target.shape, value), None, picked)
