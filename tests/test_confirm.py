"""`odelint confirm`: fixture parsing, value comparison, judging, the table, and the whole command.

The command tests use tiny programs that never import JAX: a fixture folder may hold stub
`equinox.py`/`optax.py` modules, which the programs import instead of the real ones (the
program's folder comes first on sys.path), while the linter reads the same imports.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest
from odelint.api import docs
from odelint.api.registry import rule_for
from odelint.api.rule import BaseRule
from odelint.engine.core import fix_source
from odelint.faces import cli
from odelint.proof import confirm, confirmations, venvs
from odelint.proof.fixtures import (
    Case,
    FixtureError,
    Run,
    allclose,
    judge_fixed,
    judge_hazard,
    judge_references,
    load_cases,
    parse_check,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _write(folder, name: str, text: str) -> str:
    path = os.path.join(folder, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(textwrap.dedent(text))
    return path


CASE = """\
[[case]]
name = "apply-updates"
hazard = "hazard.py"
fixed = "fixed.py"
fix = "safe"
expect = "error"
error = "TypeError"
message = "can only concatenate str"
timeout = 60
"""


# --- fixture.toml ---------------------------------------------------------------------------------

def test_load_cases_reads_every_field(tmp_path):
    _write(tmp_path, "fixture.toml", CASE + '\n[[case]]\nname = "silent"\nhazard = "hazard.py"\n'
           'fixed = "fixed.py"\nfix = "manual"\nexpect = "wrong-value"\n')
    _write(tmp_path, "hazard.py", "")
    _write(tmp_path, "fixed.py", "")
    first, second = load_cases(str(tmp_path), "ODL204")
    assert (first.name, first.fix, first.expect, first.error, first.timeout) == \
        ("apply-updates", "safe", "error", "TypeError", 60.0)
    assert first.path(first.hazard) == os.path.join(str(tmp_path), "hazard.py")
    assert (second.expect, second.error, second.timeout, second.needs_pins) == ("wrong-value", None, 120.0, False)


@pytest.mark.parametrize(("change", "complaint"), [
    (lambda text: text.replace('fix = "safe"', 'fix = "auto"'), "fix must be one of"),
    (lambda text: text.replace('message = "can only concatenate str"\n', ""), "needs `message`"),
    (lambda text: text.replace('hazard = "hazard.py"', 'hazard = "missing.py"'), "does not exist"),
    (lambda text: text + 'colour = "red"\n', "unknown keys ['colour']"),
    (lambda text: text.replace('"apply-updates"', '"Apply Updates"'), "kebab-case"),
    (lambda text: text + 'pins_hazard = "hazard.py"\n', "go together"),
    (lambda text: text.replace("timeout = 60", "timeout = -1"), "positive number"),
    (lambda text: text + "\n" + text, "unique"),
    (lambda text: text.replace("[[case]]", "[case"), "invalid TOML"),
    (lambda text: 'title = "x"\n', "one or more [[case]]"),
])
def test_load_cases_rejects_broken_fixtures(tmp_path, change, complaint):
    _write(tmp_path, "fixture.toml", change(CASE))
    _write(tmp_path, "hazard.py", "")
    _write(tmp_path, "fixed.py", "")
    with pytest.raises(FixtureError, match=complaint.replace("[", r"\[").replace("(", r"\(")):
        load_cases(str(tmp_path), "ODL204")


# --- the check line and allclose -----------------------------------------------------------------

def test_parse_check_takes_the_last_line_and_its_tolerances():
    out = 'ODELINT-CHECK {"value": 1, "reference": 2}\nnoise\nODELINT-CHECK {"value": [1.0], ' \
          '"reference": [1.01], "rtol": 0.1}\n'
    check = parse_check(out)
    assert (check.value, check.reference, check.rtol, check.atol) == ([1.0], [1.01], 0.1, 1e-8)
    assert check.close()


@pytest.mark.parametrize(("out", "complaint"), [
    ("nothing\n", "no ODELINT-CHECK"),
    ("ODELINT-CHECK {value: 1}\n", "not JSON"),
    ('ODELINT-CHECK {"value": 1}\n', "needs"),
    ('ODELINT-CHECK {"value": 1, "reference": 1, "rtol": -1}\n', "non-negative"),
])
def test_parse_check_rejects(out, complaint):
    with pytest.raises(ValueError, match=complaint):
        parse_check(out)


@pytest.mark.parametrize(("value", "reference", "expected"), [
    (1.0, 1.0 + 1e-7, True),
    (1.0, 1.001, False),
    ([[1.0, 2.0], [3.0]], [[1.0, 2.0], [3.0]], True),
    ([1.0, 2.0], [1.0], False),
    ([1.0], 1.0, False),
    (True, True, True),
    (True, 1, False),
    (False, True, False),
    (float("nan"), float("nan"), False),
    (float("inf"), float("inf"), True),
    (float("inf"), 1e308, False),
    (0.0, 1e-9, True),
    (None, None, False),
])
def test_allclose(value, reference, expected):
    assert allclose(value, reference) is expected


# --- judging runs -------------------------------------------------------------------------------

def _case(**changes) -> Case:
    fields = dict(code="ODL204", directory=".", name="c", hazard="h.py", fixed="f.py", fix="safe", expect="error",
                  error="TypeError", message="unsupported operand")
    return Case(**{**fields, **changes})


def _run(program: str, tmp_path, timeout: float = 60) -> Run:
    path = _write(tmp_path, "program.py", program)
    return confirm.run_program(sys.executable, path, dict(os.environ), timeout)


def test_a_raised_exception_is_matched_by_class_base_class_and_message(tmp_path):
    run = _run("class Boom(TypeError):\n    pass\n\nraise Boom('unsupported operand for +')\n", tmp_path)
    assert run.returncode == 1 and run.raised["type"] == "Boom"
    assert judge_hazard(_case(), run) == (True, "raised Boom: unsupported operand for +")
    assert judge_hazard(_case(error="Boom"), run)[0]
    assert not judge_hazard(_case(error="ValueError"), run)[0]
    assert "lacks 'zeros_like'" in judge_hazard(_case(message="zeros_like"), run)[1]
    assert judge_fixed(run) == (False, "raised Boom: unsupported operand for +")


def test_a_program_that_does_not_raise_does_not_reproduce_an_error(tmp_path):
    run = _run('print(\'ODELINT-CHECK {"value": 1.0, "reference": 1.0}\')\n', tmp_path)
    assert run.returncode == 0 and run.raised is None
    ok, detail = judge_hazard(_case(), run)
    assert not ok and detail.startswith("exited 0; expected TypeError")
    assert judge_fixed(run) == (True, "value matches the reference")


def test_wrong_value_hazard_and_fixed_program(tmp_path):
    wrong = _run('print(\'ODELINT-CHECK {"value": [0.0, 0.0], "reference": [0.7, 0.2]}\')\n', tmp_path)
    ok, detail = judge_hazard(_case(expect="wrong-value", error=None, message=None), wrong)
    assert ok and detail.startswith("wrong value [0.0, 0.0]")
    assert judge_fixed(wrong) == (False, "value [0.0, 0.0] is not close to the reference [0.7, 0.2]")
    silent = _run("print('no check line')\n", tmp_path)
    assert judge_hazard(_case(expect="wrong-value"), silent) == (False, "the program printed no ODELINT-CHECK line")


def test_a_program_past_its_timeout_is_killed(tmp_path):
    run = _run("import time\ntime.sleep(30)\n", tmp_path, timeout=1)
    assert run.returncode is None and run.seconds < 20
    assert judge_fixed(run)[1].startswith("timed out")


def test_an_explicit_exit_is_not_an_exception(tmp_path):
    run = _run("import sys\nsys.exit(3)\n", tmp_path)
    assert (run.returncode, run.raised) == (3, None)
    assert judge_fixed(run)[1].startswith("exited with status 3")


def test_programs_import_modules_beside_them_and_see_their_own_argv(tmp_path):
    _write(tmp_path, "helper.py", "VALUE = 2.0\n")
    run = _run("import sys, json, helper\nassert sys.argv[0].endswith('program.py')\n"
               "print('ODELINT-CHECK', json.dumps({'value': helper.VALUE, 'reference': 2.0}))\n", tmp_path)
    assert judge_fixed(run) == (True, "value matches the reference"), run.stderr


# --- the whole command, on stub libraries ---------------------------------------------------------

STUB_EQUINOX = """\
class nn:
    @staticmethod
    def MLP(*args, **kwargs):
        return {"w": 1.0, "activation": "relu"}

