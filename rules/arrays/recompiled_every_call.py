"""ODL709: a jitted function is traced and compiled again on every iteration or call."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

import libcst as cst
from odelint.analysis.calls import positional_args, source_of
from odelint.analysis.facts import Kind, function_wrappers
from odelint.analysis.jitted import COMPILING, decorated, jitted_callee
from odelint.analysis.loops import loops
from odelint.analysis.reach import enclosing_function
from odelint.analysis.scopes import FUNCTION, Site
from odelint.api.rule import Flag, Pass, Rule

if TYPE_CHECKING:
    from odelint.analysis.sketch import Sketch

_FILTERED = frozenset({"equinox.filter_jit", "equinox.filter_pmap"})


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
    name = "recompiled-every-call"
    summary = "jax.jit / eqx.filter_jit recompiles on every loop iteration or call"
    triggers = (("jit",), ("pmap",))
    fixtures = "tests/fixtures/ODL709"

    @classmethod
    def may_fire(cls, sketch: Sketch) -> bool:
        if sketch.has_loops and sketch.refers_to(*_FILTERED):
            return True  # a Python number of a loop passed to a filter_jit function
        for call in sketch.calls_to(COMPILING):
            if call.args and isinstance(call.args[0], (ast.Lambda, ast.Call, ast.Name)) and sketch.repeats(call):
                return True
        return any(sketch.repeats(function) for function in sketch.of_type(ast.FunctionDef, ast.AsyncFunctionDef)
                   if any(sketch.qualnames(node) & COMPILING for decorator in function.decorator_list
                          for node in ast.walk(decorator) if isinstance(node, (ast.Name, ast.Attribute))))

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
        scope = self.facts.index.body_scope(node)
        outer = scope.parent if scope is not None else None
        jitted = decorated(self.facts, node, outer) if outer is not None else None
        if jitted is None or outer is None or self.facts.traced_by(Site(outer, site.order)) is not None:
            return
        reason = self._loop_reason(node) or (self._repeated(outer.node) if outer.kind == FUNCTION else None)
        if reason is not None:
            self.report(node.name, f"`{node.name.value}` is decorated with `{jitted.spelling}` {reason}: each time "
                                   "it is a new function, traced and compiled again; define it once, outside")

    def _check_new_function(self, call: cst.Call, target: cst.BaseExpression, site: Site) -> None:
        spelling = source_of(self.context.module, call.func)
        loop_reason = self._loop_reason(call)
        function = enclosing_function(site.scope)
        made_here = self._made_in(target, site, loop_reason is not None)
        if made_here is None:
            return
        reason = loop_reason
        if reason is None and isinstance(function, cst.FunctionDef) and site.scope.kind == FUNCTION:
            reason = self._repeated(function)
        if reason is not None:
            self.report(call, f"`{spelling}` wraps {made_here} {reason}: each time it is a new function object, "
                              "so JAX traces and compiles it again instead of reusing the compiled program; "
                              "create the jitted function once, outside")

    def _made_in(self, target: cst.BaseExpression, site: Site, in_loop: bool) -> str | None:
        """How `target` is a function object made anew where it is wrapped, else None."""
        if isinstance(target, cst.Lambda):
            return "a new `lambda`"
        if isinstance(target, cst.Call) and self.facts.qualname(target.func, site.scope) == "functools.partial":
            return "a new `functools.partial`"
        if isinstance(target, cst.Call) and self.facts.qualname(target.func, site.scope) in function_wrappers():
            return f"`{source_of(self.context.module, target)}`, a new function object,"  # `jax.jit(jax.grad(f))`
        if not isinstance(target, cst.Name):
            return None
        bindings = self.facts.lookup(target.value, site.scope)
        if len(bindings) != 1 or bindings[0].scope is not site.scope:
            return None
        binding = bindings[0]
        new = binding.kind == "def" or (binding.kind == "assign" and not binding.path and (
            isinstance(binding.value, cst.Lambda) or isinstance(binding.value, cst.Call)
            and self.facts.qualname(binding.value.func, site.scope) in function_wrappers() | {"functools.partial"}))
        if not new or (in_loop and loops(self.facts).loop_of(binding.node) is None):
            return None
        if not in_loop and site.scope.kind != FUNCTION:
            return None
        return f"`{target.value}`, a function defined {'in the loop' if in_loop else 'anew on each call'},"

    def _loop_reason(self, node: cst.CSTNode) -> str | None:
        loop = loops(self.facts).loop_of(node)
        return "inside a loop" if loop is not None else None

    def _repeated(self, function: cst.CSTNode) -> str | None:
        """Why `function` runs again and again: it is called in a loop. (A factory called from
        a few places compiles once per call on purpose, with different closures.)"""
        if not isinstance(function, cst.FunctionDef):
            return None
        if any(loops(self.facts).loop_of(call) is not None for call, _ in self.facts.calls_of(function)):
            return f"inside `{function.name.value}`, which is called in a loop"
        return None

    def _loop_number(self, value: cst.BaseExpression, site: Site) -> cst.For | None:
        """The `for` loop whose variable makes `value` a Python number that changes every
        iteration (`i`, `i * 0.1` over `range(...)` or a literal list of numbers), else None."""
        if isinstance(value, cst.Name):
            bindings = self.facts.lookup(value.value, site.scope)
            if len(bindings) == 1 and bindings[0].kind == "for" and not bindings[0].path:
                loop: cst.For = bindings[0].node  # type: ignore[assignment]
                if self._numbers(loop.iter, site):
                    return loop
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
            return iterable.func.value == "range" and not self.facts.lookup("range", site.scope)
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
        """, count=2, message="`i` is a Python number that changes every iteration of the loop over `range(100)`"),
        Flag("""
            import jax
            import jax.numpy as jnp

            def loss(w, x):
                return jnp.sum(w * x)

            w = jnp.ones(3)
            for x in [jnp.ones(3), jnp.zeros(3)]:
                value = jax.jit(lambda w: loss(w, x))(w)
        """, message="`jax.jit` wraps a new `lambda` inside a loop"),
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
        """, count=2),
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
        """, message="`jax.jit` wraps `jax.grad(loss)`, a new function object, inside `gradient_step`, which is called in a loop"),
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
        """, message="`jax.jit` wraps `grad_fn`, a function defined anew on each call, inside `gradient_step`"),
    )
