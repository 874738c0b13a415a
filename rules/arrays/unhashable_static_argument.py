"""ODL708: an unhashable value at a static argument of a jitted function."""

from __future__ import annotations

import functools

import libcst as cst
from odelint.analysis import STATIC_KEYWORDS, Kind, Needs, Site, jax_api, jitted_callee, source_of
from odelint.api.finding import Edits, Replace, Safety
from odelint.api.rule import Flag, Pass, Rule

_UNHASHABLE_LITERALS = {"List": "list", "ListComp": "list", "Dict": "dict", "DictComp": "dict", "Set": "set",
                        "SetComp": "set"}  # by LibCST class name: module-level code never touches `cst.`
_FILTERED = jax_api.names("filtered_compilers")
_STATIC_TRANSFORMS = jax_api.names("static_compilers")


class UnhashableStaticArgument(Rule):
    """An unhashable value (list, dict, set, array, module) is a static argument of `jax.jit`.

    ## What it does
    Flags a call of a function compiled with `jax.jit(..., static_argnums=/static_argnames=)`
    (as a call, `@jax.jit(...)` or `@partial(jax.jit, ...)`) that passes a list, dict or set
    (a literal, or a name only ever bound to one), a JAX array, or an instance of an Equinox
    module class of this file that declares array fields, at a static position or keyword.
    Also flags `static_argnums`/`static_argnames` given to `eqx.filter_jit`.

    ## Why is this bad?
    JAX hashes static arguments to look up the compiled program; lists, dicts, sets and
    arrays cannot be hashed, nor can an Equinox module holding arrays, so the first call
    fails:

        ValueError: Non-hashable static arguments are not supported. An error occurred while
        trying to hash an object of type <class 'list'>, [1, 2]. The error was:
        TypeError: unhashable type: 'list'

    (jax#883, #5186, #6233, #3701; equinox#11, #236.) `eqx.filter_jit` takes no static
    keywords at all (every non-array argument is already static) and raises
    ``ValueError: `jitkwargs` cannot contain 'static_argnums', ...``.

    ## Example
    ```python
    @partial(jax.jit, static_argnums=1)
    def tile(x, reps):
        return jnp.tile(x, reps)

    tile(x, [2, 3])
    ```

    ## Use instead
    ```python
    tile(x, (2, 3))
    ```

    ## Fix safety
    Safe for a list literal, which becomes the tuple literal with the same elements: the
    call fails as written, and a tuple is hashable. Dicts, sets and arrays have no
    mechanical fix: pass a tuple of items, or drop the position from `static_argnums`
    (an array argument is then traced, which is what `eqx.filter_jit` does by default).
    """

    code = "ODL708"
    name = "unhashable-static-argument"
    summary = "An unhashable value (list, dict, set, array, module) is a static argument of a jitted function"
    triggers = (("static_arg",), ("static_broadcasted",))
    fix_safety = Safety.SAFE
    fixtures = "tests/fixtures/ODL708"

    needs = Needs.fact("unhashable_static_argument")

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        if self.facts.qualname(node.func, site.scope) in _FILTERED:
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value in STATIC_KEYWORDS:
                    self.report(arg, f"`{source_of(self.context.module, node.func)}` takes no `{arg.keyword.value}` "
                                     "(it raises \"ValueError: `jitkwargs` cannot contain 'static_argnums', ...\"): "
                                     "every non-array argument is already static under it, so drop the keyword")
            return
        jitted = jitted_callee(self.facts, node.func, site.scope)
        if jitted is None or jitted.transform in _FILTERED:
            return
        for arg in jitted.static_arguments(node):
            what = self._unhashable(arg.value, site)
            if what is None:
                continue
            fix = None
            if isinstance(arg.value, cst.List):
                fix = self.fix("Pass a tuple", functools.partial(_tuple_edits, arg.value))
            self.report(arg.value,
                        f"`{source_of(self.context.module, arg.value)}` is {what[0]} passed as a static argument of "
                        f"`{source_of(self.context.module, node.func)}` (`{jitted.spelling}` with static arguments): "
                        f"static arguments are hashed and {what[1]} "
                        "(`ValueError: Non-hashable static arguments are not supported`)"
                        + ("; pass a tuple" if isinstance(arg.value, cst.List) else ""),
                        fix=fix)

    def _unhashable(self, value: cst.BaseExpression, site: Site) -> tuple[str, str] | None:
        """What the value is and why it cannot be hashed: a list, dict or set, a JAX array, or
        an Equinox module of this file with array fields; None when it may be hashable."""
        literal = _UNHASHABLE_LITERALS.get(type(value).__name__)
        if literal is None and isinstance(value, cst.Name):
            kinds = {_UNHASHABLE_LITERALS.get(type(d.value).__name__) if d.value is not None else None
                     for d in self.facts.definitions(value, site)}
            literal = kinds.pop() if len(kinds) == 1 else None
        if literal is not None:
            return f"a {literal}", f"a {literal} is unhashable"
        kind = self.facts.kind(value, site)
        if kind is Kind.MODULE:
            found = self.facts.module_class(value, site)
            if found is not None and found.node is not None and self._has_array_field(found.node):
                where = found.defined_in(self.context.path)
                return (f"a `{found.name}` module" + (f" (defined in `{where}`)" if where else ""),
                        "its array fields are unhashable")
        return ("a JAX array", "arrays are unhashable") if kind is Kind.ARRAY else None

    def _has_array_field(self, cls: cst.ClassDef) -> bool:
        """Does this file's module class declare a field as an array (`w: jax.Array`)?"""
        return any(d.annotation is not None and self.facts.annotation_kind(d.annotation, d.site.scope) is Kind.ARRAY
                   for definitions in self.facts.defined_in(cls).values() for d in definitions)

    examples = (
        Flag("""
            from functools import partial
            import jax
            import jax.numpy as jnp

            @partial(jax.jit, static_argnums=1)
            def tile(x, reps):
                return jnp.tile(x, reps)

            y = tile(jnp.ones(2), [2, 3])
            z = tile(jnp.ones(2), reps=[4])
        """, fixed="""
            from functools import partial
            import jax
            import jax.numpy as jnp

            @partial(jax.jit, static_argnums=1)
            def tile(x, reps):
                return jnp.tile(x, reps)

            y = tile(jnp.ones(2), (2, 3))
            z = tile(jnp.ones(2), reps=(4,))
        """, count=2, message="`[2, 3]` is a list passed as a static argument of `tile`",
            span=("9:23-9:29", "10:28-10:31")),
        # `jax.jit(f, static_argnames=...)` as a call; a dict bound to a name, an array
        Flag("""
            import jax
            import jax.numpy as jnp

            def scale(x, table, factor):
                return x * table["a"] * factor

            fast = jax.jit(scale, static_argnames=("table", "factor"))
            table = {"a": 2.0}
            fast(jnp.ones(3), table, factor=jnp.asarray(2.0))
        """, count=2, message="`table` is a dict", span=("9:19-9:24", "9:33-9:49")),
        Flag("""
            import equinox as eqx
            import jax

            class Scale(eqx.Module):
                w: jax.Array

            def apply(x, layer):
                return layer.w * x

            fast = jax.jit(apply, static_argnums=1)
            fast(1.0, Scale(jax.numpy.ones(2)))
        """, message="`Scale(jax.numpy.ones(2))` is a `Scale` module passed as a static argument", span="11:11-11:35"),
        Flag("""
            import jax
            import jax.numpy as jnp

            mapped = jax.pmap(lambda x, shape: x.reshape(shape), static_broadcasted_argnums=1)
            mapped(jnp.ones((1, 4)), [2, 2])
        """, fixed="""
            import jax
            import jax.numpy as jnp

            mapped = jax.pmap(lambda x, shape: x.reshape(shape), static_broadcasted_argnums=1)
            mapped(jnp.ones((1, 4)), (2, 2))
        """, message="(`jax.pmap` with static arguments)", span="5:26-5:32"),
        Flag("""
            import equinox as eqx

            @eqx.filter_jit(static_argnums=1)
            def f(x, n):
                return x * n
        """, message="takes no `static_argnums`", span="3:17-3:33"),
        Pass("""
            from functools import partial
            import equinox as eqx
            import jax
            import jax.numpy as jnp

            @partial(jax.jit, static_argnums=(1, 2))
            def tile(x, reps, mode):
                return jnp.tile(x, reps)

            shape = (2, 3)
            tile(jnp.ones(2), (2, 3), "a")
            tile(jnp.ones(2), shape, mode=4)
            tile([1.0, 2.0], (1,), None)
            jax.jit(tile)(jnp.ones(2), [2, 3], {})

            class Config(eqx.Module):
                depth: int

            tile(jnp.ones(2), (2,), Config(3))
        """),
        # not static: the list goes to a traced position; filter_jit without static keywords
        Pass("""
            import equinox as eqx
            import jax

            def f(xs, n):
                return sum(xs) * n

            g = jax.jit(f, static_argnums=1)
            g([1.0, 2.0], 3)
            h = eqx.filter_jit(f)
            h([1.0], [2])
        """),
        # the configured jit is bound to a name first, then used as the decorator
        Flag("""
            import functools
            import jax

            jit_shape = functools.partial(jax.jit, static_argnames=("shape",))

            @jit_shape
            def init_params(key, shape):
                return jax.random.normal(key, shape)

            params = init_params(jax.random.PRNGKey(0), shape=[3, 4])
        """, fixed="""
            import functools
            import jax

            jit_shape = functools.partial(jax.jit, static_argnames=("shape",))

            @jit_shape
            def init_params(key, shape):
                return jax.random.normal(key, shape)

            params = init_params(jax.random.PRNGKey(0), shape=(3, 4))
        """, message="a list passed as a static argument of `init_params`", span="10:51-10:57"),
        Pass("""
            import jax
            from jax.util import partial

            @partial(jax.jit, static_argnums=(1,))
            def init_params(key, shape):
                return jax.random.normal(key, shape)

            params = init_params(jax.random.PRNGKey(0), (3, 4))
        """),
    )


def _tuple_edits(value: cst.List) -> Edits:
    return Edits([Replace(value, _as_tuple(value))])


def _as_tuple(value: cst.List) -> cst.Tuple:
    """`[a, b]` -> `(a, b)`, `[a]` -> `(a,)`, keeping the whitespace inside the brackets."""
    elements = list(value.elements)
    if len(elements) == 1 and isinstance(elements[0].comma, cst.MaybeSentinel):
        elements[0] = elements[0].with_changes(comma=cst.Comma())
    return cst.Tuple(elements,
                     lpar=[*value.lpar, cst.LeftParen(whitespace_after=value.lbracket.whitespace_after)],
                     rpar=[cst.RightParen(whitespace_before=value.rbracket.whitespace_before), *value.rpar])
