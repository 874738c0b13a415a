"""Reading a call's arguments: keywords win, and `*args` hides every position."""

from __future__ import annotations

import libcst as cst
import pytest
from odelint.analysis.calls import argument_at, keyword_arg, positional_args, source_of, text_of


def _call(code: str) -> cst.Call:
    call = cst.parse_expression(code)
    assert isinstance(call, cst.Call)
    return call


def _code(arg: cst.Arg | None) -> str | None:
    return None if arg is None else cst.Module([]).code_for_node(arg.value)


def test_keyword_arg_finds_only_that_keyword() -> None:
    call = _call("f(a, params=p, argnums=(0, 1))")
    assert _code(keyword_arg(call, "argnums")) == "(0, 1)"
    assert keyword_arg(call, "a") is None


@pytest.mark.parametrize(("code", "plain", "before_star"), [
    ("f(a, b, k=c)", ["a", "b"], ["a", "b"]),
    ("f(a, *rest, b)", None, ["a"]),
    ("f(a, **options)", None, ["a"]),
    ("f()", [], []),
])
def test_positional_args_hide_positions_behind_a_star(code, plain, before_star) -> None:
    call = _call(code)
    got = positional_args(call)
    assert (None if got is None else [_code(a) for a in got]) == plain
    assert [_code(a) for a in positional_args(call, before_star=True)] == before_star


@pytest.mark.parametrize(("code", "name", "position", "expected"), [
    ("f(x, y, t1=z)", "t1", 3, "z"),        # keyword wins
    ("f(x, y, z)", "t1", 2, "z"),           # else the position
    ("f(x, y)", "t1", 2, None),             # not passed
    ("f(x, *rest)", "t1", 0, None),         # a star hides positions
    ("f(x, *rest, t1=z)", "t1", 3, "z"),    # but not keywords
    ("f(x, y)", None, 1, "y"),
    ("f(x, y)", "y", None, None),
    ("f(x, y)", None, -1, None),            # more bound parameters than passed
])
def test_argument_at(code, name, position, expected) -> None:
    assert _code(argument_at(_call(code), name, position)) == expected


def test_source_of_is_one_line_and_cut() -> None:
    module = cst.parse_module("f(\n    a,\n    b,\n)\n")
    node = module.body[0].body[0].value
    assert source_of(module, node) == "f( a, b, )"
    assert source_of(module, node, limit=6) == "f( ..."
    assert source_of(None, node) == "..."


@pytest.mark.parametrize("code", [
    "jax.jit", "jit", "eqx.filter_value_and_grad", "jax . jit", "jax. jit", "jax .jit", "(jax.jit)", "(jax).jit",
    "(jax . lax).scan", "(\n    jax\n    .jit\n)", "jax.jit(f)", "partial(jax.jit, static_argnums=1)", "a[0].b",
    "f(x).y", "((a))",
])
def test_text_of_renders_as_libcst_does(code: str) -> None:
    """A plain dotted name is joined, not rendered: the text must be the renderer's, spaces,
    parentheses and line breaks included, in a CRLF file too."""
    source = f"x = {code}\n"
    for newline in ("\n", "\r\n"):
        module = cst.parse_module(source.replace("\n", newline))
        node = cst.ensure_type(cst.ensure_type(module.body[0], cst.SimpleStatementLine).body[0], cst.Assign).value
        assert text_of(node, module) == module.code_for_node(node)
        assert text_of(node) == cst.Module([]).code_for_node(node)
