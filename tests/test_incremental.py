"""The editor's incremental parse must give exactly the tree a whole-file parse gives."""

from __future__ import annotations

import random
from pathlib import Path

import libcst as cst
import pytest
from odelint.engine.incremental import IncrementalParser

ROOT = Path(__file__).resolve().parents[1]
FILES = ["lint/analysis/facts.py", "lint/engine/core.py", "examples/neural_ode/train.py",
         "rules/optimisers/optimizer_init_unfiltered.py"]
SNIPPETS = ["x", " ", "\n", "\n\n", "# note\n", "(", ")", '"""', "\\\n", "@dec\n", "    ", "else:\n    pass\n",
            "def g():\n    return 1\n", "import os\n", "\r\n", "if True:\n", ":"]


def _edit(source: str, rng: random.Random) -> str:
    position = rng.randrange(len(source) + 1)
    choice = rng.random()
    if choice < 0.5:
        return source[:position] + rng.choice(SNIPPETS) + source[position:]
    if choice < 0.8:
        return source[:position] + source[position + rng.randrange(1, 40):]
    lines = source.splitlines(keepends=True)
    index = rng.randrange(len(lines))
    return "".join(lines[:index] + lines[index + 1:])


def _whole(source: str) -> cst.Module | None:
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError:
        return None


@pytest.mark.parametrize("path", FILES)
def test_incremental_parse_equals_whole_parse_after_random_edits(path: str) -> None:
    rng = random.Random(path)
    source = (ROOT / path).read_text()
    parser = IncrementalParser()
    parser.parse(source)
    spliced = 0
    for _ in range(120):
        edited = _edit(source, rng)
        expected = _whole(edited)
        if expected is None:
            with pytest.raises(cst.ParserSyntaxError):
                parser.parse(edited)
            continue
        got = parser.parse(edited)
        assert got.deep_equals(expected) and got.code == expected.code
        # the pieces add up to the text, or the next version is parsed whole (rendering the
        # pieces is what finds out: a `\\` continuation line may live in no statement's text)
        texts = parser._texts()
        assert parser._module is None or parser._header + "".join(texts or ()) + parser._footer == edited
        spliced += 1
        if rng.random() < 0.5:
            source = edited  # keep editing the edited text, as a user does
    assert spliced > 30


def test_typing_inside_a_function_reuses_the_other_statements() -> None:
    source = (ROOT / "lint/analysis/facts.py").read_text()
    parser = IncrementalParser()
    first = parser.parse(source)
    line = "        return self.index.lookup(name, scope)"
    edited = source.replace(line, line + "  # x")
    second = parser.parse(edited)
    assert second.deep_equals(cst.parse_module(edited))
    reused = sum(1 for a, b in zip(first.body, second.body, strict=False) if a is b)
    assert reused == len(first.body) - 1


def test_an_editor_relint_checks_the_edited_statements_with_cpython_first() -> None:
    """A re-lint compiles only the statements the edit touched: a syntax error there is ODL000
    at its line in the file, and nesting LibCST's native parser must not see is refused
    before it parses anything (the whole-file verdict then names it)."""
    from odelint.engine.core import lint_source

    source = "import jax\n\n\ndef f(x):\n    return x\n\n\ndef g(y):\n    return y\n\n\nz = 1\n"
    parser = IncrementalParser()
    assert lint_source(source, "m.py", parser=parser).findings == []
    broken = source.replace("    return y\n", "    return y +\n")
    [error] = lint_source(broken, "m.py", parser=parser).findings
    assert (error.code, error.span.line) == ("ODL000", 9)
    assert lint_source(source, "m.py", parser=parser).findings == []
    deep = source.replace("    return y\n", "    return " + "(" * 5000 + "y" + ")" * 5000 + "\n")
    [error] = lint_source(deep, "m.py", parser=parser).findings
    assert error.code == "ODL000"
    assert lint_source(source, "m.py", parser=parser).findings == []


def test_statement_texts_are_rendered_when_first_needed_and_a_splice_still_reuses() -> None:
    source = (ROOT / "lint/analysis/facts.py").read_text()
    parser = IncrementalParser()
    first = parser.parse(source)
    assert not parser.prepared and parser.text_lines(first) is None  # a first lint finds lines itself
    parser.prepare()
    assert parser.prepared and parser.text_lines(first) is not None
    line = "        return self.index.lookup(name, scope)"
    second = parser.parse(source.replace(line, line + "  # x"))
    assert sum(1 for a, b in zip(first.body, second.body, strict=False) if a is b) == len(first.body) - 1
    unprepared = IncrementalParser()
    unprepared.parse(source)  # not prepared: the first edit renders the texts and still splices
    third = unprepared.parse(source.replace(line, line + "  # y"))
    assert third.deep_equals(cst.parse_module(source.replace(line, line + "  # y")))
    assert unprepared.prepared and unprepared.has_tree
