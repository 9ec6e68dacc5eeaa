"""The triton backend's child phases by name (nkibench.triton.child implements them)."""

__all__ = ["TRITON_PHASES"]

TRITON_PHASES = (
    "triton_probe",
    "triton_reference",
    "triton_kernel",
    "triton_measure",
    "triton_ceilings",
)
