"""The pre-checks of ODL701, ODL706 and ODL710 on the `ast` sketch (odelint.analysis.sketch_arrays).

Each condition is pinned both ways: code the pre-check keeps, on which the rule really fires,
and similar code it drops, on which the rule cannot fire (`candidates` leaves the rule out).
"""

from __future__ import annotations

import ast
import textwrap

import pytest
from odelint.analysis.sketch import Sketch
from odelint.api.registry import rule_for as rule_by_code
from odelint.engine.core import candidates, lint_source

HEAD = "import functools\nimport jax\nimport jax.numpy as jnp\nimport numpy as np\n"


def kept_and_fires(code: str, rule: str) -> None:
    source = HEAD + textwrap.dedent(code)
    assert [r.code for r in candidates(source, "f.py", [rule_by_code(rule)])] == [rule]
    assert rule in {f.code for f in lint_source(source, "f.py", gate=False).findings}


def dropped(code: str, rule: str) -> None:
    source = HEAD + textwrap.dedent(code)
    assert candidates(source, "f.py", [rule_by_code(rule)]) == []
    assert rule not in {f.code for f in lint_source(source, "f.py", gate=False).findings}


# -- ODL701: which values may be arrays --------------------------------------------------------

ODL701_KEPT = {
    "a field of `self` the class declares a JAX array": """
        class Layer:
            w: jax.Array

            def update(self):
                self.w[0] = 1.0
    """,
    "a parameter some call passes an array": """
        def write(x):
            x[0] = 1.0
        write(jnp.zeros(3))
    """,
    "a parameter passed one through jax.jit(f)(...)": """
        def write(x):
            x[0] = 1.0
        jax.jit(write)(jnp.zeros(3))
    """,
    "a parameter annotated jax.Array, never called": """
        def write(x: jax.Array):
            x[0] = 1.0
    """,
    "what a function of the file returns": """
        def make():
            return jnp.zeros(3)
        x = make()
        x[0] = 1.0
    """,
    "a for target over a display of arrays": """
        def fill():
            for x in [jnp.zeros(3), jnp.ones(3)]:
                x[0] = 1.0
    """,
    "a for target over a name assigned a display of arrays": """
        rows = (jnp.zeros(3), jnp.ones(3))
        for row in rows:
            row[1] = 2.0
    """,
    "a tuple position a function returns an array at": """
        def make():
            return 0, jnp.zeros(3)
        n, x = make()
        x[0] = 1.0
    """,
    "an array method of an array, a view of an array": """
        x = jnp.ones((2, 2)).reshape(4)
        x[0] = 1.0
        y = jnp.ones((2, 2)).T
        y[0] = 1.0
    """,
    "a field __init__ assigns an array": """
        class Box:
            def __init__(self):
                self.w = jnp.zeros(3)

            def reset(self):
                self.w[0] = 0.0
    """,
    "a parameter of __init__ the class's call passes an array": """
        class Holder:
            def __init__(self, w):
                w[0] = 1.0
                self.w = w
        Holder(jnp.zeros(3))
    """,
    "an array assigned last, after a list": """
        def fill():
            x = [0.0, 0.0]
            x = jnp.zeros(3)
            x[0] = 1.0
    """,
    "an array assigned last, a list stored into it": """
        def fill():
            x = jnp.zeros(3)
            x[0] = x.tolist()
    """,
    "a module name bound by `global` in a function": """
        def start():
            global buffer
            buffer = jnp.zeros(3)

        def write():
            buffer[0] = 1.0
    """,
}

ODL701_DROPPED = {
    "a field of a value no method calls its first parameter (only `self.w` is typed)": """
        class Layer:
            def __init__(self):
                self.w = jnp.zeros(3)

        def update(m):
            m.w[0] = 1.0
    """,
    "a field the class declares a NumPy array (jax's fragmented_array.py)": """
        class Fragmented:
            registers: np.ndarray

            def store(self, i, register):
                self.registers[i] = register
    """,
    "a parameter no call passes an array": """
        def write(x):
            x[0] = 1.0
        write(np.zeros(3))
        write([0.0, 1.0])
    """,
    "a parameter passed one only through functools.partial": """
        def write(x):
            x[0] = 1.0
        functools.partial(write)(jnp.zeros(3))
    """,
    "a string annotation declares nothing": """
        def write(x: "jax.Array"):
            x[0] = 1.0
    """,
    "what a function returning NumPy arrays returns": """
        def make():
            return np.zeros(3)
        x = make()
        x[0] = 1.0
    """,
    "the other tuple position": """
        def make():
            return jnp.zeros(3), np.zeros(3)
        x, y = make()
        y[0] = 1.0
    """,
    "a method of a value that is no array, a view of a NumPy array": """
        rows = {"a": [1.0]}
        x = rows.copy()
        x["a"] = 1.0
        y = np.ones((2, 2)).T
        y[0] = 1.0
    """,
    "a field only other methods assign an array": """
        class Box:
            def __init__(self):
                self.w = np.zeros(3)

            def grow(self):
                self.w = jnp.zeros(3)

            def reset(self):
                self.w[0] = 0.0
    """,
    "a parameter of __init__ the class's calls pass no array": """
        class Holder:
            def __init__(self, w):
                w[0] = 1.0
                self.w = w
        Holder([0.0, 1.0])
        Holder(np.zeros(3))
    """,
    "a list assigned after the array, before the store": """
        def fill():
            x = jnp.zeros(3)
            x = x.tolist()
            x[0] = 1.0
    """,
    "the same name holding an array in another function": """
        def make():
            pe = jnp.zeros(3)
            return pe

        def fill():
            pe = np.zeros(3)
            pe[0] = 1.0
    """,
}


