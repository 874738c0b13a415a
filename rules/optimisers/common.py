"""What the optimiser rules (ODL201-ODL204) share: spotting optax calls and building the filter fix."""

from __future__ import annotations

import dataclasses

import libcst as cst
from odelint.analysis import Facts, Site, jax_api
from odelint.api.finding import Edits, Replace


def needs_params(constructors: frozenset[str] | None) -> list[str]:
    """The constructors (sorted) among those given that make `update` need params."""
    need = jax_api.optax_need_params()
    return sorted(name for name in constructors or () if name.rsplit(".", 1)[-1] in need)


def filtered(facts: Facts, value: cst.BaseExpression, site: Site) -> tuple[cst.Call, tuple]:
    """`eqx.filter(value, eqx.is_array)` spelt with the file's own equinox alias."""
    filter_ref, imports = facts.reference(jax_api.name("eqx_filter"), site)
    is_array_ref, more = facts.reference(jax_api.name("eqx_is_array"), site)
    call = cst.Call(filter_ref, [cst.Arg(value, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                                 cst.Arg(is_array_ref)])
    return call, (*imports, *more)


def wrap_in_filter(facts: Facts, value: cst.BaseExpression, site: Site) -> Edits:
    call, imports = filtered(facts, value, site)
    return Edits([Replace(value, call)], imports)


@dataclasses.dataclass(frozen=True)
class Fault:
    """Why a whole Equinox module breaks an optax call, and whether filtering it is a safe fix."""

    reason: str
    safe_to_filter: bool


def module_fault(facts: Facts, value: cst.BaseExpression, site: Site, text: str) -> Fault | None:
    """The leaf of the module `value` that optax cannot handle, named by its path; None when
    its class is known and every leaf is an array (or a Python number), so nothing fails.

    A field holding a `jax.vmap`/`jax.jit` result is a function to the pytree: filtering the
    module keeps the crash away but silently drops that field's parameters from training, so
    it is reported with no safe fix."""
    module_class = facts.module_class(value, site)
    if module_class is None:
        return Fault(f"`{text}` is an Equinox module whose leaves are not all known to be arrays", True)
    bad = [leaf for leaf in facts.non_array_leaves(module_class) if leaf.kind.crashes_transforms]
    if not bad:
        return None
    where = module_class.defined_in(facts.path)  # a class of another file of the project
    origin = f", in the class `{module_class.name}` of `{where}`" if where else ""
    transformed = [leaf for leaf in bad if leaf.transform is not None]
    if transformed:
        leaf = transformed[0]
        return Fault(f"{leaf.describe(text)}{origin}: filtering drops the parameters inside it from training; "
                     f"build it with the `eqx.filter_*` transform so its arrays are leaves", False)
    others = len(bad) - 1
    more = f" (and {others} more leaf that is not an array)" if others == 1 else (
        f" (and {others} more leaves that are not arrays)" if others else "")
    return Fault(bad[0].describe(text) + more + origin, True)


def filter_fix(rule, fault: Fault, value: cst.BaseExpression, site: Site):
    """The safe fix `eqx.filter(value, eqx.is_array)`, unless filtering would drop parameters."""
    if not fault.safe_to_filter:
        return None
    return rule.fix("Filter the module to its arrays", lambda: wrap_in_filter(rule.facts, value, site))


# A must-not-flag program of ODL202 and ODL204 (a public MNIST notebook trains this way to 85%
# accuracy): a module of linear layers only, trained in a helper whose jitted step returns the
# model it was given, so every leaf is an array and optax handles the whole module.
LINEAR_LAYERS_TRAINED_IN_A_HELPER = """
import equinox as eqx
import jax
import jax.numpy as jnp
import optax

class Classifier(eqx.Module):
    layers: list

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.layers = [eqx.nn.Linear(784, 64, key=k1), eqx.nn.Linear(64, 10, key=k2)]

    def __call__(self, x):
        for layer in self.layers:
            x = jax.nn.relu(layer(x))
        return x

@jax.jit
def loss(model, x, y):
    return jnp.mean((jax.vmap(model)(x) - y) ** 2)

def fit(model, batches, optim):
    opt_state = optim.init(model)

    @jax.jit
    def step(model, opt_state, x, y):
        grads = jax.grad(loss)(model, x, y)
        updates, opt_state = optim.update(grads, opt_state, model)
        model = optax.apply_updates(model, updates)
        return model, opt_state

    for x, y in batches:
        model, opt_state = step(model, opt_state, x, y)
    return model

model = Classifier(jax.random.PRNGKey(32))
model = fit(model, [], optax.adamw(1e-3))
"""
