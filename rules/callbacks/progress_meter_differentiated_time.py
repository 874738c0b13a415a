"""ODL302: a progress meter on a solve whose `t0`/`t1` is differentiated."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import (
    DefinedAs,
    Definition,
    Differentiation,
    Needs,
    Site,
    argument_at,
    calls_within,
    is_stop_gradient,
    keyword_arg,
    method_of,
    named_class,
    source_of,
)
from odelint.api.rule import Callees, Flag, Pass, Rule
from odelint.rules.diffrax.common import DIFFEQSOLVE, api

_NO_METER = api()["names"]["no_progress_meter"]


class ProgressMeterDifferentiatedTime(Rule):
    """A progress meter on a solve that is differentiated with respect to `t0` or `t1`.

    ## What it does
    Flags `diffrax.diffeqsolve(..., progress_meter=meter)` when `t0` or `t1` depends on a
    value that a grad-like transform of this file differentiates (`jax.grad(loss)` with
    the time as differentiated argument, `argnums` and `eqx.filter_grad`'s first argument
    respected, through assignments, closures and calls of this file). Not flagged:
    `diffrax.NoProgressMeter()`, and a meter class of this file whose `step` applies
    `jax.lax.stop_gradient`.

    ## Why is this bad?
    The progress fraction is computed from `t0` and `t1`, so it carries their tangent
    into the meter. The built-in meters reduce it with a primitive that has no
    differentiation rule, and the solve fails while tracing:

        NotImplementedError: Differentiation rule for 'unvmap_max' not implemented

    (diffrax#396; the fix in diffrax PR#398 covers gradients with respect to the ODE's
    arguments, not with respect to the times.)

    ## Example
    ```python
    def final(t1):
        return diffrax.diffeqsolve(term, solver, 0.0, t1, 0.1, y0,
                                   progress_meter=diffrax.TextProgressMeter()).ys[-1]
    jax.grad(final)(1.0)
    ```

    ## Use instead
    ```python
    class StopGradientMeter(diffrax.AbstractProgressMeter):
        meter: diffrax.AbstractProgressMeter
        def init(self):
            return self.meter.init()
        def step(self, state, progress):
            return self.meter.step(state, jax.lax.stop_gradient(progress))
        def close(self, state):
            return self.meter.close(state)

    progress_meter=StopGradientMeter(diffrax.TextProgressMeter())
    ```
    or no meter (`diffrax.NoProgressMeter()`) in the differentiated solve.

    ## Fix safety
    No automatic fix: the wrapper is a new class, and dropping the meter changes what the
    user sees. The message names both options.
    """

    code = "ODL302"
    name = "progress-meter-differentiated-time"
    summary = "A progress meter on a solve differentiated with respect to t0 or t1"
    triggers = (("diffrax", "progress_meter"),)
    fixtures = "tests/fixtures/ODL302"

    @classmethod
    def callees(cls) -> Callees:
        return Callees(names=frozenset({DIFFEQSOLVE}))

    needs = Needs.calls_to(DIFFEQSOLVE, keywords=("progress_meter",))

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        if self.facts.qualname(node.func, site.scope) != DIFFEQSOLVE:
            return
        meter = keyword_arg(node, "progress_meter")
        if meter is None or self._harmless(meter, site, set()):
            return
        analysis = self.facts.differentiation
        for label, position in (("t0", 2), ("t1", 3)):
            value = argument_at(node, label, position)
            origin = analysis.differentiated_source(value.value, site) if value is not None else None
            if origin is not None:
                self.report(meter.value, self._message(label, origin, analysis, meter.value))
                return

    def _message(self, label: str, origin: Definition, analysis: Differentiation, meter: cst.BaseExpression) -> str:
        root = analysis.root_of(origin)
        function = origin.function
        owner = f"`{function.name.value}`" if isinstance(function, cst.FunctionDef) else "a lambda"
        transform = root.transform if root else "a transform"
        return (f"`{label}` comes from `{origin.name}`, a parameter of {owner} that `{transform}` differentiates, "
                f"so the meter `{source_of(self.context.module, meter)}` gets a tangent and diffrax raises "
                f"`NotImplementedError: Differentiation rule for 'unvmap_max' not implemented`: "
                f"give the meter `jax.lax.stop_gradient(progress)` through a wrapper, or use "
                f"`diffrax.NoProgressMeter()` under differentiation")

    def _harmless(self, meter: cst.Arg | cst.BaseExpression, site: Site, seen: set[int]) -> bool:
        """Is the meter `NoProgressMeter()`, or a class of this file that stops the gradient?"""
        value = meter.value if isinstance(meter, cst.Arg) else meter
        if isinstance(value, cst.Call):
            if self.facts.qualname(value.func, site.scope) == _NO_METER:
                return True
            cls = named_class(self.facts, value.func, site.scope)
            step = method_of(self.facts, cls, "step") if cls is not None else None
            return step is not None and self._stops_gradient(step)
        if not isinstance(value, cst.Name) or id(value) in seen:
            return False
        seen.add(id(value))
        definitions = self.facts.definitions(value, site)
        return bool(definitions) and all(self._defined_harmless(d, seen) for d in definitions)

    def _defined_harmless(self, definition: Definition, seen: set[int]) -> bool:
        """A harmless meter assigned, or passed by every call for a parameter."""
        if definition.value is not None:
            return self._harmless(definition.value, definition.site, seen)
        if definition.what is DefinedAs.PARAMETER:
            passed = self.facts.passed_for(definition)
            return bool(passed) and all(argument is not None and self._harmless(argument, where, seen)
                                        for argument, where in passed)
        return False

    def _stops_gradient(self, step: cst.FunctionDef) -> bool:
        scope = self.facts.body_scope(step)
        return scope is not None and any(is_stop_gradient(self.facts, node, scope) for node in calls_within(step.body))

    examples = (
        Flag("""
            import diffrax
            import jax

            term = diffrax.ODETerm(lambda t, y, a: -y)

            def final(t1):
                return diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, t1, 0.1, 1.0,
                                           progress_meter=diffrax.TextProgressMeter()).ys[-1]

            print(jax.grad(final)(1.0))
        """,
            message="`t1` comes from `t1`, a parameter of `final` that `jax.grad` differentiates",
            span="8:47-8:74",
        ),
        # argnums, keyword times, assignment and a closure, the meter through a name; from-imports
        Flag("""
            from diffrax import diffeqsolve, Euler, ODETerm, TqdmProgressMeter as Bar
            from jax import value_and_grad

            def loss(y0, ts):
                meter = Bar()
                t_end = ts[-1]
                def solve():
                    return diffeqsolve(ODETerm(lambda t, y, a: -y), Euler(), t0=0.0, t1=t_end,
                                       dt0=0.1, y0=y0, progress_meter=meter)
                return solve().ys[-1]

            value_and_grad(loss, argnums=(0, 1))
        """, span="9:59-9:64",
        ),
        # the time reaches a helper through a call; eqx.filter_grad differentiates the first argument
        Flag("""
            import diffrax as dfx
            import equinox as eqx

            def solve(t0, meter):
                return dfx.diffeqsolve(dfx.ODETerm(lambda t, y, a: -y), dfx.Euler(), t0, 1.0, 0.1,
                                      1.0, progress_meter=meter).ys[-1]

            @eqx.filter_grad
            def loss(t0):
                return solve(t0, dfx.TextProgressMeter())
        """,
            message="`t0` comes from `t0`, a parameter of `loss` that `eqx.filter_grad` differentiates",
            span="6:47-6:52",
        ),
        Pass("""
            import diffrax
            import jax

            term = diffrax.ODETerm(lambda t, y, a: -y)

            def final(y0, t1):
                return diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, t1, 0.1, y0,
                                           progress_meter=diffrax.TextProgressMeter()).ys[-1]

            jax.grad(final)(1.0, 2.0)
            jax.grad(final, argnums=0)(1.0, 2.0)
            def no_meter(t1):
                return diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, t1, 0.1, 1.0,
                                           progress_meter=diffrax.NoProgressMeter()).ys[-1]

            jax.grad(no_meter)(1.0)
            jax.jit(final)(1.0, 2.0)
        """
        ),
        # the user's own meter that stops the gradient; a meter parameter that only gets NoProgressMeter
        Pass("""
            import diffrax
            import equinox as eqx
            import jax

            class StopGrad(diffrax.AbstractProgressMeter):
                meter: diffrax.AbstractProgressMeter
                def init(self):
                    return self.meter.init()
                def step(self, state, progress):
                    return self.meter.step(state, jax.lax.stop_gradient(progress))
                def close(self, state):
                    return self.meter.close(state)

            def solve(t1, meter):
                return diffrax.diffeqsolve(diffrax.ODETerm(lambda t, y, a: -y), diffrax.Euler(),
                                           0.0, t1, 0.1, 1.0, progress_meter=meter).ys[-1]

            @eqx.filter_grad
            def loss(t1):
                return solve(t1, diffrax.NoProgressMeter())

            @jax.grad
            def loss2(t1):
                return diffrax.diffeqsolve(diffrax.ODETerm(lambda t, y, a: -y), diffrax.Euler(),
                    0.0, t1, 0.1, 1.0, progress_meter=StopGrad(diffrax.TextProgressMeter())).ys[-1]
        """
        ),
    )

