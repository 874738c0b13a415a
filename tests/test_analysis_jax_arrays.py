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


AT_SOURCE = """
import jax.numpy as jnp
import equinox as eqx

x = jnp.zeros(3)
model = eqx.nn.Linear(2, 2, key=None)
n = 3

def g(y):
    z = y
    return z
"""


def test_at_updates_are_told_from_reads_and_from_non_arrays() -> None:
    from odelint.analysis.arrays import at_update

    index = build_scope_index(cst.parse_module(textwrap.dedent(AT_SOURCE)), {cst.Call})
    facts = Facts(index)
    site = Site(index.module_scope, 10**9)

    def update(code: str) -> tuple[str, str] | None:
        found = at_update(facts, cst.parse_expression(code), site)
        return None if found is None else (cst.Module([]).code_for_node(found.array), found.method)

    assert update("x.at[0].set(1.0)") == ("x", "set")
    assert update("x.at[0].mul(2).at[1].add(3)") == ("x", "add")   # a chain starts from `x`
    assert update("unknown.at[0].apply(f)") == ("unknown", "apply")
    assert update("x.at[0].get()") is None and update("x.set(1)") is None and update("x.at.set(1)") is None
    assert update("model.at[0].set(1.0)") is None and update("n.at[0].set(1)") is None


def test_a_name_is_rebindable_only_in_its_own_scope() -> None:
    from odelint.analysis.arrays import rebindable_here

    index = build_scope_index(cst.parse_module(textwrap.dedent(AT_SOURCE)), {cst.Call})
    facts = Facts(index)
    function = next(s for s in index.body_scopes.values() if s.kind == "function" and s.node.name.value == "g")
    inside = Site(function, 10**9)
    assert rebindable_here(facts, cst.Name("y"), inside) and rebindable_here(facts, cst.Name("z"), inside)
    assert not rebindable_here(facts, cst.Name("x"), inside)          # a global: would become local
    assert not rebindable_here(facts, cst.parse_expression("y.w"), inside)
    assert rebindable_here(facts, cst.Name("x"), Site(index.module_scope, 10**9))


def test_one_array_functions_of_linalg_and_fft_make_arrays_and_tuple_returning_ones_do_not() -> None:
    """`jnp.linalg.norm(x) > tol` is an array test (ODL702 reads it); `jnp.linalg.eigh` returns
    a tuple, and `jnp.linalg` as a module is no array."""
    from odelint.analysis import jax_api

    assert jax_api.returns_array("jax.numpy.linalg.norm") and jax_api.returns_array("jax.numpy.fft.rfft")
    assert not jax_api.returns_array("jax.numpy.linalg.eigh") and not jax_api.returns_array("jax.numpy.linalg.qr")
    source = textwrap.dedent("""
        import jax
        import jax.numpy as jnp

        @jax.jit
        def clip(x, tol):
            if jnp.linalg.norm(x) > tol:
                return x / jnp.linalg.norm(x)
            return x
    """)
    from odelint.engine.core import lint_source

    assert [f.code for f in lint_source(source, "m.py", {"ODL702"}).findings] == ["ODL702"]
