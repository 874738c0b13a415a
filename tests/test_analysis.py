"""The semantic model on its own: value kinds, module leaves, traced contexts and values, flow."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from odelint.analysis import jax_api
from odelint.analysis.facts import Facts, Kind
from odelint.analysis.leaves import LeafKind
from odelint.analysis.scopes import Site, build_scope_index


class Model:
    """A program and its facts; `at(name)` asks about a name at the end of the module."""

    def __init__(self, source: str) -> None:
        self.module = cst.parse_module(textwrap.dedent(source))
        self.index = build_scope_index(self.module, {cst.Call, cst.If})
        self.facts = Facts(self.index)
        self.end = Site(self.index.module_scope, 10**9)

    def kind(self, expression: str) -> Kind:
        return self.facts.kind(cst.parse_expression(expression), self.end)

    def leaves(self, expression: str) -> list[str]:
        found = self.facts.module_class(cst.parse_expression(expression), self.end)
        assert found is not None, f"{expression} is not known as a module"
        return [leaf.describe(expression) for leaf in self.facts.non_array_leaves(found)]

    def ifs(self) -> dict[str, tuple[str | None, str | None]]:
        """Each `if` test's text -> (why its code is traced, the traced value it reads)."""
        found = {}
        for node, site in self.index.of_type(cst.If):
            traced = self.facts.traced_value(node.test, site)
            found[self.module.code_for_node(node.test)] = (self.facts.traced_by(site),
                                                           traced.describe() if traced else None)
        return found


# -- kinds ---------------------------------------------------------------------------------

KINDS = """
import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, Float, PRNGKeyArray

key = jax.random.PRNGKey(0)
k1, k2 = jax.random.split(key)
keys = jax.random.split(key, 4)
x = jnp.zeros(3)
y = x * 2 + 1
z = x.at[0].set(1.0)
shape = x.shape
n = 3
name = "run"
mlp = eqx.nn.MLP(2, 2, 8, 2, key=key)
params = eqx.filter(mlp, eqx.is_array)
dyn, static = eqx.partition(mlp, eqx.is_array)
opt = optax.chain(optax.clip(1.0), optax.adam(1e-3))
schedule = optax.cosine_decay_schedule(1e-3, 100)
batched = jax.vmap(lambda v: v)
square = lambda v: v * v
updated = eqx.apply_updates(mlp, params)

def make(k):
    return eqx.nn.Linear(2, 2, key=k), optax.adam(1e-3), jnp.ones(2)

net, optim, w = make(key)

def annotated(a: Float[Array, "n"], k: PRNGKeyArray, m: eqx.nn.MLP):
    return a, k, m
"""


@pytest.mark.parametrize(("expression", "expected"), [
    ("key", Kind.KEY), ("k1", Kind.KEY), ("keys", Kind.KEY), ("keys[0]", Kind.KEY),
    ("x", Kind.ARRAY), ("y", Kind.ARRAY), ("z", Kind.ARRAY), ("x[1:]", Kind.ARRAY), ("x.T", Kind.ARRAY),
    ("shape", Kind.PLAIN), ("n", Kind.PLAIN), ("name", Kind.PLAIN), ("None", Kind.PLAIN),
    ("mlp", Kind.MODULE), ("params", Kind.FILTERED), ("dyn", Kind.FILTERED), ("updated", Kind.MODULE),
    ("opt", Kind.OPTAX), ("schedule", Kind.FUNCTION), ("batched", Kind.FUNCTION), ("square", Kind.FUNCTION),
    ("make", Kind.FUNCTION), ("net", Kind.MODULE), ("optim", Kind.OPTAX), ("w", Kind.ARRAY),
    ("[1, 2]", Kind.OTHER), ("undefined_name", Kind.UNKNOWN), ("jnp.shape(x)", Kind.UNKNOWN),
])
def test_value_kinds(expression: str, expected: Kind) -> None:
    assert Model(KINDS).kind(expression) is expected


