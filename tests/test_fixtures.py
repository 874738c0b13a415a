"""Every rule's fixture folder keeps the contract of tests/fixtures/README.md (no JAX needed)."""

from __future__ import annotations

import os

import pytest
from odelint.api.engine_rules import ENGINE_RULES
from odelint.api.registry import all_rules
from odelint.api.rule import TextRule
from odelint.engine.core import fix_source, lint_source
from odelint.proof.fixtures import load_cases

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RULES = [rule for rule in all_rules() if rule not in ENGINE_RULES]
WITH_FIXTURES = [rule for rule in RULES if rule.fixtures and os.path.isdir(os.path.join(ROOT, rule.fixtures))]


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _linted_pair(rule, case) -> tuple[str, str]:
    """The files the linter looks at: the programs, or for a requirements rule the pins."""
    if issubclass(rule, TextRule) and case.needs_pins:
        return case.path(case.pins_hazard), case.path(case.pins_fixed)
    return case.path(case.hazard), case.path(case.fixed)


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.code)
def test_every_rule_has_fixtures(rule):
    assert rule.fixtures == f"tests/fixtures/{rule.code}", "set `fixtures` to the rule's fixture folder"
    folder = os.path.join(ROOT, rule.fixtures)
    assert os.path.isfile(os.path.join(folder, "fixture.toml")), f"{folder}/fixture.toml is missing"
    assert load_cases(folder, rule.code)


@pytest.mark.parametrize("rule", WITH_FIXTURES, ids=lambda rule: rule.code)
def test_hazard_is_flagged_and_fixed_is_not(rule):
    for case in load_cases(os.path.join(ROOT, rule.fixtures), rule.code):
        hazard, fixed = _linted_pair(rule, case)
        codes = [f.code for f in lint_source(_read(hazard), hazard, {rule.code}).findings]
        assert rule.code in codes, f"{case.name}: {hazard} is not flagged"
        codes = [f.code for f in lint_source(_read(fixed), fixed, {rule.code}).findings]
        assert rule.code not in codes, f"{case.name}: the fixed file {fixed} is still flagged"


@pytest.mark.parametrize("rule", WITH_FIXTURES, ids=lambda rule: rule.code)
def test_fixed_is_exactly_the_fix_output(rule):
    for case in load_cases(os.path.join(ROOT, rule.fixtures), rule.code):
        if case.fix == "manual":
            continue
        hazard, fixed = _linted_pair(rule, case)
        result = fix_source(_read(hazard), hazard, {rule.code}, unsafe=case.fix == "unsafe")
        assert not result.crashes
        assert result.source == _read(fixed), f"{case.name}: {fixed} differs from `odelint check --fix` output"
        if case.fix == "safe":
            assert fix_source(_read(hazard), hazard, {rule.code}).source == result.source, \
                f"{case.name}: fix = \"safe\" but the fix needs --unsafe-fixes"
