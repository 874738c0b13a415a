"""ODL911: submodules, classes and keywords that Equinox, Diffrax and Optax removed."""

from __future__ import annotations

from odelint.analysis import triggers_for
from odelint.api.rule import Flag, Pass
from odelint.rules.deprecated.common import DeprecatedApiRule


class RemovedLibraryApis(DeprecatedApiRule):
    """A submodule, class or keyword that Equinox, Diffrax or Optax removed is used.

    ## What it does
    Flags the names listed for ODL911 in `rules/data/deprecated_apis.toml`, resolved through
    imports and aliases: `equinox.experimental` (its `StateIndex`, `get_state`,
    `set_state`, `BatchNorm`, `SpectralNorm`), the filter keywords Equinox 0.10.0 dropped
    (`eqx.filter_grad(..., arg=...)`, `eqx.filter_value_and_grad(..., arg=...)`,
    `eqx.filter_vmap(..., args=/kwargs=/out=)`, `eqx.filter_jit(..., filter_spec=...)`),
    `nonlinear_solver=` of Diffrax's implicit solvers, `ConstantStepSize(compile_steps=...)`,
    `diffrax.NoAdjoint`, `diffrax.AbstractNonlinearSolver`, and Optax's second-order helpers
    (`optax.hessian_diag`, `fisher_diag`, `hvp`) and `optax.soft_update`. The message
    follows the version of that library the project targets, as ODL910 does for jax.
    Code inside a `try` whose handler catches the failure is left alone.

    ## Why is this bad?
    The old spelling fails as soon as it runs:

        ValueError: arg is deprecated as of Equinox version 0.10.0.
        TypeError: Kvaerno5.__init__() got an unexpected keyword argument 'nonlinear_solver'
        AttributeError: module 'equinox' has no attribute 'experimental'
        AttributeError: module 'optax' has no attribute 'hessian_diag'

    Diffrax 0.5.0 moved root finding to Optimistix (diffrax#345); Equinox 0.10.0 replaced
    the `arg=`/`args=`/`out=` filters with `in_axes`/`out_axes` and plain closures, and
    0.10.3 removed `equinox.experimental` when the stateful layers became `eqx.nn.State`
    (equinox#323; eqxvision#70, equinox#663: model zoos built on it no longer import).

    ## Example
    ```python
    grads = eqx.filter_grad(loss, arg=eqx.is_inexact_array)(model, x, y)
    solver = diffrax.Kvaerno5(nonlinear_solver=diffrax.NewtonNonlinearSolver(rtol=1e-5, atol=1e-5))
    ```

    ## Use instead
    ```python
    grads = eqx.filter_grad(loss)(model, x, y)
    solver = diffrax.Kvaerno5(root_finder=diffrax.VeryChord(rtol=1e-5, atol=1e-5))
    ```

    ## Fix safety
    No automatic fix: each replacement changes more than a name (a filter becomes the
    argument order or a closure, a nonlinear solver becomes a root finder with its own
    tolerances, a stateful layer needs an `eqx.nn.State` threaded through the call), so
    the message names the replacement and the author makes the change.
    """

    code = "ODL911"
    name = "removed-library-apis"
    summary = "A submodule, class or keyword removed from Equinox, Diffrax or Optax is used"
    triggers = triggers_for("ODL911")
    fixtures = "tests/fixtures/ODL911"

    examples = (
        Flag("""
            import equinox as eqx
            import jax.numpy as jnp

            def loss(model, x):
                return jnp.sum(model(x) ** 2)

            grads = eqx.filter_grad(loss, arg=eqx.is_inexact_array)
        """, message="`eqx.filter_grad` no longer accepts `arg=` (removed in equinox 0.10.0): "
                     "ValueError: arg is deprecated as of Equinox version 0.10.0", span="7:31-7:55"),
        Flag("""
            import diffrax as dfx

            solver = dfx.Kvaerno5(nonlinear_solver=dfx.VeryChord(rtol=1e-5, atol=1e-5))
        """, message="TypeError: Kvaerno5.__init__() got an unexpected keyword argument 'nonlinear_solver'; "
                     "use `root_finder=`", span="3:23-3:75"),
        Flag("""
            import equinox as eqx
            from equinox.experimental import BatchNorm
            import optax

            bn = BatchNorm(3, axis_name="batch")
            index = eqx.experimental.StateIndex()
            h = optax.hessian_diag
            batched = eqx.filter_vmap(lambda x: x, args=0, out=0)
        """, count=4, span=("2:34-2:43", "6:9-6:36", "7:5-7:23", "8:40-8:46")),
        # the current spellings, and look-alikes that belong to other functions
        Pass("""
            import diffrax
            import equinox as eqx
            import jax

            grads = eqx.filter_grad(lambda m: m)
            batched = eqx.filter_vmap(lambda x: x, in_axes=0, out_axes=0)
            solver = diffrax.Kvaerno5(root_finder=diffrax.VeryChord(rtol=1e-5, atol=1e-5))
            bn, state = eqx.nn.make_with_state(eqx.nn.BatchNorm)(3, axis_name="batch")
            hess = jax.hessian(lambda x: x ** 3)
            mapped = jax.vmap(lambda x: x, out_axes=0)
            adjoint = diffrax.RecursiveCheckpointAdjoint()
        """),
    )
