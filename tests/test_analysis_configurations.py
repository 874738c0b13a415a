"""Loops over configurations (odelint.analysis.loops.over_configurations)."""

from __future__ import annotations

import textwrap

import libcst as cst
from odelint.analysis.facts import Facts, model_node_types
from odelint.analysis.loops import over_configurations
from odelint.analysis.scopes import build_scope_index


def _cases(source: str) -> list[set[str]]:
    module = cst.parse_module(textwrap.dedent(source))
    facts = Facts(build_scope_index(module, model_node_types()))
    found = []
    for call, site in facts.index.of_type(cst.Call):
        loop = facts.loop_at(site)
        if loop is not None and module.code_for_node(call).startswith("use("):
            found.append(set(over_configurations(facts, loop, site)))
    return found


def test_literals_of_settings_and_grids_are_configurations_arrays_and_ranges_are_not() -> None:
    assert _cases("""
        import itertools
        import jax.numpy as jnp
        for block in (64, 128):
            use(block)
        for i, (b, t) in enumerate(itertools.product(blocks, tiles)):
            use(b)
        for x in [jnp.ones(3), jnp.zeros(3)]:
            use(x)
        for step in range(10):
            use(step)
        for batch in batches:
            use(batch)
        grid = itertools.product((4, 8), (1024, 2048))
        for blocks, tile in grid:
            use(tile)
    """) == [{"block"}, {"i", "b", "t"}, set(), set(), set(), {"blocks", "tile"}]
