"""ODL713: a norm or square root differentiated where its argument is exactly zero (a pairwise
difference's diagonal)."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import (
    Needs,
    Site,
    jax_api,
    pairwise_difference,
    positional_args,
    source_of,
    squared_pairwise_difference,
    tested_for_zero,
    zero_filled_parameter,
)
from odelint.api.finding import Edits, Replace, Safety
from odelint.api.rule import Callees, FileContext, Flag, Pass, Rule

_NORM_KEYWORDS = frozenset({"axis", "keepdims"})


class NormNanGradientAtZero(Rule):
    """A norm or square root is differentiated where its argument is exactly zero.

    ## What it does
    Flags, in code that runs under differentiation (`jax.grad`, `eqx.filter_grad`, a loss
    handed to one), `jnp.linalg.norm(d, axis=-1)` and `jnp.sqrt(jnp.sum(d ** 2, axis=-1))`
    (`d * d`, `jnp.square(d)`, `.sum(...)` too) where `d` is a pairwise difference
    `x[:, None] - x[None, :]`, directly or through a name. The diagonal of such a
    difference is exactly zero, so every distance matrix built from it has zeros on the
    diagonal. Also flags `n = jnp.linalg.norm(v)` (or `jnp.sqrt(s)`) when the code then
    tests `n` against zero (`n > 0`, `n == 0`, `n < 1e-8`): it expects the zero itself.
    And a norm of a parameter that a call of the file fills with zeros (`jnp.zeros(n)`,
    `jnp.zeros_like(w)`, or a name assigned one), directly or through a transform
    (`jax.grad(loss)(jnp.zeros(3))`): a weight penalty differentiated at its zero
    initialisation. A norm with `ord` other than 2, and differences of two different
    arrays, are not flagged.

    ## Why is this bad?
    The derivative of `|x|` is `x / |x|`, and that of `sqrt(s)` is `1 / (2 sqrt(s))`: at
    zero they are 0/0 and infinite, and reverse mode multiplies them into the chain, so
    the gradient is NaN (the value is right). Because every entry of `x` meets itself on
    the diagonal, the whole gradient is NaN, not just one entry. Reproduced on jax 0.10.2:
    `jax.grad` of `sum(exp(-norm(x[:, None] - x[None], axis=-1)))` is all `nan`
    (jax-ml/jax#3058, #4177, #6484 (`grad(norm)(x - x)` is all NaN), #21723, and #26248,
    which meets it on the diagonal of a Matern kernel; the maintainers call it working
    as intended. The double-where explanation is jax-ml/jax#1052; shared pitfall P25).

    ## Example
    ```python
    def energy(x):
        d = jnp.linalg.norm(x[:, None] - x[None, :], axis=-1)
        return jnp.sum(jnp.exp(-d))
    ```

    ## Use instead
    ```python
    def energy(x):
        d = optax.safe_norm(x[:, None] - x[None, :], 0.0, axis=-1)
        return jnp.sum(jnp.exp(-d))
    ```

    ## Fix safety
    Unsafe: `optax.safe_norm(d, 0.0, ...)` gives the same values and a zero gradient
    where `d` is zero (the NaN becomes the intended zero; optax is imported if needed).
    For `jnp.sqrt(s)` the fix is the double-where form,
    `jnp.where(s > 0, jnp.sqrt(jnp.where(s > 0, s, 1.0)), 0.0)`, which also keeps every
    value. Norms with `ord` or positional options are only reported.
    """

    code = "ODL713"
    name = "norm-nan-gradient-at-zero"
    summary = "A norm or sqrt is differentiated where its argument is exactly zero (pairwise-difference diagonal)"
    triggers = (("norm",), ("sqrt",))
    fix_safety = Safety.UNSAFE
    fixtures = "tests/fixtures/ODL713"

    needs = Needs.differentiated_calls_to(*jax_api.norm_functions()) & Needs.fact("norm_at_zero")

    @classmethod
    def callees(cls) -> Callees:
        return Callees(names=frozenset(jax_api.norm_functions()))

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._reported: set[int] = set()

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        qualname = self.facts.qualname(node.func, site.scope)
        args = positional_args(node)
        if not args:
            return
        argument = args[0].value
        if jax_api.euclidean_norm(qualname):
            array = pairwise_difference(self.facts, argument, site)
        elif jax_api.square_root(qualname):
            array = squared_pairwise_difference(self.facts, argument, site)
        else:
            return
        if array is not None:
            self._check(node, site, f"its argument, a pairwise difference of `{array}`, is exactly zero on the "
                                    f"diagonal")
            return
        filled = zero_filled_parameter(self.facts, argument, site)
        if filled is not None:
            name, call = filled
            self._check(node, site, f"its argument `{name}` is all zeros where "
                                    f"`{source_of(self.context.module, call)}` calls it")

    def visit_Comparison(self, node: cst.Comparison, site: Site) -> None:
        found = tested_for_zero(self.facts, node, site)
        call, where = found if found is not None else (None, site)
        if not isinstance(call, cst.Call):
            return
        qualname = self.facts.qualname(call.func, where.scope)
        if jax_api.euclidean_norm(qualname) or jax_api.square_root(qualname):
            test = source_of(self.context.module, node)
            self._check(call, where, f"the code tests `{test}`, so its argument is zero at a point it reaches")

    def _check(self, node: cst.Call, site: Site, zero: str) -> None:
        args = positional_args(node) or []
        norm = jax_api.euclidean_norm(self.facts.qualname(node.func, site.scope))
        if id(node) in self._reported or (norm and not self._euclidean(node, args)):
            return
        why = self.facts.differentiated_by(site)
        if why is None:
            return
        self._reported.add(id(node))
        call = source_of(self.context.module, node)
        if norm:
            safe = len(args) == 1 and all(arg.keyword is not None and arg.keyword.value in _NORM_KEYWORDS
                                          for arg in node.args[1:])
            fix = self.fix("Use `optax.safe_norm(..., 0.0)`", lambda: self._safe_norm(node, site),
                           safe=False) if safe else None
            self.report(node, f"`{call}` is differentiated ({why}) and {zero}, where the norm's derivative x/|x| "
                              f"is 0/0: the gradient is NaN (the value is right); use `optax.safe_norm(..., 0.0)`",
                        fix=fix)
        else:
            summed = args[0].value
            self.report(node, f"`{call}` is differentiated ({why}) and {zero}, where sqrt's derivative is infinite: "
                              f"the gradient is NaN (the value is right); use the double-where form "
                              f"`jnp.where(s > 0, jnp.sqrt(jnp.where(s > 0, s, 1.0)), 0.0)`",
                        fix=self.fix("Guard the root (double `jnp.where`)",
                                     lambda: self._double_where(node, summed, site), safe=False))

    def _euclidean(self, node: cst.Call, args: list[cst.Arg]) -> bool:
        """No `ord`, or `ord=None`/`ord=2`; a positional `ord` is not read."""
        if len(args) > 1:
            return False
        order = next((arg.value for arg in node.args if arg.keyword is not None and arg.keyword.value == "ord"), None)
        return order is None or (isinstance(order, cst.Name) and order.value == "None") or (
            isinstance(order, cst.Integer) and order.value == "2")

    def _safe_norm(self, node: cst.Call, site: Site) -> Edits:
        function, imports = self.facts.reference(jax_api.safe_norm(), site)
        args = [node.args[0].with_changes(comma=cst.MaybeSentinel.DEFAULT), cst.Arg(cst.Float("0.0")),
                *[arg for arg in node.args[1:] if not (arg.keyword is not None and arg.keyword.value == "ord")]]
        fixed = [arg.with_changes(comma=cst.MaybeSentinel.DEFAULT) for arg in args]
        return Edits([Replace(node, cst.Call(function, fixed))], imports)

    def _double_where(self, node: cst.Call, summed: cst.BaseExpression, site: Site) -> Edits:
        where, imports = self.facts.reference(jax_api.name("numpy_where"), site)
        positive = cst.Comparison(summed.deep_clone(), [cst.ComparisonTarget(cst.GreaterThan(), cst.Integer("0"))])
        inner = cst.Call(where, [cst.Arg(positive), cst.Arg(summed.deep_clone()), cst.Arg(cst.Float("1.0"))])
        root = node.with_changes(args=[cst.Arg(inner)])
        guarded = cst.Call(where.deep_clone(), [cst.Arg(positive.deep_clone()), cst.Arg(root),
                                                cst.Arg(cst.Float("0.0"))])
        return Edits([Replace(node, guarded)], imports)

    examples = (
        Flag("""
            import jax
            import jax.numpy as jnp
            import optax

            def energy(x):
                d = jnp.linalg.norm(x[:, None] - x[None, :], axis=-1)
                return jnp.sum(jnp.exp(-d))

            force = jax.grad(energy)
        """, fixed="""
            import jax
            import jax.numpy as jnp
            import optax

            def energy(x):
                d = optax.safe_norm(x[:, None] - x[None, :], 0.0, axis=-1)
                return jnp.sum(jnp.exp(-d))

            force = jax.grad(energy)
        """, unsafe=True, message="is differentiated (`energy` is differentiated by `jax.grad`", span="6:9-6:58"),
        # sqrt of summed squares through a name, a `.sum` method; optax imported by the fix
        Flag("""
            import equinox as eqx
            import jax.numpy as jnp

            @eqx.filter_grad
            def loss(pos):
                diff = pos[:, None, :] - pos[None, :, :]
                r = jnp.sqrt(jnp.sum(diff ** 2, axis=-1))
                s = jnp.sqrt((diff * diff).sum(-1))
                n = jnp.linalg.norm(diff, axis=-1, keepdims=True)
                return jnp.sum(r + s) + jnp.sum(n)
        """, fixed="""
            import equinox as eqx
            import jax.numpy as jnp
            import optax

            @eqx.filter_grad
            def loss(pos):
                diff = pos[:, None, :] - pos[None, :, :]
                r = jnp.where(jnp.sum(diff ** 2, axis=-1) > 0, jnp.sqrt(jnp.where(jnp.sum(diff ** 2, axis=-1) > 0, jnp.sum(diff ** 2, axis=-1), 1.0)), 0.0)
                s = jnp.where((diff * diff).sum(-1) > 0, jnp.sqrt(jnp.where((diff * diff).sum(-1) > 0, (diff * diff).sum(-1), 1.0)), 0.0)
                n = optax.safe_norm(diff, 0.0, axis=-1, keepdims=True)
                return jnp.sum(r + s) + jnp.sum(n)
        """, unsafe=True, count=3,  # noqa: E501 - the fixed text is what the fix writes
            span=("7:9-7:46", "8:9-8:40", "9:9-9:54")),
        # the code tests the norm (and a root) against zero itself
        Flag("""
            import jax
            import jax.numpy as jnp

            def direction_loss(v, target):
                n = jnp.linalg.norm(v)
                unit = jnp.where(n > 0, v / jnp.where(n > 0, n, 1.0), 0.0)
                r = jnp.sqrt(jnp.sum(v * target))
                if_zero = jnp.where(r == 0, 0.0, 1.0)
                return jnp.sum((unit - target) ** 2) + if_zero

            grad = jax.grad(direction_loss)
        """, fixed="""
            import jax
            import jax.numpy as jnp
            import optax

            def direction_loss(v, target):
                n = optax.safe_norm(v, 0.0)
                unit = jnp.where(n > 0, v / jnp.where(n > 0, n, 1.0), 0.0)
                r = jnp.where(jnp.sum(v * target) > 0, jnp.sqrt(jnp.where(jnp.sum(v * target) > 0, jnp.sum(v * target), 1.0)), 0.0)
                if_zero = jnp.where(r == 0, 0.0, 1.0)
                return jnp.sum((unit - target) ** 2) + if_zero

            grad = jax.grad(direction_loss)
        """, unsafe=True, count=2,  # noqa: E501 - the fixed text is what the fix writes
            message="the code tests `n > 0`, so its argument is zero at a point it reaches",
                span=("5:9-5:27", "7:9-7:38")),
        # not differentiated here; two different arrays; ord=1; already safe; a norm of a plain
        # vector; a test against a threshold that is not zero
        Pass("""
            import jax
            import jax.numpy as jnp
            import optax

            def distances(x):
                return jnp.linalg.norm(x[:, None] - x[None, :], axis=-1)

            def loss(x, y):
                a = jnp.linalg.norm(x[:, None] - y[None, :], axis=-1)
                b = jnp.linalg.norm(x[:, None] - x[None, :], ord=1, axis=-1)
                c = optax.safe_norm(x[:, None] - x[None, :], 0.0, axis=-1)
                n = jnp.linalg.norm(y)
                clipped = jnp.where(n > 1.0, y / n, y)
                return jnp.sum(a + b + c + clipped) + jnp.linalg.norm(x)

            def host(v):
                n = jnp.linalg.norm(v)
                return jnp.where(n > 0, v / n, v)

            g = jax.grad(loss)
        """),
        # the weights start as zeros and the first gradient meets |w| at exactly zero
        Flag("""
            import jax
            import jax.numpy as jnp

            def loss(w, x, y):
                return jnp.mean((x @ w - y) ** 2) + 0.1 * jnp.linalg.norm(w)

            x, y = jnp.ones((4, 3)), jnp.ones(4)
            w0 = jnp.zeros(3)
            first_step = w0 - 0.01 * jax.grad(loss)(w0, x, y)
        """, fixed="""
            import jax
            import jax.numpy as jnp
            import optax

            def loss(w, x, y):
                return jnp.mean((x @ w - y) ** 2) + 0.1 * optax.safe_norm(w, 0.0)

            x, y = jnp.ones((4, 3)), jnp.ones(4)
            w0 = jnp.zeros(3)
            first_step = w0 - 0.01 * jax.grad(loss)(w0, x, y)
        """, unsafe=True, message="its argument `w` is all zeros where `jax.grad(loss)(w0, x, y)` calls it",
            span="5:47-5:65"),
        # the same penalty from a random start: |w| is zero nowhere the program goes
        Pass("""
            import jax
            import jax.numpy as jnp

            def loss(w, x, y):
                return jnp.mean((x @ w - y) ** 2) + 0.1 * jnp.linalg.norm(w)

            w = jax.random.normal(jax.random.key(0), (3,))
            g = jax.grad(loss)(w, jnp.ones((4, 3)), jnp.ones(4))
        """),
    )
