"""ODL910: functions, classes and aliases that jax removed (`jax.partial`, `jax.ops.index_update`, ...)."""

from __future__ import annotations

from odelint.analysis import triggers_for
from odelint.api.finding import Safety
from odelint.api.rule import Flag, Pass
from odelint.rules.deprecated.common import DeprecatedApiRule


class RemovedJaxApis(DeprecatedApiRule):
    """A function, class or alias that jax removed is used.

    ## What it does
    Flags the names listed for ODL910 in `lint/analysis/data/deprecated_apis.toml`, however
    jax is imported (`import jax.numpy as jnp`, `from jax import ops`, `from jax.random
    import KeyArray`): `jax.partial`, `jax.experimental.enable_x64` / `disable_x64`,
    `jax.ops.index_update` / `index_add` / `index_mul` / `index_min` / `index_max` /
    `jax.ops.index`, `jax.random.KeyArray` / `PRNGKeyArray`, `jax.lax.tie_in`,
    `jax.nn.normalize`, `jax.xla_computation`, `jax.clear_backends`, `jax.random.shuffle`,
    `DeviceArray` / `ShardedDeviceArray`, `jax.experimental.PartitionSpec`,
    `jax.experimental.pjit.with_sharding_constraint`, `jax.scipy.linalg.tril` / `triu`, and
    the NumPy aliases jax dropped following NumPy (`jnp.round_`, `jnp.product`, `jnp.cumproduct`,
    `jnp.sometrue`, `jnp.alltrue`, `jnp.row_stack`, `jnp.trapz`, `jnp.in1d`, `jnp.msort`,
    `jnp.NINF`), and NumPy's own aliases that `jax.numpy` never had (`jnp.NaN`, `jnp.Inf`,
    `jnp.PINF`, `jnp.infty`: no jax release defined them). Each removal version comes from
    jax's changelog or, where it says nothing, from the sources of the releases around it
    (the table's `source`). Removed tree aliases are ODL901's, removed modules ODL903's.

    The finding is where the program fails: at the `from ... import` line for a name
    imported from where it is gone (`from jax.random import KeyArray`; its later uses are not
    reported again), and at the attribute for a module's missing attribute
    (`jax.ops.index_update(...)`, `ops.index_update` after `from jax import ops`).

    The message follows the jax version the project targets (`--target-version`, else its
    exact pins, else the installed jax): "was removed in jax R" from R on, "still works on
    jax V but is deprecated since D and was removed in R" before, and nothing before the
    deprecation; a name jax never had "does not exist in jax" on every version. Code inside
    a `try` whose handler catches the failure (`except AttributeError`, `except
    ImportError`) is a compatibility shim and is left alone.

    ## Why is this bad?
    The program stops at the first use, or at the import:

        AttributeError: module 'jax.ops' has no attribute 'index_update'
        AttributeError: module 'jax.experimental' has no attribute 'enable_x64'
        ImportError: cannot import name 'KeyArray' from 'jax.random'

    `jax.partial` went in jax 0.2.21, the `jax.ops.index_*` functions in 0.3.2 (deprecated
    in 0.2.22), `KeyArray` in 0.4.24 (deprecated in 0.4.16, jax#17594; jax-md#299,
    scib-metrics#135), `tie_in` and `nn.normalize` in 0.4.29, `jax.random.shuffle` in
    0.4.31, `jax.xla_computation` in 0.4.34, `jax.clear_backends` in 0.4.36,
    `jax.experimental.enable_x64` in 0.9.0 (deprecated in 0.8.0, jax#32429; keras#21734).

    ## Example
    ```python
    from jax.experimental import enable_x64
    x = jax.ops.index_update(x, jax.ops.index[0], 1.0)
    def init(key: jax.random.KeyArray): ...
    ```

    ## Use instead
    ```python
    from jax import enable_x64
    x = x.at[0].set(1.0)
    def init(key: jax.Array): ...
    ```

    ## Fix safety
    Safe where the replacement is the very object the old name pointed to:
    `jax.partial` -> `functools.partial`, `jax.experimental.enable_x64` -> `jax.enable_x64`,
    `jax.nn.normalize` -> `jax.nn.standardize`, `jax.experimental.PartitionSpec` ->
    `jax.sharding.PartitionSpec`, `with_sharding_constraint` -> `jax.lax`'s,
    `jax.scipy.linalg.tril`/`triu` -> `jax.numpy`'s, `jnp.trapz` ->
    `jax.scipy.integrate.trapezoid` (what jax's deprecation pointed to, there since 0.4.16),
    and the NumPy aliases (`jnp.product` -> `jnp.prod`, `jnp.NaN` -> `jnp.nan`, ...). The fix keeps the file's alias
    of the package and adds an import only when there is none; a `from` import is rewritten
    to import the replacement under the same local name. Everything else is reported with
    its replacement: `x.at[idx].set(y)` is a different call shape, `KeyArray` checks at run
    time differ from `jax.Array`, `in1d` flattened its result. Where the project targets a
    version that still has the old name, the fix is offered only if the replacement
    already exists there (from the deprecation on).
    """

    code = "ODL910"
    name = "removed-jax-apis"
    summary = "A function, class or alias removed from jax is used"
    triggers = triggers_for("ODL910")
    fix_safety = Safety.SAFE
    fixtures = "tests/fixtures/ODL910"

    examples = (
        Flag("""
            import jax
            import jax.numpy as jnp

            x = jnp.zeros(3)
            x = jax.ops.index_update(x, jax.ops.index[0], 1.0)
        """, fixed="""
            import jax
            import jax.numpy as jnp

            x = jnp.zeros(3)
            x = jax.ops.index_update(x, jax.ops.index[0], 1.0)
        """, count=2, message="`jax.ops.index_update` was removed in jax 0.3.2: AttributeError: "
                              "module 'jax.ops' has no attribute 'index_update'; use the `.at` property",
                                  span=("5:5-5:25", "5:29-5:42")),
        # 1:1 replacements are rewritten, keeping the file's aliases
        Flag("""
            import jax
            import jax.numpy as jnp

            def total(x):
                with jax.experimental.enable_x64():
                    return jnp.product(x), jnp.NaN
        """, fixed="""
            import jax
            import jax.numpy as jnp

            def total(x):
                with jax.enable_x64():
                    return jnp.prod(x), jnp.nan
        """, count=3, message="`jax.experimental.enable_x64` was removed in jax 0.9.0",
            span=("5:10-5:37", "6:16-6:27", "6:32-6:39")),
        # jax.partial becomes functools.partial, importing functools
        Flag("""
            import jax

            @jax.partial(jax.jit, static_argnums=1)
            def power(x, n):
                return x ** n
        """, fixed="""
            import jax
            import functools

            @functools.partial(jax.jit, static_argnums=1)
            def power(x, n):
                return x ** n
        """, message="`jax.partial` was removed in jax 0.2.21", span="3:2-3:13"),
        # from-imports: a 1:1 one is rewritten under the same local name, KeyArray only reported
        Flag("""
            from jax.experimental import enable_x64
            from jax.random import KeyArray

            def init(key: KeyArray):
                with enable_x64():
                    return key
        """, fixed="""
            from jax import enable_x64
            from jax.random import KeyArray

            def init(key: KeyArray):
                with enable_x64():
                    return key
        """, count=2, message="ImportError: cannot import name 'enable_x64' from 'jax.experimental'",
            span=("1:30-1:40", "2:24-2:32")),
        Flag("""
            import jax.lax as lax

            def body(x, y):
                return lax.tie_in(x, y) + 1
        """, fixed="""
            import jax.lax as lax

            def body(x, y):
                return lax.tie_in(x, y) + 1
        """, message="use its second argument itself", span="4:12-4:22"),
        # the current spellings; numpy's own names; a shim that handles the removal
        Pass("""
            import functools
            import jax
            import jax.numpy as jnp
            import numpy as np

            x = jnp.zeros(3).at[0].set(1.0)
            with jax.enable_x64():
                y = jnp.prod(x)
            z = np.product([1, 2]), np.NaN, functools.partial(print, 1)

            def init(key: jax.Array) -> jax.Array:
                return key

            try:
                from jax.random import KeyArray
            except ImportError:
                KeyArray = jax.Array
        """),
        # version switches: the old spelling in the fallback of a shim, or behind `hasattr`
        Pass("""
            import jax

            try:
                from jax import enable_x64
            except ImportError:
                from jax.experimental import enable_x64

            if hasattr(jax, "enable_x64"):
                x64 = jax.enable_x64
            else:
                x64 = jax.experimental.enable_x64

            def is_key(key):
                if hasattr(jax.dtypes, "prng_key"):
                    return jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key)
                elif hasattr(jax.random, "PRNGKeyArray"):
                    return isinstance(key, jax.random.PRNGKeyArray)
                return False
        """),
        # a `hasattr` on the user's own object is no version switch
        Flag("""
            import jax

            def init(model, key):
                if hasattr(model, "init"):
                    return jax.random.shuffle(key, model.init())
                return None
        """, fixed="""
            import jax

            def init(model, key):
                if hasattr(model, "init"):
                    return jax.random.shuffle(key, model.init())
                return None
        """, message="`jax.random.shuffle` was removed in jax 0.4.31", span="5:16-5:34"),
        # where the program fails: the from-import of a removed name (its later uses run no
        # more), the attribute of a module that is still there, the alias jax never had
        Flag("""
            from jax import ops, random
            from jax.experimental.pjit import with_sharding_constraint
            import jax.numpy as jnp

            def shard(x, spec, key):
                x = with_sharding_constraint(x, spec)
                x = ops.index_update(x, 0, jnp.NaN)
                return random.shuffle(key, x), with_sharding_constraint(x, spec)
        """, fixed="""
            from jax import ops, random
            from jax.lax import with_sharding_constraint
            import jax.numpy as jnp

            def shard(x, spec, key):
                x = with_sharding_constraint(x, spec)
                x = ops.index_update(x, 0, jnp.nan)
                return random.shuffle(key, x), with_sharding_constraint(x, spec)
        """, count=4, message="ImportError: cannot import name 'with_sharding_constraint' from 'jax.experimental.pjit'",
            span=("2:35-2:59", "7:9-7:25", "7:32-7:39", "8:12-8:26")),
        Flag("""
            import jax.numpy as jnp

            def mask(x):
                return jnp.where(x > 0, x, jnp.NaN)
        """, fixed="""
            import jax.numpy as jnp

            def mask(x):
                return jnp.where(x > 0, x, jnp.nan)
        """, message="`jnp.NaN` does not exist in jax (no release had it): AttributeError: "
                     "module 'jax.numpy' has no attribute 'NaN'", span="4:32-4:39"),
    )
