"""What the custom-derivative rules (ODL101, ODL102) share: where a derivative rule is
registered on a function (`@f.defjvp`, `f.def_jvp(rule)`), and the one `def` a name means."""

from __future__ import annotations

import dataclasses

import libcst as cst
from odelint.analysis import DefinedAs, Definition, Facts, Site

REGISTER_METHODS = frozenset({"defjvp", "def_jvp", "defjvps", "defvjp"})


@dataclasses.dataclass(frozen=True)
class Registration:
    """`owner.method` used as a decorator of `rule`, or called as `owner.method(rule)`."""

    owner: cst.Name
    attribute: cst.Attribute
    site: Site
    rule: cst.FunctionDef | None          # the rule's definition, when it is one of this file
    decorator: cst.Decorator | None       # set for the decorator form
    call: cst.Call | None                 # set for the call form


class Registrations:
    """Collects every registration of a file while the rule's visitors run."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.found: list[Registration] = []

    def visit_function(self, node: cst.FunctionDef, site: Site) -> None:
        for decorator in node.decorators:
            attribute = _register_attribute(decorator.decorator)
            if attribute is not None:
                owner: cst.Name = attribute.value  # type: ignore[assignment]
                self.found.append(Registration(owner, attribute, site, node, decorator, None))

    def visit_call(self, node: cst.Call, site: Site) -> None:
        attribute = _register_attribute(node.func)
        if attribute is None:
            return
        rule = None
        if len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star:
            rule = single_def(self.facts, node.args[0].value, site)
        owner: cst.Name = attribute.value  # type: ignore[assignment]
        self.found.append(Registration(owner, attribute, site, rule, None, node))

    def of(self, definition: Definition, methods: frozenset[str] = REGISTER_METHODS) -> list[Registration]:
        return [r for r in self.found if r.attribute.attr.value in methods
                and self.facts.definitions(r.owner, r.site) == (definition,)]


def _register_attribute(node: cst.BaseExpression) -> cst.Attribute | None:
    if (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)
            and node.attr.value in REGISTER_METHODS):
        return node
    return None


def single_def(facts: Facts, node: cst.BaseExpression, site: Site) -> cst.FunctionDef | None:
    """The function definition a name means, when it has exactly one definition, a `def`."""
    found = facts.definition(node, site) if isinstance(node, cst.Name) else None
    if found is not None and found.what is DefinedAs.FUNCTION:
        return found.node  # type: ignore[return-value]
    return None


def positional_params(params: cst.Parameters) -> list[cst.Param]:
    return [*params.posonly_params, *params.params]
