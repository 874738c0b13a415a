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
from odelint.api.registry import all_rules, rule_for
from odelint.api.rule import Rule
from odelint.engine.core import candidates, lint_source


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
    (Needs.transforms_own_function("jax.jit"), "import jax\ndef loss(m, x): ...\nv = jax.jit(loss)(m, 1.0)\n", True),
    (Needs.transforms_own_function("jax.jit"), "import jax\n@jax.jit\ndef loss(m, x): ...\n", True),
    (Needs.transforms_own_function("jax.jit"),
     "import functools, jax\ndef loss(c, m): ...\nf = jax.jit(functools.partial(loss, 1))\n", True),
    (Needs.transforms_own_function("jax.vmap"), "import jax\nys = jax.vmap(lambda x: x + 1)(xs)\n", True),
    (Needs.transforms_own_function("jax.vmap"),
     "import jax\nclass Net:\n    def __call__(self, x):\n        return jax.vmap(self.layer)(x)\n", False),
    (Needs.transforms_own_function("jax.jit"), "import jax\nimport optax\nupdate = jax.jit(optax.sgd(1.0).update)\n",
     False),
    (Needs.fact("tree_map_update"), "import jax\nnew = jax.tree.map(lambda p, g: p - g, model, grads)\n", True),
    (Needs.fact("tree_map_update"), "import jax\nmodel = jax.tree_util.tree_map(lambda p: p * 0.9, params)\n", True),
    (Needs.fact("tree_map_update"), "import jax\nprint(jax.tree.map(lambda p: p.shape, params))\n", False),
    (Needs.fact("tree_map_update"), "import jax\nn = jax.tree.map(f, a, b, is_leaf=lambda x: x is None)\n", False),
    (Needs.fact("tree_map_update"), "import jax\nn = jax.tree.map(f, *trees)\n", False),
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


def test_a_keyword_row_opens_the_gate_only_for_a_call_given_the_keyword() -> None:
    """ODL911's rows for `eqx.filter_jit(fn=...)`: nearly every Equinox file calls
    `eqx.filter_jit`, and only a call passing a removed keyword can be reported."""
    rule = next(rule for rule in all_rules() if rule.code == "ODL911")
    plain = "import equinox as eqx\n\n@eqx.filter_jit\ndef step(model, x):\n    return model(x)\n"
    old = "import equinox as eqx\n\nstep = eqx.filter_jit(fn=lambda model, x: model(x))\n"
    assert not rule.needs.holds(sketch(plain))
    assert rule.needs.holds(sketch(old))
    assert lint_source(old, "train.py", {"ODL911"}, versions={"equinox": None}).findings  # the rule agrees


def test_a_call_row_opens_the_gate_for_a_call_through_an_alias() -> None:
    """ODL905 reports calls of `eqx.static_field`, also under another local name."""
    rule = next(rule for rule in all_rules() if rule.code == "ODL905")
    aliased = ("import equinox as eqx\nstatic = eqx.static_field\n\n"
               "class Net(eqx.Module):\n    size: int = static()\n")
    assert rule.needs.holds(sketch(aliased))
    assert not rule.needs.holds(sketch("import equinox as eqx\n\nclass Net(eqx.Module):\n    size: int\n"))
    assert lint_source(aliased, "net.py", {"ODL905"}).findings


REUSE_MAYBE = {  # a key that may be consumed twice: the pre-check must let ODL704 run
    "no fresh value between": "a = jax.random.normal(key)\nb = jax.random.uniform(key)\n",
    "fresh on one branch only": ("a = jax.random.normal(key)\nif flag:\n    key = jax.random.key(1)\n"
                                 "b = jax.random.uniform(key)\n"),
    "fresh before the second, not before the next iteration's first": (
        "for i in range(3):\n    a = jax.random.normal(key)\n    key = jax.random.key(i)\n"
        "    b = jax.random.uniform(key)\n"),
    "a lambda reads the name when called": ("draw = lambda: jax.random.normal(key)\nkey = jax.random.key(1)\n"
                                            "a = draw()\nb = jax.random.uniform(key)\n"),
    "given twice in one call": "pair = combine(jax.random.normal(key), jax.random.uniform(key))\n",
    "two branches of one if, in a loop that makes the key afresh after them": (
        "for x in combine:\n    if x:\n        a = jax.random.normal(key)\n        continue\n    else:\n"
        "        a = jax.random.uniform(key)\n    key = jax.random.key(1)\n"),
    "two branches of one if, in a loop that keeps the key": (
        "for x in combine:\n    if x:\n        a = jax.random.normal(key)\n    else:\n"
        "        a = jax.random.uniform(key)\n"),
    "a handler may run before the fresh value": ("try:\n    a = jax.random.normal(key)\n    combine(a)\n"
                                                 "    key = jax.random.key(1)\nexcept ValueError:\n    pass\n"
                                                 "b = jax.random.uniform(key)\n"),
}

