"""nkisim's front for current NKI (the `nki` package, 0.3-0.7): `nki.jit`, `nki.language` and
`nki.isa` with an explicit destination per instruction, run on legacy nkisim's machine.

Modules: `frontend` (the shadow `nki` package), `language` (nl), `isa` (nisa), `operands`
(how instructions take and write operands), `views` (tensor views and `.ap()`), `registers`
(VirtualRegister), `state` (per-run state: PSUM accumulation flags, reduce registers),
`limits` (per-generation limits), `storage` (offsets and strides of views), `instructions/`
(the nisa calls, by engine family) and `unsupported` (the APIs nkisim refuses, named).
"""

from nkibench.nkisim.current.unsupported import UNSUPPORTED

__all__ = ["UNSUPPORTED"]
