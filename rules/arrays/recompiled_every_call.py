"""ODL709: a jitted function is traced and compiled again on every iteration or call."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import (
    COMPILING,
    DefinedAs,
    Kind,
    Needs,
    Site,
    decorated,
    function_wrappers,
    jax_api,
    jitted_callee,
    names_read,
    over_configurations,
    positional_args,
    source_of,
)
from odelint.api.rule import Flag, Pass, Rule

_FILTERED = jax_api.names("filtered_compilers")
_PARTIAL = jax_api.name("partial")


class RecompiledEveryCall(Rule):
    """`jax.jit`/`eqx.filter_jit` recompiles on every iteration or call.

    ## What it does
    Flags three ways of compiling again and again:
    - `jax.jit(f)`/`eqx.filter_jit(f)` applied, inside a loop or inside a function called
      in a loop, to a function object created there (a `lambda`, a `functools.partial`, a
      nested `def`, a transformed function such as `jax.grad(f)` or `jax.vmap(f)`);
    - a `def` decorated with `@jax.jit`/`@eqx.filter_jit` nested in such a loop or function;
    - a Python number that changes every iteration of a `for` loop (its variable over
      `range(...)` or a literal list of numbers, or arithmetic on it) passed to an
      `eqx.filter_jit` function.

    A loop over configurations (a literal tuple or list, `itertools.product(...)`) whose
    function closes over the loop's variable (a block size, a layer, output fields) is not
    flagged: each case is a different program, so one compile per case is inherent.

    In the opt-in set: on real code most functions jitted in loops are deliberate
    (autotuning sweeps, tests that count traces), so enable it with `--extend-select ODL709`
    or `preview = true`.

    ## Why is this bad?
    JAX caches a compiled program on the function object (and, for `eqx.filter_jit`, on
    the values of all non-array arguments, which are static). A new function object, or a
    new static value, means tracing and XLA compilation again: a silent slowdown of orders
    of magnitude, and memory growth until the compilation cache is cleared (equinox#645,
    #307, #686, #903; jax#1421 "You are currently jit compiling everytime ... because you're
    redefining the function"; Equinox FAQ, `eqx.debug.assert_max_traces`). Plain `jax.jit`
    of a function defined once is cached, and is not flagged.

    ## Example
    ```python
    for i in range(steps):
        loss = eqx.filter_jit(lambda m: compute_loss(m, x))(model)
        model = step(model, x, i)  # `step` is an eqx.filter_jit function
    ```

    ## Use instead
    ```python
    loss_fn = eqx.filter_jit(compute_loss)
    for i in range(steps):
        loss = loss_fn(model, x)
        model = step(model, x, jnp.asarray(i))
    ```

    ## Fix safety
    No fix: hoisting the function is not mechanical when it closes over loop variables,
    and `jnp.asarray(i)` is only right when the callee does array math with the value
    (not `range(i)` or indexing a Python list).
    """

    code = "ODL709"
    opt_in = True  # 1 of 6 findings in the library corpus was a recompile worth fixing (tests/corpus/REVIEW.md)
    name = "recompiled-every-call"
    summary = "jax.jit / eqx.filter_jit recompiles on every loop iteration or call"
    triggers = (("jit",), ("pmap",))
    fixtures = "tests/fixtures/ODL709"

    needs = Needs.fact("compiled_repeatedly")

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        if self.facts.traced_by(site) is not None:
            return  # runs once per trace of the code around it, not per call
        qualname = self.facts.qualname(node.func, site.scope)
        if qualname in COMPILING:
            args = positional_args(node, before_star=True)
            if args:
                self._check_new_function(node, args[0].value, site)
            return
        jitted = jitted_callee(self.facts, node.func, site.scope)
        if jitted is not None and jitted.transform in _FILTERED:
            for arg in node.args:
                loop = self._loop_number(arg.value, site)
                if loop is not None:
                    text = source_of(self.context.module, arg.value)
                    self.report(arg.value,
                                f"`{text}` is a Python number that changes every iteration of the loop over "
                                f"`{source_of(self.context.module, loop.iter)}`; `{jitted.spelling}` makes non-array "
                                f"arguments static, so `{source_of(self.context.module, node.func)}` is traced and "
                                f"compiled again for each value: pass `jnp.asarray({text})`")

    def visit_FunctionDef(self, node: cst.FunctionDef, site: Site) -> None:
        jitted = decorated(self.facts, node, site.scope)  # `site`: where the `def` runs
        if jitted is None or self.facts.traced_by(site) is not None:
            return
        reason = self._loop_reason(site) or self._repeated(self.facts.body_at(site))
        if reason == "inside a loop" and self._per_configuration(node, site):
            return
        if reason is not None:
            self.report(node.name, f"`{node.name.value}` is decorated with `{jitted.spelling}` {reason}: each time "
                                   "it is a new function, traced and compiled again; define it once, outside")

    def _check_new_function(self, call: cst.Call, target: cst.BaseExpression, site: Site) -> None:
        spelling = source_of(self.context.module, call.func)
        loop_reason = self._loop_reason(site)
        function = self.facts.body_at(site)
        made_here = self._made_in(target, site, loop_reason is not None)
        if made_here is None or (loop_reason is not None and self._per_configuration(target, site)):
            return
        reason = loop_reason
        if reason is None:
            reason = self._repeated(function)
        if reason is not None:
            self.report(call, f"`{spelling}` wraps {made_here} {reason}: each time it is a new function object, "
                              "so JAX traces and compiles it again instead of reusing the compiled program; "
                              "create the jitted function once, outside")

    def _made_in(self, target: cst.BaseExpression, site: Site, in_loop: bool) -> str | None:
        """How `target` is a function object made anew where it is wrapped, else None."""
        if isinstance(target, cst.Lambda):
            return "a new `lambda`"
        if isinstance(target, cst.Call) and self.facts.qualname(target.func, site.scope) == _PARTIAL:
            return "a new `functools.partial`"
        if isinstance(target, cst.Call) and self.facts.qualname(target.func, site.scope) in function_wrappers():
            return f"`{source_of(self.context.module, target)}`, a new function object,"  # `jax.jit(jax.grad(f))`
        if not isinstance(target, cst.Name):
            return None
        found = self.facts.definition(target, site)
        if found is None or self.facts.body_at(found.site) is not self.facts.body_at(site):
            return None
        value = found.value
        new = found.what is DefinedAs.FUNCTION or isinstance(value, cst.Lambda) or (
            isinstance(value, cst.Call)
            and self.facts.qualname(value.func, site.scope) in function_wrappers() | {_PARTIAL})
        if not new or (in_loop and self.facts.loop_at(found.site) is None):
            return None
        if not in_loop and not isinstance(self.facts.body_at(site), cst.FunctionDef):
            return None
        return f"`{target.value}`, a function defined {'in the loop' if in_loop else 'anew on each call'},"

    def _per_configuration(self, function: cst.CSTNode, site: Site) -> bool:
        """Is the loop around `site` one over configurations that `function` closes over (a
        block size, a layer, a shape)? Then every iteration is a different program anyway."""
        loop = self.facts.loop_at(site)
        cases = over_configurations(self.facts, loop, site) if loop is not None else frozenset()
        if not cases:
            return False
        found = self.facts.definition(function, site) if isinstance(function, cst.Name) else None
        if found is not None and found.what is DefinedAs.FUNCTION:
            function = found.node
        elif found is not None and found.value is not None:
            function = found.value
        elif found is not None and found.unpacked is not None:
            function = found.unpacked[0]  # the whole right-hand side it is unpacked from
        return bool(cases & names_read(function))

    def _loop_reason(self, site: Site) -> str | None:
        return "inside a loop" if self.facts.loop_at(site) is not None else None

    def _repeated(self, function: cst.CSTNode) -> str | None:
        """Why `function` runs again and again: it is called in a loop. (A factory called from
        a few places compiles once per call on purpose, with different closures.)"""
        if not isinstance(function, cst.FunctionDef):
            return None
        if any(self.facts.loop_at(call_site) is not None for _, call_site in self.facts.calls_of(function)):
            return f"inside `{function.name.value}`, which is called in a loop"
        return None

    def _loop_number(self, value: cst.BaseExpression, site: Site) -> cst.For | None:
        """The `for` loop whose variable makes `value` a Python number that changes every
        iteration (`i`, `i * 0.1` over `range(...)` or a literal list of numbers), else None."""
        if isinstance(value, cst.Name):
            defined = self.facts.definition(value, site)
            loop = defined.node if defined is not None and defined.what is DefinedAs.LOOP else None
            if isinstance(loop, (cst.For, cst.CompFor)) and isinstance(loop.target, cst.Name) \
                    and self._numbers(loop.iter, site):
                return loop  # type: ignore[return-value]
            return None
        if isinstance(value, cst.BinaryOperation) and self.facts.kind(value, site) is not Kind.ARRAY:
            left, right = self._loop_number(value.left, site), self._loop_number(value.right, site)
            found = left or right
            others = [side for side, loop in ((value.left, left), (value.right, right)) if loop is None]
            if found is not None and all(self.facts.kind(side, site) is Kind.PLAIN for side in others):
                return found
        return None

    def _numbers(self, iterable: cst.BaseExpression, site: Site) -> bool:
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name):
            return iterable.func.value == "range" and not self.facts.definitions("range", site)
        return isinstance(iterable, (cst.List, cst.Tuple)) and bool(iterable.elements) and all(
            isinstance(e.value, (cst.Integer, cst.Float)) for e in iterable.elements)

    examples = (
        Flag("""
            import equinox as eqx
            import jax.numpy as jnp

            @eqx.filter_jit
            def step(x, i):
                return x * i

            x = jnp.ones(3)
            for i in range(100):
                x = step(x, i)
            for lr in [0.1, 0.01]:
                x = step(x, lr * 2)
        """, count=2, message="`i` is a Python number that changes every iteration of the loop over `range(100)`",
            span=("10:17-10:18", "12:17-12:23")),
        Flag("""
            import jax
            import jax.numpy as jnp

            def loss(w, x):
                return jnp.sum(w * x)

            w = jnp.ones(3)
            for x in [jnp.ones(3), jnp.zeros(3)]:
                value = jax.jit(lambda w: loss(w, x))(w)
        """, message="`jax.jit` wraps a new `lambda` inside a loop", span="9:13-9:42"),
        # a function called in a loop that jits a nested def, and one that decorates one
        Flag("""
            import equinox as eqx
            import jax
            from functools import partial

            def evaluate(model, x):
                def forward(m):
                    return m(x)
                return eqx.filter_jit(forward)(model)

            def train(model, xs, scale):
                @jax.jit
                def update(x):
                    return x * scale
                return update(xs)

            for batch in range(3):
                evaluate(None, batch)
                train(None, 1.0, 2.0)
        """, count=2, span=("8:12-8:35", "12:9-12:15")),
        # jit of a function defined once, at module level or in a function called once (or
        # a factory called from two places, on purpose: each closure differs);
        # jnp arrays or unchanging values passed to filter_jit; plain jax.jit traces ints
        Pass("""
            import equinox as eqx
            import jax
            import jax.numpy as jnp

            def loss(w):
                return jnp.sum(w)

            @eqx.filter_jit
            def step(x, i):
                return x * i

            fast = jax.jit(loss)
            plain = jax.jit(lambda x, i: x * i)

            def main():
                inner = jax.jit(lambda w: loss(w) * 2)
                x = jnp.ones(3)
                for i in range(100):
                    x = step(x, jnp.asarray(i))
                    x = step(x, 3)
                    x = plain(x, i)
                    x = jax.jit(loss)(x) + inner(x)
                return x

            def make(scale):
                return jax.jit(lambda x: x * scale)

            main()
            double, triple = make(2.0), make(3.0)
        """),
        # inside traced code the inner jit runs once per trace of the outer function
        Pass("""
            import jax

            @jax.jit
            def outer(x):
                for _ in range(3):
                    x = jax.jit(lambda y: y * 2)(x)
                return x
        """),
        # an autotuning sweep: the kernel closes over each configuration, one compile per case is the point
        Pass("""
            import itertools
            import time

            import jax
            import jax.numpy as jnp

            def tiled_sum(x, tile):
                return jnp.sum(x.reshape(-1, tile), axis=1)

            def autotune(x):
                timings = {}
                for blocks, tile in itertools.product((1, 2, 4), (128, 256)):
                    kernel = jax.jit(lambda v: tiled_sum(v, tile * blocks))
                    start = time.perf_counter()
                    kernel(x).block_until_ready()
                    timings[blocks, tile] = time.perf_counter() - start
                return min(timings, key=timings.get)
        """),
        # a test over output configurations (dynamax): each closure is a different program
        Pass("""
            import jax

            def check(filter_fn, params, emissions):
                for fields in (["filtered_means"], ["predicted_means", "predicted_covariances"]):
                    posterior = jax.jit(lambda y: filter_fn(params, y, output_fields=fields))(emissions)
                    assert posterior is not None
        """),
        # a test over two differently configured layers named in a list (flax): one program per layer
        Pass("""
            import jax
            import jax.numpy as jnp

            def test_layers(make_dropout, x):
                layers = [make_dropout(rate=0.5), make_dropout(rate=0.5, broadcast_dims=(1,))]
                for layer in layers:
                    @jax.jit
                    def func(v):
                        return layer(v)

                    assert func(x).shape == x.shape
        """),
        # `jax.grad(loss)` is a new function object each call, as a new lambda is
        Flag("""
            import jax
            import jax.numpy as jnp


            def loss(w, x):
                return jnp.sum((w * x) ** 2)


            def gradient_step(w, x):
                grad_fn = jax.jit(jax.grad(loss))
                return w - 0.1 * grad_fn(w, x)


            w = jnp.ones(3)
            for x in jnp.ones((100, 3)):
                w = gradient_step(w, x)
        """, message="`jax.jit` wraps `jax.grad(loss)`, a new function object, inside `gradient_step`, "
                     "which is called in a loop", span="10:15-10:38"),
        Pass("""
            import jax
            import jax.numpy as jnp


            def loss(w, x):
                return jnp.sum((w * x) ** 2)


            grad_fn = jax.jit(jax.grad(loss))


            def gradient_step(w, x):
                return w - 0.1 * grad_fn(w, x)


            w = jnp.ones(3)
            for x in jnp.ones((100, 3)):
                w = gradient_step(w, x)
        """),
        Flag("""
            import jax
            import jax.numpy as jnp


            def loss(w, x):
                return jnp.sum((w * x) ** 2)


            def gradient_step(w, x):
                grad_fn = jax.grad(loss)
                return w - 0.1 * jax.jit(grad_fn)(w, x)


            w = jnp.ones(3)
            for x in jnp.ones((100, 3)):
                w = gradient_step(w, x)
        """, message="`jax.jit` wraps `grad_fn`, a function defined anew on each call, inside `gradient_step`",
            span="11:22-11:38"),
    )
