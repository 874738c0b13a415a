"""The one literal reader (odelint.analysis.literals), and the places that used to read
literals their own way: `0x1`, `1_0`, `-1` and tuples mean what Python says everywhere."""

from __future__ import annotations

import ast
import textwrap

import libcst as cst
import pytest
from odelint.analysis import literals
from odelint.engine.core import lint_source


@pytest.mark.parametrize(("text", "expected"), [
    ("1", 1), ("0x1", 1), ("0o17", 15), ("0b101", 5), ("1_0", 10), ("-1", -1), ("+2", 2), ("-0x10", -16),
    ("1.0", None), ("x", None), ("'1'", None), ("(1,)", None), ("-x", None),
])
def test_integer(text: str, expected: int | None) -> None:
    assert literals.integer(cst.parse_expression(text)) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("0x1", {1}), ("(0, 2)", {0, 2}), ("[1_0, -1]", {10, -1}), ("(0x1,)", {1}), ("()", set()),
    ("(0, n)", None), ("n", None), ("(0, '1')", None),
])
def test_integers(text: str, expected: set[int] | None) -> None:
    """Both trees: the Sketch reads `static_argnums=` as the rules do."""
    for found in (literals.integers(cst.parse_expression(text)), literals.ast_integers(_ast(text))):
        assert (None if found is None else set(found)) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("'a'", {"a"}), ("('a', \"b\")", {"a", "b"}), ("['a' 'b']", {"ab"}), ("('a', n)", None), ("f'{a}'", None),
])
def test_strings(text: str, expected: set[str] | None) -> None:
    """Both trees: the Sketch reads `static_argnames=` as the rules do."""
    for found in (literals.strings(cst.parse_expression(text)), literals.ast_strings(_ast(text))):
        assert (None if found is None else set(found)) == expected


def _ast(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


@pytest.mark.parametrize(("text", "expected"), [
    ("1e-6", 1e-6), ("-1", -1.0), ("0x10", 16.0), ("1_000.5", 1000.5), ("-(2)", -2.0), ("x", None), ("True", None),
])
def test_number(text: str, expected: float | None) -> None:
    assert literals.number(cst.parse_expression(text)) == expected


@pytest.mark.parametrize("text", [
    "'a'", '"a"', "''", '""', "'''a'''", '""""""', '"""a "quoted" b"""', '"""it\'s"""', "'a\\nb'", "'\\''",
    "r'a\\b'", "b'a'", "u'a'", "'\\x41'", "'''a\nb'''", "'''a\r\nb'''", "'é'", "R'x'", "Rb'x'",
])
def test_a_string_reads_as_python_reads_it(text: str) -> None:
    """The quick reading of a string with no prefix, escape or carriage return, and LibCST's
    (`ast.literal_eval`) for the rest, give Python's value: bytes are no `str`."""
    node = cst.parse_expression(text)
    expected = ast.literal_eval(text)
    assert literals.string(node) == (expected if isinstance(expected, str) else None)


@pytest.mark.parametrize("text", ["0", "00", "0_0", "7", "1_000", "0x1F", "0X1f", "0o17", "0O17", "0b1_01", "0B1",
                                  "1.5", "1e-6", "1E+3", "1_0.5_5", ".5", "5.", "1e1_0", "0.1", "12345.6789e-3"])
def test_a_number_reads_as_python_reads_it(text: str) -> None:
    value = literals.number(cst.parse_expression(text))
    assert value == float(ast.literal_eval(text)) and type(value) is float


def _lint(source: str, *codes: str) -> list[tuple[str, int]]:
    result = lint_source(textwrap.dedent(source), "example.py", codes=set(codes))
    assert not result.crashes, [crash.message() for crash in result.crashes]
    return [(finding.code, finding.span.line) for finding in result.findings]


BRANCHY = """
    import jax

    def f(x, n):
        if n > 0:
            return x
        return -x

    g = jax.jit(f, static_argnums={argnums})
"""


@pytest.mark.parametrize("argnums", ["0x1", "1", "(0x1,)", "[1]", "-1", "(-1,)", "1_0"])
def test_static_positions_in_any_spelling_make_the_test_static(argnums: str) -> None:
    """`static_argnums=0x1` used to be an internal error in ODL702; `-1` counts from the end."""
    expected = [("ODL702", 5)] if argnums == "1_0" else []  # position 10 is no parameter: `n` is traced
    assert _lint(BRANCHY.format(argnums=argnums), "ODL702") == expected


def test_argnums_in_hex_select_what_is_differentiated() -> None:
    source = """
        import jax

        def loss(w, x):
            return jax.pure_callback(lambda v: v, x, x).sum() * w

        grads = jax.grad(loss, argnums=0x1)
    """
    assert _lint(source, "ODL301", "ODL101", "ODL702", "ODL703", "ODL704") == _lint(
        source.replace("0x1", "1"), "ODL301", "ODL101", "ODL702", "ODL703", "ODL704")


def test_integer_index_in_hex_reads_the_same_element() -> None:
    source = """
        import jax

        def f(key):
            pair = jax.random.split(key)
            return jax.random.normal(pair[0x0]), jax.random.normal(pair[0])
    """
    assert _lint(source, "ODL701") == _lint(source.replace("0x0", "0"), "ODL701")


# -- the Sketch's `ast` side reads numbers the same way ---------------------------------------

@pytest.mark.parametrize("text", [
    "0x1", "1_000", "-1", "+2", "+-2", "-(0x10)", "0o17", "0b101", "1e-6", "-1_000.5", "1.0", "True", "-True",
    "None", "1j", "-1j", "x", "-x", "'1'", "(1,)", "1 + 2",
])
def test_both_trees_read_the_same_numbers(text: str) -> None:
    """`literals.integer`/`number` on LibCST and `ast_integer`/`ast_number` on CPython's `ast`
    agree (the engine's gate and the rules never disagree on a literal), and agree with Python."""
    libcst_node, ast_node = cst.parse_expression(text), ast.parse(text, mode="eval").body
    assert literals.integer(libcst_node) == literals.ast_integer(ast_node)
    assert literals.number(libcst_node) == literals.ast_number(ast_node)
    if text in ("x", "-x", "1 + 2", "True", "-True"):
        assert literals.number(libcst_node) is None  # not a number literal (a bool is not one)
        return
    value = eval(text, {})  # the test's own literals, as Python reads them
    number = type(value) in (int, float)
    assert literals.number(libcst_node) == (float(value) if number else None)
    assert literals.integer(libcst_node) == (value if type(value) is int else None)


def test_the_gate_reads_an_index_as_the_model_does() -> None:
    """`make()[+1]` is element 1 for the Sketch too: the gate keeps the file the model flags
    (it used to read only unsigned `ast.Constant` indexes and skipped it)."""
    source = textwrap.dedent("""
        import jax.numpy as jnp

        def make():
            return 1.0, jnp.zeros(3)

        y = make()[+1]
        table = {y: 1}
    """)
    for gate in (True, False):
        result = lint_source(source, "example.py", codes={"ODL710"}, gate=gate)
        assert [(finding.code, finding.span.line) for finding in result.findings] == [("ODL710", 8)]
