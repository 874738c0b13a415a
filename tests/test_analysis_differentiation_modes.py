"""`Differentiation.modes`: the stacks of forward/reverse transforms a site may run under."""

from __future__ import annotations

import libcst as cst
import pytest
from odelint.analysis.differentiation import differentiation
from odelint.analysis.facts import Facts
from odelint.analysis.scopes import build_scope_index

F, R = "forward", "reverse"


def modes_at_marker(source: str) -> frozenset[tuple[str, ...]]:
    """The modes at the call `marker()` in `source`."""
    index = build_scope_index(cst.parse_module(source), {cst.Call})
    facts = Facts(index)
    (site,) = [site for call, site in index.of_type(cst.Call)
               if isinstance(call.func, cst.Name) and call.func.value == "marker"]
    return differentiation(facts).modes(site)


CASES = [
    # single transforms, called or as decorators, aliases and from-imports
    ("import jax\ndef f(x):\n    return marker()\njax.grad(f)(1.0)\n", {(R,)}),
    ("import jax as j\ndef f(x):\n    return marker()\nj.jacfwd(f)\n", {(F,)}),
    ("from jax import jvp\ndef f(x):\n    return marker()\njvp(f, (1.0,), (1.0,))\n", {(F,)}),
    ("import jax\n@jax.value_and_grad\ndef f(x):\n    return marker()\n", {(R,)}),
    ("import equinox as eqx\n@eqx.filter_grad\ndef f(x):\n    return marker()\n", {(R,)}),
    ("import equinox as eqx\neqx.filter_jvp(lambda x: marker(), (1.0,), (1.0,))\n", {(F,)}),
    ("import jax\ndef f(x):\n    return marker()\njax.hessian(f)(1.0)\n", {(F, R)}),
    # nesting: written inline, through a name, through decorators, through calls
    ("import jax\ndef f(x):\n    return marker()\njax.grad(jax.grad(f))(1.0)\n", {(R, R)}),
    # (`g` may also be called on its own, so plain reverse mode stays possible)
    ("import jax\ndef f(x):\n    return marker()\ng = jax.grad(f)\njax.jacfwd(g)(1.0)\n", {(R,), (F, R)}),
    ("import jax\n@jax.grad\n@jax.grad\ndef f(x):\n    return marker()\n", {(R, R)}),
    (("import jax\ndef inner(x):\n    return marker()\n"
      "def outer(x):\n    return jax.grad(inner)(x)\njax.grad(outer)(1.0)\n"), {(R, R)}),
    ("import jax\nfrom functools import partial\n@partial(jax.jacfwd, argnums=1)\ndef f(a, x):\n    return marker()\n",
     {(F,)}),
    # spread through same-file calls, and nested code
    ("import jax\ndef helper(x):\n    return marker()\ndef loss(x):\n    return helper(x)\n"
     "jax.jvp(loss, (1.0,), (1.0,))\n",
     {(F,)}),
    ("import jax\ndef loss(x):\n    def body():\n        return marker()\n    return body()\njax.grad(loss)\n", {(R,)}),
    # one function under two transforms
    ("import jax\ndef f(x):\n    return marker()\njax.grad(f)\njax.jacfwd(f)\n", {(R,), (F,)}),
]


@pytest.mark.parametrize(("source", "expected"), CASES)
def test_modes_hold(source: str, expected: set[tuple[str, ...]]) -> None:
    assert modes_at_marker(source) == expected


QUIET = [
    "import jax\ndef f(x):\n    return marker()\njax.jit(f)(1.0)\njax.vmap(f)(1.0)\n",
    "def grad(f):\n    return f\ndef f(x):\n    return marker()\ngrad(f)(1.0)\n",
    "import jax\ndef f(x):\n    return marker()\ndef g(x):\n    return x\njax.grad(g)(1.0)\n",
    "import jax\n\ndef f(x):\n    return marker()\njax.debug.callback(f, 1.0)\n",
]


@pytest.mark.parametrize("source", QUIET)
def test_no_modes_without_a_differentiating_transform(source: str) -> None:
    assert modes_at_marker(source) == frozenset()


def test_recursion_terminates_with_bounded_nesting() -> None:
    source = "import jax\ndef f(x):\n    marker()\n    return jax.grad(f)(x)\njax.grad(f)(1.0)\n"
    modes = modes_at_marker(source)
    assert (R,) in modes and (R, R) in modes
    assert max(len(stack) for stack in modes) == 4


def test_existing_reasons_are_unchanged_by_modes() -> None:
    source = "import jax\ndef f(x):\n    return marker()\njax.grad(jax.grad(f))(1.0)\n"
    index = build_scope_index(cst.parse_module(source), {cst.Call})
    analysis = differentiation(Facts(index))
    (site,) = [site for call, site in index.of_type(cst.Call)
               if isinstance(call.func, cst.Name) and call.func.value == "marker"]
    before = analysis.why_differentiated(site)
    assert analysis.modes(site) == {(R, R)}
    assert analysis.why_differentiated(site) == before == "`f` is differentiated by `jax.grad`"


def test_transform_inside_code_differentiated_in_no_known_mode() -> None:
    """A progress meter's methods are differentiated (diffrax calls them inside the solve)
    in no known mode; a `jax.grad` written there still gives its function reverse mode."""
    source = ("import diffrax\nimport jax\n\ndef f(x):\n    return marker()\n\n"
              "class Meter(diffrax.AbstractProgressMeter):\n    def step(self, state, progress):\n"
              "        return jax.grad(f)(progress)\n")
    assert modes_at_marker(source) == {(R,)}