REUSE_APART = {  # every consumption sees a fresh key: the pre-check may keep the parse away
    "split between": ("key, sub = jax.random.split(key)\na = jax.random.normal(sub)\n"
                      "key, sub = jax.random.split(key)\nb = jax.random.uniform(sub)\n"),
    "two branches of one if": "if flag:\n    a = jax.random.normal(key)\nelse:\n    a = jax.random.uniform(key)\n",
    "a seed checked and made a key": ("if isinstance(key, int):\n    key = jax.random.PRNGKey(key)\n"
                                      "a = jax.random.normal(key)\n"),
    "split between, both ways round a loop": (
        "for i in range(3):\n    key, sub = jax.random.split(key)\n    a = jax.random.normal(sub)\n"
        "    key, sub = jax.random.split(key)\n    b = jax.random.uniform(sub)\n"),
    "a loop's target gives each run a fresh key": (
        "keys = jax.random.split(key, 3)\nfor key in keys:\n    a = jax.random.normal(key)\n"),
    "split before leaving the branch": ("if flag:\n    key, sub = jax.random.split(key)\n"
                                        "    a = jax.random.normal(sub)\nb = jax.random.uniform(key)\n"),
    "fresh later in the branch": ("if flag:\n    a = jax.random.normal(key)\n    if a > 0:\n        combine(a)\n"
                                  "    key = jax.random.key(1)\nb = jax.random.uniform(key)\n"),
    "two cases of one match": ("match flag:\n    case 1:\n        a = jax.random.normal(key)\n"
                               "    case _:\n        a = jax.random.uniform(key)\n"),
    "split again in an inner loop before the next round": (
        "for epoch in range(3):\n    key, sub = jax.random.split(key)\n    a = jax.random.normal(sub)\n"
        "    for batch in combine:\n        key, sub = jax.random.split(key)\n        b = jax.random.uniform(sub)\n"),
    "a lambda's own parameter": ("keys = jax.random.split(key, 3)\n"
                                 "a = jax.vmap(lambda key, x: jax.random.normal(key) * x)(keys, flag)\n"),
    "two branches of one if, in a loop that first makes the key afresh": (
        "for x in combine:\n    k1, k2 = jax.random.split(jax.random.key(0))\n    if x:\n"
        "        a = jax.random.normal(k1)\n    else:\n        a = jax.random.uniform(k1)\n"),
    "two branches of one if, in a loop whose target is the key": (
        "keys = jax.random.split(key, 3)\nfor x, key in zip(combine, keys):\n    if x:\n"
        "        a = jax.random.normal(key)\n    else:\n        a = jax.random.uniform(key)\n"),
}


def _in_function(body: str) -> str:
    return "import jax\n\ndef sample(key, flag, combine):\n" + textwrap.indent(body, "    ") + "    return key\n"


@pytest.mark.parametrize("body", REUSE_MAYBE.values(), ids=REUSE_MAYBE.keys())
def test_two_uses_of_a_key_with_no_fresh_value_surely_between_may_be_a_reuse(body: str) -> None:
    assert Needs.fact("reused_key").holds(sketch(_in_function(body)))


@pytest.mark.parametrize("body", REUSE_APART.values(), ids=REUSE_APART.keys())
def test_uses_of_a_key_a_fresh_value_separates_are_no_reuse(body: str) -> None:
    """The KeyUses way of following statements: an assignment between two uses gives the name
    a fresh value; the rule, strict mode too, agrees that nothing is reused."""
    code = _in_function(body)
    assert not Needs.fact("reused_key").holds(sketch(code))
    strict = frozenset({"strict-key-reuse"})
    assert lint_source(code, "sample.py", {"ODL704"}, gate=False, options=strict).findings == []


