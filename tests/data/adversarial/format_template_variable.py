# dialect: nki
# family: escape: a format template the check cannot read (built at run time)
# task: nki/silu
# expect: rejected
# message: `.format` on a template the check cannot read
# The template is assembled at run time, so no parser sees its `{0.__self__}` field.
import nki
import nki.language as nl


@nki.jit
def kernel(x):
    template = "{0." + "_" * 2 + "self" + "_" * 2 + "}"
    raise RuntimeError(template.format(print))
