"""`accelopt bench` for kernels: nkisim's speed and the NKI suite's estimated latencies (nki),
the GPU suite measured (gpu), and AccelOpt's published trn1 latencies to compare with."""
