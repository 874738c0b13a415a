"""The result cache: a warm run answers from it, and a change of configuration re-lints only
the files whose results it can change (those some rule turned on or off could report on)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from odelint.api.engine_rules import SyntaxErrorRule
from odelint.api.registry import all_rules, is_python_file, known_codes
from odelint.engine import runner
from odelint.engine.core import rules_for
from odelint.engine.relevance import relevant_codes
from odelint.files.config import ConfigResolver, Overrides
from packaging.version import Version

OPTAX_AND_EQUINOX = ("import equinox as eqx\nimport optax\n\nmodel = eqx.nn.MLP(2, 2, 8, 1, key=None)\n"
                     "opt_state = optax.adam(1e-3).init(model)\n")
WORDS_ONLY = '"""Mentions optax and equinox in prose only."""\nx = 1\n'
PLAIN = "import jax.numpy as jnp\n\n\ndef loss(x):\n    return jnp.sum(x ** 2)\n"
BROKEN = "def broken(:\n    pass\n"
PINS = "jax==0.4.33\njaxlib==0.4.33\nequinox==0.11.6\n"
PYTHON_FILES = ["broken.py", "plain.py", "train.py", "words.py"]


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> tuple[Path, list[str]]:
    """A project, and the list of the files each run lints (rather than answers from the cache)."""
    for name, text in {"train.py": OPTAX_AND_EQUINOX, "words.py": WORDS_ONLY, "plain.py": PLAIN,
                       "broken.py": BROKEN, "requirements.txt": PINS}.items():
        (tmp_path / name).write_text(text)
    linted: list[str] = []
    process = runner.process

    def recording(task: runner.Task) -> runner.Outcome:
        linted.append(Path(task.path).name)
        return process(task)

    monkeypatch.setattr(runner, "process", recording)
    return tmp_path, linted


def check(folder: Path, use_cache: bool = True, **overrides) -> list[tuple[str, str, int]]:
    resolver = ConfigResolver(Overrides(**overrides), known_codes(), cwd=str(folder))
    result = runner.run([str(folder)], resolver, runner.Options(jobs=1, use_cache=use_cache))
    return [(Path(f.path).name, f.code, f.span.line) for f in result.findings]


def test_a_warm_run_lints_nothing_and_answers_the_same(project) -> None:
    folder, linted = project
    cold = check(folder)
    assert sorted(linted) == sorted([*PYTHON_FILES, "requirements.txt"])
    linted.clear()
    assert check(folder) == cold and linted == []
    assert ("train.py", "ODL201", 5) in cold and ("broken.py", "ODL000", 1) in cold


def test_ignoring_a_rule_relints_only_the_files_that_rule_could_report_on(project) -> None:
    folder, linted = project
    check(folder)
    linted.clear()
    ignored = check(folder, ignore=("ODL201",))
    # ODL201's gate is "optax" and "equinox": words.py passes it (the gate reads words, not code)
    assert sorted(linted) == ["train.py", "words.py"]
    assert ignored == check(folder, use_cache=False, ignore=("ODL201",))
    linted.clear()
    assert check(folder, ignore=("ODL201",)) == ignored and linted == []
    check(folder)  # the default configuration's results were kept
    assert linted == []


def test_turning_off_the_syntax_check_relints_every_python_file(project) -> None:
    folder, linted = project
    check(folder)
    linted.clear()
    without = check(folder, ignore=("ODL000",))
    assert sorted(linted) == PYTHON_FILES
    assert not any(code == "ODL000" for _, code, _ in without)


def test_a_dependency_file_rule_concerns_only_dependency_files(project) -> None:
    folder, linted = project
    assert ("requirements.txt", "ODL501", 3) in check(folder)  # at the equinox pin
    linted.clear()
    assert not any(code == "ODL501" for _, code, _ in check(folder, ignore=("ODL5",)))
    assert linted == ["requirements.txt"]


def test_a_changed_file_is_linted_again(project) -> None:
    folder, linted = project
    check(folder)
    linted.clear()
    (folder / "plain.py").write_text(OPTAX_AND_EQUINOX)
    assert ("plain.py", "ODL201", 5) in check(folder) and linted == ["plain.py"]


def test_a_damaged_or_older_cache_reads_as_misses(project) -> None:
    folder, linted = project
    cold = check(folder)
    cache_file = next((folder / ".odelint_cache").glob("results-*.json"))
    stored = json.loads(cache_file.read_text())
    entries = stored["entries"]
    damaged = [{"findings": []}, {"relevant": ["ODL000"]}, {"relevant": "ODL000", "results": {}}, [], None]
    for entry_key, replacement in zip(sorted(entries), damaged, strict=False):
        entries[entry_key] = replacement
    cache_file.write_text(json.dumps(stored))
    linted.clear()
    assert check(folder) == cold and len(linted) == len(damaged)
    linted.clear()
    assert check(folder) == cold and linted == []


def test_relevance_is_the_engines_gate_for_every_rule_and_example() -> None:
    """Over every rule's embedded examples (code that must and must not be flagged)."""
    examples = [(example.filename, example.code) for rule in all_rules() for example in rule.examples]
    assert len(examples) > 20
    for filename, text in examples:
        python = is_python_file(filename)
        expected = {rule.code for rule in rules_for(filename, None, python) if rule.triggered_by(text)}
        expected |= {SyntaxErrorRule.code} if python else set()
        expected |= {"ODL002"} if "noqa" in text.lower() else set()  # unused noqa, when selected
        assert relevant_codes(text, filename, python) == expected


