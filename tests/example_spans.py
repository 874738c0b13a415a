"""Fill in the reported span of every rule's Flag examples (`span=` in the `examples` tuple).

    python tests/example_spans.py            # rewrite the rule files with the current spans
    python tests/example_spans.py --check    # list the Flags whose stated span differs; exit 1

Run it after a rule's reporting node changed on purpose, then READ the diff: a span that
covers the whole file (starting at 1:1) means the rule reports the wrong node.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from collections.abc import Sequence

import libcst as cst
from odelint.api.registry import all_rules
from odelint.api.rule import BaseRule, Flag, Pass, format_span
from odelint.engine.core import lint_source

LINE_LENGTH = 120  # ruff's line-length in pyproject.toml


def reported_spans(rule: type[BaseRule], example: Flag) -> tuple[str, ...]:
    result = lint_source(example.code, example.filename, {rule.code})
    return tuple(format_span(f.span) for f in result.findings if f.code == rule.code)


def span_value(spans: tuple[str, ...]) -> cst.BaseExpression:
    if len(spans) == 1:
        return cst.SimpleString(f'"{spans[0]}"')
    return cst.Tuple([cst.Element(cst.SimpleString(f'"{span}"')) for span in spans])


class _FillSpans(cst.CSTTransformer):
    """Sets `span=` on the Flag calls of one rule class's `examples` tuple, in order."""

    def __init__(self, class_name: str, spans: Sequence[tuple[str, ...] | None]) -> None:
        self.class_name = class_name
        self.spans = list(spans)
        self.inside = False
        self.done = False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.inside = node.name.value == self.class_name
        return self.inside

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        self.inside = False
        return updated

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
        target = updated.targets[0].target if len(updated.targets) == 1 else None
        if not (self.inside and isinstance(target, cst.Name) and target.value == "examples"
                and isinstance(updated.value, cst.Tuple)):
            return updated
        calls = [e for e in updated.value.elements if isinstance(e.value, cst.Call)
                 and isinstance(e.value.func, cst.Name) and e.value.func.value in ("Flag", "Pass")]
        if len(calls) != len(self.spans):
            raise ValueError(f"{self.class_name}: {len(calls)} example calls, {len(self.spans)} examples")
        elements = []
        by_identity = {id(element): spans for element, spans in zip(calls, self.spans, strict=True)}
        for element in updated.value.elements:
            spans = by_identity.get(id(element))
            if spans is not None:
                element = element.with_changes(value=_with_span(element.value, spans))  # type: ignore[arg-type]
            elements.append(element)
        self.done = True
        return updated.with_changes(value=updated.value.with_changes(elements=elements))


def _with_span(call: cst.Call, spans: tuple[str, ...]) -> cst.Call:
    value = span_value(spans)
    args = list(call.args)
    for index, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == "span":
            args[index] = arg.with_changes(value=value)
            return call.with_changes(args=args)
    last = args[-1]
    closing: cst.Comma | cst.MaybeSentinel = cst.MaybeSentinel.DEFAULT
    between: cst.BaseParenthesizableWhitespace = cst.SimpleWhitespace(" ")
    if isinstance(last.comma, cst.Comma) and isinstance(last.comma.whitespace_after, cst.ParenthesizedWhitespace):
        # one argument a line, with a trailing comma: the new one goes on its own line, indented alike
        closing = last.comma
        before_last = args[-2].comma if len(args) > 1 else None
        if isinstance(before_last, cst.Comma):
            between = before_last.whitespace_after
    args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=between))
    args.append(cst.Arg(value, keyword=cst.Name("span"), comma=closing, equal=cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))))
    return call.with_changes(args=args)


def stale(rule: type[BaseRule]) -> list[tuple[int, tuple[str, ...]]]:
    """(index, current spans) of the rule's Flags whose stated span differs."""
    found = []
    for index, example in enumerate(rule.examples):
        if isinstance(example, Flag):
            spans = reported_spans(rule, example)
            stated = None if example.spans is None else tuple(format_span(s) for s in example.spans)
            if stated != spans:
                found.append((index, spans))
    return found


def wrap_long_spans(code: str) -> str:
    """A `, span=...` that takes a line past LINE_LENGTH moves to a line of its own; a tuple of
    spans still too long continues under its first span."""
    lines = code.split("\n")
    for number, line in enumerate(lines):
        if len(line) <= LINE_LENGTH or "span=" not in line:
            continue
        head = ""
        if ", span=" in line:
            cut = line.rindex(", span=")
            head = line[:cut + 1] + "\n"
            line = " " * (len(line) - len(line.lstrip()) + 4) + line[cut + 2:]
        if len(line) > LINE_LENGTH and '", "' in line:
            split = line.rindex('", "', 0, LINE_LENGTH) + 3
            indent = " " * (line.index("span=(") + len("span=("))
            line = f"{line[:split].rstrip()}\n{indent}{line[split:]}"
        lines[number] = head + line
    return "\n".join(lines)


def fill(rule: type[BaseRule]) -> bool:
    """Rewrite the rule's file with the current spans; True when it changed."""
    path = inspect.getsourcefile(rule)
    assert path is not None
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    new = source
    if stale(rule):
        spans = [reported_spans(rule, e) if isinstance(e, Flag) else None for e in rule.examples
                 if isinstance(e, (Flag, Pass))]
        transformer = _FillSpans(rule.__name__, spans)
        new = cst.parse_module(source).visit(transformer).code
        if not transformer.done:
            raise ValueError(f"{rule.code}: no literal `examples = (...)` tuple in {path}")
    new = wrap_long_spans(new)
    if new == source:
        return False
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(new)
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only list stale spans")
    options = parser.parse_args(argv)
    problems = 0
    for rule in all_rules():
        if options.check:
            for index, spans in stale(rule):
                problems += 1
                print(f"{rule.code} example {index}: reported at {', '.join(spans) or 'nothing'}")
        elif fill(rule):
            print(f"{rule.code}: spans filled in")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
