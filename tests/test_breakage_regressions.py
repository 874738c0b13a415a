"""Breakages a reviewer made on purpose that no test noticed (issue 26): the cache key without
the rules' digest, `--diff --exit-zero`, the SARIF fields users and GitHub code scanning read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from odelint.api import rule_index
from odelint.api.registry import known_codes, rule_for
from odelint.engine import runner
from odelint.files.config import ConfigResolver, Overrides

TWO_FINDINGS = ("import equinox as eqx\nimport optax\n\nmodel = eqx.nn.MLP(2, 2, 8, 1, key=None)\n"
                "opt_state = optax.adam(1e-3).init(model)\n"
                "def step(grads, state):\n    return optax.adamw(1e-3).update(grads, state)\n")


def _codes(folder: Path) -> list[str]:
    resolver = ConfigResolver(Overrides(), known_codes(), cwd=str(folder))
    return [f.code for f in runner.run([str(folder)], resolver, runner.Options(jobs=1, use_cache=True)).findings]


def test_a_changed_rule_is_never_answered_by_its_old_cached_findings(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "train.py").write_text(TWO_FINDINGS, encoding="utf-8")
    assert _codes(tmp_path) == ["ODL201", "ODL203"]
    # ODL201 is changed (it now reports nothing here); its source, so the rules' digest, changes with it
    monkeypatch.setattr(rule_for("ODL201"), "report", lambda self, *args, **kwargs: None)
    monkeypatch.setattr(rule_index, "sources_digest", lambda: "the sources after ODL201 changed")
    assert _codes(tmp_path) == ["ODL203"], "the cache answered with the old rule's finding"


def _odelint(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "odelint", *args], cwd=folder, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "train.py").write_text(TWO_FINDINGS, encoding="utf-8")
    return tmp_path


def test_diff_exits_1_when_it_would_change_something_and_0_with_exit_zero(project: Path) -> None:
    plain = _odelint(project, "check", "--diff", "--no-cache", "train.py")
    assert plain.returncode == 1, plain.stderr
    assert "+opt_state = optax.adam(1e-3).init(eqx.filter(model, eqx.is_array))" in plain.stdout
    zero = _odelint(project, "check", "--diff", "--exit-zero", "--no-cache", "train.py")
    assert (zero.returncode, zero.stdout) == (0, plain.stdout), zero.stderr
    assert (project / "train.py").read_text(encoding="utf-8") == TWO_FINDINGS, "--diff changes nothing"


def test_sarif_carries_what_code_scanning_and_users_read(project: Path) -> None:
    done = _odelint(project, "check", "--format", "sarif", "--exit-zero", "--no-cache", "train.py")
    assert done.returncode == 0, done.stderr
    (run,) = json.loads(done.stdout)["runs"]
    descriptors = run["tool"]["driver"]["rules"]
    assert [d["id"] for d in descriptors] == ["ODL201", "ODL203"]
    for descriptor in descriptors:
        rule = rule_for(descriptor["id"])
        assert rule is not None
        assert (descriptor["name"], descriptor["shortDescription"]["text"]) == (rule.name, rule.summary)
        assert descriptor["fullDescription"]["text"].strip()
        assert descriptor["helpUri"].startswith(("https://", "http://", "file://"))
        assert rule.code.lower() in descriptor["helpUri"].lower()
        assert descriptor["defaultConfiguration"]["level"] in ("error", "warning", "note")
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["ODL201", "ODL203"]
    for result in results:
        descriptor = descriptors[result["ruleIndex"]]
        assert descriptor["id"] == result["ruleId"]
        assert result["level"] == descriptor["defaultConfiguration"]["level"]
        assert result["message"]["text"]
    (location,) = results[0]["locations"]
    physical = location["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == "train.py"
    assert physical["region"] == {"startLine": 5, "startColumn": 35, "endLine": 5, "endColumn": 40}
