# task: silu
# expect: resource
# message: file size limit
# file_size_mb: 8
import neuronxcc.nki as nki


@nki.jit
def kernel(x):
    line = "garbage " * 1000
    while True:
        print(line)
