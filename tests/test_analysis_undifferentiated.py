"""Code never reverse-differentiated (odelint.analysis.undifferentiated)."""

from __future__ import annotations

import textwrap

import libcst as cst
from odelint.analysis.facts import Facts, model_node_types
from odelint.analysis.scopes import build_scope_index
from odelint.analysis.undifferentiated import never_differentiated


def _verdicts(source: str) -> dict[str, str | None]:
    module = cst.parse_module(textwrap.dedent(source))
    facts = Facts(build_scope_index(module, model_node_types()))
    return {module.code_for_node(call): never_differentiated(facts, site)
            for call, site in facts.index.of_type(cst.Call) if module.code_for_node(call).startswith("probe")}


def test_kernels_and_functions_whose_results_are_always_stopped() -> None:
    verdicts = _verdicts("""
        import functools
        import jax
        from jax import lax
        from jax.experimental import pallas as pl

        def helper(x):
            return probe(1)

        def one_step(x):
            return probe(5)

        def many_steps(x):
            return x

        def kernel(x_ref, o_ref, n):
            step = one_step if n == 1 else many_steps
            if n == 1:
                step = one_step
            else:
                step = many_steps
            step(x_ref[...])
            o_ref[...] = helper(x_ref[...])

        def run(x):
            kernel_fn = functools.partial(kernel, n=2)
            return pl.pallas_call(kernel_fn, out_shape=x)(x)

        def scale(x):
            return probe(2)

        def a(x):
            return lax.stop_gradient(scale(x))

        def b(x):
            s = scale(x)
            s = jax.lax.stop_gradient(s)
            return s

        def shift(x):
            return probe(3)

        def c(x):
            return lax.stop_gradient(shift(x)) + shift(x)

        def never_called(x):
            return probe(4)
    """)
    assert verdicts["probe(1)"] == "`helper` is called from `kernel`; `kernel` is a Pallas kernel"
    assert verdicts["probe(5)"] is not None
    assert verdicts["probe(2)"] == "every caller of `scale` applies `lax.stop_gradient` to its result"
    assert verdicts["probe(3)"] is None
    assert verdicts["probe(4)"] is None
