"""The deprecated-API table (lint/analysis/data/deprecated_apis.toml) and the ODL9xx rules serving it."""

from __future__ import annotations

import dataclasses
import re

import pytest
from odelint.analysis.deprecated_apis import load, parse
from odelint.api.finding import Safety
from odelint.api.registry import all_rules, rules_by_code
from odelint.engine.core import lint_source
from odelint.files.versions import target_versions
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


def _removed_module(row):
    """The row of a removed module the name lives in (`equinox.experimental`), if any."""
    return next((module for module in ROWS if module.code == row.code and module.match == "import"
                 and row.name.startswith(module.name + ".")), None)


@pytest.mark.parametrize("row", [row for row in ROWS if row.match == "reference"], ids=_row_id)
def test_every_reference_row_is_flagged_with_its_error(row) -> None:
    package, _, rest = row.name.partition(".")
    module, _, attr = row.name.rpartition(".")
    through_package = f"import {package} as alias\n\nvalue = alias.{rest}\n"
    through_module = f"import {module} as alias\n\nvalue = alias.{attr}\n"
    for source in (through_package, through_module):
        findings = [f for f in lint_source(source, "example.py", {row.code}).findings if f.code == row.code]
        assert len(findings) == 1, source
        gone = _removed_module(row) if source is through_module else None
        if gone is not None:  # the import of the removed module fails first, and is the finding
            assert findings[0].span.line == 1 and gone.error in findings[0].message
            continue
        assert row.error in findings[0].message
        assert findings[0].fixable == row.fixable


REMOVALS = [row for row in ROWS if row.code in ("ODL903", "ODL910", "ODL911")]


@pytest.mark.parametrize("row", REMOVALS, ids=_row_id)
def test_every_removal_names_its_version_and_where_it_comes_from(row) -> None:
    """ODL903/910/911 speak of removals: each row names the release that removed the name
    (or says no release had it) and the changelog, pull request or sources that show it."""
    assert row.removed or not row.existed, f"{row.name}: no verified removal version"
    assert len(row.source) > 20, f"{row.name}: no source for its versions"
    if row.deprecated and row.removed:
        assert Version(row.deprecated) < Version(row.removed)


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
    assert by_name["jax.tree_flatten"].status() == "was removed in jax 0.6.0"
    unknown = dataclasses.replace(by_name["jax.tree_flatten"], removed="")  # no release note found
    assert unknown.status() == "no longer exists in jax"
    assert by_name["equinox.static_field"].status() == "is deprecated and warns"
    assert by_name["jax.numpy.NaN"].status() == "does not exist in jax (no release had it)"


def test_a_name_that_never_existed_has_no_versions() -> None:
    never = {"code": "ODL910", "name": "jax.numpy.NaN", "match": "reference", "use": "u", "fix": "none",
             "outcome": "error", "error": "e", "issues": [], "existed": False}
    assert parse({"api": [{**never, "deprecated": "", "removed": ""}]})[0].existed is False
    with pytest.raises(ValueError, match="never existed"):
        parse({"api": [{**never, "deprecated": "", "removed": "0.4.24"}]})


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


# ---- ODL903/910/911: the verified versions, seen from the targeted ones -----------------------

SHUFFLE = "import jax\n\nx = jax.random.shuffle(jax.random.key(0), jax.numpy.arange(3))\n"
X64 = "import jax\n\nwith jax.experimental.enable_x64():\n    pass\n"
NO_ADJOINT = "import diffrax\n\nadjoint = diffrax.NoAdjoint()\n"
FILTER_SPEC = "import equinox as eqx\n\nstep = eqx.filter_jit(lambda m: m, filter_spec=eqx.is_array)\n"
HESSIAN = "from optax import hessian_diag\n"
HOST_CALLBACK = "from jax.experimental import host_callback\n"
TRAPZ = "import jax.numpy as jnp\n\narea = jnp.trapz(jnp.ones(3))\n"


