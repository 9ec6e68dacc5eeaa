"""Running and measuring one kernel: the task format (task), the kernel languages (dialects),
correctness and timing policy and the roofline (policy), the sandbox (sandbox), the backends
by name (backends: nkisim, neuron, triton), nkisim's interpreter and the Trainium cost model
(nkisim, cost), the benchmarks (benchmarks) and the task folders we ship (suites). Stands
alone: it imports nothing from the rest of accelopt."""