def apply_updates(model, updates):
    return {k: v if updates.get(k) is None else v + updates[k] for k, v in model.items()}
"""
STUB_OPTAX = """\
def apply_updates(params, updates):
    return {k: params[k] + updates[k] for k in params}
"""
HAZARD = """\
import json

import equinox as eqx
import optax

model = eqx.nn.MLP(2, 2, 8, 1, key=None)
model = optax.apply_updates(model, {"w": 0.5, "activation": None})
print("ODELINT-CHECK", json.dumps({"value": model["w"], "reference": 1.5}))
"""


def _fake_repo(tmp_path, hazard: str = HAZARD, fixed: str | None = None) -> str:
    folder = os.path.join(tmp_path, "tests", "fixtures", "ODL204")
    _write(folder, "fixture.toml", CASE)
    _write(folder, "equinox.py", STUB_EQUINOX)
    _write(folder, "optax.py", STUB_OPTAX)
    _write(folder, "hazard.py", hazard)
    if fixed is None:
        fixed = fix_source(hazard, "hazard.py", {"ODL204"}).source
    _write(folder, "fixed.py", fixed)
    return str(tmp_path)


@pytest.fixture
def fake_jax(monkeypatch):
    """The backend probe answers as a CPU-only JAX would, without importing it."""
    monkeypatch.setattr(confirm, "PROBE", "print('{\"backend\": \"cpu\", \"devices\": [\"TFRT_CPU_0\"]}')")


def test_confirm_runs_lints_and_judges_a_fixture(tmp_path, fake_jax, capsys):
    root = _fake_repo(tmp_path)
    assert cli.main(["confirm", "--root", root, "--rule", "ODL204", "--device", "cpu", "--format", "json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    (rule,) = report["rules"]
    (case,) = rule["cases"]
    assert (rule["code"], rule["confirmed"], case["flagged"], case["hazard_reproduced"], case["fix_verified"]) == \
        ("ODL204", "yes", True, True, True)
    assert case["hazard"].startswith("raised TypeError: can only concatenate str")
    assert "[1/2] start ODL204 apply-updates hazard" in captured.err
    assert "[2/2] done  ODL204 apply-updates fixed: exited 0" in captured.err


def test_confirm_fails_when_the_hazard_does_not_reproduce(tmp_path, fake_jax, capsys):
    root = _fake_repo(tmp_path, hazard=HAZARD.replace('"activation": None', '"activation": ""'))
    assert cli.main(["confirm", "--root", root, "--rule", "ODL204", "--jobs", "2"]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[1].split()[:5] == ["ODL204", "apply-updates", "yes", "NO", "yes"]
    assert "ODL204 apply-updates: hazard: exited 0; expected TypeError: can only concatenate str" in out
    assert "0 of 1 rule(s) confirmed on cpu" in out


def test_confirm_fails_when_fixed_is_not_the_fix_output(tmp_path, fake_jax, capsys):
    fixed = HAZARD.replace("optax.apply_updates(model", "eqx.apply_updates(model").replace("\n\n", "\n\n\n", 1)
    root = _fake_repo(tmp_path, fixed=fixed)
    assert cli.main(["confirm", "--root", root, "--rule", "ODL204"]) == 1
    assert "fixed.py is not what `odelint check --fix` makes of hazard.py" in capsys.readouterr().out


def test_confirm_device_gpu_fails_clearly_without_a_gpu(tmp_path, monkeypatch, capsys):
    root = _fake_repo(tmp_path)
    monkeypatch.setattr(confirm, "PROBE", "raise RuntimeError(\"Unable to initialize backend 'cuda'\")")
    assert cli.main(["confirm", "--root", root, "--device", "gpu"]) == 2
    assert "--device gpu: JAX sees no GPU (with JAX_PLATFORMS=cuda,cpu it failed with RuntimeError: Unable to " \
        "initialize backend 'cuda'); it needs an NVIDIA GPU" in capsys.readouterr().err
    monkeypatch.setattr(confirm, "PROBE", "print('{\"backend\": \"cpu\", \"devices\": [\"TFRT_CPU_0\"]}')")
    assert cli.main(["confirm", "--root", root, "--device", "gpu"]) == 2
    assert "JAX sees no GPU, only TFRT_CPU_0" in capsys.readouterr().err


def test_confirm_device_gpu_keeps_the_cpu_backend_for_host_callbacks(tmp_path, monkeypatch, capsys):
    """io_callback and pure_callback need a CPU device: JAX_PLATFORMS=cuda alone broke them on an H100."""
    root = _fake_repo(tmp_path)
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    monkeypatch.setattr(confirm, "PROBE", "import json, os; print(json.dumps("
                        "{'backend': 'gpu', 'devices': [os.environ['JAX_PLATFORMS']]}))")
    cli.main(["confirm", "--root", root, "--device", "gpu", "--rule", "ODL204"])
    assert "odelint confirm: 1 case(s) of 1 rule(s) on gpu (cuda,cpu), 1 job(s)" in capsys.readouterr().err


def test_confirm_rejects_unknown_rules_and_rules_without_fixtures(tmp_path, fake_jax, capsys):
    root = _fake_repo(tmp_path)
    assert cli.main(["confirm", "--root", root, "--rule", "ODL999"]) == 2
    assert cli.main(["confirm", "--root", root, "--rule", "ODL201"]) == 2
    assert "ODL201 has no fixtures under" in capsys.readouterr().err


def test_confirm_skips_version_pin_fixtures_without_with_old_pins(tmp_path, fake_jax, capsys):
    root = _fake_repo(tmp_path)
    folder = os.path.join(root, "tests", "fixtures", "ODL204")
    pins = 'pins_hazard = "requirements-bad.txt"\npins_fixed = "requirements-good.txt"\n'
    _write(folder, "fixture.toml", CASE + pins)
    _write(folder, "requirements-bad.txt", "")
    _write(folder, "requirements-good.txt", "")
    assert cli.main(["confirm", "--root", root]) == 0
    out = capsys.readouterr().out
    assert "ODL204 apply-updates: skipped: version-pin fixture: run with --with-old-pins" in out
    assert "0 of 0 rule(s) confirmed on cpu" in out and "1 skipped" in out


def test_record_writes_the_json_the_docs_read_and_keeps_markdown_notes(tmp_path, fake_jax, monkeypatch, capsys):
    root = _fake_repo(tmp_path)
    json_path = os.path.join(tmp_path, "confirmations.json")
    markdown_path = _write(root, "tests/fixtures/CONFIRMED.md", "old table\n\n## Notes\nGPU: none lent.\n")
    monkeypatch.setattr(confirmations, "path", lambda: json_path)
    kept = {"date": "2025-01-02", "confirmed": True, "backend": "gpu", "versions": {},
            "cases": [{"name": "old", "hazard": "h", "fixed": "f", "seconds": 1.0, "versions": {}}]}
    monkeypatch.setattr(confirmations, "load", lambda: {"ODL999": kept})
    assert cli.main(["confirm", "--root", root, "--record"]) == 0
    with open(json_path, encoding="utf-8") as handle:
        data = json.load(handle)
    assert list(data) == ["ODL204", "ODL999"] and data["ODL999"] == kept
    entry = data["ODL204"]
    assert (entry["confirmed"], entry["backend"], entry["cases"][0]["name"]) == (True, "-", "apply-updates")
    with open(markdown_path, encoding="utf-8") as handle:
        markdown = handle.read()
    assert "| ODL204 | apply-updates | raised TypeError: can only concatenate str" in markdown
    assert "| ODL999 | old | h | f | 1.0 | gpu | versions unknown | 2025-01-02 |" in markdown
    assert markdown.endswith("\n## Notes\nGPU: none lent.\n") and "old table" not in markdown
    monkeypatch.setattr(confirmations, "load", lambda: data)
    page = docs.render(rule_for("ODL204"))
    assert page.endswith(f"## Last confirmation\nConfirmed by `odelint confirm` on {entry['date']}, backend -, "
                         f"with {confirmations.versions_text(entry['versions'])} (fixtures: apply-updates).\n")


def test_rule_docs_show_jax_versions_of_the_last_confirmation(monkeypatch):
    entry = {"date": "2025-01-02", "confirmed": True, "backend": "cpu", "cases": [{"name": "a"}, {"name": "b"}],
             "versions": {"jax": "0.10.2", "jaxlib": "0.10.2", "equinox": "0.13.8", "diffrax": "0.7.2",
                          "optax": "0.2.8"}}
    monkeypatch.setattr(confirmations, "load", lambda: {"ODL201": entry})
    assert confirmations.describe("ODL201") == (
        "Confirmed by `odelint confirm` on 2025-01-02, backend cpu, with jax 0.10.2, equinox 0.13.8, "
        "diffrax 0.7.2, optax 0.2.8 (fixtures: a, b).")
    assert confirmations.describe("ODL202") is None
    assert "## Last confirmation" not in docs.render(rule_for("ODL202"))


# --- pinned environments ------------------------------------------------------------------------

@pytest.mark.slow
def test_pinned_environments_are_built_once_and_reused(tmp_path):
    pins = _write(tmp_path, "requirements-bad.txt", "# nothing to install\n")
    said = []
    python = venvs.ensure(pins, root=str(tmp_path / "venvs"), log=said.append)
    assert len(said) == 1 and os.path.exists(python)
    assert venvs.ensure(pins, root=str(tmp_path / "venvs"), log=said.append) == python and len(said) == 1
    prefix = subprocess.run([python, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True)
    assert os.path.dirname(os.path.dirname(python)) == prefix.stdout.strip()
    assert [name for name in os.listdir(tmp_path / "venvs") if ".building-" in name] == []


# --- the real fixtures under JAX ----------------------------------------------------------------

def _jax_stack_missing() -> bool:
    return any(importlib.util.find_spec(name) is None for name in ("jax", "equinox", "diffrax", "optax"))


def _confirm(*extra: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "odelint", "confirm", "--format", "json", *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=1500)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


@pytest.mark.jax
@pytest.mark.slow
@pytest.mark.skipif(_jax_stack_missing(), reason="needs the JAX extra: pip install odelint[jax]")
def test_every_rule_with_fixtures_is_confirmed_on_cpu():
    report = _confirm("--device", "cpu")
    verdicts = {rule["code"]: rule["confirmed"] for rule in report["rules"]}
    with_fixtures = {rule.code for rule in confirm.all_rules_with_fixtures(confirm.fixtures_folder(ROOT))}
    assert set(verdicts) == with_fixtures
    pin_only = {rule["code"] for rule in report["rules"] if all(case["skipped"] for case in rule["cases"])}
    assert {code: v for code, v in verdicts.items() if code not in pin_only} == \
        {code: "yes" for code in with_fixtures - pin_only}, json.dumps(report, indent=1)


@pytest.mark.oldpins
@pytest.mark.skipif(os.environ.get("ODELINT_OLD_PINS") != "1", reason="set ODELINT_OLD_PINS=1 to build old-pin venvs")
@pytest.mark.skipif(_jax_stack_missing(), reason="needs the JAX extra: pip install odelint[jax]")
def test_version_pin_fixtures_are_confirmed_in_their_environments():
    pinned = [rule.code for rule in confirm.all_rules_with_fixtures(confirm.fixtures_folder(ROOT))
              if any(case.needs_pins for case in load_cases(os.path.join(ROOT, rule.fixtures), rule.code))]
    if not pinned:
        pytest.skip("no fixture has version pins")
    report = _confirm("--device", "cpu", "--with-old-pins", *(f"--rule={code}" for code in pinned))
    assert {rule["code"]: rule["confirmed"] for rule in report["rules"]} == {code: "yes" for code in pinned}


# --- every branch of the judgement ----------------------------------------------------------------

WRONG_VALUE = _case(expect="wrong-value", error=None, message=None)


def _printed(tmp_path: pathlib.Path, value: object, reference: object, name: str = "program.py") -> Run:
    path = _write(tmp_path, name, f"import json\nprint('ODELINT-CHECK', json.dumps({{'value': {value!r}, "
                                  f"'reference': {reference!r}}}))\n")
    return confirm.run_program(sys.executable, path, dict(os.environ), 60)


def test_a_wrong_value_hazard_whose_value_matches_its_reference_did_not_show(tmp_path: pathlib.Path) -> None:
    run = _printed(tmp_path, 2.0, 2.0 + 1e-9)
    assert judge_hazard(WRONG_VALUE, run) == (False, "value 2.0 matches the reference: the hazard did not show")


def test_a_wrong_value_hazard_must_run_to_the_end(tmp_path: pathlib.Path) -> None:
    crashed = _run("raise ValueError('boom')\n", tmp_path)
    ok, detail = judge_hazard(WRONG_VALUE, crashed)
    assert not ok and detail == "raised ValueError: boom; expected it to run and compute a wrong value"


def test_an_error_hazard_that_times_out_or_raises_another_class_is_not_reproduced(tmp_path: pathlib.Path) -> None:
    slow = _run("import time\ntime.sleep(30)\n", tmp_path, timeout=1)
    ok, detail = judge_hazard(_case(), slow)
    assert not ok and detail.startswith("timed out after")
    assert detail.endswith("expected TypeError: unsupported operand")
    other = _run("raise KeyError('unsupported operand')\n", tmp_path)
    assert judge_hazard(_case(), other) == (False, "raised KeyError: 'unsupported operand'; expected TypeError")


def test_a_fixed_program_without_a_check_line_is_not_verified(tmp_path: pathlib.Path) -> None:
    assert judge_fixed(_run("print('done')\n", tmp_path)) == (False, "the program printed no ODELINT-CHECK line")


def test_hazard_and_fixed_programs_of_a_wrong_value_case_must_report_one_reference(tmp_path: pathlib.Path) -> None:
    hazard = _printed(tmp_path, 0.0, [1.0, 2.0], "hazard.py")
    assert judge_references(WRONG_VALUE, hazard, _printed(tmp_path, [1.0, 2.0], [1.0, 2.0 + 1e-9], "fixed.py")) == \
        (True, "both programs report the same reference")
    ok, detail = judge_references(WRONG_VALUE, hazard, _printed(tmp_path, 0.0, 0.0, "fixed.py"))
    assert (ok, detail) == (False, "the hazard's reference [1.0, 2.0] differs from the fixed program's 0.0")
    silent = _run("print('done')\n", tmp_path)
    assert judge_references(WRONG_VALUE, hazard, silent) == (False, "the program printed no ODELINT-CHECK line")
    assert judge_references(_case(), silent, silent) == (True, ""), "an error case has no reference to share"


WRONG_VALUE_CASE = CASE.replace('expect = "error"\nerror = "TypeError"\nmessage = "can only concatenate str"\n',
                                'expect = "wrong-value"\n').replace('fix = "safe"', 'fix = "manual"')
FIXED_BY_HAND = """\
import json

