"""The allow-list check run on kernel source before any of it executes.

Kernels are written by LLMs and treated as untrusted. The check is the first of three
layers (then restricted builtins, a guarded import and run-time guards in the child, then the
OS sandbox: no network, a private file system, limits, a wall-clock kill). It is the layer
with the clearest messages, so it refuses everything it can see:

- imports outside the dialect's allow-list, and the builtins that reach files, code or other
  objects' attributes by name;
- every attribute starting with an underscore (the doors to `__class__.__subclasses__()`,
  frames and globals), and the attributes without one that lead to the same places: the
  standard library's modules that other modules hold (`typing.sys`, `np.ma.core.builtins`),
  frames, tracebacks and code objects (`gen.gi_frame.f_back`), and the evaluators of string
  annotations (`typing.get_type_hints`, `functools.singledispatch`: eval in disguise);
- file readers and writers on any object (`np.rec.fromfile`, `np.memmap`, `x.tofile`,
  `torch.UntypedStorage.from_file`), and numpy's file, pointer and build APIs anywhere under
  numpy (`np.load`, `np.ma.core.np.load`; NKI's own `nl.load` stays allowed);
- assigning to or deleting any attribute: a kernel writes tensors, never another object's
  attributes (that is how a module, a timer or `torch.cuda.synchronize` gets patched);
- defining `__torch_function__` or `__torch_dispatch__` (a tensor subclass that answers the
  harness's own torch calls, or defers work past the timer);
- using an imported module other than as `module.<name>`: a module held in a variable hides
  its attributes from the check.

What differs by dialect comes from its record (nkibench.dialects): the paths it refuses with
everything under them and the packages whose `set_*` are global state (Triton's torch and
triton: nkibench.policy.triton_code), the guard on its host code's reads of tensor data
(Triton's run(): outside @triton.jit functions, no method that reads tensor data where the
kernel child's run-time guard cannot see it, `.numpy()`, `.tolist()`..., unless the task
allows torch compute; what torch computes is decided op by op where it runs), and the
interpreter's internals it may not read (nkisim's
storage behind an NKI tensor: nkibench.policy.nkisim_code). The tables every dialect
shares are in nkibench.sandbox.policy.

A list of names can never be complete (typing holds `re`, which holds `enum`, which holds
builtins as `bltns`), so the kernel's child runs check_resolved too
(nkibench.sandbox.resolved_check).

Python reads attributes by name without an `ast.Attribute` in more places than `.name`; each
is held to the same rules, or refused where the name cannot be seen (the parsing is in
nkibench.sandbox.named_reads):

- class patterns: `case object(__self__=b)` is `b = subject.__self__` (and `print.__self__` is
  the builtins module), so every keyword of a class pattern passes the checks of `.name`, and
  numpy's file functions' and the refused builtins' names too (`object(exec=run)`: the subject
  is never a path the check can follow; check_resolved follows a pattern on an imported
  module's chain). Positional sub-patterns (`case C(a, b)`)
  read the attributes `C.__match_args__` lists, which the source does not show (a kernel's
  class may list `"__self__"`, a library's dataclass its internals, and a metaclass's
  `__instancecheck__` lets any subject in): they are refused except on the builtin types that
  match themselves (`case int(n)`, no attribute read), where the kernel does not rebind the
  type's name. Kernels name the attributes instead: `case Tile(rows=r)`.
- mapping patterns, subscripts and format fields read entries by key: a key that names a
  namespace's entry (a dunder, or a name the kernel may not use: `{"__builtins__": b}`,
  `g["exec"]`) is refused. A kernel reaches no namespace mapping (globals, `__dict__`,
  `f_globals` are refused names), so this is a second line, with a message that says why.
- format templates: `"{0.__class__.__mro__}".format(x)` reads attributes by the names in the
  template. A literal template's fields are parsed with str.format's own parser: attribute
  fields are refused (an f-string says the same, and its expressions are checked nodes), entry
  fields go through the key rule. `.format` / `.format_map` / `str.format` on a template that
  is not a literal is refused: it cannot be read. `format(value, spec)` takes a spec, not a
  template (no field lookup), and `"%(key)s" % mapping` reads entries by key, never
  attributes, and gives back text: both stay allowed.
- `hasattr(x, "name")` reads the attribute (it runs a property's getter, and answers whether
  a door exists): its name must be a literal and passes the checks of `.name`. On an
  imported module (`hasattr(tl, "exp2")`) the module is asked, not held as a value, and the
  read is checked as the attribute `tl.exp2`. `getattr` is refused, but as
  `getattr(<module>, "name"[, default])` on a module of the dialect's by-name packages
  (Triton's: `getattr(tl, "fast_exp", tl.exp)`), checked as `<module>.name`; in the kernel's
  child the builtin `getattr` holds the same rules at run time (nkibench.sandbox.facades).
- `eval_str=` (inspect's and annotationlib's evaluators of string annotations) is refused as
  a keyword of any call; `inspect`'s other evaluators are refused by name (`from_callable`,
  `get_annotations`) or left out of the names a kernel may use of it (MODULE_SUBSETS).
- `functools.update_wrapper` (and `wraps` with `assigned=` / `updated=`) reads attributes of
  one object and writes them on another, by names in strings: with a property named
  `__globals__` on a kernel's class, `update_wrapper(sink, typing.cast, ("__globals__",))`
  hands the kernel typing's globals, and their `__builtins__`. `update_wrapper` is refused;
  `functools.wraps` only as `@functools.wraps(fn)` on a def (then it reads `fn`'s name and
  doc and writes them on the kernel's own function). `operator.attrgetter` / `methodcaller`
  and `inspect.getattr_static` are refused by name (their modules cannot be imported or
  reached either).
- hooks that make a kernel's object answer a library's own calls on it, or hand it the other
  operands (the harness's own arrays): `__torch_function__`, `__torch_dispatch__`,
  `__array__`, `__array_ufunc__`, `__array_function__` and the rest of OBJECT_HOOKS are
  refused under any binding (def, class attribute, pattern capture, import alias), as a
  namespace's key (`{"__torch_function__": f}`, `dict(__torch_function__=f)`), and the
  three-argument `type(name, bases, namespace)` is refused: the class statement is the form
  the check reads.

Looked at and left allowed, with why:

- `type(x)` is `x.__class__`; what a class offers without underscores (`.mro()`, its methods)
  leads nowhere new, and building a function or code object needs `__code__`, `gi_code` or
  `compile`, all refused. (`type(x)(name, bases, ns)`, or `type` under another name, calls a
  metaclass the check cannot name: a class built that way escapes the hook rule, not the
  attribute rules.)
- `dir(x)` and `str.join` over it: names only, as text; turning a name into a value needs
  getattr, vars, a format field or update_wrapper, all refused.
- `__getattr__` / `__getattribute__` / descriptors (`__get__`, `__set_name__`),
  `__init_subclass__`, `__class_getitem__`, metaclasses, `super()`: they run the kernel's own
  code on the kernel's own classes and objects; the reads inside are `.name` nodes the check
  sees (`super().__getattribute__` is an underscore name).
- dunders the harness may call on a returned object (`__eq__`, `__float__`, `__index__`,
  `__len__`, `__bool__`): they can lie, but only inside the kernel's own process, whose results
  the trusted side never believes (outputs are read as data); NKI 0.7's configuration classes
  define `__eq__` and `__init__` legitimately.
- the walrus binds a Name (checked as any Name); decorators receive the kernel's own
  functions; `typing.final` / `no_type_check` / `dataclass_transform` / `runtime_checkable`
  write fixed flag attributes, and a runtime-checkable Protocol's isinstance answers booleans.
- `copy`, `pickle`, `copyreg`, `string` (`Formatter`, `Template`) cannot be imported by any
  dialect (dialects.py), and as another module's attribute they are refused by name
  (FORBIDDEN_MODULE_ATTRIBUTES) or, in the kernel's child, by check_resolved;
  `__reduce_ex__` and `__deepcopy__` are underscore names. A Triton kernel may import the
  standard library's pure modules (nkibench.policy.triton_code.STDLIB_MODULES: `inspect`,
  `dataclasses`, `enum`, `collections`, `operator`...): their by-name readers stay refused
  (`operator.attrgetter`, `dataclasses.asdict`), `inspect` only for the names that bind
  arguments and ask what an object is (`inspect.signature`, answering for the kernel's own
  functions only), and what they hold of other modules is refused as their attribute
  (`dataclasses.sys`; `enum.bltns` in check_resolved). Reached as another module's attribute
  (`dataclasses.inspect`), `inspect` and `operator` stay refused by name.
- `if __name__ == "__main__":` at the top level: its body is never run (the kernel's module
  has its own name, and the loader empties the body), so it is not checked (a self-test may
  import `sys`); binding `__name__` anywhere is refused (nkibench.sandbox.main_block).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from nkibench import python_ast
from nkibench.dialects import IMPORT_ROOTS, HostComputeGuard, get_dialect
from nkibench.errors import ErrorKind
from nkibench.sandbox.attributes import guarded_targets
from nkibench.sandbox.main_block import MAIN_NAME, without_main_blocks
from nkibench.sandbox.named_reads import (
    MATCH_SELF_TYPES,
    binder_names,
    bound_names,
    template_reads,
)
from nkibench.sandbox.policy import (
    ARRAY_HOOKS,
    BY_NAME_ATTRIBUTES,
    FORBIDDEN_ATTRIBUTES,
    FORBIDDEN_MODULE_ATTRIBUTES,
    FORBIDDEN_NAMES,
    FORBIDDEN_NUMPY_ATTRIBUTES,
    FORMAT_METHODS,
    INTROSPECTION_ATTRIBUTES,
    TENSOR_HOOKS,
    forbidden_path,
    global_setter,
    module_allowed,
    subset_problem,
)

__all__ = [
    "Violation",
    "attribute_problem",
    "by_name_module",
    "check_source",
    "import_bindings",
    "violation_kind",
]


@dataclass(frozen=True)
class Violation:
    line: int
    problem: str

    def render(self, filename: str) -> str:
        return f"{filename} line {self.line}: {self.problem}"


def attribute_problem(name: str, dialect: str) -> str | None:
    """What is wrong with `.name` on any object (None: nothing)."""
    if name.startswith("_"):
        return f"attribute `.{name}` is not allowed (no underscore names)"
    if name in FORBIDDEN_ATTRIBUTES:
        return f"`.{name}` (files, pickles, pointers or code from text) is not allowed"
    if name in INTROSPECTION_ATTRIBUTES:
        return (
            f"`.{name}` (frames, tracebacks and code objects) is not allowed: a kernel may not "
            "inspect the interpreter"
        )
    if name in BY_NAME_ATTRIBUTES:
        return (
            f"`.{name}` reads (or writes) attributes by names in strings, out of the check's "
            "sight: name the attribute in the source (`x.shape`)"
        )
    if name in FORBIDDEN_MODULE_ATTRIBUTES:
        return f"`.{name}` is the standard library's {name} module, which a kernel may not use"
    internals = get_dialect(dialect).internals
    if internals is not None and name in internals.names:
        return f"`.{name}` {internals.problem}"
    return None


def _string(node: ast.expr) -> str | None:
    """A string literal's value (None: anything else)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _key_problem(key: str | int | None) -> str | None:
    """What is wrong with reading or writing the entry `key` of a mapping (a subscript, a mapping
    pattern, a format field): a dunder or a name the kernel may not use is a namespace's entry
    (a module's globals, the builtins), never kernel data. (None, a number: nothing.)"""
    if isinstance(key, str) and (key.startswith("__") or key in FORBIDDEN_NAMES):
        return (
            f"the key {key!r} is an entry of a namespace (a module's globals, the builtins), "
            "which a kernel may not read or write"
        )
    return None


