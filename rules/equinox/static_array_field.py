"""ODL603: `eqx.field(static=True)` on a field that holds an array."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import Kind, Needs, Site, is_module_class, jax_api, keyword_arg, source_of
from odelint.api.rule import Flag, Pass, Rule

_ARRAYS = (Kind.ARRAY, Kind.KEY)
_STATIC_FIELD = jax_api.name("static_field")
_FIELD = jax_api.name("field")


class StaticArrayField(Rule):
    """An array is declared a static field of an Equinox module.

    ## What it does
    Flags a field of an Equinox module declared with `eqx.field(static=True)` (or the
    old `eqx.static_field()`) whose annotation is an array type (`jax.Array`,
    `Float[Array, "n"]`, `np.ndarray`, a PRNG key) or to which `__init__` assigns an
    array (`jnp.ones(3)`, `jax.random.normal(...)`).

    ## Why is this bad?
    A static field is part of the pytree's structure, not a leaf. JAX compares static
    data with `==` to look up compiled code, and `==` on arrays is elementwise, so the
    second call of a `filter_jit` function with another instance fails:

        ValueError: static arguments should be comparable using __eq__. ...
        ValueError: Exception raised while checking equality of metadata fields of
        pytree. ... (Note: arrays cannot be passed as metadata fields!)

    (jax 0.10.2; older versions: "The truth value of an array with more than one
    element is ambiguous".) The array also never gets a gradient and is never updated
    by the optimiser. Equinox warns since v0.11.6 ("A JAX array is
    being set as static! This can result in unexpected behavior and is usually a
    mistake to do.") (equinox#746, #798, PR#800, #863, #214; jax#24204, #7826).

    ## Example
    ```python
    class Model(eqx.Module):
        mask: jax.Array = eqx.field(static=True)
    ```

    ## Use instead
    ```python
    class Model(eqx.Module):
        mask: jax.Array
    ```
    and `jax.lax.stop_gradient(self.mask)` where it must not be trained; truly static
    data belongs in a tuple or a Python number.

    ## Fix safety
    No fix: making the array a leaf changes which values are traced, differentiated
    and updated by the optimiser.
    """

    code = "ODL603"
    name = "static-array-field"
    summary = "eqx.field(static=True) on a field that holds an array"
    triggers = (("equinox", "static"),)
    fix_safety = None
    fixtures = "tests/fixtures/ODL603"

    needs = Needs.fact("static_array_field")

    def visit_AnnAssign(self, node: cst.AnnAssign, site: Site) -> None:
        cls = self.facts.body_at(site)
        if (not isinstance(cls, cst.ClassDef) or not isinstance(node.target, cst.Name)
                or not self._is_static(node.value, site)):
            return
        if not is_module_class(self.facts, cls):
            return
        field = node.target.value
        declared = self.facts.annotation_kind(node.annotation.annotation, site.scope)
        if declared in _ARRAYS:
            held = f"is annotated `{source_of(self.context.module, node.annotation.annotation)}`"
        else:
            value = _init_value(self.facts, cls, field)
            if value is None:
                return
            held = f"is assigned `{source_of(self.context.module, value)}` in `__init__`"
        self.report(
            node,
            f"static field `{field}` of `{cls.name.value}` {held}: a static array is not a leaf, so it gets no "
            "gradient, and a second `filter_jit` call with another instance fails comparing it "
            "(`ValueError: static arguments should be comparable using __eq__`); make it a normal field",
        )

    def _is_static(self, value: cst.BaseExpression | None, site: Site) -> bool:
        if not isinstance(value, cst.Call):
            return False
        qualname = self.facts.qualname(value.func, site.scope)
        if qualname == _STATIC_FIELD:
            return True
        static = keyword_arg(value, "static") if qualname == _FIELD else None
        return static is not None and isinstance(static.value, cst.Name) and static.value.value == "True"

    examples = (
        Flag("""
            import equinox as eqx
            import jax

            class Model(eqx.Module):
                mask: jax.Array = eqx.field(static=True)
        """, message="static field `mask` of `Model` is annotated `jax.Array`", span="5:5-5:45"),
        # aliases, jaxtyping, the old static_field, an array assigned in __init__
        Flag("""
            import equinox as eq
            import jax.numpy as np2
            from jaxtyping import Array, Float

            class Model(eq.Module):
                w: Float[Array, "n"] = eq.field(static=True)
                table = None
                grid: object = eq.static_field()

                def __init__(self, n):
                    self.w = np2.zeros(n)
                    self.grid = np2.linspace(0.0, 1.0, n)
        """, count=2, span=("6:5-6:49", "8:5-8:37")),
        # static ints, strings, tuples and functions; arrays that are normal fields; not a module
        Pass("""
            import dataclasses
            import equinox as eqx
            import jax
            import jax.numpy as jnp
            from typing import Callable

            class Model(eqx.Module):
                w: jax.Array
                size: int = eqx.field(static=True)
                name: str = eqx.field(static=True, default="model")
                shape: tuple = eqx.field(static=True)
                act: Callable = eqx.field(static=True)

                def __init__(self, size):
                    self.w = jnp.zeros(size)
                    self.size = size
                    self.shape = (size,)
                    self.act = jax.nn.relu

            @dataclasses.dataclass
            class Config:
                mask: jax.Array = dataclasses.field(default=None)
        """),
    )


def _init_value(facts, cls: cst.ClassDef, field: str) -> cst.BaseExpression | None:
    """The array `__init__` assigns to `self.<field>`, if it assigns one."""
    return next((value for value, site in facts.init_assignments(cls, field) if facts.kind(value, site) in _ARRAYS),
                None)
