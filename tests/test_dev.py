"""`python -m odelint.dev new-rule`: a scaffolded rule is found by the registry as it is, its
fixture folder keeps the fixture contract, and taken codes, names and wrong families are refused."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from odelint.api.rule import DOC_SECTIONS
from odelint.proof.fixtures import load_cases

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A copy of what the scaffold reads and writes: pyproject.toml, lint/ (empty), rules/, tests/fixtures/."""
    copy = tmp_path / "odelint"
    shutil.copytree(ROOT / "rules", copy / "rules", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "lint").mkdir()
    (copy / "tests" / "fixtures").mkdir(parents=True)
    shutil.copy(ROOT / "pyproject.toml", copy)
    return copy


def new_rule(where: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "odelint.dev", "new-rule", *arguments], cwd=where,
                          capture_output=True, text=True, timeout=60)


def test_the_scaffold_writes_a_rule_the_registry_finds_and_fixtures_that_keep_the_contract(checkout: Path) -> None:
    result = new_rule(checkout / "rules", "ODL799", "key-split-ignored", "arrays")  # from anywhere inside
    assert result.returncode == 0, result.stderr
    written = ["rules/arrays/key_split_ignored.py", "tests/fixtures/ODL799/fixture.toml",
               "tests/fixtures/ODL799/hazard_key_split_ignored.py", "tests/fixtures/ODL799/fixed_key_split_ignored.py"]
    assert result.stdout.splitlines()[:4] == [f"wrote {path}" for path in written]

    module = (checkout / written[0]).read_text()
    rule = next(node for node in ast.parse(module).body if isinstance(node, ast.ClassDef))
    assert rule.name == "KeySplitIgnored"
    assert all(section in (ast.get_docstring(rule) or "") for section in DOC_SECTIONS)
    attributes = {target.id for node in rule.body if isinstance(node, ast.Assign)
                  for target in node.targets if isinstance(target, ast.Name)}
    assert {"code", "name", "summary", "triggers", "fixtures", "examples"} <= attributes
    assert "Flag(" in module and "Pass(" in module and "def visit_Call" in module

    [case] = load_cases(str(checkout / "tests/fixtures/ODL799"), "ODL799")
    assert (case.name, case.hazard, case.fixed, case.fix, case.expect) == (
        "key-split-ignored", "hazard_key_split_ignored.py", "fixed_key_split_ignored.py", "manual", "error")
    for program in written[2:]:
        text = (checkout / program).read_text()
        compile(text, program, "exec")
        assert 'print("ODELINT-CHECK", json.dumps({"value"' in text

    # the registry, pointed at the copy, finds and accepts the rule with nothing registered by hand
    discovered = subprocess.run([sys.executable, "-c", (
        "import sys, odelint.rules as p; p.__path__[:] = [sys.argv[1]]\n"
        "from odelint.api.registry import all_rules\n"
        "from odelint.api.rule import validate_rule\n"
        "[rule] = [r for r in all_rules() if r.code == 'ODL799']\n"
        "print(rule.name, rule.fixtures, rule.triggers, validate_rule(rule))"), str(checkout / "rules")],
        capture_output=True, text=True, timeout=60)
    assert discovered.stdout.split("\n")[0] == "key-split-ignored tests/fixtures/ODL799 (('TODO',),) []", (
        discovered.stderr)


@pytest.mark.parametrize(("arguments", "reason"), [
    (("ODL201", "a-fresh-name", "optimisers"), "ODL201 is taken by optimizer-init-unfiltered"),
    (("ODL298", "optimizer-init-unfiltered", "optimisers"), "the name optimizer-init-unfiltered is taken by ODL201"),
    (("ODL001", "another-io-error", "arrays"), "ODL001 is taken by io-error"),
    (("ODL798", "a-fresh-name", "random"), "family 'random' is not one of"),
    (("ODL298", "a-fresh-name", "arrays"), "arrays rules have codes ODL7xx, not ODL298"),
    (("ODL79", "a-fresh-name", "arrays"), "code 'ODL79' must look like ODL123"),
    (("ODL798", "A_Fresh_Name", "arrays"), "must be kebab-case"),
])
def test_taken_codes_and_names_and_wrong_families_are_refused_with_nothing_written(
        checkout: Path, arguments: tuple[str, str, str], reason: str) -> None:
    before = sorted(str(path) for path in checkout.rglob("*"))
    result = new_rule(checkout, *arguments)
    assert result.returncode == 2 and reason in result.stderr
    assert sorted(str(path) for path in checkout.rglob("*")) == before


def test_outside_a_checkout_the_scaffold_says_so(tmp_path: Path) -> None:
    result = new_rule(tmp_path, "ODL798", "a-fresh-name", "arrays")
    assert result.returncode == 2 and "not inside an odelint checkout" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_mypy_sees_every_top_level_entry_of_lint_through_the_links() -> None:
    """`.mypy/odelint` mirrors the package mapping of pyproject.toml; a new subpackage needs its link."""
    links = ROOT / ".mypy" / "odelint"
    entries = {name for name in os.listdir(ROOT / "lint") if name != "__pycache__"}
    assert {name for name in os.listdir(links) if name != "rules"} == entries
    assert all((links / name).resolve() == (ROOT / "lint" / name).resolve() for name in entries)
    assert (links / "rules").resolve() == (ROOT / "rules").resolve()


def test_rule_links_go_to_the_configured_docs_url_or_this_checkouts_page_never_elsewhere(monkeypatch) -> None:
    from odelint.api import docs
    from odelint.api.registry import rule_for
    from odelint.faces.report import sarif

    rule = rule_for("ODL201")
    assert rule is not None
    monkeypatch.setenv(docs.DOCS_URL_VARIABLE, "https://docs.example.org/odelint/rules.md")
    assert docs.url(rule) == "https://docs.example.org/odelint/rules.md#odl201-optimizer-init-unfiltered"
    monkeypatch.delenv(docs.DOCS_URL_VARIABLE)
    page = ROOT / "docs" / "rules.md"
    assert docs.url(rule) == f"{page.resolve().as_uri()}#odl201-optimizer-init-unfiltered"
    assert "\n## ODL201 optimizer-init-unfiltered\n" in page.read_text(), "the anchor names a heading of the page"

    for module in (docs, sarif):  # installed from a wheel, nothing configured
        monkeypatch.setattr(module, "pages_url", lambda: None)
    assert docs.url(rule) is None
    from odelint.engine.core import lint_source

    findings = lint_source("import optax\nimport equinox as eqx\nmodel = eqx.nn.MLP(2, 2, 8, 1, key=k)\n"
                           "state = optax.adam(1e-3).init(model)\n", "train.py").findings
    driver = json.loads(sarif.render(findings))["runs"][0]["tool"]["driver"]
    assert [r["id"] for r in driver["rules"]] == ["ODL201"]
    assert "helpUri" not in driver["rules"][0] and "informationUri" not in driver


def test_generate_refuses_a_checkout_odelint_is_not_imported_from(checkout: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "odelint.dev", "generate"], cwd=checkout,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "install this checkout in editable mode" in result.stderr
    assert not (checkout / "docs").exists() and not (checkout / "README.md").exists()
