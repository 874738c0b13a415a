"""Name resolution and the shared dataflow: aliases, scopes, shadowing, modules, optax."""

from __future__ import annotations

import libcst as cst
import pytest
from odelint.analysis.facts import Facts, Kind
from odelint.analysis.scopes import build_scope_index


def _facts(source: str) -> tuple[Facts, list]:
    index = build_scope_index(cst.parse_module(source), {cst.Call})
    return Facts(index), index.of_type(cst.Call)


def _use(calls):
    """The `use(...)` call that the examples put their value of interest in."""
    return next((n, s) for n, s in calls if isinstance(n.func, cst.Name) and n.func.value == "use")


@pytest.mark.parametrize("source, expected", [
    ("import equinox as eq\neq.filter(1)\n", "equinox.filter"),
    ("from equinox import filter as f\nf(1)\n", "equinox.filter"),
    ("import jax.numpy as jnp\njnp.zeros(1)\n", "jax.numpy.zeros"),
    ("import jax.numpy\njax.numpy.zeros(1)\n", "jax.numpy.zeros"),
    ("from jax import custom_jvp as cjvp\ncjvp(1)\n", "jax.custom_jvp"),
    ("import optax\nadam = optax.adam\nadam(1)\n", "optax.adam"),
    ("try:\n    import optax\nexcept ImportError:\n    optax = None\noptax.adam(1)\n", "optax.adam"),
])
def test_qualified_names_through_imports_and_aliases(source: str, expected: str) -> None:
    facts, calls = _facts(source)
    node, site = calls[-1]
    assert facts.qualname(node.func, site.scope) == expected


@pytest.mark.parametrize("source", [
    "optax = object()\noptax.adam(1)\n",                                  # a local variable named optax
    "import optax\ndef f(optax):\n    return optax.adam(1)\n",             # a parameter shadows the import
    "import optax\ndef f():\n    optax = 3\n    return optax.adam(1)\n",   # a local assignment shadows it
    "import optax\nclass C:\n    optax = 1\n    def m(self):\n        return adam(1)\n",
])
def test_local_names_are_not_mistaken_for_imports(source: str) -> None:
    facts, calls = _facts(source)
    node, site = calls[-1]
    assert facts.qualname(node.func, site.scope) in (None,)


def test_class_scope_is_invisible_to_methods() -> None:
    facts, calls = _facts("import optax\nclass C:\n    optax = 1\n    def m(self):\n        return optax.adam(1)\n")
    node, site = calls[-1]
    assert facts.qualname(node.func, site.scope) == "optax.adam"


def test_global_declaration_binds_in_module_scope() -> None:
    facts, calls = _facts("def setup():\n    global eqx\n    import equinox as eqx\n\ndef f():\n    eqx.filter(1)\n")
    node, site = calls[-1]
    assert facts.qualname(node.func, site.scope) == "equinox.filter"


@pytest.mark.parametrize("source, kind", [
    ("import equinox as eqx\nm = eqx.nn.MLP(1, 1, 1, 1, key=None)\nuse(m)\n", Kind.MODULE),
    ("import equinox as eqx\nm = eqx.nn.MLP(1, 1, 1, 1, key=None)\nm = eqx.filter(m, eqx.is_array)\nuse(m)\n",
     Kind.FILTERED),
    ("import equinox as eqx\np, s = eqx.partition(x, eqx.is_array)\nuse(p)\n", Kind.FILTERED),
    ("import equinox as eqx\nm, state = eqx.nn.make_with_state(eqx.nn.BatchNorm)(3, 'b')\nuse(m)\n", Kind.MODULE),
    ("import equinox as eqx\nclass A(eqx.Module):\n    pass\nclass B(A):\n    pass\nuse(B())\n", Kind.MODULE),
    ("import equinox as eqx\nclass A(eqx.Module):\n    pass\nuse(A)\n", Kind.OTHER),
    ("import equinox as eqx\nm = eqx.nn.Linear(1, 1, key=None)\nm = eqx.tree_at(lambda t: t.bias, m, None)\nuse(m)\n",
     Kind.MODULE),
    ("import equinox as eqx\nuse(eqx.nn.State)\n", Kind.UNKNOWN),
    ("use({'w': 1})\n", Kind.OTHER),
    ("class Plain:\n    pass\nuse(Plain())\n", Kind.UNKNOWN),
])
def test_value_kinds(source: str, kind: Kind) -> None:
    facts, calls = _facts(source)
    node, site = _use(calls)
    assert facts.kind(node.args[0].value, site) is kind


def test_parameter_is_a_module_when_a_caller_passes_one() -> None:
    source = ("import equinox as eqx\n\ndef step(model, x):\n    use(model)\n\n"
              "step(eqx.nn.Linear(1, 1, key=None), 1)\n")
    facts, calls = _facts(source)
    node, site = _use(calls)
    assert facts.is_module(node.args[0].value, site)


def test_method_parameters_skip_self_when_matching_callers() -> None:
    source = ("import equinox as eqx\n\nclass T:\n    def fit(self, model):\n        use(model)\n\n"
              "    def run(self):\n        self.fit(eqx.nn.Linear(1, 1, key=None))\n")
    facts, calls = _facts(source)
    node, site = _use(calls)
    # `self.fit` is not resolved to a same-file function (attribute call): no claim is made
    assert facts.kind(node.args[0].value, site) is Kind.UNKNOWN


