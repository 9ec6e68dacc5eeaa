"""Where Python reads an attribute or an entry by a name that is not an `ast.Attribute`: the
parsing half of the static check's rules for them (the rules, and their messages, are in
nkibench.sandbox.static_check).

- A format template (`"{0.data}".format(t)`, `"{x[key]}".format_map(m)`) reads attributes and
  entries by the names in its fields; `template_reads` lists them, with the parser that
  `str.format` itself uses.
- A class pattern with positional sub-patterns (`case C(a, b)`) reads the attributes that
  `C.__match_args__` names; only the builtin types in MATCH_SELF_TYPES match the subject
  itself instead.
- `pattern_chains`: the attribute chains a pattern reads from its subject, for check_resolved
  to follow like `subject.a.b`.
- `bound_names` and `binder_names`: the names a kernel binds, for "is `int` still the builtin
  here" and for the names a kernel may not bind.
"""

from __future__ import annotations

import ast
import importlib
import string
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MATCH_SELF_TYPES",
    "TemplateRead",
    "binder_names",
    "bound_names",
    "pattern_chains",
    "template_reads",
]

# the parser behind str.format's field names (C, no stub): "0.a[k].b" → 0, [(True, "a"),
# (False, "k"), (True, "b")]. The checker's own use, on a template string it never formats.
_field_name_split: Any = importlib.import_module("_string").formatter_field_name_split

MATCH_SELF_TYPES = frozenset(
    {"bool", "bytearray", "bytes", "dict", "float", "frozenset", "int", "list", "set", "str"}
    | {"tuple"}
)
"""The builtin types whose class pattern hands its one positional sub-pattern the subject itself
(`case int(n)`): CPython reads `__match_args__` from the pattern's class, these have none, and
their flag says "match self". Any other class's positional sub-patterns read the attributes its
`__match_args__` lists."""


@dataclass(frozen=True)
class TemplateRead:
    field: str
    """The field as written, without its braces (`0.__class__.__mro__`)."""
    attribute: bool
    """True: `.name` (getattr); False: `[name]` (getitem)."""
    name: str | int


def template_reads(template: str) -> list[TemplateRead]:
    """Every attribute and entry a format template's fields read, in order, nested fields of a
    format spec (`{0:{1.width}}`) included. Raises ValueError where str.format would (an
    unmatched brace, `{0[}`): the check refuses a template it cannot read."""
    reads: list[TemplateRead] = []
    for _literal, field, spec, _conversion in string.Formatter().parse(template):
        if field is not None:
            _first, rest = _field_name_split(field)
            reads.extend(TemplateRead(field, attribute, name) for attribute, name in rest)
        if spec:  # str.format expands the fields of a spec before formatting with it
            reads.extend(template_reads(spec))
    return reads


def binder_names(node: ast.AST) -> Iterator[str]:
    """The names a node binds that are not an `ast.Name` (a Name's store is seen as a Name):
    def and class names, parameters, import aliases, `except ... as name`, pattern captures."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name
    elif isinstance(node, ast.arg):
        yield node.arg
    elif isinstance(node, ast.alias):
        if node.asname:
            yield node.asname
        elif node.name != "*":
            yield node.name.split(".")[0]
    elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar):
        if node.name:
            yield node.name
    elif isinstance(node, ast.MatchMapping):
        if node.rest:
            yield node.rest
    elif isinstance(node, ast.Global | ast.Nonlocal):
        yield from node.names


def bound_names(tree: ast.AST) -> frozenset[str]:
    """Every name the kernel binds anywhere, in any scope (a builtin type's name among them is
    not known to be the builtin)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        else:
            names.update(binder_names(node))
    return frozenset(names)


def pattern_chains(pattern: ast.pattern) -> Iterator[tuple[tuple[str, ...], bool]]:
    """The attribute chains a pattern reads from its subject through class patterns' keywords,
    with whether the pattern binds the value at the chain's end to a name:
    `object(a=object(b=x))` → (("a",), False), (("a", "b"), True). (What sequence and mapping
    patterns take out of a subject are its items, not its attributes: the chain ends there.)"""
    if isinstance(pattern, ast.MatchAs) and pattern.pattern is not None:
        yield from pattern_chains(pattern.pattern)
    elif isinstance(pattern, ast.MatchOr):
        for alternative in pattern.patterns:
            yield from pattern_chains(alternative)
    elif isinstance(pattern, ast.MatchClass):
        for name, sub in zip(pattern.kwd_attrs, pattern.kwd_patterns, strict=True):
            yield (name,), isinstance(sub, ast.MatchAs) and sub.name is not None
            for chain, binds in pattern_chains(sub):
                yield (name, *chain), binds
