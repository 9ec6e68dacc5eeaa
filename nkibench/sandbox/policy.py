"""The static check's tables: the names, attributes and modules no kernel of any dialect may
use, and the predicates that read them with a dialect's own (nkibench.dialects).

Why each entry is refused is in nkibench.sandbox.static_check's docstring; the tables change
when a new escape is found, the checkers when Python grows a new way to read by name.
"""

from __future__ import annotations

from nkibench.dialects import get_dialect

__all__ = [
    "ARRAY_HOOKS",
    "BY_NAME_ATTRIBUTES",
    "FORBIDDEN_ATTRIBUTES",
    "FORBIDDEN_MODULE_ATTRIBUTES",
    "FORBIDDEN_NAMES",
    "FORBIDDEN_NUMPY_ATTRIBUTES",
    "FORMAT_METHODS",
    "INTROSPECTION_ATTRIBUTES",
    "OBJECT_HOOKS",
    "TENSOR_HOOKS",
    "forbidden_path",
    "global_setter",
    "module_allowed",
    "reachable_module",
    "subset_problem",
]


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


FORBIDDEN_NAMES = frozenset(
    {
        "__import__",
        "__builtins__",
        "__loader__",
        "__spec__",
        "open",
        "eval",
        "exec",
        "compile",
        "globals",
        "locals",
        "vars",
        "getattr",
        "setattr",
        "delattr",
        "input",
        "breakpoint",
        "help",
        "exit",
        "quit",
        "memoryview",
    }
)

# numpy's ways to files, pickles, pointers, foreign code and its own build: refused anywhere
# under numpy (`np.load`, `np.ma.core.np.load`), but not elsewhere (NKI has nl.load)
FORBIDDEN_NUMPY_ATTRIBUTES = frozenset(
    {
        "load",
        "save",
        "savez",
        "savez_compressed",
        "savetxt",
        "ctypeslib",
        "lib",
        "testing",
        "f2py",
        "distutils",
        "show_config",
        "show_runtime",
        "get_include",
    }
)
# methods and functions reaching files, raw pointers or code from a string: refused on any
# object (np.rec.fromfile, np.core.records.fromfile, torch.UntypedStorage.from_file, the
# evaluators of string annotations...)
FORBIDDEN_ATTRIBUTES = frozenset(
    {
        "tofile",
        "dump",
        "dumps",
        "ctypes",
        "open_memmap",
        "fromfile",
        "fromregex",
        "fromtextfile",
        "genfromtxt",
        "loadtxt",
        "memmap",
        "DataSource",
        "from_file",
        # typing's, functools' and inspect's evaluators of string annotations: eval() in
        # disguise (`inspect.Signature.from_callable(f, eval_str=True)`)
        "get_type_hints",
        "singledispatch",
        "singledispatchmethod",
        "evaluate_forward_ref",
        "get_annotations",
        "from_callable",
        "from_function",
        "from_builtin",
        # Triton's autotuner's cache of timings in files (`Autotuner.check_disk_cache`)
        "check_disk_cache",
    }
)
# frames, tracebacks, generators' and coroutines' frames, code objects: the way from a kernel's
# frame to the harness's frames, their locals and their unrestricted builtins
INTROSPECTION_ATTRIBUTES = frozenset(
    {
        "gi_frame",
        "gi_code",
        "gi_yieldfrom",
        "cr_frame",
        "cr_code",
        "cr_await",
        "ag_frame",
        "ag_code",
        "f_back",
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_code",
        "ag_await",
        "tb_frame",
        "tb_next",
        "co_code",
        # a Triton @jit function's globals (and those of the functions it calls: Triton's
        # own, whose `__builtins__` are the real ones), as a dict
        "get_capture_scope",
        "used_global_vals",
    }
)
# the standard library's modules that reach the process, files, the network, other objects by
# name or the interpreter's state; other modules hold them as attributes (`typing.sys`,
# `np.ma.core.builtins`, `torch.os`), so they are refused as an attribute of anything
FORBIDDEN_MODULE_ATTRIBUTES = frozenset(
    _words(
        "sys os posix nt posixpath ntpath genericpath builtins subprocess importlib imp pkgutil "
        "runpy zipimport gc inspect types operator ctypes socket socketserver ssl selectors "
        "asyncio asynchat asyncore concurrent threading multiprocessing signal faulthandler "
        "atexit io pathlib shutil tempfile glob fileinput filecmp linecache tokenize codecs mmap "
        "pickle pickletools marshal shelve dbm sqlite3 copyreg traceback tracemalloc weakref "
        "logging resource fcntl termios pty tty pwd grp getpass platform sysconfig site code "
        "codeop pdb bdb dis cProfile profile pstats zipfile tarfile gzip bz2 lzma urllib http "
        "ftplib smtplib poplib imaplib telnetlib webbrowser xmlrpc string unittest doctest pydoc "
        "distutils"
    )
)
BY_NAME_ATTRIBUTES = frozenset({"update_wrapper", "attrgetter", "methodcaller", "getattr_static"})
TENSOR_HOOKS = frozenset({"__torch_function__", "__torch_dispatch__"})
ARRAY_HOOKS = frozenset(
    _words(
        "__array__ __array_ufunc__ __array_function__ __array_wrap__ __array_prepare__ "
        "__array_finalize__ __array_priority__ __array_interface__ __array_struct__ "
        "__cuda_array_interface__ __dlpack__ __dlpack_device__"
    )
)
OBJECT_HOOKS = TENSOR_HOOKS | ARRAY_HOOKS
"""Names a kernel may not define in any form: a tensor subclass that intercepts torch calls, or
an object that numpy (or torch, or DLPack) asks for its data or hands the other operands of
its own calls, answers the harness's checks itself, sees the harness's arrays, or defers work
past the timer."""
FORMAT_METHODS = frozenset({"format", "format_map"})


def module_allowed(name: str, dialect_name: str) -> bool:
    """A module a kernel of the dialect may import."""
    return name in get_dialect(dialect_name).allowed_modules


def reachable_module(name: str, dialect: str) -> bool:
    """A module a kernel of `dialect` may reach through attributes: one it may import, or one
    inside the dialect's packages."""
    record = get_dialect(dialect)
    return name in record.allowed_modules or any(
        name == root or name.startswith(root + ".") for root in record.package_roots
    )


def forbidden_path(path: str, dialect: str) -> str | None:
    """The dialect's forbidden path that `path` is or lies under (None: none)."""
    for forbidden in get_dialect(dialect).forbidden_paths:
        if path == forbidden or path.startswith(forbidden + "."):
            return forbidden
    return None


def subset_problem(path: str, dialect: str) -> str | None:
    """What is wrong with `path` under a module of which the dialect allows a subset
    (`inspect.currentframe`); None: nothing, or not such a module."""
    for module, names in get_dialect(dialect).module_subsets.items():
        if path.startswith(module + "."):
            name = path[len(module) + 1 :].split(".", maxsplit=1)[0]
            if name not in names:
                return (
                    f"`{module}.{name}` is not allowed: a kernel may use only "
                    f"{', '.join(sorted(names))} of {module}"
                )
    return None


def global_setter(path: str, dialect: str) -> bool:
    """`torch.set_default_dtype`, `torch.cuda.set_sync_debug_mode`...: a `set_*` under one of
    the dialect's global-state packages."""
    parts = path.split(".")
    return parts[0] in get_dialect(dialect).global_state_roots and parts[-1].startswith("set_")
