"""Pre-checks that read which names may hold traced values and how keys flow through loops
(odelint.analysis.sketch_reach): each condition pinned both ways, on code where the rule fires
and on similar code that the pre-check rules out before any LibCST parse."""

from __future__ import annotations

import ast
import textwrap

import pytest
from odelint.analysis.sketch import Sketch
from odelint.api.registry import rule_for
from odelint.engine.core import candidates, lint_source

FIRES = [
    # ODL702: a traced parameter, and a name assigned from one
    ("ODL702", """
        import jax

        @jax.jit
        def f(x):
            y = x * 2
            if y > 0:
                return x
            return -x
    """),
    # ODL702: a helper's parameter that traced code passes a traced value for
    ("ODL702", """
        import jax

        def clip(v):
            return v if v > 0 else 0.0

        @jax.jit
        def f(x):
            return clip(x)
    """),
    # ODL702: a helper given a traced value by keyword
    ("ODL702", """
        import jax

        def pick(x, dim):
            return x if dim > 1 else -x

        @jax.jit
        def f(x, n):
            return pick(x, dim=n)
    """),
    # ODL702: a call the pre-check cannot map (a `*args`) makes every parameter maybe traced
    ("ODL702", """
        import jax

        def pick(x, dim):
            return x if dim > 1 else -x

        @jax.jit
        def f(x, n):
            pair = (x, n)
            return pick(*pair)
    """),
    # ODL702: `static_argnames` names another parameter; this one is traced
    ("ODL702", """
        from functools import partial
        import jax

        @partial(jax.jit, static_argnames="n")
        def f(x, n):
            if x > n:
                return x
            return -x
    """),
    # ODL702: the same shapes where the rule reads an array: a parameter filter_jit gives an
    # array, an item of an unpacked array, a parameter with no declared kind
    ("ODL702", """
        import equinox as eqx
        import jax

        def helper(x, bidirectional):
            if bidirectional:
                return x
            return -x

        @eqx.filter_jit
        def solve(terms, y0: jax.Array, flag):
            _, last = y0, y0[-1]
            if last > 0:
                return helper(y0, y0 > 0)
            return -y0
    """),
    # ODL703: print of a traced value
    ("ODL703", """
        import jax

        @jax.jit
        def f(x):
            print(x + 1)
            return x
    """),
    # ODL705: a key from outside the traced function
    ("ODL705", """
        import jax

        KEY = jax.random.PRNGKey(0)

        @jax.jit
        def f(x):
            return x + jax.random.normal(KEY)
    """),
    # ODL705: a closure over a key of a function that runs untraced, building a traced one
    ("ODL705", """
        import jax

        def sampler(key):
            def draw(p):
                return jax.random.choice(key, 3, p=p)
            return jax.vmap(draw)

        draw_all = sampler(jax.random.PRNGKey(0))
    """),
    # ODL704: a loop consumes a key it does not split again
    ("ODL704", """
        import jax

        def f(key):
            total = 0.0
            for i in range(3):
                x = jax.random.normal(key)
                total = total + x
            return total
    """),
    # ODL704: a constant key made in a counting loop
    ("ODL704", """
        import jax

        def f():
            return [jax.random.normal(jax.random.PRNGKey(0)) for _ in range(3)]
    """),
]