def _codes_checked(folder: Path) -> list[str]:
    """The codes `odelint check train.py` reports in `folder`, run as a user runs it (with the cache)."""
    done = subprocess.run([sys.executable, "-m", "odelint", "check", "train.py", "--format", "json", "--exit-zero"],
                          cwd=folder, capture_output=True, text=True, timeout=120)
    return [finding["code"] for finding in json.loads(done.stdout)]


def test_a_cached_result_is_linted_again_when_a_class_it_read_from_another_file_changes(tmp_path) -> None:
    """train.py's finding depends on model.py's class: editing model.py alone must not leave a
    stale cached answer for train.py."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "model.py").write_text(
        "import equinox as eqx\nimport jax\n\nclass Net(eqx.Module):\n    w: jax.Array\n")
    (tmp_path / "train.py").write_text(
        "import optax\nfrom model import Net\n\nnet = Net(None)\nstate = optax.adam(1e-3).init(net)\n")
    assert _codes_checked(tmp_path) == [], "an array-only module initialises fine"
    assert _codes_checked(tmp_path) == [], "the cached answer"
    (tmp_path / "model.py").write_text(
        "import equinox as eqx\nimport jax\n\nclass Net(eqx.Module):\n    w: jax.Array\n    mlp: eqx.nn.MLP\n")
    assert _codes_checked(tmp_path) == ["ODL201"], "model.py changed, so train.py is linted again"


def test_a_file_the_gate_turned_away_is_linted_again_when_a_class_it_read_gains_a_function(tmp_path) -> None:
    """The pre-check reads another file's class from that file's model: train.py was never
    parsed while model.py's `Net` held arrays only, and must be once `Net` holds a function."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "model.py").write_text(
        "import equinox as eqx\nimport jax\n\nclass Net(eqx.Module):\n    w: jax.Array\n")
    (tmp_path / "train.py").write_text(
        "import jax\nfrom model import Net\n\n@jax.jit\ndef step(net: Net, x):\n    return net.w * x\n")
    assert _codes_checked(tmp_path) == [] and _codes_checked(tmp_path) == [], "cold, then cached"
    (tmp_path / "model.py").write_text("from typing import Callable\nimport equinox as eqx\nimport jax\n\n"
                                       "class Net(eqx.Module):\n    w: jax.Array\n    act: Callable\n")
    assert _codes_checked(tmp_path) == ["ODL601"], "model.py changed, so train.py is linted again"


def _slots(folder: Path) -> list[str]:
    """The slot of each stored entry (the file and settings it answers for)."""
    stored = json.loads(next((folder / ".odelint_cache").glob("results-*.json")).read_text())
    return sorted(entry["slot"] for entry in stored["entries"].values())


def test_an_edited_files_old_entry_is_dropped_and_other_settings_entries_are_kept(project) -> None:
    folder, linted = project
    check(folder)
    before = _slots(folder)
    assert len(before) == len(set(before)) == len(PYTHON_FILES) + 1  # and requirements.txt
    (folder / "train.py").write_text(OPTAX_AND_EQUINOX + "\nsteps = 10\n")
    check(folder)
    assert _slots(folder) == before, "the entry of train.py's old contents is still there"
    pinned = check(folder, target_versions=(("jax", Version("0.4.30")),))
    assert ("train.py", "ODL201", 5) in pinned
    slots = _slots(folder)
    assert len(slots) == 2 * len(before) and set(before) < set(slots), "each setting keeps its own entries"
    linted.clear()
    check(folder)
    assert linted == [], "switching back to the default settings answers from the cache"
