"""Indexes the one traversal's results serve lazily (odelint.analysis.scopes.ScopeIndex):
calls by the plain name they call, the call of a function expression, and the bindings a
value is assigned to."""

from __future__ import annotations

import textwrap

import libcst as cst
from odelint.analysis.facts import Facts
from odelint.analysis.scopes import build_scope_index

SOURCE = """
import jax

def step(x):
    return x

fast = jax.jit(step)
a, b = jax.jit(step), 1
fast(1)
step(2)
jax.jit(step)(3)

def inner():
    step(4)
    fast(5)
"""


def _index():
    module = cst.parse_module(textwrap.dedent(SOURCE))
    return module, build_scope_index(module, {cst.Call})


def test_calls_named_finds_plain_name_calls_in_source_order() -> None:
    module, index = _index()
    assert [module.code_for_node(call) for call, _ in index.calls_named("step")] == ["step(2)", "step(4)"]
    assert [module.code_for_node(call) for call, _ in index.calls_named("fast")] == ["fast(1)", "fast(5)"]
    assert index.calls_named("jit") == [] and index.calls_named("missing") == []


def test_call_of_finds_the_call_whose_function_is_that_node() -> None:
    module, index = _index()
    called = next(call for call, _ in index.of_type(cst.Call) if module.code_for_node(call) == "jax.jit(step)(3)")
    found = index.call_of(called.func)
    assert found is not None and found[0] is called
    assert index.call_of(called) is None  # nothing calls the result of that call


def test_assignments_of_finds_plain_assignments_of_that_very_value() -> None:
    module, index = _index()
    jits = [call for call, _ in index.of_type(cst.Call) if module.code_for_node(call) == "jax.jit(step)"]
    assigned = [[b.name for b in index.assignments_of(value)] for value in jits]
    assert assigned == [["fast"], [], []]  # `a, b = ...` unpacks: not the plain assignment of the value


FILED = """
import jax
import jax.numpy as jnp
from jax import lax as L

def body(carry, x):
    return carry + jnp.sin(x), x

def run(xs, opt, state, grads):
    out = L.scan(body, 0.0, xs)
    updates, state = opt.update(grads, state)
    return jax.jit(body)(out, xs), jnp.cos(xs), opt.init(xs)

g = jax.jit(run)
"""


def _facts(source: str) -> tuple[cst.Module, Facts]:
    module = cst.parse_module(textwrap.dedent(source))
    return module, Facts(build_scope_index(module, {cst.Call}))


def test_calls_to_files_each_call_by_its_callees_qualified_name_in_source_order() -> None:
    """`Facts.calls_to`: the calls of any of the named functions, resolved through imports and
    aliases (`L.scan` is `jax.lax.scan`), merged in source order across the names."""
    module, facts = _facts(FILED)
    spelled = lambda calls: [module.code_for_node(call.func) for call, _ in calls]  # noqa: E731
    assert spelled(facts.calls_to({"jax.jit"})) == ["jax.jit", "jax.jit"]
    assert spelled(facts.calls_to({"jax.jit", "jax.lax.scan", "jax.numpy.sin"})) == [
        "jnp.sin", "L.scan", "jax.jit", "jax.jit"]
    assert facts.calls_to({"jax.lax.fori_loop"}) == [] and facts.calls_to(set()) == []
    assert set(facts.called_names()) == {"jax.numpy.sin", "jax.lax.scan", "jax.jit", "jax.numpy.cos"}
    sites = [site.order for _, site in facts.calls_to({"jax.numpy.sin", "jax.numpy.cos", "jax.jit"})]
    assert sites == sorted(sites)


def test_method_calls_are_filed_by_method_name_whatever_the_receiver() -> None:
    module, facts = _facts(FILED)
    assert [module.code_for_node(call) for call, _ in facts.method_calls({"update", "init"})] == [
        "opt.update(grads, state)", "opt.init(xs)"]
    assert facts.method_calls({"apply"}) == []
