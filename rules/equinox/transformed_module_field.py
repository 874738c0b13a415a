"""ODL602: a `jax.vmap`/`jax.jit`/`jax.grad`/`jax.checkpoint` result stored as an Equinox module field."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import Needs, Site, enclosing_class, is_module_class, jax_api, source_of
from odelint.api.finding import Edits, Replace, Safety
from odelint.api.rule import Flag, Pass, Rule

_STORED = jax_api.names("stored_transforms")


class TransformedModuleField(Rule):
    """A module field holds a JAX-transformed module: its parameters are never trained.

    ## What it does
    Flags `self.field = jax.vmap(layer)` (also `jax.jit`, `jax.grad`,
    `jax.value_and_grad`, `jax.checkpoint`) in the `__init__` of an Equinox module when
    `layer` is an Equinox module.

    ## Why is this bad?
    What `jax.vmap` returns is a plain function, not a pytree: the wrapped layer's
    arrays are no longer leaves of the model. `eqx.filter_grad` gives no gradient for
    them (the field's gradient is `None`), `eqx.filter` drops them, and the optimiser
    never updates them. Training runs and the loss stays where the untrained layer
    left it. Equinox warns since v0.11.4 ("Possibly assigning a JAX-transformed
    callable as an attribute on ... This will not have any of its parameters
    updated."), a warning that is easy to miss. A stored `jax.jit(layer)` also fails
    when called: `TypeError: unhashable type: 'jaxlib._jax.ArrayImpl'` (equinox#206,
    #377, #686; commit d4c4249).

    ## Example
    ```python
    class Model(eqx.Module):
        layer: Callable

        def __init__(self, key):
            self.layer = jax.vmap(eqx.nn.Linear(2, 1, key=key))
    ```

    ## Use instead
    ```python
            self.layer = eqx.filter_vmap(eqx.nn.Linear(2, 1, key=key))
    ```

    ## Fix safety
    Safe without keywords: the `eqx.filter_*` transform is a module that keeps the
    layer as a field and computes the same function. With keywords (`in_axes`,
    `static_argnums`, `argnums`) the Equinox spelling differs, so the rule only reports.
    """

    code = "ODL602"
    name = "transformed-module-field"
    summary = "A JAX-transformed module stored as an Equinox module field is never trained"
    triggers = (("jax",),)  # the module class may subclass a diffrax or lineax module
    fix_safety = Safety.SAFE
    fixtures = "tests/fixtures/ODL602"

    needs = Needs.fact("transform_stored_in_init") & Needs.may_hold_modules()

    def visit_Assign(self, node: cst.Assign, site: Site) -> None:
        value = node.value
        if len(node.targets) != 1 or type(value) is not cst.Call or not _in_module_init(self, site):
            return
        target = node.targets[0].target
        if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                and target.value.value == "self"):
            return
        qualname = self.facts.qualname(value.func, site.scope)
        if qualname not in _STORED or not value.args or value.args[0].keyword or value.args[0].star:
            return
        wrapped = value.args[0].value
        if not self.facts.is_module(wrapped, site):
            return
        transform = jax_api.transform(qualname)
        equinox = transform.equinox if transform is not None else None
        if equinox is None:
            return
        spelled = source_of(self.context.module, value.func)
        fix = None
        if len(value.args) == 1:
            fix = self.fix(f"Use `{equinox}`", lambda: self._replace(value.func, equinox, site))
        self.report(
            value,
            f"`self.{target.attr.value}` stores `{spelled}({source_of(self.context.module, wrapped)})`, which is not "
            f"a pytree: the parameters of the wrapped module get no gradient and are never trained; "
            f"use `{equinox.replace('equinox.', 'eqx.')}`",
            fix=fix,
        )

    def _replace(self, func: cst.BaseExpression, equinox: str, site: Site) -> Edits:
        new, imports = self.facts.reference(equinox, site)
        return Edits([Replace(func, new)], imports)

    examples = (
        Flag("""
            import equinox as eqx
            import jax

            class Model(eqx.Module):
                layer: eqx.Module

                def __init__(self, key):
                    self.layer = jax.vmap(eqx.nn.Linear(2, 1, key=key))
        """, fixed="""
            import equinox as eqx
            import jax

            class Model(eqx.Module):
                layer: eqx.Module

                def __init__(self, key):
                    self.layer = eqx.filter_vmap(eqx.nn.Linear(2, 1, key=key))
        """, message="`self.layer` stores `jax.vmap(eqx.nn.Linear(2, 1, key=key))`", span="8:22-8:60"),
        # aliases, a module built first, a subclass of a module of this file; equinox's alias reused
        Flag("""
            from typing import Callable
            import equinox as eq
            from jax import checkpoint, jit

            class Base(eq.Module):
                pass

            class Model(Base):
                body: Callable
                head: Callable

                def __init__(self, key):
                    mlp = eq.nn.MLP(2, 2, 8, 2, key=key)
                    self.body = checkpoint(mlp)
                    self.head = jit(eq.nn.Linear(2, 1, key=key))
        """, fixed="""
            from typing import Callable
            import equinox as eq
            from jax import checkpoint, jit

            class Base(eq.Module):
                pass

            class Model(Base):
                body: Callable
                head: Callable

                def __init__(self, key):
                    mlp = eq.nn.MLP(2, 2, 8, 2, key=key)
                    self.body = eq.filter_checkpoint(mlp)
                    self.head = eq.filter_jit(eq.nn.Linear(2, 1, key=key))
        """, count=2, span=("14:21-14:36", "15:21-15:53")),
        # with keywords: reported, no fix
        Flag("""
            import equinox as eqx
            import jax

            class Model(eqx.Module):
                layer: eqx.Module

                def __init__(self, key):
                    self.layer = jax.vmap(eqx.nn.Linear(2, 1, key=key), in_axes=1)
        """, fixed="""
            import equinox as eqx
            import jax

            class Model(eqx.Module):
                layer: eqx.Module

                def __init__(self, key):
                    self.layer = jax.vmap(eqx.nn.Linear(2, 1, key=key), in_axes=1)
        """, span="8:22-8:71"),
        # filter_vmap, a transformed plain function, a class that is not a module, vmap at call time
        Pass("""
            import equinox as eqx
            import jax
            import jax.numpy as jnp

            class Model(eqx.Module):
                layer: eqx.Module
                act: object

                def __init__(self, key):
                    self.layer = eqx.filter_vmap(eqx.nn.Linear(2, 1, key=key))
                    self.act = jax.vmap(jnp.tanh)

                def __call__(self, x):
                    return jax.vmap(self.layer)(x)

            class Plain:
                def __init__(self, key):
                    self.layer = jax.vmap(eqx.nn.Linear(2, 1, key=key))
        """),
    )


def _in_module_init(rule: Rule, site: Site) -> bool:
    """Is `site` directly in the `__init__` of an Equinox module class of this file?"""
    cls = enclosing_class(site.scope)
    function = rule.facts.body_at(site)
    return (cls is not None and isinstance(function, cst.FunctionDef) and function.name.value == "__init__"
            and is_module_class(rule.facts, cls))
