"""ODL909: `optax.additive_weight_decay`, the removed alias of `optax.add_decayed_weights`."""

from __future__ import annotations

from odelint.api.finding import Safety
from odelint.api.rule import Flag, Pass
from odelint.rules.deprecated.common import DeprecatedApiRule


class AdditiveWeightDecay(DeprecatedApiRule):
    """The removed alias `optax.additive_weight_decay` is used.

    ## What it does
    Flags `optax.additive_weight_decay` (through any alias of `optax`) and
    `from optax import additive_weight_decay`.
    Code inside a `try` whose handler catches the failure (`except ImportError`,
    `except AttributeError`) is a compatibility shim and is left alone.

    ## Why is this bad?
    It was a legacy alias of `optax.add_decayed_weights` (optax#307) that optax removed;
    current optax fails at the first use:

        AttributeError: module 'optax' has no attribute 'additive_weight_decay'

    (scverse/scvi-tools#2396.)

    ## Example
    ```python
    optim = optax.chain(optax.additive_weight_decay(1e-4), optax.sgd(1e-2))
    ```

    ## Use instead
    ```python
    optim = optax.chain(optax.add_decayed_weights(1e-4), optax.sgd(1e-2))
    ```

    ## Fix safety
    Safe: the alias was the same function (`weight_decay`, `mask`). The fix keeps the
    file's alias of `optax`; a `from optax import additive_weight_decay` becomes
    `from optax import add_decayed_weights as additive_weight_decay`, so the names the
    file uses keep working (an import that also names other things is only reported).
    """

    code = "ODL909"
    name = "additive-weight-decay"
    summary = "optax.additive_weight_decay was removed: use optax.add_decayed_weights"
    triggers = (("additive_weight_decay",),)
    fix_safety = Safety.SAFE
    fixtures = "tests/fixtures/ODL909"

    examples = (
        Flag("""
            import optax

            optim = optax.chain(optax.additive_weight_decay(1e-4), optax.sgd(1e-2))
        """, fixed="""
            import optax

            optim = optax.chain(optax.add_decayed_weights(1e-4), optax.sgd(1e-2))
        """, message="AttributeError: module 'optax' has no attribute 'additive_weight_decay'", span="3:21-3:48"),
        Flag("""
            import optax as ox
            from optax import additive_weight_decay

            a = ox.additive_weight_decay(1e-4, mask=None)
            b = additive_weight_decay(1e-4)
        """, fixed="""
            import optax as ox
            from optax import add_decayed_weights as additive_weight_decay

            a = ox.add_decayed_weights(1e-4, mask=None)
            b = additive_weight_decay(1e-4)
        """, count=2, span=("2:19-2:40", "4:5-4:29")),
        # the current name, and another library's function of that name
        Pass("""
            import optax
            from mylib import additive_weight_decay

            a = optax.add_decayed_weights(1e-4)
            b = additive_weight_decay(1e-4)
        """),
    )
