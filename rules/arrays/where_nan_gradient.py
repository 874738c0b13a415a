"""ODL706: `jnp.where` guarding a branch whose derivative is not finite at the guarded inputs."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst
from odelint.analysis import jax_api
from odelint.analysis.calls import positional_args, source_of
from odelint.analysis.facts import loaded_names
from odelint.analysis.scopes import Site
from odelint.api.finding import Edits, Replace, Safety
from odelint.api.rule import Flag, Pass, Rule

WHERE = frozenset({"jax.numpy.where", "jax.lax.select"})
_DIVISION = jax_api.Singular("/", 1.0, (1,))
_POWER = jax_api.Singular("**", 1.0, (0,), exponent=1)


class WhereNanGradient(Rule):
    """`jnp.where` guards a value that a branch still takes a singular function of.

    ## What it does
    Flags `jnp.where(cond, a, b)` (and `lax.select`) where a branch applies `sqrt`, `log`,
    `arcsin`, `arctan2`, a division, a fractional or negative power or another function
    from the data table of functions with a non-finite derivative (rules/data/jax_api.toml,
    `[singular]`), to a variable that `cond` tests, e.g.
    `jnp.where(x > 0, jnp.sqrt(x), 0.0)`. An input already guarded by its own inner
    `jnp.where` (the double-where pattern) is not flagged, nor are branches without such
    functions.

    ## Why is this bad?
    `jnp.where` computes both branches for every element and selects afterwards. The
    forward value is right, but the gradient multiplies the zero cotangent of the
    unselected branch by that branch's derivative, which is infinite or NaN there
    (`sqrt` and `log` at 0, `1/x` at 0), and `0 * inf = nan`: the gradient is NaN with
    no error (`jax.grad(lambda x: jnp.where(x > 0, jnp.sqrt(x), 0.0))(0.0)` is `nan`;
    jax-ml/jax#1052, #347, #5798, #2630).

    ## Example
    ```python
    y = jnp.where(x > 0, jnp.sqrt(x), 0.0)
    ```

    ## Use instead
    ```python
    y = jnp.where(x > 0, jnp.sqrt(jnp.where(x > 0, x, 1.0)), 0.0)
    ```

    ## Fix safety
    Unsafe: the double-where feeds the singular function a placeholder inside its
    domain (1.0; 0.0 for `arcsin`/`arccos`/`arctanh`) wherever the guard deselects it.
    Selected values and their gradients are unchanged and the NaN gradients become the
    intended zeros, but the gradient does change, and the condition is evaluated twice.
    The fix is offered when the function's input is the guarded variable itself; an
    expression of it (`jnp.sqrt(1 - x)`) may need a different placeholder and is only
    reported.
    """

    code = "ODL706"
    name = "where-nan-gradient"
    summary = "jnp.where guards an input that a branch still takes sqrt/log/division of (NaN gradient)"
    triggers = (("where",), ("select",))
    fix_safety = Safety.UNSAFE
    fixtures = "tests/fixtures/ODL706"

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        if self.facts.qualname(node.func, site.scope) not in WHERE:
            return
        args = positional_args(node)
        if args is None or len(args) != 3 or len(node.args) != 3:
            return
        cond = args[0].value
        guarded = {name.value for name in loaded_names(cond) if self._variable(name, site)}
        if not guarded:
            return
        for position, branch in ((1, args[1].value), (2, args[2].value)):
            for op, function, inputs in self._singular_uses(branch, site):
                hits = [value for value in inputs if self._reads(value, guarded, site)]
                if hits:
                    self._flag(node, cond, position, op, function, hits, guarded, site)

    def _flag(self, where: cst.Call, cond: cst.BaseExpression, position: int, op: cst.CSTNode,
              function: jax_api.Singular, hits: list[cst.BaseExpression], guarded: set[str], site: Site) -> None:
        module = self.context.module
        test = source_of(module, cond)
        side = "false" if position == 1 else "true"
        fix = None
        if all(isinstance(hit, cst.Name) and hit.value in guarded for hit in hits):
            fix = self.fix("Guard the input too (double `jnp.where`)",
                           lambda: self._double_where(cond, position, function, hits, site), safe=False)
        example = source_of(module, hits[0])
        self.report(op, f"`{source_of(module, op)}` is still computed where `{test}` is {side}, and its derivative "
                        f"is not finite at some of those inputs: `jnp.where`'s zero cotangent times it makes the "
                        f"gradient NaN (the value is right): feed it `jnp.where({test}, ...)` of `{example}` too",
                    fix=fix)

    def _double_where(self, cond: cst.BaseExpression, position: int, function: jax_api.Singular,
                      hits: list[cst.BaseExpression], site: Site) -> Edits:
        where, imports = self.facts.reference("jax.numpy.where", site)
        placeholder = cst.Float(repr(float(function.placeholder)))
        replacements = []
        for hit in hits:
            kept, other = (hit, placeholder) if position == 1 else (placeholder, hit)
            guard = cst.Call(where, [cst.Arg(cond.deep_clone()), cst.Arg(kept.deep_clone()), cst.Arg(other)])
            replacements.append(Replace(hit, guard))
        return Edits(replacements, imports)

    def _singular_uses(self, node: cst.CSTNode,
                       site: Site) -> Iterator[tuple[cst.CSTNode, jax_api.Singular, list[cst.BaseExpression]]]:
        """Singular functions applied inside a branch, with their singular inputs; inner
        `jnp.where` calls and lambdas are not entered."""
        stack = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.Lambda):
                continue
            if isinstance(current, cst.Call):
                qualname = self.facts.qualname(current.func, site.scope)
                if qualname in WHERE:
                    continue
                function = jax_api.singular(qualname)
                args = positional_args(current)
                if function is not None and args is not None:
                    exponent = function.exponent
                    if exponent is None or (exponent < len(args) and _singular_exponent(args[exponent].value)):
                        yield current, function, [args[i].value for i in function.arguments if i < len(args)]
            elif isinstance(current, cst.BinaryOperation):
                if isinstance(current.operator, cst.Divide):
                    yield current, _DIVISION, [current.right]
                elif isinstance(current.operator, cst.Power) and _singular_exponent(current.right):
                    yield current, _POWER, [current.left]
            stack.extend(reversed(current.children))

    def _reads(self, node: cst.BaseExpression, guarded: set[str], site: Site) -> bool:
        """Does `node` read a guarded variable other than through an inner `jnp.where`?"""
        if isinstance(node, cst.Call) and self.facts.qualname(node.func, site.scope) in WHERE:
            return False
        if isinstance(node, cst.Name):
            return node.value in guarded
        if isinstance(node, cst.Attribute):
            return self._reads(node.value, guarded, site)
        if isinstance(node, cst.Lambda):
            return False
        return any(self._reads(child, guarded, site) for child in node.children)  # type: ignore[arg-type]

    def _variable(self, name: cst.Name, site: Site) -> bool:
        bindings = self.facts.lookup(name.value, site.scope)
        return bool(bindings) and not any(b.kind in ("import", "def", "class") for b in bindings)

    examples = (
        Flag("""
            import jax.numpy as jnp

            def f(x):
                return jnp.where(x > 0, jnp.sqrt(x), 0.0)
        """, fixed="""
            import jax.numpy as jnp

            def f(x):
                return jnp.where(x > 0, jnp.sqrt(jnp.where(x > 0, x, 1.0)), 0.0)
        """, unsafe=True, message="`jnp.sqrt(x)` is still computed where `x > 0` is false"),
        # division, a negative power, arcsin (placeholder 0.0) in the false branch; lax.select; jnp from `jax`
        Flag("""
            import jax
            from jax import lax

            def g(x, y):
                a = jax.numpy.where(x == 0, 0.0, 1 / x)
                b = lax.select(y < 1, jax.numpy.arcsin(y), y)
                c = jax.numpy.where(x != 0, x ** -2, 1.0)
                return a + b + c
        """, fixed="""
            import jax
            from jax import lax

            def g(x, y):
                a = jax.numpy.where(x == 0, 0.0, 1 / jax.numpy.where(x == 0, 1.0, x))
                b = lax.select(y < 1, jax.numpy.arcsin(jax.numpy.where(y < 1, y, 0.0)), y)
                c = jax.numpy.where(x != 0, jax.numpy.where(x != 0, x, 1.0) ** -2, 1.0)
                return a + b + c
        """, unsafe=True, count=3),
        # an expression of the guarded value: reported, no fix (the placeholder may be out of its domain)
        Flag("""
            import jax.numpy as jnp

            def h(x):
                return jnp.where(x < 1, jnp.log(1 - x), 0.0)
        """, fixed="""
            import jax.numpy as jnp

            def h(x):
                return jnp.where(x < 1, jnp.log(1 - x), 0.0)
        """, unsafe=True),
        # double where, safe branches, whole powers, a value the condition does not test, numpy's where
        Pass("""
            import jax.numpy as jnp
            import numpy as np

            def f(x, y):
                safe = jnp.where(x > 0, x, 1.0)
                a = jnp.where(x > 0, jnp.sqrt(safe), 0.0)
                b = jnp.where(x > 0, jnp.sqrt(jnp.where(x > 0, x, 1.0)), 0.0)
                c = jnp.where(x > 0, x ** 2 + jnp.exp(x), -x)
                d = jnp.where(x > 0, jnp.sqrt(y), 0.0)
                e = np.where(x > 0, np.sqrt(x), 0.0)
                return a + b + c + d + e
        """),
    )


def _singular_exponent(node: cst.BaseExpression) -> bool:
    """A literal exponent that is not a whole number >= 0 (`0.5`, `-1`, `1/3`); a variable
    exponent is unknown and not flagged."""
    negative = isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus)
    inner = node.expression if negative else node  # type: ignore[attr-defined]
    if isinstance(inner, cst.BinaryOperation) and isinstance(inner.operator, cst.Divide):
        return isinstance(inner.left, cst.BaseNumber) and isinstance(inner.right, cst.BaseNumber)
    if isinstance(inner, (cst.Integer, cst.Float)):
        value = float(inner.evaluated_value)
        return negative or not value.is_integer()
    return False
