"""ODL806: `diffeqsolve` with `dt0` of zero, or with `dt0` pointing away from `t1`."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import Needs, Site, text_of
from odelint.api.rule import Callees, Flag, Pass, Rule
from odelint.rules.diffrax.common import DIFFEQSOLVE, Solve, api

_STALLS = ("equinox.EquinoxRuntimeError: The maximum number of solver steps was reached. "
           "Try increasing `max_steps`.")
_BACKWARDS = "EquinoxTracetimeError: Must have (t1 - t0) * dt0 >= 0"


class Dt0ZeroOrBackwards(Rule):
    """`dt0` is zero, or its sign points away from `t1`.

    ## What it does
    Flags `diffrax.diffeqsolve` when `dt0` is a number the code fixes (a literal, or a name
    assigned one once) that is `0`, with an adaptive controller (`PIDController`) or the
    default constant one; or whose sign is opposite to `t1 - t0` (a forward solve with a
    negative step, a backward solve, `t1 < t0`, with a positive one), whatever the controller.

    ## Why is this bad?
    A zero first step never advances: the solve spends all of `max_steps` at `t0` and
    then fails at run time (diffrax 0.7.2):

        equinox.EquinoxRuntimeError: The maximum number of solver steps was reached.
        Try increasing `max_steps`.

    A step pointing away from `t1` is refused while tracing:

        EquinoxTracetimeError: Must have (t1 - t0) * dt0 >= 0, we instead got t1 with
        value 0.0 ..., t0 with value 1.0 ..., dt0 with value 0.1 ...

    Both come from treating `dt0` as a placeholder for "let the controller decide", or
    from flipping `t0` and `t1` to integrate backwards (diffrax#83 discusses `dt0`).
    With an adaptive controller `dt0=None` is the spelling for that: the controller picks
    the first step's size and its sign.

    ## Example
    ```python
    diffrax.diffeqsolve(term, diffrax.Tsit5(), 0.0, 1.0, 0.0, y0,
                        stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-5))
    diffrax.diffeqsolve(term, diffrax.Tsit5(), 1.0, 0.0, 0.1, y0,
                        stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-5))
    ```

    ## Use instead
    ```python
    diffrax.diffeqsolve(term, diffrax.Tsit5(), 0.0, 1.0, None, y0,
                        stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-5))
    diffrax.diffeqsolve(term, diffrax.Tsit5(), 1.0, 0.0, None, y0,
                        stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-5))
    ```
    With a constant step size, pass a nonzero step with the sign of `t1 - t0`.

    ## Fix safety
    No automatic fix: the message suggests `dt0=None` for an adaptive controller (which
    changes the first step, so the solution differs within the tolerances) and a step of
    the other sign for a constant one; the author chooses.
    """

    code = "ODL806"
    name = "dt0-zero-or-backwards"
    summary = "diffeqsolve's dt0 is zero or points away from t1"
    triggers = (("diffeqsolve",),)
    fixtures = "tests/fixtures/ODL806"

    needs = Needs.calls_to(DIFFEQSOLVE)

    @classmethod
    def callees(cls) -> Callees:
        return Callees(names=frozenset({DIFFEQSOLVE}))

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        solve = Solve.of(self.facts, node, site)
        dt0_arg = solve.argument("dt0") if solve is not None else None
        if solve is None or dt0_arg is None:
            return
        dt0 = self.facts.number(dt0_arg.value, site.scope)
        if dt0 is None:
            return
        controller = solve.controller()
        controllers = api()["controllers"]
        adaptive = controller.qualname in controllers["adaptive"]
        spelled = text_of(dt0_arg.value, self.context.module)
        if dt0 == 0:
            if controller.qualname not in controllers["step_from_dt0"]:
                return
            advice = ("pass `dt0=None` so the controller chooses the first step" if adaptive
                      else "pass a nonzero step with the sign of `t1 - t0`")
            self.report(dt0_arg.value, f"`dt0={spelled}` is a zero first step: the solve never advances from `t0` "
                                       f"and fails with `{_STALLS}`; {advice}")
            return
        t0, t1 = (self._time(solve, name, site) for name in ("t0", "t1"))
        if t0 is None or t1 is None or (t1 - t0) * dt0 >= 0:
            return
        advice = ("pass `dt0=None` so the controller chooses the first step and its sign" if adaptive
                  else f"pass a step of the sign of `t1 - t0` ({-dt0:g})")
        self.report(dt0_arg.value, f"`dt0={spelled}` points away from `t1` (t0={t0:g}, t1={t1:g}): diffrax refuses it "
                                   f"with `{_BACKWARDS}`; {advice}")

    def _time(self, solve: Solve, name: str, site: Site) -> float | None:
        arg = solve.argument(name)
        return self.facts.number(arg.value, site.scope) if arg is not None else None

    examples = (
        Flag("""
            import diffrax

            term = diffrax.ODETerm(lambda t, y, args: -y)
            pid = diffrax.PIDController(rtol=1e-5, atol=1e-5)
            sol = diffrax.diffeqsolve(term, diffrax.Tsit5(), 0.0, 1.0, 0.0, 1.0, stepsize_controller=pid)
        """, message="`dt0=0.0` is a zero first step: the solve never advances from `t0` and fails with "
                     "`equinox.EquinoxRuntimeError: The maximum number of solver steps was reached. "
                     "Try increasing `max_steps`.`; pass `dt0=None`", span="5:60-5:63"),
        # a backward solve with a positive step, through names and keywords
        Flag("""
            import diffrax as dfx

            T = 2.0
            dt = 0.01
            sol = dfx.diffeqsolve(dfx.ODETerm(lambda t, y, a: -y), dfx.Dopri5(), t0=T, t1=0.0, dt0=dt, y0=1.0,
                                  stepsize_controller=dfx.PIDController(rtol=1e-6, atol=1e-6))
        """, message="`dt0=dt` points away from `t1` (t0=2, t1=0): diffrax refuses it with "
                     "`EquinoxTracetimeError: Must have (t1 - t0) * dt0 >= 0`; pass `dt0=None`", span="5:88-5:90"),
        # a constant step: the advice is the step of the other sign, or a nonzero one
        Flag("""
            from diffrax import diffeqsolve, ODETerm, Euler

            forward = diffeqsolve(ODETerm(lambda t, y, a: -y), Euler(), 0.0, 1.0, -0.1, 1.0)
            stuck = diffeqsolve(ODETerm(lambda t, y, a: -y), Euler(), 0.0, 1.0, 0, 1.0)
        """, count=2, message="pass a step of the sign of `t1 - t0` (0.1)", span=("3:71-3:75", "4:69-4:70")),
        # dt0=None, a step with the right sign, backward solves done right, unknown values
        Pass("""
            import diffrax
            import jax.numpy as jnp

            term = diffrax.ODETerm(lambda t, y, args: -y)
            pid = diffrax.PIDController(rtol=1e-5, atol=1e-5)
            diffrax.diffeqsolve(term, diffrax.Tsit5(), 0.0, 1.0, None, 1.0, stepsize_controller=pid)
            diffrax.diffeqsolve(term, diffrax.Tsit5(), 1.0, 0.0, -0.1, 1.0, stepsize_controller=pid)
            diffrax.diffeqsolve(term, diffrax.Euler(), 1.0, 0.0, -0.1, 1.0)
            diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.1, 1.0)
            diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.0, 1.0,
                                stepsize_controller=diffrax.StepTo(ts=jnp.linspace(0.0, 1.0, 11)))

            def solve(t0, t1, dt0):
                return diffrax.diffeqsolve(term, diffrax.Tsit5(), t0, t1, dt0, 1.0, stepsize_controller=pid)

            def backwards(ts):
                return diffrax.diffeqsolve(term, diffrax.Tsit5(), ts[-1], ts[0], 0.1, 1.0)
        """),
        # a wrapper stands for the controller it wraps (diffrax 0.7.2 raises the same max_steps error)
        Flag("""
            import diffrax
            import jax.numpy as jnp

            def decay(t, y, args):
                return -y

            controller = diffrax.ClipStepSizeController(diffrax.PIDController(rtol=1e-5, atol=1e-5))
            sol = diffrax.diffeqsolve(diffrax.ODETerm(decay), diffrax.Tsit5(), 0.0, 1.0, 0.0, jnp.ones(2),
                                      stepsize_controller=controller)
        """, message="pass `dt0=None` so the controller chooses the first step", span="8:78-8:81"),
    )
