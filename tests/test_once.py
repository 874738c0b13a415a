"""Files linted once release their models (odelint.engine.once): the file's LibCST tree is
freed by refcounting when the block ends, not left in cycles for the collector; the gate's
Sketch is released once it has answered; an editor's document, linted outside such a block,
keeps its model."""

from __future__ import annotations

import ast
import gc
from collections.abc import Callable
from pathlib import Path

import libcst as cst
import pytest
from odelint.engine.core import lint_source
from odelint.engine.once import linted_once

REPO = Path(__file__).resolve().parent.parent
# a training script that opens every gate: modules, keys, jit, grad, scan, optax, diffrax
SCRIPT = (REPO / "bench" / "training_script.py").read_text(encoding="utf-8")


@pytest.fixture
def cyclic_garbage():
    """What the cyclic collector would free after `lint` ran (the collector off meanwhile)."""
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()

    def collect(lint: Callable[[], object]) -> list[object]:
        lint()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            gc.collect()
            found = list(gc.garbage)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
        return found

    yield collect
    if enabled:
        gc.enable()


def _nodes(objects: list[object]) -> int:
    return sum(isinstance(item, cst.CSTNode) for item in objects)


def test_a_file_linted_once_leaves_no_tree_to_the_collector(cyclic_garbage) -> None:
    def lint() -> None:
        with linted_once():
            findings = lint_source(SCRIPT, "train.py", None).findings
            assert findings  # the script has hazards: every analysis was built
            [finding.to_dict() for finding in findings]  # what a run keeps of them

    garbage = cyclic_garbage(lint)
    assert _nodes(garbage) == 0
    assert not any(isinstance(item, ast.AST) for item in garbage)  # the Sketch let CPython's tree go


def test_outside_the_block_the_model_keeps_its_cycles(cyclic_garbage) -> None:
    """The same lint without the block: the tree is left in cycles (what the block saves)."""
    assert _nodes(cyclic_garbage(lambda: lint_source(SCRIPT, "train.py", None))) > 1000


def test_fixes_built_inside_the_block_still_work() -> None:
    with linted_once():
        findings = [f for f in lint_source(SCRIPT, "train.py", None).findings if f.fix is not None]
        assert findings and all(f.fix.build() is not None for f in findings)