DROPPED = [
    # ODL702: tests of shapes, `is None`, membership, a parameter with a default, a loop variable
    ("ODL702", """
        import jax

        @jax.jit
        def body(carry, x, n=3):
            for i in range(3):
                if i > 1:
                    pass
            if x.shape[0] > 1 and len(x) and carry is None or "k" in carry:
                pass
            if n > 2:
                pass
            return carry, x
    """),
    # ODL702: the same name as a traced parameter, but in an untraced function
    ("ODL702", """
        import jax

        @jax.jit
        def f(x):
            return x

        def host(x):
            if x > 0:
                return x
    """),
    # ODL702: `self` of a jitted method is bound, not traced
    ("ODL702", """
        import jax

        class A:
            @jax.jit
            def f(self, x):
                if self.flag:
                    return x
                return x
    """),
    # ODL702: a helper that traced code gives only constants for the tested parameter, and
    # a parameter named like a traced one elsewhere, given only through an alias or a parameter
    ("ODL702", """
        import jax

        def pick(x, dim):
            return x * 2 if dim > 1 else x

        def run(fn, x):
            return fn(x)

        @jax.jit
        def f(x):
            return pick(x, 2) + pick(x, dim=1) + run(pick, x)
    """),
    # ODL702: parameters a transform's options mark static, by name or by position
    ("ODL702", """
        from functools import partial
        import jax

        @partial(jax.jit, static_argnames=("n", "mode"))
        def f(x, n, mode):
            if n > 2 and mode:
                return x
            return -x

        def g(x, flag, steps):
            if flag or steps > 3:
                return x
            return -x

        fast = jax.jit(g, static_argnums=(1, -1))
    """),
    # ODL702: a helper handed to an imported function that is no function wrapper
    # (dynamiqs' `f = cartesian_vmap(_sepropagator, ...)`, then `f(H, ...)` in jitted code):
    # `Facts.callee` sees through `jax.jit(f)`, not through it, so no call passes it a tracer
    ("ODL702", """
        import jax
        from batching import cartesian_vmap

        def _solve(h, method):
            return h * 2 if method is None and is_constant(h) else h

        @jax.jit
        def solve(h, method):
            f = cartesian_vmap(_solve, (0, None))
            return f(h, method)
    """),
    # ODL702: an imported function jitted under the name of a method of the file: the method
    # is not what is traced, so its `self` holds no traced value
    ("ODL702", """
        import jax
        from ops import evolve

        class Runner:
            def evolve(self, x):
                if self.flag:
                    return x
                return -x

            def build(self):
                self.step = jax.jit(evolve)
    """),
    # ODL702: Equinox's filter_jit traces arrays only: an unannotated parameter no call gives
    # an array is a Python value there (diffrax's `diffeqsolve(terms, ...)`)
    ("ODL702", """
        import equinox as eqx
        import jax

        @eqx.filter_jit
        def solve(terms, y0: jax.Array, flag):
            if flag and terms:
                return y0
            return -y0
    """),
    # ODL702: tests the rule reads as no array: an attribute of a traced pytree, another call's
    # result, a name a call's result is unpacked into, a parameter declared a Python bool
    ("ODL702", """
        import jax

        def helper(x, bidirectional: bool):
            if bidirectional:
                return x
            return -x

        @jax.jit
        def train_step(state, batch, flag):
            if state.dynamic_scale:
                pass
            if is_leaf(batch):
                pass
            _, fsal = split(batch)
            if fsal:
                pass
            return helper(batch, flag)
    """),
    # ODL702: an item store binds no name: `table[k] = x` makes neither `table` nor `k` traced
    ("ODL702", """
        import jax

        @jax.jit
        def lookup(x):
            table = {}
            for k in ("a", "b"):
                table[k] = x
                if k:
                    pass
            return table
    """),
    # ODL703: static values of traced ones: a dtype, a dtype test, a tree's structure
    ("ODL703", """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def f(x):
            print(jnp.result_type(x), jnp.issubdtype(x.dtype, jnp.floating), jax.tree_util.tree_structure(x))
            return x
    """),
    # ODL703: print of constants inside traced code
    ("ODL703", """
        import jax

        @jax.jit
        def f(x):
            print("compiling", len(x))
            return x
    """),
    # ODL705: a key passed in, or made in the traced function
    ("ODL705", """
        import jax

        @jax.jit
        def f(x, key):
            local = jax.random.PRNGKey(1)
            return x + jax.random.normal(key) + jax.random.normal(local)
    """),
    # ODL705: a closure over a key of a function a decorator or a call surely traces
    # (dynamax's `_generic_message`: `@vmap def f(key, probs)`, then `vmap(lambda p: choice(key, ...))`)
    ("ODL705", """
        import jax
        from jax import vmap

        @vmap
        def message(key, probs):
            return vmap(lambda p: jax.random.choice(key, 3, p=p))(probs)

        def sample(keys, probs):
            return jax.vmap(lambda key: vmap(lambda p: jax.random.choice(key, 3, p=p))(probs))(keys)
    """),
    # ODL704: keys split again in the loop, or the loop's own target
    ("ODL704", """
        import jax

        def f(key, keys):
            for i in range(3):
                key, sub = jax.random.split(key)
                x = jax.random.normal(sub)
            for k in keys:
                x = jax.random.normal(k)
            return [jax.random.normal(j) for j in keys]
    """),
    # ODL704: a constant key in a loop over configurations, or made before the loop
    ("ODL704", """
        import jax

        def f(configs):
            for config in configs:
                x = jax.random.normal(jax.random.PRNGKey(0))
            for i in range(jax.random.randint(jax.random.PRNGKey(1), (), 0, 3)):
                pass
    """),
]


