"""ODL710: a traced value or JAX array is hashed (dict key, set member, `hash`, `lru_cache`)."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import Kind, Needs, Site, jax_api, source_of
from odelint.api.rule import Flag, Pass, Rule

_CACHES = jax_api.names("function_caches")
_VALUE_WORDS = ("jit", "vmap", "pmap", "checkpoint", "remat", "scan", "loop", "cond", "switch", "map", "Term",
                "numpy", "nn", "lax", "scipy", "random", "Array", "jaxtyping")
_HASHING_WORDS = ("{", "dict", "set", "hash", "cache")


class TracedValueHashed(Rule):
    """A JAX array or traced value is hashed.

    ## What it does
    Flags a JAX array, or a value traced by `jax.jit`/`vmap`/`lax.scan`/... (see
    `facts.traced_value`), used as a dict key (in a `{...}` literal, `d[x]` or `x in d` on a
    dict), as a set member (`{x}`, `x in {...}`), passed to `hash()`, or passed to a function
    decorated with `functools.lru_cache`/`functools.cache`.

    ## Why is this bad?
    JAX arrays and tracers are unhashable (equality is elementwise):

        TypeError: unhashable type: 'DynamicJaxprTracer'
        TypeError: unhashable type: 'jaxlib._jax.ArrayImpl'

    Between JAX 0.4.8 and 0.4.30 hashing a tracer silently worked (by identity, so caches
    keyed on it never hit); later releases warn and then fail (jax#21824, PR#24722;
    diffrax#445; equinox#768; numpyro#948).

    ## Example
    ```python
    @jax.jit
    def lookup(x):
        table = {x: 1.0}
        return table[x]
    ```

    ## Use instead
    Key dicts by static Python values (strings, ints, shapes), or use array operations:
    `jnp.where`, `jnp.take`, a `lax.switch` over static branches.

    ## Fix safety
    No fix: what the hashing was for decides the rewrite.
    """

    code = "ODL710"
    name = "traced-value-hashed"
    summary = "A traced value or JAX array is used as a dict key, set member, hash() or lru_cache argument"
    # A finding needs a traced value or an array (a tracing transform or an array API in
    # the file) and a place that hashes it (a `{...}` literal, a dict or set built by name,
    # `hash`, or a functools cache).
    triggers = tuple((value, site) for value in _VALUE_WORDS for site in _HASHING_WORDS)
    fixtures = "tests/fixtures/ODL710"

    needs = Needs.fact("hashed_array")

    def visit_Dict(self, node: cst.Dict, site: Site) -> None:
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                self._check(element.key, site, "a dict key")

    def visit_Set(self, node: cst.Set, site: Site) -> None:
        for element in node.elements:
            self._check(element.value, site, "a set member")

    def visit_Subscript(self, node: cst.Subscript, site: Site) -> None:
        if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) and self._hashes(node.value, site):
            dictionary = source_of(self.context.module, node.value)
            self._check(node.slice[0].slice.value, site, f"a key of the dict `{dictionary}`")

    def visit_Comparison(self, node: cst.Comparison, site: Site) -> None:
        left = node.left
        for target in node.comparisons:
            if isinstance(target.operator, (cst.In, cst.NotIn)) and self._hashes(target.comparator, site, sets=True):
                self._check(left, site, f"looked up in `{source_of(self.context.module, target.comparator)}`")
            left = target.comparator

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        if type(node.func) is cst.Name and node.func.value == "hash" and not self.facts.definitions("hash", site):
            if len(node.args) == 1:
                self._check(node.args[0].value, site, "passed to `hash()`")
            return
        function = self.facts.callee(node.func, site.scope)
        if function is not None and self._cached(function):
            role = f"an argument of `{function.name.value}`, which `functools` caches by hashing its arguments"
            for arg in node.args:
                self._check(arg.value, site, role)

    def _check(self, value: cst.BaseExpression, site: Site, role: str) -> None:
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "hash":
            return  # `hash(x)` fails first, and is reported itself
        traced = self.facts.traced_value(value, site)
        if traced is not None:
            text = source_of(self.context.module, value)
            origin = (f"({traced.reason}{traced.passed()})" if text == traced.parameter.name
                      else f"(traced: it derives from {traced.describe()})")
            self.report(value, f"`{text}` {origin} is {role}: "
                               "tracers are unhashable (`TypeError: unhashable type: 'DynamicJaxprTracer'`)")
        elif self.facts.kind(value, site) is Kind.ARRAY:
            self.report(value, f"`{source_of(self.context.module, value)}` is a JAX array and is {role}: JAX "
                               "arrays are unhashable (`TypeError: unhashable type: 'jaxlib._jax.ArrayImpl'`)")

    def _hashes(self, node: cst.BaseExpression, site: Site, sets: bool = False) -> bool:
        """Is `node` a dict (or, with `sets`, a set): a literal, or a name every binding of
        which assigns one (`{}`, `dict(...)`, `set(...)`)?"""
        literals = (cst.Dict, cst.DictComp, cst.Set, cst.SetComp) if sets else (cst.Dict, cst.DictComp)
        builders = ("dict", "set", "frozenset") if sets else ("dict",)
        if isinstance(node, literals):
            return True
        if not isinstance(node, cst.Name):
            return False
        definitions = self.facts.definitions(node, site)
        return bool(definitions) and all(
            isinstance(d.value, literals) or (
                isinstance(d.value, cst.Call) and isinstance(d.value.func, cst.Name) and d.value.func.value in builders
                and not self.facts.definitions(d.value.func, d.site))
            for d in definitions)

    def _cached(self, function: cst.FunctionDef) -> bool:
        defined = self.facts.definition_of(function)  # its decorators are read where it is defined
        if defined is None:
            return False
        for decorator in function.decorators:
            node = decorator.decorator
            if self.facts.qualname(node.func if isinstance(node, cst.Call) else node, defined.site.scope) in _CACHES:
                return True
        return False

    examples = (
        Flag("""
            import jax

            @jax.jit
            def lookup(x, i):
                table = {x: 1.0, "bias": 0.0}
                return table[x] + i
        """, count=2, message="`x` (a parameter of `lookup`, traced by `jax.jit`) is a dict key",
            span=("5:14-5:15", "6:18-6:19")),
        Flag("""
            import functools
            import jax
            import jax.numpy as jnp

            @functools.lru_cache(maxsize=None)
            def basis(x):
                return x * 2

            def step(carry, x):
                seen = {carry}
                return carry + basis(x), hash(x) in seen

            jax.lax.scan(step, 0.0, jnp.arange(3.0))
            basis(jnp.ones(3))
        """, count=4, span=("10:13-10:18", "11:26-11:27", "11:35-11:36", "14:7-14:18")),
        Flag("""
            import jax.numpy as jnp

            weights = jnp.ones(3)
            cache = {}
            if weights in cache:
                pass
        """, message="`weights` is a JAX array", span="5:4-5:11"),
        # dicts keyed by strings or static shapes inside traced code; lists; an uncached function
        Pass("""
            import functools
            import jax
            import jax.numpy as jnp

            @functools.cache
            def make(n):
                return jnp.zeros(n)

            def plain(x):
                return x

            @jax.jit
            def step(x, params):
                table = {"w": x, x.shape: 1}
                seen = {x.ndim}
                y = params["w"] * table["w"]
                z = [x, y]
                return plain(x) + make(x.shape[0]) + hash(x.dtype), x in z, y[x]

            key = {"lr": 0.1}
            step(jnp.ones(3), key)
        """),
        Pass("""
            import jax.numpy as jnp

            def check(grads, scale):
                expected = {"loc": scale * jnp.array([0.5, -2.0]), "scale": scale * jnp.array([2.0])}
                actual = {name: grad / 2 for name, grad in grads.items()}
                for name in expected:  # iterating a dict gives its keys, strings here
                    assert jnp.allclose(actual[name], expected[name])
        """),
    )
