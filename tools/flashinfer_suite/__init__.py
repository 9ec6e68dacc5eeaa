"""Public Triton solutions of FlashInfer-Bench definitions, gathered with their published traces
into one FlashInfer Trace dataset folder outside the repository (for `accelopt
import-flashinfer`): see README.md. Modules: sources (a checkout's FlashInfer files, each read
with flashinfer_bench's own models), survey (counts per checkout), assemble (the dataset)."""
