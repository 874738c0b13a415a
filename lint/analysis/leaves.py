"""Which leaves of an Equinox module are not arrays, named by their path in the module.

`jax.jit`, `jax.grad` and optax's `init` see every leaf of a module's pytree: a function
leaf (`eqx.nn.MLP`'s `activation`, a `Callable` field, a stored `jax.vmap(f)`) or a string
crashes them, while Python numbers are traced like arrays. Fields declared with
`eqx.field(static=True)` are not leaves. Classes of this file are read from their field
annotations and `__init__` assignments; library classes (equinox.nn, diffrax, lineax,
optimistix) from lint/analysis/data/library_modules.toml.
"""

from __future__ import annotations

import dataclasses
import enum

import libcst as cst
from odelint.analysis import jax_api
from odelint.analysis.calls import argument_at
from odelint.analysis.facts import Facts, Kind, ModuleClass
from odelint.analysis.scopes import Site

MAX_DEPTH = 4


class LeafKind(enum.Enum):
    FUNCTION = "a function"
    STRING = "a string"
    SCALAR = "a Python number"

    @property
    def crashes_transforms(self) -> bool:
        """Does `jax.jit`/`jax.grad`/optax `init` fail on a leaf of this kind?"""
        return self is not LeafKind.SCALAR


@dataclasses.dataclass(frozen=True)
class Leaf:
    path: str              # `activation`, `mlp.activation`, `layers[0].activation`
    kind: LeafKind
    detail: str = ""       # what the field holds, when known: "`jax.nn.relu`", "a `jax.vmap` result"
    transform: str | None = None  # the transform whose result the field holds (`jax.vmap`)

    def describe(self, owner: str) -> str:
        held = f" ({self.detail})" if self.detail else ""
        return f"`{owner}.{self.path}` is {self.kind.value}{held}"


