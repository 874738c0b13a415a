"""ODL401: an Equinox module, its bound method or an `eqx.Partial` as the function of lax control flow."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import (
    Needs,
    Site,
    argument_at,
    instance_class,
    is_module_class,
    jax_api,
    loaded_names,
    method_of,
    positional_args,
    source_of,
)
from odelint.api.finding import Edits, Replace, Safety
from odelint.api.rule import Callees, Flag, Pass, Rule

# lax function -> its function arguments: (position, keyword, lambda parameters); None
# parameters mean `lambda *a: f(*a)`; `branches` of switch is a list of such functions.
SLOTS = jax_api.control_flow_slots()
_EQUINOX_PARTIAL = jax_api.name("equinox_partial")


class CallablePytreeInControlFlow(Rule):
    """A callable pytree is given as the function of `lax` control flow.

    ## What it does
    Flags an Equinox module instance, a bound method of one (`self.step` inside a module,
    `cell.step`), or an `eqx.Partial`, passed as the function argument of
    `lax.while_loop`, `fori_loop`, `scan`, `cond` or `switch` (its branches list), in any
    import spelling. Plain functions, lambdas, `functools.partial` and
    `jax.tree_util.Partial` are fine and not flagged, and so are `lax.map` and
    `lax.associative_scan`, which never hash their function (measured on jax 0.10.2).

    ## Why is this bad?
    JAX caches the traced body by hashing the function it is given. A module (and a
    bound method of one, and `eqx.Partial`, which are modules too) hashes its fields, and
    array fields are unhashable:

        TypeError: unhashable type: 'DynamicJaxprTracer'

    under `jit` (`'ArrayImpl'` for concrete arrays, `'LinearizeTracer'` under `grad`). This is
    equinox#768 and #558/#1150; Equinox itself wraps these callables in a lambda
    (equinox PR#769, citing jax-ml/jax#13554), and the Equinox FAQ recommends the same.

    ## Example
    ```python
    class Cell(eqx.Module):
        a: jax.Array
        def step(self, c, x):
            return c * self.a + x, c
        def __call__(self, xs):
            return jax.lax.scan(self.step, 0.0, xs)
    ```

    ## Use instead
    ```python
            return jax.lax.scan(lambda c, x: self.step(c, x), 0.0, xs)
    ```

    ## Fix safety
    Safe: the lambda calls the same object with the same arguments; only what JAX hashes
    changes (the lambda, by identity). Parameter names are chosen not to shadow names
    the wrapped expression uses.
    """

    code = "ODL401"
    name = "callable-pytree-in-control-flow"
    summary = "An Equinox module, bound method or eqx.Partial is the function of lax control flow"
    # the module may be a class of another project file: no "equinox" in this one
    triggers = tuple(("lax", function) for function in ("while_loop", "fori_loop", "scan", "cond", "switch"))
    fix_safety = Safety.SAFE
    fixtures = "tests/fixtures/ODL401"

    @classmethod
    def callees(cls) -> Callees:
        return Callees(names=frozenset(SLOTS))

    needs = Needs.fact("callable_module_in_control_flow")

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        qualname = self.facts.qualname(node.func, site.scope) or ""
        slots = SLOTS.get(qualname)
        if slots is None or positional_args(node) is None:
            return
        for position, name, params in slots:
            arg = argument_at(node, name, position)
            if arg is None:
                continue
            # the branches of `switch`: a list given there or through a name (`branches = [...]`)
            functions = self.facts.elements(arg.value, site) if name == "branches" else [(arg.value, site)]
            for function, where in functions:
                self._check(function, params, qualname, where)

    def _check(self, function: cst.BaseExpression, params: tuple[str, ...] | None, qualname: str, site: Site) -> None:
        what = self._callable_pytree(function, site)
        if what is None:
            return
        wrapped = _wrap(function, params)
        text = source_of(self.context.module, function)
        self.report(function, f"`{text}` is {what}; `lax.{qualname.rsplit('.', 1)[1]}` hashes the function it gets, "
                              f"and a module's array fields are unhashable (`TypeError: unhashable type: "
                              f"'DynamicJaxprTracer'`): pass `{source_of(self.context.module, wrapped, 60)}`",
                    fix=self.fix("Wrap the callable in a lambda", lambda: Edits([Replace(function, wrapped)])))

    def _callable_pytree(self, node: cst.BaseExpression, site: Site) -> str | None:
        if self.facts.is_module(node, site) or self._module_instance(node, site):
            return "an Equinox module"
        if self._is_partial(node, site):
            return "an `eqx.Partial`"
        if isinstance(node, cst.Attribute):
            cls = instance_class(self.facts, node.value, site.scope)
            if cls is not None:
                if is_module_class(self.facts, cls) and method_of(self.facts, cls, node.attr.value) is not None:
                    return "a bound method of an Equinox module"
            elif node.attr.value == "__call__" and self.facts.is_module(node.value, site):
                return "a bound method of an Equinox module"
        return None

    def _module_instance(self, node: cst.BaseExpression, site: Site) -> bool:
        cls = instance_class(self.facts, node, site.scope)
        return cls is not None and is_module_class(self.facts, cls)

    def _is_partial(self, node: cst.BaseExpression, site: Site) -> bool:
        if isinstance(node, cst.Name):
            found = self.facts.definition(node, site)
            if found is None or found.value is None:
                return False
            node, site = found.value, found.site
        return isinstance(node, cst.Call) and self.facts.qualname(node.func, site.scope) == _EQUINOX_PARTIAL

    examples = (
        Flag("""
            import equinox as eqx
            import jax

            class Cell(eqx.Module):
                a: jax.Array

                def step(self, c, x):
                    return c * self.a + x, c

                def __call__(self, xs):
                    return jax.lax.scan(self.step, 0.0, xs)
        """, fixed="""
            import equinox as eqx
            import jax

            class Cell(eqx.Module):
                a: jax.Array

                def step(self, c, x):
                    return c * self.a + x, c

                def __call__(self, xs):
                    return jax.lax.scan(lambda c, x: self.step(c, x), 0.0, xs)
        """,
            message="a bound method of an Equinox module",
            span="11:29-11:38",
        ),
        # while_loop with modules for both functions; `from jax import lax`; a name `v` is avoided
        Flag("""
            import equinox as eqx
            from jax import lax

            class Body(eqx.Module):
                a: float
                def __call__(self, x):
                    return x * self.a

            def run(v, x):
                body = Body(v)
                return lax.while_loop(Body(v), body, x)
        """, fixed="""
            import equinox as eqx
            from jax import lax

            class Body(eqx.Module):
                a: float
                def __call__(self, x):
                    return x * self.a

            def run(v, x):
                body = Body(v)
                return lax.while_loop(lambda v_: Body(v)(v_), lambda v: body(v), x)
        """,
            count=2,
            span=("11:27-11:34", "11:36-11:40"),
        ),
        # fori_loop, switch branches, cond with keywords; eqx.nn, eqx.Partial, a method of a parameter
        Flag("""
            import equinox as eqx
            import jax.lax as L
            from jax.lax import fori_loop, switch, cond

            class Cell(eqx.Module):
                w: float
                def update(self, i, v):
                    return v + self.w

            def go(cell: Cell, i, v, key):
                mlp = eqx.nn.MLP(1, 1, 2, 1, key=key)
                v = fori_loop(0, 3, cell.update, v)
                v = switch(i, [mlp, lambda x: x, eqx.Partial(cell.update, 0)], v)
                part = eqx.Partial(cell.update, 1)
                v = cond(i > 0, true_fun=part, false_fun=mlp.__call__, operand=v)
                return L.cond(i > 1, cell, cell.update, v)
        """, fixed="""
            import equinox as eqx
            import jax.lax as L
            from jax.lax import fori_loop, switch, cond

            class Cell(eqx.Module):
                w: float
                def update(self, i, v):
                    return v + self.w

            def go(cell: Cell, i, v, key):
                mlp = eqx.nn.MLP(1, 1, 2, 1, key=key)
                v = fori_loop(0, 3, lambda i, v: cell.update(i, v), v)
                v = switch(i, [lambda *a: mlp(*a), lambda x: x, lambda *a: eqx.Partial(cell.update, 0)(*a)], v)
                part = eqx.Partial(cell.update, 1)
                v = cond(i > 0, true_fun=lambda *a: part(*a), false_fun=lambda *a: mlp.__call__(*a), operand=v)
                return L.cond(i > 1, lambda *a: cell(*a), lambda *a: cell.update(*a), v)
        """,
            count=7,
            span=("12:25-12:36", "13:20-13:23", "13:38-13:65", "15:30-15:34", "15:46-15:58", "16:26-16:30",
                  "16:32-16:43"),
        ),
        Pass("""
            import functools
            import equinox as eqx
            import jax
            from jax import lax

            class Cell(eqx.Module):
                a: jax.Array

                @staticmethod
                def rule(c, x):
                    return c + x, c

                def __call__(self, xs):
                    lax.scan(lambda c, x: self.step(c, x), 0.0, xs)
                    lax.scan(self.rule, 0.0, xs)
                    return lax.scan(functools.partial(step, a=self.a), 0.0, xs)

            def step(c, x, a=1.0):
                return c * a + x, c

            lax.scan(step, 0.0, None, length=3)
            lax.while_loop(lambda v: v < 3, jax.tree_util.Partial(step, a=2.0), 0.0)
        """
        ),
        # lax.map and associative_scan do not hash their function
        Pass("""
            import equinox as eqx
            import jax

            mlp = eqx.nn.MLP(1, 1, 2, 1, key=jax.random.PRNGKey(0))
            ys = jax.lax.map(mlp, jax.numpy.ones((3, 1)))
            zs = jax.lax.associative_scan(mlp.__call__, ys)
        """
        ),
        # a plain class's method, a function held in a module field, a name shadowing lax
        Pass("""
            import equinox as eqx
            from jax import lax

            class Plain:
                def step(self, c, x):
                    return c, x

            class Holder(eqx.Module):
                fn: object
                def __call__(self, xs):
                    return lax.scan(self.fn, 0.0, xs)

            lax.scan(Plain().step, 0.0, None, length=2)
            def f(lax, m: Holder):
                return lax.scan(m, 0.0, None)
        """
        ),
    )


def _wrap(function: cst.BaseExpression, params: tuple[str, ...] | None) -> cst.Lambda:
    """`lambda c, x: f(c, x)` (or `lambda *a: f(*a)`), with parameter names that `f` does not use."""
    used = {name.value for name in loaded_names(function)}

    def free(name: str) -> str:
        while name in used:
            name += "_"
        return name

    if params is None:
        star = free("a")
        return cst.Lambda(cst.Parameters(star_arg=cst.Param(cst.Name(star))),
                          cst.Call(function, [cst.Arg(cst.Name(star), star="*")]))
    names = [free(p) for p in params]
    return cst.Lambda(cst.Parameters([cst.Param(cst.Name(n)) for n in names]),
                      cst.Call(function, [cst.Arg(cst.Name(n)) for n in names]))