@pytest.mark.parametrize(("rule", "code"), FIRES)
def test_kept_where_the_rule_fires(rule: str, code: str) -> None:
    source = textwrap.dedent(code)
    assert [r.code for r in candidates(source, "f.py", [rule_for(rule)])] == [rule]
    assert rule in {f.code for f in lint_source(source, "f.py").findings}


@pytest.mark.parametrize(("rule", "code"), DROPPED)
def test_dropped_where_it_cannot(rule: str, code: str) -> None:
    source = textwrap.dedent(code)
    assert candidates(source, "f.py", [rule_for(rule)]) == []
    assert rule not in {f.code for f in lint_source(source, "f.py").findings}


@pytest.mark.parametrize("order", ["a first", "b first"])
def test_names_assigned_in_a_cycle_reach_every_function_whatever_the_order(order: str) -> None:
    """`a = jax.jit(b); b = jax.vmap(a)` and `b = jax.checkpoint(helper)`: both names may stand
    for `helper`, whichever name is asked about first (a cached partial answer once made this
    depend on the order)."""
    import ast

    from odelint.analysis.sketch import Sketch

    sketch = Sketch(ast.parse(textwrap.dedent("""
        import jax

        def helper(x):
            return x

        a = jax.jit(b)
        b = jax.vmap(a)
        b = jax.checkpoint(helper)
    """)))
    first, second = ("a", "b") if order == "a first" else ("b", "a")
    for name in (first, second):
        assert [f.name for f in sketch.reach.functions_named(name)] == ["helper"]


def test_a_name_stands_for_what_facts_callee_follows_and_an_attribute_for_methods() -> None:
    """`Facts.callee` sees through function wrappers only (`jax.jit(f)`), not through another
    call (`make(f)`, `functools.partial(f, 1)`, whose result the model never takes for `f`
    through a name), and `Reach.function` takes
    `obj.step` for a method `step` of a class, never for a plain function of that name."""
    import ast

    from odelint.analysis.sketch import Sketch

    sketch = Sketch(ast.parse(textwrap.dedent("""
        import functools
        import jax
        import library

        def step(x):
            return x

        def other(x):
            return x

        class Model:
            def step(self, x):
                return x

        wrapped = jax.jit(jax.vmap(step))
        built = library.make(other, step)
        partly = functools.partial(step, 1)
        alias = wrapped
        held = lambda x: x
        method = Model().step
    """)))
    reach = sketch.reach
    named = {name: sorted(getattr(f, "name", "lambda") for f in reach.functions_named(name))
             for name in ("wrapped", "built", "partly", "alias", "held", "method")}
    assert named == {"wrapped": ["step", "step"], "built": [], "partly": [], "alias": ["step", "step"],
                     "held": ["lambda"], "method": ["step"]}
    methods = [function for function, bound in reach.function_targets(ast.parse("model.step").body[0].value)]
    assert [(f.name, isinstance(sketch.parent(f), ast.ClassDef)) for f in methods] == [("step", True)]


