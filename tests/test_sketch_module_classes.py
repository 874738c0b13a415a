"""The pre-checks of ODL601, ODL402 and ODL205 on the `ast` sketch (odelint.analysis.sketch_module_classes):
which values may be Equinox modules with a function or string leaf.

Each condition is pinned both ways: code the pre-check keeps, on which the rule really fires,
and similar code it drops, on which the rule cannot fire. Classes of other project files are
read on that file's `ast` where that settles them, else by that file's own model, so a
project of two files is built for those.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from odelint.analysis import project
from odelint.analysis import sketch_module_classes as smc
from odelint.analysis.sketch import Sketch
from odelint.analysis.sketch_module_classes import CLEAN, INVALID, NONE
from odelint.api.registry import rule_for
from odelint.engine.core import candidates, lint_source

HEAD = "from typing import Callable\nimport equinox as eqx\nimport jax\nimport jax.numpy as jnp\n"

# a project file next to the linted one: a module with a function field, one of arrays only,
# a configuration module whose `Callable` field is meant to be static, and a plain function
MODELS = '''
from typing import Callable
import equinox as eqx
import jax


class Activated(eqx.Module):
    weight: jax.Array
    activation: Callable


class Weights(eqx.Module):
    weight: jax.Array
    scale: float


class Options(eqx.Module):
    save: Callable | None = None
    progress: Callable = print


class Config:
    width: int = 2


def build(key):
    return Activated(jax.random.normal(key, (2,)), jax.nn.relu)
'''


def _write(folder: Path, code: str) -> str:
    (folder / "models.py").write_text(MODELS)
    path = folder / "train.py"
    path.write_text(HEAD + textwrap.dedent(code))
    return str(path)


def _models_built(monkeypatch) -> list[str]:
    """The names of the files whose model is built from now on (none is kept from before)."""
    built: list[str] = []
    real = project._build

    def counted(path: str, seen: frozenset[str]):
        built.append(Path(path).name)
        return real(path, seen)

    monkeypatch.setattr(project, "_build", counted)
    project.forget()
    return built


def kept_and_fires(folder: Path, code: str, rule: str) -> None:
    path = _write(folder, code)
    source = Path(path).read_text()
    with project.places(object()):
        assert [r.code for r in candidates(source, path, [rule_for(rule)])] == [rule]
        assert rule in {f.code for f in lint_source(source, path, {rule}, gate=False).findings}


def dropped(folder: Path, code: str, rule: str) -> None:
    path = _write(folder, code)
    source = Path(path).read_text()
    with project.places(object()):
        assert candidates(source, path, [rule_for(rule)]) == []
        assert rule not in {f.code for f in lint_source(source, path, {rule}, gate=False).findings}


# -- ODL601: what a transformed function's parameter may receive ---------------------------------

ODL601_KEPT = {
    "a library module with a function leaf, passed at once": """
        def loss(m, x):
            return m(x)
        jax.jit(loss)(eqx.nn.MLP(2, 1, 8, 2, key=jax.random.PRNGKey(0)), jnp.ones(2))
    """,
    "a module a function of this file builds, through a name": """
        def make(key):
            return eqx.nn.MLP(2, 1, 8, 2, key=key)

        def loss(m, x):
            return m(x)

        model = make(jax.random.PRNGKey(0))
        jax.grad(loss)(model, jnp.ones(2))
    """,
    "a parameter annotated with a class of another file that holds a function": """
        from models import Activated

        @jax.jit
        def step(model: Activated, x):
            return model.activation(x)
    """,
    "a class of another file, built by the call of the transformed function": """
        from models import Activated

        def step(model, x):
            return model.activation(x)

        compiled = jax.jit(step)
        compiled(Activated(jnp.ones(2), jax.nn.relu), 1.0)
    """,
    "a parameter annotated with a class of this file that no base makes a module": """
        from models import Config

        class Tuned(Config):
            scale: float

        def step(model: Tuned, x):
            return model(x)

        def run(model, x):
            return jax.jit(step)(model, x)

        run(eqx.nn.MLP(2, 1, 8, 2, key=jax.random.PRNGKey(0)), 1.0)
    """,
    "a module of this file with a string field, through a method's caller": """
        class Named(eqx.Module):
            name: str

        def step(model, x):
            return x

        def run(model, x):
            return jax.jit(step)(model, x)

        run(Named("n"), 1.0)
    """,
}

ODL601_DROPPED = {
    "modules of this file whose fields are arrays, numbers and static functions": """
        from typing import Callable

        class Scaled(eqx.Module):
            scale: float
            w: jax.Array
            activation: Callable = eqx.field(static=True)

            def __init__(self, scale: float, w):
                self.scale = scale * 2
                self.w = w
                self.activation = jax.nn.relu

        def loss(model, x):
            return jnp.sum(model.activation(model.w * x) * model.scale)

        jax.grad(loss)(Scaled(2.0, jnp.ones(2)), jnp.ones(2))
    """,
    "a library module of arrays only": """
        def loss(m, x):
            return m(x)
        jax.jit(loss)(eqx.nn.Linear(2, 1, key=jax.random.PRNGKey(0)), jnp.ones(2))
    """,
    "a parameter annotated with another file's module of arrays and numbers": """
        from models import Weights

        @jax.jit
        def step(model: Weights, x):
            return model.weight * x
    """,
    "another file's module with a function field, given as a static argument": """
        from models import Options, Weights

        def solve(model: Weights, options: Options, x):
            return model.weight * x

        def run(x):
            options = Options()
            return jax.jit(solve, static_argnames=("options",))(Weights(x, 1.0), options, x)
    """,
    "arrays passed where the file builds an MLP for something else": """
        def loss(w, x):
            return jnp.sum(w * x)

        model = eqx.nn.MLP(2, 1, 8, 2, key=jax.random.PRNGKey(0))
        print(model)
        ws = [jnp.ones(2) for _ in range(3)]
        jax.grad(loss)(ws[0], jnp.ones(2))
    """,
    "what another file's function returns (the model does not follow it)": """
        from models import build

        def loss(m, x):
            return m.activation(x)

        jax.grad(loss)(build(jax.random.PRNGKey(0)), 1.0)
    """,
}


@pytest.mark.parametrize("code", ODL601_KEPT.values(), ids=ODL601_KEPT.keys())
def test_odl601_keeps_a_transform_that_may_get_a_module_with_a_function_or_string(tmp_path: Path, code: str) -> None:
    kept_and_fires(tmp_path, code, "ODL601")


@pytest.mark.parametrize("code", ODL601_DROPPED.values(), ids=ODL601_DROPPED.keys())
def test_odl601_drops_a_transform_that_cannot(tmp_path: Path, code: str) -> None:
    dropped(tmp_path, code, "ODL601")


# -- ODL402: control-flow operands ----------------------------------------------------------------

def test_odl402_keeps_a_carry_that_may_hold_a_module_with_a_function(tmp_path: Path) -> None:
    kept_and_fires(tmp_path, """
        def rollout(xs):
            model = eqx.nn.MLP(2, 2, 8, 2, key=jax.random.PRNGKey(0))
            def step(m, x):
                return m, m(x)
            return jax.lax.scan(step, model, xs)
    """, "ODL402")


def test_odl402_drops_a_carry_of_arrays_only(tmp_path: Path) -> None:
    dropped(tmp_path, """
        from models import Weights

        def rollout(model: Weights, xs):
            layer = eqx.nn.Linear(2, 2, key=jax.random.PRNGKey(0))
            def step(carry, x):
                return carry, x
            return jax.lax.scan(step, (model, layer), xs)
    """, "ODL402")


# -- ODL205: a tree map over a module and a filtered tree ---------------------------------------------

def test_odl205_keeps_a_module_with_a_function_filtered_before_the_map(tmp_path: Path) -> None:
    kept_and_fires(tmp_path, """
        def shrink(model: eqx.nn.MLP, scale):
            model = jax.tree_util.tree_map(lambda p: p * scale, eqx.filter(model, eqx.is_array))
            return model
    """, "ODL205")


def test_odl205_drops_a_map_over_a_module_of_arrays_only(tmp_path: Path) -> None:
    dropped(tmp_path, """
        def step(model: eqx.nn.Linear, x, y, lr):
            grads = eqx.filter_grad(loss)(model, x, y)
            return jax.tree_util.tree_map(lambda p, g: p - lr * g, model, grads)
    """, "ODL205")


# -- the classes a type expression may name ---------------------------------------------------------

def test_class_kinds_read_libraries_this_file_and_other_files_models(tmp_path: Path) -> None:
    path = _write(tmp_path, """
        from models import Activated, Weights, build
        import models

        class Local(eqx.Module):
            w: jax.Array

        class Plain:
            pass

        class Fielded(eqx.Module):
            activation: Callable

        class Named(eqx.Module):
            name: str

        class Inherits(Fielded):
            w: jax.Array

        class Static(eqx.Module):
            activation: Callable = eqx.field(static=True)
            w: jax.Array

        class Scaled(eqx.Module):
            scale: float
            w: jax.Array

            def __init__(self, scale: float, w):
                self.scale = scale * 2
                self.w = w

        class Tuned(models.Config):
            scale: float

        class Stored(eqx.Module):
            fn: object

            def __init__(self, fn):
                self.fn = fn

        class Given(eqx.Module):
            t0: float | None

            def __init__(self, t0: float | None = None):
                self.t0 = t0

        Stored(jax.nn.relu)
        Given(0.5)
        Given(t0=None)

        a = eqx.nn.MLP
        b = eqx.nn.Linear
        c = eqx.nn.Sequential
        d = eqx.Module
        e = models.Options
        used = (Activated, Weights, build, Local, Plain, Fielded, Named, Inherits, Static, Scaled, Stored, Given, Tuned)
    """)
    tree = ast.parse(Path(path).read_text())
    sketch = Sketch(tree, path)
    names = {node.id: node for node in ast.walk(tree) if isinstance(node, ast.Name)}
    attributes = {ast.unparse(node): node for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    with project.places(object()):
        kinds = sketch.module_classes.class_kinds
        assert kinds(attributes["eqx.nn.MLP"]) == {INVALID}
        assert kinds(attributes["eqx.nn.Linear"]) == {CLEAN}
        assert kinds(attributes["eqx.nn.Sequential"]) == {INVALID}  # its leaves are the layers it is given
        assert kinds(attributes["eqx.Module"]) == {CLEAN}
        assert kinds(attributes["models.Options"]) == {INVALID}
        assert kinds(names["Activated"]) == {INVALID}
        assert kinds(names["Weights"]) == {CLEAN}
        assert kinds(names["build"]) == {NONE}
        assert kinds(names["Plain"]) == {NONE}
        # classes of this file, read as `Leaves` reads them
        assert kinds(names["Local"]) == {CLEAN}
        assert kinds(names["Fielded"]) == {INVALID}
        assert kinds(names["Named"]) == {INVALID}
        assert kinds(names["Inherits"]) == {INVALID}
        assert kinds(names["Static"]) == {CLEAN}
        assert kinds(names["Scaled"]) == {CLEAN}  # arithmetic, and an array field whatever is assigned
        assert kinds(names["Stored"]) == {INVALID}  # `__init__` is given a function
        assert kinds(names["Given"]) == {CLEAN}  # ... or numbers only
        assert kinds(names["Tuned"]) == {NONE}  # its base, another file's, is no module: neither is it


def test_a_fault_in_another_files_model_keeps_the_rule_which_reports_it(tmp_path: Path, monkeypatch) -> None:
    path = _write(tmp_path, """
        from models import Options

        @jax.jit
        def step(options: Options, x):
            return x
    """)
    source = Path(path).read_text()

    def broken(*args: object) -> None:
        raise ValueError("a fault in the model")

    monkeypatch.setattr(project, "facts_imported", broken)
    with project.places(object()):
        assert [r.code for r in candidates(source, path, [rule_for("ODL601")])] == ["ODL601"]
        result = lint_source(source, path, {"ODL601"})
    assert [crash.code for crash in result.crashes] == ["ODL601"]


def test_another_files_class_is_read_on_its_ast_where_that_settles_it(tmp_path: Path, monkeypatch) -> None:
    """Arrays-only module classes, names no class binds, and classes that are no module need
    no model of the other file; a class whose leaves may be functions, or one imported there,
    does (the model may know its leaves better)."""
    (tmp_path / "layers.py").write_text("import equinox as eqx\n\nclass Base(eqx.Module):\n    pass\n")
    (tmp_path / "more.py").write_text(MODELS + textwrap.dedent("""
        from layers import Base
        from equinox.nn import MLP


        class Sub(Weights):
            bias: jax.Array


        class Deep(Base):
            weight: jax.Array


        class Holder:
            fn: Callable


        Alias = Activated
    """))
    built = _models_built(monkeypatch)
    tree = ast.parse(HEAD + "import more\n")
    with project.places(object()):
        sketch = Sketch(tree, str(tmp_path / "train.py"))
        classes = sketch.module_classes

        asked: list[ast.expr] = []  # kept alive: the Sketch remembers nodes by their id

        def kind(name: str) -> frozenset[str]:
            asked.append(ast.parse(f"more.{name}", mode="eval").body)
            return classes.class_kinds(asked[-1])

        for name, expected in [("Weights", CLEAN), ("Sub", CLEAN), ("Holder", NONE), ("Alias", NONE),
                               ("build", NONE), ("missing", NONE),
                               ("Base", CLEAN),  # imported there from a project file: read in that file
                               ("MLP", NONE)]:  # imported there from a library: no class the model follows
            assert kind(name) == {expected}, name
        assert built == []
        assert kind("Activated") == {INVALID} and built == ["more.py"]  # a function leaf: the model says
        assert kind("Deep") == {CLEAN}  # its base is another file's: the model of more.py, which asks layers.py's
        assert built == ["more.py", "layers.py"]
        sketch.release()
    # the other files' Sketches are kept for the next gate with no analysis of their own: an
    # analysis refers back to its Sketch, and the cycle would wait for the collector
    kept = [entry[1].sketch for entry in smc._outlines.values() if entry[1] is not None and entry[1].sketch]
    assert kept and all(vars(other)[slot] is None for other in kept
                        for slot in ("_module_classes", "_reach", "_arrays"))
    project.forget()  # as the collector does before it freezes what is alive
    assert not smc._outlines


def test_a_class_the_ast_settles_keeps_the_rule_exactly_where_the_model_does(tmp_path: Path) -> None:
    """`Sub` (arrays only, by its own file's `ast`) given to `jax.jit` is dropped; `Activated`
    beside it is kept, and the rule fires."""
    (tmp_path / "more.py").write_text(MODELS + "\n\nclass Sub(Weights):\n    bias: jax.Array\n")
    dropped(tmp_path, """
        from more import Sub

        @jax.jit
        def step(model: Sub, x):
            return model.weight * x
    """, "ODL601")
    kept_and_fires(tmp_path, """
        from more import Sub, Activated

        @jax.jit
        def step(model: Sub, other: Activated, x):
            return model.weight * x
    """, "ODL601")


def test_files_that_import_a_name_from_each_other_end_in_an_answer(tmp_path: Path) -> None:
    """`a.py` takes `Net` from `b.py`, which takes it from `a.py`: the readings meet their guard
    ("maybe"), and the models answer as they always did."""
    (tmp_path / "a.py").write_text("from b import Net\n")
    (tmp_path / "b.py").write_text("from a import Net\n")
    tree = ast.parse(HEAD + "import a\n")
    expression = ast.parse("a.Net", mode="eval").body
    with project.places(object()):
        sketch = Sketch(tree, str(tmp_path / "train.py"))
        assert sketch.module_classes.class_kinds(expression) == {NONE}
        sketch.release()


# -- `__init__` parameters, followed to the calls building the class (`Facts._param_kind`) ----------

TIMED = '''
import equinox as eqx
import jax


class Timed(eqx.Module):
    tstart: float | None

    def __init__(self, *, tstart: float | None = None):
        self.tstart = tstart


class Constant(Timed):
    value: jax.Array

    def __init__(self, value, *, tstart: float | None = None):
        super().__init__(tstart=tstart)
        self.value = value


class Summed(Timed):
    terms: list

    def __init__(self, terms, *, tstart=None):
        super().__init__(tstart=tstart)
        self.terms = terms

    def shifted(self, by):
        return Summed(self.terms, tstart=None)


def constant(value):
    return Constant(value, tstart=2 * 0.5)
'''


def _class_kind(folder: Path, models: str, name: str, monkeypatch) -> tuple[frozenset[str], list[str]]:
    """What the linted file's Sketch finds `models.<name>` to be, and the models of other files built for it."""
    (folder / "models.py").write_text(models)
    built = _models_built(monkeypatch)
    asked = ast.parse(f"models.{name}", mode="eval").body
    with project.places(object()):
        kinds = Sketch(ast.parse("import models\n"), str(folder / "train.py")).module_classes.class_kinds(asked)
    return kinds, built


def test_a_parameter_stored_by_init_is_read_through_the_calls_that_build_the_class(tmp_path: Path,
                                                                                  monkeypatch) -> None:
    """dynamiqs' `TimeQArray`: `__init__` stores keyword parameters declared `float | None`, which
    its subclasses pass on through `super().__init__` and which every call gives a number or
    `None`. The model finds no function there (`Facts._param_kind`); the Sketch now settles that
    on the other file's `ast`, without building that file's model."""
    assert _class_kind(tmp_path, TIMED, "Timed", monkeypatch) == ({CLEAN}, [])
    assert _class_kind(tmp_path, TIMED, "Constant", monkeypatch) == ({CLEAN}, [])


@pytest.mark.parametrize("change", [
    "Timed(tstart=lambda t: t)",                    # a function, given to the class itself
    "Constant(1.0, tstart=jax.nn.relu)",            # ... or through a subclass's `super().__init__`
    "Summed([], tstart='now')",                     # a string
    "Timed(tstart=tstart)",                         # a name the Sketch cannot type
    "init = Timed.__init__",                        # `__init__` reached otherwise
])
def test_a_parameter_given_anything_else_is_left_to_the_model(tmp_path: Path, monkeypatch, change: str) -> None:
    kinds, built = _class_kind(tmp_path, TIMED + f"\n\ntstart = print\n{change}\n", "Timed", monkeypatch)
    assert built == ["models.py"]  # the other file's model decides
    # It follows every call, the subclasses' `super().__init__` too: where one gives a function
    # and others numbers, the calls disagree and it finds no function.
    assert kinds == {CLEAN}


@pytest.mark.parametrize(("written", "instead"), [
    ("self.tstart = tstart", "self.tstart = tstart\n        tstart = print"),  # bound again in the body
    ("self.tstart = tstart", "for tstart in ():\n            pass\n        self.tstart = tstart"),
    ("self.tstart = tstart", "self.tstart = self"),  # `self`
    ("tstart: float | None = None):", "tstart: float | None = print):"),  # a default that is a function
])
def test_a_parameter_bound_otherwise_is_not_read_through_calls(tmp_path: Path, monkeypatch, written: str,
                                                                instead: str) -> None:
    kinds, built = _class_kind(tmp_path, TIMED.replace(written, instead, 1), "Timed", monkeypatch)
    assert built == ["models.py"]


def test_odl601_drops_a_jitted_function_given_a_timed_module_and_keeps_one_given_a_function_leaf(
        tmp_path: Path) -> None:
    code = """
        from models import Timed

        @jax.jit
        def step(operator: Timed, x):
            return x * 2
    """
    (tmp_path / "models.py").write_text(TIMED)
    path = tmp_path / "train.py"
    path.write_text(HEAD + textwrap.dedent(code))
    source = path.read_text()
    with project.places(object()):
        assert candidates(source, str(path), [rule_for("ODL601")]) == []
        assert "ODL601" not in {f.code for f in lint_source(source, str(path), {"ODL601"}, gate=False).findings}
    # Timed alone, given a lambda (with its subclasses, which give numbers through
    # `super().__init__`, the calls would disagree and the model would say nothing)
    (tmp_path / "models.py").write_text(TIMED.partition("\n\nclass Constant")[0] + "\n\nTimed(tstart=lambda t: t)\n")
    project.forget()
    with project.places(object()):
        assert [r.code for r in candidates(source, str(path), [rule_for("ODL601")])] == ["ODL601"]
        assert "ODL601" in {f.code for f in lint_source(source, str(path), {"ODL601"}, gate=False).findings}
