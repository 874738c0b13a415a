"""Values the model follows further (issue 20): old aliases of `partial`, configured transforms
bound to a name and used as decorators, stacked decorators."""

from __future__ import annotations

import ast
import textwrap

import libcst as cst
from odelint.analysis.facts import Facts
from odelint.analysis.jitted import decorated
from odelint.analysis.scopes import Site, build_scope_index
from odelint.analysis.sketch import Sketch


def _facts(source: str) -> tuple[cst.Module, Facts]:
    module = cst.parse_module(textwrap.dedent(source))
    return module, Facts(build_scope_index(module, {cst.Call, cst.Return}))


def _function(facts: Facts, name: str) -> tuple[cst.FunctionDef, Site]:
    binding = facts.index.module_scope.bindings[name][0]
    return binding.node, Site(binding.scope, binding.order)  # type: ignore[return-value]


def _return_site(facts: Facts, function: cst.FunctionDef) -> tuple[cst.Return, Site]:
    return next((cst.ensure_type(node, cst.Return), site) for node, site in facts.index.of_type(cst.Return)
                if site.scope.node is function)


# -- old aliases of functools.partial --------------------------------------------------------

def test_partial_from_jax_util_is_functools_partial() -> None:
    module, facts = _facts("""
        import jax
        from jax.util import partial
        from jax import partial as p2

        a = jax.util.partial
    """)
    scope = facts.index.module_scope
    assert facts.qualname(cst.Name("partial"), scope) == "functools.partial"
    # `jax.partial` itself keeps its name: it was removed, and ODL910 reports it as such
    assert facts.qualname(cst.Name("p2"), scope) == "jax.partial"
    assert facts.qualname(cst.Name("a"), scope) == "functools.partial"
    # other names of jax.util are left as they are
    assert facts.qualname(cst.parse_expression("jax.util.safe_map"), scope) == "jax.util.safe_map"


def test_old_partial_decorator_compiles_with_static_arguments() -> None:
    _, facts = _facts("""
        import jax
        from jax.util import partial

        @partial(jax.jit, static_argnums=(1,))
        def step(x, n):
            return x * n
    """)
    function, site = _function(facts, "step")
    jitted = decorated(facts, function, site.scope)
    assert jitted is not None and jitted.transform == "jax.jit"
    assert set(jitted.static_keywords()) == {"static_argnums"}
    node, inside = _return_site(facts, function)
    assert facts.traced_value(cst.Name("x"), inside) is not None
    assert facts.traced_value(cst.Name("n"), inside) is None


def test_sketch_reads_old_partial_too() -> None:
    sketch = Sketch(ast.parse("from jax.util import partial\nimport jax\n\n"
                              "@partial(jax.jit, static_argnums=1)\ndef f(x, n):\n    return x\n"))
    name = next(node for node in ast.walk(sketch.tree) if isinstance(node, ast.Name) and node.id == "partial")
    assert "functools.partial" in sketch.qualnames(name)
    assert [f.name for f in sketch.traced_functions()] == ["f"]  # type: ignore[union-attr]


# -- a configured transform bound to a name, used as a decorator ------------------------------

ALIASED = """
import functools
import jax

jit_static = functools.partial(jax.jit, static_argnames=("n",))
grad_second = functools.partial(jax.grad, argnums=1)

@jit_static
def step(x, n):
    return x * n

@grad_second
def loss(n, x):
    return x * n

def plain(x, n):
    return x * n
"""


def test_decorator_value_follows_a_name_bound_to_a_call() -> None:
    module, facts = _facts(ALIASED)
    function, site = _function(facts, "step")
    applies, scope = facts.decorator_value(function.decorators[0].decorator, site.scope)
    assert module.code_for_node(applies) == 'functools.partial(jax.jit, static_argnames=("n",))'
    assert scope is facts.index.module_scope
    # a name bound to something that is not a call is the decorator itself
    plain = cst.Name("jax")
    assert facts.decorator_value(plain, site.scope) == (plain, site.scope)


def test_aliased_jit_traces_all_but_its_static_arguments() -> None:
    _, facts = _facts(ALIASED)
    function, site = _function(facts, "step")
    jitted = decorated(facts, function, site.scope)
    assert jitted is not None and jitted.transform == "jax.jit"
    call = cst.ensure_type(cst.parse_expression("step(x, [1])"), cst.Call)
    assert [cst.Module([]).code_for_node(arg.value) for arg in jitted.static_arguments(call)] == ["[1]"]
    _, inside = _return_site(facts, function)
    traced = facts.traced_value(cst.Name("x"), inside)
    assert traced is not None and traced.reason == "a parameter of `step`, traced by `jax.jit`"
    assert facts.traced_value(cst.Name("n"), inside) is None


