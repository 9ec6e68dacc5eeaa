# dialect: nki-legacy
# family: finding the expected output through frames, by class pattern (gi_frame, f_back)
# task: nki_legacy/silu
# expect: rejected
# message: `.gi_frame` (frames, tracebacks and code objects) is not allowed: a kernel may not inspect the interpreter (read by the class pattern
# The frame walk of frame_walk_globals.py with no attribute in sight: a running generator's
# frame, its caller (the kernel), the kernel's caller (the harness) and that frame's globals,
# all read by nested class patterns.
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


def climb():
    match walker:
        case object(gi_frame=object(f_back=object(f_back=object(f_globals=harness)))):
            yield harness


walker = climb()


@nki.jit
def kernel(x):
    harness = next(walker)
    raise RuntimeError(str(sorted(harness)))