@pytest.mark.parametrize("code", ODL701_KEPT.values(), ids=ODL701_KEPT.keys())
def test_odl701_keeps_values_the_model_may_call_arrays(code: str) -> None:
    kept_and_fires(code, "ODL701")


@pytest.mark.parametrize("code", ODL701_DROPPED.values(), ids=ODL701_DROPPED.keys())
def test_odl701_drops_values_the_model_cannot_call_arrays(code: str) -> None:
    dropped(code, "ODL701")


def test_names_outside_the_file_fall_back_to_every_binding_of_the_name() -> None:
    sketch = Sketch(ast.parse(HEAD + "def f(n):\n    pass\nw = jnp.zeros(3)\nf(1)\n"))
    def name(text: str) -> ast.expr:
        return ast.parse(text, mode="eval").body
    assert sketch.may_be_array(name("w")) and sketch.may_be_array(name("w[0] + 1"))
    assert not sketch.may_be_array(name("n")) and not sketch.may_be_array(name("len(w)"))


def test_keys_are_followed_as_the_model_follows_them() -> None:
    """`may_be_array_or_key` over-approximates `Facts.kind` ARRAY or KEY: a key made, split and
    unpacked, declared, or passed; `may_be_array` still says no to keys."""
    sketch = Sketch(ast.parse(HEAD + textwrap.dedent("""
        from jaxtyping import PRNGKeyArray

        def init(seed: int, key: PRNGKeyArray, given, width: float):
            made = jax.random.PRNGKey(seed)
            key, sub = jax.random.split(key)
            first = jax.random.split(made)[0]
            for k in [made, sub]:
                pass
            return width

        init(0, None, jax.random.key(1), 2.0)
    """)))

    def value(text: str) -> ast.expr:
        return ast.parse(text, mode="eval").body

    for name in ("made", "sub", "key", "first", "k", "given"):
        assert sketch.arrays.may_be_array_or_key(value(name)), name
        assert not sketch.may_be_array(value(name)), name
    for name in ("seed", "width", "width * 2", "[made]"):
        assert not sketch.arrays.may_be_array_or_key(value(name)), name


# -- ODL710: traced values ---------------------------------------------------------------------

def test_odl710_keeps_a_name_derived_from_a_traced_parameter() -> None:
    kept_and_fires("""
        @jax.jit
        def lookup(x):
            y = x * 2
            return {y: 1.0}
    """, "ODL710")


def test_odl710_keeps_arguments_of_a_cached_function_run_through_a_wrapper() -> None:
    kept_and_fires("""
        @functools.lru_cache(maxsize=None)
        def basis(n):
            return n

        fast = jax.jit(basis)
        fast(n=jnp.ones(3))
    """, "ODL710")


def test_odl710_drops_a_loop_variable_named_like_a_traced_parameter_elsewhere() -> None:
    dropped("""
        @jax.jit
        def scale(x, k):
            return x * k

        @jax.jit
        def table(x):
            found = {}
            for k in ("a", "b"):
                found[k] = x
            return found
    """, "ODL710")


def test_odl710_drops_static_views_of_traced_values() -> None:
    dropped("""
        @jax.jit
        def shapes(x):
            return {x.shape: 1, len(x): 2, x.ndim: 3}
    """, "ODL710")


def test_odl710_drops_the_name_of_a_function_a_traced_function_is_given() -> None:
    """flowjax's `_vectorize(self, method)` looks `method.__name__` up in a dict: a function's
    name is a string, whatever traces the code around it."""
    dropped("""
        @jax.jit
        def apply(method, x):
            shapes = {"sample": (), "log_prob": (3,)}
            return shapes[method.__name__], {type(x).__qualname__: x.__class__}
    """, "ODL710")


# -- ODL706: a branch singular where the guard deselects -----------------------------------------

ODL706_KEPT = {
    "sqrt of the guarded variable, false side": "jnp.where(x > 0, jnp.sqrt(x), 0.0)",
    "a division, true side": "jnp.where(x == 0, 0.0, 1 / x)",
    "a fractional literal power": "jnp.where(x > 0, x ** (1 / 2), 0.0)",
}
ODL706_DROPPED = {
    "the guard keeps the singular inputs": "jnp.where(x > 0, 0.0, jnp.sqrt(x))",
    "another variable": "jnp.where(x > 0, jnp.sqrt(y), 0.0)",
    "a guard with no number": "jnp.where(x > y, jnp.sqrt(x), 0.0)",
    "a whole power": "jnp.where(x > 0, x ** 2, 0.0)",
    "a guard away from the singular inputs": "jnp.where(x < -1, 0.0, 1 / x)",
}


@pytest.mark.parametrize("expression", ODL706_KEPT.values(), ids=ODL706_KEPT.keys())
def test_odl706_keeps_a_guard_deselecting_singular_inputs(expression: str) -> None:
    kept_and_fires(f"def f(x, y):\n    return {expression}\n", "ODL706")


@pytest.mark.parametrize("expression", ODL706_DROPPED.values(), ids=ODL706_DROPPED.keys())
def test_odl706_drops_guards_that_cannot_be_flagged(expression: str) -> None:
    dropped(f"def f(x, y):\n    return {expression}\n", "ODL706")


def test_at_update_statements_are_found_on_the_sketch() -> None:
    import ast

    from odelint.analysis.sketch_arrays import at_update_statement

    def statement(code: str) -> bool:
        node = ast.parse(code).body[0]
        assert isinstance(node, ast.Expr)
        return at_update_statement(node)

    assert statement("x.at[0].set(1)") and statement("self.u.at[i].add(v)") and statement("x.at[0].mul(2).at[1].max(0)")
    assert not statement("x.at[0].get()") and not statement("x.set(1)") and not statement("f(x.at[0].set(1))")
