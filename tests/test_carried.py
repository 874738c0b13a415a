"""An editor's re-lint reuses what the key analysis found in functions an edit did not touch
(Facts.carried, odelint.analysis.keys): only while everything the walk of such a function
reads from outside it is unchanged, so the findings are always those of a fresh lint."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from odelint.analysis.keys import KeyUses
from odelint.engine.core import lint_source
from odelint.engine.incremental import IncrementalParser

SOURCE = '''import jax


def helper(k):
    return jax.random.normal(k)


def sample(key):
    helper(key)
    return jax.random.normal(key)


def loop(key, ys):
    for i in range(3):
        ys.append(jax.random.normal(key))
    return ys


def show(key):
    print(jax.random.normal(key))
    return jax.random.uniform(key, minval=0.5)


def split_twice(key):
    a = jax.random.split(key)
    b = jax.random.split(key)
    return a, b


def make():
    return jax.random.PRNGKey(0)


def passes(model, other, x, key):
    k = make()
    model(x, key=k)
    other(x, key=k)
    return jax.random.normal(key)


def fixed(xs):
    for i in range(3):
        k = jr.PRNGKey(0)
        xs.append(jax.random.normal(k))
    return xs


jr = jax.random
'''


def _said(result) -> list[tuple]:
    return [(finding.code, finding.span, finding.message) for finding in result.findings]


def _recording(monkeypatch, owner: type, method: str, record: Callable[..., str]) -> list[str]:
    """Each call of `owner.method`, as `record(*arguments)` says it, in the list returned."""
    seen: list[str] = []
    original = getattr(owner, method)

    def spy(self, *arguments, **keywords):
        seen.append(record(*arguments))
        return original(self, *arguments, **keywords)

    monkeypatch.setattr(owner, method, spy)
    return seen


def _relinted(describe: Callable, source: str, edit: tuple[str, str], seen: list[str]) -> tuple[list, list, list, list]:
    """An editor's lint of `source` and its re-lint after `edit`, each described
    (`describe(parser, text)`), a fresh lint of the edited text described the same way, and
    what `seen` recorded during the re-lint alone."""
    parser = IncrementalParser()
    before = describe(parser, source)
    seen.clear()
    edited = source.replace(*edit)
    assert edited != source
    after = describe(parser, edited)
    during = list(seen)
    return before, after, describe(IncrementalParser(), edited), during


@pytest.fixture
def walked(monkeypatch) -> list[str]:
    """The functions whose bodies the key analysis walks."""
    return _recording(monkeypatch, KeyUses, "_walk_body",
                      lambda scope, statements: getattr(scope.node, "name", None) and scope.node.name.value)


@pytest.fixture
def reused(monkeypatch) -> list[str]:
    """The functions whose last walk the key analysis takes again."""
    names: list[str] = []
    walk_or_reuse = KeyUses._walk_or_reuse

    def spy(self, scope, last):
        found = walk_or_reuse(self, scope, last)
        if found is last:
            names.append(scope.node.name.value)
        return found

    monkeypatch.setattr(KeyUses, "_walk_or_reuse", spy)
    return names


def test_an_edit_inside_one_function_walks_only_that_function(walked, reused) -> None:
    parser = IncrementalParser()
    first = lint_source(SOURCE, "train.py", parser=parser)
    assert sorted(walked) == ["fixed", "helper", "loop", "make", "passes", "sample", "show", "split_twice"]
    walked.clear()
    edited = SOURCE.replace("minval=0.5", "minval=0.25")
    again = lint_source(edited, "train.py", parser=parser)
    assert walked == ["show"]
    assert sorted(reused) == ["fixed", "helper", "loop", "make", "passes", "sample", "split_twice"]
    assert _said(again) == _said(lint_source(edited, "train.py"))
    assert [finding.code for finding in again.findings] == [finding.code for finding in first.findings]
    assert len([f for f in again.findings if f.code == "ODL704"]) == 5  # sample, loop, split_twice, passes, fixed


@pytest.mark.parametrize(("edit", "reader"), [
    # the callee a kept function hands its key to now only prints what it draws: no reuse
    (("    return jax.random.normal(k)", "    print(jax.random.normal(k))"), "sample"),
    # the callee no longer draws from its parameter: handing it the key consumes nothing
    (("    return jax.random.normal(k)", "    return k"), "sample"),
    # `make` no longer returns a key: handing `k` to a model as `key=` consumes nothing
    (("    return jax.random.PRNGKey(0)", "    return 0"), "passes"),
    # `range` is no longer the builtin: the loop no longer repeats one computation
    (("jr = jax.random\n", "jr = jax.random\nrange = list\n"), "loop"),
    # `print` is no longer the builtin: what `show` prints meets other code
    (("jr = jax.random\n", "jr = jax.random\nfrom rich import print\n"), "show"),
    # `jr.PRNGKey` is no longer JAX's: the loop no longer makes one constant key again and again
    (("jr = jax.random\n", "jr = object()\n"), "fixed"),
])
def test_a_kept_function_is_walked_again_when_what_it_reads_elsewhere_changes(walked, reused, edit, reader) -> None:
    parser = IncrementalParser()
    before = lint_source(SOURCE, "train.py", parser=parser)
    walked.clear()
    reused.clear()
    edited = SOURCE.replace(*edit)
    assert edited != SOURCE
    after = lint_source(edited, "train.py", parser=parser)
    assert reader in walked or reader not in reused  # walked again, or now touches no key at all
    assert _said(after) == _said(lint_source(edited, "train.py"))
    assert _said(after) != _said(before)


def test_the_same_buffer_linted_as_a_test_is_walked_again(walked) -> None:
    parser = IncrementalParser()
    lint_source(SOURCE, "train.py", parser=parser)
    walked.clear()
    as_test = lint_source(SOURCE, "test_train.py", parser=parser)
    assert sorted(walked) == ["fixed", "helper", "loop", "make", "passes", "sample", "show", "split_twice"]
    assert _said(as_test) == _said(lint_source(SOURCE, "test_train.py"))


def test_a_file_linted_once_keeps_nothing() -> None:
    import libcst as cst
    from odelint.analysis.facts import Facts, model_node_types
    from odelint.analysis.scopes import build_scope_index

    def facts() -> Facts:
        return Facts(build_scope_index(cst.parse_module(SOURCE), model_node_types()), "train.py")

    assert KeyUses(facts()).reuses  # sample, split_twice
    assert facts().carried(KeyUses) is None


# ---- call targets (odelint.analysis.reach.CallTargets) ----------------------------------

TARGETS = '''import functools


def apply(f, x):
    return f(x)


def loss(x):
    return x ** 2


def other(x):
    return x + 1.5


class Model:
    def step(self, x):
        return loss(x)


def report():
    return loss(2.0)


def use(model: Model, x):
    return model(x)


class Scaler:
    @staticmethod
    def __call__(x):
        return x


class Base:
    def __call__(self, x):
        return x


class Net:
    pass


def run(scaler: Scaler, net: Net, x):
    return scaler(x) + net(x)


def main(x):
    m = Model()
    m.step(x)
    return apply(loss, x) + loss(x)
'''


def _targets(parser, source: str):
    """The model's call targets for `source`, as an editor's re-lint builds them."""
    import libcst as cst
    from odelint.analysis.facts import Facts, model_node_types
    from odelint.analysis.reach import CallTargets
    from odelint.analysis.scopes import build_scope_index

    module = parser.parse(source)
    index = build_scope_index(module, model_node_types(), parser.traversals)
    targets = Facts(index, "train.py").part(CallTargets, CallTargets)
    described = []
    for call, _ in targets.calls:
        called, handed_on, qualname = targets.of(call)
        for function in (*called, *handed_on):  # functions of this tree, not of the last one
            assert index.body_scope(function) is not None and index.body_scope(function).node is function
        named = [tuple(f.name.value if isinstance(f, cst.FunctionDef) else "lambda" for f in group)
                 for group in (called, handed_on)]
        described.append((module.code_for_node(call), *named, qualname))
    return described


@pytest.fixture
def answered(monkeypatch) -> list[str]:
    """The calls whose targets are worked out (not kept from the last lint)."""
    import libcst as cst
    from odelint.analysis.reach import CallTargets

    return _recording(monkeypatch, CallTargets, "_answer", lambda call, *rest: cst.Module([]).code_for_node(call))


def test_an_edit_inside_one_function_works_out_only_its_calls(answered) -> None:
    edit = ("apply(loss, x) + loss(x)", "apply(loss, x) * loss(x)")
    _, after, fresh, worked_out = _relinted(_targets, TARGETS, edit, answered)
    # `main`'s own calls, and two that read what calls in `main` pass: `f(x)` in `apply` and
    # `loss(x)` in `step` (`f` and `x` are parameters); `loss(2.0)` in `report` is kept
    assert sorted(worked_out) == ["Model()", "apply(loss, x)", "f(x)", "loss(x)", "loss(x)", "m.step(x)"]
    assert after == fresh


@pytest.mark.parametrize(("edit", "reader"), [
    # every call of `apply` now passes `other`: `f(x)` inside `apply` calls it
    (("apply(loss, x)", "apply(other, x)"), "f(x)"),
    # no call passes anything to `apply` any more: `f(x)` calls nothing known
    (("apply(loss, x) + loss(x)", "loss(x)"), "f(x)"),
    # `loss` is a new node after an edit inside it: who calls it names the new one
    (("return x ** 2", "return x ** 3"), "loss(x)"),
    # the class gains `__call__`: `model(x)` elsewhere runs it (the class's outline changed)
    (("    def step(self, x):", "    def __call__(self, x):\n        return x\n\n    def step(self, x):"), "model(x)"),
    # `__call__` is no longer a static method: calling an instance runs it
    (("    @staticmethod\n    def __call__(x):", "    def __call__(self, x):"), "scaler(x)"),
    # `Net` now inherits `__call__`
    (("class Net:", "class Net(Base):"), "net(x)"),
    # a second call of `apply` passes another function: `f(x)` no longer knows which it calls
    (("return loss(2.0)", "return loss(2.0) + apply(other, 2.0)"), "f(x)"),
    # `other` now assigns a global: code elsewhere may read it, so nothing is kept
    (("    return x + 1.5", "    global loss\n    loss = other\n    return x + 1.5"), "loss(x)"),
])
def test_kept_call_targets_follow_what_an_edit_elsewhere_changes(answered, edit, reader) -> None:
    before, after, fresh, worked_out = _relinted(_targets, TARGETS, edit, answered)
    assert after == fresh
    assert reader in worked_out
    assert edit[0] != "return x ** 2" or after == before  # the same names, on the new nodes


def test_a_file_linted_once_keeps_no_call_targets() -> None:
    import libcst as cst
    from odelint.analysis.facts import Facts, model_node_types
    from odelint.analysis.reach import CallTargets
    from odelint.analysis.scopes import build_scope_index

    facts = Facts(build_scope_index(cst.parse_module(TARGETS), model_node_types()), "train.py")
    assert facts.part(CallTargets, CallTargets).calls
    assert facts.carried(CallTargets) is None


# ---- qualified names (Facts.qualname) ---------------------------------------------------

NAMES = '''"""Training."""
import jax
import jax.numpy as jnp
from models import layers

jr = jax.random
nothing = None


def sample(key):
    return jr.normal(key) + jnp.sin(1.0)


def step(x):
    return jax.jit(jnp.cos)(x)


def build():
    return layers.Linear(3)
'''


def _qualnames(parser, source: str) -> list[tuple[str, str | None]]:
    """What each call of `source` calls, as an editor's re-lint asks the model."""
    import libcst as cst
    from odelint.analysis.facts import Facts, model_node_types
    from odelint.analysis.scopes import build_scope_index

    module = parser.parse(source)
    index = build_scope_index(module, model_node_types(), parser.traversals)
    facts = Facts(index, "train.py")
    return [(module.code_for_node(call.func), facts.qualname(call.func, site.scope))
            for call, site in index.of_type(cst.Call)]


