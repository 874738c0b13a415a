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
        # the pieces add up to the text, or the next version is parsed whole
        assert parser._module is None or parser._header + "".join(parser._statements) + parser._footer == edited
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
