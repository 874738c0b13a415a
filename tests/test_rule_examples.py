"""Every rule's embedded examples: what it must flag, what it must not, and the exact fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from odelint.api.engine_rules import ENGINE_RULES
from odelint.api.finding import Safety
from odelint.api.registry import all_rules
from odelint.api.rule import BaseRule, Flag, Pass, format_span, parse_span
from odelint.engine.core import fix_source, lint_source

ROOT = Path(__file__).resolve().parent.parent
CASES = [(rule, index, example) for rule in all_rules() for index, example in enumerate(rule.examples)]


def _id(case: tuple[type[BaseRule], int, Flag | Pass]) -> str:
    rule, index, example = case
    return f"{rule.code}-{type(example).__name__.lower()}-{index}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_example(case: tuple[type[BaseRule], int, Flag | Pass]) -> None:
    rule, _, example = case
    result = lint_source(example.code, example.filename, {rule.code})
    assert result.crashes == [], [crash.message() for crash in result.crashes]
    found = [f for f in result.findings if f.code == rule.code]
    if isinstance(example, Pass):
        assert found == [], [f"{f.span.line}:{f.span.column} {f.message}" for f in found]
        return
    assert len(found) == example.count, [f.message for f in found]
    assert example.spans is not None, "state where each finding is reported: python tests/example_spans.py"
    assert [format_span(f.span) for f in found] == [format_span(s) for s in example.spans]
    if example.message is not None:
        assert example.message in found[0].message
    fixable = [f for f in found if f.fixable]
    if fixable:
        assert example.fixed is not None, "the rule fixes this example: state the exact result with fixed="
    if example.fixed is None:
        return
    result = fix_source(example.code, example.filename, {rule.code}, unsafe=example.unsafe)
    assert result.crashes == []
    assert result.source == example.fixed
    again = fix_source(result.source, example.filename, {rule.code}, unsafe=example.unsafe)
    assert again.source == result.source, "a second fix changed the code again"
    if example.unsafe:
        assert all(f.fix_safety == Safety.UNSAFE.value for f in fixable), "an unsafe example's fixes must be unsafe"
        safe_only = fix_source(example.code, example.filename, {rule.code}, unsafe=False)
        assert safe_only.source == example.code, "a fix declared unsafe was applied without --unsafe-fixes"
    else:
        assert all(f.fix_safety == Safety.SAFE.value for f in fixable), "declare unsafe fixes with unsafe=True"


def _fix_safeties(rule: type[BaseRule]) -> list[str]:
    """The safeties of the fixes the rule's Flag examples actually get, best first."""
    seen: set[str] = set()
    for example in rule.examples:
        if isinstance(example, Flag):
            seen.update(f.fix_safety for f in lint_source(example.code, example.filename, {rule.code}).findings
                        if f.code == rule.code and f.fix_safety is not None)
    return [safety.value for safety in Safety if safety.value in seen]


def test_the_readme_rule_table_states_every_rules_code_name_and_fix() -> None:
    """README's table, row by row, against the registry: code, name and the best fix the rule
    offers (`python -m odelint.dev generate` writes it); and that fix safety is what the rule's
    examples really get (the best of them), so a fix marked safe by mistake fails here too."""
    rows = [[cell.strip() for cell in line.split("|")[1:4]]
            for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines() if line.startswith("| ODL")]
    expected = []
    for rule in all_rules():
        declared = rule.fix_safety.value if rule.fix_safety else None
        if rule not in ENGINE_RULES:  # ODL002's fix is the engine's, shown with other rules (test_defects_lines)
            safeties = _fix_safeties(rule)
            assert declared == (safeties[0] if safeties else None), (rule.code, declared, safeties)
        expected.append([rule.code, rule.name, declared or "–"])
    assert rows == expected


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_every_rule_has_examples_both_ways(rule: type[BaseRule]) -> None:
    if rule in ENGINE_RULES:
        pytest.skip("the engine's codes (syntax and read errors) are tested in test_engine and test_cli")
    flags = [e for e in rule.examples if isinstance(e, Flag)]
    passes = [e for e in rule.examples if isinstance(e, Pass)]
    assert flags and passes, "a rule needs examples it flags and similar ones it must not flag"
    if rule.fix_safety is not None:
        assert any(e.fixed is not None for e in flags), "a fixable rule needs an exact-fix example"
    else:
        assert all(e.fixed is None for e in flags)


def test_examples_written_as_indented_blocks_are_dedented() -> None:
    block = Flag("""
        import jax
        if True:
            x = 1
    """, fixed="""
        y = 2
    """)
    assert block.code == "import jax\nif True:\n    x = 1\n"
    assert block.fixed == "y = 2\n"
    assert Pass("  x = 1\n").code == "  x = 1\n", "text not starting with a newline is kept as written"


def test_spans_read_as_line_column_ranges() -> None:
    flag = Flag("x = 1\n", span=("1:1-1:2", "2:10-3:4"))
    assert [format_span(s) for s in flag.spans or ()] == ["1:1-1:2", "2:10-3:4"]
    assert parse_span("12:3-12:9").end_column == 9
    assert Flag("x = 1\n").spans is None
    with pytest.raises(ValueError, match="line:column-end_line:end_column"):
        parse_span("1:1")
