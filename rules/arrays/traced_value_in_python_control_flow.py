"""ODL702: Python `if`/`while`/`and`/`or`/`not`/`bool()`/`int()` on a traced value."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import Needs, Site, jax_api, loaded_names, positional_args, source_of, traced_array
from odelint.api.rule import FileContext, Flag, Pass, Rule
from odelint.rules.arrays.common import traced_triggers

# builtins that need a concrete value -> the error they raise on a tracer
_CONVERSIONS = jax_api.tracer_conversions()


class TracedValueInPythonControlFlow(Rule):
    """Python control flow or a Python conversion on a traced value.

    ## What it does
    Inside traced code (a function jitted, vmapped or checkpointed, in any spelling
    including Equinox's `filter_*`, a `lax.scan`/`while_loop`/`fori_loop`/`cond`/`switch`
    body, a diffrax vector field, and what they call), flags the test of `if`, `elif`,
    `while`, a conditional expression and `assert`, the operands `and`/`or`/`not` take
    the truth value of, and `bool(...)`, `int(...)`, `float(...)`, when the value is a
    traced array: a traced argument, or indexing, arithmetic, comparisons and array
    methods of one. Shapes (`x.shape`, `len(x)`), `x is None`, `"key" in params`, static
    arguments (`static_argnums`/`static_argnames`, non-arrays under `eqx.filter_jit`),
    attributes of traced pytrees and results of helper functions (often Python values)
    and code that is not traced are not flagged.

    ## Why is this bad?
    Under tracing the value is an abstract tracer with no concrete value, so Python
    cannot choose a branch:

        jax.errors.TracerBoolConversionError: Attempted boolean conversion of traced
        array with shape bool[].

    and `int(x)`/`float(x)` raise `jax.errors.ConcretizationTypeError: Abstract tracer
    value encountered where concrete value is expected` (jax-ml/jax PR#16430, #6713;
    diffrax#379; equinox#266).

    ## Example
    ```python
    @jax.jit
    def relu(x):
        if x > 0:
            return x
        return 0.0
    ```

    ## Use instead
    ```python
    @jax.jit
    def relu(x):
        return jnp.where(x > 0, x, 0.0)
    ```
    or `jax.lax.cond` to run only one branch, `jax.lax.while_loop` for a `while`, or mark
    the argument static (`static_argnames=...`) when it is a Python value.

    ## Fix safety
    No fix: which rewrite is right (`jnp.where` evaluates both branches, `lax.cond` needs
    both to return the same shapes, a static argument recompiles per value) depends on
    the code.
    """

    code = "ODL702"
    name = "traced-value-in-python-control-flow"
    symptoms = ("TracerBoolConversionError", "ConcretizationTypeError", "Abstract value passed to `bool`",
                "Abstract tracer value encountered where concrete value is expected")  # older jax's texts too
    summary = "Python control flow or bool()/int() on a traced value"
    triggers = traced_triggers()
    fixtures = "tests/fixtures/ODL702"

    needs = Needs.fact("traced_truth_test")

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._tested: set[int] = set()  # boolean operations already checked as part of a test

    def visit_If(self, node: cst.If, site: Site) -> None:
        self._test(node.test, site, "`if`", "jax.lax.cond` or `jnp.where")

    def visit_While(self, node: cst.While, site: Site) -> None:
        self._test(node.test, site, "`while`", "jax.lax.while_loop")

    def visit_IfExp(self, node: cst.IfExp, site: Site) -> None:
        self._test(node.test, site, "a conditional expression", "jnp.where")

    def visit_Assert(self, node: cst.Assert, site: Site) -> None:
        self._test(node.test, site, "`assert`", "eqx.error_if")

    def visit_BooleanOperation(self, node: cst.BooleanOperation, site: Site) -> None:
        if id(node) in self._tested:
            return
        operator = "and" if isinstance(node.operator, cst.And) else "or"
        self._test(node.left, site, f"`{operator}`", "jnp.logical_and` / `jnp.where" if operator == "and"
                   else "jnp.logical_or` / `jnp.where")

    def visit_UnaryOperation(self, node: cst.UnaryOperation, site: Site) -> None:
        if isinstance(node.operator, cst.Not) and id(node) not in self._tested:
            self._test(node.expression, site, "`not`", "jnp.logical_not")

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        if type(node.func) is not cst.Name or node.func.value not in _CONVERSIONS:
            return
        args = positional_args(node)
        if not args or len(node.args) != 1 or self.facts.definitions(node.func, site):
            return
        self._report(node, args[0].value, site, f"`{node.func.value}()`", _CONVERSIONS[node.func.value],
                     "x.astype(...)` or `jnp.asarray(...)")

    def _test(self, test: cst.BaseExpression, site: Site, construct: str, instead: str) -> None:
        """A truth test: each operand of `and`/`or`/`not` inside it gets its truth value taken."""
        for operand in self._operands(test):
            if self._report(operand, operand, site, construct, "TracerBoolConversionError", instead):
                return

    def _operands(self, test: cst.BaseExpression) -> list[cst.BaseExpression]:
        if isinstance(test, cst.BooleanOperation):
            self._tested.add(id(test))
            return self._operands(test.left) + self._operands(test.right)
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            self._tested.add(id(test))
            return self._operands(test.expression)
        return [test]

    def _report(self, node: cst.CSTNode, value: cst.BaseExpression, site: Site, construct: str, error: str,
                instead: str) -> bool:
        if _membership(value):
            return False
        traced = traced_array(self.facts, value, site)
        if traced is None:
            return False
        text = source_of(self.context.module, value)
        name = traced.parameter.name
        derives = (f" ({traced.via})" if traced.via else "") if any(n.value == name for n in loaded_names(value)) \
            else f" (`{text}` derives from `{name}`{traced.passed()})"
        self.report(node, f"{construct} on `{text}` needs a concrete value, but `{name}` is traced: {traced.reason}"
                          f"{derives}; Python raises `jax.errors.{error}`: use `{instead}`, or make the argument "
                          f"static")
        return True

    examples = (
        Flag("""
            import jax

            @jax.jit
            def relu(x):
                if x > 0:
                    return x
                return 0.0
        """, message="`x` is traced: a parameter of `relu`, traced by `jax.jit`", span="5:8-5:13"),
        # while, `or` as a default, not, int(), a conditional expression, assert; a lax.scan body
        Flag("""
            import jax.numpy as jnp
            from jax import lax

            def body(carry, x):
                while carry > 1.0:
                    carry = carry / 2
                scale = x or 1.0
                if not x:
                    pass
                n = int(carry)
                y = carry if x > 0 else -carry
                assert carry >= 0
                return carry, y

            lax.scan(body, 0.0, jnp.ones(3))
        """, count=6, message="`while` on `carry > 1.0`",
            span=("5:11-5:22", "7:13-7:14", "8:12-8:13", "10:9-10:19", "11:18-11:23", "12:12-12:22")),
        # a helper called from an eqx.filter_jit function; `and` after a static test
        Flag("""
            import equinox as eqx
            import jax

            def clip(v, limit):
                if limit is not None and v > limit:
                    return limit
                return v

            @eqx.filter_jit
            def step(x: jax.Array, limit: float):
                return clip(x.sum(), limit)
        """, message="but `x` is traced: a parameter of `step`, traced by `eqx.filter_jit` "
                     "(`v > limit` derives from `x`, passed as `v` to `clip`)", span="5:30-5:39"),
        # shapes, static arguments, filter_jit's non-arrays, `is None`, membership, host code
        Pass("""
            import functools
            import equinox as eqx
            import jax

            @functools.partial(jax.jit, static_argnames=("n",))
            def f(x, n, params):
                if x.shape[0] > 1 and len(x) > 2 and x.ndim:
                    pass
                if n > 3 or x is None:
                    pass
                if "w" in params:
                    pass
                return int(x.shape[0])

            @eqx.filter_jit
            def g(model, x: jax.Array, training: bool):
                if training:
                    return model(x)
                return x

            def host(x):
                if x > 0:
                    return bool(x)
        """),
        # `partial` imported from its old home (jax.util, jax 0.2): still `functools.partial(jax.jit, ...)`
        Flag("""
            import jax
            import jax.numpy as jnp
            from jax.util import partial

            @partial(jax.jit, static_argnums=(1,))
            def project(x, radius):
                if jnp.linalg.norm(x) > radius:
                    x = x * radius / jnp.linalg.norm(x)
                return x
        """, message="`x` is traced: a parameter of `project`, traced by `jax.jit`", span="7:8-7:35"),
        # a configured jit bound to a name and used as the decorator
        Flag("""
            import functools
            import jax
            import jax.numpy as jnp

            jit_static = functools.partial(jax.jit, static_argnames=("training",))

            @jit_static
            def forward(w, x, training):
                h = jnp.tanh(w @ x)
                if h.sum() > 0:
                    h = h * 0.5
                return h
        """, message="`x` is traced: a parameter of `forward`, traced by `jax.jit`", span="10:8-10:19"),
        Pass("""
            import functools
            import jax
            import jax.numpy as jnp

            jit_static = functools.partial(jax.jit, static_argnames=("training",))

            @jit_static
            def forward(w, x, training):
                h = jnp.tanh(w @ x)
                if training:
                    h = h * 0.5
                return h
        """),
        # the scan carry is splatted into the helper's parameters
        Flag("""
            import jax
            import jax.numpy as jnp


            def update(position, velocity, force):
                if jnp.max(jnp.abs(velocity)) > 10.0:
                    velocity = jnp.clip(velocity, -10.0, 10.0)
                return position + 0.01 * velocity, velocity + 0.01 * force


            def body(carry, force):
                carry = update(*carry, force)
                return carry, carry[0]


            def simulate(x0, v0, forces):
                return jax.lax.scan(body, (x0, v0), forces)
        """, message="`if` on `jnp.max(jnp.abs(velocity)) > 10.0` needs a concrete value, but `carry` is traced",
            span="6:8-6:41"),
        # only a module-level constant is splatted into the tested parameter
        Pass("""
            import jax
            import jax.numpy as jnp

            SETTINGS = (0.01, 10.0)


            def update(position, velocity, dt, limit):
                if limit > 5.0:
                    velocity = jnp.clip(velocity, -limit, limit)
                return position + dt * velocity, velocity


            def body(carry, force):
                position, velocity = carry
                carry = update(position, velocity + force, *SETTINGS)
                return carry, carry[0]


            def simulate(x0, v0, forces):
                return jax.lax.scan(body, (x0, v0), forces)
        """),
    )


def _membership(value: cst.BaseExpression) -> bool:
    """`"w" in params`: a question about a container's keys, static under tracing."""
    return isinstance(value, cst.Comparison) and all(
        isinstance(c.operator, (cst.In, cst.NotIn)) for c in value.comparisons)
