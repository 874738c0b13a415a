"""ODL908: `diffrax.NewtonNonlinearSolver`, removed in Diffrax 0.5.0."""

from __future__ import annotations

from odelint.api.rule import Flag, Pass
from odelint.rules.deprecated.common import DeprecatedApiRule


class NewtonNonlinearSolver(DeprecatedApiRule):
    """An implicit solver is configured with the removed `diffrax.NewtonNonlinearSolver`.

    ## What it does
    Flags `diffrax.NewtonNonlinearSolver` (through any alias of `diffrax`) and
    `from diffrax import NewtonNonlinearSolver`.
    Code inside a `try` whose handler catches the failure (`except ImportError`,
    `except AttributeError`) is a compatibility shim and is left alone.

    ## Why is this bad?
    Diffrax 0.5.0 (diffrax#345) moved root finding to Optimistix: implicit solvers take a
    `root_finder=` (by default `diffrax.VeryChord`) instead of `nonlinear_solver=`, and
    the old class is gone:

        AttributeError: module 'diffrax' has no attribute 'NewtonNonlinearSolver'

    ## Example
    ```python
    solver = diffrax.Kvaerno5(nonlinear_solver=diffrax.NewtonNonlinearSolver(rtol=1e-5, atol=1e-5))
    ```

    ## Use instead
    ```python
    solver = diffrax.Kvaerno5(root_finder=diffrax.VeryChord(rtol=1e-5, atol=1e-5))
    ```

    ## Fix safety
    No fix: the replacement is a different keyword of the solver, and the choice between
    `diffrax.VeryChord` (what Diffrax now uses by default) and an Optimistix root finder
    such as `optimistix.Newton`, with their own tolerances and Jacobian reuse, is the
    user's; the old solver's `tol`, `kappa` and `norm` have no one-to-one counterpart.
    """

    code = "ODL908"
    name = "newton-nonlinear-solver"
    summary = "diffrax.NewtonNonlinearSolver was removed in Diffrax 0.5.0"
    triggers = (("NewtonNonlinearSolver",),)
    fixtures = "tests/fixtures/ODL908"

    examples = (
        Flag("""
            import diffrax

            solver = diffrax.Kvaerno5(nonlinear_solver=diffrax.NewtonNonlinearSolver(rtol=1e-5, atol=1e-5))
        """, message="`diffrax.NewtonNonlinearSolver` was removed in diffrax 0.5.0: AttributeError", span="3:44-3:73"),
        Flag("""
            import diffrax as dfx
            from diffrax import NewtonNonlinearSolver

            a = dfx.NewtonNonlinearSolver
        """, count=2, span=("2:21-2:42", "4:5-4:30")),
        # the current API, and a user's own class of that name
        Pass("""
            import diffrax
            import optimistix as optx

            class NewtonNonlinearSolver:
                pass

            a = diffrax.Kvaerno5(root_finder=diffrax.VeryChord(rtol=1e-5, atol=1e-5))
            b = diffrax.Kvaerno5(root_finder=optx.Newton(rtol=1e-5, atol=1e-5))
            c = NewtonNonlinearSolver()
        """),
    )
