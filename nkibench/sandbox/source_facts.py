"""The parse child's phase: what the daemon needs to know of a candidate's source, read where a
parser blow-up costs only this short-lived process (nkibench.sandbox.parse_child runs it).

A candidate's source is untrusted text: Python's parser takes about 450 bytes of memory per
byte of source and gives up on deep nesting with MemoryError or RecursionError (CPython 3.11:
200,000 unary minuses, 100,000 `+` terms), so no parse of it runs in the daemon's process.
Nothing of the source runs here either: this is trusted code (the parser, the static check's
policy) reading it as data, and the answer is data the parent checks
(nkibench.sandbox.parse_child). Imports stay light (no numpy): each candidate pays for them.
"""

from __future__ import annotations

import ast
from typing import Any

from nkibench import python_ast
from nkibench.dialects import detect_dialect
from nkibench.errors import TaskError
from nkibench.sandbox.static_check import check_source

__all__ = ["SHOWN_VIOLATIONS", "answer"]

SHOWN_VIOLATIONS = 5
"""Violations handed back (and shown in the candidate's message): the first ones."""


def _violations(request: dict[str, Any]) -> dict[str, Any]:
    found = check_source(
        request["source"],
        request["filename"],
        request["dialect"],
        torch_compute=request["torch_compute"],
    )
    return {"violations": [[v.line, v.problem] for v in found[:SHOWN_VIOLATIONS]]}


def _constants(request: dict[str, Any]) -> dict[str, Any]:
    """The module-level `NAME = constant` assignments of the names asked for: where they stand
    and their value where JSON carries it unchanged (a tunable's choices come from TOML, so
    another constant, bytes say, equals none of them)."""
    wanted = set(request["names"])
    found: dict[str, Any] = {}
    for node in python_ast.parse(request["source"]).body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in wanted
            and isinstance(node.value, ast.Constant)
        ):
            value = node.value.value
            carried = isinstance(value, int | float | str) or value is None
            found[node.targets[0].id] = {
                "line": node.lineno,
                "end_line": node.end_lineno,
                **({"value": value} if carried else {}),
            }
    return {"constants": found}


def _dialect(request: dict[str, Any]) -> dict[str, Any]:
    try:
        return {"dialect": detect_dialect(python_ast.parse(request["source"]), request["where"])}
    except TaskError as e:  # two dialects in one kernel: the caller's TaskError again
        return {"dialect_error": e.message}


FACTS = {"violations": _violations, "constants": _constants, "dialect": _dialect}


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """The fact the request asks for (`fact`), or a rejection where the parser gives up."""
    try:
        return {"ok": True, **FACTS[request["fact"]](request)}
    except SyntaxError as e:  # the static check reports its own as a violation
        return {
            "ok": False,
            "kind": "compile",
            "message": f"line {e.lineno}: SyntaxError: {e.msg}",
            "line": e.lineno or 0,
        }
    except (MemoryError, RecursionError) as e:
        return {
            "ok": False,
            "kind": "rejected",
            "message": f"the source nests too deeply for Python's parser ({type(e).__name__})",
        }
