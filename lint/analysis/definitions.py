"""What a name is defined as where code reads it: the model's answer about names, for rules.

Rules ask `Facts` (`facts.definitions(name, site)`, `facts.definition_of(def)`,
`facts.defined_in(function)`, `facts.passed_for(parameter)`, ...) and get `Definition`s: what
the name is (a function, a class, an import, a parameter and its position, an assigned value,
a loop variable) and where, never the scope index's bindings and scopes, which the model
is free to change (tests/test_layers.py keeps rules off them).
"""

from __future__ import annotations

import enum

import libcst as cst
from odelint.analysis.scopes import Binding, Site


class DefinedAs(enum.Enum):
    FUNCTION = "def"
    CLASS = "class"
    IMPORT = "import"
    PARAMETER = "parameter"    # a named parameter, positional or keyword-only
    VARIADIC = "variadic"      # `*args`, `**kwargs`
    ASSIGNMENT = "assignment"  # `x = ...`, `x: T = ...`, `(x := ...)`, `a, b = ...`; a bare `x: T` too
    LOOP = "loop"              # the target of a `for` statement or comprehension
    OTHER = "other"            # `x += ...`, `with ... as x`, `except ... as x`, a `match` capture


_DEFINED_AS = {"def": DefinedAs.FUNCTION, "class": DefinedAs.CLASS, "import": DefinedAs.IMPORT,
               "param": DefinedAs.PARAMETER, "star-param": DefinedAs.VARIADIC, "assign": DefinedAs.ASSIGNMENT,
               "for": DefinedAs.LOOP}


class Definition:
    """One place where a name gets its value, as rules see it. Two answers about the same
    place are equal, so a rule can ask whether a name read here means that definition."""

    __slots__ = ("_binding",)

    def __init__(self, binding: Binding) -> None:
        self._binding = binding

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Definition) and other._binding is self._binding

    def __hash__(self) -> int:
        return id(self._binding)

    def __repr__(self) -> str:
        return f"Definition({self.name!r}, {self.what.name})"

    @property
    def name(self) -> str:
        return self._binding.name

    @property
    def what(self) -> DefinedAs:
        return _DEFINED_AS.get(self._binding.kind, DefinedAs.OTHER)

    @property
    def node(self) -> cst.CSTNode:
        """The `def` or `class` statement, the parameter (`cst.Param`), the `for` loop (or
        comprehension `for`), or the statement or expression that binds the name."""
        return self._binding.node

    @property
    def value(self) -> cst.BaseExpression | None:
        """What a plain assignment gives the name: `v` in `x = v`, `x: T = v`, `(x := v)`;
        None for anything else, an unpacking included (see `unpacked`)."""
        binding = self._binding
        return binding.value if binding.kind == "assign" and not binding.path else None

    @property
    def unpacked(self) -> tuple[cst.BaseExpression, tuple[int, ...]] | None:
        """For a name that an assignment unpacks (`a, (b, c) = v`): the whole right-hand side
        `v` and the name's position in it (`c`: (1, 1)); None otherwise."""
        binding = self._binding
        if binding.kind == "assign" and binding.path and binding.value is not None:
            return binding.value, binding.path
        return None

    @property
    def site(self) -> Site:
        """Where the name is bound: the names of `value` resolve here."""
        return Site(self._binding.scope, self._binding.order)

    @property
    def annotation(self) -> cst.BaseExpression | None:
        """The annotation of a parameter or an annotated assignment."""
        return self._binding.annotation

    @property
    def annotation_site(self) -> Site:
        """Where the names of the annotation resolve: a parameter's annotation is evaluated
        where its function is defined, outside the function's body."""
        binding = self._binding
        if binding.kind == "param" and binding.scope.parent is not None:
            return Site(binding.scope.parent, binding.order)
        return self.site

    @property
    def function(self) -> cst.FunctionDef | cst.Lambda | None:
        """The function or lambda a parameter belongs to."""
        binding = self._binding
        if binding.kind in ("param", "star-param") and isinstance(binding.scope.node, (cst.FunctionDef, cst.Lambda)):
            return binding.scope.node
        return None

    @property
    def position(self) -> int | None:
        """A positional parameter's position (a method's `self` is 0); None otherwise."""
        binding = self._binding
        return binding.path[0] if binding.kind == "param" and binding.path else None


def record_of(definition: Definition) -> Binding:
    """The model's own record behind an answer (for the model's modules, never for rules)."""
    return definition._binding
