"""The `ast` sketch that rules' pre-checks read before any LibCST parse (odelint.analysis.sketch).

Every answer may say "maybe" too often but never too rarely: tests/test_gate.py lints every
fixture, program and example with and without the gate (pre-checks included) and expects the
same findings; here each fact is pinned on small programs, in both directions.
"""

from __future__ import annotations

import ast
import textwrap

import pytest
from odelint.analysis.sketch import Sketch
from odelint.analysis.sketch_modules import _imported_modules, _scanned_imports
from odelint.api.registry import rule_for as rule_by_code
from odelint.engine.core import candidates, lint_source


def sketch(code: str, path: str | None = None) -> Sketch:
    return Sketch(ast.parse(textwrap.dedent(code)), path)


def names(functions) -> set[str]:
    return {getattr(f, "name", "lambda") for f in functions}


# -- names ----------------------------------------------------------------------------------

def test_names_resolve_through_imports_and_aliases() -> None:
    s = sketch("""
        import jax.numpy as jnp
        from jax import random as jr
        import equinox
        where = jnp.where
        Module = equinox.Module
        where(x > 0, x, 0)
        jr.normal(key)
    """)
    assert all(s.mentions(name) for name in ("jax.numpy.where", "jax.random.normal", "equinox.Module"))
    assert s.mentions("jax.numpy") and not s.mentions("jax.random.uniform")
    assert s.refers_to("jax.numpy") and s.refers_to("equinox") and not s.refers_to("optax")
    assert s.refers_to("jax") and not s.refers_to("jax.num") and not s.mentions("jax")  # whole parts only
    assert [ast.unparse(c) for c in s.calls_to({"jax.numpy.where"})] == ["where(x > 0, x, 0)"]


def test_calls_to_finds_every_call_that_may_mean_the_name() -> None:
    """`calls_to` looks only at bare-name calls and at attributes named like the wanted name's
    last part: sound while no old spelling of the table changes a last part (`jax.util.partial`
    -> `functools.partial`), which this pins, and compared here with asking every call."""
    from odelint.analysis import jax_api

    renamed = {old: new for old, new in jax_api._api()["aliases"].items()
               if old.rpartition(".")[2] != new.rpartition(".")[2]}
    assert renamed == {}
    s = sketch("""
        import jax, functools
        from jax import jit as compile_it, util
        j = jax.jit
        f = jax.jit(g)
        compile_it(h)(x)
        j(k)
        util.partial(jax.jit, static_argnums=1)
        functools.partial(f, 1)
        obj.jit(z)
    """)
    for wanted in ({"jax.jit"}, {"functools.partial"}, {"jax.jit", "functools.partial"}):
        every = [call for call in s.calls if s.qualnames(call.func) & wanted]
        assert s.calls_to(wanted) == every  # in the order of `calls`
    assert {ast.unparse(c) for c in s.calls_to({"jax.jit"})} == {"jax.jit(g)", "compile_it(h)", "j(k)"}

def test_imports_name_modules_and_what_is_inside_them() -> None:
    s = sketch("from jax.experimental import host_callback\nimport jax.config\n")
    assert s.imports("jax.experimental.host_callback") and s.imports("jax.config")
    assert s.imports("jax.experimental") and s.imports("jax")  # something inside them is imported
    assert not s.imports("jax.tree_map") and not s.imports("jax.exp") and not s.imports("jax.experimental.host")


# -- traced and differentiated code ---------------------------------------------------------

def test_traced_functions_follow_roots_calls_and_wrappers() -> None:
    s = sketch("""
        import jax
        from jax import lax

        def helper(x):
            return x

        def body(c, x):
            return helper(c), x

        def step(x):
            return lax.scan(body, x, None, length=3)

        fast = jax.jit(step)

        @jax.vmap
        def mapped(x):
            return x

        def host(x):
            return x
    """)
    assert names(s.traced_functions()) == {"step", "body", "helper", "mapped"}
    assert names(s.differentiated_functions()) == set()