CONSTANT_KEY = """
import jax


def run(model, data):
    for epoch in range(3):
        model = model.fit(jax.random.PRNGKey(0), data)
    return model
"""


def test_a_constant_key_made_in_a_loop_is_parsed_for_when_drawn_from_or_in_strict_mode() -> None:
    """`KeyUses` reports a constant key made in a counting loop only when a `jax.random` call
    draws from it (directly or through a name), unless strict mode is on."""
    strict = frozenset({"strict-key-reuse"})
    assert not Needs.fact("reused_key").holds(sketch(CONSTANT_KEY))
    assert lint_source(CONSTANT_KEY, "run.py", {"ODL704"}, gate=False).findings == []
    assert Needs.fact("reused_key").holds(Sketch(ast.parse(CONSTANT_KEY), "run.py", strict))
    assert lint_source(CONSTANT_KEY, "run.py", {"ODL704"}, options=strict).findings
    for drawn in ("model.fit(jax.random.normal(jax.random.PRNGKey(0)), data)",
                  "key = jax.random.PRNGKey(0)\n        model = model.fit(jax.random.normal(key), data)"):
        code = CONSTANT_KEY.replace("model.fit(jax.random.PRNGKey(0), data)", drawn)
        assert Needs.fact("reused_key").holds(sketch(code))
        assert lint_source(code, "run.py", {"ODL704"}).findings


BOUND_METHOD = """
import jax


class Trainer:
    def draw(self, rng_key, params):
        return jax.random.normal(rng_key) + params

    def fit(self, params):
        for step in range(3):
            key = jax.random.key(step)
            loss = self.draw(key, params)
        return loss
"""


def test_a_call_on_self_passes_its_first_argument_to_the_second_parameter() -> None:
    """`self.draw(key, params)` gives `draw` its key as `rng_key`: `params`, passed on every
    iteration, is not a key (the shift by `self` was once taken both ways)."""
    assert not Needs.fact("reused_key").holds(sketch(BOUND_METHOD))
    static = BOUND_METHOD.replace("    def draw(self, rng_key", "    @staticmethod\n    def draw(self, rng_key")
    assert Needs.fact("reused_key").holds(sketch(static))  # `self.draw(key, params)` gives `params` as `rng_key`
    strict = frozenset({"strict-key-reuse"})
    assert lint_source(BOUND_METHOD, "trainer.py", {"ODL704"}, gate=False, options=strict).findings == []


def test_key_reuse_in_a_test_is_parsed_for_only_in_strict_mode() -> None:
    """Every reuse in a test module is deliberate (`KeyUses.in_test`), so only strict mode can
    report one there: the pre-check reads the setting (`Needs.setting`)."""
    rule = next(rule for rule in all_rules() if rule.code == "ODL704")
    code = _in_function(REUSE_MAYBE["no fresh value between"])
    strict = frozenset({"strict-key-reuse"})
    assert candidates(code, "tests/test_sample.py", [rule]) == []
    assert candidates(code, "tests/test_sample.py", [rule], strict) == [rule]
    assert candidates(code, "sample.py", [rule]) == [rule]
    assert lint_source(code, "tests/test_sample.py", {"ODL704"}, gate=False).findings == []
    assert lint_source(code, "tests/test_sample.py", {"ODL704"}, options=strict).findings


THROUGH_JIT = """
import jax


def train_step(state, rng):
    return state + jax.random.normal(rng)


def train(state, rng):
    step = jax.jit(train_step)
    for _ in range(3):
        state = step(state, rng)
    return state
"""

THROUGH_AN_ATTRIBUTE = """
import functools
import jax


def train_step(state, rng):
    return state + jax.random.normal(rng)


class Trainer:
    def __init__(self):
        self.step = functools.partial(train_step, 0.0)

    def fit(self, rng):
        return self.step(rng) + self.step(rng)
"""


def test_a_key_given_to_a_wrapped_consuming_function_may_be_reused() -> None:
    """`step = jax.jit(train_step)` then `step(state, rng)` on every iteration (flax's lm1b
    example): the rule follows the wrapper to `train_step` and strict mode reports the reuse,
    so the pre-check must let it run; so too through an attribute holding a partial."""
    assert Needs.fact("reused_key").holds(sketch(THROUGH_JIT))
    strict = frozenset({"strict-key-reuse"})
    assert lint_source(THROUGH_JIT, "train.py", {"ODL704"}, gate=False, options=strict).findings
    assert Needs.fact("reused_key").holds(sketch(THROUGH_AN_ATTRIBUTE))


