"""Modules with leaves that are not arrays inside the operands of lax control flow
(odelint.analysis.leaves.module_with_invalid_leaf, odelint.analysis.calls.operand_args)."""

from __future__ import annotations

import textwrap

import libcst as cst
from odelint.analysis import jax_api
from odelint.analysis.calls import operand_args
from odelint.analysis.facts import Facts
from odelint.analysis.leaves import module_with_invalid_leaf
from odelint.analysis.scopes import Site, build_scope_index

SOURCE = """
import equinox as eqx
import jax
import jax.numpy as jnp

mlp = eqx.nn.MLP(2, 2, 8, 2, key=None)
lin = eqx.nn.Linear(2, 2, key=None)
params = eqx.filter(mlp, eqx.is_array)
pair = (lin, mlp)
"""


def _facts() -> tuple[Facts, Site]:
    index = build_scope_index(cst.parse_module(textwrap.dedent(SOURCE)), {cst.Call})
    return Facts(index), Site(index.module_scope, 10**9)


def test_a_module_holding_functions_is_found_in_the_pytree_it_is_part_of() -> None:
    facts, site = _facts()

    def found(code: str) -> tuple[str, str, int] | None:
        hit = module_with_invalid_leaf(facts, cst.parse_expression(code), site)
        return None if hit is None else (cst.Module([]).code_for_node(hit.module), hit.leaf.path, hit.more)

    assert found("mlp") == ("mlp", "activation", 1)
    assert found("(jnp.zeros(2), [mlp])") == ("mlp", "activation", 1)
    assert found("{'model': mlp}") == ("mlp", "activation", 1)
    assert found("pair") == ("mlp", "activation", 1)          # a name holding a tuple display
    assert found("lin") is None and found("params") is None and found("(lin, 0.0)") is None
    assert found("unknown") is None


def test_operands_are_read_by_position_and_by_keyword() -> None:
    def operands(code: str, qualname: str) -> list[tuple[str, str]]:
        body = jax_api.traced_body(qualname)
        assert body is not None
        call = cst.parse_expression(code)
        assert isinstance(call, cst.Call)
        return [(label, cst.Module([]).code_for_node(value)) for label, value in operand_args(call, body)]

    assert operands("scan(f, c, xs)", "jax.lax.scan") == [("init", "c"), ("xs", "xs")]
    assert operands("scan(f, init=c, length=3)", "jax.lax.scan") == [("init", "c")]
    assert operands("cond(p, f, g, a, b)", "jax.lax.cond") == [("operand", "a"), ("operand", "b")]
    assert operands("switch(i, fs, a)", "jax.lax.switch") == [("operand", "a")]
    assert operands("fori_loop(0, n, f, v)", "jax.lax.fori_loop") == [("init_val", "v")]
    assert operands("while_loop(c, b, init_val=v)", "jax.lax.while_loop") == [("init_val", "v")]
    assert operands("map(f, xs)", "jax.lax.map") == [("xs", "xs")]


GRADIENTS = """
import equinox as eqx
import jax

model = eqx.nn.MLP(2, 1, 8, 2, key=None)

def loss(m):
    return m(1.0)

grads = eqx.filter_grad(loss)(model)
value, g2 = eqx.filter_value_and_grad(loss)(model)
g3, aux = eqx.filter_grad(loss, has_aux=True)(model)
plain = jax.grad(loss)(model)
of_number = eqx.filter_grad(loss)(1.0)
params = eqx.filter(model, eqx.is_array)
arrays, static = eqx.partition(model, eqx.is_array)
"""


