# task: silu
# expect: rejected
# message: `open` is not allowed
import neuronxcc.nki as nki


@nki.jit
def kernel(x):
    secrets = open("/proc/self/environ").read()
    print(secrets)
    return x
