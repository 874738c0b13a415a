"""Code that already copes with an API's absence: a compatibility shim.

An old import or attribute inside a `try` whose handlers catch `ImportError` or
`AttributeError` is a shim, as is the fallback in such a handler (it runs only where the new
spelling failed) and either branch of a version switch (`if hasattr(jax, "enable_x64"):`,
anything comparing `__version__`). The ODL9xx rules ask this once per node instead of each
walking every `try` and `if` of the file.
"""

from __future__ import annotations

import libcst as cst
from odelint.analysis.facts import Facts
from odelint.analysis.scopes import Site, children_of, dotted_name

# The stack whose version a `hasattr(...)` probe asks about.
_LIBRARIES = frozenset({"jax", "jaxlib", "equinox", "diffrax", "optax"})
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
_ATTRIBUTE_ERRORS = frozenset({"AttributeError", "Exception", "BaseException"})
_EVERYTHING = frozenset({"BaseException"})
_VERSION_NAMES = ("__version__", "__version_info__")


class Guards:
    """For each import and attribute a shim evaluates: the exception names caught around it
    (last component: `ImportError`)."""

    def __init__(self, facts: Facts) -> None:
        self._facts = facts
        self._caught: dict[int, set[str]] = {}
        for node, _ in facts.index.of_type(cst.Try):
            caught = set().union(*(_caught_by_handler(handler) for handler in node.handlers))
            if caught:
                self._add(node.body, caught)
            for handler in node.handlers:
                if _caught_by_handler(handler) & (_IMPORT_ERRORS | _ATTRIBUTE_ERRORS):
                    self._add(handler.body, _EVERYTHING)
        for switch, site in facts.index.of_type(cst.If):
            if self._checks_version(switch.test, site):
                self._add(switch, _EVERYTHING)

    def copes_with_absence(self, node: cst.CSTNode) -> bool:
        """Is `node`, an import or an attribute, evaluated where its failure is caught: an
        import under `except ImportError`, an attribute under `except AttributeError`?"""
        caught = self._caught.get(id(node), set())
        if isinstance(node, (cst.ImportAlias, cst.ImportFrom)):
            return bool(caught & _IMPORT_ERRORS)
        return isinstance(node, cst.Attribute) and bool(caught & _ATTRIBUTE_ERRORS)

    def _add(self, body: cst.CSTNode, caught: frozenset[str] | set[str]) -> None:
        for inner in _evaluated_imports_and_attributes(body):
            self._caught.setdefault(id(inner), set()).update(caught)

    def _checks_version(self, test: cst.BaseExpression, site: Site) -> bool:
        """Does an `if` test ask which version is installed: `hasattr(jax.random, ...)` on a
        module of the stack, or anything involving `__version__`?"""
        pending: list[cst.CSTNode] = [test]
        while pending:
            node = pending.pop()
            if type(node) is cst.Call and dotted_name(node.func) in ("hasattr", "getattr") and node.args:
                qualname = self._facts.qualname(node.args[0].value, site.scope)
                if qualname is not None and qualname.split(".")[0] in _LIBRARIES:
                    return True
            if type(node) is cst.Name and node.value in _VERSION_NAMES:
                return True
            if type(node) is cst.Attribute and node.attr.value in _VERSION_NAMES:
                return True
            pending.extend(children_of(node))
        return False


def _evaluated_imports_and_attributes(body: cst.CSTNode) -> list[cst.CSTNode]:
    """The imports and attributes a body evaluates itself (not in functions it defines)."""
    found: list[cst.CSTNode] = []
    pending = [body]
    while pending:
        node = pending.pop()
        kind = type(node)
        if kind is cst.FunctionDef or kind is cst.ClassDef or kind is cst.Lambda:
            continue
        if kind is cst.ImportFrom or kind is cst.ImportAlias or kind is cst.Attribute:
            found.append(node)
        pending.extend(children_of(node))
    return found


def _caught_by_handler(handler: cst.ExceptHandler) -> set[str]:
    """The exception class names one handler catches (a bare `except` catches all)."""
    if handler.type is None:
        return set(_EVERYTHING)
    caught: set[str] = set()
    types = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
    for element in types:
        value = element.value if isinstance(element, cst.BaseElement) else element
        name = dotted_name(value) if isinstance(value, cst.BaseExpression) else None
        if name:
            caught.add(name.rsplit(".", 1)[-1])
    return caught


def guards(facts: Facts) -> Guards:
    """The file's shims, found once as a part of its facts."""
    return facts.part(Guards, Guards)
