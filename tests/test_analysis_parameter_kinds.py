"""What a parameter holds, from the calls that fill it (Facts._param_kind through Facts.kind):
the defaults of the calls that leave it out, library functions given by name, and the
`super().__init__(...)` of a subclass. The classic Equinox crash lives there:
`MLP(activation=jax.nn.relu)` stores a function, and `jax.jit` rejects the module."""

from __future__ import annotations

import textwrap

import libcst as cst
from odelint.analysis.facts import Facts, Kind
from odelint.analysis.leaves import module_with_invalid_leaf
from odelint.analysis.scopes import Site, build_scope_index

HEADER = """
import equinox as eqx
import jax
import jax.numpy as jnp


class MLP(eqx.Module):
    weight: jax.Array
    activation: object

    def __init__(self, activation=jax.nn.relu):
        self.weight = jnp.ones(3)
        self.activation = activation
"""


def _facts(source: str) -> tuple[Facts, Site]:
    index = build_scope_index(cst.parse_module(textwrap.dedent(source)), {cst.Call})
    return Facts(index), Site(index.module_scope, 10**9)


def _invalid_leaf(source: str, name: str = "model") -> str | None:
    facts, site = _facts(source)
    found = module_with_invalid_leaf(facts, cst.Name(name), site)
    return None if found is None else found.leaf.path


def test_a_call_that_leaves_a_parameter_out_passes_its_default() -> None:
    assert _invalid_leaf(HEADER + "model = MLP()\n") == "activation"
    assert _invalid_leaf(HEADER + "model = MLP(activation=lambda v: v)\n") == "activation"
    # every call passes an array: the default never reaches the field
    assert _invalid_leaf(HEADER + "model = MLP(jnp.ones(3))\n") is None
    # one call passes the default, another an array: the calls disagree, the model says nothing
    assert _invalid_leaf(HEADER + "model = MLP()\nother = MLP(jnp.ones(3))\n") is None
    # `**options` may hold `activation`: the default is not assumed
    assert _invalid_leaf(HEADER + "model = MLP(**options)\n") is None
    assert _invalid_leaf(HEADER + "model = MLP(*values)\n") is None


def test_a_library_function_given_by_name_is_a_function() -> None:
    for given in ("jax.nn.tanh", "jnp.tanh", "jax.lax.logistic"):
        assert _invalid_leaf(HEADER + f"model = MLP(activation={given})\n") == "activation", given
    assert _invalid_leaf(HEADER + "model = MLP(jax.nn.gelu)\n") == "activation"
    # not a function of the array libraries: nothing is known of it
    assert _invalid_leaf(HEADER + "from mylib import make\nmodel = MLP(make)\n") is None


def test_a_plain_default_gives_a_plain_parameter() -> None:
    facts, _ = _facts("def step(x, rate=1e-3):\n    return rate\n\nstep(1.0)\n")
    function = facts.index.module.body[0]
    assert isinstance(function, cst.FunctionDef)
    scope = facts.index.body_scope(function)
    assert scope is not None
    assert facts.kind(cst.Name("rate"), Site(scope, 10**9)) is Kind.PLAIN
    assert facts.kind(cst.Name("x"), Site(scope, 10**9)) is Kind.PLAIN


SUBCLASS = """
import equinox as eqx
import jax
import jax.numpy as jnp


class Base(eqx.Module):
    weight: jax.Array
    fn: object

    def __init__(self, fn):
        self.weight = jnp.ones(3)
        self.fn = fn


class Sub(Base):
    def __init__(self, fn):
        super().__init__(fn)


class Unrelated(eqx.Module):
    def __init__(self, fn):
        super().__init__()
"""


def test_a_subclass_gives_its_parameters_to_its_base_through_super() -> None:
    assert _invalid_leaf(SUBCLASS + "model = Sub(lambda v: v)\n") == "fn"
    assert _invalid_leaf(SUBCLASS + "model = Sub(jax.nn.relu)\n") == "fn"
    assert _invalid_leaf(SUBCLASS + "model = Sub(jnp.ones(3))\n") is None
    # a class that does not derive from Base gives Base nothing
    assert _invalid_leaf(SUBCLASS + "other = Unrelated(lambda v: v)\nmodel = Base(jnp.ones(3))\n") is None
