"""Transform applications (`facts.transform_applied`, `facts.transforms_decorating`, answered
by odelint.analysis.transformed) and the module facts they rely on: module classes through
same-file returns and tuple unpacking, callees through `f = jax.jit(f)`."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from odelint.analysis import Application
from odelint.analysis.facts import Facts
from odelint.analysis.scopes import Site, build_scope_index


class Program:
    def __init__(self, source: str) -> None:
        self.module = cst.parse_module(textwrap.dedent(source))
        self.index = build_scope_index(self.module, {cst.Call, cst.FunctionDef})
        self.facts = Facts(self.index)

    def applications(self) -> list[Application]:
        found = []
        for node, site in self.index.of_type(cst.Call):
            application = self.facts.transform_applied(node, site)
            if application is not None:
                found.append(application)
        for node, site in self.index.of_type(cst.FunctionDef):
            found += self.facts.transforms_decorating(node, site)
        return found

    def only(self) -> Application:
        found = self.applications()
        assert len(found) == 1, [a.qualname for a in found]
        return found[0]

    def modules(self, application: Application) -> dict[str, str | None]:
        """Parameter -> the module class it receives."""
        found = {}
        for param in application.parameters:
            module_class = self.facts.module_received(application, param)
            found[param.name] = module_class.name if module_class is not None else None
        return found

    def consumed(self, application: Application) -> dict[str, bool | None]:
        return {p.name: application.consumes(p) for p in application.parameters}


HEADER = """
import functools
import equinox as eqx
import jax
import jax.numpy as jnp
from jax import jit

def loss(m, x):
    return jnp.sum(m(x))

def make(key):
    return eqx.nn.MLP(2, 1, 8, 2, key=key), jnp.zeros(3)
