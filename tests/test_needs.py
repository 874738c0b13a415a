"""The vocabulary rules declare their pre-checks with (odelint.analysis.needs), each word on
small programs: it holds where the rule could fire and may hold too often, never too rarely."""

from __future__ import annotations

import ast
import textwrap

import pytest
from odelint.analysis import Needs
from odelint.analysis.needs import Need
from odelint.analysis.sketch import Sketch
from odelint.analysis.sketch_facts import FACTS
from odelint.api.registry import all_rules
from odelint.api.rule import Rule
from odelint.engine.core import lint_source


def sketch(source: str) -> Sketch:
    return Sketch(ast.parse(textwrap.dedent(source)), "example.py")


CASES: list[tuple[Need, str, bool]] = [
    (Needs.calls_to("optax.apply_updates"), "import optax as o\no.apply_updates(p, u)\n", True),
    (Needs.calls_to("optax.apply_updates"), "from optax import apply_updates as au\nau(p, u)\n", True),
    (Needs.calls_to("optax.apply_updates"), "import optax\nf = optax.apply_updates\n", False),
    (Needs.calls_to("diffrax.diffeqsolve", keywords=("progress_meter",)),
     "import diffrax\ndiffrax.diffeqsolve(t, s, 0, 1, 0.1, y, progress_meter=m)\n", True),
    (Needs.calls_to("diffrax.diffeqsolve", keywords=("progress_meter",)),
     "import diffrax\ndiffrax.diffeqsolve(t, s, 0, 1, 0.1, y)\n", False),
    (Needs.configures("jax.custom_jvp", keywords=("nondiff_argnums",)),
     "import functools, jax\n@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))\ndef f(g, x): ...\n", True),
    (Needs.configures("jax.custom_jvp", keywords=("nondiff_argnums",)),
     "import jax\n@jax.custom_jvp\ndef f(g, x): ...\n", False),
    (Needs.refers_to("equinox.filter_grad"), "import equinox as eqx\ng = eqx.filter_grad\n", True),
    (Needs.refers_to("equinox.filter_grad"), "import equinox as eqx\ng = eqx.filter_jit\n", False),
    (Needs.imports("jax.experimental.host_callback"), "from jax.experimental import host_callback\n", True),
    (Needs.mentions("jax.tree_map"), "import jax\njax.tree_util.tree_map(f, x)\n", False),
    (Needs.mentions("jax.tree_map"), "import jax\njax.tree_map(f, x)\n", True),
    (Needs.may_hold_modules(), "import equinox as eqx\nm = eqx.nn.MLP(2, 2, 8, 1, key=k)\n", True),
    (Needs.may_hold_modules(), "import numpy as np\n", False),
    (Needs.defines("__init__"), "class A:\n    def __init__(self): ...\n", True),
    (Needs.array_item_stores(), "import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1.0\n", True),
    (Needs.array_item_stores(), "x = [0, 0]\nx[0] = 1\n", False),
    (Needs.differentiated_calls_to("jax.lax.while_loop"),
     "import jax\ndef f(x):\n    return jax.lax.while_loop(c, b, x)\njax.grad(f)(1.0)\n", True),
    (Needs.differentiated_calls_to("jax.lax.while_loop"),
     "import jax\ndef f(x):\n    return jax.lax.while_loop(c, b, x)\nf(1.0)\n", False),
    (Needs.method_calls("update", positional=2), "u, s = opt.update(g, s)\n", True),
    (Needs.method_calls("update", positional=2), "u, s = opt.update(g, s, params)\n", False),
    (Needs.refers_to("optax.adamw") & Needs.may_hold_modules(), "import optax\nopt = optax.adamw(1e-3)\n", False),
    (Needs.refers_to("optax.adamw") | Needs.may_hold_modules(), "import optax\nopt = optax.adamw(1e-3)\n", True),
    (Needs.any_of([]), "import jax\n", False),
]


@pytest.mark.parametrize(("need", "source", "expected"), CASES, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(CASES)])
def test_word(need: Need, source: str, expected: bool) -> None:
    assert need.holds(sketch(source)) is expected


def test_every_rule_declares_its_needs_with_known_facts() -> None:
    """Every Python rule has a declaration (none would make every triggered file pay a parse),
    and the facts it names exist: a misspelt fact would raise on the first file."""
    python_rules = [rule for rule in all_rules() if issubclass(rule, Rule) and rule.code != "ODL000"]
    assert [rule.code for rule in python_rules if rule.needs is None] == []
    named = {part.split(")")[0] for rule in python_rules for part in str(rule.needs).split("fact(")[1:]}
    assert named and named <= FACTS.keys()


def test_a_fact_answers_on_a_file_that_holds_it() -> None:
    holding = "import jax\n\n@jax.jit\ndef f(x):\n    print(x)\n    return x\n"
    assert Needs.fact("traced_print").holds(sketch(holding))
    assert not Needs.fact("traced_print").holds(sketch("import jax\n\ndef f(x):\n    print(x)\n"))


KEY_THROUGH_HELPERS = """
import jax

def train_step(state, lstm_rng):
    return jax.random.fold_in(lstm_rng, state)

def decode_batch(state, decode_rng):
    return jax.random.fold_in(decode_rng, state)

def run(state):
    rng = jax.random.key(0)
    train_step(state, rng)
    decode_batch(state, rng)
"""


def test_a_key_passed_by_position_to_two_functions_that_consume_it_may_be_reused() -> None:
    """The gate's view of `KeyUses._passed_by_position` (flax examples/seq2seq/train.py)."""
    assert Needs.fact("reused_key").holds(sketch(KEY_THROUGH_HELPERS))
    once = KEY_THROUGH_HELPERS.replace("    decode_batch(state, rng)\n", "")
    assert not Needs.fact("reused_key").holds(sketch(once))
    assert lint_source(KEY_THROUGH_HELPERS, "train.py", {"ODL704"}).findings  # the rule agrees
