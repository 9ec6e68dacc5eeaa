"""FlashInfer-Bench in and out: a FlashInfer Trace dataset's definitions become accelopt task
folders (`accelopt import-flashinfer`), and a task's kernel leaves as a Solution with its
Traces in a dataset folder (`accelopt export --format flashinfer`).

flashinfer_bench's own schema models read, validate and write every file (never a copy of its
schema). It is an optional extra, and it imports torch: the CLI imports these modules only
inside its commands, after `package.require()` has said how to install it where missing.
"""