def test_optax_constructors_see_through_wrappers_and_names() -> None:
    source = ("import optax\nbase = optax.adamw(1e-3)\n"
              "tx = optax.MultiSteps(optax.chain(optax.clip(1.0), base), 4)\nuse(tx)\n")
    facts, calls = _facts(source)
    node, site = _use(calls)
    assert facts.optax_constructors(node.args[0].value, site) == {
        "optax.MultiSteps", "optax.chain", "optax.clip", "optax.adamw"}


@pytest.mark.parametrize("optimiser, expected", [
    ("optax.adamw(1e-3)", ["optax.adamw"]),
    ("optax.chain(optax.clip(1.0), optax.add_decayed_weights(1e-4), optax.sgd(0.1))",
     ["optax.add_decayed_weights"]),
    ("optax.MultiSteps(base, 2)", ["optax.adamw"]),                       # through a name
    ("optax.adamw(1e-3, weight_decay=wd)", ["optax.adamw"]),              # a rate not known to be zero
    ("optax.adamw(1e-3, mask=keep)", []),
    ("optax.adamw(1e-3, mask=None)", ["optax.adamw"]),                   # `None` masks nothing
    ("optax.chain(optax.add_decayed_weights(weight_decay=1e-4, mask=None), optax.sgd(0.1))",
     ["optax.add_decayed_weights"]),
    ("optax.adamw(1e-3, 0.9, 0.999, 1e-8, 0.0, None, 1e-4, keep)", []),  # mask given by position
    ("optax.adamw(1e-3, weight_decay=0.0)", []),
    ("optax.chain(optax.add_decayed_weights(1e-4, keep), optax.sgd(0.1))", []),
    ("optax.chain(optax.add_decayed_weights(), optax.sgd(0.1))", []),     # its default rate is zero
    ("optax.masked(optax.adamw(1e-3), keep)", []),
    ("optax.adam(1e-3)", []),
])
def test_optax_unmasked_decay_names_the_decays_over_every_parameter(optimiser: str, expected: list[str]) -> None:
    source = f"import optax\nbase = optax.adamw(1e-3)\ntx = {optimiser}\nuse(tx)\n"
    facts, calls = _facts(source)
    node, site = _use(calls)
    assert facts.optax_unmasked_decay(node.args[0].value, site) == expected


def test_reference_reuses_aliases_and_asks_for_missing_imports() -> None:
    facts, calls = _facts("import equinox as eq\nuse(1)\n")
    _, site = calls[-1]
    expression, imports = facts.reference("equinox.filter", site)
    assert cst.Module([]).code_for_node(expression) == "eq.filter" and imports == ()

    facts, calls = _facts("from equinox import filter as keep\nuse(1)\n")
    _, site = calls[-1]
    expression, imports = facts.reference("equinox.filter", site)
    assert cst.Module([]).code_for_node(expression) == "keep" and imports == ()

    facts, calls = _facts("eqx = 'taken'\nuse(1)\n")
    _, site = calls[-1]
    expression, imports = facts.reference("equinox.filter", site)
    assert cst.Module([]).code_for_node(expression) == "equinox.filter"
    assert [(i.module, i.alias) for i in imports] == [("equinox", None)]


def test_reference_ignores_a_shadowed_alias() -> None:
    facts, calls = _facts("import equinox as eqx\ndef f(eqx):\n    use(1)\n")
    _, site = calls[-1]
    expression, imports = facts.reference("equinox.filter", site)
    assert cst.Module([]).code_for_node(expression) == "equinox.filter"
    assert [(i.module, i.alias) for i in imports] == [("equinox", None)]


def test_reference_uses_the_longest_imported_prefix() -> None:
    facts, calls = _facts("import jax\nimport jax.numpy as jnp\nuse(1)\n")
    _, site = calls[-1]
    expression, imports = facts.reference("jax.lax.stop_gradient", site)
    assert cst.Module([]).code_for_node(expression) == "jax.lax.stop_gradient" and imports == ()
    expression, imports = facts.reference("jax.numpy.zeros_like", site)
    assert cst.Module([]).code_for_node(expression) == "jnp.zeros_like" and imports == ()


def test_reference_imports_a_dotted_module_when_its_alias_is_taken() -> None:
    facts, calls = _facts("lax = 'taken'\nuse(1)\n")
    _, site = calls[-1]
    expression, imports = facts.reference("jax.lax.stop_gradient", site)
    assert cst.Module([]).code_for_node(expression) == "jax.lax.stop_gradient"
    assert [(i.module, i.alias) for i in imports] == [("jax.lax", None)]


def test_reference_reuses_an_import_repeated_in_the_file() -> None:
    facts, calls = _facts("import jax.numpy as jnp\nx = 1\nimport jax.numpy as jnp\nuse(1)\n")
    _, site = calls[-1]
    expression, imports = facts.reference("jax.numpy.zeros_like", site)
    assert cst.Module([]).code_for_node(expression) == "jnp.zeros_like" and imports == ()
