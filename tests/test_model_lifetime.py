"""A lint's model lives as long as the lint: the language server lints the same document
thousands of times, so anything that keeps a file's `Facts` (and through them its tree, index
and analyses) alive after the lint is a leak that grows with every keystroke."""

from __future__ import annotations

import gc
from pathlib import Path

from odelint.analysis.facts import Facts
from odelint.engine.core import lint_source
from odelint.engine.incremental import IncrementalParser

SCRIPT = (Path(__file__).resolve().parents[1] / "bench" / "training_script.py").read_text()


def _alive() -> set[int]:
    gc.collect()
    return {id(o) for o in gc.get_objects() if isinstance(o, Facts)}


def test_no_model_outlives_its_lint() -> None:
    before = _alive()  # other tests may keep models of their own
    parser = IncrementalParser()
    for edit in range(3):  # every rule and every part of the model runs on this script
        result = lint_source(SCRIPT.replace("0.5 * velocity", f"0.{edit}5 * velocity"), "train.py", parser=parser)
        assert result.findings
    del result
    assert _alive() <= before
