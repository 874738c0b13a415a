"""ODL605: the first argument of `eqx.filter_grad` / `filter_value_and_grad` (the one differentiated) is misused."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import (
    Application,
    Definition,
    Kind,
    Needs,
    Site,
    jax_api,
    keyword_arg,
    loaded_names,
    positional_args,
    source_of,
)
from odelint.api.finding import Edits, Replace, Safety
from odelint.api.rule import Flag, Pass
from odelint.rules.equinox.common import TransformApplicationRule

_FILTER_GRADS = jax_api.names("filter_grads")


class FilterGradFirstArgument(TransformApplicationRule):
    """`eqx.filter_grad` differentiates its first positional argument only, and that goes wrong.

    ## What it does
    For a function transformed by `eqx.filter_grad` or `eqx.filter_value_and_grad`
    (called, or as a decorator), flags (a) a call of the result that passes the first
    argument by keyword (`grad_fn(model=model, x=x)`); (b) a call whose first argument
    is a Python number (`grad_fn(2.0, x)`); (c) a function whose first parameter is
    never used in its body (the model is read from an outer scope instead).

    ## Why is this bad?
    (a) raises:

        TypeError: Functions wrapped with `equinox.filter_{grad, value_and_grad}` must
        have their first argument passed by position, not keyword. (This is the
        argument that is differentiated.)

    (b) is silent: a Python float is not an array, so it is not differentiated and the
    gradient is `None`. (c) is silent too: the loss does not depend on what is
    differentiated, so every gradient is zero and training does nothing
    (equinox#502, PR#503, #650, PR#589, #189, #442, #35).

    ## Example
    ```python
    grads = eqx.filter_grad(loss)(model=model, x=x)
    ```

    ## Use instead
    ```python
    grads = eqx.filter_grad(loss)(model, x=x)
    ```

    ## Fix safety
    (a) Safe when the call passes nothing by position and the keyword names the first
    parameter of a function of this file: moving it to the front binds the same
    parameter. (b) and (c) are reported only: whether to pass an array
    (`jnp.asarray(2.0)`) or which value the loss should read is the author's choice.
    """

    code = "ODL605"
    name = "filter-grad-first-argument"
    summary = "eqx.filter_grad/filter_value_and_grad: first argument by keyword, a Python number, or unused"
    triggers = (("equinox", "filter_"),)
    fix_safety = Safety.SAFE
    fixtures = "tests/fixtures/ODL605"

    needs = Needs.refers_to(*_FILTER_GRADS) & Needs.transforms_own_function(*_FILTER_GRADS)

    def check(self, application: Application) -> None:
        if application.qualname not in _FILTER_GRADS:
            return
        parameters = application.parameters
        first = parameters[0] if parameters and parameters[0].position == application.offset else None
        spelled = source_of(self.context.module, application.spelled)
        if first is not None and not _used(application.function, first.name):
            self.report(application.spelled,
                        f"`{spelled}` differentiates the first parameter `{first.name}`, which the function never "
                        "uses: its gradient is zero; take the value to differentiate as the first parameter "
                        "and use it")
        for call, site in self.facts.transformed_calls(application):
            self._check_call(call, site, spelled, first)

    def _check_call(self, call: cst.Call, site: Site, spelled: str, first: Definition | None) -> None:
        positional = positional_args(call, before_star=True)
        if not positional and not any(arg.star for arg in call.args):
            named = keyword_arg(call, first.name) if first is not None else None
            fix = None
            if named is not None:
                fix = self.fix("Pass the differentiated argument by position", lambda: _to_front(call, named))
            self.report(call, f"the `{spelled}` function is called without a positional argument: its first "
                              "argument must be passed by position (it is the one differentiated), else it raises "
                              "`TypeError: Functions wrapped with equinox.filter_{grad, value_and_grad} must "
                              "have their first argument passed by position`", fix=fix)
            return
        if positional and self.facts.kind(positional[0].value, site) is Kind.PLAIN and _number(positional[0].value):
            self.report(positional[0], f"`{source_of(self.context.module, positional[0].value)}` is a Python "
                                       f"number: `{spelled}` does not differentiate it and its gradient is `None`; "
                                       "pass a JAX array (`jnp.asarray(...)`)")

    examples = (
        Flag("""
            import equinox as eqx
            import jax.numpy as jnp

            def loss(model, x):
                return jnp.sum(model(x))

            def step(model, x):
                return eqx.filter_grad(loss)(model=model, x=x)
        """, fixed="""
            import equinox as eqx
            import jax.numpy as jnp

            def loss(model, x):
                return jnp.sum(model(x))

            def step(model, x):
                return eqx.filter_grad(loss)(model, x=x)
        """, message="without a positional argument", span="8:12-8:51"),
        # aliases, a decorator, a name bound to the transformed function; a Python float
        Flag("""
            import equinox as eq
            from equinox import filter_value_and_grad as vg

            @eq.filter_grad
            def loss(scale, x):
                return scale * x.sum()

            def fit(x):
                return loss(2.0, x)

            value_and_grad = vg(lambda w, x: (w * x).sum())
            value_and_grad(x=1.0, w=3)
        """, fixed="""
            import equinox as eq
            from equinox import filter_value_and_grad as vg

            @eq.filter_grad
            def loss(scale, x):
                return scale * x.sum()

            def fit(x):
                return loss(2.0, x)

            value_and_grad = vg(lambda w, x: (w * x).sum())
            value_and_grad(3, x=1.0)
        """, count=2, message="`2.0` is a Python number", span=("9:17-9:20", "12:1-12:27")),
        # the model the loss reads is not the one differentiated
        Flag("""
            import equinox as eqx
            import jax

            model = eqx.nn.Linear(2, 1, key=jax.random.PRNGKey(0))

            @eqx.filter_value_and_grad
            def loss(m, x):
                return model(x).sum()
        """, message="the first parameter `m`, which the function never uses", span="6:2-6:27"),
        # the module positional, arrays, jax.grad with a float, keywords after the first
        Pass("""
            import equinox as eqx
            import jax
            import jax.numpy as jnp

            def loss(model, x, scale=1.0):
                return scale * jnp.sum(model(x))

            model = eqx.nn.Linear(2, 1, key=jax.random.PRNGKey(0))
            grads = eqx.filter_grad(loss)(model, jnp.ones(2), scale=2.0)
            g2 = eqx.filter_grad(lambda w: jnp.sum(w ** 2))(jnp.ones(3))
            g3 = jax.grad(lambda w: w ** 2)(2.0)
            args = (model, jnp.ones(2))
            g4 = eqx.filter_value_and_grad(loss)(*args)
        """),
    )


def _used(function: cst.FunctionDef | cst.Lambda, name: str) -> bool:
    return any(found.value == name for found in loaded_names(function.body, into_nested=True))


def _number(node: cst.BaseExpression) -> bool:
    """A Python int or float: a literal, a negated one, or a name holding one."""
    if isinstance(node, cst.UnaryOperation):
        node = node.expression
    if isinstance(node, cst.Name):
        return node.value not in ("True", "False", "None")
    return isinstance(node, (cst.Integer, cst.Float))


def _to_front(call: cst.Call, named: cst.Arg) -> Edits:
    """`f(x=1, model=m)` -> `f(m, x=1)`: the first parameter's keyword argument moves to the front."""
    others = [arg for arg in call.args if arg is not named]
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    first = named.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT,
                               comma=comma if others else cst.MaybeSentinel.DEFAULT)
    rest = [arg.with_changes(comma=comma) for arg in others[:-1]]
    if others:
        rest.append(others[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT))
    return Edits([Replace(call, call.with_changes(args=[first, *rest]))])
