"""Indexes the one traversal's results serve lazily (odelint.analysis.scopes.ScopeIndex):
calls by the plain name they call, the call of a function expression, and the bindings a
value is assigned to."""

from __future__ import annotations

import textwrap

import libcst as cst
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
