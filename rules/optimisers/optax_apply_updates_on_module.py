"""ODL204: `optax.apply_updates(model, updates)` on an Equinox module."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import Needs, Site, jax_api, positional_args, source_of
from odelint.api.finding import Edits, Replace, Safety
from odelint.api.rule import Callees, Flag, Pass, Rule
from odelint.rules.optimisers.common import LINEAR_LAYERS_TRAINED_IN_A_HELPER, module_fault

_APPLY_UPDATES = jax_api.names("optax_apply_updates")


class OptaxApplyUpdatesOnModule(Rule):
    """`optax.apply_updates` is applied to an Equinox module.

    ## What it does
    Flags `optax.apply_updates(model, updates)` (any import spelling) where `model` is
    an Equinox module.

    ## Why is this bad?
    `optax.apply_updates` adds every leaf of `updates` to the matching leaf of the
    model. Filtered updates hold `None` where the model holds functions, and the sum
    fails:

        TypeError: unsupported operand type(s) for +: 'custom_jvp' and 'NoneType'

    (equinox#107, #896.) `eqx.apply_updates` skips `None` updates and leaves the
    non-array fields untouched.

    ## Example
    ```python
    model = optax.apply_updates(model, updates)
    ```

    ## Use instead
    ```python
    model = eqx.apply_updates(model, updates)
    ```

    ## Fix safety
    Safe: on arrays both functions compute `param + update`; Equinox's version only adds
    the handling of `None` leaves.
    """

    code = "ODL204"
    name = "optax-apply-updates-on-module"
    summary = "optax.apply_updates is used on an Equinox module"
    triggers = (("optax",),)  # the module class may come from another file of the project
    fix_safety = Safety.SAFE
    fixtures = "tests/fixtures/ODL204"

    @classmethod
    def callees(cls) -> Callees:
        return Callees(names=frozenset(_APPLY_UPDATES))

    needs = Needs.calls_to(*_APPLY_UPDATES) & Needs.may_hold_modules()

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        if self.facts.qualname(node.func, site.scope) not in _APPLY_UPDATES:
            return
        args = positional_args(node)
        if not args or not self.facts.is_module(args[0].value, site):
            return
        text = source_of(self.context.module, args[0].value)
        fault = module_fault(self.facts, args[0].value, site, text)
        if fault is None:
            return
        self.report(
            node,
            f"`optax.apply_updates` on the Equinox module `{text}` fails: {fault.reason}; use `eqx.apply_updates`",
            fix=self.fix("Use eqx.apply_updates", lambda: self._swap(node, site)),
        )

    def _swap(self, node: cst.Call, site: Site) -> Edits:
        func, imports = self.facts.reference(jax_api.name("eqx_apply_updates"), site)
        return Edits([Replace(node.func, func)], imports)

    examples = (
        Flag("""
            import equinox as eqx
            import optax

            model = eqx.nn.MLP(2, 2, 8, 1, key=None)
            model = optax.apply_updates(model, None)
        """, fixed="""
            import equinox as eqx
            import optax

            model = eqx.nn.MLP(2, 2, 8, 1, key=None)
            model = eqx.apply_updates(model, None)
        """, span="5:9-5:41",
        ),
        Flag("""
            from typing import Callable
            from equinox import Module, apply_updates as au
            from optax import apply_updates

            class M(Module):
                f: Callable

            def step(m: M, u):
                return apply_updates(m, u)
        """, fixed="""
            from typing import Callable
            from equinox import Module, apply_updates as au
            from optax import apply_updates

            class M(Module):
                f: Callable

            def step(m: M, u):
                return au(m, u)
        """, span="9:12-9:31",
        ),
        Pass("""
            import equinox as eqx
            import optax
            import jax.numpy as jnp

            model = eqx.nn.MLP(2, 2, 8, 1, key=None)
            params = eqx.filter(model, eqx.is_array)
            params = optax.apply_updates(params, None)
            d = optax.apply_updates({'w': jnp.ones(2)}, None)
            model = eqx.apply_updates(model, None)
        """
        ),
        # a model of linear layers only, trained in a helper whose jitted step returns the model
        # it was given: every leaf is an array, so optax handles the whole module
        Pass(LINEAR_LAYERS_TRAINED_IN_A_HELPER),
        Pass("""
            import equinox as eqx

            class optax:
                apply_updates = staticmethod(lambda m, u: m)

            model = eqx.nn.MLP(2, 2, 8, 1, key=None)
            model = optax.apply_updates(model, None)
        """
        ),
    )