class Leaves:
    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self._cache: dict[ModuleClass, tuple[Leaf, ...]] = {}

    def non_array(self, module_class: ModuleClass, depth: int = 0) -> tuple[Leaf, ...]:
        """The leaves of an instance of `module_class` that are not arrays."""
        if module_class.facts is not None and module_class.facts is not self.facts:
            return module_class.facts.non_array_leaves(module_class)  # a class of another file
        if module_class in self._cache:
            return self._cache[module_class]
        self._cache[module_class] = ()  # cycle guard
        if depth > MAX_DEPTH:
            return ()
        if module_class.built is not None:
            found = self._layers(module_class.built[0], module_class.built[1], depth)
        elif module_class.node is None:
            found = self._library(module_class.name, depth)
        else:
            found = self._own(module_class.node, depth)
        self._cache[module_class] = found
        return found

    def crashing(self, module_class: ModuleClass) -> tuple[Leaf, ...]:
        """The leaves that make `jax.jit`/`jax.grad`/optax `init` raise."""
        return tuple(leaf for leaf in self.non_array(module_class) if leaf.kind.crashes_transforms)

    def _library(self, qualname: str, depth: int) -> tuple[Leaf, ...]:
        row = jax_api.library_module(qualname)
        if row is None:
            return ()
        found = [Leaf(name, LeafKind.FUNCTION) for name in row.functions]
        found += [Leaf(name, LeafKind.SCALAR) for name in row.scalars]
        for name, inner in row.modules:
            many = inner.endswith("[]")
            path = f"{name}[0]" if many else name
            found += _nested(path, self.non_array(ModuleClass(None, inner.rstrip("[]")), depth + 1))
        return tuple(found)

    def _layers(self, call: cst.Call, site: Site, depth: int) -> tuple[Leaf, ...]:
        """`eqx.nn.Sequential([eqx.nn.Linear(...), jax.nn.relu, eqx.nn.Lambda(f)])`: the leaves of
        each layer given, under `layers[i]` (a bare function is itself a function leaf)."""
        given = argument_at(call, "layers", 0)
        if given is None or not isinstance(given.value, (cst.List, cst.Tuple, cst.ListComp)):
            return ()
        return tuple(self._from_value("layers", given.value, site, depth + 1))

    def _own(self, cls: cst.ClassDef, depth: int) -> tuple[Leaf, ...]:
        facts = self.facts
        scope = facts.index.body_scope(cls)
        if scope is None:
            return ()
        found: dict[str, Leaf | None] = {}
        for base in cls.bases:  # fields of this file's module bases come first, as in the dataclass
            parent = facts.module_type(base.value, scope.parent or scope)
            if parent is not None and parent.node is not None:
                for leaf in self.non_array(parent, depth):
                    found.setdefault(leaf.path, leaf)
        declared = set()
        for name, bindings in scope.bindings.items():
            for binding in bindings:
                if binding.kind != "assign" or binding.annotation is None:
                    continue
                declared.add(name)
                if _is_static_field(facts, binding.value, scope):
                    found[name] = None
                    continue
                kind = facts.annotation_kind(binding.annotation, scope)
                leaves = self._from_kind(name, kind, binding.annotation, Site(scope, binding.order), depth,
                                         annotation=True)
                if leaves is not None:
                    found[name] = None
                    for leaf in leaves:
                        found[leaf.path] = leaf
        init = next((item for item in cls.body.body
                     if isinstance(item, cst.FunctionDef) and item.name.value == "__init__"), None)
        init_scope = facts.index.body_scope(init) if init is not None else None
        if init is not None and init_scope is not None:
            for name, value in _self_assignments(init):
                if name in found and found[name] is None and name in declared and not _annotation_unknown(
                        facts, scope, name) and not _annotated_module(facts, scope, name):
                    continue
                site = Site(init_scope, 10**9)
                leaves = self._from_value(name, value, site, depth)
                for leaf in leaves:
                    declared_leaf = found.get(leaf.path)
                    if declared_leaf is None or declared_leaf.kind is leaf.kind:  # the annotation's kind wins
                        found[leaf.path] = leaf
        return tuple(leaf for leaf in found.values() if leaf is not None)

    def _from_kind(self, name: str, kind: Kind, node: cst.BaseExpression, site: Site, depth: int,
                   annotation: bool = False) -> list[Leaf] | None:
        """Leaves for a field of known kind; None when the kind says nothing."""
        facts = self.facts
        if kind is Kind.FUNCTION:
            return [Leaf(name, LeafKind.FUNCTION)]
        if kind in (Kind.ARRAY, Kind.KEY, Kind.FILTERED):
            return []
        if kind is Kind.MODULE:
            inner = (facts.module_type(_outer(node), site.scope) if annotation else facts.module_class(node, site))
            return _nested(name, self.non_array(inner, depth + 1)) if inner is not None else []
        if kind is Kind.PLAIN:
            outer = _outer(node)
            if (isinstance(outer, cst.Name) and outer.value == "str") or isinstance(node, cst.BaseString):
                return [Leaf(name, LeafKind.STRING)]
            if isinstance(node, cst.Name) and node.value == "None":
                return []
            return [Leaf(name, LeafKind.SCALAR)]
        return None

    def _from_value(self, name: str, value: cst.BaseExpression, site: Site, depth: int) -> list[Leaf]:
        facts = self.facts
        if isinstance(value, (cst.List, cst.Tuple)):
            leaves = []
            for position, element in enumerate(value.elements):
                leaves += self._from_value(f"{name}[{position}]", element.value, site, depth)
            return leaves
        if isinstance(value, cst.ListComp):
            return self._from_value(f"{name}[0]", value.elt, site, depth)
        kind = facts.kind(value, site)
        found = self._from_kind(name, kind, value, site, depth)
        if found and kind is Kind.FUNCTION:
            qualname = facts.qualname(value.func, site.scope) if isinstance(value, cst.Call) else None
            transform = qualname if jax_api.transform(qualname) is not None else None
            return [Leaf(name, LeafKind.FUNCTION, _describe_function(facts, value, site), transform)]
        if found is None and isinstance(value, (cst.Name, cst.Attribute)):
            qualname = facts.qualname(value, site.scope)
            if qualname and jax_api.library_function(qualname):
                return [Leaf(name, LeafKind.FUNCTION, f"`{qualname}`")]
        return found or []


def _nested(prefix: str, leaves: tuple[Leaf, ...]) -> list[Leaf]:
    return [dataclasses.replace(leaf, path=f"{prefix}.{leaf.path}") for leaf in leaves]


def _outer(node: cst.BaseExpression) -> cst.BaseExpression:
    return node.value if isinstance(node, cst.Subscript) else node


def _is_static_field(facts: Facts, value: cst.BaseExpression | None, scope) -> bool:
    """`eqx.field(static=True)` or the old `eqx.static_field()`."""
    if not isinstance(value, cst.Call):
        return False
    qualname = facts.qualname(value.func, scope)
    if qualname == "equinox.static_field":
        return True
    if qualname != "equinox.field":
        return False
    return any(arg.keyword is not None and arg.keyword.value == "static" and isinstance(arg.value, cst.Name)
               and arg.value.value == "True" for arg in value.args)


def _annotated_module(facts: Facts, scope, name: str) -> bool:
    """Is the field annotated with a module type (`eqx.Module`, an abstract base)? A concrete
    module its `__init__` assigns is then what the field holds, with the leaves of its class."""
    return any(b.annotation is not None and facts.annotation_kind(b.annotation, scope) is Kind.MODULE
               for b in scope.bindings.get(name, []))


def _annotation_unknown(facts: Facts, scope, name: str) -> bool:
    return all(b.annotation is None or facts.annotation_kind(b.annotation, scope) is Kind.UNKNOWN
               for b in scope.bindings.get(name, []))


def _self_assignments(init: cst.FunctionDef):
    """(field, value) for every `self.<field> = value` at the top level of `__init__`."""
    for statement in init.body.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = small.targets[0].target
                if (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                        and target.value.value == "self"):
                    yield target.attr.value, small.value