def test_filtered_gradients_of_a_module_are_filtered_trees() -> None:
    from odelint.analysis.facts import Kind

    index = build_scope_index(cst.parse_module(textwrap.dedent(GRADIENTS)), {cst.Call})
    facts = Facts(index)
    site = Site(index.module_scope, 10**9)

    def kind(code: str) -> Kind:
        return facts.kind(cst.parse_expression(code), site)

    assert kind("grads") is Kind.FILTERED and kind("g2") is Kind.FILTERED and kind("g3") is Kind.FILTERED
    assert kind("eqx.filter_value_and_grad(loss)(model)[1]") is Kind.FILTERED
    assert kind("value") is not Kind.FILTERED and kind("aux") is not Kind.FILTERED
    assert kind("plain") is not Kind.FILTERED and kind("of_number") is not Kind.FILTERED


def test_the_module_a_filtered_tree_came_from() -> None:
    from odelint.analysis.leaves import filtered_source

    index = build_scope_index(cst.parse_module(textwrap.dedent(GRADIENTS)), {cst.Call})
    facts = Facts(index)
    site = Site(index.module_scope, 10**9)

    def source(code: str) -> str | None:
        found = filtered_source(facts, cst.parse_expression(code), site)
        return None if found is None else cst.Module([]).code_for_node(found)

    assert source("params") == "model" and source("arrays") == "model"
    assert source("eqx.filter(model, eqx.is_inexact_array)") == "model"
    assert source("static") is None and source("grads") is None and source("model") is None
    assert jax_api.tree_map("jax.tree.map") and jax_api.tree_map("jax.tree_util.tree_map")
    assert not jax_api.tree_map("jax.tree_util.tree_leaves")


def test_a_filtered_tree_of_every_array_of_a_module() -> None:
    from odelint.analysis.leaves import every_array_of

    code = GRADIENTS + ("spec = jax.tree_util.tree_map(lambda _: True, model)\n"
                        "some, rest = eqx.partition(model, spec)\n"
                        "kept, dropped = eqx.partition(model, filter_spec=eqx.is_inexact_array)\n")
    index = build_scope_index(cst.parse_module(textwrap.dedent(code)), {cst.Call})
    facts = Facts(index)
    site = Site(index.module_scope, 10**9)

    def source(code: str) -> str | None:
        found = every_array_of(facts, cst.parse_expression(code), site)
        return None if found is None else cst.Module([]).code_for_node(found)

    assert source("params") == "model" and source("arrays") == "model"
    assert source("eqx.filter(model, eqx.is_inexact_array)") == "model"
    # a filter spec may leave fields out; not a filtered tree
    assert source("some") is None and source("eqx.filter(model, spec)") is None and source("model") is None
    # the keyword spellings of the same call
    assert source("eqx.filter(model, filter_spec=eqx.is_array)") == "model"
    assert source("eqx.filter(pytree=model, filter_spec=eqx.is_inexact_array)") == "model"
    assert source("eqx.filter(model, eqx.is_array, inverse=False)") == "model"
    assert source("kept") == "model" and source("dropped") is None
    assert source("eqx.filter(model, filter_spec=spec)") is None
    # `inverse=True` keeps everything but the arrays
    assert source("eqx.filter(model, eqx.is_array, inverse=True)") is None
    assert source("eqx.filter(model, eqx.is_array, True)") is None
    assert source("eqx.filter(model, filter_spec=eqx.is_array, inverse=flag)") is None


def test_the_calls_that_build_a_class_of_this_file() -> None:
    from odelint.analysis.classes import constructions

    code = textwrap.dedent("""
        import equinox as eqx

        class Model(eqx.Module):
            w: float

        class Other:
            pass

        m = Model(1.0)

        def make(w):
            return Model(w), Other()
    """)
    index = build_scope_index(cst.parse_module(code), {cst.Call})
    facts = Facts(index)
    model = next(s.node for s in index.body_scopes.values() if s.kind == "class" and s.node.name.value == "Model")
    built = constructions(facts, model)
    assert sorted(cst.Module([]).code_for_node(call) for call, _ in built) == ["Model(1.0)", "Model(w)"]
    assert {site.scope.kind for _, site in built} == {"module", "function"}
