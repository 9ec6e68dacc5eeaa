"""`accelopt bench` for kernels: nkisim's speed and the NKI suite's estimated latencies (nki),
the GPU suite measured (gpu), and AccelOpt's published trn1 latencies to compare with."""

__all__ = ["UnknownSuiteTask"]


class UnknownSuiteTask(ValueError):
    """A benchmark asked for a suite task by a name the suite does not hold."""
