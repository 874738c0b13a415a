"""The flake8 face, through the real `flake8` executable: same findings, same columns as `odelint check`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from odelint.api.registry import all_rules
from odelint.api.rule import Flag, Rule

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parent.parent
FLAKE8 = shutil.which("flake8", path=str(BIN)) or shutil.which("flake8")
ODELINT = shutil.which("odelint", path=str(BIN)) or shutil.which("odelint")
pytestmark = pytest.mark.skipif(FLAKE8 is None or ODELINT is None, reason="flake8 or odelint not installed")

ADAMW = "import optax\n\noptim = optax.adamw(1e-3)\n"
# The call starts after non-ASCII text (4 code points, one of them outside the BMP).
NON_ASCII = ADAMW + 'w = "αβγ😀"; u, s = optim.update({"w": 1.0}, None)\n'


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, encoding="utf-8", timeout=120)


def flake8(cwd: Path, *args: str) -> list[str]:
    done = _run([FLAKE8, "--isolated", *args], cwd)
    assert done.returncode in (0, 1), done.stderr
    return done.stdout.splitlines()


def odelint_lines(cwd: Path, *files: str) -> list[str]:
    done = _run([ODELINT, "check", "--no-cache", "--format", "json", *files], cwd)
    assert done.returncode in (0, 1), done.stderr
    return [f"{f['path']}:{f['line']}:{f['column']}: {f['code']} {f['message']}" for f in json.loads(done.stdout)]


def _normpath(line: str) -> str:
    """`./new.py:4:8: ...` and `new.py:4:8: ...` name the same file."""
    path, rest = line.split(":", 1)
    return f"{os.path.normpath(path)}:{rest}"


def test_plugin_is_registered_under_odl():
    done = _run([FLAKE8, "--version"], Path.cwd())
    assert "odelint:" in done.stdout


def test_every_rule_example_reports_the_same_lines_as_odelint_check(tmp_path):
    files = []
    for rule in all_rules():
        if not issubclass(rule, Rule):
            continue
        for number, example in enumerate(e for e in rule.examples if isinstance(e, Flag)):
            name = f"{rule.code.lower()}_{number}.py"
            (tmp_path / name).write_text(example.code, encoding="utf-8")
            files.append(name)
    (tmp_path / "non_ascii.py").write_text(NON_ASCII, encoding="utf-8")
    files.append("non_ascii.py")
    assert len(files) > 4

    expected = odelint_lines(tmp_path, *files)
    assert expected, "the examples must produce findings"
    assert sorted(flake8(tmp_path, "--select", "ODL", *files)) == sorted(expected)


def test_columns_count_code_points_like_odelint_check(tmp_path):
    (tmp_path / "m.py").write_text(NON_ASCII, encoding="utf-8")
    column = NON_ASCII.splitlines()[3].index("optim.update") + 1
    assert column == 20
    [line] = flake8(tmp_path, "--select", "ODL", "m.py")
    assert line.startswith(f"m.py:4:{column}: ODL203 ")
    assert odelint_lines(tmp_path, "m.py") == [line]


def test_noqa_is_read_by_flake8(tmp_path):
    source = ADAMW + "u, s = optim.update({}, None)  # noqa: ODL203\nu, s = optim.update({}, None)  # noqa: E501\n"
    (tmp_path / "m.py").write_text(source, encoding="utf-8")
    assert [line.split(": ")[0] for line in flake8(tmp_path, "--select", "ODL", "m.py")] == ["m.py:5:8"]
    # `--disable-noqa` is flake8's switch, so the plugin must not filter by itself.
    shown = flake8(tmp_path, "--select", "ODL", "--disable-noqa", "m.py")
    assert [line.split(": ")[0] for line in shown] == ["m.py:4:8", "m.py:5:8"]


def test_select_and_extend_select(tmp_path):
    (tmp_path / "m.py").write_text(ADAMW + "u, s = optim.update({}, None)\n", encoding="utf-8")
    assert flake8(tmp_path, "--select", "E501", "m.py") == []
    assert [line.split(" ")[1] for line in flake8(tmp_path, "--select", "E501", "--extend-select", "ODL", "m.py")] \
        == ["ODL203"]
    assert flake8(tmp_path, "--select", "ODL", "--ignore", "ODL2", "m.py") == []


def test_syntax_errors_are_left_to_flake8(tmp_path):
    (tmp_path / "bad.py").write_text("import optax\ndef step(model:\n    pass\n", encoding="utf-8")
    lines = flake8(tmp_path, "--select", "E9,ODL", "bad.py")
    assert len(lines) == 1 and " E999 " in lines[0]


def test_tool_odelint_decides_which_rules_run(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.odelint]\nper-file-ignores = { "legacy/*" = ["ODL203"] }\n', encoding="utf-8")
    (tmp_path / "legacy").mkdir()
    for name in ("legacy/old.py", "new.py"):
        (tmp_path / name).write_text(ADAMW + "u, s = optim.update({}, None)\n", encoding="utf-8")
    shown = [_normpath(line) for line in flake8(tmp_path, "--select", "ODL", ".")]
    assert shown == [_normpath(line) for line in odelint_lines(tmp_path, ".")]
    assert [line.split(":")[0] for line in shown] == ["new.py"]


def test_stdin_uses_the_display_name(tmp_path):
    done = subprocess.run([FLAKE8, "--isolated", "--select", "ODL", "--stdin-display-name", "piped.py", "-"],
                          cwd=tmp_path, input=ADAMW + "u, s = optim.update({}, None)\n", capture_output=True,
                          text=True, timeout=120)
    assert done.stdout.startswith("piped.py:4:8: ODL203 "), done.stderr


@pytest.mark.parametrize(("filenames", "jobs", "loaded"), [
    ([], "2", True),                       # `flake8`: the folder ".", in workers
    (["a.py", "b.py"], "2", True),
    (["tests"], "2", True),                # a folder
    (["a.py"], "2", False),                # one file: flake8 lints it in its own process
    (["a.py", "b.py"], "1", False),        # `-j1`
    (["-"], "2", False),                   # stdin
])
def test_the_engine_is_loaded_before_flake8_forks_its_workers(filenames, jobs, loaded):
    """flake8 calls `parse_options` in its main process: where it then forks workers, the rules
    and LibCST loaded there are shared by all of them instead of loaded again in each. Where it
    lints in its own process, nothing is loaded before a file needs it (an editor's flake8 on a
    file no rule looks at never imports LibCST)."""
    script = ("import sys, types\n"
              "from flake8.main.options import JobsArgument\n"
              "from odelint.faces.flake8_plugin import Flake8Plugin\n"
              "assert not any(name.startswith('odelint.rules.') for name in sys.modules)\n"
              "assert 'libcst._nodes' not in sys.modules\n"
              f"options = types.SimpleNamespace(disable_noqa=False, filenames={filenames!r},\n"
              f"                                jobs=JobsArgument({jobs!r}))\n"
              "Flake8Plugin.parse_options(options)\n"
              f"assert any(name.startswith('odelint.rules.') for name in sys.modules) is {loaded}\n"
              f"assert ('libcst._nodes' in sys.modules) is {loaded}\n")
    done = _run([sys.executable, "-c", script], ROOT)
    assert done.returncode == 0, done.stderr


def test_one_file_no_rule_looks_at_is_linted_without_libcst(tmp_path):
    """flake8 on one file lints it in its own process: the gate turns the file away, and LibCST
    is never imported (about 0.17 s of an editor's flake8 on each save)."""
    (tmp_path / "plain.py").write_text("import jax.numpy as jnp\n\n\ndef f(x):\n    return jnp.sum(x)\n")
    (tmp_path / "hazard.py").write_text(ADAMW + "u, s = optim.update({}, None)\n")
    script = ("import sys\n"
              "from flake8.main.cli import main\n"
              "try:\n"
              "    main(['--isolated', '--select', 'ODL', sys.argv[1]])\n"
              "except SystemExit:\n"
              "    pass\n"
              "print('libcst._nodes' in sys.modules)\n")  # what the real package imports (not the stand-in)
    plain = _run([sys.executable, "-c", script, "plain.py"], tmp_path)
    hazard = _run([sys.executable, "-c", script, "hazard.py"], tmp_path)
    assert plain.stdout.splitlines() == ["False"], plain.stderr
    assert hazard.stdout.splitlines()[-1] == "True" and " ODL203 " in hazard.stdout, hazard.stderr


def test_the_projects_pinned_versions_decide_as_they_do_for_odelint_check(tmp_path):
    """A project that pins jax before `jax.tree_map` was deprecated: neither face may say it was
    removed (the plugin once linted with no target versions, as if the newest were installed)."""
    (tmp_path / "requirements.txt").write_text("jax==0.4.20\n")
    (tmp_path / "old.py").write_text("import jax\n\nleaves = jax.tree_map(abs, [1.0])\n")
    (tmp_path / "new.py").write_text("import equinox as eqx\n\nnorm = eqx.experimental.BatchNorm\n")
    expected = odelint_lines(tmp_path, "old.py", "new.py")
    assert [line.split(": ")[1].split()[0] for line in expected] == ["ODL911"]  # equinox is not pinned
    assert sorted(map(_normpath, flake8(tmp_path, "--select", "ODL", "old.py", "new.py"))) == sorted(expected)
