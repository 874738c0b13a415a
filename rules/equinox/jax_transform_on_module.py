"""ODL601: plain `jax.jit`/`grad`/`value_and_grad`/`vmap` on a function that gets a module with
function or string leaves."""

from __future__ import annotations

from odelint.analysis import Application, Needs, jax_api, source_of
from odelint.api.finding import Edits, Replace, Safety
from odelint.api.rule import Flag, Pass
from odelint.rules.equinox.common import TransformApplicationRule

# The transforms this rule checks, and what each raises on a function or string leaf.
_FAILURES: dict[str, str] = jax_api.names_table("module_transforms")
# Keywords the Equinox transform takes with the same meaning.
_SAME_KEYWORDS = {name: set(words) for name, words in jax_api.names_table("same_keywords").items()}


class JaxTransformOnModule(TransformApplicationRule):
    """A plain JAX transform gets an Equinox module whose leaves are not all arrays.

    ## What it does
    Flags `jax.jit`, `jax.grad`, `jax.value_and_grad` and `jax.vmap` (called, or used as
    a decorator, also through `functools.partial`) on a function of this file when an
    argument the transform traces, differentiates or maps is an Equinox module holding a
    function or a string: `eqx.nn.MLP`'s `activation`, a `Callable` field, a `str` field.
    The module is found from the calls of the transformed function or from the
    parameter's annotation; the message names the leaf. Modules of arrays only
    (`eqx.nn.Linear`), static arguments, `argnums` that skip the module and
    `in_axes=None` for it are fine and stay quiet.

    ## Why is this bad?
    JAX transforms accept only pytrees of arrays. The function leaf crashes the call:

        TypeError: Error interpreting argument to <function loss> as an abstract array.
        The problematic value is of type <class 'jax._src.custom_derivatives.custom_jvp'>
        and was passed to the function at path m.activation.

    (`jax.jit`), and `TypeError: Argument '<...custom_jvp object>' of type <class
    '...custom_jvp'> is not a valid JAX type` (`jax.grad`, `jax.value_and_grad`,
    `jax.vmap` mapping the module). Equinox's `filter_*` transforms treat non-array
    leaves as static (equinox#149, #1127, #11, #523, #709, PR#239 FAQ entry).

    ## Example
    ```python
    model = eqx.nn.MLP(2, 1, 8, 2, key=key)
    loss_value = jax.jit(loss)(model, x)
    ```

    ## Use instead
    ```python
    loss_value = eqx.filter_jit(loss)(model, x)
    ```

    ## Fix safety
    Safe when the transform has no keywords (or only `has_aux`, which `filter_grad` and
    `filter_value_and_grad` take with the same meaning): the `eqx.filter_*` transform
    traces, differentiates or maps the same arrays and keeps the other leaves static.
    With `static_argnums`, `argnums`, `in_axes`, ... the Equinox spelling differs
    (`filter_grad` differentiates only the first argument), so the rule only reports.
    """

    code = "ODL601"
    name = "jax-transform-on-module"
    summary = "jax.jit/grad/value_and_grad/vmap on a function that gets an Equinox module with non-array leaves"
    triggers = (("jax",),)  # the module may come from diffrax, lineax, ... without "equinox" in the file
    fix_safety = Safety.SAFE
    fixtures = "tests/fixtures/ODL601"

    needs = (Needs.refers_to(*_FAILURES) & Needs.transforms_own_function(*_FAILURES) & Needs.may_hold_modules()
             & Needs.transforms_get_invalid_module(*_FAILURES))

    def check(self, application: Application) -> None:
        if application.qualname not in _FAILURES:
            return
        for param in application.parameters:
            if not application.consumes(param):
                continue
            module_class = self.facts.module_received(application, param)
            if module_class is None:
                continue
            leaves = [leaf for leaf in self.facts.non_array_leaves(module_class) if leaf.kind.crashes_transforms]
            if leaves:
                where = module_class.defined_in(self.context.path)
                named = f"`{module_class.name}`" + (f", defined in `{where}`" if where else "")
                self._report(application, param.name, named, leaves[0].describe(param.name))
                return

    def _report(self, application: Application, param: str, named: str, leaf: str) -> None:
        spelled = source_of(self.context.module, application.spelled)
        equinox = application.transform.equinox or ""
        fix = None
        same_meaning = set(application.keywords) <= _SAME_KEYWORDS.get(application.qualname, set())
        if same_meaning and not (application.decorator and application.options is not None):
            fix = self.fix(f"Use `{equinox}`", lambda: self._replace(application, equinox))
        self.report(
            application.spelled,
            f"`{spelled}` gets an Equinox module ({named}) for parameter `{param}` and {leaf}: "
            f"it raises `{_FAILURES[application.qualname]}`; use `{equinox.replace('equinox.', 'eqx.')}`",
            fix=fix,
        )

    def _replace(self, application: Application, equinox: str) -> Edits:
        new, imports = self.facts.reference(equinox, application.site)
        return Edits([Replace(application.spelled, new)], imports)

    examples = (
        Flag("""
            import equinox as eqx
            import jax
            import jax.numpy as jnp

            def loss(m, x):
                return jnp.sum(m(x))

            model = eqx.nn.MLP(2, 1, 8, 2, key=jax.random.PRNGKey(0))
            value = jax.jit(loss)(model, jnp.ones(2))
        """, fixed="""
            import equinox as eqx
            import jax
            import jax.numpy as jnp

            def loss(m, x):
                return jnp.sum(m(x))

            model = eqx.nn.MLP(2, 1, 8, 2, key=jax.random.PRNGKey(0))
            value = eqx.filter_jit(loss)(model, jnp.ones(2))
        """, message="`m.activation` is a function", span="9:9-9:16"),
        # `from jax import jit`, `import equinox as eq`, a rebound name, a tuple return
        Flag("""
            import equinox as eq
            from jax import jit, random

            class Net(eq.Module):
                name: str

                def __call__(self, x):
                    return x

            def make(key):
                return Net("net"), random.split(key)

            def step(net, x):
                return net(x)

            step = jit(step)
            net, keys = make(random.PRNGKey(0))
            step(net, 1.0)
        """, fixed="""
            import equinox as eq
            from jax import jit, random

            class Net(eq.Module):
                name: str

                def __call__(self, x):
                    return x

            def make(key):
                return Net("net"), random.split(key)

            def step(net, x):
                return net(x)

            step = eq.filter_jit(step)
            net, keys = make(random.PRNGKey(0))
            step(net, 1.0)
        """, message="`net.name` is a string", span="16:8-16:11"),
        # decorators; an annotated parameter; `has_aux` keeps the fix; equinox imported on demand
        Flag("""
            import jax
            from equinox.nn import MLP

            @jax.value_and_grad
            def loss(model: MLP, x):
                return model(x).sum()

            @jax.grad
            def other(model: MLP, x):
                return model(x).sum()

            def aux(model: MLP):
                return model(1.0).sum(), 0

            g = jax.grad(aux, has_aux=True)
        """, fixed="""
            import jax
            from equinox.nn import MLP
            import equinox as eqx

            @eqx.filter_value_and_grad
            def loss(model: MLP, x):
                return model(x).sum()

            @eqx.filter_grad
            def other(model: MLP, x):
                return model(x).sum()

            def aux(model: MLP):
                return model(1.0).sum(), 0

            g = eqx.filter_grad(aux, has_aux=True)
        """, count=3, span=("4:2-4:20", "8:2-8:10", "15:5-15:13")),
        # a jitted method of a module: `self` holds the MLP (equinox#11)
        Flag("""
            import equinox as eqx
            import jax

            class Model(eqx.Module):
                mlp: eqx.nn.MLP

                @jax.jit
                def __call__(self, x):
                    return self.mlp(x)
        """, fixed="""
            import equinox as eqx
            import jax

            class Model(eqx.Module):
                mlp: eqx.nn.MLP

                @eqx.filter_jit
                def __call__(self, x):
                    return self.mlp(x)
        """, message="`self.mlp.activation` is a function", span="7:6-7:13"),
        # keywords whose meaning differs: reported without a fix; functools.partial
        Flag("""
            import functools
            import equinox as eqx
            import jax
            import jax.numpy as jnp

            def loss(scale, m, x):
                return scale * jnp.sum(m(x))

            model = eqx.nn.MLP(2, 1, 8, 2, key=jax.random.PRNGKey(0))
            jax.grad(loss, argnums=1)(2.0, model, jnp.ones(2))
            jax.vmap(functools.partial(loss, 2.0), in_axes=(0, 0))(model, jnp.ones((3, 2)))

            @functools.partial(jax.jit, static_argnums=0)
            def step(scale, m, x):
                return loss(scale, m, x)

            step(2.0, model, jnp.ones(2))
        """, count=3, message="use `eqx.filter_grad`", span=("10:1-10:9", "11:1-11:9", "13:20-13:27")),
        # the function a field holds comes from a parameter's default (`Net()`), or from a
        # subclass that hands its parameter on through `super().__init__`
        Flag("""
            import equinox as eqx
            import jax
            import jax.numpy as jnp

            class Net(eqx.Module):
                weight: jax.Array
                activation: object

                def __init__(self, activation=jax.nn.relu):
                    self.weight = jnp.ones(2)
                    self.activation = activation

            class Wide(Net):
                def __init__(self, activation):
                    super().__init__(activation)

            def loss(net, x):
                return jnp.sum(net.activation(net.weight * x))

            value = jax.jit(loss)(Net(), jnp.ones(2))
            grads = jax.grad(loss)(Wide(lambda v: v), jnp.ones(2))
        """, fixed="""
            import equinox as eqx
            import jax
            import jax.numpy as jnp

            class Net(eqx.Module):
                weight: jax.Array
                activation: object

                def __init__(self, activation=jax.nn.relu):
                    self.weight = jnp.ones(2)
                    self.activation = activation

            class Wide(Net):
                def __init__(self, activation):
                    super().__init__(activation)

            def loss(net, x):
                return jnp.sum(net.activation(net.weight * x))

            value = eqx.filter_jit(loss)(Net(), jnp.ones(2))
            grads = eqx.filter_grad(loss)(Wide(lambda v: v), jnp.ones(2))
        """, count=2, message="`net.activation` is a function", span=("20:9-20:16", "21:9-21:17")),
        # arrays only, static or unmapped arguments, argnums that skip the module, filter_jit
        Pass("""
            import functools
            import equinox as eqx
            import jax
            import jax.numpy as jnp

            class Affine(eqx.Module):
                w: jax.Array
                scale: float

            def loss(m, x):
                return jnp.sum(m(x))

            linear = eqx.nn.Linear(2, 1, key=jax.random.PRNGKey(0))
            mlp = eqx.nn.MLP(2, 1, 8, 2, key=jax.random.PRNGKey(0))
            jax.jit(loss)(linear, jnp.ones(2))
            jax.grad(lambda a, x: jnp.sum(a.w * x) * a.scale)(Affine(jnp.ones(2), 2.0), jnp.ones(2))
            jax.grad(loss, argnums=1)(mlp, jnp.ones(2))
            jax.vmap(loss, in_axes=(None, 0))(mlp, jnp.ones((3, 2)))
            eqx.filter_jit(loss)(mlp, jnp.ones(2))
            jax.jit(functools.partial(loss, mlp))(jnp.ones(2))
            jax.vmap(mlp)(jnp.ones((3, 2)))

            @jax.jit
            def double(x):
                return 2 * x

            double(jnp.ones(2))
        """),
        # every call gives the field an array, or may (`**options`): the default is not assumed
        Pass("""
            import equinox as eqx
            import jax
            import jax.numpy as jnp

            class Scaled(eqx.Module):
                weight: jax.Array
                scale: object

                def __init__(self, scale=jax.nn.relu):
                    self.weight = jnp.ones(2)
                    self.scale = scale

            def loss(m, x):
                return jnp.sum(m.weight * m.scale * x)

            jax.jit(loss)(Scaled(jnp.ones(2)), jnp.ones(2))
            jax.grad(loss)(Scaled(**options), jnp.ones(2))
        """),
    )