GIVEN_AS_KEY = """
import jax


class Block:
    def __call__(self, x, *, key: "jax.random.PRNGKey" = None):
        x = self.activation(x, key=key)
        return self.scale_activation(x, key=key)
"""


def test_a_name_given_as_key_outside_jax_random_is_a_reuse_only_if_it_may_hold_a_key() -> None:
    """eqxvision's squeeze.py: `key=key` to two layers, where `key` is annotated with a string
    and no `jax.random` call of the function takes it, is no consumption for `KeyUses`, so the
    pre-check keeps the parse away; a key annotation, or a draw from the name in the same
    function, makes it one, and the rule (strict mode) reports the second use."""
    strict = frozenset({"strict-key-reuse"})
    assert not Needs.fact("reused_key").holds(Sketch(ast.parse(GIVEN_AS_KEY), "block.py", strict))
    assert lint_source(GIVEN_AS_KEY, "block.py", {"ODL704"}, gate=False, options=strict).findings == []
    annotated = GIVEN_AS_KEY.replace("import jax\n", "import jax\nfrom jaxtyping import PRNGKeyArray\n").replace(
        'key: "jax.random.PRNGKey" = None', "key: PRNGKeyArray")
    drawn = GIVEN_AS_KEY.replace("        x = self.activation", "        x = x + jax.random.normal(key)\n"
                                 "        x = self.activation")
    for code in (annotated, drawn):
        assert Needs.fact("reused_key").holds(Sketch(ast.parse(code), "block.py", strict))
        assert lint_source(code, "block.py", {"ODL704"}, gate=False, options=strict).findings


FIELDS = """
import equinox as eqx


class Config:
    def __init__(self, width):
        self.width = width


class Net(eqx.Module):
    width: int

    def __init__(self, config):
        self.width = config.width

    def __post_init__(self):
        self.width = max(self.width, 1)
"""


def test_fields_set_while_a_class_initialises_are_judged_by_that_class() -> None:
    """`self.width = ...` in a plain class's `__init__`, and in a module's `__post_init__` or for
    a declared field, cannot be reported by ODL604, even with a module in the file; an
    undeclared field in a module's `__init__` can."""
    assert not Needs.fact("module_field_assigned").holds(sketch(FIELDS))
    assert lint_source(FIELDS, "net.py", {"ODL604"}, gate=False).findings == []
    undeclared = FIELDS.replace("        self.width = config.width\n",
                                "        self.width = config.width\n        self.depth = 2\n")
    assert Needs.fact("module_field_assigned").holds(sketch(undeclared))
    assert lint_source(undeclared, "net.py", {"ODL604"}).findings


STORED = """
import equinox as eqx
import jax


class Net(eqx.Module):
    layer: eqx.nn.Linear
    step: object

    def __init__(self, key):
        self.layer = eqx.nn.Linear(2, 2, key=key)
        self.step = eqx.filter_jit(self.layer)

    def __call__(self, x):
        return jax.vmap(self.layer)(x)
"""


def test_a_transform_stored_in_a_modules_init_is_what_odl602_needs() -> None:
    """`jax.vmap(self.layer)` applied in `__call__`, and `eqx.filter_jit` stored in `__init__`,
    cannot be reported; `self.step = jax.vmap(layer)` in `__init__` can."""
    assert not Needs.fact("transform_stored_in_init").holds(sketch(STORED))
    assert lint_source(STORED, "net.py", {"ODL602"}, gate=False).findings == []
    stored = STORED.replace("self.step = eqx.filter_jit(self.layer)", "self.step = jax.vmap(self.layer)")
    assert Needs.fact("transform_stored_in_init").holds(sketch(stored))
    assert lint_source(stored, "net.py", {"ODL602"}).findings


FILTER_GRAD_OF_A_METHOD = """
import equinox as eqx


class Flow(eqx.Module):
    def __call__(self, x):
        y, grad = eqx.filter_value_and_grad(self.fn)(x)
        return y, grad
"""


