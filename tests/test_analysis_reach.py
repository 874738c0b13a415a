"""The call graph every context spreads along (odelint.analysis.reach.CallTargets): found once
per file, then filtered per context (a host callback's function runs elsewhere)."""

from __future__ import annotations

import textwrap

import libcst as cst
from odelint.analysis.facts import Facts
from odelint.analysis.reach import CallTargets, Reach

SOURCE = """
import jax

def loss(params, x):
    return helper(x) * params

def helper(x):
    return x

def log(value):
    print(value)

def step(params, x):
    jax.debug.callback(log, x)
    return jax.grad(loss)(params, x)

class Model:
    def __call__(self, x):
        return x

def run(model: Model, x):
    return model(x) + len(x)
"""


def _facts() -> Facts:
    from odelint.analysis.scopes import build_scope_index
    return Facts(build_scope_index(cst.parse_module(textwrap.dedent(SOURCE)), {cst.Call}))


def _names(functions) -> list[str]:
    return [f.name.value for f in functions]


def test_calls_reaching_functions_of_the_file_are_found_once_with_what_they_run_and_hand_on() -> None:
    facts = _facts()
    graph = facts.part(CallTargets, CallTargets)
    by_code = {facts.index.module.code_for_node(call): graph.of(call) for call, _ in graph.calls}
    assert _names(by_code["helper(x)"][0]) == ["helper"]
    assert _names(by_code["jax.debug.callback(log, x)"][1]) == ["log"]
    assert by_code["jax.debug.callback(log, x)"][2] == "jax.debug.callback"
    assert _names(by_code["model(x)"][0]) == ["__call__"]        # a module's call runs __call__
    assert "len(x)" not in by_code and graph.of(cst.parse_expression("f()")) is None  # reaches nothing here
    assert facts.part(CallTargets, CallTargets) is graph          # built once per file


def test_a_context_that_never_enters_callbacks_does_not_follow_what_they_are_given() -> None:
    facts = _facts()
    callback = next(call for call, _ in facts.part(CallTargets, CallTargets).calls
                    if facts.index.module.code_for_node(call).startswith("jax.debug"))
    site = next(site for call, site in facts.index.of_type(cst.Call) if call is callback)
    assert _names(Reach(facts)._targets(callback, site)) == ["log"]
    assert Reach(facts, never_into={"jax.debug.callback"})._targets(callback, site) == []


def test_a_partial_application_reaches_its_function_with_the_bound_arguments_counted() -> None:
    from odelint.analysis.scopes import build_scope_index

    source = textwrap.dedent("""
        import functools
        import jax

        def step(scale, params, x):
            return params * x * scale

        def train(params, x):
            return jax.jit(functools.partial(step, 2.0, params))(x)
    """)
    facts = Facts(build_scope_index(cst.parse_module(source), {cst.Call}))
    partial, site = next((call, site) for call, site in facts.index.of_type(cst.Call)
                         if facts.index.module.code_for_node(call).startswith("functools.partial"))
    function, bound = Reach(facts).function(partial, site.scope)
    assert (function.name.value, bound) == ("step", 2)  # `scale` and `params` are bound
