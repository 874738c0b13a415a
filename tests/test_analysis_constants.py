"""Facts.number: the number an expression always evaluates to."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from odelint.analysis.facts import Facts
from odelint.analysis.scopes import Site, build_scope_index


def _number(program: str, expression: str) -> float | None:
    index = build_scope_index(cst.parse_module(textwrap.dedent(program)), {cst.Call})
    return Facts(index).number(cst.parse_expression(expression), Site(index.module_scope, 10**9).scope)


@pytest.mark.parametrize("program, expression, expected", [
    ("", "0.0", 0.0),
    ("", "-1e-3", -1e-3),
    ("dt = 0.1\n", "dt", 0.1),
    ("dt = 0.1\n", "-dt", -0.1),
    ("t0, t1 = 0.0, 2.0\nn = 4\n", "2.0 / n", 0.5),
    ("t1 = 1.0\nt0 = 3.0\n", "t1 - t0", -2.0),
    ("step = 0\nsmall = step * 10\n", "small", 0.0),
])
def test_known_numbers(program: str, expression: str, expected: float) -> None:
    assert _number(program, expression) == pytest.approx(expected)


@pytest.mark.parametrize("program, expression", [
    ("", "x"),                                       # unbound
    ("dt = 0.1\ndt = 0.2\n", "dt"),                  # assigned twice
    ("dt, other = 0.1, 0.2\n", "dt"),                # unpacked: not followed
    ("def f(dt):\n    return dt\n", "dt"),           # a parameter
    ("n = 0\n", "1.0 / n"),                          # division by zero is no number
    ("import jax.numpy as jnp\n", "jnp.zeros(3)"),  # a call
    ("dt = dt\n", "dt"),                             # a cycle
])
def test_unknown_numbers(program: str, expression: str) -> None:
    assert _number(program, expression) is None
