"""ODL206: `lax.stop_gradient` in an Equinox module's `__init__`, meant to freeze a field."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import (
    STOP_GRADIENT,
    ModuleClass,
    Needs,
    Site,
    argument_at,
    constructions,
    enclosing_class,
    every_array_of,
    is_module_class,
    method_call,
    source_of,
)
from odelint.api.rule import Callees, Flag, Pass, Rule


class StopGradientInInit(Rule):
    """`lax.stop_gradient` in an Equinox module's `__init__` does not freeze the field.

    ## What it does
    Flags `self.field = jax.lax.stop_gradient(value)` in the `__init__` of an Equinox
    module class, when that `__init__` is not itself run under differentiation in this
    file (building the module inside a loss is the one case where it stops something).

    Also flags `jax.lax.stop_gradient(self.field)` in a method of an Equinox module class
    when an optimiser of this file is initialised on every array of an instance of that
    class (`optim.init(eqx.filter(model, eqx.is_array))`, `is_inexact_array`, the spec by
    position or as `filter_spec=`, or the first part of `eqx.partition`) and applies
    decoupled weight decay to every parameter: `optax.adamw`/`nadamw`/`adamaxw` or
    `optax.add_decayed_weights` with a non-zero rate and no `mask` (or `mask=None`), not
    wrapped in `optax.masked`/`multi_transform`. The finding is at the `stop_gradient` use (the field
    the user meant to freeze) and names the optimiser and its decaying transformation.

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

    At the use site `stop_gradient` does zero the field's gradient, but decoupled weight
    decay does not read the gradient: `adamw` subtracts `lr * weight_decay * param` from
    every parameter it is given, so the "frozen" field shrinks at every step (reproduced on
    optax 0.2.8: a buffer `[0.5, -0.5, 2.0]` frozen this way is `[0.4755, -0.4755, 1.902]`
    after 5 steps of `adamw(0.1, weight_decay=0.1)`, not its initial value).

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

    For the frozen field that still decays: `eqx.partition(model, spec)` with a filter spec
    that leaves the field out, and the optimiser initialised on the trainable part; or
    `optax.adamw(..., mask=...)` / `optax.masked` so the decay skips it.

    ## Fix safety
    No fix: where the field should stop its gradient (each use, or the optimiser's
    filter), and how the optimiser should leave it out, are design choices.
    """

    code = "ODL206"
    name = "stop-gradient-in-init"
    summary = "lax.stop_gradient in an Equinox module's __init__ does not freeze the field"
    triggers = (("stop_gradient", "__init__"), ("stop_gradient", "decay"), ("stop_gradient", "adamw"),
                ("stop_gradient", "adamaxw"))
    fixtures = "tests/fixtures/ODL206"

    # both parts: a module class, and a call of `stop_gradient`
    needs = Needs.fact("stop_gradient_on_field")

    @classmethod
    def callees(cls) -> Callees:
        return Callees(names=frozenset({STOP_GRADIENT}), methods=frozenset({"init"}))

    def __init__(self, context) -> None:
        super().__init__(context)
        self._frozen: list[tuple[cst.Call, cst.ClassDef, str]] = []  # stop_gradient(self.field) in a method
        self._decaying: dict[int, tuple[ModuleClass, list[str], str]] = {}  # class -> decays, optimiser

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        """Part (b): remember each `stop_gradient(self.field)` in a module's method, and each
        `optimiser.init(...)` over all the arrays of a module with a decay over every parameter."""
        receiver = method_call(node, "init")
        if receiver is not None:
            self._note_optimiser(node, receiver, site)
            return
        argument = argument_at(node, "x", 0)
        value = argument.value if argument is not None else None
        cls = enclosing_class(site.scope)
        function = self.facts.body_at(site)
        if (isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self"
                and cls is not None and isinstance(function, cst.FunctionDef) and function.name.value != "__init__"
                and self.facts.qualname(node.func, site.scope) == STOP_GRADIENT and is_module_class(self.facts, cls)):
            self._frozen.append((node, cls, value.attr.value))

    def _note_optimiser(self, node: cst.Call, receiver: cst.BaseExpression, site: Site) -> None:
        params = argument_at(node, "params", 0)
        decays = self.facts.optax_unmasked_decay(receiver, site)
        model = every_array_of(self.facts, params.value, site) if params is not None and decays else None
        found = self.facts.module_class(model, site) if model is not None else None
        if found is not None and found.node is not None:
            self._decaying.setdefault(id(found.node), (found, decays, source_of(self.context.module, receiver)))

    def finish(self) -> None:
        for node, cls, field in self._frozen:
            decaying = self._decaying.get(id(cls))
            if decaying is None:
                continue
            module_class, decays, optimiser = decaying
            if any(leaf.path == field for leaf in self.facts.non_array_leaves(module_class)):
                continue  # not an array: the optimiser never sees it
            self.report(node, f"`{cls.name.value}.{field}` is frozen with `stop_gradient` where it is used, but "
                              f"`{optimiser}` is initialised on every array of the model and applies "
                              f"{', '.join(f'`{d}`' for d in decays)} without a mask: its gradient is zero, yet "
                              f"weight decay still shrinks it at every step; partition `{field}` out of what the "
                              f"optimiser sees (`eqx.partition` with a filter spec) or pass a `mask=`")

    def visit_Assign(self, node: cst.Assign, site: Site) -> None:
        value = node.value
        if (len(node.targets) != 1 or not isinstance(value, cst.Call)
                or self.facts.qualname(value.func, site.scope) != STOP_GRADIENT):
            return
        target = node.targets[0].target
        if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                and target.value.value == "self"):
            return
        cls = enclosing_class(site.scope)
        function = self.facts.body_at(site)
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
        # part (b): frozen at the use site, yet `adamw` over every array of the model decays it
        Flag("""
            import equinox as eqx
            import jax
            import jax.numpy as jnp
            import optax

            class Encoder(eqx.Module):
                weight: jax.Array
                mean: jax.Array

                def __call__(self, x):
                    return self.weight @ (x - jax.lax.stop_gradient(self.mean))

            model = Encoder(jnp.eye(3), jnp.ones(3))
            optim = optax.adamw(1e-3, weight_decay=1e-2)
            opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))
        """, message="`Encoder.mean` is frozen with `stop_gradient` where it is used, but `optim`", span="11:35-11:67"),
        # a chain with `add_decayed_weights`, the arrays filtered into a name first
        Flag("""
            import equinox as eqx
            import jax
            import optax
            from jax import lax

            class Net(eqx.Module):
                layer: eqx.nn.Linear
                scale: jax.Array

                def __call__(self, x):
                    return self.layer(x) * lax.stop_gradient(self.scale)

            def make(model):
                optim = optax.chain(optax.clip_by_global_norm(1.0), optax.add_decayed_weights(1e-4), optax.sgd(1e-2))
                params = eqx.filter(model, eqx.is_array)
                return optim, optim.init(params)

            net = Net(eqx.nn.Linear(2, 2, key=jax.random.key(0)), jax.numpy.ones(2))
            make(net)
        """, message="optax.add_decayed_weights", span="11:32-11:61"),
        # the frozen field partitioned out; `mask=`; plain `adam`, which never decays
        Pass("""
            import equinox as eqx
            import jax
            import jax.numpy as jnp
            import optax

            class Encoder(eqx.Module):
                weight: jax.Array
                mean: jax.Array

                def __call__(self, x):
                    return self.weight @ (x - jax.lax.stop_gradient(self.mean))

            model = Encoder(jnp.eye(3), jnp.ones(3))
            spec = eqx.tree_at(lambda m: m.mean, jax.tree_util.tree_map(eqx.is_inexact_array, model), False)
            trainable, frozen = eqx.partition(model, spec)
            optim = optax.adamw(1e-3)
            opt_state = optim.init(trainable)
        """),
        Pass("""
            import equinox as eqx
            import jax
            import jax.numpy as jnp
            import optax

            class Encoder(eqx.Module):
                weight: jax.Array
                mean: jax.Array

                def __call__(self, x):
                    return self.weight @ (x - jax.lax.stop_gradient(self.mean))

            class Scaled(eqx.Module):
                weight: jax.Array
                scale: float

                def __call__(self, x):
                    return self.weight * jax.lax.stop_gradient(self.scale) * x

            model = Encoder(jnp.eye(3), jnp.ones(3))
            decay = Encoder(True, False)
            scaled = Scaled(jnp.ones(3), 2.0)
            state = optax.adamw(1e-3).init(eqx.filter(scaled, eqx.is_array))
            masked = optax.adamw(1e-3, mask=decay)
            state = masked.init(eqx.filter(model, eqx.is_array))
            plain = optax.adam(1e-3)
            state = plain.init(eqx.filter(model, eqx.is_array))
        """),
        # part (b) spelled with keywords: `filter_spec=`, `pytree=`, `params=`, `mask=None`
        Flag("""
            import equinox as eqx
            import jax
            import jax.numpy as jnp
            import optax

            class Normaliser(eqx.Module):
                scale: jax.Array
                shift: jax.Array

                def __call__(self, x):
                    return (x - jax.lax.stop_gradient(self.shift)) * self.scale

            model = Normaliser(jnp.ones(3), jnp.zeros(3))
            optim = optax.adamw(learning_rate=1e-3, weight_decay=1e-4, mask=None)
            params = eqx.filter(pytree=model, filter_spec=eqx.is_inexact_array)
            state = optim.init(params=params)
        """, message="`Normaliser.shift` is frozen with `stop_gradient` where it is used, but `optim`",
            span="11:21-11:54"),
        Flag("""
            import equinox as eqx
            import jax
            import optax

            class Head(eqx.Module):
                linear: eqx.nn.Linear
                temperature: jax.Array

                def __call__(self, x):
                    return self.linear(x) / jax.lax.stop_gradient(self.temperature)

            head = Head(eqx.nn.Linear(4, 2, key=jax.random.key(0)), jax.numpy.array(2.0))
            trainable, static = eqx.partition(head, filter_spec=eqx.is_array)
            optim = optax.chain(optax.add_decayed_weights(weight_decay=1e-4), optax.adam(1e-3))
            state = optim.init(trainable)
        """, message="applies `optax.add_decayed_weights` without a mask", span="10:33-10:72"),
        # the keyword spellings that leave the field out: `inverse=True`, a spec of the user's
        Pass("""
            import equinox as eqx
            import jax
            import jax.numpy as jnp
            import optax

            class Normaliser(eqx.Module):
                scale: jax.Array
                shift: jax.Array

                def __call__(self, x):
                    return (x - jax.lax.stop_gradient(self.shift)) * self.scale

            model = Normaliser(jnp.ones(3), jnp.zeros(3))
            optim = optax.adamw(learning_rate=1e-3, weight_decay=1e-4)
            spec = Normaliser(True, False)
            state = optim.init(params=eqx.filter(model, filter_spec=spec))
            statics = optim.init(eqx.filter(model, filter_spec=eqx.is_array, inverse=True))
        """),
    )
