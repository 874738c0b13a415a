"""The PRNG-key use analysis (odelint.analysis.keys): which calls consume a key again."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from odelint.analysis.facts import Facts
from odelint.analysis.keys import key_uses
from odelint.analysis.scopes import build_scope_index


def _uses(source: str):
    module = cst.parse_module(textwrap.dedent(source))
    uses = key_uses(Facts(build_scope_index(module, {cst.Call})))
    text = module.code_for_node
    reuses = [(r.name, text(r.first), text(r.second), r.in_loop) for r in uses.reuses]
    return reuses, [text(call) for call in uses.constant_keys_in_loops], uses


def test_two_samplers_on_one_key_is_reuse() -> None:
    reuses, _, _ = _uses("""
        import jax
        key = jax.random.PRNGKey(0)
        a = jax.random.normal(key, (2,))
        b = jax.random.uniform(key=key)
    """)
    assert reuses == [("key", "jax.random.normal(key, (2,))", "jax.random.uniform(key=key)", False)]


def test_rebinding_by_split_gives_a_fresh_key() -> None:
    reuses, _, _ = _uses("""
        import jax.random as jr
        def f(key):
            key, sub = jr.split(key)
            a = jr.normal(sub)
            key, sub = jr.split(key)
            return a + jr.normal(sub)
    """)
    assert reuses == []


def test_carry_key_used_where_the_subkey_was_meant() -> None:
    reuses, _, _ = _uses("""
        from jax import random
        def f(key):
            key, sub = random.split(key)
            a = random.normal(key)
            key, sub = random.split(key)
            return a
    """)
    assert reuses == [("key", "random.normal(key)", "random.split(key)", False)]


def test_branches_are_not_reuse_but_what_follows_them_is() -> None:
    reuses, _, _ = _uses("""
        import jax
        def f(key, flag):
            if flag:
                a = jax.random.normal(key)
            elif flag > 1:
                a = jax.random.bernoulli(key)
            else:
                a = 0.0
            b = jax.random.normal(key) if flag else jax.random.uniform(key)
            return a
        def g(key, flag):
            if flag:
                return jax.random.normal(key)
            return jax.random.uniform(key)
    """)
    assert [second for _, _, second, _ in reuses] == ["jax.random.normal(key)", "jax.random.uniform(key)"], \
        "each branch of the conditional expression reuses the key the `if` consumed; `g` reuses nothing"


def test_loops_consume_an_outer_key_again_unless_they_split_it() -> None:
    reuses, _, _ = _uses("""
        import jax
        def f(key, n):
            for i in range(n):
                x = jax.random.normal(key)
            while n:
                key, sub = jax.random.split(key)
                y = jax.random.normal(sub)
            return [jax.random.uniform(key) for _ in range(n) if n]
        def c(key, n):
            return [jax.random.gamma(key, 1.0) for _ in range(n)]
        def g(key, n):
            return [jax.random.normal(k) for k in jax.random.split(key, n) if n > 1]
        def h(key, n):
            return [jax.random.normal(k) for k in jax.random.split(key, n) if jax.random.bernoulli(k)]
    """)
    assert reuses == [
        ("key", "jax.random.normal(key)", "jax.random.normal(key)", True),
        ("key", "jax.random.normal(key)", "jax.random.split(key)", False),
        ("key", "jax.random.normal(key)", "jax.random.uniform(key)", False),  # the while loop may not run
        ("key", "jax.random.gamma(key, 1.0)", "jax.random.gamma(key, 1.0)", True),
        ("k", "jax.random.bernoulli(k)", "jax.random.normal(k)", False),
    ], "keys taken from a split array are fresh on each iteration (g), not within one (h)"


def test_key_keywords_consume_only_keys_and_fold_in_never() -> None:
    reuses, _, uses = _uses("""
        import equinox as eqx
        import jax
        key = jax.random.PRNGKey(0)
        size = 3
        layer = eqx.nn.Linear(2, 2, key=key)
        other = jax.random.normal(key)
        sized = dict(key=size), dict(key=size)
        derived = jax.random.fold_in(key, 1), jax.random.fold_in(key, 2)
    """)
    assert reuses == [("key", "eqx.nn.Linear(2, 2, key=key)", "jax.random.normal(key)", False)]
    calls = {cst.Module([]).code_for_node(c): c for c, _ in uses.facts.index.of_type(cst.Call)}
    assert uses.consumed_key(calls["dict(key=size)"]) is None
    assert uses.consumed_key(calls["jax.random.fold_in(key, 1)"]) is None


def test_constant_keys_inside_loops() -> None:
    _, constants, _ = _uses("""
        import jax
        seed = 3
        outside = jax.random.PRNGKey(0)
        for i in range(3):
            k = jax.random.PRNGKey(0)
            j = jax.random.key(-1)
            fine = jax.random.PRNGKey(i)
            seeded = jax.random.PRNGKey(seed)
        while seed:
            w = jax.random.key(2)
        for dtype in ("float32", "float16"):
            per_case = jax.random.PRNGKey(5)
        noise = [jax.random.normal(jax.random.key(3)) for _ in range(4)]
    """)
    assert constants == ["jax.random.PRNGKey(0)", "jax.random.key(-1)", "jax.random.key(2)", "jax.random.key(3)"], \
        "loops that repeat, not a loop over configurations"


def test_constant_key_folded_with_the_loop_variable_differs_every_iteration() -> None:
    _, constants, _ = _uses("""
        import jax
        for m in range(4):
            k_m = jax.random.fold_in(jax.random.key(999), m)
            same = jax.random.fold_in(jax.random.key(7), 1)
            data = jax.random.fold_in(data=m, key=jax.random.PRNGKey(3))
            raw = jax.random.normal(jax.random.key(5), (m,))
    """)
    assert constants == ["jax.random.key(7)", "jax.random.key(5)"], "folding in a constant keeps the key constant"


# ---- deliberate reuse: which reuses look intended (KeyReuse.deliberate)

def _judged(source: str, path: str | None = None) -> list[tuple[str, bool]]:
    module = cst.parse_module(textwrap.dedent(source))
    uses = key_uses(Facts(build_scope_index(module, {cst.Call}), path))
    return [(module.code_for_node(r.second), r.deliberate is not None) for r in uses.reuses]


def test_a_key_used_again_after_it_was_split_is_never_deliberate() -> None:
    assert _judged("""
        import jax
        def f(key):
            a, b = jax.random.split(key)
            return jax.random.normal(key), jax.random.split(key)
    """) == [("jax.random.normal(key)", False), ("jax.random.split(key)", False)]


def test_the_same_constructor_twice_rebuilds_but_two_constructors_share_subkeys() -> None:
    assert _judged("""
        import equinox as eqx
        from jaxtyping import PRNGKeyArray
        def f(key: PRNGKeyArray):
            a = eqx.nn.Linear(2, 2, key=key)
            b = eqx.nn.Linear(2, 2, key=key)
            c = eqx.nn.MLP(2, 2, 4, 1, key=key)
    """) == [("eqx.nn.Linear(2, 2, key=key)", True), ("eqx.nn.MLP(2, 2, 4, 1, key=key)", False)]


def test_a_draw_then_a_split_is_deliberate_for_a_key_from_outside_not_for_the_carry() -> None:
    assert _judged("""
        import jax.random as jr
        def loader(key, n):
            order = jr.permutation(key, n)
            train, val = jr.split(key)
        def step(key):
            key, sub = jr.split(key)
            noise = jr.normal(key)
            key, sub = jr.split(key)
    """) == [("jr.split(key)", True), ("jr.split(key)", False)]


def test_two_draws_are_deliberate_only_in_tests() -> None:
    source = """
        import jax
        def make(key):
            return jax.random.normal(key, (3,)), jax.random.uniform(key, (3,))
    """
    assert _judged(source) == [("jax.random.uniform(key, (3,))", False)]
    assert _judged(source, "tests/test_make.py") == [("jax.random.uniform(key, (3,))", True)]


def test_loops_over_configurations_and_fixed_keys_beside_a_fresh_one_are_deliberate() -> None:
    assert _judged("""
        import jax
        def f(key, sigmas, n, params, sample_key):
            crn = [s * jax.random.normal(key, (3,)) for s in sigmas]
            for i in range(n):
                key, sub = jax.random.split(key)
                shown = jax.random.normal(sample_key, (2,))
            for i in range(n):
                same = jax.random.normal(params, (2,))
                sample_key = same + sample_key
    """) == [("jax.random.normal(key, (3,))", True), ("jax.random.normal(sample_key, (2,))", True),
             ("jax.random.normal(params, (2,))", False)]


def test_draws_shaped_by_the_loop_variable_are_never_common_random_numbers() -> None:
    assert _judged("""
        import jax
        def proposal(k1, k2, k3, k4, k5, positions, sizes, arrays, sigmas, x):
            prop = {k: jax.random.normal(k1, shape=jnp.shape(v)) for k, v in positions.items()}
            layers = []
            for m, n in zip(sizes[:-1], sizes[1:]):
                layers.append(jax.random.uniform(k2, (m, n)))
            masks = [jax.random.bernoulli(k3, 0.5, a.shape) for a in arrays]
            aligned = [jax.random.permutation(k4, a) for a in arrays]
            crn = [s * jax.random.normal(k5, x.shape) for s in sigmas]
    """) == [("jax.random.normal(k1, shape=jnp.shape(v))", False), ("jax.random.uniform(k2, (m, n))", False),
             ("jax.random.bernoulli(k3, 0.5, a.shape)", False), ("jax.random.permutation(k4, a)", True),
             ("jax.random.normal(k5, x.shape)", True)]


def test_a_key_passed_by_position_to_a_function_that_splits_it_is_consumed() -> None:
    module = cst.parse_module(textwrap.dedent("""
        import jax
        def init(key, n):
            return jax.random.split(key, n)
        def log(message, key):
            print(message)
        def main(key):
            a = init(key, 3)
            log("x", key)
            b = jax.random.normal(key)
    """))
    uses = key_uses(Facts(build_scope_index(module, {cst.Call})))
    calls = {module.code_for_node(call): call for call, _ in uses.facts.index.of_type(cst.Call)}
    assert uses.consumptions(calls["init(key, 3)"]) == [("key", "pass")]
    assert uses.consumptions(calls['log("x", key)']) == []
    assert [module.code_for_node(r.second) for r in uses.reuses] == ["jax.random.normal(key)"]


def test_a_constant_key_counts_as_drawn_only_when_a_sampler_receives_it() -> None:
    module = cst.parse_module(textwrap.dedent("""
        import jax
        def f(n, model):
            for i in range(n):
                key = jax.random.PRNGKey(0)
                x = jax.random.normal(key)
                y = model.init(jax.random.PRNGKey(1))
    """))
    uses = key_uses(Facts(build_scope_index(module, {cst.Call})))
    drawn = [module.code_for_node(c) for c in uses.constant_keys_in_loops if id(c) in uses.drawn_constant_keys]
    assert [module.code_for_node(c) for c in uses.constant_keys_in_loops] == ["jax.random.PRNGKey(0)",
                                                                               "jax.random.PRNGKey(1)"]
    assert drawn == ["jax.random.PRNGKey(0)"]


def test_draws_that_never_meet_are_apart_and_draws_that_may_meet_are_not() -> None:
    """Printed, dropped, or overwritten before anything but `print` read it: apart. A value
    overwritten only on one branch, read by a nested function, or left in a name (`x` of
    shape (3, 3) below, which `w` and `b` may meet): it may meet."""
    assert _judged("""
        import jax
        key = jax.random.PRNGKey(0)
        x = jax.random.normal(key, (10,))
        print(x)
        x = jax.random.normal(key, (3, 3))
        jax.random.uniform(key)
        w = jax.random.normal(key, (3,))
        b = jax.random.normal(key, (3,))
    """) == [("jax.random.normal(key, (3, 3))", True), ("jax.random.uniform(key)", True),
             ("jax.random.normal(key, (3,))", False), ("jax.random.normal(key, (3,))", False)]
    assert _judged("""
        import jax
        def f(key, flag):
            x = jax.random.normal(key)
            if flag:
                x = jax.random.normal(key)
            return x
        def g(key):
            x = jax.random.normal(key)
            loss = lambda: x
            x = jax.random.normal(key)
            return loss() + x
    """) == [("jax.random.normal(key)", False), ("jax.random.normal(key)", False)]


def test_a_statement_calling_a_function_that_returns_nothing_drops_its_draws() -> None:
    """`decode_batch(state, batch, rng)` only logs; a method called as a statement may keep
    what it draws (`trainer.init(key)` stores parameters), so it is not dropped."""
    assert _judged("""
        import jax
        def log_samples(model, key):
            print(model.sample(key=jax.random.fold_in(key, 0)))
        def train_step(model, key):
            return model + jax.random.normal(key)
        def fit(model, trainer):
            key = jax.random.PRNGKey(0)
            model = train_step(model, key)
            log_samples(model, key)
            trainer.init(key=key)
            trainer.fit(key=key)
    """) == [("log_samples(model, key)", True), ("trainer.init(key=key)", False),
             ("trainer.fit(key=key)", False)]


@pytest.mark.parametrize(("flag", "apart"), [("enable_dropout=False", True), ("inference=True", True),
                                            ("deterministic=True", True), ("enable_dropout=True", False),
                                            ("inference=False", False)])
def test_a_model_with_its_randomness_switched_off_draws_nothing(flag: str, apart: bool) -> None:
    """`vmap(partial(model, enable_dropout=False))(xs, key=split(key, n))` after the model was
    built from `key`: the split keys reach no dropout, so they meet nothing."""
    assert _judged(f"""
        import functools
        import jax
        import jax.random as jr
        def evaluate(make, xs):
            key = jr.PRNGKey(0)
            model = make(key=key)
            return jax.vmap(functools.partial(model, {flag}))(xs, key=jr.split(key, len(xs)))
    """) == [("jr.split(key, len(xs))", apart)]