def test_a_name_stands_only_for_the_defs_a_lookup_from_its_scope_finds() -> None:
    """Two tests each define `reference_impl`; only the one in the scope that vmaps it is
    traced, and only the `helper` that scope sees is reached from it. A method is no bare
    name's function outside its class body, but a `def` assigned to a name stays wherever
    it is defined (`step = self.step`)."""
    import ast

    from odelint.analysis.sketch import Sketch

    sketch = Sketch(ast.parse(textwrap.dedent("""
        import jax

        def helper(x):
            return x

        class Tests:
            def test_scalar(self):
                def helper(x):
                    return x
                def reference_impl(x):
                    return x
                return reference_impl(1.0)

            def test_batched(self, xs):
                def reference_impl(x):
                    return helper(x)
                return jax.vmap(reference_impl)(xs)

            def step(self, x):
                return x

            def run(self, xs):
                step = self.step
                return jax.jit(step)(xs)

    """)))
    traced = sorted((getattr(f, "name", "lambda"), f.lineno) for f in sketch.traced_functions())
    assert traced == [("helper", 4), ("reference_impl", 16), ("step", 20)]

    def targets(name: str) -> list[tuple[str, int]]:  # a bare name at module level
        return [(f.name, f.lineno) for f, _ in sketch.reach.function_targets(ast.Name(name, ast.Load()))]

    assert targets("run") == [] and targets("step") == [("step", 20)]


def test_a_decorator_applies_a_transform_only_as_the_model_reads_decorators() -> None:
    """`@jax.jit`, `@jax.jit(...)`, `@partial(jax.jit, ...)` and a name bound to such a call
    trace the function; a test parametrized over transforms (`@parameterized.parameters(jax.jit,
    jax.pmap)`) is not traced by the transforms it names."""
    import ast

    from odelint.analysis.sketch import Sketch

    sketch = Sketch(ast.parse(textwrap.dedent("""
        import functools
        import jax
        import pytest
        from absl.testing import parameterized

        jit_static = functools.partial(jax.jit, static_argnums=1)

        @jax.jit
        def plain(x):
            return x

        @jax.jit(donate_argnums=0)
        def configured(x):
            return x

        @functools.partial(jax.vmap, in_axes=0)
        def partial_vmap(x):
            return x

        @jit_static
        def named(x, n):
            return x

        @parameterized.parameters(lambda f: f, jax.jit, jax.pmap)
        def test_transform(transform):
            return transform

        @pytest.mark.parametrize("transform", [jax.jit, jax.vmap])
        def test_each(transform):
            return transform
    """)))
    assert sorted(getattr(f, "name", "lambda") for f in sketch.traced_functions()) == [
        "configured", "named", "partial_vmap", "plain"]


def test_a_function_handed_to_a_host_callback_runs_on_the_host_not_traced() -> None:
    """`io_callback(update, ...)` in traced code runs `update` on the host with concrete values
    (`Reach` is never into a callback's functions); a function the traced code calls is traced."""
    import ast

    from odelint.analysis.sketch import Sketch

    sketch = Sketch(ast.parse(textwrap.dedent("""
        import jax
        from jax.experimental import io_callback

        def update(n):
            return int(n)

        def log(n):
            print(n)

        def helper(x):
            return x

        @jax.jit
        def step(x):
            io_callback(update, None, x)
            jax.debug.callback(log, x)
            return helper(x)
    """)))
    assert sorted(getattr(f, "name", "lambda") for f in sketch.traced_functions()) == ["helper", "step"]


