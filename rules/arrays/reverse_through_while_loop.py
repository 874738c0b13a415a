"""ODL711: reverse-mode differentiation through `lax.while_loop` or a dynamic `fori_loop`."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import Needs, Site, argument_at, jax_api, reverse_differentiated_by, source_of
from odelint.api.rule import Callees, Flag, Pass, Rule

_LOOPS = jax_api.names("loops_without_reverse")
_FORI_LOOP = jax_api.name("fori_loop")
_RECIPE = ("use `lax.scan` with a static length, `lax.fori_loop` with Python-int bounds, or "
           "`eqx.internal.while_loop(..., kind=\"checkpointed\", max_steps=...)`")


class ReverseThroughWhileLoop(Rule):
    """`jax.grad` (or another reverse-mode transform) differentiates a `lax.while_loop`.

    ## What it does
    Flags `lax.while_loop`, and `lax.fori_loop` whose `lower` or `upper` bound is a traced
    value, in code that a reverse-mode transform differentiates (`jax.grad`,
    `value_and_grad`, `vjp`, `jacrev`, `hessian`, `eqx.filter_grad`, ..., and the functions
    they call), when the loop's carry (or a value its body closes over) depends on a
    differentiated argument.

    ## Why is this bad?
    A `while_loop` has no transpose: its trip count is unknown until it runs, so JAX cannot
    store what the backward pass needs. A `fori_loop` lowers to `scan` only when both bounds
    are concrete; traced bounds make it a `while_loop`. The gradient fails:

        ValueError: Reverse-mode differentiation does not work for lax.while_loop or
        lax.fori_loop with dynamic start/stop values. Try using lax.scan, or using
        fori_loop with static start/stop.

    (jax#2956, #4106; diffrax#194, #419; mujoco#1207.) Un-jitted tests with a Python-int
    trip count pass, which hides the bug until the function is jitted. Forward mode
    (`jax.jvp`, `jacfwd`) works and is not flagged.

    ## Example
    ```python
    @jax.jit
    def loss(x, n):
        return jax.lax.fori_loop(0, n, lambda i, c: c * x, 1.0)

    jax.grad(loss)(2.0, 3)
    ```

    ## Use instead
    ```python
    @partial(jax.jit, static_argnums=1)
    def loss(x, n):
        return jax.lax.fori_loop(0, n, lambda i, c: c * x, 1.0)
    ```
    or `jax.lax.scan` over `length=n` with `n` static, or
    `eqx.internal.while_loop(cond, body, init, max_steps=..., kind="checkpointed")`.

    ## Fix safety
    No fix: the loop needs a static bound (a maximum number of steps) that only the author
    knows.
    """

    code = "ODL711"
    name = "reverse-through-while-loop"
    summary = "Reverse-mode differentiation through lax.while_loop or a fori_loop with traced bounds"
    triggers = (("while_loop",), ("fori_loop",))
    fixtures = "tests/fixtures/ODL711"

    @classmethod
    def callees(cls) -> Callees:
        return Callees(names=frozenset(_LOOPS))

    needs = Needs.differentiated_calls_to(*_LOOPS)

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        qualname = self.facts.qualname(node.func, site.scope)
        if qualname not in _LOOPS:
            return
        body = jax_api.traced_body(qualname)
        if qualname == _FORI_LOOP:
            traced = [bound for bound in (argument_at(node, "lower", 0), argument_at(node, "upper", 1))
                      if bound is not None and self.facts.traced_value(bound.value, site) is not None]
            if not traced:
                return
            what = f"`lax.fori_loop` with the traced bound `{source_of(self.context.module, traced[0].value)}`"
            carried = argument_at(node, "init_val", 3)
        elif body is not None and not body.reverse:
            what = "`lax.while_loop`"
            carried = argument_at(node, "init_val", 2)
        else:
            return
        why = reverse_differentiated_by(self.facts, site)
        if why is None or not self._carries_tangent(node, carried, site):
            return
        self.report(node.func, f"{what} is differentiated in reverse mode ({why}): JAX raises "
                               f"`ValueError: Reverse-mode differentiation does not work for lax.while_loop`; "
                               f"{_RECIPE}")

    def _carries_tangent(self, node: cst.Call, carried: cst.Arg | None, site: Site) -> bool:
        """Does the carry, or a value the loop's functions close over, depend on a
        differentiated argument?"""
        analysis = self.facts.differentiation
        values = [carried.value] if carried is not None else []
        for arg in node.args:
            function = self.facts.callee(arg.value, site.scope)
            if isinstance(arg.value, cst.Lambda):
                values.append(arg.value.body)
            elif function is not None:
                values += self.facts.free_names(function)
        return any(analysis.differentiated_source(value, site) is not None for value in values)

    examples = (
        Flag("""
            import jax

            def power(x):
                return jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x), (0, 1.0))[1]

            g = jax.grad(power)(2.0)
        """, message="`lax.while_loop` is differentiated in reverse mode (`power` is differentiated", span="4:12-4:30"),
        Flag("""
            import jax
            from jax import lax

            @jax.jit
            def loss(x, n):
                return lax.fori_loop(0, n, lambda i, c: c * x, 1.0)

            jax.grad(loss)(2.0, 3)
        """, message="`lax.fori_loop` with the traced bound `n`", span="6:12-6:25"),
        # reached through a helper and a named body that closes over the differentiated value
        Flag("""
            import equinox as eqx
            import jax

            def solve(w, y0):
                def cond(y):
                    return y < 10.0
                def body(y):
                    return y * w
                return jax.lax.while_loop(cond, body, y0)

            @eqx.filter_grad
            def loss(w):
                return solve(w, 1.0)
        """, span="9:12-9:30"),
        # fori_loop with Python-int bounds under grad lowers to scan; forward mode; not differentiated
        Pass("""
            import jax

            def power(x, n):
                return jax.lax.fori_loop(0, n, lambda i, c: c * x, 1.0)

            def count(x):
                return jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x), (0, 1.0))[1]

            g = jax.grad(power)(2.0, 3)
            t = jax.jvp(count, (2.0,), (1.0,))
            f = jax.jacfwd(count)(2.0)
            v = jax.jit(count)(2.0)
        """),
        # a function with its own derivative rule: JAX never differentiates its body
        Pass("""
            import jax

            @jax.custom_vjp
            def power(x):
                return jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x), (0, 1.0))[1]

            def power_fwd(x):
                return power(x), x

            def power_bwd(x, g):
                return (3 * x**2 * g,)

            power.defvjp(power_fwd, power_bwd)

            def loss(x):
                return power(x) + 1.0

            jax.grad(power)(2.0)
            jax.grad(loss)(2.0)
        """),
        # the loop's carry and body do not depend on the differentiated argument
        Pass("""
            import jax

            def loss(x):
                n = jax.lax.while_loop(lambda c: c < 3, lambda c: c + 1, 0)
                return x * n

            jax.grad(loss)(1.0)
        """),
    )
