# task: silu
# expect: rejected
# message: `__import__` is not allowed
import neuronxcc.nki as nki


@nki.jit
def kernel(x):
    subprocess = __import__("subprocess")
    subprocess.run(["true"])
    return x
