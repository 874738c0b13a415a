"""Compatibility shims: imports and attributes whose failure the code already catches
(odelint.analysis.guards, asked through `Facts.copes_with_absence`)."""

from __future__ import annotations

import textwrap

import libcst as cst
from odelint.analysis.facts import Facts, model_node_types
from odelint.analysis.scopes import build_scope_index

SOURCE = """
import jax

try:
    from jax.experimental import enable_x64
except ImportError:
    from jax import enable_x64 as fallback
try:
    old = jax.tree_map
except KeyError:
    pass
try:
    tree = jax.tree_util
except AttributeError:
    tree = None
if hasattr(jax.random, "KeyArray"):
    key_type = jax.random.KeyArray
if hasattr(os, "fork"):
    kind = jax.random.PRNGKeyArray
if jax.__version__ < "0.4":
    flag = jax.config.x64
try:
    def helper():
        return jax.random.KeyArray
except AttributeError:
    pass
plain = jax.numpy
"""


def _copes() -> dict[str, bool]:
    """For each import alias and outermost attribute chain: does a shim cope with its absence?"""
    module = cst.parse_module(textwrap.dedent(SOURCE))
    facts = Facts(build_scope_index(module, model_node_types() | {cst.Attribute, cst.ImportAlias}))
    found: dict[str, bool] = {}
    for node_type in (cst.ImportAlias, cst.Attribute):
        for node, _ in facts.index.of_type(node_type):
            found.setdefault(module.code_for_node(node), facts.copes_with_absence(node))
    return found


def test_imports_under_import_error_and_their_fallbacks_cope() -> None:
    copes = _copes()
    assert copes["enable_x64"] and copes["enable_x64 as fallback"]


def test_attributes_cope_only_where_attribute_error_is_caught() -> None:
    copes = _copes()
    assert copes["jax.tree_util"]
    assert not copes["jax.tree_map"]            # a KeyError handler does not catch AttributeError
    assert not copes["jax.numpy"]               # no shim at all


def test_version_switches_on_the_stack_cope_and_others_do_not() -> None:
    copes = _copes()
    assert copes["jax.random.KeyArray"]         # `hasattr(jax.random, ...)` probes jax
    assert copes["jax.config.x64"]              # anything comparing `__version__`
    assert not copes["jax.random.PRNGKeyArray"]  # `hasattr(os, ...)` asks about another library


def test_a_function_defined_in_a_shim_is_not_guarded_by_it() -> None:
    module = cst.parse_module(textwrap.dedent(SOURCE))
    facts = Facts(build_scope_index(module, model_node_types() | {cst.Attribute}))
    in_helper = [node for node, site in facts.index.of_type(cst.Attribute)
                 if site.scope.kind == "function" and module.code_for_node(node) == "jax.random.KeyArray"]
    assert in_helper and not any(facts.copes_with_absence(node) for node in in_helper)
