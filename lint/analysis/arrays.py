"""Is a value a JAX array (immutable), rather than a NumPy array (mutable in place)? Is a
traced value an array, rather than a Python value inside a traced pytree?

`Facts.kind` calls both ARRAY: an annotation `np.ndarray` or `Float[np.ndarray, "n"]`
declares an array too. Rules about JAX's array semantics (no item assignment) must not
fire on NumPy arrays, so they ask here.
"""

from __future__ import annotations

import dataclasses

import libcst as cst
from odelint.analysis import jax_api
from odelint.analysis.facts import _ARRAY_METHODS as ARRAY_METHODS
from odelint.analysis.facts import Facts, Kind, _at_receiver
from odelint.analysis.scopes import Binding, Site
from odelint.analysis.tracing import Traced

# Annotations that admit (or name) a NumPy array.
NUMPY_ANNOTATIONS = frozenset({"numpy.ndarray", "numpy.typing.NDArray", "numpy.typing.ArrayLike",
                                "jaxtyping.ArrayLike", "jax.typing.ArrayLike"})


def is_jax_array(facts: Facts, node: cst.BaseExpression, site: Site) -> bool:
    """Is the value of `node` known to be a JAX array, and never declared a NumPy one?"""
    if facts.kind(node, site) is not Kind.ARRAY:
        return False
    if isinstance(node, cst.Name):
        return not any(_declared_numpy(facts, binding) for binding in facts.lookup(node.value, site.scope))
    if isinstance(node, cst.Attribute):  # `self.registers` declared `np.ndarray` in the class body
        owner = facts._method_class_of_self(node.value, site.scope)
        body = facts.index.body_scope(owner) if owner is not None else None
        fields = body.bindings.get(node.attr.value, []) if body is not None else []
        return not any(_declared_numpy(facts, binding) for binding in fields)
    return True


def _declared_numpy(facts: Facts, binding: Binding) -> bool:
    annotation = binding.annotation
    if annotation is None:
        return False
    where = binding.scope.parent if binding.kind == "param" and binding.scope.parent else binding.scope
    names = [annotation]
    if isinstance(annotation, cst.Subscript):  # Float[np.ndarray, "n"]: the array type is inside
        names = [annotation.value] + [element.slice.value for element in annotation.slice
                                      if isinstance(element.slice, cst.Index)]
    return any(facts.qualname(name, where) in NUMPY_ANNOTATIONS for name in names)


def traced_array(facts: Facts, node: cst.BaseExpression, site: Site) -> Traced | None:
    """The traced parameter that makes the value of `node` a traced array, else None.

    `facts.traced_value` says that a value derives from a traced argument; a traced
    argument may be a pytree, and its attributes (`state.dynamic_scale`), `.keys()`, or
    what a helper computes from it (`is_tracer(x)`) may be Python values. This asks for
    values that are arrays: the traced names themselves, array kinds, their indexing,
    arithmetic, comparisons and array methods (`x.sum()`)."""
    traced = facts.traced_value(node, site)
    if traced is None or not _array_valued(facts, node, site, set()):
        return None
    return traced


def _array_valued(facts: Facts, node: cst.BaseExpression, site: Site, seen: set[int]) -> bool:
    kind = facts.kind(node, site)
    if kind is Kind.ARRAY:
        return True
    if kind is not Kind.UNKNOWN:
        return False
    if isinstance(node, cst.Name):
        bindings = facts.lookup(node.value, site.scope)
        before = [b for b in bindings if b.scope is site.scope and b.order < site.order]
        if before:  # the last assignment before a use in the same function is what it holds
            bindings = before[-1:]
        return any(_binding_array_valued(facts, binding, seen) for binding in bindings)
    if isinstance(node, cst.Subscript):
        return _array_valued(facts, node.value, site, seen)
    if isinstance(node, cst.Call):
        func = node.func
        return (isinstance(func, cst.Attribute) and func.attr.value in ARRAY_METHODS
                and _array_valued(facts, func.value, site, seen))
    if isinstance(node, cst.BinaryOperation):
        return _array_valued(facts, node.left, site, seen) or _array_valued(facts, node.right, site, seen)
    if isinstance(node, cst.UnaryOperation):
        return _array_valued(facts, node.expression, site, seen)
    if isinstance(node, cst.Comparison):
        return any(_array_valued(facts, part, site, seen)
                   for part in (node.left, *(c.comparator for c in node.comparisons)))
    return False


def _binding_array_valued(facts: Facts, binding: Binding, seen: set[int]) -> bool:
    """Parameters may hold arrays; assigned names hold what their value holds."""
    if id(binding) in seen:
        return False
    seen.add(id(binding))
    if binding.kind == "param":
        return True
    if binding.kind == "assign" and binding.value is not None:
        value = binding.value
        for position in binding.path:
            if not isinstance(value, (cst.Tuple, cst.List)) or position >= len(value.elements):
                break  # `a, b = carry` unpacks what `carry` holds
            value = value.elements[position].value
        return _array_valued(facts, value, Site(binding.scope, binding.order), seen)
    return binding.kind == "augassign"


# What `.at[...]` can hang on: a value the model knows to be none of these may be an array.
_NOT_ARRAYS = frozenset({Kind.MODULE, Kind.FILTERED, Kind.OPTAX, Kind.FUNCTION, Kind.PLAIN})


@dataclasses.dataclass(frozen=True)
class AtUpdate:
    """`x.at[i].set(v)`: `array` is `x` (in a chain `x.at[i].set(v).at[j].add(w)`, the `x`
    the chain starts from), `method` the update's name (`set`, `add`, ...)."""

    call: cst.Call
    array: cst.BaseExpression
    method: str


def at_update(facts: Facts, node: cst.BaseExpression, site: Site) -> AtUpdate | None:
    """`node` as a functional `.at[...]` update that returns an updated copy of an array,
    else None (`.at[i].get()`, or a receiver the model knows is no array)."""
    if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
        return None
    method = node.func.attr.value
    indexed = node.func.value
    if not jax_api.at_update(method) or _at_receiver(indexed) is indexed:
        return None
    array = _at_receiver(indexed)
    while (inner := at_update(facts, array, site)) is not None:
        array = inner.array
    if facts.kind(array, site) in _NOT_ARRAYS:
        return None
    return AtUpdate(node, array, method)


def rebindable_here(facts: Facts, node: cst.BaseExpression, site: Site) -> bool:
    """Would `node = ...` at `site` rebind the very variable `node` reads? Only for a plain
    name bound in the scope of `site` (rebinding a name of an enclosing scope, or one
    declared `global`/`nonlocal`, would make it local or reach outside)."""
    if not isinstance(node, cst.Name) or node.value in site.scope.global_names | site.scope.nonlocal_names:
        return False
    bindings = facts.lookup(node.value, site.scope)
    return bool(bindings) and all(binding.scope is site.scope for binding in bindings)
