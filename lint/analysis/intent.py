"""Where code exists to trigger an error: expected-error contexts.

A test that wraps a call in `with pytest.raises(ValueError):` (or `pytest.warns`,
`self.assertRaises(...)` as a context or as a call given the callable, a test decorated
`@pytest.mark.xfail(raises=...)`) wants the error a rule predicts. So does a single statement
that a `try` guards with a handler catching every error (`except Exception:`, `except
BaseException:`, a bare `except:`) and not raising it again: a tutorial printing the error it
demonstrates, or a probe that falls back when the operation fails. Reporting it is noise and
fixing it breaks the test or the lesson, so the engine asks this module for the line ranges
of such code and applies each rule's `expected_errors` policy there. Names resolve through
imports (`from pytest import raises as r`); unittest's methods are known by name on any object.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import libcst as cst
from odelint.analysis import tables
from odelint.analysis.facts import Facts
from odelint.analysis.scopes import Site, own_nodes
from odelint.analysis.words import words_of

# words one of which a file must contain to hold an expected-error context (a cheap gate)
_WORDS = ("raises", "warns", "assertRaises", "assertWarns", "deprecated_call", "xfail", "except")
_EVERY_ERROR = frozenset({"Exception", "BaseException"})


@functools.cache
def _table() -> dict:
    return tables.read("intent.toml")["expected_errors"]


def may_expect_errors(source: str) -> bool:
    words = words_of(source)  # the gate's search of the same text: an edit's is searched around the edit
    return any(words.holds(word) for word in _WORDS)


class ExpectedErrors:
    """The nodes of one file whose code is expected to raise or warn."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self._sites: dict[int, Site] = {id(call): site for call, site in facts.index.of_type(cst.Call)}

    def regions(self) -> list[tuple[cst.CSTNode, int]]:
        """(node, index of the top-level statement holding it) for every expected-error region:
        a `with` statement, a decorated test function, or an assertRaises-style call."""
        found: list[tuple[cst.CSTNode, int]] = []
        for top, statement in enumerate(self.facts.index.module.body):
            found.extend((node, top) for node in self._in_statement(statement))
        return found

    def _in_statement(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        if isinstance(node, (cst.With, cst.FunctionDef)) and self._expects(node):
            yield node
            return
        if isinstance(node, cst.Try) and self._guards_one_statement(node):
            yield node.body.body[0]
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                value = getattr(small, "value", None)
                if isinstance(value, cst.Call) and self._calls_with_callable(value):
                    yield value
            return
        for block in _blocks(node):
            for statement in block:
                yield from self._in_statement(statement)

    def _expects(self, node: cst.With | cst.FunctionDef) -> bool:
        if isinstance(node, cst.With):
            return any(isinstance(item.item, cst.Call) and self._context(item.item) for item in node.items)
        keywords = _table()["decorators"]
        for decorator in node.decorators:
            call = decorator.decorator
            if isinstance(call, cst.Call):
                keyword = keywords.get(self._qualname(call.func, call) or "")
                if keyword and any(arg.keyword is not None and arg.keyword.value == keyword for arg in call.args):
                    return True
        return False

    def _guards_one_statement(self, node: cst.Try) -> bool:
        """`try: <one statement> except Exception as e: print(e)`: the error is caught and
        not raised again, so the statement is there to show or probe it."""
        body = node.body.body
        if len(body) != 1 or (isinstance(body[0], cst.SimpleStatementLine) and len(body[0].body) != 1):
            return False
        return any(self._catches_everything(handler) for handler in node.handlers) and not any(
            _raises(handler) for handler in node.handlers)

    def _catches_everything(self, handler: cst.ExceptHandler) -> bool:
        if handler.type is None:
            return True
        names = [e.value for e in handler.type.elements] if isinstance(handler.type, cst.Tuple) else [handler.type]
        return any(isinstance(name, cst.Name) and name.value in _EVERY_ERROR and not self.facts.lookup(
            name.value, self.facts.index.module_scope) for name in names)

    def _context(self, call: cst.Call) -> bool:
        """`pytest.raises(E)`, `self.assertRaises(E)`: a context manager that expects an error."""
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in _table()["methods"]:
            return True
        return self._qualname(call.func, call) in _table()["contexts"]

    def _calls_with_callable(self, call: cst.Call) -> bool:
        """`self.assertRaises(E, f, x)`, `pytest.raises(E, f, x)`: the call form."""
        positional = [arg for arg in call.args if arg.keyword is None]
        return len(positional) >= 2 and self._context(call)

    def _qualname(self, func: cst.BaseExpression, call: cst.Call) -> str | None:
        site = self._sites.get(id(call))
        return self.facts.qualname(func, site.scope) if site is not None else None


def _raises(handler: cst.ExceptHandler) -> bool:
    """Does the handler raise (the caught error or another) anywhere in its own body?"""
    return any(True for _ in own_nodes(handler.body, cst.Raise))


def _blocks(node: cst.CSTNode) -> Iterator[tuple[cst.CSTNode, ...]]:
    """The statement blocks directly inside a compound statement (bodies, else, handlers)."""
    body = getattr(node, "body", None)
    if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)):
        yield tuple(body.body)
    for name in ("orelse", "finalbody"):
        part = getattr(node, name, None)
        if isinstance(part, cst.If):
            yield (part,)
        elif part is not None:
            yield from _blocks(part)
    for handler in getattr(node, "handlers", ()):
        yield from _blocks(handler)
    for case in getattr(node, "cases", ()):
        yield from _blocks(case)