def test_odl605_needs_filter_grad_applied_to_a_function_of_the_file() -> None:
    """ODL605 checks each application the model finds (`Facts.transform_applied`), to a def
    or a lambda of the file: `filter_value_and_grad(self.fn)` and a function from elsewhere
    give it none; the same call on a lambda of the file can be reported."""
    rule = rule_for("ODL605")
    assert rule not in candidates(FILTER_GRAD_OF_A_METHOD, "flow.py", [rule])
    assert lint_source(FILTER_GRAD_OF_A_METHOD, "flow.py", {"ODL605"}, gate=False).findings == []
    own = FILTER_GRAD_OF_A_METHOD.replace("eqx.filter_value_and_grad(self.fn)(x)",
                                          "eqx.filter_value_and_grad(lambda m, v: v.sum())(x)")
    assert rule in candidates(own, "flow.py", [rule])
    assert [f.code for f in lint_source(own, "flow.py", {"ODL605"}).findings] == ["ODL605"]


STATIC_BY_NAME = """
import jax
import jax.numpy as jnp

def solve(h, ops, options):
    return h * len(ops)

fast = jax.jit(solve, static_argnames=("options",))
fast(jnp.ones(2), [1, 2], OPTIONS)
"""


def test_only_what_the_static_options_can_reach_is_asked_to_be_hashable() -> None:
    """A list given for a traced parameter is no static argument; with `static_argnames`
    any positional argument may be the static one (the signature decides), with
    `static_argnums` only those at the positions it names, and a keyword argument either way."""
    assert not Needs.fact("unhashable_static_argument").holds(sketch(STATIC_BY_NAME))
    assert lint_source(STATIC_BY_NAME, "solve.py", {"ODL708"}, gate=False).findings == []
    by_position = STATIC_BY_NAME.replace('static_argnames=("options",)', "static_argnums=2")
    decorated = STATIC_BY_NAME.replace("def solve", '@partial(jax.jit, static_argnames="options")\ndef solve').replace(
        "import jax\n", "from functools import partial\nimport jax\n").replace(
        'fast = jax.jit(solve, static_argnames=("options",))\nfast', "solve")
    for quiet in (by_position, decorated):
        assert not Needs.fact("unhashable_static_argument").holds(sketch(quiet))
    assert lint_source(decorated.replace("OPTIONS", "[3]"), "solve.py", {"ODL708"}).findings
    for flagged in (STATIC_BY_NAME.replace("OPTIONS", "[3]"), by_position.replace("OPTIONS", "[3]"),
                    by_position.replace("OPTIONS)", "options=[3])"), by_position.replace("argnums=2", "argnums=-2")):
        assert Needs.fact("unhashable_static_argument").holds(sketch(flagged))
        assert lint_source(flagged, "solve.py", {"ODL708"}).findings


LABELLED_DRAWS = """
import jax


def draw(rng, scale, key=None):
    return jax.random.normal(rng) * scale


def run(rng, first, second):
    return draw(rng, 1.0, key=first) + draw(rng, 2.0, key=second)
"""


def test_a_call_given_key_equals_a_name_that_holds_no_key_may_consume_what_it_passes_by_position() -> None:
    """`KeyUses` reads `draw(rng, 1.0, key=first)` by position when `first` holds no key: `rng`
    goes to `draw`'s consuming parameter twice. The pre-check once took the call to consume
    `first` alone and missed it."""
    strict = frozenset({"strict-key-reuse"})
    assert Needs.fact("reused_key").holds(Sketch(ast.parse(LABELLED_DRAWS), "run.py", strict))
    assert lint_source(LABELLED_DRAWS, "run.py", {"ODL704"}, options=strict).findings


CHECKED_THEN_DRAWN = """
import jax
from numpyro.util import is_prng_key


def sample(key, concentration):
    assert is_prng_key(key)
    return jax.random.dirichlet(key, concentration)
"""

VMAPPED_TWICE = """
import jax


def pick(tree, key):
    return jax.random.choice(key, tree)


def mutate(tree, key):
    return tree + jax.random.normal(key)


def step(trees, keys):
    chosen = jax.vmap(pick)(trees, keys)
    return jax.vmap(mutate)(chosen, keys)
"""