def test_instances_called_in_traced_code_run_their_call_method() -> None:
    s = sketch("""
        import jax

        class Net:
            def __call__(self, x):
                return x

        class Unused:
            def __call__(self, x):
                return x

        def loss(model: Net, x):
            return model(x)

        jax.grad(loss)(Net(), 1.0)
    """)
    assert names(s.differentiated_functions()) == {"loss", "__call__"}
    assert len(s.differentiated_functions()) == 2  # Net.__call__ only: Unused is never named


def test_nodes_in_reached_functions_include_nested_code_once() -> None:
    s = sketch("""
        import jax

        @jax.jit
        def f(x):
            def inner(y):
                print(y)
            print(x)
            return inner(x)
    """)
    prints = [n for n in s.nodes_in(s.traced_functions(), ast.Call) if ast.unparse(n.func) == "print"]
    assert len(prints) == 2


# -- loops, arrays, modules -----------------------------------------------------------------

def test_repeats_sees_loops_and_functions_called_in_loops() -> None:
    s = sketch("""
        import jax

        def make(x):
            return jax.jit(lambda y: y)(x)

        def once(x):
            return jax.jit(lambda y: y)(x)

        for i in range(3):
            make(i)
        [jax.jit(abs) for _ in range(2)]
    """)
    jits = sorted(s.calls_to({"jax.jit"}), key=lambda call: call.lineno)
    assert [s.repeats(call) for call in jits] == [True, False, True]


def test_may_be_array_rules_out_plain_containers_and_other_libraries() -> None:
    s = sketch("""
        import numpy as np
        import jax.numpy as jnp

        table = {}
        buffer = np.zeros(3)
        counts = dict()
        weights = jnp.zeros(3)

        def update(values: jnp.ndarray, n):
            return values

        def never_called(labels):
            return labels

        update(weights, 1)
    """)
    def name(text: str) -> ast.expr:
        return ast.parse(text, mode="eval").body
    assert not s.may_be_array(name("table")) and not s.may_be_array(name("buffer"))
    assert not s.may_be_array(name("counts")) and not s.may_be_array(name("labels"))  # no call site passes one
    assert s.may_be_array(name("weights")) and s.may_be_array(name("values"))
    assert not s.may_be_array(name("n"))  # the only call passes `1`
    assert s.may_be_array(name("weights[0]")) and not s.may_be_array(name("table['a']"))


def _project(folder, **files: str) -> str:
    """A project (a pyproject.toml) holding these files; the path of its `train.py`, to sketch."""
    (folder / "pyproject.toml").write_text("")
    for name, text in files.items():
        (folder / f"{name}.py").write_text(text)
    return str(folder / "train.py")


def test_may_hold_modules_looks_at_the_project_files_imported(tmp_path) -> None:
    train = _project(tmp_path, model="import equinox as eqx\n\nclass Net(eqx.Module):\n    w: int\n",
                     data="import numpy as np\n\ndef load():\n    return np.zeros(3)\n")
    assert sketch("from model import Net\n", train).may_hold_modules()
    assert not sketch("from data import load\nimport jax\n", train).may_hold_modules()
    assert sketch("import diffrax\nsolver = diffrax.Tsit5()\n").may_hold_modules()


def test_may_hold_modules_follows_project_imports_wherever_a_statement_holds_them(tmp_path) -> None:
    """A project file's imports are read from its statements (in a function, a `try`, a
    parenthesised list, after `;`), and through its own project imports in turn."""
    train = _project(tmp_path, model="def make():\n    try:\n        x = 1; import os, equinox\n"
                                      "    except ImportError:\n        pass\n",
                     layers="def build():\n    from model import (\n        make,\n    )\n",
                     plain="import numpy as np\n\ndef f():\n    from helpers import (\n        g,\n    )\n",
                     helpers="import jax\n\ng = jax.numpy.zeros\n")
    assert sketch("from layers import build\n", train).may_hold_modules()
    assert not sketch("import numpy as np\nimport plain\n", train).may_hold_modules()
    (tmp_path / "helpers.py").write_text("import jax\nif jax:\n    from diffrax import Tsit5\n")
    assert sketch("import numpy as np\nimport plain\n", train).may_hold_modules()
    # a usage example in a docstring imports nothing; the import after the docstring does
    (tmp_path / "helpers.py").write_text('"""Usage:\n\n    import equinox as eqx\n"""\nimport jax\n')
    assert not sketch("import plain\n", train).may_hold_modules()
    (tmp_path / "helpers.py").write_text('"""Usage: see below."""\nimport equinox as eqx\n')
    assert sketch("import plain\n", train).may_hold_modules()


