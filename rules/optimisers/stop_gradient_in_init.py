"""ODL206: `lax.stop_gradient` in an Equinox module's `__init__`, meant to freeze a field."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import STOP_GRADIENT, Needs, Site, constructions, enclosing_class, is_module_class
from odelint.api.rule import Flag, Pass, Rule


class StopGradientInInit(Rule):
    """`lax.stop_gradient` in an Equinox module's `__init__` does not freeze the field.

    ## What it does
    Flags `self.field = jax.lax.stop_gradient(value)` in the `__init__` of an Equinox
    module class, when that `__init__` is not itself run under differentiation in this
    file (building the module inside a loss is the one case where it stops something).

    ## Why is this bad?
    `stop_gradient` acts on the computation it is part of. In `__init__` it returns the
    same array, which is stored as an ordinary leaf: a later `eqx.filter_grad` with
    respect to the module differentiates through the field's uses, which no longer
    contain the `stop_gradient`, so the "frozen" field gets a gradient and the optimiser
    trains it (reproduced on jax 0.10.2, equinox 0.13.8: the gradient of
    `sum(w * x + b)` with respect to a `b` stored through `stop_gradient` is `[1. 1.]`,
    not zero). This is equinox#31; the Equinox FAQ's recipe applies `stop_gradient` where
    the field is used, and equinox#866 adds that weight decay still changes such a field
    unless it is filtered out of the optimiser (shared pitfall P27; optax#290).

    ## Example
    ```python
    class Model(eqx.Module):
        weight: jax.Array
        buffer: jax.Array

        def __init__(self, key):
            self.weight = jax.random.normal(key, (3,))
            self.buffer = jax.lax.stop_gradient(jnp.ones(3))
    ```

    ## Use instead
    ```python
        def __init__(self, key):
            self.weight = jax.random.normal(key, (3,))
            self.buffer = jnp.ones(3)

        def __call__(self, x):
            return self.weight * x + jax.lax.stop_gradient(self.buffer)
    ```
    or partition the field out of what the optimiser sees (`eqx.partition` with a filter
    spec, `optax.masked`/`optax.set_to_zero`).

    ## Fix safety
    No fix: where the field should stop its gradient (each use, or the optimiser's
    filter) is a design choice.
    """

    code = "ODL206"
    name = "stop-gradient-in-init"
    summary = "lax.stop_gradient in an Equinox module's __init__ does not freeze the field"
    triggers = (("stop_gradient", "__init__"),)
    fixtures = "tests/fixtures/ODL206"

    needs = Needs.may_hold_modules() & Needs.calls_to(STOP_GRADIENT)

    def visit_Assign(self, node: cst.Assign, site: Site) -> None:
        value = node.value
        if (len(node.targets) != 1 or not isinstance(value, cst.Call)
                or self.facts.qualname(value.func, site.scope) != STOP_GRADIENT):
            return
        target = node.targets[0].target
        if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                and target.value.value == "self"):
            return
        scope = site.scope
        cls = enclosing_class(scope)
        function = scope.node
        if (cls is None or not isinstance(function, cst.FunctionDef) or function.name.value != "__init__"
                or not is_module_class(self.facts, cls) or self._built_under_differentiation(cls, site)):
            return
        field = target.attr.value
        self.report(value, f"`stop_gradient` in `{cls.name.value}.__init__` does not freeze `{field}`: it stores "
                           f"the same array, and gradients taken later with respect to the module still reach "
                           f"`self.{field}`, and an optimiser over the module updates it; apply "
                           f"`jax.lax.stop_gradient(self.{field})` where it is used, or filter it out of the optimiser")

    def _built_under_differentiation(self, cls: cst.ClassDef, site: Site) -> bool:
        """Is `__init__` run under differentiation, or the class built in differentiated code?"""
        facts = self.facts
        return facts.differentiated_by(site) is not None or any(
            facts.differentiated_by(where) is not None for _, where in constructions(facts, cls))

    examples = (
        Flag("""
            import equinox as eqx
            import jax
            import jax.numpy as jnp

            class Model(eqx.Module):
                weight: jax.Array
                buffer: jax.Array

                def __init__(self, key):
                    self.weight = jax.random.normal(key, (3,))
                    self.buffer = jax.lax.stop_gradient(jnp.ones(3))

                def __call__(self, x):
                    return self.weight * x + self.buffer
        """, message="`stop_gradient` in `Model.__init__` does not freeze `buffer`", span="11:23-11:57"),
        # `from jax.lax import stop_gradient`, a subclass of a module class of this file
        Flag("""
            import equinox as eqx
            from jax.lax import stop_gradient as sg

            class Base(eqx.Module):
                scale: float

            class Frozen(Base):
                table: object

                def __init__(self, table):
                    self.scale = 1.0
                    self.table = sg(table)
        """, span="12:22-12:31"),
        # at the use site; a plain class; a module built inside a differentiated loss; not `self`
        Pass("""
            import equinox as eqx
            import jax
            import jax.numpy as jnp

            class Model(eqx.Module):
                weight: jax.Array
                buffer: jax.Array

                def __init__(self, weight):
                    self.weight = weight
                    self.buffer = jnp.ones(3)

                def __call__(self, x):
                    return self.weight * x + jax.lax.stop_gradient(self.buffer)

            class Plain:
                def __init__(self, x):
                    self.x = jax.lax.stop_gradient(x)

            class Inner(eqx.Module):
                w: jax.Array

                def __init__(self, w):
                    self.w = jax.lax.stop_gradient(w)

            @jax.grad
            def loss(w):
                return jnp.sum(Inner(w).w * w)
        """),
    )
