"""The pre-checks of ODL101, 203, 301, 302, 401, 603-605, 704, 707, 708, 713 and 801-805, pinned both
ways: code the rule reports keeps the rule, similar code it cannot report on drops it."""

from __future__ import annotations

import textwrap

import pytest
from odelint.api.registry import rule_for
from odelint.engine.core import candidates, lint_source


def _code(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


# a module whose method lax control flow runs: ODL401's pre-check tells apart what it is given
_FLOW = """
        import functools
        import equinox as eqx
        import jax
        import jax.numpy as jnp
        class Flow(eqx.Module):
            layer: eqx.nn.Linear
            def step(self, carry, x, scale):
                return carry + self.layer(x) * scale, None
            def run(self, xs):"""

# a batch order drawn from the key a loader is given, which it then splits for the next epoch
_DRAWN_THEN_SPLIT = """
        import jax
        def epoch(key, data):
            order = jax.random.permutation(key, len(data))
            key, next_key = jax.random.split(key)
            return data[order], next_key
"""

FIRES = [
    ("ODL707", """
        import jax.numpy as jnp
        x = jnp.zeros(3, dtype=jnp.float64)
    """),
    ("ODL707", """
        import jax
        import jax.numpy as jnp
        ts = jnp.linspace(0.0, 1.0, 11)
        jax.config.update("jax_enable_x64", True)
    """),
    ("ODL708", """
        from functools import partial
        import jax
        @partial(jax.jit, static_argnums=1)
        def tile(x, reps):
            return x
        tile(1.0, [2, 3])
    """),
    ("ODL708", """
        import equinox as eqx
        f = eqx.filter_jit(lambda x: x, static_argnums=0)
    """),
    # lax control flow given an `eqx.Partial` of a module's method, through a name
    ("ODL401", _FLOW + """
                fn = eqx.Partial(self.step, scale=2.0)
                return jax.lax.scan(fn, jnp.zeros(2), xs)
    """),
    # a key consumed in a loop above the branch that splits it: the next iteration reuses it
    ("ODL704", """
        import jax
        def noises(key, xs):
            total = 0.0
            for x in xs:
                total = total + jax.random.normal(key, x.shape).sum()
                if x.sum() > 0:
                    key, sub = jax.random.split(key)
            return total
    """),
    # a differentiated norm of a pairwise difference held by a name; of a parameter that a
    # caller's own parameter fills with zeros; one whose result the code tests against zero
    ("ODL713", """
        import jax
        import jax.numpy as jnp
        def energy(x):
            d = x[:, None] - x[None, :]
            return jnp.sum(jnp.linalg.norm(d, axis=-1))
        g = jax.grad(energy)
    """),
    ("ODL713", """
        import jax
        import jax.numpy as jnp
        def energy(x):
            d = x[:, None] - x[None, :]
            return jnp.sum(jnp.sqrt(jnp.sum(d ** 2, axis=-1)))
        g = jax.grad(energy)
    """),
    ("ODL713", """
        import jax
        import jax.numpy as jnp
        def penalty(w):
            return jnp.linalg.norm(w)
        def loss(w):
            return penalty(w)
        def run(n):
            w0 = jnp.zeros(n)
            return jax.grad(loss)(w0)
    """),
    ("ODL713", """
        import jax
        import jax.numpy as jnp
        def unit(v):
            n = jnp.linalg.norm(v)
            return jnp.where(n > 0, v / n, v)
        g = jax.grad(lambda v: unit(v).sum())
    """),
    # a module reached as a loop target; `self.field = ...` in a method of a module class
    ("ODL604", """
        import equinox as eqx
        import jax
        layers = [eqx.nn.Linear(2, 2, key=jax.random.PRNGKey(0))]
        for layer in layers:
            layer.weight = 0.0
    """),
    ("ODL604", """
        import equinox as eqx
        class Counter(eqx.Module):
            count: int
            def bump(self):
                self.count = self.count + 1
    """),
    # the array is what the name holds last before the call
    ("ODL708", """
        import jax
        import jax.numpy as jnp
        def solve(f, ts, fixed):
            ts = jnp.asarray(ts)
            static_ts = tuple(ts.tolist())
            if fixed:
                static_ts = ts
            return jax.jit(f, static_argnames=("ts",))(ts=static_ts)
    """),
    # a removed module imported from its package, or a module inside it
    ("ODL903", """
        from jax.experimental import host_callback
    """),
    ("ODL903", """
        import jax.experimental.host_callback.extra
    """),
    ("ODL604", """
        import equinox as eqx
        class Net(eqx.Module):
            w: float
            def __init__(self):
                self.w = 1.0
                self.b = 2.0
    """),
    ("ODL604", """
        import equinox as eqx
        import jax
        model = eqx.nn.Linear(2, 1, key=jax.random.PRNGKey(0))
        model.weight = 0.0
    """),
    ("ODL603", """
        import equinox as eqx
        import numpy as np
        class Net(eqx.Module):
            table: np.ndarray = eqx.field(static=True)
    """),
    # a static field `__init__` assigns a key, a key unpacked from `split`, or what a
    # construction passes (an array), whatever its annotation says
    ("ODL603", """
        import equinox as eqx
        import jax
        class Net(eqx.Module):
            seed: int = eqx.field(static=True)
            def __init__(self):
                self.seed = jax.random.PRNGKey(0)
    """),
    ("ODL603", """
        import equinox as eqx
        import jax
        class Net(eqx.Module):
            noise: object = eqx.field(static=True)
            def __init__(self, key):
                key, sub = jax.random.split(key)
                self.noise = sub
    """),
    ("ODL603", """
        import equinox as eqx
        import jax.numpy as jnp
        class Net(eqx.Module):
            scale: float = eqx.field(static=True)
            def __init__(self, scale):
                self.scale = scale
        net = Net(jnp.ones(3))
    """),
    # `self.w` set in a method that a method other than `__init__` calls too; an undeclared
    # field set through a first parameter not named `self`
    ("ODL604", """
        import equinox as eqx
        class Net(eqx.Module):
            w: float
            def __init__(self):
                self._reset()
            def _reset(self):
                self.w = 0.0
            def __call__(self, x):
                self._reset()
                return x
    """),
    ("ODL604", """
        import equinox as eqx
        class Net(eqx.Module):
            w: float
            def __init__(this):
                this.w = 0.0
                this.b = 1.0
    """),
    ("ODL605", """
        import equinox as eqx
        def loss(model, x):
            return model(x)
        eqx.filter_grad(loss)(model=1, x=2)
    """),
    ("ODL101", """
        import functools
        import jax
        import equinox as eqx
        @functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
        def apply(f, y):
            return f(y)
        def run(key, y):
            return apply(eqx.nn.MLP(2, 2, 4, 1, key=key), y)
    """),
    ("ODL401", """
        import equinox as eqx
        import jax
        class Step(eqx.Module):
            w: jax.Array
            def __call__(self, c, x):
                return c, x
        def run(step: Step, xs):
            return jax.lax.scan(step, 0.0, xs)
    """),
    ("ODL203", """
        import optax
        opt = optax.adamw(1e-3)
        updates, state = opt.update(grads, state)
    """),
    ("ODL802", """
        import diffrax
        sol = diffrax.diffeqsolve(diffrax.ODETerm(lambda t, y, a: y), diffrax.Tsit5(), 0.0, 1.0, None, 1.0)
    """),
    # a key drawn from, split, then drawn from again: the second draw repeats the first
    ("ODL704", """
        import jax
        def noise(key, x):
            a = jax.random.normal(key, x.shape)
            keys = jax.random.split(key)
            return a + jax.random.normal(key, x.shape), keys
    """),
    # drawn from and then split, but the key itself came from a split: not deliberate
    ("ODL704", """
        import jax
        def noise(seed, x):
            key, sub = jax.random.split(seed)
            a = jax.random.normal(key, x.shape)
            first, second = jax.random.split(key)
            return a, first, second, sub
    """),
]

DROPS = [
    # the flag is named in the file; NumPy's float64 makes no JAX array
    ("ODL707", """
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        x = jnp.zeros(3, dtype=jnp.float64)
    """),
    ("ODL707", """
        import numpy as np
        x = np.zeros(3, dtype=np.float64).astype(np.float64)
    """),
    # static keywords, but only tuples and numbers reach the compiled function
    ("ODL708", """
        from functools import partial
        import jax
        @partial(jax.jit, static_argnums=1)
        def tile(x, reps):
            return x
        tile(1.0, (2, 3))
        print([1, 2])
    """),
    # the name held an array, but a tuple was assigned to it last before the call
    ("ODL708", """
        import jax
        import jax.numpy as jnp
        def solve(f, ts, fixed):
            ts = jnp.asarray(ts)
            static_ts = ts
            if fixed:
                static_ts = tuple(ts.tolist())
            return jax.jit(f, static_argnames=("ts",))(ts=static_ts)
    """),
    # `self.x = ...` in a class that cannot be a module; a module never assigned to
    ("ODL604", """
        import equinox as eqx
        class Trainer:
            def __init__(self):
                self.step = 0
            def advance(self):
                self.step += 1
        net = eqx.nn.Linear(2, 1, key=None)
        config = {"a": 1}
    """),
    # lax control flow given names bound only to a lambda or a `functools.partial`
    ("ODL401", _FLOW + """
                fn = functools.partial(self.step, scale=2.0)
                total, _ = jax.lax.scan(fn, jnp.zeros(2), xs)
                zero = lambda c, a: (c.at[a].set(0), a)
                return jax.lax.scan(zero, total, jnp.arange(2))
    """),
    # the same parameters given twice, each time before a fresh key, to a plain function that
    # draws from its second parameter (no method's `self` shifts the positions)
    ("ODL704", """
        import jax
        def logits(params, key, x):
            return params * jax.random.normal(key, x.shape)
        def loss(params, key, x):
            key1, key2 = jax.random.split(key)
            return logits(params, key1, x) - logits(params, key2, x)
    """),
    # a key split afresh just above its use in a loop, inside a branch
    ("ODL704", """
        import jax
        def noises(key, n, split):
            out = []
            for _ in range(n):
                if split:
                    key, sub = jax.random.split(key)
                    out.append(jax.random.normal(sub, (2,)))
            return out
    """),
    # differentiated roots and norms of sums and parameters no call fills with zeros (a NumPy
    # array of zeros elsewhere never reaches them)
    ("ODL713", """
        import jax
        import jax.numpy as jnp
        import numpy as np
        def scale(n, lamb, p):
            return jnp.sqrt(n + lamb) * p
        def norm_of(u):
            return jnp.linalg.norm(u, axis=-1)
        losses = np.zeros([3, 2])
        g = jax.grad(lambda p: scale(2.0, 1.0, p).sum() + norm_of(p).sum())
    """),
    # the root of a mean of squared differences of two arrays, not of one with itself
    ("ODL713", """
        import jax
        import jax.numpy as jnp
        def error(a, b):
            mse = jnp.sqrt(jnp.mean(jnp.square(a - b), axis=1))
            return mse.sum()
        g = jax.grad(error)
    """),
    # `self.x = ...` in a method of a plain class, beside a module class of the same file
    ("ODL604", """
        import equinox as eqx
        class Store:
            def update(self, x):
                self.data = x
        class Wrapper(eqx.Module):
            layer: eqx.Module
            def __call__(self, x):
                return self.layer(x)
    """),
    # names that hold an imported module, a library's copy, or an instance of a class whose
    # base is no file of the project
    ("ODL604", """
        import copy
        import equinox as eqx
        import diffrax._step_size_controller.clip as dx_clip
        import numpyro.distributions.transforms as transforms
        clip = dx_clip
        clip.find = len
        def widen(config):
            block = copy.copy(config)
            block.width = 2
            return block
        class ToNumpyro(transforms.Transform):
            def __init__(self, bijection):
                self.bijection = bijection
        layer = eqx.nn.Identity()
    """),
    ("ODL603", """
        import equinox as eqx
        class Net(eqx.Module):
            depth: int = eqx.field(static=True)
    """),
    # a tree map over a module whose leaves include a function, with no filtered tree in the
    # file to mix it with (no `eqx.filter`, `eqx.partition` or filtered gradient)
    ("ODL205", """
        import equinox as eqx
        import jax
        model = eqx.nn.MLP(2, 1, 8, 2, key=jax.random.PRNGKey(0))
        model = jax.tree_util.tree_map(lambda p: p * 0.5, model)
        grads = jax.grad(lambda m: 0.0)(model)
        model = jax.tree_util.tree_map(lambda p, g: p - g, model, grads)
    """),
    # the config object imported from its package, which lives on as `jax.config`; a
    # relative import of a module of the same name
    ("ODL903", """
        from jax import config
        from .jax.config import settings
        config.update("jax_enable_x64", True)
    """),
    # static fields `__init__` fills from plain parameters (the annotation or every construction
    # says so) and from expressions that are never arrays
    ("ODL603", """
        import equinox as eqx
        class Dropout(eqx.Module):
            p: float = eqx.field(static=True)
            mode: str = eqx.field(static=True)
            width: int = eqx.field(static=True)
            def __init__(self, p: float, mode: str, width):
                self.p = p
                self.mode = mode
                self.width = width if width is not None else 1
        layer = Dropout(0.1, "row", None)
    """),
    # a field set by a helper only `__init__` calls (through another helper, a lambda or a
    # comprehension): the instance is still being initialised
    ("ODL604", """
        import equinox as eqx
        class Net(eqx.Module):
            w: float
            sizes: list
            def __init__(self, n):
                self._build(n)
                self.sizes = [self._size(k) for k in range(n)]
            def _build(self, n):
                (lambda: self._fill(n))()
            def _fill(self, n):
                self.w = float(n)
            def _size(self, k):
                self.last = k
                return k
    """),
    ("ODL605", """
        import equinox as eqx
        f = eqx.filter_jit(lambda x: x)
    """),
    ("ODL101", """
        import jax
        @jax.custom_jvp
        def f(x):
            return x  # nondiff_argnums nowhere given
    """),
    ("ODL401", """
        import equinox as eqx
        import jax
        def step(c, x):
            return c, x
        def run(xs):
            jax.lax.cond(True, lambda: 0, lambda: 1)
            return jax.lax.scan(step, 0.0, xs)
    """),
    ("ODL203", """
        import optax
        opt = optax.adamw(1e-3)
        updates, state = opt.update(grads, state, params)
    """),
    ("ODL801", """
        import diffrax
        solver = diffrax.Tsit5()  # max_steps=None, but no diffeqsolve
    """),
    ("ODL804", """
        import diffrax
        import jax
        def solve(y0):
            return diffrax.diffeqsolve(diffrax.ODETerm(lambda t, y, a: y), diffrax.Tsit5(), 0.0, 1.0, 0.1, y0)
        jax.jit(solve)(1.0)  # compiled, never differentiated
    """),
    ("ODL301", """
        import jax
        def host(x):
            return jax.pure_callback(print, x, x)
        jax.grad(lambda y: y ** 2)(1.0)
    """),
    ("ODL302", """
        import diffrax
        import jax
        sol = diffrax.diffeqsolve(diffrax.ODETerm(lambda t, y, a: y), diffrax.Tsit5(), 0.0, 1.0, 0.1, 1.0)
        jax.grad(lambda t1: t1)(1.0)
    """),
    # a key from outside drawn from and then split or passed on (the dataloader's permutation
    # then split): the two uses compute unrelated things (reported in strict mode only)
    ("ODL704", _DRAWN_THEN_SPLIT),
    ("ODL704", """
        import jax
        def init(key, n):
            return jax.random.normal(key, (n,))
        def build(key, n):
            order = jax.random.permutation(key, n)
            return order, init(key, n)
    """),
]


@pytest.mark.parametrize(("rule", "code"), FIRES)
def test_precheck_keeps_code_the_rule_reports(rule: str, code: str) -> None:
    source = _code(code)
    assert candidates(source, "f.py", [rule_for(rule)]) == [rule_for(rule)]
    assert rule in {f.code for f in lint_source(source, "f.py", codes={rule}).findings}


@pytest.mark.parametrize(("rule", "code"), DROPS)
def test_precheck_drops_code_the_rule_cannot_report(rule: str, code: str) -> None:
    source = _code(code)
    assert candidates(source, "f.py", [rule_for(rule)]) == []
    assert rule not in {f.code for f in lint_source(source, "f.py", codes={rule}, gate=False).findings}


def test_in_strict_mode_a_key_drawn_from_and_then_split_keeps_the_rule_which_reports_it() -> None:
    source, strict = _code(_DRAWN_THEN_SPLIT), frozenset({"strict-key-reuse"})
    assert candidates(source, "f.py", [rule_for("ODL704")], options=strict) == [rule_for("ODL704")]
    assert "ODL704" in {f.code for f in lint_source(source, "f.py", codes={"ODL704"}, options=strict).findings}