def test_annotated_parameters_have_the_declared_kinds() -> None:
    model = Model(KINDS)
    scope = next(s for s in model.index.body_scopes.values() if getattr(s.node, "name", None)
                 and s.node.name.value == "annotated")
    site = Site(scope, 10**9)
    kinds = [model.facts.kind(cst.Name(name), site) for name in ("a", "k", "m")]
    assert kinds == [Kind.ARRAY, Kind.KEY, Kind.MODULE]


def test_parameters_take_the_kind_their_callers_pass() -> None:
    model = Model("""
        import jax.numpy as jnp
        import equinox as eqx

        def inner(a, b, c):
            return a

        inner(jnp.ones(2), eqx.nn.Linear(1, 1, key=None), 1.0)
        inner(jnp.zeros(2), None, 2.0)
    """)
    scope = next(s for s in model.index.body_scopes.values() if s.node.name.value == "inner")
    site = Site(scope, 10**9)
    assert model.facts.kind(cst.Name("a"), site) is Kind.ARRAY
    assert model.facts.kind(cst.Name("b"), site) is Kind.MODULE, "a module at any call site is a module"
    assert model.facts.kind(cst.Name("c"), site) is Kind.PLAIN


def test_self_in_a_module_method_is_that_module() -> None:
    model = Model("""
        import equinox as eqx

        class Net(eqx.Module):
            def __call__(self, x):
                return x

        class NotAModule:
            def __call__(self, x):
                return x
    """)
    for name, expected in (("Net", Kind.MODULE), ("NotAModule", Kind.UNKNOWN)):
        method = next(s for s in model.index.body_scopes.values()
                      if s.kind == "function" and s.parent.node.name.value == name)
        assert model.facts.kind(cst.Name("self"), Site(method, 10**9)) is expected


# -- module classes and leaves ----------------------------------------------------------------

LEAVES = """
import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
from typing import Callable

class Block(eqx.Module):
    lin: eqx.nn.Linear
    act: Callable
    scale: float
    tag: str = eqx.field(static=True)

class Net(eqx.Module):
    mlp: eqx.nn.MLP
    blocks: list
    f: Callable
    w: jax.Array
    ctrl: diffrax.PIDController

    def __init__(self, key):
        self.mlp = eqx.nn.MLP(2, 2, 4, 2, key=key)
        self.blocks = [Block(eqx.nn.Linear(2, 2, key=key), jax.nn.relu, 1.0, "a") for _ in range(2)]
        self.f = jax.vmap(lambda x: x)
        self.w = jnp.zeros(3)
        self.ctrl = diffrax.PIDController(rtol=1e-3, atol=1e-6)

class Untyped(eqx.Module):
    act: object
    label: object

    def __init__(self):
        self.act = jax.nn.tanh
        self.label = "x"

class Arrays(eqx.Module):
    w: jax.Array
    lin: eqx.nn.Linear
    frozen: Callable = eqx.field(static=True)

class Child(Arrays):
    g: Callable

net = Net(None)
untyped = Untyped()
arrays = Arrays()
child = Child()
mlp = eqx.nn.MLP(1, 1, 1, 1, key=None)
seq = eqx.nn.Linear(1, 1, key=None)
drop = eqx.nn.Dropout(0.1)
"""


def test_leaves_are_named_by_their_path() -> None:
    leaves = Model(LEAVES).leaves("net")
    assert "`net.mlp.activation` is a function" in leaves
    assert "`net.f` is a function (a `jax.vmap` result)" in leaves
    assert "`net.ctrl.norm` is a function" in leaves
    assert "`net.blocks[0].act` is a function" in leaves
    assert "`net.blocks[0].scale` is a Python number" in leaves
    assert not any(".w" in leaf or "lin" in leaf or "tag" in leaf for leaf in leaves)


def test_leaves_from_init_assignments_and_bases() -> None:
    model = Model(LEAVES)
    assert model.leaves("untyped") == ["`untyped.act` is a function (`jax.nn.tanh`)", "`untyped.label` is a string"]
    assert model.leaves("child") == ["`child.g` is a function"]


