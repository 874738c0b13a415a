"""ODL904: `jax.pure_callback(..., vectorized=...)`, an argument jax no longer knows."""

from __future__ import annotations

from odelint.api.finding import Safety
from odelint.api.rule import Flag, Pass
from odelint.rules.deprecated.common import DeprecatedApiRule


class PureCallbackVectorized(DeprecatedApiRule):
    """`jax.pure_callback` is given the removed `vectorized=` argument.

    ## What it does
    Flags a call of `jax.pure_callback` (through any alias) that passes `vectorized=`.

    ## Why is this bad?
    `vectorized` was deprecated in jax 0.4.34 (jax#23881) in favour of `vmap_method`.
    Current jax no longer knows it: like every unknown keyword it is forwarded to the
    callback, so the program fails when the callback runs (facebookresearch/fmmax#139):

        jax.errors.JaxRuntimeError: INTERNAL: CpuCallback error calling callback: ...
        TypeError: f() got an unexpected keyword argument 'vectorized'

    (unless the callback takes `**kwargs`, when it silently receives `vectorized`). Under
    `jax.vmap` it fails even earlier, since the call has no `vmap_method`:

        NotImplementedError: vmap is only supported for the pure_callback primitive when
        vmap_method is one of 'sequential', ... Got vmap_method=None.

    ## Example
    ```python
    y = jax.pure_callback(np.sin, out_type, x, vectorized=True)
    ```

    ## Use instead
    ```python
    y = jax.pure_callback(np.sin, out_type, x, vmap_method="legacy_vectorized")
    ```

    ## Fix safety
    Safe for a literal `True` or `False`: jax's deprecation mapped `vectorized=True` to
    `vmap_method="legacy_vectorized"` (kept, its source says, "to support the behavior that
    was previously exposed when using `vectorized=True`") and `False` to
    `"sequential"`, the old default. New code may prefer `"expand_dims"`, which differs
    by also giving unbatched arguments a leading axis of size 1, so the fix does not use
    it. Any other value is only reported.
    """

    code = "ODL904"
    name = "pure-callback-vectorized"
    summary = "jax.pure_callback is given the removed vectorized= argument"
    triggers = (("pure_callback", "vectorized"),)
    fix_safety = Safety.SAFE
    fixtures = "tests/fixtures/ODL904"

    examples = (
        Flag("""
            import jax
            import numpy as np

            out = jax.ShapeDtypeStruct((3,), np.float32)
            y = jax.pure_callback(np.sin, out, np.zeros(3, np.float32), vectorized=True)
        """, fixed="""
            import jax
            import numpy as np

            out = jax.ShapeDtypeStruct((3,), np.float32)
            y = jax.pure_callback(np.sin, out, np.zeros(3, np.float32), vmap_method="legacy_vectorized")
        """, message="got an unexpected keyword argument 'vectorized'", span="5:61-5:76"),
        Flag("""
            from jax import pure_callback as call_host

            def f(x, out):
                return call_host(abs, out, x, vectorized=False)
        """, fixed="""
            from jax import pure_callback as call_host

            def f(x, out):
                return call_host(abs, out, x, vmap_method="sequential")
        """, span="4:35-4:51"),
        # a value the rule cannot map is reported without a fix
        Flag("""
            import jax

            def f(x, out, batched):
                return jax.pure_callback(abs, out, x, vectorized=batched)
        """, fixed="""
            import jax

            def f(x, out, batched):
                return jax.pure_callback(abs, out, x, vectorized=batched)
        """, span="4:43-4:61"),
        # vmap_method, other callbacks, other functions with a `vectorized` argument
        Pass("""
            import jax
            import numpy as np
            from jax.experimental import io_callback

            def host(x, vectorized=False):
                return x

            out = jax.ShapeDtypeStruct((), np.float32)
            a = jax.pure_callback(np.sin, out, 1.0, vmap_method="expand_dims")
            b = io_callback(np.sin, out, 1.0)
            c = host(1.0, vectorized=True)
            d = np.vectorize(abs)
        """),
    )
