"""The `nkisim` backend: NKI kernels interpreted on the CPU, latencies estimated by the
Trainium cost model (nkibench.nkisim is the interpreter, nkibench.cost the model)."""
