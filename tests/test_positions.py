"""Positions of reported nodes: rendering one top-level statement must give exactly what
LibCST's whole-module PositionProvider gives."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider
from odelint.engine.incremental import IncrementalParser
from odelint.engine.positions import locate

ROOT = Path(__file__).resolve().parents[1]
TRICKY = '''\
"""Docstring."""
# a comment above
import os; import sys


@decorator(
    1,
)
# between decorator and def
def f(a,
      b):  # trailing
    return (a +
            b)


class C(Base):
    x: int = 1; y = 2

    @property
    def p(self): return self.x
if True:
    pass
else: z = """multi
line"""
s = 'tab\\there'
'''


def _nodes(statement: cst.CSTNode) -> list[cst.CSTNode]:
    found, stack = [], [statement]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(node.children)
    return found


@pytest.mark.parametrize("path", ["<tricky>", "lint/engine/core.py", "lint/analysis/facts.py",
                                  "examples/neural_ode/train.py",
                                  "tests/fixtures/ODL101/hazard_scan_leak.py", "bench/training_script.py"])
def test_every_node_has_the_whole_module_position(path: str) -> None:
    source = TRICKY if path == "<tricky>" else (ROOT / path).read_text()
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    wanted = [(node, top) for top, statement in enumerate(module.body) for node in _nodes(statement)]
    got = locate(module, source, wanted)
    assert all(got[node] == expected[node] for node, _ in wanted)


def test_a_tree_the_face_has_spares_a_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """flake8 hands over CPython's tree: positions come from it, exactly, with no parse."""
    module = cst.parse_module(TRICKY)
    tree = ast.parse(TRICKY)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    wanted = [(node, top) for top, statement in enumerate(module.body) for node in _nodes(statement)]

    def no_parse(*args: object, **kwargs: object) -> ast.Module:
        raise AssertionError("parsed again")

    monkeypatch.setattr(ast, "parse", no_parse)
    got = locate(module, TRICKY, wanted, tree=tree)
    assert all(got[node] == expected[node] for node, _ in wanted)


def test_a_wrong_or_missing_statement_hint_falls_back_to_the_whole_module() -> None:
    module = cst.parse_module(TRICKY)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    inner = module.body[-1]
    assert locate(module, TRICKY, [(inner, 0)])[inner] == expected[inner]
    assert locate(module, TRICKY, [(inner, None)])[inner] == expected[inner]


def test_an_editor_document_keeps_exact_positions_across_edits() -> None:
    """The incremental parser's statement lines and the positions kept per unchanged statement
    give what the whole-module provider gives, edit after edit (an edit above shifts them)."""
    source = (ROOT / "bench" / "training_script.py").read_text()
    parser = IncrementalParser()
    for edit in range(3):
        module = parser.parse(source)
        expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        wanted = [(node, top) for top, statement in enumerate(module.body) for node in _nodes(statement)]
        got = locate(module, source, wanted, text_lines=parser.text_lines(module), memo=parser.positions)
        assert all(got[node] == expected[node] for node, _ in wanted)
        parser.positions.keep_only(module)
        field = "    dataset_size: int = 256\n"
        source = source.replace(field, field + "    # more\n" * (edit + 1), 1)


def test_a_prepared_document_renders_no_statement_again_on_its_first_edit(monkeypatch) -> None:
    """A document's first lint renders only what it must; `prepare` (the server runs it once
    the first diagnostics are out) keeps the positions of the statements holding findings, so
    an edit elsewhere renders nothing, and the positions are still exact."""
    from odelint.engine import positions
    from odelint.engine.core import lint_source

    source = (ROOT / "bench" / "training_script.py").read_text()
    parser = IncrementalParser()
    first = lint_source(source, "train.py", parser=parser)
    parser.prepare()
    rendered: list[object] = []
    whole = positions._whole
    monkeypatch.setattr(positions, "_whole", lambda module: rendered.append(module) or whole(module))
    line = "    return 0.5 * velocity**2 + 0.5 * frequency**2 * position**2"  # `energy`, which holds no finding
    assert line in source
    source = source.replace(line, line + " + 1.0")
    edited = lint_source(source, "train.py", parser=parser)
    assert first.findings and rendered == []
    assert [(f.code, f.span) for f in edited.findings] == \
        [(f.code, f.span) for f in lint_source(source, "train.py").findings]


EXPECTS_AN_ERROR = '''\
import jax
import pytest


def test_old_spelling():
    leaves = jax.tree_map(lambda x: x, [1.0])
    with pytest.raises(AttributeError):
        jax.tree_map(lambda x: x, leaves)
'''


@pytest.mark.parametrize("editor", [False, True])
def test_the_gates_tree_places_the_findings(monkeypatch: pytest.MonkeyPatch, editor: bool) -> None:
    """CPython parses a file's text once per lint: the tree the pre-checks read also says
    where the statements holding findings start, and where a test expects an error (a file
    linted once, and an editor document's first lint)."""
    from odelint.engine.core import lint_source

    parsed: list[str] = []
    parse = ast.parse

    def counted(source: str, *args: Any, **kwargs: Any) -> ast.AST:
        if source == EXPECTS_AN_ERROR:
            parsed.append(source)
        return parse(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counted)
    result = lint_source(EXPECTS_AN_ERROR, "test_spelling.py", parser=IncrementalParser() if editor else None)
    assert [(f.code, f.span.line) for f in result.findings] == [("ODL901", 6)]  # line 8 expects the error
    assert len(parsed) == 1


def test_a_large_files_gate_tree_is_dropped_before_libcst_parses_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above the collector's large-file size, the tree would stand on the file's peak memory:
    positions parse the text again instead, and are the same."""
    from odelint.engine import core
    from odelint.engine.collector import LARGE_FILE_BYTES

    filler = "# padding\n" * (LARGE_FILE_BYTES // 10 + 1)
    source = EXPECTS_AN_ERROR + filler
    seen: list[ast.Module | None] = []
    run_rules = core.run_rules

    def noted(*args: object, **kwargs: object) -> object:
        seen.append(kwargs["tree"])  # type: ignore[arg-type]
        return run_rules(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(core, "run_rules", noted)
    result = core.lint_source(source, "test_spelling.py")
    small = core.lint_source(EXPECTS_AN_ERROR, "test_spelling.py")
    assert seen[0] is None and isinstance(seen[1], ast.Module)
    assert [(f.code, f.span) for f in result.findings] == [(f.code, f.span) for f in small.findings]