def _hook_problem(name: str) -> str | None:
    if name in TENSOR_HOOKS:
        return (
            f"defining `{name}` is not allowed: a tensor subclass that intercepts torch calls "
            "answers the harness's checks itself (or defers work past the timer)"
        )
    if name in ARRAY_HOOKS:
        return (
            f"defining `{name}` is not allowed: an object that numpy (or torch) asks for its "
            "data, or hands the other operands of its own calls, answers the harness's checks "
            "itself and sees the harness's arrays"
        )
    return None


class _Checker(ast.NodeVisitor):
    def __init__(
        self,
        dialect: str,
        aliases: dict[str, str],
        modules: dict[str, str],
        guard: HostComputeGuard | None,
        *,
        tree: ast.Module,
    ) -> None:
        self.violations: list[Violation] = []
        self.dialect = dialect
        self.aliases = aliases
        """Names bound to guarded modules → the module's dotted name."""
        self.modules = modules
        """Names bound to any imported module → its dotted name (paths on them are modules')."""
        self.guard = guard
        """What the kernel's host code may not do with its tensor library's tensors (None:
        anything the rest of the check allows)."""
        self.device_decorators = _device_decorators(tree, guard)
        """Names bound to the guard's device-kernel decorator (`from triton import jit`)."""
        self._receivers: set[int] = set()
        self._device_depth = 0
        self._object_writes: set[int] = set()
        """Attribute targets the loader guards (nkibench.sandbox.attributes), where the
        dialect lets kernels set attributes on their own objects."""
        self._objects = get_dialect(dialect).object_base is not None
        self._bound = bound_names(tree)
        """Every name the kernel binds (`int` among them is not the builtin)."""
        self._imported = import_bindings(tree)
        self._format_templates: dict[int, str] = {}
        """`str.format` attributes called with a literal template → the template."""
        self._seen_calls: set[int] = set()
        """`hasattr` names called with a literal name, `functools.wraps` paths used as a plain
        decorator: checked at their call, allowed where they are visited."""

    def visit(self, node: ast.AST) -> None:
        for name in binder_names(node):  # a Name's own store is checked in visit_Name
            if name in FORBIDDEN_NAMES:
                self._flag(node, f"`{name}` is not allowed in a kernel")
            elif name == MAIN_NAME:
                self._flag(node, _MAIN_NAME_PROBLEM)
            elif problem := _hook_problem(name):
                self._flag(node, problem)
        super().visit(node)

    def _builtin(self, node: ast.expr, name: str) -> bool:
        """`node` is the builtin `name` (a Name the kernel never rebinds)."""
        return isinstance(node, ast.Name) and node.id == name and name not in self._bound

    def _host_guard(self) -> HostComputeGuard | None:
        """The guard, where it applies: outside every device kernel."""
        return None if self._device_depth else self.guard

    def _compute_problem(self, name: str) -> str | None:
        """What is wrong with `.name` as a method that reads the guarded library's tensor data
        where the run-time guard cannot see it (None: nothing, or not here)."""
        guard = self._host_guard()
        if guard is None or name not in guard.unseen_reads:
            return None
        return (
            f"`.{name}` reads {guard.library_name} tensor data on the host outside a "
            f"@{guard.device_decorator} kernel, where the run-time guard cannot see it: "
            f"{guard.hint}"
        )

    def _read_problem(self, name: str) -> str | None:
        """What is wrong with reading `name` from an object the source does not name (a
        pattern's subject, hasattr's first argument): the checks of `.name` on an unknown
        object, numpy's file functions too, since no path says it is not numpy, and the builtins
        a kernel may not use (`case object(exec=run)` on a module that holds them)."""
        problem = attribute_problem(name, self.dialect)
        if problem is None and name in FORBIDDEN_NAMES:
            problem = f"`{name}` is not allowed in a kernel"
        if problem is None and name in FORBIDDEN_NUMPY_ATTRIBUTES:
            problem = f"`.{name}` (files, pickles or pointers) is not allowed"
        return problem or self._compute_problem(name)

    def _flag(self, node: ast.AST, problem: str) -> None:
        self.violations.append(Violation(getattr(node, "lineno", 0), problem))

    def _refuse_import(self, node: ast.AST, name: str, what: str) -> None:
        other = IMPORT_ROOTS.get(name.partition(".")[0])
        if other is not None and other != self.dialect:
            language = get_dialect(self.dialect).language
            self._flag(
                node,
                f"{what} {name!r} mixes {get_dialect(other).language} into a {language} "
                f"kernel ({self.dialect}); write it in one dialect",
            )
        else:
            self._flag(node, f"{what} {name!r} is not allowed")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if not module_allowed(alias.name, self.dialect):
                self._refuse_import(node, alias.name, "import of")
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self._flag(node, "relative imports are not allowed")
        elif node.module is None:
            self._flag(node, "import from None is not allowed")
        elif not module_allowed(node.module, self.dialect):
            self._refuse_import(node, node.module, "import from")
        else:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                numpy_io = node.module == "numpy" and alias.name in FORBIDDEN_NUMPY_ATTRIBUTES
                if alias.name == "*":
                    self._flag(node, "`import *` is not allowed")
                elif (
                    numpy_io
                    or forbidden_path(full, self.dialect)
                    or attribute_problem(alias.name, self.dialect)
                    or subset_problem(full, self.dialect)
                ):
                    self._flag(node, f"import of {full!r} is not allowed")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        hook = _hook_problem(node.id) if isinstance(node.ctx, ast.Store) else None
        if node.id == "getattr" and id(node) in self._seen_calls:
            pass  # getattr(<module>, "name"[, default]): checked as <module>.name at its call
        elif node.id == "getattr" and get_dialect(self.dialect).by_name_modules:
            self._flag(node, _GETATTR_PROBLEM)
        elif node.id in FORBIDDEN_NAMES:
            self._flag(node, f"`{node.id}` is not allowed in a kernel")
        elif node.id == MAIN_NAME and not isinstance(node.ctx, ast.Load):
            self._flag(node, _MAIN_NAME_PROBLEM)
        elif hook:
            self._flag(node, hook)
        elif node.id == "hasattr" and id(node) not in self._seen_calls:
            self._flag(
                node,
                "`hasattr` needs the attribute's name as a string literal "
                '(`hasattr(x, "shape")`): a computed name is out of the check\'s sight',
            )
        elif self._imported.get(node.id) == ("functools", "wraps"):
            self._wraps(node)
        elif (
            node.id in self.aliases
            and id(node) not in self._receivers
            and not isinstance(node.ctx, ast.Store)
        ):
            module = self.aliases[node.id]
            self._flag(
                node, f"the {module} module `{node.id}` may only be used as {node.id}.<name>"
            )
        self.generic_visit(node)

    def _dotted(self, node: ast.Attribute, names: dict[str, str]) -> str | None:
        """`tl.make_block_ptr` → "triton.language.make_block_ptr" (None: not on a module)."""
        parts = [node.attr]
        value = node.value
        while isinstance(value, ast.Attribute):
            parts.append(value.attr)
            value = value.value
        if isinstance(value, ast.Name) and value.id in names:
            return ".".join([names[value.id], *reversed(parts)])
        return None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        inner = id(node) in self._receivers  # the outer attribute of its chain checks the path
        self._receivers.add(id(node.value))
        path = self._dotted(node, self.aliases)
        forbidden = forbidden_path(path, self.dialect) if path else None
        numpy_path = path is not None and path.split(".")[0] == "numpy"
        problem = attribute_problem(node.attr, self.dialect)
        writable = (
            id(node) in self._object_writes
            and isinstance(node.value, ast.Name)
            and node.value.id not in self.modules
        )
        if isinstance(node.ctx, ast.Store | ast.Del) and not writable:
            target = path or ast.unparse(node)
            self._flag(
                node,
                f"`{target}` may not be replaced: a kernel writes tensors, never the attributes "
                "of modules or other objects (that is how modules and timers get patched)",
            )
        elif forbidden and path == forbidden:
            self._flag(node, f"`{forbidden}` is not allowed in a kernel")
        elif problem:
            self._flag(node, problem)
        elif numpy_path and node.attr in FORBIDDEN_NUMPY_ATTRIBUTES:
            self._flag(node, f"`.{node.attr}` (files, pickles or pointers) is not allowed")
        elif path and not inner and (subset := subset_problem(path, self.dialect)):
            self._flag(node, subset)
        elif path and not forbidden and not inner and global_setter(path, self.dialect):
            roots = get_dialect(self.dialect).global_state_roots
            owners = " or ".join(f"{root}'s" for root in roots)
            self._flag(node, f"`{path}` changes {owners} global state")
        elif compute := self._compute_problem(node.attr):  # `torch.Tensor.tolist` too
            self._flag(node, compute)
        if node.attr in FORMAT_METHODS:
            self._format_method(node)
        if path == "functools.wraps":
            self._wraps(node)
        self.generic_visit(node)

    def _wraps(self, node: ast.expr) -> None:
        if id(node) not in self._seen_calls:
            self._flag(
                node,
                "`functools.wraps` is allowed only as a def's decorator with the wrapped "
                "function alone (`@functools.wraps(fn)`): otherwise it reads attributes of one "
                "object and writes them on another by names in strings (`assigned`, `updated`)",
            )

    def _format_method(self, node: ast.Attribute) -> None:
        """`template.format(...)` / `.format_map(...)` / `str.format(template, ...)`."""
        template = _string(node.value)
        if template is None and self._builtin(node.value, "str"):
            template = self._format_templates.get(id(node))
        if template is None:
            self._flag(
                node,
                f"`.{node.attr}` on a template the check cannot read: its fields (`{{0.name}}`) "
                "read attributes by name; write an f-string, whose expressions the check reads",
            )
            return
        try:
            reads = template_reads(template)
        except ValueError as e:
            self._flag(node, f"a format template the check cannot read ({e}): {template!r}")
            return
        for read in reads:
            if read.attribute:
                self._flag(
                    node,
                    f"the format field `{{{read.field}}}` reads the attribute `.{read.name}` by "
                    'name, out of the check\'s sight: write an f-string (f"{x.shape}"), whose '
                    "expressions the check reads",
                )
            elif problem := _key_problem(read.name):
                self._flag(node, f"{problem} (the format field `{{{read.field}}}`)")

    def visit_Call(self, node: ast.Call) -> None:
        func, args = node.func, node.args
        plain = not node.keywords and not any(isinstance(a, ast.Starred) for a in args)
        literal = [_string(a) for a in args]
        if self._module_read(node, plain, literal):
            return
        if isinstance(func, ast.Attribute) and func.attr in FORMAT_METHODS and args:
            if literal[0] is not None:  # str.format(template, ...)
                self._format_templates[id(func)] = literal[0]
        elif isinstance(func, ast.Name) and func.id == "hasattr":
            name = literal[1] if plain and len(args) == 2 else None
            if name is not None:
                self._seen_calls.add(id(func))
                if problem := self._read_problem(name):
                    self._flag(node, f"{problem} (read by hasattr)")
        elif isinstance(func, ast.Name) and func.id == "type" and not (plain and len(args) == 1):
            # by name, rebound or not (`type = type` would hide the builtin otherwise)
            self._flag(
                node,
                "`type(name, bases, namespace)` builds a class from a namespace the check "
                "cannot read: write a class statement",
            )
        self.generic_visit(node)

    def _module_read(self, node: ast.Call, plain: bool, literal: list[str | None]) -> bool:
        """`hasattr(<module>, "name")` on any module the kernel imports, and
        `getattr(<module>, "name"[, default])` on a module of the dialect's by-name packages
        (`getattr(tl, "fast_exp", tl.exp)`): the module is a receiver there, not a value,
        and the read is checked as the attribute `<module>.name` would be. True: handled
        (the call's parts are visited here)."""
        func, args = node.func, node.args
        if not (isinstance(func, ast.Name) and func.id in ("hasattr", "getattr")):
            return False
        if func.id in self._bound or not plain or len(args) not in (2, 3) or literal[1] is None:
            return False
        if func.id == "hasattr" and len(args) != 2:
            return False
        module = self._module_path(args[0])
        if module is None:
            return False
        if func.id == "getattr" and by_name_module(module, self.dialect) is None:
            return False
        self._seen_calls.add(id(func))
        read = ast.copy_location(ast.Attribute(args[0], literal[1], ast.Load()), node)
        self.visit_Attribute(read)  # visits args[0] as its receiver
        self.visit(func)
        for other in args[1:]:
            self.visit(other)
        return True

    def _module_path(self, node: ast.expr) -> str | None:
        """The module `node` names (`tl`, `tl.math`): a name bound to an imported module, or
        an attribute chain on one that is itself a module the kernel may import."""
        if isinstance(node, ast.Name):
            return self.modules.get(node.id)
        if isinstance(node, ast.Attribute):
            path = self._dotted(node, self.modules)
            if path is not None and module_allowed(path, self.dialect):
                return path
        return None

    def visit_Constant(self, node: ast.Constant) -> None:
        # a hook's name as a string: a class namespace's key (a metaclass's, a dict handed to
        # a class factory), the one spelling of a definition that is not a binding
        if isinstance(node.value, str) and (problem := _hook_problem(node.value)):
            self._flag(node, problem)

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg is not None and (problem := _hook_problem(node.arg)):
            self._flag(node, problem)  # dict(__array_function__=f)
        elif node.arg == "eval_str":
            self._flag(
                node,
                "`eval_str=` evaluates string annotations as code (eval in disguise): read "
                "the annotations as they are",
            )
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if problem := _key_problem(_string(node.slice)):
            self._flag(node, problem)
        self.generic_visit(node)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        # `case {"exec": f}` calls subject.get("exec"): an entry read, like a subscript
        for key in node.keys:
            if problem := _key_problem(_string(key)):
                self._flag(node, f"{problem} (read by a mapping pattern)")
        self.generic_visit(node)

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        cls = ast.unparse(node.cls)
        for name in node.kwd_attrs:  # `case C(name=p)` reads subject.name
            if problem := self._read_problem(name):
                self._flag(node, f"{problem} (read by the class pattern `{cls}({name}=...)`)")
        if node.patterns and not any(self._builtin(node.cls, t) for t in MATCH_SELF_TYPES):
            self._flag(
                node,
                f"the positional sub-patterns of `case {cls}(...)` read the attributes that "
                f"{cls}.__match_args__ lists, which the check cannot see: name them "
                f"(`case {cls}(rows=r)`); only a builtin type that matches itself takes one "
                "(`case int(n)`)",
            )
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._note_object_writes(node)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        self._note_object_writes(node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._note_object_writes(node)
        self.generic_visit(node)

    def _note_object_writes(self, node: ast.stmt) -> None:
        if self._objects:
            self._object_writes.update(id(t) for t in guarded_targets(node))

    def _is_device_kernel(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        if self.guard is None:
            return False
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if isinstance(target, ast.Name) and target.id in self.device_decorators:
                return True
            if (
                isinstance(target, ast.Attribute)
                and self._dotted(target, self.modules) == self.guard.device_decorator
            ):
                return True
        return False

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._function(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        # its name and parameters: visit's binder check (FORBIDDEN_NAMES, OBJECT_HOOKS)
        for decorator in node.decorator_list:  # `@functools.wraps(fn)`: the def is the wrapper
            if (
                isinstance(decorator, ast.Call)
                and len(decorator.args) == 1
                and not isinstance(decorator.args[0], ast.Starred)
                and not decorator.keywords
            ):
                self._seen_calls.add(id(decorator.func))
        device = self._is_device_kernel(node)
        self._device_depth += device
        self.generic_visit(node)
        self._device_depth -= device


_MAIN_NAME_PROBLEM = (
    "binding `__name__` is not allowed: the kernel's module keeps its own name (its "
    '`if __name__ == "__main__":` block is never run)'
)
_GETATTR_PROBLEM = (
    "`getattr` is allowed only on a module of Triton with the name as a string literal "
    '(`getattr(tl, "exp2", tl.exp)`): a computed name, or getattr on any other object, reads '
    "attributes out of the check's sight"
)


def by_name_module(module: str, dialect: str) -> str | None:
    """The package of the dialect's by-name packages that `module` lies in (None: none):
    getattr with a literal name is allowed on its modules."""
    for root in get_dialect(dialect).by_name_modules:
        if module == root or module.startswith(root + "."):
            return root
    return None


def _module_aliases(tree: ast.Module, modules: tuple[str, ...]) -> dict[str, str]:
    """Names bound to the given modules: `import torch`, `import triton.language as tl`,
    `from triton import language as tl`."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in modules:
                    # `import triton.language` binds `triton`; `import ... as x`, the module
                    root = a.name.split(".")[0]
                    aliases[a.asname or root] = a.name if a.asname else root
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                if full in modules:
                    aliases[a.asname or a.name] = full
    return aliases


def _device_decorators(tree: ast.Module, guard: HostComputeGuard | None) -> frozenset[str]:
    """Names bound to the guard's device-kernel decorator by `from triton import jit [as x]`."""
    if guard is None:
        return frozenset()
    module, _, name = guard.device_decorator.rpartition(".")
    return frozenset(
        a.asname or a.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == module and not node.level
        for a in node.names
        if a.name == name
    )


def violation_kind(violations: list[Violation]) -> ErrorKind:
    """A syntax error is a compile failure; anything else the check finds is a rejection."""
    return (
        "compile" if violations and violations[0].problem.startswith("SyntaxError") else "rejected"
    )


def check_source(
    source: str, filename: str, dialect: str, *, torch_compute: bool = False
) -> list[Violation]:
    """The violations of the allow-list in a kernel's source (empty: allowed).

    `torch_compute`: the task lets the kernel's host code compute with its tensor library
    (task.toml's allow_torch_compute; the dialect's HostComputeGuard, which refuses the reads
    of tensor data the run-time guard cannot see, is then off). A syntax
    error is reported as a violation too, so callers get one list to show.
    """
    try:
        tree = without_main_blocks(python_ast.parse(source, filename=filename))
    except SyntaxError as e:
        return [Violation(e.lineno or 0, f"SyntaxError: {e.msg}")]
    record = get_dialect(dialect)
    checker = _Checker(
        dialect,
        _module_aliases(tree, record.guarded_modules),
        _module_aliases(tree, record.allowed_modules),
        None if torch_compute else record.host_compute,
        tree=tree,
    )
    checker.visit(tree)
    return checker.violations


def import_bindings(tree: ast.Module) -> dict[str, tuple[str, str | None]]:
    """Names bound by imports → (module, attribute or None)."""
    bound: dict[str, tuple[str, str | None]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    bound[a.asname] = (a.name, None)
                else:
                    bound[a.name.split(".")[0]] = (a.name.split(".")[0], None)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                if a.name != "*":
                    bound[a.asname or a.name] = (node.module, a.name)
    return bound
