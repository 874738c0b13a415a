"""The deprecated-API table (lint/analysis/data/deprecated_apis.toml) and the ODL9xx rules serving it."""

from __future__ import annotations

import re

import pytest
from odelint.analysis.deprecated_apis import load, parse
from odelint.api.finding import Safety
from odelint.api.registry import all_rules, rules_by_code
from odelint.engine.core import lint_source
from odelint.rules.deprecated.common import DeprecatedApiRule
from packaging.version import Version

ROWS = load()
FAMILY = [rule for rule in all_rules() if issubclass(rule, DeprecatedApiRule)]
DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
ISSUE = re.compile(r"^[\w.-]+/[\w.-]+#\d+$")


def _row_id(row) -> str:
    return f"{row.code}-{row.name}-{row.keyword}".rstrip("-")


def test_every_row_names_a_rule_of_the_family() -> None:
    codes = rules_by_code()
    for row in ROWS:
        assert row.code in codes, f"{row.name}: no rule {row.code}"
        assert issubclass(codes[row.code], DeprecatedApiRule), f"{row.name}: {row.code} does not serve the table"


def test_every_rule_of_the_family_has_rows_and_is_9xx() -> None:
    assert {rule.code for rule in FAMILY} == {row.code for row in ROWS}
    assert all(rule.code.startswith("ODL9") for rule in FAMILY)


@pytest.mark.parametrize("rule", FAMILY, ids=lambda rule: rule.code)
def test_fix_safety_matches_the_rows(rule) -> None:
    fixable = [row for row in ROWS if row.code == rule.code and row.fixable]
    assert rule.fix_safety == (Safety.SAFE if fixable else None)


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_row_is_well_formed(row) -> None:
    for name in (row.name, row.replacement, row.import_from):
        assert not name or DOTTED.match(name), name
    assert all(ISSUE.match(issue) for issue in row.issues), row.issues
    assert row.error and row.use
    assert not row.values or row.match == "keyword"
    assert row.name.split(".")[0] in ("jax", "equinox", "diffrax", "optax")


def test_rows_are_unique() -> None:
    keys = [(row.name, row.keyword) for row in ROWS]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_triggers_admit_every_row(row) -> None:
    """The gate must let through any file that spells the row (soundness of `triggers`)."""
    rule = rules_by_code()[row.code]
    assert rule.triggered_by(f"{row.name}({row.keyword}=1)")


@pytest.mark.parametrize("row", [row for row in ROWS if row.match == "reference"], ids=_row_id)
def test_every_reference_row_is_flagged_with_its_error(row) -> None:
    module, _, attr = row.name.rpartition(".")
    source = f"import {module} as alias\n\nvalue = alias.{attr}\n"
    findings = [f for f in lint_source(source, "example.py", {row.code}).findings if f.code == row.code]
    assert len(findings) == 1
    assert row.error in findings[0].message
    assert findings[0].fixable == row.fixable


@pytest.mark.parametrize("bad, problem", [
    ({"api": [{"code": "ODL901", "name": "jax.x", "match": "reference", "use": "u", "fix": "safe",
               "outcome": "error", "error": "e", "deprecated": "", "removed": "", "issues": [],
               "colour": "red"}]}, "unknown keys"),
    ({"api": [{"code": "ODL901", "name": "jax.x", "match": "spelling", "use": "u", "fix": "none",
               "outcome": "error", "error": "e", "deprecated": "", "removed": "", "issues": []}]}, "match must be"),
    ({"api": [{"code": "ODL901", "name": "jax.x", "match": "reference", "use": "u", "fix": "safe",
               "outcome": "error", "error": "e", "deprecated": "", "removed": "", "issues": []}]},
     "names `replacement` and `import_from`"),
    ({"api": [{"code": "ODL902", "name": "jax.numpy.clip", "match": "keyword", "keyword": "a_min", "use": "u",
               "fix": "safe", "outcome": "error", "error": "e", "deprecated": "", "removed": "", "issues": []}]},
     "`keyword` and `new_keyword`"),
])
def test_a_malformed_row_is_refused(bad, problem) -> None:
    with pytest.raises(ValueError, match=re.escape(problem)):
        parse(bad)


def test_status_says_removed_missing_or_warning() -> None:
    by_name = {row.name: row for row in ROWS}
    assert by_name["jax.tree_map"].status() == "was removed in jax 0.6.0"
    assert by_name["jax.tree_flatten"].status() == "no longer exists in jax"
    assert by_name["equinox.static_field"].status() == "is deprecated and warns"


TREE_MAP = "import jax\n\ngrads = jax.tree_map(abs, [1.0])\n"


def _findings(source: str, code: str, **targets: str):
    versions = {name: Version(version) for name, version in targets.items()}
    return [f for f in lint_source(source, "example.py", {code}, versions=versions).findings if f.code == code]


@pytest.mark.parametrize("target, expected, fixable", [
    ("0.6.0", "`jax.tree_map` was removed in jax 0.6.0: AttributeError", True),
    ("0.10.2", "`jax.tree_map` was removed in jax 0.6.0: AttributeError", True),
    ("0.4.30", ("`jax.tree_map` still works on jax 0.4.30, the targeted version, but is deprecated since jax 0.4.26 "
               "and was removed in jax 0.6.0 (from then on: AttributeError"), True),
])
def test_a_removal_follows_the_targeted_version(target, expected, fixable) -> None:
    found = _findings(TREE_MAP, "ODL901", jax=target)
    assert len(found) == 1 and expected in found[0].message
    assert found[0].fixable == fixable


def test_nothing_is_reported_before_the_deprecation() -> None:
    assert _findings(TREE_MAP, "ODL901", jax="0.4.20") == []
    assert _findings("import jax.numpy as jnp\n\ny = jnp.clip(1.0, a_min=0.0)\n", "ODL902", jax="0.4.26") == []


def test_an_unknown_target_reads_as_the_checked_versions() -> None:
    unknown = _findings(TREE_MAP, "ODL901")
    assert len(unknown) == 1 and "was removed in jax 0.6.0: AttributeError" in unknown[0].message
    other_package = _findings(TREE_MAP, "ODL901", equinox="0.10.0")
    assert [f.message for f in other_package] == [f.message for f in unknown]


def test_without_a_known_removal_a_deprecated_keyword_fails_only_from_the_checked_version() -> None:
    source = "import jax.numpy as jnp\n\ny = jnp.clip(1.0, a_min=0.0)\n"
    [old] = _findings(source, "ODL902", jax="0.4.30")
    assert "still works on jax 0.4.30" in old.message and "fails on jax 0.10.2" in old.message
    [new] = _findings(source, "ODL902", jax="0.10.2")
    assert "no longer accepts `a_min=`" in new.message and "TypeError" in new.message


def test_without_a_known_deprecation_the_fix_waits_for_the_removal() -> None:
    [finding] = _findings("from jax.config import config\n", "ODL903", jax="0.4.20")
    assert "still works on jax 0.4.20" in finding.message and "removed in jax 0.4.29" in finding.message
    assert not finding.fixable
