"""Running and measuring one kernel: task format, suites, correctness and timing policy,
roofline, sandboxed runner, and the backends (nkisim, neuron, triton). Stands alone: it
imports nothing from the rest of accelopt."""
