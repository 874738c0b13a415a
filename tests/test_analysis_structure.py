"""Facts.structure / Facts.returned_structure: the pytree structure a value visibly has."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from odelint.analysis.facts import Facts
from odelint.analysis.scopes import Site, build_scope_index

PROGRAM = """
import jax.numpy as jnp

y0 = jnp.array([1.0, 2.0])
pair = (1.0, 2.0)
again = y0
twice = [1.0]
twice = (1.0,)

def as_list(t, y, args):
    return [-y[0], -y[1]]

def as_array(t, y, args):
    if t > 1:
        return jnp.zeros(2)
    return jnp.stack([-y[0], -y[1]])

def mixed(t, y, args):
    if t > 1:
        return [y]
    return jnp.zeros(2)

def unknown(t, y, args):
    return -y

tupled = lambda t, y, args: (y[1], -y[0])
"""


@pytest.fixture(scope="module")
def model() -> tuple[Facts, cst.Module, Site]:
    module = cst.parse_module(textwrap.dedent(PROGRAM))
    index = build_scope_index(module, {cst.Call})
    return Facts(index), module, Site(index.module_scope, 10**9)


@pytest.mark.parametrize("expression, expected", [
    ("y0", "array"), ("pair", "tuple"), ("again", "array"), ("[1, 2]", "list"), ("{'a': 1}", "dict"),
    ("jnp.ones(3)", "array"), ("-jnp.ones(3)", "array"), ("2.0 * jnp.sin(y0)", "array"), ("-pair", None),
    ("[1.0] * 2", None), ("twice", None), ("1.0", None), ("undefined", None),
])
def test_structure(model, expression: str, expected: str | None) -> None:
    facts, _, end = model
    assert facts.structure(cst.parse_expression(expression), end) == expected


@pytest.mark.parametrize("name, expected", [
    ("as_list", "list"), ("as_array", "array"), ("mixed", None), ("unknown", None), ("tupled", "tuple"),
])
def test_returned_structure(model, name: str, expected: str | None) -> None:
    facts, module, _ = model
    function: cst.FunctionDef | cst.Lambda | None = None
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            function = statement
        elif isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Assign):
            assign = statement.body[0]
            if isinstance(assign.value, cst.Lambda) and assign.targets[0].target.value == name:  # type: ignore[attr-defined]
                function = assign.value
    assert function is not None
    assert facts.returned_structure(function) == expected
