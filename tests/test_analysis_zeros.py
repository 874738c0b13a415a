"""Values that are exactly zero somewhere: pairwise differences (odelint.analysis.zeros)."""

from __future__ import annotations

import textwrap

import libcst as cst
from odelint.analysis.facts import Facts
from odelint.analysis.scopes import Site, build_scope_index
from odelint.analysis.zeros import pairwise_difference, squared_pairwise_difference, zero_filled_parameter

SOURCE = """
import jax.numpy as jnp

def f(x, y):
    d = x[:, None, :] - x[None, :, :]
    e = x[:, None] - y[None, :]
    return d
"""


def _site() -> tuple[Facts, Site]:
    index = build_scope_index(cst.parse_module(textwrap.dedent(SOURCE)), {cst.Call})
    function = next(s for s in index.body_scopes.values() if s.kind == "function")
    return Facts(index), Site(function, 10**9)


def test_pairwise_differences_of_one_array_are_found() -> None:
    facts, site = _site()

    def pairwise(code: str) -> str | None:
        return pairwise_difference(facts, cst.parse_expression(code), site)

    assert pairwise("x[:, None] - x[None, :]") == "x" and pairwise("x[None] - x[:, None]") == "x"
    assert pairwise("self.pos[:, None, :] - self.pos[None, :, :]") == "self.pos"
    assert pairwise("d") == "x"                              # through the name's assignment
    assert pairwise("x[:, None] - y[None, :]") is None and pairwise("e") is None
    assert pairwise("x[:, None] - x[:, None]") is None     # the same placement: no diagonal
    assert pairwise("x[0] - x[None, :]") is None and pairwise("x - x") is None and pairwise("x + x") is None


def test_summed_squares_of_a_pairwise_difference_are_found() -> None:
    facts, site = _site()

    def squares(code: str) -> str | None:
        return squared_pairwise_difference(facts, cst.parse_expression(code), site)

    assert squares("jnp.sum(d ** 2, axis=-1)") == "x" and squares("(d * d).sum(-1)") == "x"
    assert squares("jnp.sum(jnp.square(d), -1)") == "x"
    assert squares("jnp.sum(d ** 3, axis=-1)") is None and squares("jnp.sum(e ** 2)") is None
    assert squares("jnp.mean(d ** 2)") is None and squares("d ** 2") is None


def test_a_name_the_code_tests_against_zero() -> None:
    from odelint.analysis.zeros import tested_for_zero

    code = textwrap.dedent("""
        import jax.numpy as jnp

        def f(v, w):
            n = jnp.linalg.norm(v)
            a, b = v
            m = jnp.sqrt(w)
            return n
    """)
    index = build_scope_index(cst.parse_module(code), {cst.Call})
    facts = Facts(index)
    site = Site(next(s for s in index.body_scopes.values() if s.kind == "function"), 10**9)

    def tested(test: str) -> str | None:
        found = tested_for_zero(facts, cst.parse_expression(test), site)
        return None if found is None else cst.Module([]).code_for_node(found[0])

    assert tested("n > 0") == "jnp.linalg.norm(v)" and tested("0 == n") == "jnp.linalg.norm(v)"
    assert tested("n < 1e-8") == "jnp.linalg.norm(v)" and tested("m <= 0.0") == "jnp.sqrt(w)"
    assert tested("n > 1.0") is None and tested("n > -1") is None and tested("n > eps") is None
    assert tested("a > 0") is None and tested("v > 0") is None and tested("n.x > 0") is None


def test_a_parameter_filled_with_zeros_by_a_call_is_found_through_transforms() -> None:
    module = cst.parse_module(textwrap.dedent("""
        import jax
        import jax.numpy as jnp

        def loss(w, b):
            return w + b

        w0 = jnp.zeros(3)
        g = jax.grad(loss)(w0, jnp.ones(3))
        h = loss(jnp.ones(3), jnp.zeros_like(w0))
    """))
    facts = Facts(build_scope_index(module, {cst.Call}))
    function = module.body[2]
    site = Site(facts.index.body_scope(function), 10**9)  # inside `loss`

    def filled(name: str) -> str | None:
        found = zero_filled_parameter(facts, cst.Name(name), site)
        return module.code_for_node(found[1]) if found is not None else None

    assert filled("w") == "jax.grad(loss)(w0, jnp.ones(3))"
    assert filled("b") == "loss(jnp.ones(3), jnp.zeros_like(w0))"
    assert filled("x") is None
