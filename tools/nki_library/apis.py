"""Counting the NKI API a piece of kernel source uses: every `nl.*`, `nisa.*`, `nki.*` name
(calls with their keyword arguments, and plain references such as `nl.float32`), whatever
alias or `from nki.x import y` brought it in."""

from __future__ import annotations

import ast
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TypedDict

from .sources import NKI_MODULE_ALIASES


def nki_bindings(tree: ast.Module) -> dict[str, str]:
    """Names bound to NKI modules or their members → canonical dotted prefix
    (`nl`, `nisa`, `nisa.oob_mode`, `nl.NKIObject`...)."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in NKI_MODULE_ALIASES:
                    if a.asname:
                        bound[a.asname] = NKI_MODULE_ALIASES[a.name]
                    elif a.name == "nki" or a.name.startswith("nki."):
                        bound["nki"] = "nki"
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module in NKI_MODULE_ALIASES
            and not node.level
        ):
            prefix = NKI_MODULE_ALIASES[node.module]
            for a in node.names:
                full = f"{node.module}.{a.name}"
                bound[a.asname or a.name] = NKI_MODULE_ALIASES.get(full, f"{prefix}.{a.name}")
    return bound


def canonical(path: str) -> str:
    """`nki.language.x` → `nl.x`, `nki.isa.x` → `nisa.x` (as kernels usually write them)."""
    for long, short in sorted(NKI_MODULE_ALIASES.items(), key=lambda kv: -len(kv[0])):
        if long == "nki":
            continue
        if path == long or path.startswith(long + "."):
            return short + path[len(long) :]
    return path


def dotted(node: ast.AST, bound: dict[str, str]) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in bound:
        return canonical(".".join([bound[node.id], *reversed(parts)]))
    return None


class ApiJson(TypedDict):
    """One NKI name's counts in api_usage.json."""

    calls: int
    refs: int
    kwargs: dict[str, int]
    """Keyword → times passed, the most passed first (`**` for a `**mapping`)."""
    positional_args: dict[str, int]
    files: list[str]


@dataclass
class ApiCount:
    calls: int = 0
    refs: int = 0
    kwargs: Counter[str] = field(default_factory=Counter)
    positional: Counter[int] = field(default_factory=Counter)
    """How many positional arguments the calls passed (count → times)."""
    files: set[str] = field(default_factory=set)
    """The labels (`collection:path`) of the files that use the name."""

    def as_json(self) -> ApiJson:
        return {
            "calls": self.calls,
            "refs": self.refs,
            "kwargs": dict(self.kwargs.most_common()),
            "positional_args": {str(k): v for k, v in sorted(self.positional.items())},
            "files": sorted(self.files),
        }


def count_apis(
    tree: ast.Module, label: str, into: dict[str, ApiCount] | None = None
) -> dict[str, ApiCount]:
    """Adds `tree`'s NKI API uses to `into` (keyed by canonical name)."""
    out: dict[str, ApiCount] = into if into is not None else defaultdict(ApiCount)
    bound = nki_bindings(tree)
    inner: set[int] = set()  # attributes that are the receiver of a longer chain
    called: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            inner.add(id(node.value))
        if isinstance(node, ast.Call):
            called.add(id(node.func))
            name = dotted(node.func, bound)
            if name is None and isinstance(node.func, ast.Name) and node.func.id in bound:
                name = bound[node.func.id]
            if name is None:
                continue
            entry = out[name]
            entry.calls += 1
            entry.files.add(label)
            entry.positional[len(node.args)] += 1
            for kw in node.keywords:
                entry.kwargs[kw.arg or "**"] += 1
    for node in ast.walk(tree):
        if id(node) in called:
            continue
        name = None
        if isinstance(node, ast.Attribute) and id(node) not in inner:
            name = dotted(node, bound)
        elif (
            isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Load)
            and node.id in bound
            and id(node) not in inner
            and bound[node.id] not in ("nl", "nisa", "nki", "nt", "ncc")
        ):
            name = bound[node.id]
        if name is None:
            continue
        entry = out[name]
        entry.refs += 1
        entry.files.add(label)
    return out
