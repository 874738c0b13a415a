"""ODL301: `io_callback` / `pure_callback` on values that may carry a tangent."""

from __future__ import annotations

import functools

import libcst as cst
from odelint.analysis import STOP_GRADIENT, DefinedAs, Needs, Site, callbacks, is_stop_gradient, jax_api, source_of
from odelint.api.finding import Edits, Replace, Safety
from odelint.api.rule import Callees, FileContext, Flag, Pass, Rule

# keywords of the callback functions themselves, not forwarded to the callback
_OWN_KEYWORDS = frozenset({"sharding", "vmap_method", "vectorized", "ordered", "result_shape_dtypes"})
# attributes of an array that are static under tracing
_STATIC_ATTRIBUTES = frozenset({"shape", "dtype", "ndim", "size"})


class CallbackWithoutStopGradient(Rule):
    """A host callback receives a value that may be differentiated.

    ## What it does
    Flags `io_callback(...)`, `pure_callback(...)` and `eqx.filter_pure_callback(...)`
    (any import spelling) inside code that may be differentiated, when a forwarded
    argument is not a constant and not wrapped in `jax.lax.stop_gradient`. Code may be
    differentiated when it is a function passed to or decorated by `jax.grad`,
    `value_and_grad`, `jvp`, `vjp`, `jacfwd`, `jacrev`, `hessian`, `linearize` or their
    `eqx.filter_*` forms, a method of a `diffrax.AbstractProgressMeter` subclass (diffrax
    calls it inside a solve that may be differentiated), or a function of this file that
    such code calls or hands on. `jax.debug.callback` and `jax.debug.print` are not
    flagged: they work under differentiation and cost nothing.

    ## Why is this bad?
    Host callbacks have no differentiation rule. As soon as an argument carries a tangent
    (a progress meter while the solve is differentiated with respect to `t1`, a logging
    callback inside a loss), tracing fails:

        ValueError: IO callbacks do not support JVP.
        ValueError: Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use
        callbacks while taking gradients.

    (diffrax#396, where `stop_gradient` on the progress value was the workaround.)

    ## Example
    ```python
    class Meter(diffrax.AbstractProgressMeter):
        def step(self, state, progress):
            io_callback(report, None, progress)
            return state
    ```

    ## Use instead
    ```python
            io_callback(report, None, jax.lax.stop_gradient(progress))
    ```

    ## Fix safety
    Safe when the callback's result is unused: the host only sees the same values, and
    nothing flows back into the computation. Unsafe when the result is used: it then
    counts as a constant for differentiation, which is what a host computation is, but
    may not be what the author meant. The fix reuses the file's `jax` import.
    """

    code = "ODL301"
    name = "callback-without-stop-gradient"
    summary = "A host callback gets a value that may be differentiated, without stop_gradient"
    # a callback, and something that differentiates (or a progress meter)
    triggers = tuple((callback, transform) for callback in ("io_callback", "pure_callback")
                     for transform in ("grad", "jvp", "vjp", "jac", "hessian", "linearize", "ProgressMeter"))
    fix_safety = Safety.SAFE
    fixtures = "tests/fixtures/ODL301"

    @classmethod
    def callees(cls) -> Callees:
        return Callees(names=frozenset(callbacks()))

    needs = Needs.differentiated_calls_to(*callbacks())

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._unused: set[int] = set()
        self._found: list[tuple[cst.Call, Site, str, list[cst.Arg], str]] = []

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        qualname = self.facts.qualname(node.func, site.scope) or ""
        forwarded_from = callbacks().get(qualname or "")
        if forwarded_from is None:
            return
        reason = self.facts.differentiation.why_differentiated(site)
        if reason is None:
            return
        traced = [arg for arg in _forwarded(node, forwarded_from) if not self._static(arg.value, site)]
        if traced:
            self._found.append((node, site, qualname, traced, reason))

    def visit_Expr(self, node: cst.Expr, site: Site) -> None:
        self._unused.add(id(node.value))

    def finish(self) -> None:
        for node, site, qualname, traced, reason in self._found:
            names = ", ".join(f"`{source_of(self.context.module, arg.value)}`" for arg in traced)
            error = jax_api.callbacks()[qualname].error
            fix = None
            if not any(arg.star for arg in traced):
                unused = id(node) in self._unused
                fix = self.fix("Wrap the forwarded values in `jax.lax.stop_gradient`",
                               functools.partial(self._stop, traced, site), safe=unused)
            self.report(node, f"`{qualname.rsplit('.', 1)[1]}` gets {names}, which may carry a tangent "
                              f"({reason}); differentiating raises `ValueError: {error}`: "
                              f"pass {'it' if len(traced) == 1 else 'them'} through `jax.lax.stop_gradient`", fix=fix)

    def _stop(self, traced: list[cst.Arg], site: Site) -> Edits:
        function, imports = self.facts.reference(STOP_GRADIENT, site)
        return Edits([Replace(arg.value, cst.Call(function, [cst.Arg(arg.value)])) for arg in traced], imports)

    def _static(self, node: cst.BaseExpression, site: Site) -> bool:
        """Constants, shapes and dtypes, and values already cut from differentiation."""
        if isinstance(node, (cst.BaseNumber, cst.BaseString)) or is_stop_gradient(self.facts, node, site.scope):
            return True
        if isinstance(node, (cst.Tuple, cst.List)):
            return all(self._static(element.value, site) for element in node.elements)
        if isinstance(node, cst.Attribute):
            return node.attr.value in _STATIC_ATTRIBUTES
        if isinstance(node, cst.Name):
            definitions = self.facts.definitions(node, site)
            if not definitions:
                return node.value in ("None", "True", "False")
            return all(d.what in (DefinedAs.IMPORT, DefinedAs.FUNCTION, DefinedAs.CLASS)
                       or (d.value is not None and not isinstance(d.value, cst.Name) and self._static(d.value, d.site))
                       for d in definitions)
        return False

    examples = (
        # a progress meter's step: diffrax calls it inside a solve that may be differentiated
        Flag("""
            import diffrax
            import jax
            from jax.experimental import io_callback

            class Meter(diffrax.AbstractProgressMeter):
                def step(self, state, progress):
                    io_callback(print, None, progress, ordered=True)
                    return state
        """, fixed="""
            import diffrax
            import jax
            from jax.experimental import io_callback

            class Meter(diffrax.AbstractProgressMeter):
                def step(self, state, progress):
                    io_callback(print, None, jax.lax.stop_gradient(progress), ordered=True)
                    return state
        """,
            message="IO callbacks do not support JVP",
            span="7:9-7:57",
        ),
        # a helper called from a grad-decorated loss; the result is used: unsafe; `lax` alias reused
        Flag("""
            import jax
            from jax import lax

            def host(x):
                return x

            def logged(x):
                return jax.pure_callback(host, x, x * 2.0, 3)

            @jax.grad
            def loss(x):
                return logged(x) + x
        """, fixed="""
            import jax
            from jax import lax

            def host(x):
                return x

            def logged(x):
                return jax.pure_callback(host, x, lax.stop_gradient(x * 2.0), 3)

            @jax.grad
            def loss(x):
                return logged(x) + x
        """,
            unsafe=True,
            message="`logged` is called from `loss`; `loss` is differentiated by `jax.grad`",
            span="8:12-8:50",
        ),
        # from-import aliases, a lambda given to eqx.filter_value_and_grad, a nested scan body
        Flag("""
            import equinox as eqx
            import jax.numpy as jnp
            from jax import lax as L
            from jax.experimental import io_callback as log

            def run(x):
                def body(c, _):
                    log(print, None, c)
                    return c * x, None
                return L.scan(body, x, None, length=3)[0]

            value, grad = eqx.filter_value_and_grad(lambda x: jnp.sum(run(x)))(jnp.ones(2))
        """, fixed="""
            import equinox as eqx
            import jax.numpy as jnp
            from jax import lax as L
            from jax.experimental import io_callback as log

            def run(x):
                def body(c, _):
                    log(print, None, L.stop_gradient(c))
                    return c * x, None
                return L.scan(body, x, None, length=3)[0]

            value, grad = eqx.filter_value_and_grad(lambda x: jnp.sum(run(x)))(jnp.ones(2))
        """, span="8:9-8:28",
        ),
        # `net(y)` reaches `Net.__call__`, which reaches a method through `self`; no jax import to reuse: one is added
        Flag("""
            import jax.numpy as jnp
            import equinox as eqx

            class Net(eqx.Module):
                def report(self, y):
                    eqx.filter_pure_callback(print, y, result_shape_dtypes=None)
                def __call__(self, y):
                    self.report(y)
                    return y

            def f(y):
                net = Net()
                return net(y)

            out = eqx.filter_vjp(f, jnp.ones(2))
        """, fixed="""
            import jax.numpy as jnp
            import equinox as eqx
            import jax.lax as lax

            class Net(eqx.Module):
                def report(self, y):
                    eqx.filter_pure_callback(print, lax.stop_gradient(y), result_shape_dtypes=None)
                def __call__(self, y):
                    self.report(y)
                    return y

            def f(y):
                net = Net()
                return net(y)

            out = eqx.filter_vjp(f, jnp.ones(2))
        """, span="6:9-6:69",
        ),
        Pass("""
            import diffrax
            import jax
            from jax.experimental import io_callback

            class Meter(diffrax.AbstractProgressMeter):
                def step(self, state, progress):
                    io_callback(print, None, jax.lax.stop_gradient(progress))
                    jax.debug.callback(print, progress)
                    jax.debug.print('{p}', p=progress)
                    io_callback(print, None, 'step', 3, (1, 2.0), progress.shape, ordered=True)
                    return state
        """
        ),
        # not differentiated: jit only, a plain class, a host function given to the callback
        Pass("""
            import jax
            from jax.experimental import io_callback

            LIMIT = 10

            def host(x):
                io_callback(print, None, x)

            @jax.jit
            def f(x):
                io_callback(host, None, x)
                return x

            class Meter:
                def step(self, state, progress):
                    io_callback(print, None, progress)

            @jax.grad
            def loss(x):
                io_callback(host, None, LIMIT)
                return x
        """
        ),
        # a local function named like the callback
        Pass("""
            import jax

            def io_callback(f, shape, x):
                return x

            @jax.grad
            def loss(x):
                return io_callback(print, None, x)
        """
        ),
    )


def _forwarded(call: cst.Call, first: int) -> list[cst.Arg]:
    """The arguments a callback function hands on to the host."""
    forwarded, position = [], 0
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value not in _OWN_KEYWORDS:
                forwarded.append(arg)
        elif arg.star == "**":
            forwarded.append(arg)
        else:
            if position >= first or arg.star:
                forwarded.append(arg)
            position += 1
    return forwarded
