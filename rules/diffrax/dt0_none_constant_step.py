"""ODL802: `diffeqsolve(..., dt0=None)` with a constant step size."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import Needs, Site
from odelint.api.rule import Callees, Flag, Pass, Rule
from odelint.rules.diffrax.common import DIFFEQSOLVE, Solve, api


class Dt0NoneConstantStep(Rule):
    """`dt0=None` with the default (constant) step-size controller.

    ## What it does
    Flags `diffrax.diffeqsolve(..., dt0=None)` (by keyword or as the fifth positional
    argument) when `stepsize_controller` is absent, so `ConstantStepSize()`, or is
    `ConstantStepSize()`.

    ## Why is this bad?
    Only an adaptive controller picks the first step by itself. An adaptive *solver*
    (`Tsit5`, `Dopri5`) is not enough: adaptivity comes from the controller, and the
    default one is constant. The solve fails before it starts:

        ValueError: Constant step size solvers cannot select step size automatically;
        please pass a value for `dt0`.

    (diffrax#83; dynamiqs PR#398, galax PR#754.)

    ## Example
    ```python
    diffrax.diffeqsolve(term, diffrax.Tsit5(), 0.0, 1.0, None, y0)
    ```

    ## Use instead
    ```python
    diffrax.diffeqsolve(term, diffrax.Tsit5(), 0.0, 1.0, 0.1, y0)
    # or adaptive steps:
    diffrax.diffeqsolve(term, diffrax.Tsit5(), 0.0, 1.0, None, y0,
                        stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-5))
    ```

    ## Fix safety
    No automatic fix: a step size, or the tolerances of an adaptive controller, set the
    accuracy of the solution and only the author can choose them.
    """

    code = "ODL802"
    name = "dt0-none-constant-step"
    summary = "dt0=None with the default or a constant step-size controller"
    triggers = (("diffeqsolve", "None"),)
    fixtures = "tests/fixtures/ODL802"

    @classmethod
    def callees(cls) -> Callees:
        return Callees(names=frozenset({DIFFEQSOLVE}))

    needs = Needs.calls_to(DIFFEQSOLVE)

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        solve = Solve.of(self.facts, node, site)
        if solve is None or not solve.is_none("dt0"):
            return
        controller = solve.controller()
        if controller.qualname not in api()["controllers"]["need_dt0"]:
            return
        which = "the default `ConstantStepSize()`" if not controller.given else "`ConstantStepSize()`"
        self.report(
            solve.argument("dt0").value,  # type: ignore[union-attr]
            f"`dt0=None` with {which}: diffrax raises `ValueError: Constant step size solvers cannot select "
            f"step size automatically; please pass a value for `dt0``; pass a step size, or an adaptive "
            f"controller such as `stepsize_controller=diffrax.PIDController(rtol=..., atol=...)`",
        )

    examples = (
        Flag("""
            import diffrax

            term = diffrax.ODETerm(lambda t, y, args: -y)
            sol = diffrax.diffeqsolve(term, diffrax.Tsit5(), 0.0, 1.0, None, 1.0)
        """, message="`dt0=None` with the default `ConstantStepSize()`", span="4:60-4:64"),
        # aliases, keywords, a controller built beforehand
        Flag("""
            import diffrax as dfx
            from diffrax import diffeqsolve as solve, ConstantStepSize as Fixed

            fixed = Fixed()
            solve(dfx.ODETerm(lambda t, y, a: -y), dfx.Euler(), t0=0.0, t1=1.0, dt0=None, y0=1.0,
                  stepsize_controller=fixed)
        """, message="`dt0=None` with `ConstantStepSize()`", span="5:73-5:77"),
        # an adaptive controller picks the first step; StepTo needs no dt0; dt0 given
        Pass("""
            import diffrax
            import jax.numpy as jnp

            term = diffrax.ODETerm(lambda t, y, args: -y)
            pid = diffrax.PIDController(rtol=1e-5, atol=1e-5)
            diffrax.diffeqsolve(term, diffrax.Tsit5(), 0.0, 1.0, None, 1.0, stepsize_controller=pid)
            diffrax.diffeqsolve(term, diffrax.Tsit5(), 0.0, 1.0, dt0=None, y0=1.0,
                                stepsize_controller=diffrax.PIDController(rtol=1e-3, atol=1e-6))
            diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, None, 1.0,
                                stepsize_controller=diffrax.StepTo(ts=jnp.linspace(0.0, 1.0, 11)))
            diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.1, None)
        """),
        # a controller the linter cannot read, and a function that only looks like diffeqsolve
        Pass("""
            import diffrax

            def run(controller):
                return diffrax.diffeqsolve(diffrax.ODETerm(lambda t, y, a: -y), diffrax.Tsit5(), 0.0, 1.0,
                                           None, 1.0, stepsize_controller=controller)

            def diffeqsolve(*args):
                return args

            diffeqsolve(None, None, 0.0, 1.0, None, 1.0)
        """),
    )
