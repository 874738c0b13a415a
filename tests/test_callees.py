"""Rules that declare the calls their `visit_Call` reads (`Rule.callees`): the engine hands
them exactly those calls, found through imports and aliases, in source order, and a rule's
findings do not depend on the declaration."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from odelint.analysis.facts import Facts
from odelint.analysis.scopes import build_scope_index
from odelint.api.registry import all_rules
from odelint.api.rule import Callees, Flag, Rule
from odelint.engine.core import DeclaredNodes, lint_source

SOURCE = textwrap.dedent("""
    import diffrax as dfx
    from diffrax import diffeqsolve as solve
    import optax

    def helper(tx, state):
        return tx.update(None, state)

    sol = dfx.diffeqsolve(term, solver, 0, 1, 0.1, y0)
    optax.adam(1e-3).init(params)
    again = solve(term, solver, 0, 1, 0.1, y0)
    diffeqsolve(term)  # a name that is not diffrax's
""")


class _Declares(Rule):
    @classmethod
    def callees(cls) -> Callees:
        return Callees(names=frozenset({"diffrax.diffeqsolve"}), methods=frozenset({"update", "init"}))


def _declared(source: str) -> list[str]:
    module = cst.parse_module(source)
    calls = DeclaredNodes(Facts(build_scope_index(module, {cst.Call})))
    found = calls.calls(_Declares)
    assert found is not None
    return [module.code_for_node(node.func) for node, _ in found]  # type: ignore[attr-defined]


def test_declared_calls_are_found_through_aliases_and_by_method_in_source_order() -> None:
    assert _declared(SOURCE) == ["tx.update", "dfx.diffeqsolve", "optax.adam(1e-3).init", "solve"]


def test_declared_prefixes_find_every_function_under_them_and_nothing_else() -> None:
    class Prefixed(Rule):
        @classmethod
        def callees(cls) -> Callees:
            return Callees(names=frozenset({"optax.adam"}), prefixes=("numpy.random.", "random."))

    source = textwrap.dedent("""
        import numpy as np, random, optax
        from numpy.random import normal as draw
        np.random.uniform(0, 1)
        randomness(1)
        draw(0, 1)
        random.random()
        optax.adam(1e-3)
        np.randomly(1)
    """)
    module = cst.parse_module(source)
    found = DeclaredNodes(Facts(build_scope_index(module, {cst.Call}))).calls(Prefixed)
    assert found is not None
    assert [module.code_for_node(node.func) for node, _ in found] == [  # type: ignore[attr-defined]
        "np.random.uniform", "draw", "random.random", "optax.adam"]


def test_a_rule_without_a_declaration_sees_every_call() -> None:
    module = cst.parse_module(SOURCE)
    assert DeclaredNodes(Facts(build_scope_index(module, {cst.Call}))).calls(Rule) is None


DECLARING = [rule for rule in all_rules() if issubclass(rule, Rule) and rule.callees() is not None]


def test_some_rules_declare_their_callees() -> None:
    assert len(DECLARING) >= 10


@pytest.mark.parametrize("rule", DECLARING, ids=lambda rule: rule.code)
def test_a_declaration_changes_no_finding(rule: type[Rule], monkeypatch: pytest.MonkeyPatch) -> None:
    """Each Flag example gives the same findings when the rule is handed every call."""
    flags = [example for example in rule.examples if isinstance(example, Flag)]
    declared = [lint_source(example.code, example.filename, {rule.code}).findings for example in flags]
    monkeypatch.setattr(rule, "callees", classmethod(lambda cls: None))
    every = [lint_source(example.code, example.filename, {rule.code}).findings for example in flags]
    assert [[(f.code, f.span, f.message) for f in found] for found in declared] == \
        [[(f.code, f.span, f.message) for f in found] for found in every]
    assert any(declared) or not any(isinstance(example, Flag) for example in rule.examples)
    assert all(declared), "every Flag example is flagged"


ATTRIBUTES = [rule for rule in all_rules() if issubclass(rule, Rule) and rule.attributes() is not None]


def test_rules_declare_the_attributes_they_read_and_see_only_those() -> None:
    assert {rule.code for rule in ATTRIBUTES} >= {"ODL707", "ODL901"}
    module = cst.parse_module("import jax\njax.config.jax_enable_x64 = True\nx = jax.numpy.float64\n")
    nodes = DeclaredNodes(Facts(build_scope_index(module, {cst.Attribute})))
    [odl707] = [rule for rule in ATTRIBUTES if rule.code == "ODL707"]
    found = nodes.attributes(odl707)
    assert found is not None
    assert [module.code_for_node(node) for node, _ in found] == ["jax.config.jax_enable_x64"]
    assert nodes.attributes(Rule) is None
    source = "import jax\nx = jax.numpy.float64\n"
    module = cst.parse_module(source)
    named_by_text = DeclaredNodes(Facts(build_scope_index(module, {cst.Attribute})), source)
    assert named_by_text.attributes(odl707) == [] and named_by_text._by_attribute is None  # not in the text
    assert DeclaredNodes(Facts(build_scope_index(module, {cst.Attribute})), source).attributes(Rule) is None


@pytest.mark.parametrize("rule", ATTRIBUTES, ids=lambda rule: rule.code)
def test_an_attribute_declaration_changes_no_finding(rule: type[Rule], monkeypatch: pytest.MonkeyPatch) -> None:
    """Each example gives the same findings when the rule is handed every attribute."""
    declared = [lint_source(example.code, example.filename, {rule.code}).findings for example in rule.examples]
    monkeypatch.setattr(rule, "attributes", classmethod(lambda cls: None))
    every = [lint_source(example.code, example.filename, {rule.code}).findings for example in rule.examples]
    assert [[(f.code, f.span, f.message) for f in found] for found in declared] == \
        [[(f.code, f.span, f.message) for f in found] for found in every]
    assert any(declared) or not any(isinstance(example, Flag) for example in rule.examples)
