"""The rules' metadata index (`rules/data/rule_index.json`) says what the rules say, a stale or
altered one is never believed, and editing a rule's code (not its metadata) leaves it current."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from odelint.api import docs, rule_index
from odelint.api.registry import all_rules, rule_infos
from odelint.api.rule_index import RuleInfo
from odelint.dev import generate
from odelint.files import fileio

ROOT = Path(__file__).resolve().parents[1]


def test_the_index_and_the_pages_made_from_the_rules_are_current() -> None:
    stale = [generated.path for generated in generate.stale(ROOT, all_rules())]
    assert not stale, f"{', '.join(stale)} stale; regenerate with `{rule_index.REGENERATE}`"


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


@pytest.fixture
def copied_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The rules package copied, with the index current for it, and odelint pointed at the copy."""
    copy = tmp_path / "rules"
    shutil.copytree(rule_index._rules_folder(), copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(rule_index, "_rules_folder", lambda: str(copy))
    (copy / "data" / rule_index.INDEX_NAME).write_text(rule_index.render(all_rules()))
    return copy


def test_editing_a_visitor_or_a_data_table_keeps_the_index_but_not_the_cache(copied_rules: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    before = rule_index.sources_digest.__wrapped__()
    module = copied_rules / "optimisers" / "optimizer_init_unfiltered.py"
    module.write_text(module.read_text() + "\n# a changed line of the visitor\n")
    tables = copied_rules.parent / "tables"
    shutil.copytree(rule_index._tables_folder(), tables)
    monkeypatch.setattr(rule_index, "_tables_folder", lambda: str(tables))
    assert rule_index.sources_digest.__wrapped__() != before, "cached results must not outlive a changed rule"
    before = rule_index.sources_digest.__wrapped__()
    table = tables / "jax_api.toml"
    table.write_text(table.read_text() + "\n# a changed table\n")
    assert rule_index.load() == tuple(RuleInfo.of(rule) for rule in all_rules())
    assert rule_index.sources_digest.__wrapped__() != before, "cached results must not outlive a changed table"


def test_a_settled_source_counts_by_its_status_and_is_not_read(copied_rules: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fileio, "RACY_NS", -10**15)  # every source counts as settled
    before = rule_index.sources_digest.__wrapped__()
    module = copied_rules / "optimisers" / "optimizer_init_unfiltered.py"
    module.write_text(module.read_text() + "\n# a changed line of the visitor\n")

    def unread(*args: object, **kwargs: object) -> None:
        raise AssertionError("a settled source was read")

    monkeypatch.setattr("builtins.open", unread)
    assert rule_index.sources_digest.__wrapped__() != before, "cached results must not outlive a changed rule"


def test_an_added_or_removed_rule_module_makes_the_index_stale(copied_rules: Path) -> None:
    added = copied_rules / "arrays" / "new_rule.py"
    added.write_text('"""A new rule."""\n')
    assert rule_index.load() is None
    added.unlink()
    assert rule_index.load() is not None
    (copied_rules / "arrays" / "prng_key_reuse.py").unlink()
    assert rule_index.load() is None


def test_an_altered_or_broken_index_is_ignored(copied_rules: Path) -> None:
    index = copied_rules / "data" / rule_index.INDEX_NAME
    current = index.read_text()
    index.write_text(current.replace('"name": "optimizer-init-unfiltered"', '"name": "optimiser-init"'))
    assert rule_index.load() is None
    index.write_text("{not json")
    assert rule_index.load() is None
    index.write_text(json.dumps({"rules": []}))
    assert rule_index.load() is None


def test_the_index_is_believed_with_windows_line_endings_and_not_after_any_other_edit(copied_rules: Path) -> None:
    index = copied_rules / "data" / rule_index.INDEX_NAME
    current = index.read_bytes()
    index.write_bytes(current.replace(b"\n", b"\r\n"))  # a checkout with core.autocrlf
    assert rule_index.load() == tuple(RuleInfo.of(rule) for rule in all_rules())
    index.write_bytes(current.replace(b'"summary": ', b'"summary":  ', 1))  # the same JSON, other text
    assert rule_index.load() is None


def test_generate_check_names_each_stale_file_and_generate_repairs_them(tmp_path: Path) -> None:
    for relative in ("README.md", "docs/rules.md", f"rules/data/{rule_index.INDEX_NAME}"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / relative, tmp_path / relative)
    shutil.copytree(ROOT / generate.TABLES_FOLDER, tmp_path / generate.TABLES_FOLDER)
    assert generate.stale(tmp_path, all_rules()) == []
    renamed = type("Renamed", (all_rules()[2],), {"name": "a-new-name", "__doc__": all_rules()[2].__doc__})
    rules = (*all_rules()[:2], renamed, *all_rules()[3:])
    assert [g.path for g in generate.stale(tmp_path, rules)] == [
        f"rules/data/{rule_index.INDEX_NAME}", "docs/rules.md", "README.md"]
    readme = tmp_path / "README.md"
    readme.write_text(readme.read_text().replace("| ODL201 | optimizer-init-unfiltered |", "| ODL201 | typo |"))
    assert [g.path for g in generate.stale(tmp_path, all_rules())] == ["README.md"]
    table = tmp_path / generate.TABLES_FOLDER / "intent.toml"
    table.write_text(table.read_text().replace('"pytest.warns", ', '"pytest.warns", "chex.assert_raises", '))
    mirror = f"{generate.TABLES_FOLDER}/intent.json"
    assert [g.path for g in generate.stale(tmp_path, all_rules())] == ["README.md", mirror]
    assert generate.run(tmp_path, check=False) == 0
    assert generate.run(tmp_path, check=True) == 0
    assert "| ODL201 | optimizer-init-unfiltered | safe |" in readme.read_text()
    mirrored = json.loads((tmp_path / generate.TABLES_FOLDER / "intent.json").read_text())
    assert "chex.assert_raises" in mirrored["table"]["expected_errors"]["contexts"]


def test_generate_check_is_the_ci_command() -> None:
    result = subprocess.run([sys.executable, "-m", "odelint.dev", "generate", "--check"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    outside = subprocess.run([sys.executable, "-m", "odelint.dev", "generate", "--check"], cwd="/",
                             capture_output=True, text=True, timeout=120)
    assert outside.returncode == 2 and "not inside an odelint checkout" in outside.stderr


def test_the_old_entry_point_still_writes_the_index(copied_rules: Path) -> None:
    index = copied_rules / "data" / rule_index.INDEX_NAME
    index.write_text("stale")
    assert rule_index.main([]) == 0
    assert index.read_text() == rule_index.render(all_rules())
