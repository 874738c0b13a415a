"""Which methods run while an instance is being initialised (odelint.analysis.classes)."""

from __future__ import annotations

import textwrap

import libcst as cst
from odelint.analysis.classes import initialising_methods
from odelint.analysis.facts import Facts, model_node_types
from odelint.analysis.scopes import build_scope_index


def test_helpers_that_only_init_calls_run_during_initialisation() -> None:
    module = cst.parse_module(textwrap.dedent("""
        class Net:
            def __init__(self, sizes):
                self.layers = [self._layer(n) for n in sizes]
                self._check()

            def _layer(self, n):
                return self._width(n)

            def _width(self, n):
                return n

            def _check(self):
                pass

            def resize(self):
                self._check()
                return self._unused_elsewhere

        def outside(net):
            return net._width(3)
    """))
    facts = Facts(build_scope_index(module, model_node_types()))
    cls = module.body[0]
    assert isinstance(cls, cst.ClassDef)
    assert initialising_methods(facts, cls) == {"__init__", "__post_init__", "_layer", "_width"}
