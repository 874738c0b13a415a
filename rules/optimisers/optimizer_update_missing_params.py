"""ODL203: `opt.update(grads, state)` without params for a transformation that needs them."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import Needs, Site, jax_api, keyword_arg, method_call, positional_args, source_of
from odelint.api.finding import Edits, Replace, Safety
from odelint.api.rule import Callees, Flag, Pass, Rule
from odelint.rules.optimisers.common import filtered, needs_params


class OptimizerUpdateMissingParams(Rule):
    """`update` is called without `params` on an optimiser that needs them.

    ## What it does
    Flags `optimiser.update(grads, state)` with no third argument and no `params=` when
    `optimiser` can be traced in this file to a transformation that reads the current
    parameters: `adamw`, `add_decayed_weights`, `lamb`, `lars`, `lion`, `adan`,
    `adafactor`, `lookahead`, ..., including a `chain`, `MultiSteps` or
    `inject_hyperparams` that wraps one of them.

    ## Why is this bad?
    Weight decay and trust ratios need the parameters. Optax raises on the first step:

        ValueError: You are using a transformation that requires the current value of
        parameters, but you are not passing `params` when calling `update`.

    (equinox#607, google/brax#647, optax#145.)

    ## Example
    ```python
    optim = optax.adamw(1e-3)
    updates, opt_state = optim.update(grads, opt_state)
    ```

    ## Use instead
    ```python
    updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    ```

    ## Fix safety
    Unsafe, and offered only when exactly one Equinox module is visible at the call: the
    linter cannot be sure that this module is the one being optimised. Without one, the
    finding is reported with no fix.
    """

    code = "ODL203"
    name = "optimizer-update-missing-params"
    summary = "An optax update that needs params is called without them"
    triggers = tuple(("optax", "update", name) for name in sorted(jax_api.optax_need_params()))
    fix_safety = Safety.UNSAFE
    fixtures = "tests/fixtures/ODL203"

    @classmethod
    def callees(cls) -> Callees:
        return Callees(methods=frozenset({"update"}))

    # an optimiser built from optax functions that need the params, and `x.update(a, b)`
    needs = (Needs.refers_to(*(f"optax.{name}" for name in jax_api.optax_need_params()))
             & Needs.method_calls("update", positional=2))

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        receiver = method_call(node, "update")
        args = positional_args(node)
        if receiver is None or args is None or len(args) != 2 or len(node.args) != 2 or keyword_arg(node, "params"):
            return
        culprits = needs_params(self.facts.optax_constructors(receiver, site))
        if not culprits:
            return
        message = (f"`{source_of(self.context.module, receiver)}` uses {', '.join(culprits)}, whose update needs "
                   f"the current parameters: pass them as the third argument")
        modules = self.facts.module_names_visible(site)
        fix = None
        if len(modules) == 1:
            fix = self.fix(f"Pass `{modules[0]}` filtered to its arrays",
                           lambda: self._add_params(node, modules[0], site), safe=False)
        self.report(node, message, fix=fix)

    def _add_params(self, node: cst.Call, name: str, site: Site) -> Edits:
        value, imports = filtered(self.facts, cst.Name(name), site)
        args = list(node.args)
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        return Edits([Replace(node, node.with_changes(args=[*args, cst.Arg(value)]))], imports)

    examples = (
        Flag("""
            import equinox as eqx
            import optax

            model = eqx.nn.MLP(2, 2, 8, 1, key=None)
            optim = optax.adamw(1e-3)

            def step(grads, opt_state):
                return optim.update(grads, opt_state)
        """, fixed="""
            import equinox as eqx
            import optax

            model = eqx.nn.MLP(2, 2, 8, 1, key=None)
            optim = optax.adamw(1e-3)

            def step(grads, opt_state):
                return optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))
        """,
            unsafe=True,
            message="optax.adamw",
            span="8:12-8:42",
        ),
        # wrapped: chain / MultiSteps / inject_hyperparams; no module in scope: no fix
        Flag("""
            import optax as ox
            from optax import chain, clip_by_global_norm, add_decayed_weights

            tx = ox.MultiSteps(chain(clip_by_global_norm(1.0), add_decayed_weights(1e-4)), 4)
            u, s = tx.update({'w': 1.0}, None)
            inj = ox.inject_hyperparams(ox.lamb)(learning_rate=1e-3)
            u, s = inj.update({'w': 1.0}, None)
        """,
            count=2,
            span=("5:8-5:35", "7:8-7:36"),
        ),
        Pass("""
            import optax

            optim = optax.adam(1e-3)
            u, s = optim.update(None, None)
            w = optax.adamw(1e-3)
            u, s = w.update(None, None, {'w': 1.0})
            u, s = w.update(None, None, params={'w': 1.0})
            cache = {}
            cache.update({}, x=1)
        """
        ),
        # MultiSteps around adam, which never reads params
        Pass("""
            import optax

            optim = optax.sgd(1e-3)
            sched = optax.MultiSteps(optax.adam(1e-3), 2)
            u, s = sched.update(None, None)
        """
        ),
    )