def test_array_only_modules_have_no_non_array_leaves() -> None:
    model = Model(LEAVES)
    assert model.leaves("arrays") == [], "static fields are not leaves"
    assert model.leaves("seq") == []


def test_library_modules_from_the_data_table() -> None:
    model = Model(LEAVES)
    assert model.leaves("mlp") == ["`mlp.activation` is a function", "`mlp.final_activation` is a function"]
    found = model.facts.module_class(cst.Name("drop"), model.end)
    assert [leaf.kind for leaf in model.facts.non_array_leaves(found)] == [LeafKind.SCALAR, LeafKind.SCALAR]
    assert not LeafKind.SCALAR.crashes_transforms and LeafKind.FUNCTION.crashes_transforms


def test_library_module_table() -> None:
    assert jax_api.is_library_module("diffrax.Tsit5") and jax_api.is_library_module("lineax.CG")
    assert not jax_api.is_library_module("diffrax.diffeqsolve"), "functions are not classes"
    assert not jax_api.is_library_module("equinox.nn.State")
    assert jax_api.library_module("optimistix.Newton").functions == ("norm",)


# -- contexts -------------------------------------------------------------------------------

CONTEXTS = """
import equinox as eqx
import functools
import jax
import jax.numpy as jnp
from jax import lax

@functools.partial(jax.jit, static_argnums=(1,))
def step(x, n):
    y = x * 2
    s = x.shape[0]
    if y > 0:
        pass
    if n > 0:
        pass
    if s > 1:
        pass
    if x is None:
        pass
    helper(y, s)
    return y

def helper(a, b):
    if a > b:
        pass
    if b > 1:
        pass

@eqx.filter_jit
def filtered(model, x: jax.Array, flag):
    if flag:
        pass
    if x.sum() > 0:
        pass

def body(carry, x):
    if carry > 0:
        pass
    return carry, x

lax.scan(body, 0.0, jnp.ones(3))

def vector_field(t, y, args):
    if args:
        pass
    if y > 1:
        pass

import diffrax
term = diffrax.ODETerm(vector_field)

def host(x):
    if x > 0:
        pass

batched = jax.vmap(lambda v, w: v, in_axes=(0, None))
"""


def test_traced_contexts_and_values() -> None:
    ifs = Model(CONTEXTS).ifs()
    assert ifs["y > 0"] == ("`step` is traced by `jax.jit`", "`x` (a parameter of `step`, traced by `jax.jit`)")
    assert ifs["n > 0"][1] is None, "static_argnums"
    assert ifs["s > 1"][1] is None, "x.shape is static"
    assert ifs["x is None"][1] is None, "identity tests are static"
    assert ifs["a > b"][0].startswith("`helper` is called from `step`")
    assert ifs["a > b"][1] == "`x` (a parameter of `step`, traced by `jax.jit`), passed as `a` to `helper`"
    assert ifs["b > 1"][1] is None
    assert ifs["flag"] == ("`filtered` is traced by `eqx.filter_jit`", None), "filter_jit keeps non-arrays static"
    assert ifs["x.sum() > 0"][1] == "`x` (a parameter of `filtered`, traced by `eqx.filter_jit`)"
    assert ifs["carry > 0"][1] == "`carry` (a parameter of `body`, traced by `lax.scan`)"
    assert ifs["args"][1] is None, "diffrax traces a vector field's t and y, not its args"
    assert ifs["y > 1"][1] == "`y` (a parameter of `vector_field`, traced by `diffrax.ODETerm`)"
    assert ifs["x > 0"] == (None, None), "a function nothing traces runs on the host"