import equinox as eqx

model = eqx.nn.MLP(2, 2, 8, 1, key=None)
model = eqx.apply_updates(model, {"w": 0.5, "activation": None})
print("ODELINT-CHECK", json.dumps({"value": model["w"], "reference": %s}))
"""


def _wrong_value_repo(tmp_path: pathlib.Path, hazard_reference: str, fixed_reference: str) -> str:
    hazard = ("import json\n\nimport equinox as eqx\nimport optax\n\nmodel = eqx.nn.MLP(2, 2, 8, 1, key=None)\n"
              "model = optax.apply_updates(model, {\"w\": 0.5, \"activation\": \"\"})\n"
              f"print(\"ODELINT-CHECK\", json.dumps({{\"value\": 0.0, \"reference\": {hazard_reference}}}))\n")
    root = _fake_repo(tmp_path, hazard=hazard, fixed=FIXED_BY_HAND % fixed_reference)
    _write(os.path.join(root, "tests", "fixtures", "ODL204"), "fixture.toml", WRONG_VALUE_CASE)
    return root


def test_confirm_accepts_a_wrong_value_case_whose_programs_share_the_reference(tmp_path: pathlib.Path, fake_jax: None,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = _wrong_value_repo(tmp_path, "1.5", "1.5")
    assert cli.main(["confirm", "--root", root, "--rule", "ODL204"]) == 0, capsys.readouterr().out


def test_confirm_rejects_a_wrong_value_case_whose_programs_disagree_on_the_reference(
        tmp_path: pathlib.Path, fake_jax: None, capsys: pytest.CaptureFixture[str]) -> None:
    root = _wrong_value_repo(tmp_path, "0.5", "1.5")
    assert cli.main(["confirm", "--root", root, "--rule", "ODL204"]) == 1
    assert "ODL204 apply-updates: hazard: the hazard's reference 0.5 differs from the fixed program's 1.5" in \
        capsys.readouterr().out


def test_confirm_rejects_a_fixed_program_the_rule_still_flags(tmp_path: pathlib.Path, fake_jax: None,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = _fake_repo(tmp_path, fixed=HAZARD)
    _write(os.path.join(root, "tests", "fixtures", "ODL204"), "fixture.toml", CASE.replace('"safe"', '"manual"'))
    assert cli.main(["confirm", "--root", root, "--rule", "ODL204", "--format", "json"]) == 1
    (case,) = json.loads(capsys.readouterr().out)["rules"][0]["cases"]
    assert (case["flagged"], case["fixed_clean"]) == (True, False)
    assert case["lint"] == "hazard.py flagged; fixed.py is still flagged with ODL204"


@pytest.mark.parametrize(("broken", "lint"), [
    ("hazard.py", "ODL204 crashed on hazard.py: RuntimeError: broken on purpose"),
    ("fixed.py", "hazard.py flagged; ODL204 crashed on fixed.py: RuntimeError: broken on purpose"),
])
def test_a_rule_crashing_on_its_own_fixture_is_a_failure_not_a_verdict(
        tmp_path: pathlib.Path, fake_jax: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        broken: str, lint: str) -> None:
    rule = rule_for("ODL204")

    def finish(self: BaseRule) -> None:
        if self.context.path.endswith(broken):
            raise RuntimeError("broken on purpose")

    monkeypatch.setattr(rule, "finish", finish)
    # the fixed program still calls optax.apply_updates (on a dict): the rule runs on it too
    root = _fake_repo(tmp_path, fixed=HAZARD.replace("optax.apply_updates(model", "optax.apply_updates(dict(model)"))
    _write(os.path.join(root, "tests", "fixtures", "ODL204"), "fixture.toml", CASE.replace('"safe"', '"manual"'))
    assert cli.main(["confirm", "--root", root, "--rule", "ODL204", "--format", "json"]) == 1
    (case,) = json.loads(capsys.readouterr().out)["rules"][0]["cases"]
    assert case["lint"].startswith(lint)


def test_confirm_rejects_a_hazard_the_rule_does_not_flag(tmp_path: pathlib.Path, fake_jax: None,
        capsys: pytest.CaptureFixture[str]) -> None:
    unflagged = HAZARD.replace("optax.apply_updates(model", "optax.apply_updates(dict(model)")
    root = _fake_repo(tmp_path, hazard=unflagged, fixed=unflagged)
    _write(os.path.join(root, "tests", "fixtures", "ODL204"), "fixture.toml", CASE.replace('"safe"', '"manual"'))
    assert cli.main(["confirm", "--root", root, "--rule", "ODL204", "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    (case,) = report["rules"][0]["cases"]
    assert (report["rules"][0]["confirmed"], case["flagged"], case["lint"]) == \
        ("NO", False, "hazard.py is not flagged with ODL204")