def test_aliased_grad_differentiates_its_function_only() -> None:
    _, facts = _facts(ALIASED)
    loss, _ = _function(facts, "loss")
    plain, _ = _function(facts, "plain")
    _, in_loss = _return_site(facts, loss)
    _, in_plain = _return_site(facts, plain)
    assert facts.differentiated_by(in_loss) is not None
    assert facts.differentiated_by(in_plain) is None


def test_sketch_traces_a_function_under_an_aliased_jit() -> None:
    sketch = Sketch(ast.parse(textwrap.dedent(ALIASED)))
    assert {f.name for f in sketch.traced_functions()} == {"step"}  # type: ignore[union-attr]


def test_stacked_jit_over_grad() -> None:
    _, facts = _facts("""
        import functools
        import jax

        @functools.partial(jax.jit, static_argnums=1)
        @jax.grad
        def loss(x, n):
            return x * n
    """)
    function, site = _function(facts, "loss")
    jitted = decorated(facts, function, site.scope)
    assert jitted is not None and jitted.transform == "jax.jit"
    _, inside = _return_site(facts, function)
    assert facts.traced_value(cst.Name("x"), inside) is not None
    assert facts.traced_value(cst.Name("n"), inside) is None
    assert facts.differentiated_by(inside) is not None


# -- tracers ---------------------------------------------------------------------------------

def test_jitted_parameter_is_traced_whatever_its_callers_pass() -> None:
    _, facts = _facts("""
        import functools
        import jax

        def helper(bound, w):
            return w * bound

        @jax.jit
        def loss(w, bound):
            return helper(bound, w)

        @functools.partial(jax.jit, static_argnums=1)
        def loss_static(w, bound):
            return helper(bound, w)

        loss(1.0, 0.5)
        loss(2.0, 0.25)
        loss_static(1.0, 0.5)
    """)
    loss, _ = _function(facts, "loss")
    _, inside = _return_site(facts, loss)
    traced = facts.traced_value(cst.Name("bound"), inside)
    assert traced is not None and traced.reason == "a parameter of `loss`, traced by `jax.jit`"
    # through the helper's parameter, back to where it came from
    helper, _ = _function(facts, "helper")
    _, in_helper = _return_site(facts, helper)
    traced = facts.traced_value(cst.Name("bound"), in_helper)
    assert traced is not None and traced.parameter.function is loss
    static, _ = _function(facts, "loss_static")
    _, in_static = _return_site(facts, static)
    assert facts.traced_value(cst.Name("bound"), in_static) is None


# -- which call built a value ------------------------------------------------------------------

BUILT = """
import diffrax

def integrate(term, solver, controller):
    return diffrax.diffeqsolve(term, solver, 0.0, 1.0, 0.1, 1.0, stepsize_controller=controller)

def twice(solver):
    return solver

pid = diffrax.PIDController(rtol=1e-5, atol=1e-5)
integrate(diffrax.ODETerm(f), diffrax.Kvaerno5(), pid)
integrate(diffrax.ODETerm(f), diffrax.Kvaerno5(), diffrax.ConstantStepSize())
twice(diffrax.Tsit5())
twice(diffrax.Euler())
"""


def test_built_by_follows_assignments_and_parameters() -> None:
    from odelint.analysis.built import built_by

    module, facts = _facts(BUILT)
    integrate, _ = _function(facts, "integrate")
    scope = facts.index.body_scope(integrate)
    assert scope is not None
    inside = Site(scope, 10**9)
    solver = built_by(facts, cst.Name("solver"), inside)
    assert solver is not None and module.code_for_node(solver.call) == "diffrax.Kvaerno5()"
    assert solver.via == "passed as `solver` to `integrate`"
    assert solver.site.scope is facts.index.module_scope
    # the two calls pass different controllers: no single answer
    assert built_by(facts, cst.Name("controller"), inside) is None
    # a name assigned once is its value, crossing no call
    pid = built_by(facts, cst.Name("pid"), Site(facts.index.module_scope, 10**9))
    assert pid is not None and pid.via is None
    twice, _ = _function(facts, "twice")
    inner = facts.index.body_scope(twice)
    assert inner is not None and built_by(facts, cst.Name("solver"), Site(inner, 10**9)) is None


# -- functions handed to a helper that transforms its parameter --------------------------------

HANDED = """
import jax

def final(a):
    return a ** 3

def other(a):
    return a

def untouched(a):
    return a

def hessian(f):
    return jax.jacfwd(jax.jacrev(f))

def compiled(f):
    return jax.jit(f)

def either(f):
    return jax.grad(f)

hessian(final)(1.0)
compiled(final)(1.0)
either(other)(1.0)
either(untouched)(1.0)
"""


