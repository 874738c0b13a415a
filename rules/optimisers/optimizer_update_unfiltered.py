"""ODL202: `opt.update(grads, state, model)` with an unfiltered Equinox module as params."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import Needs, Site, keyword_arg, method_call, positional_args, source_of
from odelint.api.finding import Safety
from odelint.api.rule import Callees, Flag, Pass, Rule
from odelint.rules.optimisers.common import LINEAR_LAYERS_TRAINED_IN_A_HELPER, filter_fix, module_fault


class OptimizerUpdateUnfiltered(Rule):
    """An optax `update` receives a whole Equinox module as `params`.

    ## What it does
    Flags `optimiser.update(grads, state, model)` and `optimiser.update(grads, state,
    params=model)` where `model` is an Equinox module rather than its filtered arrays.

    ## Why is this bad?
    Optax tree-maps over `params`. The module's non-array leaves (activation functions,
    a `PIDController`'s `norm`) are not valid JAX values. With `optax.MultiSteps` the
    `lax.cond` inside its update raises

        TypeError: Argument '<jax._src.custom_derivatives.custom_jvp object>' of type
        '<class 'jax._src.custom_derivatives.custom_jvp'>' is not a valid JAX type

    and with `lamb` or `lars` (optax 0.2.8) `ValueError: pytree structure error`
    (diffrax#521, equinox#590, #853). With plain `adam` or `adamw` the same call happens
    to work, because optax skips `None` gradients, so the bug appears only when the
    optimiser is changed or wrapped.

    ## Example
    ```python
    updates, opt_state = optim.update(grads, opt_state, model)
    ```

    ## Use instead
    ```python
    updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    ```

    ## Fix safety
    Safe: the optimiser sees the same arrays it was initialised with; the module itself
    is not changed. The file's alias for `equinox` is reused.
    """

    code = "ODL202"
    name = "optimizer-update-unfiltered"
    summary = "An optax update receives an unfiltered Equinox module as params"
    triggers = (("optax",),)  # the module class may come from another file of the project
    fix_safety = Safety.SAFE
    fixtures = "tests/fixtures/ODL202"

    @classmethod
    def callees(cls) -> Callees:
        return Callees(methods=frozenset({"update"}))

    needs = Needs.may_hold_modules()

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        receiver = method_call(node, "update")
        args = positional_args(node)
        if receiver is None or args is None:
            return
        params = keyword_arg(node, "params")
        value = params.value if params is not None else (args[2].value if len(args) == 3 else None)
        if value is None or not self.facts.is_module(value, site) or not self.facts.may_be_optax(receiver, site):
            return
        text = source_of(self.context.module, value)
        fault = module_fault(self.facts, value, site, text)
        if fault is None:
            return
        fix = filter_fix(self, fault, value, site)
        self.report(
            value,
            f"`{source_of(self.context.module, receiver)}.update` gets the unfiltered Equinox module `{text}` "
            f"as params: {fault.reason}; pass `eqx.filter({text}, eqx.is_array)`" if fault.safe_to_filter else
            f"`{source_of(self.context.module, receiver)}.update` gets the Equinox module `{text}` as params: "
            f"{fault.reason}",
            fix=fix,
        )

    examples = (
        Flag("""
            import equinox as eqx
            import optax

            model = eqx.nn.MLP(2, 2, 8, 1, key=None)
            optim = optax.MultiSteps(optax.adam(1e-3), every_k_schedule=2)
            opt_state = optim.init(eqx.filter(model, eqx.is_array))

            @eqx.filter_jit
            def make_step(model, opt_state, grads):
                updates, opt_state = optim.update(grads, opt_state, model)
                return eqx.apply_updates(model, updates), opt_state

            for _ in range(3):
                model, opt_state = make_step(model, opt_state, None)
        """, fixed="""
            import equinox as eqx
            import optax

            model = eqx.nn.MLP(2, 2, 8, 1, key=None)
            optim = optax.MultiSteps(optax.adam(1e-3), every_k_schedule=2)
            opt_state = optim.init(eqx.filter(model, eqx.is_array))

            @eqx.filter_jit
            def make_step(model, opt_state, grads):
                updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))
                return eqx.apply_updates(model, updates), opt_state

            for _ in range(3):
                model, opt_state = make_step(model, opt_state, None)
        """, span="10:57-10:62",
        ),
        # params= keyword, `import equinox as eq`, a module built by a same-file function
        Flag("""
            import equinox as eq
            import optax as ox

            class Field(eq.Module):
                mlp: eq.nn.MLP

            def make():
                return Field(1.0)

            f = make()
            tx = ox.lamb(1e-3)
            u, s = tx.update(None, None, params=f)
        """, fixed="""
            import equinox as eq
            import optax as ox

            class Field(eq.Module):
                mlp: eq.nn.MLP

            def make():
                return Field(1.0)

            f = make()
            tx = ox.lamb(1e-3)
            u, s = tx.update(None, None, params=eq.filter(f, eq.is_array))
        """, span="12:37-12:38",
        ),
        # the module reaches the step function through eqx.filter_jit(step)
        Flag("""
            import equinox as eqx
            import optax

            def step(m, s, g, optim):
                return optim.update(g, s, m)

            fast = eqx.filter_jit(step)
            fast(eqx.nn.MLP(1, 1, 1, 1, key=None), None, None, optax.lars(0.1))
        """, fixed="""
            import equinox as eqx
            import optax

            def step(m, s, g, optim):
                return optim.update(g, s, eqx.filter(m, eqx.is_array))

            fast = eqx.filter_jit(step)
            fast(eqx.nn.MLP(1, 1, 1, 1, key=None), None, None, optax.lars(0.1))
        """, span="5:31-5:32",
        ),
        Pass("""
            import equinox as eqx
            import optax

            model = eqx.nn.MLP(2, 2, 8, 1, key=None)
            optim = optax.adamw(1e-3)
            params = eqx.filter(model, eqx.is_inexact_array)
            u, s = optim.update(None, None, params)
            u, s = optim.update(None, None, eqx.filter(model, eqx.is_array))
            u, s = optim.update(None, None, params={'w': 1.0})
            d = {}
            d.update(model)
        """
        ),
        # `model` rebound to filtered arrays before the call
        Pass("""
            import equinox as eqx
            import optax

            model = eqx.nn.MLP(2, 2, 8, 1, key=None)
            model = eqx.filter(model, eqx.is_array)
            u, s = optax.adam(1.0).update(None, None, model)
        """
        ),
        # an optimiser held in an attribute, the model in another (a trainer class)
        Flag("""
            import equinox as eqx
            import optax

            class Trainer:
                def __init__(self, key, learning_rate):
                    self.model = eqx.nn.MLP(2, 2, 8, 2, key=key)
                    self.optimizer = optax.MultiSteps(optax.adamw(learning_rate), every_k_schedule=4)
                    self.state = self.optimizer.init(eqx.filter(self.model, eqx.is_array))

                def step(self, grads):
                    updates, self.state = self.optimizer.update(grads, self.state, self.model)
                    self.model = eqx.apply_updates(self.model, updates)
        """, fixed="""
            import equinox as eqx
            import optax

            class Trainer:
                def __init__(self, key, learning_rate):
                    self.model = eqx.nn.MLP(2, 2, 8, 2, key=key)
                    self.optimizer = optax.MultiSteps(optax.adamw(learning_rate), every_k_schedule=4)
                    self.state = self.optimizer.init(eqx.filter(self.model, eqx.is_array))

                def step(self, grads):
                    updates, self.state = self.optimizer.update(grads, self.state, eqx.filter(self.model, eqx.is_array))
                    self.model = eqx.apply_updates(self.model, updates)
        """, message="`self.optimizer.update` gets the unfiltered Equinox module `self.model`", span="11:72-11:82"),
        # a model of linear layers only, trained in a helper whose jitted step returns the model
        # it was given: every leaf is an array, so optax handles the whole module
        Pass(LINEAR_LAYERS_TRAINED_IN_A_HELPER),
    )
