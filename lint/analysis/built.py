"""Which call built a value, so that rules can read the constructor's arguments.

`solver` holds `diffrax.Kvaerno5()` after `solver = diffrax.Kvaerno5()`, and also inside
`def integrate(term, solver): ...` when every call of `integrate` in this file passes the same
construction (`integrate(term, diffrax.Kvaerno5())`). `Built.via` says which parameter the
value crossed, for messages that name where it came from.
"""

from __future__ import annotations

import dataclasses

import libcst as cst
from odelint.analysis.calls import argument_for
from odelint.analysis.facts import Facts
from odelint.analysis.scopes import CLASS, Binding, Site


@dataclasses.dataclass(frozen=True)
class Built:
    call: cst.Call
    site: Site              # where the names in `call` resolve
    via: str | None = None  # "passed as `solver` to `integrate`" when it crossed a call


def built_by(facts: Facts, node: cst.BaseExpression, site: Site) -> Built | None:
    """The call that builds the value of `node` at `site`: the expression itself, the one
    assignment of a name, or what every call of the file passes for a parameter; None when unknown."""
    return _built(facts, node, site, frozenset())


def _built(facts: Facts, node: cst.BaseExpression, site: Site, seen: frozenset[int]) -> Built | None:
    if isinstance(node, cst.Call):
        return Built(node, site)
    if not isinstance(node, cst.Name) or id(node) in seen:
        return None
    bindings = facts.lookup(node.value, site.scope)
    if len(bindings) != 1:
        return None
    binding = bindings[0]
    if binding.kind == "assign" and not binding.path and binding.value is not None:
        return _built(facts, binding.value, Site(binding.scope, binding.order), seen | {id(node)})
    if binding.kind == "param":
        return _passed(facts, binding, seen | {id(node)})
    return None


def _passed(facts: Facts, binding: Binding, seen: frozenset[int]) -> Built | None:
    """The one construction every call of the function passes for this parameter."""
    function = binding.scope.node
    if not isinstance(function, cst.FunctionDef) or binding.scope.parent is None or not binding.path:
        return None
    bound = 1 if binding.scope.parent.kind == CLASS else 0
    found: Built | None = None
    for call, site in facts.calls_of(function):
        argument = argument_for(call, binding, bound)
        built = _built(facts, argument, site, seen) if argument is not None else None
        if built is None or (found is not None and not found.call.deep_equals(built.call)):
            return None  # a call passes something unknown, or two calls disagree
        found = found or built
    if found is None:
        return None
    return Built(found.call, found.site, f"passed as `{binding.name}` to `{function.name.value}`")
