# dialect: triton
# family: escape: the class hierarchy by format field (`{0.__class__.__mro__}`)
# task: gpu/silu
# expect: rejected
# message: the format field `{0.__class__.__mro__}` reads the attribute `.__class__` by name
# The first step of the __subclasses__ walk, as text: a template's fields read underscore
# attributes that no `ast.Attribute` shows (`{0.__class__.__mro__}`, `{0.__self__}`).
import torch


def run(x):
    hierarchy = "{0.__class__.__mro__} {1.__self__}".format(x, print)
    raise RuntimeError(hierarchy)