@pytest.mark.parametrize("text", [
    "import os\nfrom . import layers as l\n\ndef f():\n    from equinox import nn\n",
    "from model import (\n    Net,  # the network\n    make,\n)\nimport numpy as np\n",
    "from a.b import c, \\\n    d\nx = 1\n",
    '"""Tools."""\nimport jax\n\ndef g():\n    """Nothing here."""\n    return jax\n',
    "x = 1\n",
])
def test_a_project_files_imports_are_read_from_its_import_lines_as_a_parse_reads_them(text) -> None:
    assert sorted(_scanned_imports(text) or []) == sorted(_imported_modules(ast.parse(text)))
    assert _scanned_imports(text) is not None


@pytest.mark.parametrize("text", [
    "x = 1; import equinox\n",                        # after `;`
    "try: import equinox\nexcept ImportError: pass\n",  # after `:`
    '"""Usage:\n\n    import equinox as eqx\n"""\n',  # a docstring\'s example imports nothing
    "# you may import this module\n",                 # prose
    "from a import (b,  # )\n    c)\n",                # a bracket in a comment
])
def test_an_import_word_the_lines_cannot_settle_leaves_the_file_to_a_parse(text) -> None:
    assert _scanned_imports(text) is None


# -- the engine's use of it -----------------------------------------------------------------

PLAIN_JAX = """
import jax
import jax.numpy as jnp


def loss(w, x):
    return jnp.sum((w * x) ** 2)


grad = jax.grad(loss)
print(jax.jit(grad)(jnp.ones(3), jnp.ones(3)))
"""


def test_a_jax_file_with_no_candidate_is_not_parsed_by_libcst() -> None:
    assert not lint_source(PLAIN_JAX, "plain.py").parsed
    assert lint_source(PLAIN_JAX, "plain.py", gate=False).parsed


@pytest.mark.parametrize(("code", "rule"), [
    ("import jax\n\n@jax.jit\ndef f(x):\n    if x > 0:\n        return x\n    return -x\n", "ODL702"),
    ("import jax\n\n@jax.jit\ndef f(x):\n    print(x)\n    return x\n", "ODL703"),
    ("import jax\nk = jax.random.PRNGKey(0)\na = jax.random.normal(k)\nb = jax.random.normal(k)\n", "ODL704"),
    ("import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1.0\n", "ODL701"),
])
def test_candidates_keep_the_rule_that_can_fire(code: str, rule: str) -> None:
    chosen = {r.code for r in candidates(code, "f.py", [rule_by_code(rule)])}
    assert chosen == {rule}
    assert rule in {f.code for f in lint_source(code, "f.py").findings}


@pytest.mark.parametrize(("code", "rule"), [
    ("import jax\n\ndef f(x):\n    if x > 0:\n        return x\n    return -x\n", "ODL702"),
    ("import jax\n\ndef f(x):\n    print(x)\n    return x\n", "ODL703"),
    ("import jax\nk = jax.random.PRNGKey(0)\na = jax.random.normal(k)\n", "ODL704"),
    ("import numpy as np\nimport jax\nx = np.zeros(3)\nx[0] = 1.0\n", "ODL701"),
])
def test_candidates_drop_the_rule_that_cannot(code: str, rule: str) -> None:
    assert candidates(code, "f.py", [rule_by_code(rule)]) == []


def test_text_cpython_cannot_parse_keeps_every_rule() -> None:
    rule = rule_by_code("ODL702")
    assert candidates("import jax\ndef broken(:\n", "f.py", [rule]) == [rule]
