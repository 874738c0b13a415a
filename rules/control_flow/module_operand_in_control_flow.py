"""ODL402: an Equinox module holding functions carried by lax control flow (scan carry, cond operand, ...)."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import Needs, Site, jax_api, module_with_invalid_leaf, operand_args, positional_args, source_of
from odelint.api.rule import Callees, Flag, Pass, Rule

CARRIERS = tuple(name for name, body in jax_api.traced_bodies().items() if body.operands or body.operands_from)


class ModuleOperandInControlFlow(Rule):
    """An Equinox module with function (or string) leaves is an operand of `lax` control flow.

    ## What it does
    Flags an Equinox module passed as `lax.scan`'s `init` or `xs`, a `lax.cond`/`switch`
    operand, `lax.while_loop`'s or `fori_loop`'s `init_val`, or `lax.map`'s `xs` (alone
    or inside a tuple, list or dict), when its class is known to hold a leaf that is not
    an array: an activation function (`eqx.nn.MLP`), a `Callable` field, a stored
    `jax.vmap` result, a string. Filtered trees (`eqx.filter(model, eqx.is_array)`),
    modules whose leaves are all arrays (`eqx.nn.Linear`), modules of unknown classes
    and modules the functions close over are not flagged; a `switch` with one branch,
    which JAX calls directly, is not flagged either.

    ## Why is this bad?
    `lax` control flow turns every leaf of its operands into an abstract array, and a
    function is not one. With `eqx.nn.MLP` (which holds `jax.nn.relu`) on jax 0.10.2:

        TypeError: Argument '<jax._src.custom_derivatives.custom_jvp object at 0x...>' of
        type '<class 'jax._src.custom_derivatives.custom_jvp'>' is not a valid JAX type

    eagerly and under `jit` alike (equinox#630, #446, #709, #789; the Equinox FAQ "How to
    use non-array modules as inputs to scan/cond/while etc.").

    ## Example
    ```python
    def rollout(model: eqx.nn.MLP, xs):
        def step(m, x):
            return m, m(x)
        return jax.lax.scan(step, model, xs)
    ```

    ## Use instead
    ```python
    def rollout(model: eqx.nn.MLP, xs):
        params, static = eqx.partition(model, eqx.is_array)
        def step(p, x):
            m = eqx.combine(p, static)
            return p, m(x)
        return jax.lax.scan(step, params, xs)
    ```

    ## Fix safety
    No fix: the partition/combine recipe changes the function's parameters and body.
    """

    code = "ODL402"
    name = "module-operand-in-control-flow"
    summary = "An Equinox module holding functions is carried by lax control flow"
    triggers = tuple(("lax", name.rsplit(".", 1)[1]) for name in CARRIERS)
    fixtures = "tests/fixtures/ODL402"

    needs = Needs.may_hold_modules() & Needs.calls_to(*CARRIERS) & Needs.calls_given_invalid_module(*CARRIERS)

    @classmethod
    def callees(cls) -> Callees:
        return Callees(names=frozenset(CARRIERS))

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        qualname = self.facts.qualname(node.func, site.scope)
        body = jax_api.traced_body(qualname)
        if body is None or qualname not in CARRIERS or _single_branch_switch(qualname, node):
            return
        function = f"lax.{qualname.rsplit('.', 1)[1]}" if qualname else ""
        for label, operand in operand_args(node, body):
            found = module_with_invalid_leaf(self.facts, operand, site)
            if found is None:
                continue
            module = source_of(self.context.module, found.module)
            more = f" (and {found.more} more leaf that is not an array)" if found.more == 1 else (
                f" (and {found.more} more leaves that are not arrays)" if found.more else "")
            self.report(operand,
                        f"`{function}`'s `{label}` holds the Equinox module `{module}`: "
                        f"{found.leaf.describe(module)}{more}, and every leaf of a control-flow operand must be an "
                        f"array (`TypeError: ... is not a valid JAX type`): pass the arrays of "
                        f"`eqx.partition({module}, eqx.is_array)` and `eqx.combine` them with the rest inside the "
                        f"function")

    examples = (
        Flag("""
            import equinox as eqx
            import jax

            def rollout(model: eqx.nn.MLP, xs):
                def step(m, x):
                    return m, m(x)
                return jax.lax.scan(step, model, xs)
        """, message="`lax.scan`'s `init` holds the Equinox module `model`: `model.activation` is a function",
            span="7:31-7:36"),
        # inside a tuple carry held by a name, as cond operands, while/fori state, a class of
        # this file with a Callable field, `from jax import lax`
        Flag("""
            from typing import Callable
            import equinox as eqx
            import jax
            import jax.numpy as jnp
            from jax import lax

            class Policy(eqx.Module):
                w: jax.Array
                act: Callable

                def __call__(self, x):
                    return self.act(self.w @ x)

            def train(key, xs, pred, n):
                policy = Policy(jnp.eye(2), jnp.tanh)
                mlp = eqx.nn.MLP(2, 2, 8, 2, key=key)
                carry = (policy, jnp.zeros(2))
                lax.scan(lambda c, x: (c, x), carry, xs)
                lax.cond(pred, lambda p: p.w, lambda p: -p.w, policy)
                lax.while_loop(lambda s: s[1] < n, lambda s: (s[0], s[1] + 1), (mlp, 0))
                jax.lax.fori_loop(0, n, lambda i, m: m, init_val=mlp)
                return lax.switch(n, [lambda p: p.w, lambda p: p.w.T], policy)
        """, count=5, span=("18:35-18:40", "19:51-19:57", "20:69-20:75", "21:54-21:57", "22:60-22:66")),
        # filtered trees, array-only modules, closures, a one-branch switch, unknown classes
        Pass("""
            import equinox as eqx
            import jax
            from jax import lax

            def rollout(model: eqx.nn.MLP, lin: eqx.nn.Linear, other, xs, i):
                params, static = eqx.partition(model, eqx.is_array)
                def step(p, x):
                    m = eqx.combine(p, static)
                    return p, m(x)
                lax.scan(step, params, xs)
                lax.scan(lambda c, x: (c, model(x)), 0.0, xs)
                lax.scan(lambda l, x: (l, l(x)), lin, xs)
                lax.fori_loop(0, 3, lambda j, m: m, eqx.filter(model, eqx.is_array))
                lax.switch(i, [lambda m: m(xs[0])], model)
                return lax.scan(lambda c, x: (c, x), other, xs)
        """),
    )


def _single_branch_switch(qualname: str | None, call: cst.Call) -> bool:
    """`lax.switch(i, [f], x)` calls `f(x)` directly: its operands are never traced."""
    if qualname != jax_api.name("switch"):
        return False
    args = positional_args(call) or []
    branches = args[1].value if len(args) > 1 else None
    return isinstance(branches, (cst.List, cst.Tuple)) and len(branches.elements) == 1