def test_differentiated_contexts() -> None:
    model = Model("""
        import jax

        def loss(w):
            if w > 0:
                pass

        def host(w):
            if w > 0:
                pass

        jax.grad(loss)(1.0)
    """)
    reasons = {model.module.code_for_node(node.test) + str(i): model.facts.differentiated_by(site)
               for i, (node, site) in enumerate(model.index.of_type(cst.If))}
    assert reasons == {"w > 00": "`loss` is differentiated by `jax.grad`", "w > 01": None}


def test_transform_table() -> None:
    jit, grad, jvp = jax_api.transform("jax.jit"), jax_api.transform("jax.grad"), jax_api.transform("jax.jvp")
    assert jit.traces and not jit.differentiates and jit.equinox == "equinox.filter_jit"
    assert grad.reverse and not grad.forward and not grad.traces
    assert jvp.forward and jvp.calls_now
    assert jax_api.transform("equinox.filter_grad").filtered
    assert not jax_api.traced_body("jax.lax.while_loop").reverse
    assert jax_api.returns_array("jax.numpy.sqrt") and not jax_api.returns_array("jax.numpy.shape")
    assert jax_api.returns_key("jax.random.split") and not jax_api.returns_array("jax.random.split")


# -- flow across files and through optax ------------------------------------------------------

def test_module_classes_of_the_projects_other_files(tmp_path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "model.py").write_text(textwrap.dedent("""
        import equinox as eqx
        import jax

        class Net(eqx.Module):
            mlp: eqx.nn.MLP

        class Plain:
            pass

        class Arrays(eqx.Module):
            w: jax.Array
    """))
    train = package / "train.py"
    source = textwrap.dedent("""
        from .model import Net, Plain, Arrays
        from pkg.model import Net as Absolute

        def make(key):
            return Net(key), 1

        net, count = make(None)
        other = Absolute(None)
        plain = Plain()
        arrays = Arrays(None)
    """)
    train.write_text(source)
    module = cst.parse_module(source)
    index = build_scope_index(module, {cst.Call})
    facts = Facts(index, str(train))
    end = Site(index.module_scope, 10**9)
    for name in ("net", "other"):
        found = facts.module_class(cst.Name(name), end)
        assert found is not None and found.name == "Net"
        assert [leaf.describe(name) for leaf in facts.non_array_leaves(found)] == [
            f"`{name}.mlp.activation` is a function", f"`{name}.mlp.final_activation` is a function"]
    assert facts.kind(cst.Name("plain"), end) is not Kind.MODULE
    assert facts.non_array_leaves(facts.module_class(cst.Name("arrays"), end)) == ()
    assert Facts(index).module_class(cst.Name("net"), end) is None, "without a path no other file is read"


def test_optimisers_that_keep_no_state_per_parameter() -> None:
    model = Model("""
        import optax
        a = optax.sgd(0.1)
        b = optax.sgd(0.1, momentum=0.9)
        c = optax.sgd(0.1, None)
        d = optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(0.1))
        e = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(0.1))
    """)
    keeps = {name: model.facts.optax_keeps_param_state(cst.Name(name), model.end) for name in "abcde"}
    assert keeps == {"a": False, "b": True, "c": False, "d": False, "e": True}


BASE_TYPED = """
    import equinox as eqx
    import jax

    class AbstractHead(eqx.Module):
        pass

    class MLPHead(AbstractHead):
        mlp: eqx.nn.MLP

        def __init__(self, key):
            self.mlp = eqx.nn.MLP(2, 2, 8, 1, key=key)

    class Net(eqx.Module):
        body: eqx.Module
        head: AbstractHead
        norm: eqx.Module

        def __init__(self, key, norm):
            self.body = eqx.nn.MLP(2, 2, 8, 1, key=key)
            self.head = MLPHead(key)
            self.norm = norm

        def features(self, x):
            return self.body(x)

    net = Net(jax.random.PRNGKey(0), eqx.nn.LayerNorm(2))
"""


