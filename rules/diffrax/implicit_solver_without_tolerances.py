"""ODL803: an implicit solver with a fixed step size and no root-finder tolerances."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import Needs, Site, argument_at, built_by, method_call, source_of
from odelint.api.rule import Callees, Flag, Pass, Rule
from odelint.rules.diffrax.common import DIFFEQSOLVE, Solve, api


class ImplicitSolverWithoutTolerances(Rule):
    """An implicit solver with a fixed step size and no root-finder tolerances.

    ## What it does
    Flags `diffrax.diffeqsolve` with an implicit solver (`ImplicitEuler`, `Kvaerno3/4/5`,
    `KenCarp3/4/5`, `Sil3`) built without a `root_finder`, when the step-size controller
    is fixed: absent (so `ConstantStepSize()`), `ConstantStepSize()` or `StepTo(...)`; and
    such a solver stepped by hand (`solver.step(...)`, no controller at all). The solver may
    reach the solve or the step through a helper's parameters.

    ## Why is this bad?
    An implicit step solves a nonlinear system with a root finder, and the default root
    finder (`VeryChord`) takes its `rtol`/`atol` from the step-size controller. A fixed
    controller has none, so the solve fails before it starts:

        ValueError: A fixed step size controller is being used alongside an implicit
        solver, but the tolerances for the implicit solver have not been specified.
        (Being unspecified is the default in Diffrax.)

    Stepped by hand, the tolerances stay unset and the step fails inside the root finder
    (diffrax 0.7.2): `RuntimeError: Type of `other` not understood.`
    (diffrax#633, #439, #654.)

    ## Example
    ```python
    diffrax.diffeqsolve(term, diffrax.Kvaerno5(), 0.0, 1.0, 0.01, y0)
    ```

    ## Use instead
    ```python
    diffrax.diffeqsolve(term, diffrax.Kvaerno5(), 0.0, 1.0, 0.01, y0,
                        stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-5))
    # or keep the fixed step and give the root finder its tolerances:
    diffrax.diffeqsolve(term, diffrax.Kvaerno5(root_finder=diffrax.VeryChord(rtol=1e-8, atol=1e-8)),
                        0.0, 1.0, 0.01, y0)
    ```

    ## Fix safety
    No automatic fix: both remedies need tolerances that set the accuracy of the
    solution, which only the author can choose.
    """

    code = "ODL803"
    name = "implicit-solver-without-tolerances"
    summary = "An implicit solver with a constant step and no root-finder tolerances"
    triggers = (("diffeqsolve", "ImplicitEuler"), ("diffeqsolve", "Kvaerno"), ("diffeqsolve", "KenCarp"),
                ("diffeqsolve", "Sil3"), ("step", "ImplicitEuler"), ("step", "Kvaerno"), ("step", "KenCarp"),
                ("step", "Sil3"))
    fixtures = "tests/fixtures/ODL803"

    @classmethod
    def callees(cls) -> Callees:
        return Callees(names=frozenset({DIFFEQSOLVE}), methods=frozenset({"step"}))

    # a solve, or an implicit solver built (and maybe stepped by hand)
    needs = Needs.calls_to(DIFFEQSOLVE) | Needs.calls_to(*api()["solvers"]["implicit"])

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        receiver = method_call(node, "step")
        if receiver is not None:
            self._manual_step(node, receiver, site)
            return
        solve = Solve.of(self.facts, node, site)
        if solve is None:
            return
        solver = solve.solver()
        if solver.call is None or not _without_root_finder(solver.qualname, solver.call):
            return
        controller = solve.controller()
        if controller.qualname not in api()["controllers"]["fixed"]:
            return
        step = (f"`{source_of(self.context.module, controller.call)}`" if controller.call is not None
                else "the default `ConstantStepSize()`")
        self.report(
            solve.argument("solver").value,  # type: ignore[union-attr]
            f"the implicit solver `{source_of(self.context.module, solver.call)}`{solver.origin()} runs with a "
            f"fixed step ({step}{', ' + controller.via if controller.via else ''}) and its root finder has no "
            f"tolerances: diffrax raises `ValueError: A fixed step size "
            f"controller is being used alongside an implicit solver, but the tolerances for the implicit "
            f"solver have not been specified.`; pass `stepsize_controller=diffrax.PIDController(rtol=..., "
            f"atol=...)`, or `root_finder=diffrax.VeryChord(rtol=..., atol=...)` to the solver",
        )

    def _manual_step(self, node: cst.Call, receiver: cst.BaseExpression, site: Site) -> None:
        """`solver.step(...)` by hand: no controller ever hands the root finder tolerances."""
        built = built_by(self.facts, receiver, site)
        qualname = self.facts.qualname(built.call.func, built.site.scope) if built is not None else None
        if built is None or not _without_root_finder(qualname, built.call):
            return
        origin = f" ({built.via})" if built.via else ""
        self.report(
            node.func,
            f"`{source_of(self.context.module, node.func)}` steps the implicit solver "
            f"`{source_of(self.context.module, built.call)}`{origin} by hand, outside `diffeqsolve`, so no "
            f"step-size controller gives its root finder tolerances: diffrax raises `RuntimeError: Type of "
            f"`other` not understood.`; pass `root_finder=diffrax.VeryChord(rtol=..., atol=...)` to the solver",
        )

    examples = (
        Flag("""
            import diffrax

            term = diffrax.ODETerm(lambda t, y, args: -y)
            sol = diffrax.diffeqsolve(term, diffrax.Kvaerno5(), 0.0, 1.0, 0.01, 1.0)
        """, message="the implicit solver `diffrax.Kvaerno5()` runs with a fixed step (the default", span="4:33-4:51"),
        # aliases and from-imports, a solver built beforehand, StepTo, keyword arguments
        Flag("""
            import diffrax as dfx
            import jax.numpy as jnp
            from diffrax import ImplicitEuler as IE, diffeqsolve

            solver = IE()
            diffeqsolve(dfx.ODETerm(lambda t, y, a: -y), solver, 0.0, 1.0, None, 1.0,
                        stepsize_controller=dfx.StepTo(ts=jnp.linspace(0.0, 1.0, 11)))
            dfx.diffeqsolve(terms=dfx.ODETerm(lambda t, y, a: -y), solver=dfx.Kvaerno3(scan_kind="bounded"),
                            t0=0.0, t1=1.0, dt0=0.1, y0=1.0, stepsize_controller=dfx.ConstantStepSize())
        """, count=2, message="the implicit solver `IE()` runs with a fixed step (`dfx.StepTo(",
            span=("6:46-6:52", "8:63-8:96")),
        # an adaptive controller, a root finder with tolerances (keyword or positional),
        # explicit solvers, and values the linter cannot read
        Pass("""
            import diffrax
            import optimistix as optx

            term = diffrax.ODETerm(lambda t, y, args: -y)
            pid = diffrax.PIDController(rtol=1e-5, atol=1e-5)
            diffrax.diffeqsolve(term, diffrax.Kvaerno5(), 0.0, 1.0, 0.01, 1.0, stepsize_controller=pid)
            diffrax.diffeqsolve(term, diffrax.ImplicitEuler(root_finder=diffrax.VeryChord(rtol=1e-8, atol=1e-8)),
                                0.0, 1.0, 0.1, 1.0)
            diffrax.diffeqsolve(term, diffrax.ImplicitEuler(optx.Newton(1e-8, 1e-8)), 0.0, 1.0, 0.1, 1.0)
            diffrax.diffeqsolve(term, diffrax.Kvaerno4(None, optx.Chord(1e-8, 1e-8)), 0.0, 1.0, 0.1, 1.0)
            diffrax.diffeqsolve(term, diffrax.Tsit5(), 0.0, 1.0, 0.1, 1.0)

            def run(solver, controller):
                diffrax.diffeqsolve(term, solver, 0.0, 1.0, 0.1, 1.0)
                diffrax.diffeqsolve(term, diffrax.Kvaerno5(), 0.0, 1.0, 0.1, 1.0, stepsize_controller=controller)
        """),
        # the solver reaches a helper's parameter; stepped by hand (`solver.step`), no controller
        # ever gives the root finder tolerances
        Flag("""
            import diffrax
            import jax.numpy as jnp


            def vector_field(t, y, args):
                return -args * y


            def integrate(term, solver, y0, dt):
                state = solver.init(term, 0.0, dt, y0, 2.0)
                t, y = jnp.array(0.0), y0
                for _ in range(10):
                    y, _, _, state, _ = solver.step(term, t, t + dt, y, 2.0, state, made_jump=False)
                    t = t + dt
                return y


            y = integrate(diffrax.ODETerm(vector_field), diffrax.Kvaerno5(), jnp.array(1.0), 0.1)


            def fixed_step_solve(solver, controller):
                return diffrax.diffeqsolve(diffrax.ODETerm(vector_field), solver, 0.0, 1.0, 0.01, 1.0, args=2.0,
                                           stepsize_controller=controller)


            fixed_step_solve(diffrax.ImplicitEuler(), diffrax.ConstantStepSize())
        """, count=2, message="`solver.step` steps the implicit solver `diffrax.Kvaerno5()` (passed as `solver` to "
                              "`integrate`) by hand", span=("13:29-13:40", "22:63-22:69")),
        Pass("""
            import diffrax
            import jax.numpy as jnp


            def vector_field(t, y, args):
                return -args * y


            def integrate(term, solver, y0, dt):
                state = solver.init(term, 0.0, dt, y0, 2.0)
                t, y = jnp.array(0.0), y0
                for _ in range(10):
                    y, _, _, state, _ = solver.step(term, t, t + dt, y, 2.0, state, made_jump=False)
                    t = t + dt
                return y


            chord = diffrax.VeryChord(rtol=1e-8, atol=1e-8)
            y = integrate(diffrax.ODETerm(vector_field), diffrax.Kvaerno5(root_finder=chord), jnp.array(1.0), 0.1)


            def fixed_step_solve(solver, controller):
                return diffrax.diffeqsolve(diffrax.ODETerm(vector_field), solver, 0.0, 1.0, 0.01, 1.0, args=2.0,
                                           stepsize_controller=controller)


            fixed_step_solve(diffrax.ImplicitEuler(), diffrax.PIDController(rtol=1e-6, atol=1e-6))
        """),
        Pass("""
            import diffrax
            import jax.numpy as jnp


            def vector_field(t, y, args):
                return -args * y


            def integrate(term, solver, y0, dt):
                state = solver.init(term, 0.0, dt, y0, 2.0)
                t, y = jnp.array(0.0), y0
                for _ in range(10):
                    y, _, _, state, _ = solver.step(term, t, t + dt, y, 2.0, state, made_jump=False)
                    t = t + dt
                return y


            y = integrate(diffrax.ODETerm(vector_field), diffrax.Tsit5(), jnp.array(1.0), 0.1)

        """),
    )


def _without_root_finder(qualname: str | None, call: cst.Call) -> bool:
    """Is `call` an implicit solver built without a `root_finder` (the model's diffrax table)?"""
    implicit = api()["solvers"]["implicit"]
    return qualname in implicit and argument_at(call, "root_finder", implicit[qualname]) is None