def test_a_key_given_by_position_counts_only_where_a_function_of_the_file_may_draw_from_it() -> None:
    """numpyro's `assert is_prng_key(key)` before the draw: `KeyUses` consumes a key given by
    position only in a `jax.random` call or a function of the file that draws from that
    parameter, so the check is no use of the key. kozax's mutation.py gives the same `keys` to
    two vmapped functions that draw from them: the wrapper is seen through, as `Facts.callee`
    sees through it, and the rule reports the second."""
    strict = frozenset({"strict-key-reuse"})
    assert not Needs.fact("reused_key").holds(Sketch(ast.parse(CHECKED_THEN_DRAWN), "sample.py", strict))
    assert lint_source(CHECKED_THEN_DRAWN, "sample.py", {"ODL704"}, gate=False, options=strict).findings == []
    assert Needs.fact("reused_key").holds(sketch(VMAPPED_TWICE))
    assert lint_source(VMAPPED_TWICE, "mutation.py", {"ODL704"}).findings


SHADOWED_COMPILED = """
import jax
import jax.numpy as jnp


def solve(h, tsave, options):
    f = _vectorized
    f = jax.jit(f, static_argnames=("tsave", "options"))
    return f(h, tuple(tsave.tolist()), options)


def _vectorized(h, tsave: jax.Array, options):
    f = jax.vmap(_one)
    return f(h, tsave, options)


def _one(h, tsave, options):
    return h * len(tsave)
"""


COMPILED_AT_MODULE_LEVEL = """
import jax
import jax.numpy as jnp


def _one(h, tsave, options):
    return h * len(tsave)


f = jax.jit(_one, static_argnames=("tsave", "options"))


def _vectorized(h, tsave, options):
    return f(h, tsave, options)


_vectorized(jnp.ones(3), jnp.arange(3.0), None)
"""


def test_a_name_a_function_binds_itself_runs_only_what_that_function_assigns_it() -> None:
    """dynamiqs' mesolve.py: `f = jax.jit(f, static_argnames=...)` in one function, and a local
    `f = jax.vmap(...)` in another that is given an array: that call is not compiled with
    static arguments, so the pre-check keeps the parse away. A function that binds no `f`
    calls the module's, compiled with them, and the rule reports the array."""
    assert not Needs.fact("unhashable_static_argument").holds(sketch(SHADOWED_COMPILED))
    assert lint_source(SHADOWED_COMPILED, "solve.py", {"ODL708"}, gate=False).findings == []
    assert Needs.fact("unhashable_static_argument").holds(sketch(COMPILED_AT_MODULE_LEVEL))
    assert lint_source(COMPILED_AT_MODULE_LEVEL, "solve.py", {"ODL708"}).findings


FROZEN_IN_USE = """
import equinox as eqx
import jax
import optax


class Model(eqx.Module):
    weight: jax.Array
    buffer: jax.Array

    def __init__(self, key):
        self.weight = jax.random.normal(key, (3,))
        self.buffer = jax.numpy.ones(3)

    def __call__(self, x):
        return self.weight * jax.lax.stop_gradient(self.buffer) * x


def loss(model, x):
    return jax.lax.stop_gradient(model(x)).sum()
"""


def test_odl206_needs_a_field_stored_through_stop_gradient_or_frozen_beside_an_optimiser() -> None:
    """`stop_gradient` on a loss value, or on a field with no optimiser initialised in the file,
    cannot be reported; stored in `__init__`, or a field frozen beside `optimiser.init`, can."""
    assert not Needs.fact("stop_gradient_on_field").holds(sketch(FROZEN_IN_USE))
    assert lint_source(FROZEN_IN_USE, "model.py", {"ODL206"}, gate=False).findings == []
    stored = FROZEN_IN_USE.replace("self.buffer = jax.numpy.ones(3)",
                                   "self.buffer = jax.lax.stop_gradient(jax.numpy.ones(3))")
    decayed = FROZEN_IN_USE + ("\nmodel = Model(jax.random.key(0))\nopt = optax.adamw(1e-3)\n"
                               "state = opt.init(eqx.filter(model, eqx.is_array))\n")
    for flagged in (stored, decayed):
        assert Needs.fact("stop_gradient_on_field").holds(sketch(flagged))
        assert lint_source(flagged, "model.py", {"ODL206"}).findings
    in_a_function = stored.replace("def __init__(self, key)", "def build(self, key)")
    assert not Needs.fact("stop_gradient_on_field").holds(sketch(in_a_function))
