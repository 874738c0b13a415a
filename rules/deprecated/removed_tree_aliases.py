"""ODL901: the removed `jax.tree_*` aliases and `jax.tree_util.tree_multimap`."""

from __future__ import annotations

from odelint.api.finding import Safety
from odelint.api.rule import Flag, Pass
from odelint.rules.deprecated.common import DeprecatedApiRule


class RemovedTreeAliases(DeprecatedApiRule):
    """A removed pytree alias: `jax.tree_map` and the other `jax.tree_*`, or `tree_multimap`.

    ## What it does
    Flags `jax.tree_map`, `jax.tree_flatten`, `jax.tree_unflatten`, `jax.tree_leaves`,
    `jax.tree_structure`, `jax.tree_transpose` and `jax.tree_util.tree_multimap`, however
    `jax` or `jax.tree_util` is imported (`import jax as j`, `import jax.tree_util as jtu`),
    and `from jax import tree_map` style imports of them.
    Code inside a `try` whose handler catches the failure (`except ImportError`,
    `except AttributeError`) is a compatibility shim and is left alone.

    ## Why is this bad?
    The top-level aliases were deprecated in jax 0.4.26 (jax#19930) and removed in jax
    0.6.0; `tree_multimap` was removed in jax 0.3.16. On current jax the program stops at
    the first use, or at the import:

        AttributeError: module 'jax' has no attribute 'tree_map'
        ImportError: cannot import name 'tree_multimap' from 'jax.tree_util'

    Reported across the ecosystem (feax#3, waymax#77, pyRDDLGym-jax#16, mahjax#64,
    ml-auto-solutions#838, cryojax#374, jax-fem#65, terra-baselines#4, equinox#724,
    get-started-with-JAX#3).

    ## Example
    ```python
    grads = jax.tree_map(lambda g: g / n, grads)
    from jax.tree_util import tree_multimap
    ```

    ## Use instead
    ```python
    grads = jax.tree.map(lambda g: g / n, grads)
    from jax.tree_util import tree_map as tree_multimap
    ```

    ## Fix safety
    Safe: `jax.tree.map` and the others are the functions the aliases pointed to, with
    the same signatures (`tree_map` takes several trees, as `tree_multimap` did). The
    fix keeps the file's alias of `jax` and adds `import jax` only when there is none. A
    `from` import is rewritten to import the same function from `jax.tree_util` under
    the same local name; an import that also names other things is only reported.
    """

    code = "ODL901"
    name = "removed-tree-aliases"
    summary = "A removed jax.tree_* alias or tree_multimap is used"
    triggers = (("tree_map",), ("tree_flatten",), ("tree_unflatten",), ("tree_leaves",),
                ("tree_structure",), ("tree_transpose",), ("tree_multimap",))
    fix_safety = Safety.SAFE
    fixtures = "tests/fixtures/ODL901"

    examples = (
        Flag("""
            import jax

            grads = jax.tree_map(lambda g: g / 2, {"w": 1.0})
        """, fixed="""
            import jax

            grads = jax.tree.map(lambda g: g / 2, {"w": 1.0})
        """, message="`jax.tree_map` was removed in jax 0.6.0: "
                     "AttributeError: module 'jax' has no attribute 'tree_map'", span="3:9-3:21"),
        # aliases of jax and jax.tree_util; several aliases in one file
        Flag("""
            import jax as j
            import jax.tree_util as jtu

            leaves = j.tree_leaves({"a": 1})
            total = jtu.tree_multimap(lambda a, b: a + b, {"a": 1}, {"a": 2})
            tree = j.tree_unflatten(j.tree_structure({"a": 1}), [3])
        """, fixed="""
            import jax as j
            import jax.tree_util as jtu

            leaves = j.tree.leaves({"a": 1})
            total = jtu.tree_map(lambda a, b: a + b, {"a": 1}, {"a": 2})
            tree = j.tree.unflatten(j.tree.structure({"a": 1}), [3])
        """, count=4, span=("4:10-4:23", "5:9-5:26", "6:8-6:24", "6:25-6:41")),
        # a from-import keeps its local name; `import jax` is added for an attribute use
        Flag("""
            from jax import tree_map as tm
            from jax.tree_util import tree_multimap
            import jax.numpy as jnp

            x = tm(jnp.sin, [1.0])
        """, fixed="""
            from jax.tree_util import tree_map as tm
            from jax.tree_util import tree_map as tree_multimap
            import jax.numpy as jnp

            x = tm(jnp.sin, [1.0])
        """, count=2, message="ImportError: cannot import name 'tree_map' from 'jax'", span=("1:17-1:31", "2:27-2:40")),
        Flag("""
            from jax import numpy as jnp
            from jax import tree_util

            x = tree_util.tree_multimap(jnp.add, [1.0], [2.0])
        """, fixed="""
            from jax import numpy as jnp
            from jax import tree_util

            x = tree_util.tree_map(jnp.add, [1.0], [2.0])
        """, span="4:5-4:28"),
        # an import that names other things too is reported without a fix
        Flag("""
            from jax import jit, tree_map

            square = jit(lambda x: x * x)
        """, fixed="""
            from jax import jit, tree_map

            square = jit(lambda x: x * x)
        """, span="1:22-1:30"),
        # compatibility shims that already handle the removal
        Pass("""
            import jax

            try:
                from jax import tree_map
            except ImportError:
                from jax.tree_util import tree_map

            try:
                leaves = jax.tree_leaves
            except (AttributeError, NameError):
                leaves = jax.tree.leaves
        """),
        # the current spellings, a user's own tree_map, another library's tree_map
        Pass("""
            import jax
            import jax.tree_util as jtu
            from jax.tree_util import tree_map as tm
            import optax

            def tree_map(f, tree):
                return [f(x) for x in tree]

            a = jax.tree.map(abs, [1])
            b = jtu.tree_map(abs, [1])
            c = tree_map(abs, [1])
            d = optax.tree_utils.tree_map_params
            e = tm(abs, [1])
        """),
    )