"""


@pytest.mark.parametrize("tail, expected", [
    ("jax.jit(loss)(eqx.nn.MLP(2, 1, 8, 2, key=k), jnp.ones(2))", {"m": "equinox.nn.MLP", "x": None}),
    ("step = jit(loss)\nstep(eqx.nn.Linear(2, 1, key=k), 1.0)", {"m": "equinox.nn.Linear", "x": None}),
    ("loss = jax.jit(loss)\nmodel, state = make(k)\nloss(model, state)", {"m": "equinox.nn.MLP", "x": None}),
    ("net = make(k)[0]\njax.grad(functools.partial(loss, x=1.0))(eqx.nn.GRUCell(2, 2, key=k))",
     {"m": "equinox.nn.GRUCell"}),
    ("jax.vmap(functools.partial(loss, eqx.nn.MLP(2, 1, 8, 2, key=k)))(jnp.ones((3, 2)))", {"x": None}),
])
def test_which_module_reaches_each_parameter(tail: str, expected: dict) -> None:
    program = Program(HEADER + tail + "\n")
    assert program.modules(program.only()) == expected


def test_decorated_function_gets_modules_from_its_calls_and_annotations() -> None:
    program = Program("""
        import jax
        import equinox as eqx

        @jax.jit
        def step(model, other: eqx.nn.Linear, x):
            return model(x)

        step(eqx.nn.MLP(2, 1, 8, 2, key=None), None, 1.0)
    """)
    assert program.modules(program.only()) == {"model": "equinox.nn.MLP", "other": "equinox.nn.Linear", "x": None}


def test_disagreeing_calls_give_no_module() -> None:
    program = Program(HEADER + "f = jax.jit(loss)\nf(eqx.nn.MLP(2, 1, 8, 2, key=k), 1.0)\n"
                               "f(eqx.nn.Linear(2, 1, key=k), 1.0)\n")
    assert program.modules(program.only())["m"] is None


@pytest.mark.parametrize("transform, expected", [
    ("jax.jit(loss)", {"m": True, "x": True}),
    ("jax.jit(loss, static_argnums=0)", {"m": False, "x": True}),
    ("jax.jit(loss, static_argnames=('x',))", {"m": True, "x": False}),
    ("jax.jit(loss, static_argnums=n)", {"m": None, "x": None}),
    ("jax.grad(loss)", {"m": True, "x": False}),
    ("jax.value_and_grad(loss, argnums=(0, 1))", {"m": True, "x": True}),
    ("jax.grad(loss, argnums=1)", {"m": False, "x": True}),
    ("jax.vmap(loss)", {"m": True, "x": True}),
    ("jax.vmap(loss, in_axes=(None, 0))", {"m": False, "x": True}),
    ("jax.vmap(loss, in_axes=axes)", {"m": None, "x": None}),
    ("eqx.filter_grad(loss)", {"m": True, "x": False}),
])
def test_which_parameters_a_transform_consumes(transform: str, expected: dict) -> None:
    program = Program(HEADER + transform + "\n")
    assert program.consumed(program.only()) == expected


def test_partial_shifts_positions_and_drops_keyword_bound_parameters() -> None:
    program = Program(HEADER + "def f(a, b, c, d):\n    return a\n"
                               "jax.vmap(functools.partial(f, 1, d=2), in_axes=(None, 0))\n")
    application = program.only()
    assert [p.name for p in application.parameters] == ["b", "c"]
    assert [p.position for p in application.parameters] == [1, 2]
    assert program.consumed(application) == {"b": False, "c": True}


def test_keywords_and_calls_of_the_transformed_result() -> None:
    program = Program(HEADER + "g = jax.grad(loss, has_aux=True)\ng(1.0, 2.0)\ng(3.0, 4.0)\nloss(5.0, 6.0)\n")
    application = program.only()
    assert application.keywords == ("has_aux",)
    calls = program.facts.transformed_calls(application)
    assert [program.module.code_for_node(c) for c, _ in calls] == ["g(1.0, 2.0)", "g(3.0, 4.0)"]


def test_functions_of_other_files_and_jvp_are_no_applications() -> None:
    program = Program("import jax\nfrom lib import loss\njax.jit(loss)\njax.jvp(lambda x: x, (1.0,), (1.0,))\n")
    assert program.applications() == []


def test_module_class_through_returns_and_unpacking() -> None:
    program = Program(HEADER + "a, b = make(k)\nc = make(k)[0]\n"
                               "def single(key):\n    return eqx.nn.Linear(2, 2, key=key)\n"
                               "d = single(k)\n"
                               "def loop(key):\n    p, q = loop(key)\n    return p, q\n"
                               "e, f = loop(k)\n")
    end = Site(program.index.module_scope, 10**9)

    def name_of(expression: str) -> str | None:
        found = program.facts.module_class(cst.parse_expression(expression), end)
        return found.name if found is not None else None

    assert name_of("a") == "equinox.nn.MLP"
    assert name_of("b") is None
    assert name_of("d") == "equinox.nn.Linear"
    assert name_of("e") is None  # a function returning its own result: no answer, no endless loop


def test_callee_sees_through_a_rebinding_wrapper() -> None:
    program = Program("import jax\ndef step(x):\n    return x\nstep = jax.jit(step)\n"
                      "def other(x):\n    return x\nother = 3\n")
    scope = program.index.module_scope
    assert program.facts.callee(cst.Name("step"), scope).name.value == "step"
    assert program.facts.callee(cst.Name("other"), scope) is None


def test_each_application_is_worked_out_once_for_every_rule_that_asks() -> None:
    """ODL601 and ODL605 both check every application: the model answers the second from
    what it found for the first (the same objects), and a caller's list is its own."""
    program = Program("""
        import jax

        def loss(model, x):
            return model(x)

        @jax.jit
        def step(model, x):
            return model(x)

        g = jax.grad(loss)
    """)
    first, again = program.applications(), program.applications()
    assert [a.qualname for a in first] == ["jax.grad", "jax.jit"]
    assert all(a is b for a, b in zip(first, again, strict=True))
    function, site = next((node, site) for node, site in program.index.of_type(cst.FunctionDef)
                          if node.name.value == "step")
    program.facts.transforms_decorating(function, site).clear()
    assert len(program.facts.transforms_decorating(function, site)) == 1
