"""ODL801: `diffeqsolve(..., max_steps=None)` where diffrax needs a bound on the steps."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import REVERSE, Needs, Site, argument_at, literals, source_of
from odelint.api.rule import Callees, Flag, Pass, Rule
from odelint.rules.diffrax.common import DIFFEQSOLVE, Setting, Solve, api


class UnboundedMaxSteps(Rule):
    """`max_steps=None` where diffrax must allocate one slot per step.

    ## What it does
    Flags `diffrax.diffeqsolve(..., max_steps=None)`
    - in code that a reverse-mode transform of this file (`jax.grad`, `value_and_grad`,
      `jacrev`, `vjp`, `jax.hessian`, `eqx.filter_grad`, ..., also through same-file
      calls) differentiates, with the default adjoint (`RecursiveCheckpointAdjoint()`
      without `checkpoints=`) or `DirectAdjoint()`;
    - with `saveat=SaveAt(steps=...)` or `SaveAt(dense=True)`, differentiated or not.

    ## Why is this bad?
    Without a bound JAX cannot size the buffers of the backward pass, nor the arrays of
    saved steps or of the dense interpolation. Diffrax refuses while tracing:

        RuntimeError: Cannot reverse-mode autodifferentiate when using
        `diffeqsolve(..., max_steps=None, adjoint=RecursiveCheckpointAdjoint(checkpoints=None))`.
        This is because JAX needs to know how much memory to allocate for saving the
        forward pass. You should either put a bound on the maximum number of steps, or
        explicitly specify how many checkpoints to use.

        ValueError: `max_steps=None` is incompatible with saving at `steps=n`
        ValueError: `max_steps=None` is incompatible with `saveat.dense=True`

    The Diffrax FAQ pairs `max_steps=None` with `adjoint=BacksolveAdjoint()`; copying the
    first without the second gives the error (diffrax#209, #194).

    ## Example
    ```python
    def loss(a):
        return diffrax.diffeqsolve(term, solver, 0.0, 1.0, 0.1, y0, args=a, max_steps=None).ys[-1]
    jax.grad(loss)(1.0)
    ```

    ## Use instead
    ```python
    diffrax.diffeqsolve(term, solver, 0.0, 1.0, 0.1, y0, args=a, max_steps=4096)
    # or keep it unbounded with a fixed number of checkpoints:
    diffrax.diffeqsolve(..., max_steps=None,
                        adjoint=diffrax.RecursiveCheckpointAdjoint(checkpoints=100))
    ```

    ## Fix safety
    No automatic fix: the bound (or the number of checkpoints) trades memory for the
    longest solve the program accepts, and only the author knows it.
    """

    code = "ODL801"
    name = "unbounded-max-steps"
    summary = "max_steps=None under reverse-mode differentiation, or with SaveAt(steps=...)/dense=True"
    triggers = (("diffeqsolve", "max_steps", "None"),)
    fixtures = "tests/fixtures/ODL801"

    @classmethod
    def callees(cls) -> Callees:
        return Callees(names=frozenset({DIFFEQSOLVE}))

    needs = Needs.calls_to(DIFFEQSOLVE)

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        solve = Solve.of(self.facts, node, site)
        if solve is None or not solve.is_none("max_steps"):
            return
        where = solve.argument("max_steps").value  # type: ignore[union-attr]
        if solve.saves_steps() is not None:
            self.report(where, "`max_steps=None` with `SaveAt(steps=...)`: diffrax raises "
                               "`ValueError: `max_steps=None` is incompatible with saving at `steps=n``; "
                               "give `max_steps` a bound")
            return
        if solve.saves_dense() is not None:
            self.report(where, "`max_steps=None` with `SaveAt(dense=True)`: diffrax raises "
                               "`ValueError: `max_steps=None` is incompatible with `saveat.dense=True``; "
                               "give `max_steps` a bound")
            return
        reverse = [stack for stack in self.facts.differentiation.modes(site) if REVERSE in stack]
        adjoint = solve.adjoint()
        if reverse and self._needs_bound(adjoint):
            spelled = (f"`{source_of(self.context.module, adjoint.call)}`" if adjoint.call is not None
                       else "the default `RecursiveCheckpointAdjoint()`")
            self.report(
                where,
                f"`max_steps=None` with {spelled} in code that is differentiated in reverse mode "
                f"({self.facts.differentiation.why_differentiated(site)}): diffrax raises `RuntimeError: Cannot "
                f"reverse-mode autodifferentiate when using diffeqsolve(..., max_steps=None, ...)`; give "
                f"`max_steps` a bound, or pass `adjoint=diffrax.RecursiveCheckpointAdjoint(checkpoints=...)`",
            )

    @staticmethod
    def _needs_bound(adjoint: Setting) -> bool:
        if adjoint.qualname not in api()["adjoints"]["need_max_steps"]:
            return False
        # RecursiveCheckpointAdjoint(checkpoints=n) bounds the memory itself
        checkpoints = argument_at(adjoint.call, "checkpoints", 0) if adjoint.call is not None else None
        return checkpoints is None or literals.is_none(checkpoints.value)

    examples = (
        Flag("""
            import diffrax
            import jax

            term = diffrax.ODETerm(lambda t, y, a: -a * y)

            def loss(a):
                return diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.1, 1.0, args=a, max_steps=None).ys[-1]

            jax.grad(loss)(1.0)
        """, message="`max_steps=None` with the default `RecursiveCheckpointAdjoint()` in code that is differentiated "
                     "in reverse mode (`loss` is differentiated by `jax.grad`)", span="7:93-7:97"),
        # aliases, a helper called from an eqx.filter_value_and_grad loss, DirectAdjoint,
        # RecursiveCheckpointAdjoint without checkpoints
        Flag("""
            import diffrax as dfx
            import equinox as eqx
            from diffrax import diffeqsolve as solve, DirectAdjoint

            def simulate(a, adjoint):
                return solve(dfx.ODETerm(lambda t, y, a: -a * y), dfx.Euler(), 0.0, 1.0, 0.1, 1.0, args=a,
                             max_steps=None, adjoint=DirectAdjoint())

            @eqx.filter_value_and_grad
            def loss(a):
                recursive = dfx.RecursiveCheckpointAdjoint()
                y = solve(dfx.ODETerm(lambda t, y, a: -a * y), dfx.Euler(), 0.0, 1.0, 0.1, 1.0, args=a,
                          max_steps=None, adjoint=recursive)
                return simulate(a, None).ys[-1] + y.ys[-1]
        """, count=2, message="`max_steps=None` with `DirectAdjoint()`", span=("7:28-7:32", "13:25-13:29")),
        # saving every step or a dense solution needs a bound even without differentiation
        Flag("""
            import diffrax

            term = diffrax.ODETerm(lambda t, y, a: -y)
            diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.1, 1.0, max_steps=None,
                                saveat=diffrax.SaveAt(steps=True))
            saveat = diffrax.SaveAt(dense=True)
            diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.1, 1.0, saveat=saveat, max_steps=None)
        """, count=2, message="`max_steps=None` with `SaveAt(steps=...)`", span=("4:74-4:78", "7:89-7:93")),
        # adjoints that need no bound; no differentiation; forward mode; a bound given
        Pass("""
            import diffrax
            import jax

            term = diffrax.ODETerm(lambda t, y, a: -a * y)

            def backsolve(a):
                return diffrax.diffeqsolve(term, diffrax.Tsit5(), 0.0, 1.0, 0.1, 1.0, args=a, max_steps=None,
                                           adjoint=diffrax.BacksolveAdjoint()).ys[-1]

            def checkpointed(a):
                return diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.1, 1.0, args=a, max_steps=None,
                                           adjoint=diffrax.RecursiveCheckpointAdjoint(checkpoints=100)).ys[-1]

            def forward(a):
                return diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.1, 1.0, args=a, max_steps=None,
                                           adjoint=diffrax.ForwardMode()).ys[-1]

            def plain(a):
                return diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.1, 1.0, args=a, max_steps=None).ys

            def bounded(a):
                return diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.1, 1.0, args=a, max_steps=64).ys[-1]

            jax.grad(backsolve)(1.0)
            jax.grad(checkpointed)(1.0)
            jax.jacfwd(forward)(1.0)
            jax.jit(plain)(1.0)
            jax.grad(bounded)(1.0)
            diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.1, 1.0, max_steps=None,
                                saveat=diffrax.SaveAt(ts=[0.5, 1.0], steps=False))
        """),
    )
