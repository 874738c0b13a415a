"""ODL712: an `.at[...]` update whose result is thrown away (`x.at[i].set(v)` as a statement)."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import AtUpdate, Needs, Site, at_update, rebindable_here, source_of
from odelint.api.finding import Edits, Replace, Safety
from odelint.api.rule import Flag, Pass, Rule


class DiscardedAtUpdate(Rule):
    """An `.at[...]` update's result is thrown away, so the array never changes.

    ## What it does
    Flags an expression statement that is a functional update, `x.at[i].set(v)` or any
    other `.at` method that returns an updated copy (`add`, `subtract`, `multiply`/`mul`,
    `divide`, `power`, `min`, `max`, `apply`; chains `x.at[i].set(v).at[j].add(w)` too),
    when nothing keeps its result. `.at[i].get()` and values the model knows are not
    arrays (modules, functions, Python numbers) are not flagged, and neither are top-level
    statements of a notebook, where a cell's last expression is displayed.

    ## Why is this bad?
    JAX arrays are immutable: `x.at[i].set(v)` does not write into `x`, it returns a new
    array (the `.at` property is JAX's answer to `x[i] = v`, which raises
    `TypeError: JAX arrays are immutable and do not support in-place item assignment`).
    As a statement the new array is dropped and `x` keeps its old values: no error, no
    warning, the program goes on with the unchanged array (a boundary condition never
    applied, a mask never written, a counter never incremented). JAX's "Sharp bits" guide
    (section "In-place updates") warns that `.at` updates are out of place; users
    expecting NumPy's in-place semantics are behind jax-ml/jax#101, #2219 and #7032.

    ## Example
    ```python
    u = jnp.zeros(n)
    u.at[0].set(left)      # boundary value never written
    u.at[-1].set(right)
    ```

    ## Use instead
    ```python
    u = jnp.zeros(n)
    u = u.at[0].set(left)
    u = u.at[-1].set(right)
    ```

    ## Fix safety
    Unsafe: `x = x.at[i].set(v)` makes the code do what the statement says, but every later
    read of `x` then sees the updated array, which changes what the program computes
    (that is the point, but it is a change in behaviour). The fix is offered when the
    updated array is a plain name bound in the same function (rebinding a name of an
    enclosing scope would make it local); attributes (`self.buffer.at[i].set(v)`) are
    only reported.
    """

    code = "ODL712"
    name = "discarded-at-update"
    summary = "The result of an `.at[...]` update is thrown away: the array is unchanged"
    triggers = ((".at[",),)
    fix_safety = Safety.UNSAFE
    fixtures = "tests/fixtures/ODL712"

    needs = Needs.fact("discarded_at_update")

    def visit_Expr(self, node: cst.Expr, site: Site) -> None:
        if self.context.path.endswith(".ipynb") and isinstance(self.facts.body_at(site), cst.Module):
            return  # a cell's last expression is displayed, not discarded
        update = at_update(self.facts, node.value, site)
        if update is not None:
            self._flag(node, update, site)

    def _flag(self, node: cst.Expr, update: AtUpdate, site: Site) -> None:
        module = self.context.module
        array = source_of(module, update.array)
        call = source_of(module, update.call)
        fix = None
        target = update.array
        if isinstance(target, cst.Name) and rebindable_here(self.facts, target, site):
            kept = cst.Assign([cst.AssignTarget(target)], node.value)
            fix = self.fix(f"Keep the result: `{array} = {call}`", lambda: Edits([Replace(node, kept)]), safe=False)
        self.report(node, f"`.{update.method}` returns an updated copy and this statement discards it: `{array}` is "
                          f"unchanged (JAX arrays are immutable); keep the result, e.g. `{array} = {call}`", fix=fix)

    examples = (
        Flag("""
            import jax.numpy as jnp

            def with_boundary(n, left, right):
                u = jnp.zeros(n)
                u.at[0].set(left)
                u.at[-1].set(right)
                return u
        """, fixed="""
            import jax.numpy as jnp

            def with_boundary(n, left, right):
                u = jnp.zeros(n)
                u = u.at[0].set(left)
                u = u.at[-1].set(right)
                return u
        """, unsafe=True, count=2, message="`.set` returns an updated copy and this statement discards it: `u` is",
            span=("5:5-5:22", "6:5-6:24")),
        # every updating method, a chain, an annotated parameter; an attribute and a name of
        # an enclosing scope are reported without a fix
        Flag("""
            import jax
            import equinox as eqx

            counts = jax.numpy.zeros(4)

            def accumulate(hist: jax.Array, idx, w):
                hist.at[idx].add(w)
                hist.at[idx].mul(2.0).at[0].min(0.0)
                hist.at[:, 0].apply(jax.numpy.tanh)
                counts.at[idx].add(1)
                return hist

            class Buffer(eqx.Module):
                data: jax.Array

                def push(self, x):
                    self.data.at[0].set(x)
                    return self
        """, fixed="""
            import jax
            import equinox as eqx

            counts = jax.numpy.zeros(4)

            def accumulate(hist: jax.Array, idx, w):
                hist = hist.at[idx].add(w)
                hist = hist.at[idx].mul(2.0).at[0].min(0.0)
                hist = hist.at[:, 0].apply(jax.numpy.tanh)
                counts.at[idx].add(1)
                return hist

            class Buffer(eqx.Module):
                data: jax.Array

                def push(self, x):
                    self.data.at[0].set(x)
                    return self
        """, unsafe=True, count=5, span=("7:5-7:24", "8:5-8:41", "9:5-9:40", "10:5-10:26", "17:9-17:31")),
        # results kept (assigned, returned, passed on, in a comprehension), `.get()`, pandas'
        # `.at` item assignment, an update inside a `lambda`
        Pass("""
            import jax.numpy as jnp
            import pandas as pd

            def update(x, i, v, frame: pd.DataFrame):
                x = x.at[i].set(v)
                y = x.at[i].add(v).at[0].get()
                frame.at[0, "loss"] = float(y)
                rows = [x.at[j].set(0.0) for j in range(3)]
                x.at[i].get()
                print(x.at[i].multiply(2.0))
                step = lambda z: z.at[0].set(1.0)
                return x.at[i].max(v), rows, step
        """),
        # a notebook cell showing the updated copy
        Pass("""
            import jax.numpy as jnp

            x = jnp.zeros(3)
            x.at[0].set(1.0)
        """, filename="example.ipynb"),
    )