@pytest.fixture
def resolved(monkeypatch) -> list[str]:
    """The names the model resolves through their bindings (not kept from the last lint)."""
    from odelint.analysis.facts import Facts

    return _recording(monkeypatch, Facts, "_name_qualname", lambda name, scope: name)


def test_an_edit_inside_one_function_resolves_only_its_names(resolved) -> None:
    _, after, fresh, names = _relinted(_qualnames, NAMES, ("jnp.sin(1.0)", "jnp.sin(2.0)"), resolved)
    # `sample`'s own names, and `jax` for `jr = jax.random` (an answer inside an alias chain
    # is never kept); `step` and `build` are kept
    assert sorted(names) == ["jax", "jnp", "jr"]
    assert after == fresh
    assert ("jr.normal", "jax.random.normal") in after and ("layers.Linear", "models.layers.Linear") in after


@pytest.mark.parametrize(("edit", "meaning"), [
    # (each edit keeps the number of statements: the functions after it are kept nodes)
    # the import an alias names changes: every use of `jnp` elsewhere means something else
    (("import jax.numpy as jnp", "import numpy as jnp"), ("jnp.sin", "numpy.sin")),
    # an alias assigned at module level is pointed elsewhere
    (("jr = jax.random", "jr = jax.numpy"), ("jr.normal", "jax.numpy.normal")),
    # what an alias's value names changes, the alias itself does not
    (("import jax\n", "import jaxlib as jax\n"), ("jr.normal", "jaxlib.random.normal")),
    # an alias gains a second meaning: no one meaning any more
    (("nothing = None", "jr = jnp"), ("jr.normal", None)),
    # a function assigns the module's name globally: it may hold anything
    (("def build():\n", "def build():\n    global jnp\n    jnp = make()\n"), ("jnp.sin", None)),
    # a def shadows an import
    (("nothing = None", "def jnp():\n    pass"), ("jnp.sin", None)),
    # a star import: names may come from another file
    (("from models import layers", "from models import *"), ("jnp.sin", "jax.numpy.sin")),
])
def test_kept_qualified_names_follow_what_an_edit_elsewhere_changes(resolved, edit, meaning) -> None:
    _, after, fresh, names = _relinted(_qualnames, NAMES, edit, resolved)
    assert after == fresh
    assert meaning in after
    assert "jnp" in names or "jr" in names  # the kept functions' names are resolved again