def test_a_parameter_stands_for_what_the_calls_of_its_function_pass() -> None:
    """`def apply(fn, x): return jax.jit(fn)(x)` traces what `apply(...)` and `jax.jit(apply)(...)`
    pass for `fn`: a function, a lambda, a method (`Reach._passed_function`), not a function a
    passed lambda only mentions, nor what `library.cond(...)` passes to the file's own `def cond`."""
    import ast

    from odelint.analysis.sketch import Sketch

    sketch = Sketch(ast.parse(textwrap.dedent("""
        import functools
        import jax
        import library

        def apply(fn, x):
            return jax.jit(fn)(x)

        def cond(pred, true_fun, false_fun):
            return jax.vmap(true_fun)(pred)

        def direct(x):
            return x

        def mentioned(x):
            return x

        def branch(x):
            return x

        def bound_first(a, x):
            return x

        apply(direct, 1.0)
        apply(functools.partial(bound_first, 1), 1.0)
        jax.jit(apply)(lambda x: mentioned, 2.0)
        library.cond(True, branch, branch)
    """)))
    traced = sorted(getattr(f, "name", "lambda") for f in sketch.traced_functions())
    assert traced == ["apply", "bound_first", "direct", "lambda"]


LAST_ASSIGNED = """
import jax

def f(x, flag):
    y = jax.numpy.zeros(3)
    if flag:
        y = (1, 2)
    use(y)                       # the tuple, last before the read
    use(x)                       # a parameter
    a, b = 1, 2
    use(a)                       # a tuple target
    y = g(y)                     # the read inside the assignment
    z = 1
    z += 1
    use(z)                       # an augmented assignment
    use(lambda: y)               # a read in a lambda
    w = 1
    use([w for _ in x])          # a read in a comprehension

def h():
    global v
    v = 1
    use(v)                       # a `global`
"""


def test_last_assigned_is_the_plain_assignment_just_before_a_read_in_the_same_function() -> None:
    tree = ast.parse(LAST_ASSIGNED)
    sketch = Sketch(tree)
    reads = {(node.id, node.lineno): node for node in ast.walk(tree)
             if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}

    def last(name: str, line: int) -> str | None:
        found = sketch.reach.last_assigned(reads[(name, line)])
        return ast.unparse(found) if found is not None else None

    assert last("y", 8) == "(1, 2)"
    assert last("x", 9) is None
    assert last("a", 11) is None
    assert last("y", 12) is None
    assert last("z", 15) is None
    assert last("y", 16) is None
    assert last("w", 18) is None
    assert last("v", 23) is None


BINDS = """
def f(a, *rest, key=None, **options):
    b = 1
    (c, [d, *e]) = pair
    for i in range(3):
        pass
    with open(p) as g:
        pass
    use(outer)

def h():
    global v, w
    v = 1
    u = 2

class C:
    field = 1
    def method(self):
        pass

lam = lambda q: q + r
"""


@pytest.mark.parametrize(("scope", "bound", "unbound"), [
    ("f", {"a", "rest", "key", "options", "b", "c", "d", "e", "i", "g"}, {"outer", "p", "pair", "use", "range"}),
    ("h", {"u"}, {"v", "w"}),                # `global` names are the module's
    ("C", {"field"}, {"method", "self"}),    # assignments only: a `def` is no assigned name here
    ("lam", {"q"}, {"r"}),
])
def test_binds_in_names_what_a_scope_binds_itself(scope: str, bound: set[str], unbound: set[str]) -> None:
    """Asked for most calls of a file, so each scope's own code is walked once, whatever the name."""
    tree = ast.parse(BINDS)
    sketch = Sketch(tree)
    node = next(n.value if isinstance(n, ast.Assign) else n for n in ast.walk(tree)
                if getattr(n, "name", None) == scope
                or isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) and n.targets[0].id == scope)
    for name in bound:
        assert sketch.reach.binds_in(node, name), name
    for name in unbound:
        assert not sketch.reach.binds_in(node, name), name