def test_a_transform_of_a_parameter_reaches_the_function_every_call_passes() -> None:
    from odelint.analysis.differentiation import differentiation

    _, facts = _facts(HANDED)
    final, _ = _function(facts, "final")
    _, in_final = _return_site(facts, final)
    assert differentiation(facts).modes(in_final) == frozenset({("forward", "reverse")})
    # the reasons name the parameter the function crossed, for messages
    assert facts.traced_by(in_final) == "`final`, passed as `f` to `compiled`, is traced by `jax.jit`"
    assert facts.differentiated_by(in_final) == "`final`, passed as `f` to `hessian`, is differentiated by `jax.jacfwd`"
    inside = _return_site(facts, final)[1]
    traced = facts.traced_value(cst.Name("a"), inside)
    assert traced is not None
    assert traced.reason == "a parameter of `final` (passed as `f` to `compiled`), traced by `jax.jit`"
    # `either` is given two different functions: neither is known to be differentiated by it
    for name in ("other", "untouched"):
        function, _ = _function(facts, name)
        _, inside = _return_site(facts, function)
        assert facts.differentiated_by(inside) is None


def test_sketch_reaches_a_function_handed_to_a_transforming_helper() -> None:
    sketch = Sketch(ast.parse(textwrap.dedent(HANDED)))
    names = {f.name for f in sketch.differentiated_functions()}  # type: ignore[union-attr]
    assert {"final", "other", "untouched"} <= names  # the sketch may say yes too often, never too rarely


# -- a carry splatted into a call ----------------------------------------------------------------

SPLATTED = """
import jax

SETTINGS = (0.01, 10.0)

def update(position, velocity, force, dt, limit):
    return position + dt * velocity * limit + force

def body(carry, force):
    carry = update(*carry, force, *SETTINGS)
    return carry, carry

jax.lax.scan(body, (0.0, 1.0), None, length=3)
"""


def test_splatted_for_lists_what_may_land_on_a_hidden_position() -> None:
    from odelint.analysis.calls import splatted_for

    module, facts = _facts(SPLATTED)
    update, _ = _function(facts, "update")
    scope = facts.index.body_scope(update)
    assert scope is not None
    params = {b.name: b for bindings in scope.bindings.values() for b in bindings}
    call = cst.ensure_type(cst.parse_expression("update(x, *carry, force, dt, *SETTINGS)"), cst.Call)

    def code(name: str) -> list[str]:
        return [module.code_for_node(value) for value in splatted_for(call, params[name])]

    assert code("position") == []                                  # before the star: known
    assert code("velocity") == ["carry", "force", "SETTINGS"]      # `dt` lands at position 2 at the earliest
    assert code("force") == ["carry", "force", "dt", "SETTINGS"]
    assert splatted_for(cst.ensure_type(cst.parse_expression("update(a, b)"), cst.Call), params["force"]) == []
    assert splatted_for(cst.ensure_type(cst.parse_expression("update(*c, force=f)"), cst.Call), params["force"]) == []


def test_a_splatted_scan_carry_traces_the_parameters_it_fills() -> None:
    _, facts = _facts(SPLATTED)
    update, _ = _function(facts, "update")
    _, inside = _return_site(facts, update)
    for name in ("position", "velocity", "force"):
        traced = facts.traced_value(cst.Name(name), inside)
        assert traced is not None and traced.reason == "a parameter of `body`, traced by `jax.lax.scan`", name
    # `dt` and `limit` may only come from the module's constant (or a traced `carry` element)
    traced = facts.traced_value(cst.Name("limit"), inside)
    assert traced is not None and traced.parameter.name == "carry"


# -- a local name's value, one line up ---------------------------------------------------------

def test_local_value_is_the_one_earlier_assignment_in_the_same_scope() -> None:
    module, facts = _facts("""
        import jax.numpy as jnp

        def f(y, z):
            r = jnp.sqrt(y)
            twice = y
            twice = 2 * y
            return jnp.where(y > 0, r, twice), z, late

        late = 1.0
    """)
    function, _ = _function(facts, "f")
    _, inside = _return_site(facts, function)
    found = facts.local_value(cst.Name("r"), inside)
    assert found is not None and module.code_for_node(found[0]) == "jnp.sqrt(y)"
    assert found[1].scope is inside.scope and found[1].order < inside.order
    assert facts.local_value(cst.Name("twice"), inside) is None  # reassigned
    assert facts.local_value(cst.Name("z"), inside) is None      # a parameter
    assert facts.local_value(cst.Name("late"), inside) is None   # another scope's


def test_infinite_constants() -> None:
    from odelint.analysis import jax_api

    _, facts = _facts("import math\nimport numpy as np\nimport jax.numpy as jnp\n")
    scope = facts.index.module_scope
    for spelled in ("jnp.inf", "np.inf", "math.inf"):
        assert jax_api.infinite(facts.qualname(cst.parse_expression(spelled), scope)), spelled
    assert not jax_api.infinite(facts.qualname(cst.parse_expression("jnp.nan"), scope))
    assert not jax_api.infinite(None)
