# dialect: nki
# family: escape: builtins by class pattern (print.__self__, then exec)
# task: nki/silu
# expect: rejected
# message: attribute `.__self__` is not allowed (no underscore names) (read by the class pattern `object(__self__=...)`)
# A class pattern reads attributes by name without an `ast.Attribute`: `case object(__self__=b)`
# is `b = print.__self__`, the real builtins module behind the restricted ones, and
# `case object(exec=run)` takes its exec.
import nki
import nki.language as nl


@nki.jit
def kernel(x):
    match print:
        case object(__self__=real):
            match real:
                case object(exec=run):
                    run("import os; os.system('id > /tmp/pwned')", {"__builtins__": real})
    return x
