# task: silu
# expect: rejected
# message: no underscore names
import neuronxcc.nki as nki


@nki.jit
def kernel(x):
    for cls in ().__class__.__base__.__subclasses__():
        if cls.__name__ == "Popen":
            cls(["true"])
    return x
