"""ODL706: `jnp.where` guarding a branch whose derivative is not finite at the guarded inputs."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst
from odelint.analysis import (
    DefinedAs,
    Needs,
    Site,
    dotted_name,
    guard,
    jax_api,
    never_differentiated,
    number,
    positional_args,
    source_of,
)
from odelint.api.finding import Edits, Replace, Safety
from odelint.api.rule import UNFIXED, Callees, Flag, Pass, Rule

WHERE = jax_api.names("where")
_JNP_WHERE = jax_api.name("jnp_where")


class WhereNanGradient(Rule):
    """`jnp.where` deselects inputs where a branch's derivative is not finite.

    ## What it does
    Flags `jnp.where(x OP c, a, b)` (and `lax.select`), where `OP` is a comparison with a
    number `c`, when a branch applies `sqrt`, `log`, `arcsin`, `arctan2`, a division, a
    fractional or negative power or another function from the data table of functions
    with a non-finite derivative (lint/analysis/data/jax_api.toml, `[singular]`) to `x` itself,
    and the inputs where the guard deselects that branch include inputs where that
    derivative is infinite or NaN: `jnp.where(x > 0, jnp.sqrt(x), 0.0)` (the false side
    holds x <= 0), `jnp.where(x == 0, 0.0, 1 / x)`; also a product with an infinite
    constant (`x * jnp.inf`, infinite slope everywhere) and a branch that is a local name
    assigned such a value on an earlier line (`r = jnp.sqrt(x)`, reported there, no fix).
    Inputs already guarded by an inner
    `jnp.where` (the double-where pattern), guards that keep the singular inputs
    (`jnp.where(x > 0, 0.0, jnp.sqrt(x))`) and guards it cannot read are not flagged, nor
    is code that is never reverse-differentiated: a Pallas kernel (a function given to
    `pallas_call`, and what it calls), or a function whose every caller in the file wraps
    its result in `lax.stop_gradient`.

    ## Why is this bad?
    `jnp.where` computes both branches for every element and selects afterwards. The
    forward value is right, but the gradient multiplies the zero cotangent of the
    unselected branch by that branch's derivative, which is infinite or NaN there, and
    `0 * inf = nan`: the gradient is NaN with no error
    (`jax.grad(lambda x: jnp.where(x > 0, jnp.sqrt(x), 0.0))(0.0)` is `nan`;
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
    """

    code = "ODL706"
    name = "where-nan-gradient"
    summary = "jnp.where deselects inputs where a branch's sqrt/log/division has no finite derivative"
    triggers = (("where",), ("select",))
    fix_safety = Safety.UNSAFE
    fixtures = "tests/fixtures/ODL706"
    expected_errors = UNFIXED  # a silent wrong value, not the error the test expects

    @classmethod
    def callees(cls) -> Callees:
        return Callees(names=WHERE)

    needs = Needs.fact("where_nan_gradient")

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        if self.facts.qualname(node.func, site.scope) not in WHERE:
            return
        args = positional_args(node)
        if args is None or len(args) != 3 or len(node.args) != 3:
            return
        cond = args[0].value
        found = guard(cond)
        if found is None or not self._variable(found[1], site) or never_differentiated(self.facts, site):
            return
        name, _, true, false = found
        for position, branch in ((1, args[1].value), (2, args[2].value)):
            deselected = false if position == 1 else true
            for op, function, inputs in self._singular_uses(branch, site):
                hits = [value for value in inputs if dotted_name(value) == name]
                if hits and any(region.meets(low, high) for region in deselected for low, high in function.bad):
                    self._flag(cond, position, op, function, hits, site)
            assigned = self.facts.local_value(branch, site) if isinstance(branch, cst.Name) else None
            if (not isinstance(branch, cst.Name) or assigned is None
                    or self.facts.definition(name.split(".")[0], site) is None):
                continue  # the guarded variable must mean the same on both lines
            for op, function, inputs in self._singular_uses(assigned[0], assigned[1]):  # `r = jnp.sqrt(y)` before
                hits = [value for value in inputs if dotted_name(value) == name]
                if hits and any(region.meets(low, high) for region in deselected for low, high in function.bad):
                    self._flag(cond, position, op, function, hits, site, via=branch.value)

    def _flag(self, cond: cst.BaseExpression, position: int, op: cst.CSTNode, function: jax_api.Singular,
              hits: list[cst.BaseExpression], site: Site, via: str | None = None) -> None:
        """`via`: the local name the branch reads, assigned the singular value on an earlier line
        (reported there, without a fix: the name may have other uses the guard would change)."""
        module = self.context.module
        test = source_of(module, cond)
        side = "false" if position == 1 else "true"
        variable = source_of(module, hits[0])
        held = f" (held by `{via}`, the `jnp.where` branch)" if via else ""
        fix = None if via else self.fix("Guard the input too (double `jnp.where`)",
                                        lambda: self._double_where(cond, position, function, hits, site), safe=False)
        self.report(op, f"`{source_of(module, op)}`{held} is still computed where `{test}` is {side}, which includes "
                        f"inputs where its derivative is infinite or NaN: under differentiation `jnp.where`'s zero "
                        f"cotangent times it makes the gradient NaN (the value is right): feed it "
                        f"`jnp.where({test}, ...)` of `{variable}` too", fix=fix)

    def _double_where(self, cond: cst.BaseExpression, position: int, function: jax_api.Singular,
                      hits: list[cst.BaseExpression], site: Site) -> Edits:
        where, imports = self.facts.reference(_JNP_WHERE, site)
        placeholder = cst.Float(repr(float(function.placeholder)))
        replacements = []
        for hit in hits:
            kept, other = (hit, placeholder) if position == 1 else (placeholder, hit)
            guarded = cst.Call(where, [cst.Arg(cond.deep_clone()), cst.Arg(kept.deep_clone()), cst.Arg(other)])
            replacements.append(Replace(hit, guarded))
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
                    if exponent is None or (exponent < len(args) and _power(args[exponent].value) is not None):
                        yield current, function, [args[i].value for i in function.arguments if i < len(args)]
            elif isinstance(current, cst.BinaryOperation):
                if isinstance(current.operator, cst.Divide):
                    yield current, jax_api.DIVISION, [current.right]
                elif isinstance(current.operator, cst.Power):
                    power = _power(current.right)
                    if power is not None:
                        yield current, power, [current.left]
                elif isinstance(current.operator, cst.Multiply):
                    for factor, other in ((current.left, current.right), (current.right, current.left)):
                        if jax_api.infinite(self.facts.qualname(factor, site.scope)):
                            yield current, jax_api.INFINITE_FACTOR, [other]
            stack.extend(reversed(current.children))

    def _variable(self, node: cst.BaseExpression, site: Site) -> bool:
        """A value of the program, not a module or class name."""
        while isinstance(node, cst.Attribute):
            node = node.value
        definitions = self.facts.definitions(node, site) if isinstance(node, cst.Name) else ()
        return bool(definitions) and not any(
            d.what in (DefinedAs.IMPORT, DefinedAs.FUNCTION, DefinedAs.CLASS) for d in definitions)

    examples = (
        Flag("""
            import jax.numpy as jnp

            def f(x):
                return jnp.where(x > 0, jnp.sqrt(x), 0.0)
        """, fixed="""
            import jax.numpy as jnp

            def f(x):
                return jnp.where(x > 0, jnp.sqrt(jnp.where(x > 0, x, 1.0)), 0.0)
        """, unsafe=True, message="`jnp.sqrt(x)` is still computed where `x > 0` is false", span="4:29-4:40"),
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
        """, unsafe=True, count=3, span=("5:38-5:43", "6:27-6:46", "7:33-7:40")),
        # an attribute chain, the constant on the left, a fractional power as a function
        Flag("""
            import jax.numpy as jnp

            class Ball:
                def volume_scale(self):
                    return jnp.where(0.0 < self.r, jnp.power(self.r, 1.5), 0.0)
        """, fixed="""
            import jax.numpy as jnp

            class Ball:
                def volume_scale(self):
                    return jnp.where(0.0 < self.r, jnp.power(jnp.where(0.0 < self.r, self.r, 1.0), 1.5), 0.0)
        """, unsafe=True, span="5:40-5:62"),
        # double where, safe branches, whole powers, a value the condition does not test, numpy's
        # where, a guard whose deselected side holds no singular input, expressions and unknown bounds
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
                f = jnp.where(x > 0, 0.0, jnp.sqrt(x)) + jnp.where(x < -1, 0.0, 1 / x)
                g = jnp.where(x > -0.69, jnp.log(-jnp.expm1(x)), jnp.log1p(-jnp.exp(x)))
                h = jnp.where(x > y, jnp.sqrt(x), 0.0) + jnp.where(x >= 0, x ** -1, 0.0)
                return a + b + c + d + e + f + g + h
        """),
        # the only caller stops the gradient of the result (diffrax's initial step size)
        Pass("""
            import jax
            import jax.numpy as jnp

            def initial_step(y0, f0, rtol):
                d0 = jnp.linalg.norm(y0)
                d1 = jnp.linalg.norm(f0)
                return jnp.where(d1 <= 1e-5, 1e-6, 0.01 * d0 / d1) * rtol

            def init(y0, f0, rtol):
                dt0 = initial_step(y0, f0, rtol)
                dt0 = jax.lax.stop_gradient(dt0)
                return dt0
        """),
        # a Pallas kernel body, reached through functools.partial
        Pass("""
            import functools

            import jax.numpy as jnp
            from jax.experimental import pallas as pl

            def _normalise(x):
                s = jnp.sum(x)
                return jnp.where(s == 0, 0.0, x / s)

            def kernel(x_ref, o_ref, scale):
                o_ref[...] = scale * _normalise(x_ref[...])

            def normalise(x):
                return pl.pallas_call(functools.partial(kernel, scale=2.0), out_shape=x)(x)
        """),
        # one caller stops the gradient, another does not: still differentiated
        Flag("""
            import jax
            import jax.numpy as jnp

            def inverse(x):
                return jnp.where(x == 0, 0.0, 1.0 / x)

            def frozen(x):
                return jax.lax.stop_gradient(inverse(x))

            def loss(x):
                return jnp.sum(inverse(x))
        """, fixed="""
            import jax
            import jax.numpy as jnp

            def inverse(x):
                return jnp.where(x == 0, 0.0, 1.0 / jnp.where(x == 0, 1.0, x))

            def frozen(x):
                return jax.lax.stop_gradient(inverse(x))

            def loss(x):
                return jnp.sum(inverse(x))
        """, unsafe=True, message="`1.0 / x` is still computed where `x == 0` is true", span="5:35-5:42"),
        # the singular value is computed on the line before and the branch reads its name: no fix
        # (the name may have other uses)
        Flag("""
            import jax
            import jax.numpy as jnp

            def radius_loss(y):
                r = jnp.sqrt(y)
                out = jnp.where(y > 0, r, 0.0)
                return jnp.sum(out)

            g = jax.grad(radius_loss)(jnp.array([0.0, 1.0]))
        """, message="`jnp.sqrt(y)` (held by `r`, the `jnp.where` branch) is still computed where `y > 0` is false",
            span="5:9-5:20"),
        Pass("""
            import jax
            import jax.numpy as jnp

            def radius_loss(y):
                r = jnp.sqrt(jnp.where(y > 0, y, 1.0))
                out = jnp.where(y > 0, r, 0.0)
                return jnp.sum(out)

            def shifted(y):
                r = jnp.sqrt(y)
                y = y + 1.0
                return jnp.where(y > 0, r, 0.0)

            g = jax.grad(radius_loss)(jnp.array([0.0, 1.0]))
        """),
        # a constant makes the branch's derivative infinite everywhere: `x * jnp.inf`
        Flag("""
            import jax
            import jax.numpy as jnp


            def penalty(x):
                return jnp.sum(jnp.where(x > 1.0, x * jnp.inf, x))


            g = jax.grad(penalty)(jnp.array([0.5, 0.25]))
        """, fixed="""
            import jax
            import jax.numpy as jnp


            def penalty(x):
                return jnp.sum(jnp.where(x > 1.0, jnp.where(x > 1.0, x, 1.0) * jnp.inf, x))


            g = jax.grad(penalty)(jnp.array([0.5, 0.25]))
        """, unsafe=True, message="`x * jnp.inf` is still computed where `x > 1.0` is false", span="6:39-6:50"),
        Pass("""
            import jax
            import jax.numpy as jnp


            def penalty(x):
                return jnp.sum(jnp.where(x > 1.0, jnp.inf, x))


            g = jax.grad(penalty)(jnp.array([0.5, 0.25]))
        """),
    )


def _power(exponent: cst.BaseExpression) -> jax_api.Singular | None:
    """What a literal exponent makes singular (`jax_api.power_singular`); `1/3` is read as a fraction."""
    if isinstance(exponent, cst.BinaryOperation) and isinstance(exponent.operator, cst.Divide):
        numerator, denominator = number(exponent.left), number(exponent.right)
        return jax_api.power_singular(numerator / denominator if numerator is not None and denominator else None)
    return jax_api.power_singular(number(exponent))
