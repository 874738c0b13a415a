"""Where a value is exactly zero at a point the program reaches.

`sqrt` and the Euclidean norm have no finite derivative at zero (`x / |x|` is 0/0), so a
gradient through them is NaN wherever their argument is exactly zero, even though the value
is right. The clearest such point is the diagonal of a pairwise difference: `x[:, None] -
x[None, :]` is zero wherever the two indices meet, so every pairwise distance matrix built
from it has a zero diagonal.
"""

from __future__ import annotations

import libcst as cst
from odelint.analysis import jax_api
from odelint.analysis.built import built_by
from odelint.analysis.calls import argument_for
from odelint.analysis.facts import Facts
from odelint.analysis.intervals import guard, number
from odelint.analysis.scopes import CLASS, Site, dotted_name


def pairwise_difference(facts: Facts, node: cst.BaseExpression, site: Site, depth: int = 0) -> str | None:
    """`x` when `node` is `x[:, None] - x[None, :]` (any placement of the new axes that
    differs between the two sides), or a name of this function last assigned one."""
    if depth > 3:
        return None
    if isinstance(node, cst.Name):
        bindings = facts.lookup(node.value, site.scope)
        before = [b for b in bindings if b.scope is site.scope and b.order < site.order][-1:]
        if before and before[0].kind == "assign" and not before[0].path and before[0].value is not None:
            return pairwise_difference(facts, before[0].value, Site(before[0].scope, before[0].order), depth + 1)
        return None
    if not isinstance(node, cst.BinaryOperation) or not isinstance(node.operator, cst.Subtract):
        return None
    left, right = _new_axes(node.left), _new_axes(node.right)
    if left is None or right is None or left[0] != right[0] or left[1] == right[1]:
        return None
    return left[0]


def squared_pairwise_difference(facts: Facts, node: cst.BaseExpression, site: Site) -> str | None:
    """`x` when `node` sums the squares of a pairwise difference of `x`: `jnp.sum(d ** 2, -1)`,
    `(d * d).sum(-1)`, `jnp.sum(jnp.square(d), axis=-1)`, with `d = x[:, None] - x[None, :]`."""
    if not isinstance(node, cst.Call):
        return None
    func = node.func
    if jax_api.sums(facts.qualname(func, site.scope)) and node.args and node.args[0].keyword is None:
        summed = node.args[0].value
    elif isinstance(func, cst.Attribute) and jax_api.sum_method(func.attr.value):
        summed = func.value
    else:
        return None
    return _square_of_pairwise(facts, summed, site)


def _square_of_pairwise(facts: Facts, node: cst.BaseExpression, site: Site) -> str | None:
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, cst.Power) and isinstance(node.right, cst.Integer) and node.right.value == "2":
            return pairwise_difference(facts, node.left, site)
        if isinstance(node.operator, cst.Multiply) and dotted_name(node.left) and (
                dotted_name(node.left) == dotted_name(node.right)):
            return pairwise_difference(facts, node.left, site)
    if isinstance(node, cst.Call) and jax_api.squares(facts.qualname(node.func, site.scope)) and node.args:
        return pairwise_difference(facts, node.args[0].value, site)
    return None


def _new_axes(node: cst.BaseExpression) -> tuple[str, tuple[bool, ...]] | None:
    """(`x`, where the `None` axes are) for `x[:, None]`, `x[None]`, `x[None, :, :]`."""
    if not isinstance(node, cst.Subscript):
        return None
    base = dotted_name(node.value)
    if base is None:
        return None
    placement = []
    for element in node.slice:
        index = element.slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.Name) and index.value.value == "None":
            placement.append(True)
        elif _whole_axis(index):
            placement.append(False)
        else:
            return None
    return (base, tuple(placement)) if any(placement) else None


def _whole_axis(index: cst.BaseSlice) -> bool:
    """`:` or `...`: an index that keeps the axes as they are."""
    if isinstance(index, cst.Slice):
        return index.lower is None and index.upper is None and index.step is None
    return isinstance(index, cst.Index) and isinstance(index.value, cst.Ellipsis)


# A test against a constant this small (`n > 1e-8`) is a test for zero.
ZERO_TOLERANCE = 1e-6


def tested_for_zero(facts: Facts, test: cst.BaseExpression, site: Site) -> tuple[cst.BaseExpression, Site] | None:
    """For `n > 0` (`n == 0`, `n <= 1e-8`, ...), where `n` is a name this function last
    assigned before the test: the value assigned and where. The code itself expects `n` to
    be zero at some point it reaches."""
    found = guard(test)
    if found is None or not isinstance(found[1], cst.Name):
        return None
    constant = number(test.comparisons[0].comparator) if isinstance(test, cst.Comparison) else None
    if constant is None and isinstance(test, cst.Comparison):
        constant = number(test.left)
    if constant is None or not 0.0 <= constant <= ZERO_TOLERANCE:
        return None
    bindings = facts.lookup(found[0], site.scope)
    before = [b for b in bindings if b.scope is site.scope and b.order < site.order][-1:]
    if not before or before[0].kind != "assign" or before[0].path or before[0].value is None:
        return None
    return before[0].value, Site(before[0].scope, before[0].order)


def zero_filled_parameter(facts: Facts, node: cst.BaseExpression, site: Site) -> tuple[str, cst.Call] | None:
    """(the parameter's name, the call) when `node` is a parameter of a function that a call of
    this file fills with an array of zeros (`jnp.zeros(3)`, `jnp.zeros_like(w)`, or a name
    assigned one), directly or through a transform (`jax.grad(loss)(jnp.zeros(3))`): the
    program reaches the point where the value is exactly zero."""
    if not isinstance(node, cst.Name):
        return None
    bindings = facts.lookup(node.value, site.scope)
    if len(bindings) != 1 or bindings[0].kind != "param":
        return None
    binding = bindings[0]
    function = binding.scope.node
    if not isinstance(function, cst.FunctionDef) or binding.scope.parent is None:
        return None
    bound = 1 if binding.scope.parent.kind == CLASS else 0
    zeros = jax_api.names("zero_arrays")
    for call, call_site in facts.arguments_of(function):
        argument = argument_for(call, binding, bound)
        built = built_by(facts, argument, call_site) if argument is not None else None
        if built is not None and facts.qualname(built.call.func, built.site.scope) in zeros:
            return binding.name, call
    return None
