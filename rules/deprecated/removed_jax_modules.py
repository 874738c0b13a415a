"""ODL903: importing a module jax removed (`jax.config`, `jax.experimental.host_callback`, ...)."""

from __future__ import annotations

from odelint.analysis import triggers_for
from odelint.api.finding import Safety
from odelint.api.rule import Flag, Pass
from odelint.rules.deprecated.common import DeprecatedApiRule


class RemovedJaxModules(DeprecatedApiRule):
    """A removed jax module is imported: `jax.config`, `jax.experimental.host_callback`, ...

    ## What it does
    Flags `from jax.config import config`, `import jax.config`, and every import of
    `jax.experimental.host_callback` (`import ... as hcb`, `from jax.experimental import
    host_callback`, `from jax.experimental.host_callback import id_tap`), and of the other
    modules listed for ODL903 in `lint/analysis/data/deprecated_apis.toml`:
    `jax.experimental.optimizers` and `jax.experimental.stax` (removed in jax 0.3.16; now
    `jax.example_libraries`), `jax.experimental.maps` (`xmap`, removed in 0.4.31),
    `jax.experimental.export` (removed in 0.4.36; now `jax.export`) and `jax.lib.xla_bridge`
    (removed in 0.9.0). The message follows the jax version the project targets, as
    ODL910's does; each version comes from jax's changelog or the sources of the releases
    around the change (the table's `source`).
    Code inside a `try` whose handler catches the failure (`except ImportError`,
    `except AttributeError`) is a compatibility shim and is left alone.

    ## Why is this bad?
    The `jax.config` submodule was removed in jax 0.4.29 (the config object stays at
    `jax.config`); `host_callback` was deprecated in jax 0.4.26 (jax#20385) and removed in
    0.4.35: up to 0.7.2 a stub module still imports but every call raises
    `NotImplementedError`, and from 0.8.0 the import fails. On current jax the file fails at
    the import:

        ModuleNotFoundError: No module named 'jax.config'
        ModuleNotFoundError: No module named 'jax.experimental.host_callback'

    Old `from jax.config import config` lines keep turning up in user code around Diffrax
    (diffrax#64, #207).

    ## Example
    ```python
    from jax.config import config
    config.update("jax_enable_x64", True)
    from jax.experimental import host_callback as hcb
    ```

    ## Use instead
    ```python
    from jax import config
    config.update("jax_enable_x64", True)
    # jax.debug.callback for id_tap/id_print; jax.pure_callback or io_callback for call
    ```

    `jax.experimental.optimizers` fails the same way (`ModuleNotFoundError: No module named
    'jax.experimental.optimizers'`), as do the other removed modules.

    ## Fix safety
    Safe for `jax.config`: `from jax import config` and `import jax` bind the same config
    object the old import did. `host_callback` is only reported: `id_tap`, `id_print` and
    `call` each map to a different new API (`jax.debug.callback`, `jax.pure_callback`,
    `jax.experimental.io_callback`) with different signatures and ordering guarantees.
    The other removed modules are reported with their replacement: their APIs moved
    or changed (`xmap` has no drop-in replacement).
    """

    code = "ODL903"
    name = "removed-jax-modules"
    summary = "A removed jax module (jax.config, jax.experimental.host_callback, ...) is imported"
    triggers = triggers_for("ODL903")
    fix_safety = Safety.SAFE
    fixtures = "tests/fixtures/ODL903"

    examples = (
        Flag("""
            from jax.config import config

            enable = True
            config.update("jax_enable_x64", enable)
        """, fixed="""
            from jax import config

            enable = True
            config.update("jax_enable_x64", enable)
        """, message="`jax.config` was removed in jax 0.4.29: ModuleNotFoundError: No module named 'jax.config'",
            span="1:1-1:30"),
        Flag("""
            import jax.config
            from jax.config import config as cfg

            jax.config.update("jax_enable_x64", True)
            debug = cfg.jax_debug_nans
        """, fixed="""
            import jax
            from jax import config as cfg

            jax.config.update("jax_enable_x64", True)
            debug = cfg.jax_debug_nans
        """, count=2, span=("1:8-1:18", "2:1-2:37")),
        # host_callback: reported however it is imported, never rewritten
        Flag("""
            import jax.experimental.host_callback as hcb
            from jax.experimental import host_callback
            from jax.experimental.host_callback import id_tap

            def tap(x):
                return id_tap(print, x), hcb, host_callback
        """, fixed="""
            import jax.experimental.host_callback as hcb
            from jax.experimental import host_callback
            from jax.experimental.host_callback import id_tap

            def tap(x):
                return id_tap(print, x), hcb, host_callback
        """, count=3, message="use `jax.debug.callback`", span=("1:8-1:45", "2:1-2:43", "3:1-3:50")),
        # an import of other names from jax.config is reported without a fix
        Flag("""
            from jax.config import config, flags

            FLAGS = flags.FLAGS
        """, fixed="""
            from jax.config import config, flags

            FLAGS = flags.FLAGS
        """, span="1:1-1:37"),
        # an import guarded by a handler is a compatibility shim, one in a function body is not
        Flag("""
            import jax

            try:
                from jax.experimental import host_callback
            except ImportError:
                host_callback = None

            try:
                def tap(x):
                    from jax.experimental.host_callback import id_tap
                    return id_tap(print, x)
            except ImportError:
                tap = jax.debug.print
        """, span="10:9-10:58"),
        # the modules that moved: reported with where they went
        Flag("""
            from jax.experimental import optimizers
            import jax.experimental.stax as stax

            opt_init, opt_update, get_params = optimizers.adam(1e-3)
        """, count=2, message="`jax.experimental.optimizers` was removed in jax 0.3.16: "
                              "ImportError: cannot import name 'optimizers' from 'jax.experimental'; "
                              "use `jax.example_libraries.optimizers`", span=("1:1-1:40", "2:8-2:37")),
        # the config object, the new callback APIs, the modules' new homes
        Pass("""
            import jax
            from jax import config
            from jax.experimental import io_callback

            jax.config.update("jax_enable_x64", True)
            config.update("jax_debug_nans", True)
            jax.debug.callback(print, 1)
        """),
        Pass("""
            from jax.example_libraries import optimizers, stax
            from jax import export

            opt_init, opt_update, get_params = optimizers.adam(1e-3)
        """),
    )