def _describe_function(facts: Facts, value: cst.BaseExpression, site: Site) -> str:
    if isinstance(value, cst.Call):
        qualname = facts.qualname(value.func, site.scope)
        return f"a `{qualname}` result" if qualname else ""
    qualname = facts.qualname(value, site.scope)
    return f"`{qualname}`" if qualname else ""


@dataclasses.dataclass(frozen=True)
class InvalidLeaf:
    """An Equinox module inside a pytree, with a leaf of it that is not a valid JAX type."""

    module: cst.BaseExpression   # the module's expression (`model`, or `model` in `(model, x)`)
    leaf: Leaf                   # its first leaf that is a function or a string
    more: int = 0                # how many more such leaves it has


def module_with_invalid_leaf(facts: Facts, value: cst.BaseExpression, site: Site,
                             depth: int = 0) -> InvalidLeaf | None:
    """An Equinox module in the pytree `value` whose known class has a leaf that `lax`
    control flow and `jit` reject as "not a valid JAX type" (a function, a string): `value`
    itself, an element of a tuple, list or dict display, or of the display a name of this
    function holds. None when no module is known to hold one (unknown classes included)."""
    if depth > MAX_DEPTH:
        return None
    elements: list[cst.BaseExpression] = []
    if isinstance(value, (cst.Tuple, cst.List)):
        elements = [element.value for element in value.elements if isinstance(element, cst.Element)]
    elif isinstance(value, cst.Dict):
        elements = [element.value for element in value.elements if isinstance(element, cst.DictElement)]
    elif isinstance(value, cst.Name):
        bindings = facts.lookup(value.value, site.scope)
        before = [b for b in bindings if b.scope is site.scope and b.order < site.order][-1:]
        if before and before[0].kind == "assign" and not before[0].path and isinstance(
                before[0].value, (cst.Tuple, cst.List, cst.Dict)):
            return module_with_invalid_leaf(facts, before[0].value, Site(before[0].scope, before[0].order), depth + 1)
    for element in elements:
        found = module_with_invalid_leaf(facts, element, site, depth + 1)
        if found is not None:
            return found
    if elements or not facts.is_module(value, site):
        return None
    module_class = facts.module_class(value, site)
    leaves = facts.non_array_leaves(module_class) if module_class else ()
    bad = [leaf for leaf in leaves if leaf.kind.crashes_transforms]
    return InvalidLeaf(value, bad[0], len(bad) - 1) if bad else None


def filtered_source(facts: Facts, node: cst.BaseExpression, site: Site) -> cst.BaseExpression | None:
    """The module a filtered tree was made from: `model` for `eqx.filter(model, ...)`, or for a
    name of this function last assigned `eqx.filter(model, ...)` or `eqx.partition(model, ...)[0]`."""
    found = _filtering(facts, node, site)
    return _argument(found[0], 0) if found is not None else None


def every_array_of(facts: Facts, node: cst.BaseExpression, site: Site) -> cst.BaseExpression | None:
    """The module whose arrays this filtered tree holds, all of them: `model` for
    `eqx.filter(model, eqx.is_array)` (or `is_inexact_array`; by position or as
    `filter_spec=`/`pytree=`), not for a filter spec that may leave fields out, nor for
    `inverse=True` (everything but the arrays)."""
    found = _filtering(facts, node, site)
    if found is None:
        return None
    call, where = found
    spec = argument_at(call, "filter_spec", 1)
    if spec is None or facts.qualname(spec.value, where.scope) not in jax_api.names("eqx_array_filters"):
        return None
    if facts.qualname(call.func, where.scope) == "equinox.filter":
        inverse = argument_at(call, "inverse", 2)
        if inverse is not None and not (isinstance(inverse.value, cst.Name) and inverse.value.value == "False"):
            return None
    tree = argument_at(call, "pytree", 0)
    return tree.value if tree is not None else None


def _filtering(facts: Facts, node: cst.BaseExpression, site: Site) -> tuple[cst.Call, Site] | None:
    """The `eqx.filter`/`eqx.partition` call a filtered tree comes from, and where it is."""
    path: tuple[int, ...] = ()
    if isinstance(node, cst.Name):
        bindings = facts.lookup(node.value, site.scope)
        before = [b for b in bindings if b.scope is site.scope and b.order < site.order][-1:]
        if not before or before[0].kind != "assign" or before[0].value is None:
            return None
        node, path, site = before[0].value, before[0].path, Site(before[0].scope, before[0].order)
    if not isinstance(node, cst.Call):
        return None
    qualname = facts.qualname(node.func, site.scope)
    if (qualname, path) not in (("equinox.filter", ()), ("equinox.partition", (0,))):
        return None
    return node, site


def _argument(call: cst.Call, position: int) -> cst.BaseExpression | None:
    """The positional argument at `position`, when the call gives it plainly."""
    args = call.args
    if len(args) <= position or any(arg.keyword is not None or arg.star for arg in args[:position + 1]):
        return None
    return args[position].value