def test_a_field_annotated_with_a_base_type_holds_what_init_assigns() -> None:
    """`body: eqx.Module` assigned an MLP has the MLP's function leaf; an abstract base
    annotation gives way to the subclass assigned, and a constructor argument to what the
    construction passes (`eqx.nn.LayerNorm`)."""
    model = Model(BASE_TYPED)
    assert model.leaves("net") == ["`net.body.activation` is a function", "`net.body.final_activation` is a function",
                                   "`net.head.mlp.activation` is a function",
                                   "`net.head.mlp.final_activation` is a function"]
    assert model.facts.module_class(cst.parse_expression("net.body"), model.end).name == "equinox.nn.MLP"
    assert model.facts.module_class(cst.parse_expression("net.head"), model.end).name == "MLPHead"
    assert model.facts.module_class(cst.parse_expression("net.norm"), model.end).name == "equinox.nn.LayerNorm"


CONSTRUCTED = """
    import equinox as eqx
    import jax

    class Wrapper(eqx.Module):
        inner: eqx.Module
        label: str

        def __init__(self, inner, label="wrapped"):
            self.inner = inner
            self.label = label

    class Either(eqx.Module):
        branch: eqx.Module

        def __init__(self, branch):
            self.branch = branch

    key = jax.random.PRNGKey(0)
    wrapped = Wrapper(eqx.nn.MLP(2, 2, 8, 1, key=key), label="mlp")
    left = Either(eqx.nn.Linear(2, 2, key=key))
    right = Either(eqx.nn.MLP(2, 2, 8, 1, key=key))
"""


def test_constructor_arguments_reach_the_fields_init_assigns() -> None:
    """`Wrapper(eqx.nn.MLP(...))`: `inner` holds an MLP; when the constructions disagree
    (`Either` built around a Linear and an MLP) the field's class is not guessed."""
    model = Model(CONSTRUCTED)
    assert sorted(model.leaves("wrapped")) == ["`wrapped.inner.activation` is a function",
                                               "`wrapped.inner.final_activation` is a function",
                                               "`wrapped.label` is a string"]
    assert model.facts.module_class(cst.parse_expression("wrapped.inner"), model.end).name == "equinox.nn.MLP"
    assert model.facts.module_class(cst.parse_expression("left.branch"), model.end).name == "equinox.Module"


SEQUENTIAL = """
    import equinox as eqx
    import jax

    key = jax.random.PRNGKey(0)
    wrapped = eqx.nn.Sequential([eqx.nn.Linear(2, 8, key=key), eqx.nn.Lambda(jax.nn.relu)])
    bare = eqx.nn.Sequential([eqx.nn.Linear(2, 8, key=key), jax.nn.relu, eqx.nn.MLP(8, 1, 4, 1, key=key)])
    linear = eqx.nn.Sequential([eqx.nn.Linear(2, 8, key=key), eqx.nn.Linear(8, 1, key=key)])
"""


def test_a_sequential_has_the_leaves_of_the_layers_it_is_given() -> None:
    model = Model(SEQUENTIAL)
    assert model.leaves("wrapped") == ["`wrapped.layers[1].fn` is a function"]
    assert model.leaves("bare") == ["`bare.layers[1]` is a function (`jax.nn.relu`)",
                                    "`bare.layers[2].activation` is a function",
                                    "`bare.layers[2].final_activation` is a function"]
    assert model.leaves("linear") == []
    assert model.kind("linear") is Kind.MODULE


CONTAINERS = """
    import equinox as eqx
    import jax

    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    blocks = [eqx.nn.MLP(2, 2, 8, 1, key=k) for k in keys]
    pair = (eqx.nn.Linear(2, 2, key=keys[0]), eqx.nn.Linear(2, 2, key=keys[1]))
    scales = [1.0, 2.0]
    first = blocks[0]
    for block in blocks:
        pass
    rest = blocks[1:]
"""


