"""An editor's document quotes in its messages the nodes an edit did not touch without
rendering them again (odelint.analysis.rendered)."""

from __future__ import annotations

import libcst as cst
import pytest
from odelint.analysis import rendered
from odelint.analysis.calls import text_of
from odelint.analysis.rendered import RenderedTexts
from odelint.engine.core import lint_source
from odelint.engine.incremental import IncrementalParser

SCRIPT = """\
import jax
import jax.numpy as jnp


@jax.jit
def f(x):
    if jnp.sum(x) > 0:
        return x
    return -x


def g(y):
    return y + 1
"""


@pytest.fixture
def renders(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The type of each node LibCST renders alone (`Module.code_for_node`), in order."""
    seen: list[str] = []
    render = cst.Module.code_for_node

    def counted(module: cst.Module, node: cst.CSTNode, *args, **kwargs) -> str:
        seen.append(type(node).__name__)
        return render(module, node, *args, **kwargs)

    monkeypatch.setattr(cst.Module, "code_for_node", counted)
    return seen


def test_a_relint_quotes_an_untouched_node_without_rendering_it(renders: list[str]) -> None:
    parser = IncrementalParser()
    first = lint_source(SCRIPT, "train.py", None, parser=parser)
    assert [finding.code for finding in first.findings] == ["ODL702"]
    assert "`jnp.sum(x) > 0`" in first.findings[0].message
    assert renders == ["Comparison"]
    renders.clear()
    again = lint_source(SCRIPT.replace("y + 1", "y + 2"), "train.py", None, parser=parser)  # in `g`, not `f`
    assert [finding.message for finding in again.findings] == [first.findings[0].message]
    assert "Comparison" not in renders


def test_an_edited_node_is_rendered_anew(renders: list[str]) -> None:
    parser = IncrementalParser()
    lint_source(SCRIPT, "train.py", None, parser=parser)
    renders.clear()
    again = lint_source(SCRIPT.replace("jnp.sum(x) > 0", "jnp.sum(x) > 1"), "train.py", None, parser=parser)
    assert "`jnp.sum(x) > 1`" in again.findings[0].message
    assert "Comparison" in renders


def test_a_file_linted_once_keeps_nothing(renders: list[str]) -> None:
    lint_source(SCRIPT, "train.py", None)
    lint_source(SCRIPT, "train.py", None)
    assert renders == ["Comparison", "Comparison"]
    assert rendered._current is None


def test_a_text_lasts_one_lint_unused_and_follows_the_module_settings(renders: list[str]) -> None:
    module = cst.parse_module("def f(x):\n    if x:\n        return 1\n")
    statement = module.body[0].body.body[0]  # type: ignore[attr-defined]
    tabbed = module.with_changes(default_indent="\t")
    texts = RenderedTexts()
    with rendered.kept(texts):
        assert text_of(statement, module) == "if x:\n    return 1\n"
    with rendered.kept(texts):
        assert text_of(statement, module) == "if x:\n    return 1\n"  # the last lint's
        assert text_of(statement, tabbed) == "if x:\n\treturn 1\n"  # another indent: another text
    assert renders == ["If", "If"]
    with rendered.kept(texts):
        pass  # a lint that quotes nothing lets go of what the last one rendered
    with rendered.kept(texts):
        assert text_of(statement, module) == "if x:\n    return 1\n"
    assert renders == ["If", "If", "If"]
