"""Parsing Python in a process with threads (nkibench.python_ast): a soak under load saw a
daemon's search fail with CPython's `SystemError: AST constructor recursion depth mismatch`
while another thread parsed too."""

from __future__ import annotations

import ast
import sys
import threading
from collections.abc import Callable

import pytest

from nkibench import python_ast
from tests.support import REPOSITORY

SOURCE = (REPOSITORY / "nkibench" / "sandbox" / "static_check.py").read_text()


class Cyclic:
    """Garbage that only the cycle collector frees, running a finaliser (Python code, where
    the interpreter may switch threads) in the middle of whatever allocates next."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        pass


def _errors(parse: Callable[[str], ast.AST]) -> list[str]:
    errors: list[str] = []

    def work() -> None:
        for _ in range(40):
            garbage = [Cyclic() for _ in range(50)]
            del garbage
            try:
                parse(SOURCE)
            except SystemError as e:
                errors.append(str(e))

    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switching)
    return errors


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the CPython bug is 3.11's")
def test_the_workload_trips_cpythons_parser_without_the_lock() -> None:
    assert any("recursion depth mismatch" in e for e in _errors(ast.parse))


def test_parses_in_six_threads_at_once_all_succeed() -> None:
    assert _errors(python_ast.parse) == []
    tree = python_ast.parse("x = 1", "<test>")
    assert isinstance(tree.body[0], ast.Assign)
    assert isinstance(python_ast.parse("1 + 2", mode="eval"), ast.Expression)


def test_no_module_of_the_daemons_process_calls_ast_parse_itself() -> None:
    """Every parse in nkibench, daemon, agents, store and events takes the lock."""
    calls = [
        f"{path.relative_to(REPOSITORY)}:{node.lineno}"
        for folder in ("nkibench", "daemon", "agents", "store", "events")
        for path in sorted((REPOSITORY / folder).rglob("*.py"))
        if path.name != "python_ast.py"
        for node in ast.walk(python_ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "parse"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "ast"
    ]
    assert calls == []