def test_indexing_and_iterating_a_container_gives_what_it_holds() -> None:
    model = Model(CONTAINERS)
    assert [model.kind(name) for name in ("blocks[0]", "first", "block", "pair[1]", "scales[0]")] == [
        Kind.MODULE, Kind.MODULE, Kind.MODULE, Kind.MODULE, Kind.PLAIN]
    assert model.kind("rest") is Kind.UNKNOWN, "a slice is a list again, not an element"
    assert model.leaves("block") == ["`block.activation` is a function", "`block.final_activation` is a function"]
    assert model.leaves("pair[0]") == []


def test_iterating_a_dict_gives_its_keys_and_indexing_it_its_values() -> None:
    model = Model("""
        import jax.numpy as jnp

        expected = {"loc": jnp.array([0.5, -2.0]), "scale": jnp.array([2.0])}
        for name in expected:
            pass
        first = expected["loc"]
    """)
    assert model.kind("name") is Kind.PLAIN, "`for k in d` gives the keys, strings here"
    assert model.kind("first") is Kind.ARRAY and model.kind('expected["loc"]') is Kind.ARRAY


TRAINED_IN_A_HELPER = """
import equinox as eqx
import jax
import optax


class Net(eqx.Module):
    layers: list

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.layers = [eqx.nn.Linear(4, 8, key=k1), eqx.nn.Linear(8, 1, key=k2)]


def fit(model, batches, optim):
    opt_state = optim.init(model)

    @jax.jit
    def step(model, opt_state, x):
        grads = jax.grad(lambda m: m.layers[0](x).sum())(model)
        updates, opt_state = optim.update(grads, opt_state, model)
        model = optax.apply_updates(model, updates)
        return model, opt_state

    for x in batches:
        model, opt_state = step(model, opt_state, x)
    return model


model = Net(jax.random.PRNGKey(0))
model = fit(model, [], optax.adamw(1e-3))
"""


def test_a_class_met_again_while_it_is_worked_out_is_not_kept_as_unknown() -> None:
    """`fit` and `step` pass the model round a loop (`model = step(model)`, `step` returns what
    it was given): asking first where `fit` starts must not leave `step`'s parameter unknown."""
    model = Model(TRAINED_IN_A_HELPER)
    calls = {model.module.code_for_node(call): (call, site) for call, site in model.index.of_type(cst.Call)}
    order = ["optim.init(model)", "optim.update(grads, opt_state, model)", "optax.apply_updates(model, updates)"]
    for text in order:
        call, site = calls[text]
        argument = call.args[-1].value if text.startswith("optim.update") else call.args[0].value
        found = model.facts.module_class(argument, site)
        assert found is not None and found.name == "Net", text
        assert model.facts.non_array_leaves(found) == ()


def test_the_optimiser_rules_together_accept_the_helper_trained_model() -> None:
    """Run together (ODL201 asks about `optim.init(model)` in `fit` first), the optimiser rules
    must still know `step`'s model: every leaf is an array, so nothing fails."""
    from odelint.engine.core import lint_source

    found = lint_source(textwrap.dedent(TRAINED_IN_A_HELPER), "train.py", {"ODL201", "ODL202", "ODL204"}).findings
    assert [f"{f.code} {f.span.line}" for f in found] == []


def test_a_name_calls_the_function_its_scope_sees_wherever_it_stands() -> None:
    """`Facts.callee` remembers a name's answer per scope: two calls of one name in a scope
    agree, and a scope that binds the name again answers for its own binding."""
    model = Model('''
        def step(x):
            return x

        def loop(x):
            step(x)
            return step(step(x))

        def shadowed(x):
            def step(y):
                return y + 1
            return step(x)
    ''')
    outer = next(s for s in model.module.body if isinstance(s, cst.FunctionDef) and s.name.value == "step")
    answers = {}
    for call, site in model.index.of_type(cst.Call):
        function = site.scope.node.name.value  # type: ignore[attr-defined]
        answers.setdefault(function, []).append(model.facts.callee(call.func, site.scope))
    assert answers["loop"] == [outer, outer, outer]
    [inner] = answers["shadowed"]
    assert inner is not None and inner is not outer and inner.name.value == "step"
