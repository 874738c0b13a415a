"""ODL805: `SaveAt(steps=True)` outputs reduced without masking their `inf` padding."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import Needs, Site, jax_api, positional_args, source_of
from odelint.api.rule import Callees, Flag, Pass, Rule
from odelint.rules.diffrax.common import DIFFEQSOLVE, Solve, constructed

# reductions that an `inf` entry turns into inf or nan (`min` is not among them: the padding
# is +inf); as functions of jax.numpy / numpy, and as array methods
_REDUCING_FUNCTIONS = jax_api.names("inf_reductions")
_REDUCING_METHODS = frozenset({"sum", "mean", "max", "prod", "std", "var"})
_PADDED_FIELDS = frozenset({"ys", "ts"})


class UnmaskedStepOutputs(Rule):
    """Outputs saved at every step are reduced with their `inf` padding.

    ## What it does
    Flags a reduction (`jnp.sum`, `jnp.mean`, `jnp.max`, `jnp.prod`, `jnp.std`,
    `jnp.var`, `jnp.linalg.norm`, their `numpy` and `nan*` twins, and the array methods
    `.sum()`, `.mean()`, ...) over `sol.ys` or `sol.ts` of a `diffeqsolve` with
    `saveat=SaveAt(steps=True)` (or `steps=n`, or a `SubSaveAt(steps=...)`), directly or
    through arithmetic (`(sol.ys - target) ** 2`), names and `[:, i]` slices.

    ## Why is this bad?
    With `steps=...` diffrax cannot know the number of steps while tracing, so it sizes
    `ys` and `ts` by `max_steps` (4096 by default) and fills the unused slots with `inf`.
    Nothing raises: the reduction silently returns `inf` (or `nan` for `std`/`var`, or
    once the loss is differentiated), e.g. `jnp.sum(sol.ys)` is `inf` where the ten
    saved values sum to 5.86. (diffrax#210, PR#427.)

    ## Example
    ```python
    sol = diffrax.diffeqsolve(term, solver, 0.0, 1.0, 0.1, y0, saveat=diffrax.SaveAt(steps=True))
    loss = jnp.sum(sol.ys ** 2)
    ```

    ## Use instead
    ```python
    ys = jnp.where(jnp.isfinite(sol.ys), sol.ys, 0.0)
    loss = jnp.sum(ys ** 2)
    ```
    or keep the first `sol.stats["num_accepted_steps"]` entries outside `jit`.

    ## Fix safety
    No automatic fix: whether the padding should count as zero, be dropped, or be
    replaced by the last value depends on the reduction.
    """

    code = "ODL805"
    name = "unmasked-step-outputs"
    summary = "SaveAt(steps=True) outputs reduced without masking the inf padding"
    triggers = (("SaveAt", "steps", "diffeqsolve"),)
    fixtures = "tests/fixtures/ODL805"

    needs = Needs.calls_to(DIFFEQSOLVE)

    @classmethod
    def callees(cls) -> Callees:
        """The reductions `_reduced` knows: `jnp.sum(x)`, `x.mean()`."""
        return Callees(names=_REDUCING_FUNCTIONS, methods=_REDUCING_METHODS)

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        reduced = self._reduced(node, site)
        padded = self._padded(reduced, site, set()) if reduced is not None else None
        if padded is None:
            return
        text = source_of(self.context.module, padded)
        reduction = source_of(self.context.module, node.func)
        self.report(
            node,
            f"`{text}` comes from a solve with `SaveAt(steps=...)`: diffrax pads it to `max_steps` entries with "
            f"`inf`, so `{reduction}` silently returns inf or nan; mask the padding first, e.g. "
            f"`jnp.where(jnp.isfinite({text}), {text}, 0.0)`, or keep the first "
            f"`stats[\"num_accepted_steps\"]` entries",
        )

    def _reduced(self, node: cst.Call, site: Site) -> cst.BaseExpression | None:
        """The array a reduction call reduces, or None when `node` is no reduction."""
        if self.facts.qualname(node.func, site.scope) in _REDUCING_FUNCTIONS:
            args = positional_args(node)
            return args[0].value if args else None
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in _REDUCING_METHODS:
            value = node.func.value
            return value if self.facts.qualname(value, site.scope) is None else None  # not `jnp.max` itself
        return None

    def _padded(self, node: cst.BaseExpression, site: Site, seen: set[int]) -> cst.Attribute | None:
        """The `sol.ys`/`sol.ts` of a steps-saving solve whose every entry reaches `node`."""
        if isinstance(node, cst.BinaryOperation):
            return self._padded(node.left, site, seen) or self._padded(node.right, site, seen)
        if isinstance(node, cst.UnaryOperation):
            return self._padded(node.expression, site, seen)
        if isinstance(node, cst.Subscript):
            first = node.slice[0].slice if node.slice else None
            keeps_steps = (isinstance(first, cst.Slice) and first.lower is None and first.upper is None
                           and first.step is None)
            return self._padded(node.value, site, seen) if keeps_steps else None
        if isinstance(node, cst.Name) and id(node) not in seen:
            seen.add(id(node))
            found = self.facts.definition(node, site)
            if found is None or found.value is None:
                return None
            return self._padded(found.value, found.site, seen)
        if isinstance(node, cst.Attribute) and node.attr.value in _PADDED_FIELDS:
            built = constructed(self.facts, node.value, site)
            solve = Solve.of(self.facts, built[0], built[1]) if built is not None else None
            return node if solve is not None and solve.saves_steps() is not None else None
        return None

    examples = (
        Flag("""
            import diffrax
            import jax.numpy as jnp

            term = diffrax.ODETerm(lambda t, y, args: -y)
            sol = diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.1, 1.0, saveat=diffrax.SaveAt(steps=True))
            total = jnp.sum(sol.ys)
        """, message="`sol.ys` comes from a solve with `SaveAt(steps=...)`: diffrax pads it to `max_steps` entries "
                     "with `inf`, so `jnp.sum` silently returns inf or nan", span="6:9-6:24"),
        # aliases, from-imports, a saveat built beforehand, arithmetic, names, methods, slices
        Flag("""
            import diffrax as dfx
            import jax.numpy as np2
            from diffrax import SaveAt, diffeqsolve

            def loss(target):
                saveat = SaveAt(steps=True)
                sol = diffeqsolve(dfx.ODETerm(lambda t, y, a: -y), dfx.Euler(), 0.0, 1.0, 0.1, np2.ones(2),
                                  saveat=saveat)
                ys = sol.ys
                first = np2.mean((ys - target) ** 2)
                second = (-sol.ys[:, 0]).max()
                third = np2.linalg.norm(sol.ts)
                return first + second + third
        """, count=3, span=("10:13-10:41", "11:14-11:35", "12:13-12:36")),
        Flag("""
            import diffrax
            import numpy as np

            sol = diffrax.diffeqsolve(diffrax.ODETerm(lambda t, y, a: -y), diffrax.Euler(), 0.0, 1.0, 0.1, 1.0,
                                      saveat=diffrax.SaveAt(subs=[diffrax.SubSaveAt(steps=5)]))
            print(np.std(sol.ys))
        """, span="6:7-6:21"),
        # masked, sliced to one entry, min, another SaveAt, a function named sum
        Pass("""
            import diffrax
            import jax.numpy as jnp

            term = diffrax.ODETerm(lambda t, y, args: -y)
            sol = diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.1, 1.0, saveat=diffrax.SaveAt(steps=True))
            masked = jnp.where(jnp.isfinite(sol.ys), sol.ys, 0).sum()
            finite = jnp.sum(jnp.nan_to_num(sol.ys, posinf=0.0))
            first = jnp.sum(sol.ys[0])
            count = sol.stats["num_accepted_steps"]
            lowest = jnp.min(sol.ys)
            dense = diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.1, 1.0,
                                        saveat=diffrax.SaveAt(ts=jnp.linspace(0, 1, 5), steps=False))
            total = jnp.sum(dense.ys) + dense.ys.mean()

            def sum(x):
                return x

            sum(sol.ys)
        """),
    )