@pytest.mark.parametrize("source, code, package, target, expected, fixable", [
    (SHUFFLE, "ODL910", "jax", "0.4.31", "`jax.random.shuffle` was removed in jax 0.4.31: AttributeError", False),
    (SHUFFLE, "ODL910", "jax", "0.4.30", "`jax.random.shuffle` still works on jax 0.4.30, the targeted version, "
                                         "but is deprecated since jax 0.1.66 and was removed in jax 0.4.31", False),
    (X64, "ODL910", "jax", "0.9.0", "`jax.experimental.enable_x64` was removed in jax 0.9.0: AttributeError", True),
    (X64, "ODL910", "jax", "0.8.3", "still works on jax 0.8.3, the targeted version, but is deprecated since "
                                    "jax 0.8.0 and was removed in jax 0.9.0", True),
    (TRAPZ, "ODL910", "jax", "0.4.20", "`jnp.trapz` still works on jax 0.4.20", True),
    (TRAPZ, "ODL910", "jax", "0.10.2", "`jnp.trapz` was removed in jax 0.4.24", True),
    (HOST_CALLBACK, "ODL903", "jax", "0.4.34", "`jax.experimental.host_callback` still works on jax 0.4.34, the "
                                               "targeted version, but is deprecated since jax 0.4.26 and was removed "
                                               "in jax 0.4.35", False),
    (HOST_CALLBACK, "ODL903", "jax", "0.5.0", "`jax.experimental.host_callback` was removed in jax 0.4.35: "
                                              "NotImplementedError", False),
    (NO_ADJOINT, "ODL911", "diffrax", "0.2.2", "`diffrax.NoAdjoint` still works on diffrax 0.2.2, the targeted "
                                               "version, but was removed in diffrax 0.3.0", False),
    (NO_ADJOINT, "ODL911", "diffrax", "0.3.0", "`diffrax.NoAdjoint` was removed in diffrax 0.3.0: AttributeError",
     False),
    (FILTER_SPEC, "ODL911", "equinox", "0.9.2", "`eqx.filter_jit` `filter_spec=`: still works on equinox 0.9.2, the "
                                                "targeted version, but is deprecated since equinox 0.5.0 and was "
                                                "removed in equinox 0.10.0", False),
    (FILTER_SPEC, "ODL911", "equinox", "0.13.8", "`eqx.filter_jit` no longer accepts `filter_spec=` (removed in "
                                                 "equinox 0.10.0): TypeError", False),
    (HESSIAN, "ODL911", "optax", "0.1.7", "`optax.hessian_diag` still works on optax 0.1.7, the targeted version, "
                                          "but was removed in optax 0.1.8", False),
    (HESSIAN, "ODL911", "optax", "0.2.8", "`optax.hessian_diag` was removed in optax 0.1.8: ImportError: cannot "
                                          "import name 'hessian_diag' from 'optax'", False),
])
def test_a_verified_removal_follows_the_targeted_version(source, code, package, target, expected, fixable) -> None:
    [finding] = _findings(source, code, **{package: target})
    assert expected in finding.message
    assert finding.fixable == fixable


@pytest.mark.parametrize("source, code, package, target", [
    (SHUFFLE, "ODL910", "jax", "0.1.60"),            # before its deprecation in 0.1.66
    (X64, "ODL910", "jax", "0.7.2"),                 # jax.enable_x64 does not exist yet there
    (TRAPZ, "ODL910", "jax", "0.4.14"),
    (HOST_CALLBACK, "ODL903", "jax", "0.4.20"),
    (FILTER_SPEC, "ODL911", "equinox", "0.4.0"),     # filter_spec was the API then
])
def test_nothing_is_reported_before_a_verified_deprecation(source, code, package, target) -> None:
    assert _findings(source, code, **{package: target}) == []


@pytest.mark.parametrize("target", [None, "0.2.0", "0.4.30", "0.10.2"])
def test_a_name_jax_never_had_fails_on_every_version(target) -> None:
    source = "import jax.numpy as jnp\n\nmissing = jnp.NaN\n"
    [finding] = _findings(source, "ODL910", **({"jax": target} if target else {}))
    assert finding.message.startswith("`jnp.NaN` does not exist in jax (no release had it): AttributeError")
    assert "removed in" not in finding.message and finding.fixable


def test_the_projects_pins_choose_what_odl910_and_odl911_say(tmp_path) -> None:
    (tmp_path / "requirements.txt").write_text("jax==0.4.30\noptax==0.1.7\n")
    versions = target_versions(str(tmp_path), ())
    [shuffle] = [f for f in lint_source(SHUFFLE, "train.py", {"ODL910"}, versions=versions).findings]
    assert "still works on jax 0.4.30" in shuffle.message and "removed in jax 0.4.31" in shuffle.message
    [hessian] = [f for f in lint_source(HESSIAN, "train.py", {"ODL911"}, versions=versions).findings]
    assert "still works on optax 0.1.7" in hessian.message
    flagged = target_versions(str(tmp_path), (("optax", Version("0.2.8")),))
    [targeted] = [f for f in lint_source(HESSIAN, "train.py", {"ODL911"}, versions=flagged).findings]
    assert "`optax.hessian_diag` was removed in optax 0.1.8" in targeted.message, "--target-version wins"


# ---- where the failure happens ----------------------------------------------------------------

@pytest.mark.parametrize("source, code, lines", [
    # a from-import of a removed name fails at the import; its uses are not reported again
    ("from optax import hessian_diag\n\nd = hessian_diag(f, p, x, y)\ne = hessian_diag\n", "ODL911", [1]),
    # a module attribute fails where it is read
    ("import optax\n\nd = optax.hessian_diag(f, p, x, y)\ne = optax.hvp\n", "ODL911", [3, 4]),
    # a removed submodule fails at its import, however it is imported, and its uses run no more
    ("import equinox.experimental\n\ni = equinox.experimental.StateIndex(0)\n", "ODL911", [1]),
    ("from equinox import experimental as ex\n\ni = ex.StateIndex(0)\ns = ex.get_state(i, 0)\n", "ODL911",
     [1]),
    ("from equinox.experimental import StateIndex, get_state\n\ni = StateIndex(0)\n", "ODL911", [1]),
    # another name of the same import is still used where it is read
    ("from jax import ops, partial\n\nx = ops.index_update(x, 0, 1.0)\n", "ODL910", [1, 3]),
    ("from jax import random\n\nx = random.shuffle(key, x)\n", "ODL910", [3]),
])
def test_each_failure_is_reported_where_the_program_fails(source, code, lines) -> None:
    assert [f.span.line for f in _findings(source, code)] == lines
