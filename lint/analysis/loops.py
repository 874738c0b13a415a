"""Which nodes run once per iteration of a Python `for`/`while` loop of their own scope.

A loop body re-runs its statements, so a function object created there (a `lambda`, a
nested `def`, a `functools.partial`) is a new object every iteration. A `while` loop's test
and a `for` loop's target run per iteration too; a `for` loop's iterable and `else` block
run once. Bodies of functions defined inside the loop are not part of it: they run when
called, not per iteration. Built once per file, on first use.
"""

from __future__ import annotations

import libcst as cst
from odelint.analysis.facts import Facts


class Loops:
    def __init__(self, module: cst.Module) -> None:
        self._loop_of: dict[int, cst.For | cst.While] = {}
        stack: list[tuple[cst.CSTNode, cst.For | cst.While | None]] = [(module, None)]
        while stack:
            node, loop = stack.pop()
            if loop is not None:
                self._loop_of[id(node)] = loop
            if isinstance(node, (cst.For, cst.While)):
                again = (node.target, node.body) if isinstance(node, cst.For) else (node.test, node.body)
                stack.extend((child, node if any(child is part for part in again) else loop)
                             for child in node.children)
            elif isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                header = [c for c in node.children if c is not getattr(node, "body", None)]
                stack.extend((child, loop) for child in header)
                stack.append((node.body, None))
            else:
                stack.extend((child, loop) for child in node.children)

    def loop_of(self, node: cst.CSTNode) -> cst.For | cst.While | None:
        """The innermost loop of the same scope whose body runs `node` each iteration."""
        return self._loop_of.get(id(node))


def loops(facts: Facts) -> Loops:
    """The file's loops, built once as a part of its facts."""
    return facts.part(lambda owner: Loops(owner.index.module), Loops)
