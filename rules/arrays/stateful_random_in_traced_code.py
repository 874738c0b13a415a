"""ODL705: NumPy/Python random numbers, or a JAX key made outside, used inside traced code."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import Kind, Needs, Site, argument_at, jax_api, source_of
from odelint.api.rule import Callees, Flag, Pass, Rule
from odelint.rules.arrays.common import traced_triggers

_STATEFUL = tuple(sorted(jax_api.names("stateful_random")))


class StatefulRandomInTracedCode(Rule):
    """Random numbers that traced code draws once, at trace time.

    ## What it does
    Inside traced code (a function jitted, vmapped or checkpointed in any spelling, a
    `lax` loop or branch body, a diffrax vector field, and what they call), flags calls
    of `numpy.random.*` and of Python's `random.*` (any import spelling), and
    `jax.random.*` samplers given a key made outside the traced code (a module-level or
    closed-over variable) rather than passed in as an argument.

    ## Why is this bad?
    Tracing runs the Python code once: NumPy's or Python's generator is called then,
    and its number is baked into the compiled function as a constant; a module-level
    or closed-over key is a constant too. Every later call returns the same "random" numbers, with no
    error (jcmgray/autoray#27, google/flax#112, jax-ml/jax PR#2793).

    ## Example
    ```python
    @jax.jit
    def noisy(x):
        return x + np.random.normal()
    ```

    ## Use instead
    ```python
    @jax.jit
    def noisy(x, key):
        return x + jax.random.normal(key)
    ```
    with a fresh key (`jax.random.split`) for every call.

    ## Fix safety
    No fix: a key has to be threaded through the function's callers.
    """

    code = "ODL705"
    name = "stateful-random-in-traced-code"
    summary = "NumPy/Python random numbers, or a key made outside, used inside traced code"
    triggers = traced_triggers("random")
    fixtures = "tests/fixtures/ODL705"

    needs = Needs.fact("stateful_random_in_traced")

    @classmethod
    def callees(cls) -> Callees:
        return Callees(prefixes=(*_STATEFUL, jax_api.random_prefix()))

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        qualname = self.facts.qualname(node.func, site.scope) or ""
        if qualname.startswith(_STATEFUL):
            reason = self.facts.traced_by(site)
            if reason is not None:
                self.report(node, f"`{source_of(self.context.module, node.func)}` draws its number once, while "
                                  f"{reason}: the compiled function returns that same number on every call; pass a "
                                  f"`jax.random` key as an argument instead")
            return
        if not jax_api.consumes_key(qualname):
            return
        key = argument_at(node, "key", 0)
        if key is None or not isinstance(key.value, cst.Name) or not self._outside_key(key.value, site):
            return
        reason = self.facts.traced_by(site)
        if reason is not None:
            self.report(key.value, f"the key `{key.value.value}`, made outside traced code, is a constant there "
                                   f"({reason}): `{source_of(self.context.module, node.func)}` returns the same "
                                   f"numbers on every call; pass a fresh key as an argument")

    def _outside_key(self, node: cst.BaseExpression, site: Site) -> bool:
        """A key bound only outside traced code (a module-level or closed-over key)."""
        if not isinstance(node, cst.Name):
            return False
        definitions = self.facts.definitions(node, site)
        runner = self.facts.branch_runner(site)
        if runner is not None and definitions and all(self.facts.body_at(d.site) is runner for d in definitions):
            return False  # a branch closing over a key of the function that runs it: fresh on every call
        here = self.facts.body_at(site)
        return (bool(definitions) and self.facts.kind(node, site) is Kind.KEY
                and all(self.facts.body_at(d.site) is not here and self.facts.traced_by(d.site) is None
                        for d in definitions))

    examples = (
        Flag("""
            import jax
            import numpy as np

            @jax.jit
            def noisy(x):
                return x + np.random.normal()
        """, message="`np.random.normal` draws its number once, while `noisy` is traced by `jax.jit`",
            span="6:16-6:34"),
        # Python's random, a from-import, a module-level key; a lax body and a vmapped lambda
        Flag("""
            import random
            import jax
            from numpy.random import uniform as draw
            from jax import lax

            KEY = jax.random.PRNGKey(0)

            def body(carry, x):
                noise = jax.random.normal(KEY, ())
                return carry + noise * random.random() + draw(), None

            lax.scan(body, 0.0, None, length=3)
            jax.vmap(lambda x: x + jax.random.uniform(key=KEY))
        """, count=4, message="the key `KEY`, made outside traced code, is a constant there",
            span=("9:31-9:34", "10:28-10:43", "10:46-10:52", "13:47-13:50")),
        # keys passed as arguments, a local key, NumPy random numbers on the host
        Pass("""
            import jax
            import numpy as np

            KEY = jax.random.PRNGKey(0)
            data = np.random.normal(size=3)

            @jax.jit
            def step(x, key):
                local = jax.random.PRNGKey(1)
                return x + jax.random.normal(key) + jax.random.normal(local)

            def host():
                return step(np.random.normal(), jax.random.fold_in(KEY, 1))
        """),
        # a lax.cond branch closing over keys its enclosing (vmapped) function split: fresh on every call (kozax)
        Pass("""
            import jax
            import jax.numpy as jnp
            import jax.random as jr

            def mutate(tree, key, rate):
                select_key, value_key = jr.split(key)

                def replace(tree):
                    index = jr.choice(select_key, tree.shape[0])
                    return tree.at[index].set(jr.normal(value_key))

                return jax.lax.cond(jr.uniform(key) < rate, replace, lambda t: t, tree)

            mutate_all = jax.vmap(mutate, in_axes=(0, 0, None))
        """),
        # the same closure inside a scan body: every iteration draws the same numbers
        Flag("""
            import jax
            import jax.random as jr

            def walk(key, xs):
                step_key = jr.fold_in(key, 0)

                def body(carry, x):
                    def jump(c):
                        return c + jr.normal(step_key)
                    return jax.lax.cond(x > 0, jump, lambda c: c, carry), None

                return jax.lax.scan(body, 0.0, xs)
        """, message="the key `step_key`, made outside traced code, is a constant there", span="9:34-9:42"),
    )
