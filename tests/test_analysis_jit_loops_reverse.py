"""The facts the array rules (ODL707-ODL711) add to the model: what a call compiles and
which of its arguments are static, which code runs per loop iteration, and which code
reverse-mode differentiation reaches."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from odelint.analysis.facts import Facts
from odelint.analysis.jitted import decorated, jitted_callee
from odelint.analysis.reverse import reverse_differentiated_by
from odelint.analysis.scopes import Site, build_scope_index


def _facts(source: str) -> tuple[cst.Module, Facts]:
    module = cst.parse_module(textwrap.dedent(source))
    return module, Facts(build_scope_index(module, {cst.Call}))


def _calls(module: cst.Module, facts: Facts, callee: str):
    """(call, site) for each call whose function is spelled `callee`."""
    return [(call, site) for call, site in facts.index.of_type(cst.Call)
            if module.code_for_node(call.func) == callee]


# -- jitted callees and their static arguments ------------------------------------------------

JITTED = """
import functools
import equinox as eqx
import jax
from functools import partial

def f(x, shape, mode="a"):
    return x

@partial(jax.jit, static_argnums=1)
def deco(x, shape):
    return x

@jax.jit
def bare(x, shape):
    return x

@eqx.filter_jit
def filtered(x, n):
    return x

class Net:
    @functools.partial(jax.jit, static_argnames="shape")
    def method(self, x, shape):
        return x

by_call = jax.jit(f, static_argnums=(1,))
by_name = jax.jit(f, static_argnames=("shape", "mode"))
negative = jax.jit(f, static_argnums=-1)
plain = f

deco(1, [2])
deco(1, shape=[2])
bare(1, [2])
filtered(1, [2])
by_call(1, [2], [3])
by_name(1, [2], mode=[3])
negative(1, [2], [3])
plain(1, [2])
jax.jit(f, static_argnums=2)(1, [2], [3])
"""


@pytest.mark.parametrize("index, transform, static", [
    (0, "jax.jit", ["[2]"]),              # @partial(jax.jit, static_argnums=1), positional
    (1, "jax.jit", ["[2]"]),              # ... and by keyword: jit maps the number to the name
    (2, "jax.jit", []),                   # @jax.jit: nothing static
    (3, "equinox.filter_jit", []),        # filter_jit takes no static keywords
    (4, "jax.jit", ["[2]"]),              # jax.jit(f, static_argnums=(1,))
    (5, "jax.jit", ["[2]", "[3]"]),       # static_argnames names positions too
    (6, "jax.jit", ["[3]"]),              # a negative position counts from the end
    (7, None, None),                      # not compiled at all
    (8, "jax.jit", ["[3]"]),              # inline jax.jit(f, ...)(...)
])
def test_static_arguments_of_calls(index: int, transform: str | None, static: list[str] | None) -> None:
    module, facts = _facts(JITTED)
    calls = [(c, s) for c, s in facts.index.of_type(cst.Call)
             if s.scope is facts.index.module_scope and c.args and module.code_for_node(c.args[0].value) == "1"]
    call, site = calls[index]
    jitted = jitted_callee(facts, call.func, site.scope)
    if transform is None:
        assert jitted is None
        return
    assert jitted is not None and jitted.transform == transform
    assert [module.code_for_node(arg.value) for arg in jitted.static_arguments(call)] == static


def test_a_method_s_static_argnames_skip_self() -> None:
    module, facts = _facts(JITTED + "Net().method(1, [2])\n")
    call = next(c for c, _ in facts.index.of_type(cst.Call)
                if isinstance(c.func, cst.Attribute) and c.func.attr.value == "method")
    cls = next(n for n in module.body if isinstance(n, cst.ClassDef))
    method = cls.body.body[0]
    jitted = decorated(facts, method, facts.index.body_scope(cls))
    assert jitted is not None and jitted.bound == 1
    assert [module.code_for_node(a.value) for a in jitted.static_arguments(call)] == ["[2]"]


# -- loops ------------------------------------------------------------------------------------

LOOPS = """
import jax
for i in range(3):
    a = jax.jit(lambda x: x)
    def inner():
        return jax.jit(lambda y: y)
    [jax.vmap(g) for g in fs]
while cond():
    b = jax.pmap(h)
c = jax.jit(k)
for j in jax.numpy.arange(3):
    pass
"""


def test_loop_bodies_run_per_iteration_but_nested_functions_do_not() -> None:
    module, facts = _facts(LOOPS)
    inside = {module.code_for_node(call.func): facts.loop_at(site) is not None
              for call, site in facts.index.of_type(cst.Call)
              if module.code_for_node(call.func) in ("jax.vmap", "jax.pmap", "cond", "range", "jax.numpy.arange")}
    assert inside == {"jax.vmap": True, "jax.pmap": True, "cond": True, "range": False, "jax.numpy.arange": False}
    jits = _calls(module, facts, "jax.jit")
    assert [facts.loop_at(site) is not None for _, site in jits] == [True, False, False]
    inner = next(s for s in module.body[1].body.body if isinstance(s, cst.FunctionDef))
    binding = facts.binding_of(inner)
    assert binding is not None
    assert facts.loop_at(Site(binding.scope, binding.order)) is module.body[1]  # the `def` runs every iteration


# -- reverse-mode differentiation -------------------------------------------------------------

REVERSE = """
import equinox as eqx
import jax
from functools import partial

def by_grad(x):
    return helper(x)

def helper(x):
    return mark_helper(x)

def by_jacfwd(x):
    return mark_jacfwd(x)

def by_jvp(x):
    return mark_jvp(x)

def by_jit_grad(x):
    return mark_jit_grad(x)

@eqx.filter_value_and_grad
def decorated(model):
    return mark_decorated(model)

@partial(jax.jacrev, argnums=1)
def partial_decorated(a, b):
    return mark_partial(a)

def by_hessian(x):
    return mark_hessian(x)

def untouched(x):
    return mark_untouched(x)

@jax.custom_vjp
def own_rule(x):
    return mark_custom(x)

def by_grad_through_custom(x):
    return own_rule(x)

jax.grad(by_grad)(1.0)
jax.jacfwd(by_jacfwd)(1.0)
jax.jvp(by_jvp, (1.0,), (1.0,))
jax.jit(jax.grad(by_jit_grad))(1.0)
jax.hessian(by_hessian)(1.0)
jax.jit(untouched)(1.0)
jax.grad(by_grad_through_custom)(1.0)
"""


@pytest.mark.parametrize("marker, reverse", [
    ("mark_helper", True),        # reached from a grad root through a call
    ("mark_jit_grad", True),      # grad inside jit
    ("mark_decorated", True),     # @eqx.filter_value_and_grad
    ("mark_partial", True),       # @partial(jax.jacrev, ...)
    ("mark_hessian", True),       # hessian is forward-over-reverse
    ("mark_jacfwd", False),       # forward mode only
    ("mark_jvp", False),
    ("mark_untouched", False),    # jit does not differentiate
    ("mark_custom", False),       # a custom_vjp function is differentiated by its rule
])
def test_reverse_mode_reach(marker: str, reverse: bool) -> None:
    module, facts = _facts(REVERSE)
    [(_, site)] = _calls(module, facts, marker)
    why = reverse_differentiated_by(facts, site)
    assert (why is not None) == reverse, why
    if reverse and marker == "mark_helper":
        assert why == "`helper` is called from `by_grad`; `by_grad` is differentiated in reverse mode by `jax.grad`"