def test_a_file_linted_once_keeps_no_qualified_names() -> None:
    import libcst as cst
    from odelint.analysis.facts import Facts, _Qualnames, model_node_types
    from odelint.analysis.scopes import build_scope_index

    index = build_scope_index(cst.parse_module(NAMES), model_node_types())
    facts = Facts(index, "train.py")
    assert [facts.qualname(call.func, site.scope) for call, site in index.of_type(cst.Call)][0] == "jax.random.normal"
    assert facts.carried(_Qualnames) is None


NESTED_KEYS = '''import jax


def outer(key):
    scale = 0.5

    def inner(k):
        a = jax.random.normal(k)
        b = jax.random.normal(k)
        return a + b

    return inner(key) * scale
'''


def test_a_function_nested_in_an_edited_one_is_walked_anew(walked, reused) -> None:
    """A keystroke in one line of `outer` re-parses that line only: `inner` is the same node,
    but its statement was walked anew, in new scopes. What the last lint found in it is not
    taken again (its enclosing function's names may mean something else now)."""
    parser = IncrementalParser()
    lint_source(NESTED_KEYS, "train.py", parser=parser)
    walked.clear()
    reused.clear()
    edited = NESTED_KEYS.replace("scale = 0.5", "scale = 0.25")
    after = lint_source(edited, "train.py", parser=parser)
    assert "inner" in walked and "inner" not in reused
    assert _said(after) == _said(lint_source(edited, "train.py"))


ALIASED = TARGETS.replace("import functools\n", "import functools\nimport jax\n") + '''

def main(x):
    g = jax.jit(loss)
    return apply(g, x)
'''


def test_a_call_on_an_untouched_line_of_an_edited_function_is_worked_out_again(answered) -> None:
    """`apply(g, x)` is the same node after `g = jax.jit(loss)` became `g = jax.jit(other)` on
    the line above (only that line is re-parsed), but what it hands on changed: the calls of a
    statement an edit replaced are worked out again, as when the whole statement was parsed anew."""
    edit = ("    g = jax.jit(loss)", "    g = jax.jit(other)")
    before, after, fresh, worked_out = _relinted(_targets, ALIASED, edit, answered)
    assert after == fresh and after != before
    assert "apply(g, x)" in worked_out and "f(x)" in worked_out
