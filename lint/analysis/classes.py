"""Which same-file class an instance belongs to, and which of its attributes are methods.

`facts.kind` says whether a value is an Equinox module; ODL301 and ODL401 also need to know
*which* class of this file it is, to find the method that `self.step` or `cell.step` names.
"""

from __future__ import annotations

import libcst as cst
from odelint.analysis import jax_api
from odelint.analysis.facts import Facts
from odelint.analysis.scopes import CLASS, COMPREHENSION, FUNCTION, LAMBDA, Scope, Site

_NOT_BOUND = frozenset({"staticmethod", "classmethod"})


def is_module_class(facts: Facts, cls: cst.ClassDef) -> bool:
    binding = facts.binding_of(cls)
    return binding is not None and facts.is_module_class(binding)


def enclosing_class(scope: Scope) -> cst.ClassDef | None:
    """The class whose method body `scope` is (the method itself, not a function nested in it)."""
    if scope.kind == FUNCTION and scope.parent is not None and scope.parent.kind == CLASS:
        return scope.parent.node  # type: ignore[return-value]
    return None


def instance_class(facts: Facts, node: cst.BaseExpression, scope: Scope) -> cst.ClassDef | None:
    """The same-file class of the instance `node` names: `self` in a method, a parameter
    annotated with the class, or a name assigned once from `Class(...)`."""
    if not isinstance(node, cst.Name):
        return None
    bindings = facts.lookup(node.value, scope)
    if len(bindings) != 1:
        return None
    binding = bindings[0]
    if binding.kind == "param":
        if binding.path == (0,) and binding.annotation is None:
            return enclosing_class(binding.scope)
        where = binding.scope.parent or binding.scope
        return named_class(facts, binding.annotation, where) if binding.annotation is not None else None
    if binding.kind == "assign" and not binding.path and isinstance(binding.value, cst.Call):
        return named_class(facts, binding.value.func, binding.scope)
    return None


def named_class(facts: Facts, node: cst.BaseExpression, scope: Scope) -> cst.ClassDef | None:
    """The same-file class a bare name refers to."""
    if not isinstance(node, cst.Name):
        return None
    classes = [b.node for b in facts.lookup(node.value, scope) if b.kind == "class"]
    return classes[0] if len(classes) == 1 else None  # type: ignore[return-value]


def method_of(facts: Facts, cls: cst.ClassDef, name: str, seen: frozenset[int] = frozenset()) -> cst.FunctionDef | None:
    """The instance method `name` of `cls` or of its same-file bases (not static/class methods)."""
    if id(cls) in seen:
        return None
    scope = facts.index.body_scope(cls)
    for binding in scope.bindings.get(name, []) if scope else []:
        if binding.kind == "def":
            function: cst.FunctionDef = binding.node  # type: ignore[assignment]
            plain = any(isinstance(d.decorator, cst.Name) and d.decorator.value in _NOT_BOUND
                        for d in function.decorators)
            return None if plain else function
        return None
    for base in cls.bases:
        parent = named_class(facts, base.value, scope.parent if scope and scope.parent else facts.index.module_scope)
        if parent is not None:
            found = method_of(facts, parent, name, seen | {id(cls)})
            if found is not None:
                return found
    return None


INITIALISERS = frozenset({"__init__", "__post_init__"})


def initialising_methods(facts: Facts, cls: cst.ClassDef) -> frozenset[str]:
    """`__init__`, `__post_init__`, and the methods of `cls` that only they call (through
    `self.helper(...)`, directly or through other such helpers): while they run the
    instance is still being initialised, so Equinox lets them set its fields."""
    return facts.part(_SelfCalls, _SelfCalls).initialising(cls)


class _SelfCalls:
    """Which methods of each class of the file call which of its methods on `self`: found in
    one pass over the file's calls, however many classes and fields a rule asks about."""

    def __init__(self, facts: Facts) -> None:
        self._callers: dict[int, dict[str, set[str]]] = {}  # class -> method name -> its callers on self
        self._initialising: dict[int, frozenset[str]] = {}
        for call, site in facts.index.of_type(cst.Call):
            func = call.func
            if not (type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self"):
                continue
            scope = site.scope
            while scope.kind in (COMPREHENSION, LAMBDA) and scope.parent is not None:
                scope = scope.parent  # `[self._make(k) for k in keys]` runs in the method
            method, cls = scope.node, enclosing_class(scope)
            if cls is not None and type(method) is cst.FunctionDef:
                self._callers.setdefault(id(cls), {}).setdefault(func.attr.value, set()).add(method.name.value)

    def initialising(self, cls: cst.ClassDef) -> frozenset[str]:
        found = self._initialising.get(id(cls))
        if found is None:
            found = self._initialising[id(cls)] = self._close(cls)
        return found

    def _close(self, cls: cst.ClassDef) -> frozenset[str]:
        defined = {statement.name.value for statement in cls.body.body if isinstance(statement, cst.FunctionDef)}
        return initialisers_closed(self._callers.get(id(cls), {}), defined)


def initialisers_closed(callers: dict[str, set[str]], defined: set[str]) -> frozenset[str]:
    """`__init__`, `__post_init__`, and each method of `defined` all of whose callers on `self`
    (`callers`: method -> the methods calling it) are among them, until none is added."""
    found = set(INITIALISERS)
    changed = True
    while changed:
        changed = False
        for name, by in callers.items():
            if name in defined and name not in found and by <= found:
                found.add(name)
                changed = True
    return frozenset(found)


def constructions(facts: Facts, cls: cst.ClassDef) -> list[tuple[cst.Call, Site]]:
    """The calls of this file that build an instance of `cls` (`Model(...)`), with where they are."""
    return [(call, site) for call, site in facts.index.of_type(cst.Call)
            if isinstance(call, cst.Call) and named_class(facts, call.func, site.scope) is cls]


def declared_fields(facts: Facts, cls: cst.ClassDef) -> set[str] | None:
    """The fields a module class declares (`w: jax.Array` in its body, and in its module bases,
    of this file or of the project's other files); None when a base is a class whose fields
    are unknown (a library's module, a class that cannot be read)."""
    scope = facts.index.body_scope(cls)
    if scope is None:
        return None
    names = {name for name, bindings in scope.bindings.items()
             if any(b.kind == "assign" and b.annotation is not None for b in bindings)}
    where = scope.parent or scope
    for base in cls.bases:
        parent = facts.module_type(base.value, where)
        if parent is None:
            outer = base.value.value if isinstance(base.value, cst.Subscript) else base.value
            if facts.qualname(outer, where) in jax_api.names("fieldless_bases"):
                continue
            return None  # a class we cannot read may declare fields
        if parent.name == jax_api.name("equinox_module"):
            continue
        if parent.node is None:
            return None
        inherited = declared_fields(parent.facts or facts, parent.node)
        if inherited is None:
            return None
        names |= inherited
    return names
