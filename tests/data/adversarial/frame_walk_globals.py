# dialect: nki
# family: finding the expected output through frames (sys._getframe without sys)
# task: nki/silu
# expect: rejected
# message: `.gi_frame` (frames, tracebacks and code objects) is not allowed
# A running generator's frame leads back to the harness's frames: their locals (the request,
# the inputs' copies) and their unrestricted builtins.
import nki
import nki.language as nl


def frames():
    yield


@nki.jit
def kernel(x):
    walker = frames()
    next(walker, None)
    caller = walker.gi_frame.f_back
    while caller is not None:
        if "request" in caller.f_locals:
            raise RuntimeError(str(caller.f_locals["request"]))
        caller = caller.f_back
    return x
