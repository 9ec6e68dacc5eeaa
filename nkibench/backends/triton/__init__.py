"""The triton backend: Triton kernels checked on a GPU, or under Triton's CPU interpreter
where there is none, and timed on the GPU (measured latencies). The parent side
(nkibench.backends.triton.backend) imports neither torch nor triton; the phases in
nkibench.backends.triton.phases do. Nothing is imported here: the harness needs the phase names
(nkibench.backends.triton.phases) before the backend, which needs the harness."""
