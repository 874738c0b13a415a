"""ODL704: a PRNG key drawn from twice, or a constant key made inside a loop."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

import libcst as cst
from odelint.analysis import jax_api
from odelint.analysis.calls import source_of
from odelint.analysis.keys import key_uses
from odelint.analysis.sketch_reach import rebinds_each_iteration, repeating_loop
from odelint.api.rule import Flag, Pass, Rule

if TYPE_CHECKING:
    from odelint.analysis.sketch import Sketch


class PrngKeyReuse(Rule):
    """A PRNG key is consumed twice.

    ## What it does
    Flags a `jax.random` sampler or `split` (first argument or `key=`), or any call given
    `key=` a PRNG key, that receives a key an earlier call already consumed with no new
    `split` in between: two samplers on one key, a key used for sampling and then split,
    the carry `key` used after `key, sub = jax.random.split(key)` where `sub` was meant and
    then split again, and a key from outside a loop consumed in the loop body without
    being re-split there. Also flags `jax.random.PRNGKey(0)` (constant arguments) made
    inside a loop that repeats a computation (`while`, `for ... in range(n)`, a
    comprehension over `range`); in a loop over configurations one fixed key per case is
    deliberate and not flagged, and so is `fold_in(PRNGKey(0), i)`, a different key for
    every `i`. Uses in different branches of an `if`/`else` are not reuse.

    ## Why is this bad?
    A key determines its random numbers: the same key gives the same (or, for different
    samplers, correlated) numbers, with no error. Dropout masks repeat, noise is the
    same every step, two "independent" initialisations are equal (jax-ml/jax#2009:
    "almost every single new use ... will incorrectly reuse the PRNG key"; blackjax#53;
    numpyro PR#263). `jax.debug_key_reuse(True)` reports it at run time as `KeyReuseError`.

    ## Example
    ```python
    w = jax.random.normal(key, (3,))
    b = jax.random.normal(key, (3,))
    ```

    ## Use instead
    ```python
    key, w_key, b_key = jax.random.split(key, 3)
    w = jax.random.normal(w_key, (3,))
    b = jax.random.normal(b_key, (3,))
    ```

    ## Fix safety
    No fix: any fix changes the random stream, and which key each use should get is the
    author's choice.
    """

    code = "ODL704"
    name = "prng-key-reuse"
    summary = "A PRNG key is consumed twice, or a constant key is made inside a loop"
    triggers = (("random",), ("Key",))  # jax.random, or a key annotation (PRNGKeyArray, Key[...])
    fixtures = "tests/fixtures/ODL704"

    @classmethod
    def may_fire(cls, sketch: Sketch) -> bool:
        consumers: dict[tuple[int, str], int] = {}
        for call in sketch.calls:
            key = _key_argument(sketch, call)
            if key is not None:
                loop = repeating_loop(sketch, call)
                if loop is not None and not rebinds_each_iteration(loop, key):
                    return True  # consumed again on the next iteration
                where = (id(sketch.enclosing_function(call)), key)
                consumers[where] = consumers.get(where, 0) + 1
                if consumers[where] > 1:
                    return True
            elif any(jax_api.makes_key(name) for name in sketch.qualnames(call.func)) and _constant_args(call):
                loop = repeating_loop(sketch, call)
                if loop is not None and _counting(loop):
                    return True
        return False

    def visit_Module(self, node: cst.Module, site) -> None:
        uses = key_uses(self.facts)
        for reuse in uses.reuses:
            second = source_of(self.context.module, reuse.second.func)
            if reuse.in_loop and reuse.first is reuse.second:
                where = (f"the loop consumes the key `{reuse.name}` on every iteration without splitting it "
                         f"there: `{second}` gets the same key each time")
            else:
                first = source_of(self.context.module, reuse.first.func)
                later = " on a later loop iteration" if reuse.in_loop else ""
                where = f"`{second}` gets the key `{reuse.name}`{later} after `{first}` already consumed it"
            self.report(reuse.second, f"{where}; the same key gives the same random numbers: give each use its "
                                      f"own key from `jax.random.split({reuse.name})`")
        for call in uses.constant_keys_in_loops:
            text = source_of(self.context.module, call)
            self.report(call, f"`{text}` inside a loop makes the same key on every iteration, so every "
                              f"iteration draws the same numbers: make one key before the loop and split it")

    examples = (
        Flag("""
            import jax

            key = jax.random.PRNGKey(0)
            w = jax.random.normal(key, (3,))
            b = jax.random.normal(key, (3,))
        """, message="`jax.random.normal` gets the key `key` after `jax.random.normal` already consumed it",
            span="5:5-5:33"),
        # `key` used where `sub` was meant, then split again; a key=; a loop without a split
        Flag("""
            import equinox as eqx
            import jax.random as jr

            def init(key):
                key, sub = jr.split(key)
                w = jr.uniform(key, (2,))
                key, sub = jr.split(key)
                layer = eqx.nn.Linear(2, 2, key=sub)
                noise = jr.normal(key=sub, shape=(2,))
                return w, layer, noise

            def noisy(key, xs):
                out = []
                for x in xs:
                    out.append(x + jr.normal(key, ()))
                return out, [jr.bernoulli(key) for _ in xs]
        """, count=4, message="`jr.split` gets the key `key` after `jr.uniform` already consumed it",
            span=("7:16-7:29", "9:13-9:43", "15:24-15:42", "16:18-16:35")),
        # a constant key in a loop
        Flag("""
            import jax

            def sample(n):
                total = 0.0
                for i in range(n):
                    key = jax.random.PRNGKey(0)
                    total += jax.random.normal(key)
                return total
        """, message="`jax.random.PRNGKey(0)` inside a loop makes the same key on every iteration", span="6:15-6:36"),
        # split before reuse, branches, loops that split, fold_in, keys from split arrays
        Pass("""
            import jax

            def step(key, x, training):
                key, sub = jax.random.split(key)
                x = x + jax.random.normal(sub, x.shape)
                if training:
                    y = jax.random.bernoulli(key)
                else:
                    y = jax.random.uniform(key)
                return x, y

            def walk(key, n):
                xs = []
                for i in range(n):
                    key, sub = jax.random.split(key)
                    xs.append(jax.random.normal(sub))
                    xs.append(jax.random.normal(jax.random.fold_in(key, i)))
                keys = jax.random.split(key, n)
                return xs, [jax.random.normal(k) for k in keys]

            def early(key, flag):
                if flag:
                    return jax.random.normal(key)
                return jax.random.uniform(key)
        """),
        # one fixed root key folded with the loop index: a different key every iteration (blackjax)
        Pass("""
            import jax

            def chains(n):
                return [jax.random.normal(jax.random.fold_in(jax.random.key(999), m), (3,)) for m in range(n)]
        """),
    )


def _key_argument(sketch: Sketch, call: ast.Call) -> str | None:
    """The name whose key a call may consume (the pre-check's view of `KeyUses.consumed_key`)."""
    for keyword in call.keywords:
        if keyword.arg == "key" and isinstance(keyword.value, ast.Name):
            return keyword.value.id
    if call.args and isinstance(call.args[0], ast.Name) and any(
            jax_api.consumes_key(name) for name in sketch.qualnames(call.func)):
        return call.args[0].id
    return None


def _constant_args(call: ast.Call) -> bool:
    """Might `keys._constant` find every argument constant (numbers and strings, signed)?"""
    return all(_constant(value) for value in (*call.args, *(keyword.value for keyword in call.keywords)))


def _constant(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp):
        return _constant(node.operand)
    return isinstance(node, (ast.Constant, ast.JoinedStr))


def _counting(loop: ast.AST) -> bool:
    """Might `KeyUses._counting` find the loop repeating one computation: a `while`, or a loop
    over `range`/`enumerate`/`zip` (whose arguments it goes on to check)?"""
    if isinstance(loop, ast.While):
        return True
    iterable = loop.generators[0].iter if not isinstance(loop, (ast.For, ast.AsyncFor)) else loop.iter  # type: ignore[attr-defined]
    return isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and \
        iterable.func.id in ("range", "enumerate", "zip")
