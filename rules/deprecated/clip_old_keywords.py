"""ODL902: `jnp.clip(a_min=..., a_max=...)`, keywords jax no longer accepts."""

from __future__ import annotations

from odelint.api.finding import Safety
from odelint.api.rule import Flag, Pass
from odelint.rules.deprecated.common import DeprecatedApiRule


class ClipOldKeywords(DeprecatedApiRule):
    """`jnp.clip` is called with NumPy's old `a_min=` / `a_max=` keywords.

    ## What it does
    Flags a call of `jax.numpy.clip` (through any alias: `jnp.clip`, `jax.numpy.clip`,
    `from jax.numpy import clip`) that passes `a_min=` or `a_max=`.

    ## Why is this bad?
    jax 0.4.27 renamed them to `min=` / `max=` (the Array API names) and deprecated the
    old ones; current jax rejects them:

        TypeError: clip() got an unexpected keyword argument 'a_min'

    NumPy's own `np.clip` still takes `a_min`/`a_max`, which is why the spelling keeps
    coming back in code ported from NumPy.

    ## Example
    ```python
    y = jnp.clip(x, a_min=0.0, a_max=1.0)
    ```

    ## Use instead
    ```python
    y = jnp.clip(x, min=0.0, max=1.0)
    ```

    ## Fix safety
    Safe: the keywords are renamed and their values kept; `min`/`max` mean exactly what
    `a_min`/`a_max` meant.
    """

    code = "ODL902"
    name = "clip-old-keywords"
    summary = "jnp.clip is called with the removed a_min=/a_max= keywords"
    triggers = (("clip", "a_min"), ("clip", "a_max"))
    fix_safety = Safety.SAFE
    fixtures = "tests/fixtures/ODL902"

    examples = (
        Flag("""
            import jax.numpy as jnp

            y = jnp.clip(jnp.arange(3.0), a_min=0.5, a_max=1.5)
        """, fixed="""
            import jax.numpy as jnp

            y = jnp.clip(jnp.arange(3.0), min=0.5, max=1.5)
        """, message="TypeError: clip() got an unexpected keyword argument 'a_min'", span="3:31-3:40"),
        Flag("""
            import jax
            from jax.numpy import clip as clamp

            a = jax.numpy.clip(1.0, a_max=0.0)
            b = clamp(1.0, a_min=2.0)
        """, fixed="""
            import jax
            from jax.numpy import clip as clamp

            a = jax.numpy.clip(1.0, max=0.0)
            b = clamp(1.0, min=2.0)
        """, count=2, span=("4:25-4:34", "5:16-5:25")),
        # the new keywords, positional bounds, NumPy's clip, an array's own clip method
        Pass("""
            import numpy as np
            import jax.numpy as jnp

            x = jnp.arange(3.0)
            a = jnp.clip(x, min=0)
            b = jnp.clip(x, 0, 1)
            c = np.clip(np.arange(3.0), a_min=0, a_max=1)
            d = x.clip(0, 1)
        """),
    )
