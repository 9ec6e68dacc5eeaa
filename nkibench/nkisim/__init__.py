"""nkisim: an interpreter of NKI kernels on the CPU, with NumPy, in both dialects: legacy NKI
(`neuronxcc.nki`) on this package's machine, current NKI (the `nki` package) through the front in
`current/` on the same machine.

A functional model of the documented ISA subset, stricter than AWS's simulator (capacity,
uninitialised reads, out-of-bounds accesses, loop-order dependence), and not a bit-accurate
emulator: ScalarE's hardware approximations of transcendental functions and DMA casting
details are not modelled. It records every instruction for the cost model.
"""
