"""JAX arrays versus NumPy arrays (odelint.analysis.arrays)."""

from __future__ import annotations

import textwrap

import libcst as cst
from odelint.analysis.arrays import is_jax_array, traced_array
from odelint.analysis.facts import Facts
from odelint.analysis.scopes import Site, build_scope_index

SOURCE = """
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

a = jnp.zeros(3)
n = np.zeros(3)

def f(x: jax.Array, y: np.ndarray, z: Float[Array, "n"], w: Float[np.ndarray, "n"], v):
    return x

class Holder:
    registers: np.ndarray
    weights: jax.Array

    def update(self):
        pass

def reduce(logits):
    metrics = jax.lax.pmean({"loss": jnp.mean(logits)}, axis_name="batch")
    return metrics
"""


def test_jax_arrays_are_told_from_numpy_ones() -> None:
    index = build_scope_index(cst.parse_module(textwrap.dedent(SOURCE)), {cst.Call})
    facts = Facts(index)
    module_end = Site(index.module_scope, 10**9)
    function = next(s for s in index.body_scopes.values() if s.kind == "function" and s.node.name.value == "f")
    inside = Site(function, 10**9)

    def jax_array(name: str, site: Site) -> bool:
        return is_jax_array(facts, cst.parse_expression(name), site)

    assert jax_array("a", module_end) and jax_array("a * 2", module_end)
    assert not jax_array("n", module_end)
    assert jax_array("x", inside) and jax_array("z", inside)
    assert not jax_array("y", inside) and not jax_array("w", inside) and not jax_array("v", inside)
    method = next(s for s in index.body_scopes.values() if getattr(s.node, "name", None) is not None
                  and s.node.name.value == "update")
    assert jax_array("self.weights", Site(method, 10**9))
    assert not jax_array("self.registers", Site(method, 10**9)), "a field declared np.ndarray"
    reduce = next(s for s in index.body_scopes.values() if getattr(s.node, "name", None) is not None
                  and s.node.name.value == "reduce")
    assert not jax_array("metrics", Site(reduce, 10**9)), "collectives return the pytree they are given"


def test_traced_arrays_are_told_from_python_values_in_traced_pytrees() -> None:
    source = textwrap.dedent("""
        import jax
        import jax.numpy as jnp

        @jax.jit
        def step(state, x, indices, carry):
            scale = state.dynamic_scale
            total = x.sum() * 2
            flag = jnp.iscomplexobj(x)
            indices = tuple(i for i in indices)
            a, b = carry
            out, aux = helper(x)
            return scale, total, flag, indices, a, out, x > 0, x.shape[0] > 1, set(x.keys())

        def helper(v):
            return v, v
    """)
    module = cst.parse_module(source)
    index = build_scope_index(module, {cst.Call, cst.Return})
    facts = Facts(index)
    node, site = next((n, s) for n, s in index.of_type(cst.Return) if s.scope.node.name.value == "step")
    found = {module.code_for_node(e.value): traced_array(facts, e.value, site) for e in node.value.elements}
    arrays = {text for text, traced in found.items() if traced is not None}
    assert arrays == {"total", "a", "x > 0"}
    assert found["total"].describe() == "`x` (a parameter of `step`, traced by `jax.jit`)"
