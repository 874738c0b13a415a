"""Every rule's embedded examples: what it must flag, what it must not, and the exact fix."""

from __future__ import annotations

import pytest
from odelint.api.registry import ENGINE_RULES, all_rules
from odelint.api.rule import Flag, Pass
from odelint.engine.core import fix_source, lint_source

CASES = [(rule, index, example) for rule in all_rules() for index, example in enumerate(rule.examples)]


def _id(case) -> str:
    rule, index, example = case
    return f"{rule.code}-{type(example).__name__.lower()}-{index}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_example(case) -> None:
    rule, _, example = case
    found = [f for f in lint_source(example.code, example.filename, {rule.code}).findings if f.code == rule.code]
    if isinstance(example, Pass):
        assert found == [], [f"{f.span.line}:{f.span.column} {f.message}" for f in found]
        return
    assert len(found) == example.count, [f.message for f in found]
    if example.message is not None:
        assert example.message in found[0].message
    if example.fixed is not None:
        result = fix_source(example.code, example.filename, {rule.code}, unsafe=example.unsafe)
        assert result.crashes == []
        assert result.source == example.fixed
        again = fix_source(result.source, example.filename, {rule.code}, unsafe=example.unsafe)
        assert again.source == result.source, "a second fix changed the code again"


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_every_rule_has_examples_both_ways(rule) -> None:
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
