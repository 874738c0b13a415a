"""The editor's incremental parse must give exactly the tree a whole-file parse gives."""

from __future__ import annotations

import random
from collections.abc import Iterator
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


def test_a_function_indented_unlike_the_file_is_spliced_as_a_whole_parse_reads_it() -> None:
    """A block's indent is None where it is its module's default: parsed alone, a function
    indented by two spaces in a file indented by four would be rendered (and fixed) with
    four. Such an edit parses the whole file, and the tree renders the text again."""
    source = ("import jax\n\n\ndef a(x):\n    return x\n\n\ndef b(y):\n  if y:\n    return 1\n  return 2\n\n\n"
              "z = 1\n")
    parser = IncrementalParser()
    parser.parse(source)
    parser.prepare()
    edited = source.replace("return 2", "return 3")
    got = parser.parse(edited)
    assert got.code == edited and got.deep_equals(cst.parse_module(edited))
    again = edited.replace("return 3", "return 4")  # the next edit, in the same function
    before = parser.parse(again)
    assert before.code == again
    four = again.replace("return x", "return x + 1")  # an edit of a function indented as the file is
    spliced = parser.parse(four)
    assert spliced.code == four and spliced.body[0] is before.body[0]  # spliced: the import is kept


def _typing(seed: int, snippets: list[str]) -> Iterator[tuple[IncrementalParser, str, cst.Module]]:
    """Random insertions into the example training script, parsed one after another by one
    parser as an editor's document is: the parser, the text and the tree of each version
    that parses."""
    source = (ROOT / "examples/neural_ode/train.py").read_text()
    parser = IncrementalParser()
    parser.parse(source)
    parser.prepare()
    rng = random.Random(seed)
    for _ in range(60):
        position = rng.randrange(len(source) // 4, len(source))
        edited = source[:position] + rng.choice(snippets) + source[position:]
        if _whole(edited) is None:
            continue
        yield parser, edited, parser.parse(edited)
        source = edited


def test_the_statement_texts_add_up_to_the_text_after_each_splice() -> None:
    """The texts a splice keeps (the middle's own text when it parsed one statement) are
    what the next edit matches statements by: they must add up to the edited text."""
    for parser, edited, got in _typing(7, ["1", "x", " ", "# c\n", "\n"]):
        assert got.code == edited
        texts = parser._texts()
        if texts is not None:
            assert parser._header + "".join(texts) + parser._footer == edited
            assert texts == [got.code_for_node(statement) for statement in got.body]


def test_statement_lines_after_each_splice_are_where_the_text_puts_them() -> None:
    """The line each statement starts on (which the engine's positions start from) is kept
    per statement across splices, and recounted only for what an edit parsed."""
    for parser, edited, module in _typing(11, ["1", "\n", "# c\n", "\n\n", "x = 1\n"]):
        lines = parser.text_lines(module)
        if lines is None:
            parser.prepare()
            lines = parser.text_lines(module)
        assert lines is not None
        starts = [1 + edited[:edited.index(text, sum(map(len, parser._statements[:i])) + len(parser._header))]
                  .count("\n") for i, text in enumerate(parser._statements)]
        assert lines == starts


NESTED = '''import jax


def train(model, data, steps):
    """Train."""
    total = 0.0
    for step in range(steps):
        if step % 10 == 0:
            print(step)
        elif step > 5:
            total += 1.0
        else:
            total -= 0.5
        try:
            loss = model(data) * 0.5
        except ValueError:
            loss = 0.0
        finally:
            total += loss
    with open("log") as log:
        log.write(str(total))
    return total


def helper(x):
    return x
'''


@pytest.mark.parametrize(("line", "typed"), [
    ("            loss = model(data) * 0.5", "            loss = model(data) * 0.51"),  # a try body in a for loop
    ("            total += 1.0", "            total += 1.02"),                         # an elif block
    ("            total -= 0.5", "            total -= 0.53"),                         # an else block
    ("            loss = 0.0", "            loss = 0.04"),                             # an except handler
    ("            total += loss", "            total += loss + 1"),                     # a finally block
    ("        log.write(str(total))", "        log.write(str(total))  # note"),        # a with block, a comment typed
    ('    """Train."""', '    """Train it."""'),                                       # the docstring
])
def test_a_keystroke_in_a_simple_statement_reparses_that_line_only(line: str, typed: str) -> None:
    """Typing inside one line of a simple statement in a function re-parses that line alone:
    every other statement of the function is the same node as before, and the tree is the
    one a whole parse makes."""
    first, second = _edited_nested(line, typed)
    assert second.body[0] is first.body[0] and second.body[2] is first.body[2]  # the other top-level statements
    old_lines, new_lines = _statement_lines(first.body[1]), _statement_lines(second.body[1])
    kept = [a is b for a, b in zip(old_lines, new_lines, strict=True)]
    assert kept.count(False) == 1  # every other line, in every block, is the node it was


def _edited_nested(old: str, new: str) -> tuple[cst.Module, cst.Module]:
    """NESTED's tree, and the next version's after `old` became `new`, from one parser; the
    next is checked against a whole parse."""
    parser = IncrementalParser()
    first = parser.parse(NESTED)
    parser.prepare()
    edited = NESTED.replace(old, new)
    second = parser.parse(edited)
    assert second.deep_equals(cst.parse_module(edited)) and second.code == edited
    return first, second


def _statement_lines(node: cst.CSTNode) -> list[cst.SimpleStatementLine]:
    if isinstance(node, cst.SimpleStatementLine):
        return [node]
    return [line for child in node.children for line in _statement_lines(child)]


@pytest.mark.parametrize(("old", "new"), [
    ("    for step in range(steps):", "    for step in range(steps + 1):"),  # a header line
    ("            loss = 0.0", "             loss = 0.0"),                      # a statement's indent (its block's)
    ("            print(step)", "            print(step); print(1)"),           # a second statement on the line
    ("            print(step)", "            if step: print(1)"),               # a compound statement typed
    ("    total = 0.0", "    total = 0.0\n    count = 0"),                       # a line break typed
])
def test_edits_a_line_cannot_take_parse_the_statement_and_match_a_whole_parse(old: str, new: str) -> None:
    first, second = _edited_nested(old, new)
    assert second.body[0] is first.body[0]
    old_lines, new_lines = _statement_lines(first.body[1]), _statement_lines(second.body[1])
    assert not any(a is b for a, b in zip(old_lines, new_lines, strict=False))  # the statement parsed whole


def test_a_lone_carriage_return_deleted_inside_a_function_moves_the_lines_after_it() -> None:
    """A lone `\\r` is a line break to LibCST and CPython: deleting one inside a statement
    changes where every later line starts, so the whole statement is parsed, and the lines
    each top-level statement starts on follow."""
    source = "import jax\n\n\ndef f(x):\n    y = x\r    return y\n\n\nz = 1\n"
    parser = IncrementalParser()
    parser.parse(source)
    parser.prepare()
    edited = source.replace("y = x\r    return y", "y = x;    return y")
    module = parser.parse(edited)
    assert module.deep_equals(cst.parse_module(edited)) and module.code == edited
    assert parser.text_lines(module) == [1, 2, 6]
