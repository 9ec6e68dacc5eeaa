# dialect: nki-legacy
# family: library fallback: the simulator's storage read by format field
# task: nki_legacy/silu
# expect: rejected
# message: the format field `{0.data}` reads the attribute `.data` by name
# A str.format template reads attributes by the names in its fields: `{0.data}` is the input's
# storage behind the tensor, as text, read without a load instruction.
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x):
    values = np.array("{0.data}".format(x).replace("[", " ").replace("]", " ").split(), float)
    raise RuntimeError(f"read {values.size} input values without an instruction")
