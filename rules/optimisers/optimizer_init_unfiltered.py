"""ODL201: `opt.init(model)` with an unfiltered Equinox module."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import Needs, Site, method_call, positional_args, source_of
from odelint.api.finding import Safety
from odelint.api.rule import Callees, Flag, Pass, Rule
from odelint.rules.optimisers.common import filter_fix, module_fault


class OptimizerInitUnfiltered(Rule):
    """An optax optimiser is initialised with a whole Equinox module.

    ## What it does
    Flags `optimiser.init(model)` where `model` is an Equinox module (built from
    `eqx.nn.*`, from a class of this file that subclasses `eqx.Module`, returned by a
    function of this file that builds one, passed in from such a value, or annotated
    as one) that holds a leaf optax cannot handle. The message names that leaf
    (`model.mlp.activation` is a function). A module whose leaves are all arrays or
    Python numbers (`eqx.nn.Linear`) initialises fine and is not reported.

    ## Why is this bad?
    Optax expects a pytree of arrays. A module also holds non-array leaves: activation
    functions (`jax.nn.relu` in every `eqx.nn.MLP`), a `diffrax.PIDController`'s
    `norm`, static configuration. Every stateful optimiser (adam, adamw, sgd with
    momentum, MultiSteps, ...) builds its state with `zeros_like` over those leaves and
    crashes:

        TypeError: zeros_like requires ndarray or scalar arguments, got
        <class 'jax._src.custom_derivatives.custom_jvp'> at position 0.

    (equinox#69, #105, #257, #364, #613, #853; diffrax#521.) Plain `sgd` without
    momentum happens to work, which hides the bug until the optimiser changes.

    ## Example
    ```python
    model = eqx.nn.MLP(2, 2, 16, 2, key=key)
    opt_state = optim.init(model)
    ```

    ## Use instead
    ```python
    opt_state = optim.init(eqx.filter(model, eqx.is_array))
    ```

    ## Fix safety
    Safe: filtering keeps exactly the array leaves the optimiser can hold state for,
    which is what Equinox documents. No fix when a field holds a `jax.vmap`/`jax.jit`
    result: to the pytree that field is a function, so filtering would silence the crash
    and silently leave the parameters inside it untrained; build it with
    `eqx.filter_vmap`/`eqx.filter_jit` instead. The fix reuses the file's alias for `equinox`
    and adds `import equinox as eqx` only when there is none.
    """

    code = "ODL201"
    name = "optimizer-init-unfiltered"
    summary = "An optax optimiser is initialised with an unfiltered Equinox module"
    triggers = (("optax",),)  # the module class may come from another file of the project
    fix_safety = Safety.SAFE
    fixtures = "tests/fixtures/ODL201"

    @classmethod
    def callees(cls) -> Callees:
        return Callees(methods=frozenset({"init"}))

    needs = Needs.may_hold_modules()

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        receiver = method_call(node, "init")
        args = positional_args(node)
        if receiver is None or args is None or len(node.args) != 1 or len(args) != 1:
            return
        value = args[0].value
        if not self.facts.is_module(value, site) or not self.facts.may_be_optax(receiver, site):
            return
        if not self.facts.optax_keeps_param_state(receiver, site):
            return  # `sgd` without momentum, `scale`, ...: init never looks at the leaves
        text = source_of(self.context.module, value)
        fault = module_fault(self.facts, value, site, text)
        if fault is None:
            return
        fix = filter_fix(self, fault, value, site)
        self.report(
            value,
            f"`{source_of(self.context.module, receiver)}.init` gets the unfiltered Equinox module `{text}`: "
            f"{fault.reason}; optax crashes on such leaves, so pass `eqx.filter({text}, eqx.is_array)`"
            if fault.safe_to_filter else
            f"`{source_of(self.context.module, receiver)}.init` gets the Equinox module `{text}`: {fault.reason}",
            fix=fix,
        )

    examples = (
        Flag("""
            import equinox as eqx
            import jax
            import optax

            model = eqx.nn.MLP(2, 2, 16, 2, key=jax.random.PRNGKey(0))
            optim = optax.adam(1e-3)
            opt_state = optim.init(model)
        """, fixed="""
            import equinox as eqx
            import jax
            import optax

            model = eqx.nn.MLP(2, 2, 16, 2, key=jax.random.PRNGKey(0))
            optim = optax.adam(1e-3)
            opt_state = optim.init(eqx.filter(model, eqx.is_array))
        """,
            message="unfiltered Equinox module `model`",
            span="7:24-7:29",
        ),
        # aliases: `import equinox as eq`, `import optax as ox`, a same-file Module subclass
        Flag("""
            import equinox as eq
            import optax as ox

            class Net(eq.Module):
                mlp: eq.nn.MLP

            class Deeper(Net):
                pass

            net = Deeper(1.0)
            state = ox.adamw(1e-3).init(net)
        """, fixed="""
            import equinox as eq
            import optax as ox

            class Net(eq.Module):
                mlp: eq.nn.MLP

            class Deeper(Net):
                pass

            net = Deeper(1.0)
            state = ox.adamw(1e-3).init(eq.filter(net, eq.is_array))
        """, span="11:29-11:32",
        ),
        # from-imports only: `import equinox as eqx` is added after the imports
        Flag(
            '"""Training."""\nfrom equinox.nn import MLP\nfrom optax import adam as Adam\n\n'
            "def build(key):\n    return MLP(2, 2, 8, 1, key=key)\n\n"
            "def main(key):\n    model = build(key)\n    return Adam(1e-3).init(model)\n",
            fixed='"""Training."""\nfrom equinox.nn import MLP\nfrom optax import adam as Adam\n'
            "import equinox as eqx\n\n"
            "def build(key):\n    return MLP(2, 2, 8, 1, key=key)\n\n"
            "def main(key):\n    model = build(key)\n    return Adam(1e-3).init(eqx.filter(model, eqx.is_array))\n",
            span="10:28-10:33",
        ),
        # a parameter that receives a module at a call site, and an annotated one
        Flag("""
            import equinox as eqx
            import optax

            optim = optax.adam(1e-3)

            def make_state(m):
                return optim.init(m)

            def other(m: eqx.nn.MLP):
                return optim.init(m)

            make_state(eqx.nn.MLP(2, 2, 4, 1, key=None))
        """,
            fixed="""
            import equinox as eqx
            import optax

            optim = optax.adam(1e-3)

            def make_state(m):
                return optim.init(eqx.filter(m, eqx.is_array))

            def other(m: eqx.nn.MLP):
                return optim.init(eqx.filter(m, eqx.is_array))

            make_state(eqx.nn.MLP(2, 2, 4, 1, key=None))
        """,
            count=2,
            span=("7:23-7:24", "10:23-10:24"),
        ),
        # `self.model` declared as a module field of the trainer
        Flag("""
            import equinox as eqx
            import optax

            class Trainer:
                model: eqx.nn.MLP

                def start(self, optim):
                    return optim.init(self.model)
        """, fixed="""
            import equinox as eqx
            import optax

            class Trainer:
                model: eqx.nn.MLP

                def start(self, optim):
                    return optim.init(eqx.filter(self.model, eqx.is_array))
        """, span="8:27-8:37",
        ),
        Pass("""
            import equinox as eqx
            import optax
            import jax.numpy as jnp

            model = eqx.nn.MLP(2, 2, 16, 2, key=None)
            optim = optax.adam(1e-3)
            s1 = optim.init(eqx.filter(model, eqx.is_array))
            params, static = eqx.partition(model, eqx.is_inexact_array)
            s2 = optim.init(params)
            s3 = optim.init({'w': jnp.ones(3)})
            p4 = eqx.filter(model, eqx.is_array)
            s4 = optim.init(p4)
            s5 = optim.init(eqx.partition(model, eqx.is_array)[0])
        """
        ),
        # not an optax optimiser, a name that only looks like a module, no optax import
        Pass("""
            import equinox as eqx
            import optax

            class Thing:
                def init(self, m):
                    return m

            model = eqx.nn.MLP(2, 2, 16, 2, key=None)
            Thing().init(model)
            model.init(model)
            def f(model):
                return optax.adam(1e-3).init(model)
        """
        ),
        Pass("""
            import equinox as eqx

            class optax:
                @staticmethod
                def adam(lr):
                    return lr

            model = eqx.nn.MLP(2, 2, 16, 2, key=None)
            opt = optax.adam(1e-3)
            opt.init(model)
        """
        ),
        Pass("""
            import equinox as eqx
            import optax

            model = eqx.nn.MLP(2, 2, 16, 2, key=None)
            opt_state = optax.adam(1e-3).init(model)  # noqa: ODL201
        """
        ),
        # stateless optimisers never look at the leaves in init
        Pass("""
            import equinox as eqx
            import optax

            model = eqx.nn.MLP(2, 2, 16, 2, key=None)
            s1 = optax.sgd(1e-2).init(model)
            s2 = optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(1e-2, momentum=None)).init(model)
        """),
        Flag("""
            import equinox as eqx
            import optax

            model = eqx.nn.MLP(2, 2, 16, 2, key=None)
            state = optax.sgd(1e-2, momentum=0.9).init(model)
        """, fixed="""
            import equinox as eqx
            import optax

            model = eqx.nn.MLP(2, 2, 16, 2, key=None)
            state = optax.sgd(1e-2, momentum=0.9).init(eqx.filter(model, eqx.is_array))
        """, message="`model.activation` is a function", span="5:44-5:49"),
        # modules whose leaves are all arrays (or numbers) initialise fine
        Pass("""
            import equinox as eqx
            import jax
            import optax

            class Affine(eqx.Module):
                w: jax.Array
                b: float
                lin: eqx.nn.Linear

            linear = eqx.nn.Linear(2, 2, key=jax.random.PRNGKey(0))
            s1 = optax.adam(1e-3).init(linear)
            s2 = optax.adam(1e-3).init(Affine(None, 1.0, linear))
        """),
        # a stored jax.vmap result: filtering would silently drop its parameters, so no fix
        Flag("""
            import equinox as eqx
            import jax
            import optax

            class Ensemble(eqx.Module):
                heads: object

                def __init__(self, key):
                    self.heads = jax.vmap(eqx.nn.Linear(2, 2, key=key))

            model = Ensemble(jax.random.PRNGKey(0))
            opt_state = optax.adam(1e-3).init(model)
        """, fixed="""
            import equinox as eqx
            import jax
            import optax

            class Ensemble(eqx.Module):
                heads: object

                def __init__(self, key):
                    self.heads = jax.vmap(eqx.nn.Linear(2, 2, key=key))

            model = Ensemble(jax.random.PRNGKey(0))
            opt_state = optax.adam(1e-3).init(model)
        """, message="`model.heads` is a function (a `jax.vmap` result): filtering drops the parameters",
            span="12:35-12:40"),
    )
