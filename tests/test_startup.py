"""Each command imports only what it needs: start-up is most of a warm run.

Timings belong to `bench/startup.py`; these tests check what gets imported, which does not
depend on how busy the machine is."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

# Runs one command in a fresh interpreter, then reports what it imported (on stderr, last line).
RUN = """
import sys
from odelint.faces.cli import main
try:
    code = main({args!r})
except SystemExit as stop:
    code = stop.code
import json
print(json.dumps({{"code": code, "modules": sorted(sys.modules), "libcst": type(sys.modules.get("libcst")).__name__}}),
      file=sys.stderr)
"""

HAZARD = ("import equinox as eqx\nimport optax\n\nmodel = eqx.nn.MLP(2, 2, 8, 1, key=None)\n"
          "opt_state = optax.adam(1e-3).init(model)\n")
PLAIN = "import jax.numpy as jnp\n\n\ndef loss(x):\n    return jnp.sum(x ** 2)\n"


def imports_of(*args: str, cwd: Path | None = None) -> tuple[int, set[str], str, str]:
    """(exit code, modules imported, what `libcst` is in sys.modules, stdout) of one command."""
    result = subprocess.run([sys.executable, "-c", RUN.format(args=list(args))], capture_output=True, text=True,
                            cwd=cwd, timeout=120)
    report = json.loads(result.stderr.strip().splitlines()[-1])
    return report["code"], set(report["modules"]), report["libcst"], result.stdout


def rule_modules(modules: set[str]) -> set[str]:
    """Modules that define rules (the family packages' `__init__` only hold a docstring)."""
    return {name for name in modules if name.startswith("odelint.rules.") and name.count(".") >= 3}


HEAVY = {"odelint.engine.runner", "odelint.engine.core", "odelint.analysis.facts", "multiprocessing",
         "concurrent.futures", "pathspec"}


def test_version_imports_neither_the_runner_nor_the_rules_nor_libcst() -> None:
    code, modules, libcst, stdout = imports_of("--version")
    assert code == 0 and stdout.startswith("odelint ")
    assert not modules & (HEAVY | {"odelint.api.registry", "odelint.files.config"})
    assert not rule_modules(modules)
    assert libcst == "_StandIn"  # the deferred stand-in, never loaded


@pytest.mark.parametrize("args", [("rules",), ("rules", "--format", "json"), ("rule", "ODL201")])
def test_listing_rules_reads_the_index_instead_of_importing_them(args: tuple[str, ...]) -> None:
    code, modules, libcst, stdout = imports_of(*args)
    assert code == 0 and "ODL201" in stdout
    assert not rule_modules(modules), "the rules' metadata index is stale: run `python -m odelint.dev generate`"
    assert not modules & HEAVY
    assert libcst == "_StandIn"


def test_a_warm_check_imports_no_rule_no_libcst_and_no_process_pool(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(HAZARD)
    (tmp_path / "plain.py").write_text(PLAIN)
    cold_code, cold_modules, _, cold_out = imports_of("check", ".", cwd=tmp_path)
    assert rule_modules(cold_modules), "the first run lints, so it imports the rules"
    code, modules, libcst, stdout = imports_of("check", ".", cwd=tmp_path)
    assert (code, stdout) == (cold_code, cold_out) and "ODL201" in stdout
    assert not rule_modules(modules)
    assert not modules & {"odelint.engine.core", "odelint.analysis.facts", "multiprocessing", "concurrent.futures"}
    # no rule class (the engine's own included), no notebook reader, no thread
    assert not modules & {"odelint.api.rule", "odelint.api.engine_rules", "odelint.files.notebook", "threading"}
    assert "shutil" not in modules  # argparse's formatters are told the width (odelint.faces.cli._Parser)
    # the records a warm run builds are named tuples and small classes: `dataclasses` (and the
    # `inspect` it imports) cost a quarter of a warm run's instructions (bench/RESULTS.md)
    assert not modules & {"dataclasses", "inspect"}
    # digests come from CPython's own BLAKE2 (odelint.files.digest): hashlib loads OpenSSL;
    # `zlib` only stamps an editor's buffer (odelint.analysis.project.stamp)
    assert not modules & {"hashlib", "_hashlib", "zlib"}
    # nor `typing` (2 ms, and twice the cost of each record): odelint.api.records
    assert "typing" not in modules
    assert libcst == "_StandIn"


def test_a_warm_check_in_a_projects_repository_reads_no_ignore_file_pin_or_setting_it_cannot_need(
        tmp_path: Path) -> None:
    """Where a scientist runs it: the root of a git repository with the usual .gitignore and a
    pyproject.toml that names jax and pins its tools. The .gitignore's verdicts come from the
    cache, the pyproject.toml pins no package of ours and holds no [tool.odelint], and the
    installed versions are only needed as text for the cache's keys."""
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("# git ls-files --others --exclude-from=.git/info/exclude\n")
    (tmp_path / ".gitignore").write_text("__pycache__/\n*.py[cod]\noutputs/\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["jax>=0.4.30", "optax"]\n'
                                             '[project.optional-dependencies]\ndev = ["ruff==0.6.9"]\n'
                                             '[tool.ruff]\nline-length = 100\n')
    (tmp_path / "outputs").mkdir()
    (tmp_path / "outputs" / "train.py").write_text(HAZARD)
    (tmp_path / "train.py").write_text(HAZARD)
    cold_code, cold_modules, _, cold_out = imports_of("check", ".", cwd=tmp_path)
    assert "pathspec" in cold_modules, "the first run decides what the .gitignore ignores"
    code, modules, _, stdout = imports_of("check", ".", cwd=tmp_path)
    assert (code, stdout) == (cold_code, cold_out) and "train.py:" in stdout and "outputs" not in stdout
    assert not modules & {"pathspec", "tomllib", "packaging.version", "packaging.requirements"}


def test_a_warm_check_under_per_file_ignores_and_exclude_patterns_imports_no_pathspec(tmp_path: Path) -> None:
    """Which paths the configuration's patterns match is remembered with the results."""
    (tmp_path / "pyproject.toml").write_text('[tool.odelint]\nextend-exclude = ["notebooks/*_old.py"]\n'
                                             'per-file-ignores = {"tests/*" = ["ODL201"]}\n')
    for relative in ("train.py", "tests/test_train.py", "notebooks/run_old.py"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(HAZARD)
    cold_code, cold_modules, _, cold_out = imports_of("check", ".", cwd=tmp_path)
    assert "pathspec" in cold_modules
    code, modules, _, stdout = imports_of("check", ".", cwd=tmp_path)
    assert (code, stdout) == (cold_code, cold_out) and "train.py:" in stdout
    assert "tests" not in stdout and "notebooks" not in stdout
    assert "pathspec" not in modules


def test_a_check_answered_from_its_record_walks_nothing_and_imports_no_runner(tmp_path: Path) -> None:
    """Once nothing the run looked at has changed for two seconds, the run is recorded, and the
    next one reports the record (odelint.files.runs): no walk, no settings, no cache lookups."""
    (tmp_path / "train.py").write_text(HAZARD)
    (tmp_path / "plain.py").write_text(PLAIN)
    cold_code, _, _, cold_out = imports_of("check", ".", cwd=tmp_path)
    time.sleep(2.2)  # what the run looked at is older than the file system clock's granularity now
    warm_code, warm_modules, _, warm_out = imports_of("check", ".", cwd=tmp_path)
    assert "odelint.engine.runner" in warm_modules and list((tmp_path / ".odelint_cache").glob("run-*.json"))
    code, modules, libcst, stdout = imports_of("check", ".", cwd=tmp_path)
    assert (code, stdout) == (warm_code, warm_out) == (cold_code, cold_out) and "ODL201" in stdout
    assert not modules & {"odelint.engine.runner", "odelint.files.discover", "odelint.files.config",
                          "odelint.files.versions", "odelint.files.selection", "odelint.files.kinds"}
    assert not modules & {"typing", "dataclasses", "hashlib", "threading"} and libcst == "_StandIn"


def test_a_warm_check_with_an_unreadable_file_reports_it_as_odl001(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(HAZARD)
    imports_of("check", ".", cwd=tmp_path)
    code, modules, _, stdout = imports_of("check", ".", "missing.py", cwd=tmp_path)
    assert code == 2 and "missing.py:1:1: ODL001" in stdout and "ODL201" in stdout
    assert "odelint.api.engine_rules" in modules


def test_an_extra_command_still_parses_its_own_options() -> None:
    code, modules, _, stdout = imports_of("doctor", "--format", "json", "--path", "/nonexistent")
    assert code == 0 and isinstance(json.loads(stdout), dict)
    assert "odelint.proof.confirm" not in modules  # another extra command's module


PRELOAD = """
import gc, json, sys
from odelint.engine.preload import load_linting
before = gc.get_freeze_count()
load_linting()
print(json.dumps({"modules": sorted(sys.modules), "libcst": type(sys.modules["libcst"]).__name__,
                  "frozen": gc.get_freeze_count() - before}))
"""


def test_preloading_loads_the_model_the_rules_and_libcst_and_freezes_them() -> None:
    """What the server loads once the editor has started it, and flake8 before it forks: the
    first lint then imports nothing more of its own."""
    result = subprocess.run([sys.executable, "-c", PRELOAD], capture_output=True, text=True, timeout=120)
    report = json.loads(result.stdout)
    modules = set(report["modules"])
    assert "odelint.analysis.facts" in modules
    assert rule_modules(modules) and report["libcst"] == "module"  # the real package, not the stand-in
    assert report["frozen"] > 0
    # ODL501's parsers of requirements and the known-bad table (packaging's requirement, name
    # and platform-tag modules: 10-15 ms) wait for a dependency file; no Python lint reads one
    assert not modules & {"packaging.requirements", "packaging.utils", "packaging.tags"}
    # nor the parsers of settings files (tomllib, configparser: where a project has such a file,
    # reading it imports them), nor importlib.resources for the data tables (plain files, as the
    # rules' index), nor hashlib's OpenSSL for the kept generated code (CPython's BLAKE2 names
    # its files): about 20 ms of an editor's first diagnostics
    assert not modules & {"tomllib", "configparser", "importlib.resources", "hashlib"}


LINT_AFTER_PRELOAD = """
import json, pathlib, sys
from odelint.engine.preload import load_linting
load_linting()
from odelint.engine.core import lint_source
before = set(sys.modules)
found = []
for path, text in json.loads(sys.argv[1]):
    found += [finding.code for finding in lint_source(text, path).findings]
print(json.dumps({"new": sorted(set(sys.modules) - before), "found": found}))
"""


def test_after_preloading_a_lint_imports_nothing() -> None:
    """flake8's workers fork after the preload: a module one of them imports on first use is
    imported again in each, and sets off a full collection there (a new module is frozen)."""
    root = Path(__file__).resolve().parents[1] / "examples"
    files = [(str(path), path.read_text()) for path in sorted(root.rglob("*.py"))]
    files.append(("unicode.py", "import jax\n\n\ndef größe(x):\n    return jax.numpy.sum(x)\n"))
    files.append(("hazard.py", HAZARD))
    result = subprocess.run([sys.executable, "-c", LINT_AFTER_PRELOAD, json.dumps(files)], capture_output=True,
                            text=True, timeout=120)
    report = json.loads(result.stdout)
    assert "ODL201" in report["found"]  # the gate let the rules run, and LibCST parsed
    assert report["new"] == []


SERVER_PRELOAD = """
import json, pathlib, sys
from odelint.engine.preload import load_linting
load_linting(False)
loaded = set(sys.modules)
from odelint.engine.core import lint_source
from odelint.engine.incremental import IncrementalParser
text = pathlib.Path(sys.argv[1]).read_text()
found = [finding.code for finding in lint_source(text, "train.py", parser=IncrementalParser()).findings]
print(json.dumps({"loaded": sorted(loaded), "after": sorted(sys.modules), "found": found}))
"""


def test_the_servers_preload_leaves_what_a_training_script_does_not_need() -> None:
    """The server's first document waits for the preload: the Sketch's settling parts and the
    shims' guards, which the training script's first lint never imports, wait for first use."""
    script = Path(__file__).resolve().parents[1] / "bench" / "training_script.py"
    result = subprocess.run([sys.executable, "-c", SERVER_PRELOAD, str(script)], capture_output=True, text=True,
                            timeout=120)
    report = json.loads(result.stdout)
    left = {"odelint.analysis.guards", "odelint.analysis.sketch_reach", "odelint.analysis.sketch_facts"}
    assert "odelint.analysis.facts" in report["loaded"] and rule_modules(set(report["loaded"]))
    assert report["found"]  # every gate opened, and the rules ran
    assert not left & set(report["after"])


@pytest.mark.parametrize("columns", ["60", "120"])
def test_help_is_laid_out_as_argparse_would(columns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """odelint tells argparse the width it would find itself (without importing shutil)."""
    from odelint.faces import cli

    def helps() -> list[str]:
        parser = cli.build_parser()
        commands = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
        return [parser.format_help(), commands.choices["check"].format_help()]

    monkeypatch.setenv("COLUMNS", columns)
    cli._help_width.cache_clear()
    ours = helps()
    monkeypatch.setattr(cli, "_formatter", argparse.HelpFormatter)
    assert ours == helps()
    assert max(len(line) for line in ours[1].splitlines() if "{" not in line) <= int(columns) - 2
