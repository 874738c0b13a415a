"""LibCST's parse without its node checks (odelint.analysis.unchecked): the same trees from text
CPython accepts, and the checks back on for everything else."""

from __future__ import annotations

import pathlib

import hypothesmith
import libcst as cst
import pytest
from hypothesis import HealthCheck, assume, given, settings
from odelint.analysis.project import compiles
from odelint.analysis.unchecked import nodes_unchecked
from odelint.engine.core import lint_source, parse
from odelint.engine.incremental import IncrementalParser

REPO = pathlib.Path(__file__).resolve().parent.parent
# Real programs: the fixtures that run under JAX, and the bundled example.
PROGRAMS = sorted([*REPO.glob("tests/fixtures/ODL*/*.py"), *REPO.glob("examples/*.py")])[::7]


def _same_tree(source: str) -> None:
    """The same tree, or the same error (LibCST's parser refuses some text CPython accepts)."""
    try:
        checked: cst.Module | str = cst.parse_module(source)
    except cst.ParserSyntaxError as error:
        checked = str(error)
    try:
        with nodes_unchecked():
            unchecked: cst.Module | str = cst.parse_module(source)
    except cst.ParserSyntaxError as error:
        unchecked = str(error)
    if isinstance(checked, str) or isinstance(unchecked, str):
        assert unchecked == checked
        return
    assert unchecked.deep_equals(checked)
    assert unchecked.code == checked.code


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda path: str(path.relative_to(REPO)))
def test_real_programs_give_the_same_tree(path: pathlib.Path) -> None:
    source = path.read_text(encoding="utf-8")
    _same_tree(source)
    with nodes_unchecked():
        assert cst.parse_module(source).code == source


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hypothesmith.from_grammar())
def test_generated_programs_give_the_same_tree(source: str) -> None:
    assume(compiles(source))
    _same_tree(source)


def test_the_checks_are_off_only_inside_the_block() -> None:
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")
    with nodes_unchecked():
        assert cst.Name("").value == ""
        with nodes_unchecked():  # nested: the outer block still restores the checks
            cst.Name("")
        cst.Name("")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")


def test_the_checks_come_back_after_an_error() -> None:
    with pytest.raises(cst.ParserSyntaxError), nodes_unchecked():
        cst.parse_module("def f(:\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")


def test_text_cpython_rejects_is_still_checked() -> None:
    """A str literal beside a bytes literal parses in LibCST's grammar; only its node check
    rejects it, so the engine must keep the checks on where CPython complained."""
    source = "x = 'a' b'b'\n"
    assert not compiles(source)
    found = parse(source, "bad.py")
    assert isinstance(found, cst.Module) is False
    assert found.code == "ODL000"
    assert [f.code for f in lint_source(source, "bad.py").findings] == ["ODL000"]


def test_an_editor_parse_leaves_the_checks_on() -> None:
    parser = IncrementalParser()
    source = "import jax\n\n\ndef f(x):\n    return x + 1\n"
    assert isinstance(parse(source, "a.py", parser), cst.Module)
    edited = source.replace("x + 1", "x + 2")
    assert parse(edited, "a.py", parser).code == edited
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")


def test_another_project_files_model_is_parsed_unchecked_and_checks_come_back(tmp_path, monkeypatch) -> None:
    """The model parses the project's other files only once CPython has compiled them."""
    from odelint.analysis import project

    checked = []
    real = cst.Name._validate
    monkeypatch.setattr(cst.Name, "_validate", lambda node: (checked.append(node.value), real(node))[1])
    model = tmp_path / "model.py"
    model.write_text("import equinox as eqx\n\n\nclass Net(eqx.Module):\n    width: int\n")
    project.forget()
    assert project.facts_of(str(model), frozenset()) is not None
    assert checked == []
    cst.parse_module("width = 1\n")
    assert "width" in checked
