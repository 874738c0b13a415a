"""ODL911: submodules, classes and keywords that Equinox, Diffrax and Optax removed."""

from __future__ import annotations

from odelint.analysis import triggers_for
from odelint.api.rule import Flag, Pass
from odelint.rules.deprecated.common import DeprecatedApiRule


class RemovedLibraryApis(DeprecatedApiRule):
    """A submodule, class or keyword that Equinox, Diffrax or Optax removed is used.

    ## What it does
    Flags the names listed for ODL911 in `lint/analysis/data/deprecated_apis.toml`, resolved
    through imports and aliases: the `equinox.experimental` submodule (gone in Equinox
    0.10.3, with its `StateIndex`, `get_state`, `set_state`, `BatchNorm`, `SpectralNorm`),
    the filter keywords Equinox 0.10.0 dropped (`arg=`/`filter_spec=` of `eqx.filter_grad`
    and `eqx.filter_value_and_grad`; `default=`/`fn=`/`args=`/`kwargs=`/`out=` of
    `eqx.filter_jit`, `eqx.filter_vmap` and `eqx.filter_pmap`; `eqx.filter_jit(...,
    filter_spec=...)`), `nonlinear_solver=` of Diffrax's implicit solvers and
    `diffrax.AbstractNonlinearSolver` (gone in Diffrax 0.5.0),
    `ConstantStepSize(compile_steps=...)` and `diffrax.NoAdjoint` (gone in Diffrax 0.3.0),
    and Optax's second-order helpers at the top level (`optax.hessian_diag`, `fisher_diag`,
    `hvp`, moved to `optax.second_order` in Optax 0.1.8). Each version comes from the
    library's release notes or, where they say nothing, from the sources of the releases
    around the change (the table's `source`). The message follows the version of that
    library the project targets, as ODL910 does for jax. Code inside a `try` whose handler
    catches the failure is left alone.

    The finding is where the program fails: the import line for a from-import of a removed
    name or of anything in a removed submodule (`from optax import hessian_diag`, `from
    equinox import experimental`; the names it binds are not reported again where they are
    used), the attribute for a module's missing attribute (`optax.hessian_diag(...)`), the
    keyword for a removed keyword.

    ## Why is this bad?
    The old spelling fails as soon as it runs:

        ValueError: arg is deprecated as of Equinox version 0.10.0.
        TypeError: Kvaerno5.__init__() got an unexpected keyword argument 'nonlinear_solver'
        ModuleNotFoundError: No module named 'equinox.experimental'
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
        """, count=4, message="`equinox.experimental` was removed in equinox 0.10.3: "
                              "ModuleNotFoundError: No module named 'equinox.experimental'",
            span=("2:1-2:43", "6:9-6:36", "7:5-7:23", "8:40-8:46")),
        # where the program fails: the from-import line, not each later use of what it binds;
        # the attribute of a module that is still there
        Flag("""
            import jax
            import optax
            from equinox import experimental
            from optax import hessian_diag

            def curvature(loss, params, batch):
                index = experimental.StateIndex(jax.numpy.zeros(3))
                state = experimental.get_state(index, jax.numpy.zeros(3))
                diag = hessian_diag(loss, params, *batch)
                return diag, optax.fisher_diag(loss, params, *batch), state
        """, count=3, message="ImportError: cannot import name 'experimental' from 'equinox'",
            span=("3:1-3:33", "4:19-4:31", "10:18-10:35")),
        Flag("""
            import equinox as eqx

            @eqx.filter_jit(args=(True,))
            def step(model, x):
                return model(x)
        """, message="`eqx.filter_jit` no longer accepts `args=` (removed in equinox 0.10.0): "
                     "ValueError: args is deprecated as of Equinox version 0.10.0", span="3:17-3:29"),
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
        # where those names went: still there on the checked versions
        Pass("""
            import diffrax
            import equinox as eqx
            import optax
            from optax.second_order import hessian_diag

            index = eqx.nn.StateIndex(0.0)
            controller = diffrax.ConstantStepSize()
            step = eqx.filter_jit(lambda m: m, donate="all")
            hvp = optax.second_order.hvp
        """),
    )
