"""The rules' metadata index (`rules/data/rule_index.json`) says what the rules say, and a
stale one is never believed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from odelint.api import docs, rule_index
from odelint.api.registry import all_rules, rule_infos
from odelint.api.rule_index import RuleInfo


def test_the_index_is_current() -> None:
    expected = rule_index.render(all_rules())
    assert Path(rule_index.index_path()).read_text(encoding="utf-8") == expected, (
        f"rules/data/rule_index.json is stale; regenerate it with `{rule_index.REGENERATE}`")


def test_the_registry_reads_the_same_metadata_from_the_index_as_from_the_rules() -> None:
    loaded = rule_index.load()
    assert loaded is not None, f"the index is stale: run `{rule_index.REGENERATE}`"
    assert loaded == tuple(RuleInfo.of(rule) for rule in all_rules()) == rule_infos()


def test_the_listing_from_the_index_is_the_listing_from_the_rules() -> None:
    result = subprocess.run([sys.executable, "-m", "odelint", "rules", "--format", "json"],
                            capture_output=True, text=True, timeout=60)
    assert json.loads(result.stdout) == [docs.as_dict(rule) for rule in all_rules()]
    markdown = subprocess.run([sys.executable, "-m", "odelint", "rules", "--format", "markdown"],
                              capture_output=True, text=True, timeout=60).stdout
    assert markdown == docs.markdown(list(all_rules()))


def test_a_changed_or_added_rule_source_changes_the_digest(tmp_path: Path, monkeypatch) -> None:
    copy = tmp_path / "rules"
    shutil.copytree(rule_index._rules_folder(), copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(rule_index, "_rules_folder", lambda: str(copy))
    digest = rule_index.sources_digest.__wrapped__
    original = digest()
    assert original == rule_index.sources_digest(), "the copy hashes like the package"
    module = copy / "optimisers" / "optimizer_init_unfiltered.py"
    module.write_text(module.read_text() + "\n# a changed line\n")
    changed = digest()
    (copy / "arrays" / "new_rule.py").write_text('"""A new rule."""\n')
    assert len({original, changed, digest()}) == 3


def test_a_stale_or_broken_index_is_ignored(tmp_path: Path, monkeypatch) -> None:
    index = tmp_path / "rule_index.json"
    monkeypatch.setattr(rule_index, "index_path", lambda: str(index))
    current = rule_index.render(all_rules())
    index.write_text(current)
    assert rule_index.load() is not None
    index.write_text(current.replace(rule_index.sources_digest(), "0" * 64))
    assert rule_index.load() is None
    index.write_text("{not json")
    assert rule_index.load() is None
