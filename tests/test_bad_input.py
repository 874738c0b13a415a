"""Hostile files, broken configuration and a rule that raises: one clear line, never a traceback.

Every case runs the real command in a scratch folder and checks that stderr holds no
Python traceback, that the other files are still linted, and that nothing was written.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest
from odelint.api.finding import Safety
from odelint.api.rule import Rule
from odelint.engine import core as engine
from odelint.engine import runner
from odelint.faces import cli
from odelint.files import fileio

HAZARD = ("import equinox as eqx\nimport optax\n\n"
          "model = eqx.nn.MLP(2, 2, 8, 1, key=None)\nstate = optax.adam(1e-3).init(model)\n")
HAZARD_LINE = 5


def odelint(*args: str, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "odelint", *args], cwd=cwd, capture_output=True, text=True,
                            timeout=timeout)
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    return result


def error_lines(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.is_symlink() and ".odelint_cache" not in p.parts}


def flagged(result: subprocess.CompletedProcess, name: str) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.startswith(f"{name}:")]


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    (tmp_path / "good.py").write_text(HAZARD)
    return tmp_path


# ---- files that cannot be linted: one line each, the good file still linted, nothing written


@pytest.mark.parametrize(("name", "data", "reason"), [
    ("latin.py", b"x = '\xff\xfe'\n", "not valid UTF-8"),
    ("binary.py", b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)), "binary file"),
    ("cookie.py", b"# -*- coding: klingon -*-\nx = 1\n", "encoding"),
])
def test_undecodable_files_get_one_line(scratch: Path, name: str, data: bytes, reason: str) -> None:
    (scratch / name).write_bytes(data)
    before = snapshot(scratch)
    result = odelint("check", "--no-cache", "--fix", ".", cwd=scratch)
    assert result.returncode == 2
    lines = error_lines(result)
    assert len(lines) == 1 and lines[0].startswith(f"odelint: error: {name}:") and reason in lines[0], lines
    assert snapshot(scratch)[name] == before[name]
    assert snapshot(scratch)["good.py"] != before["good.py"], "the good file must still be fixed"


@pytest.mark.parametrize(("body", "line", "message"), [
    ("def f(:\n    pass\n", 1, "SyntaxError: invalid syntax"),
    ("x = (1,\n", 1, "'(' was never closed"),
    # `compile` on the text accepts a continuation before a final CRLF; `python broken.py` does not
    ("x = 1\r\n\\\r\n", 2, "SyntaxError: unexpected EOF while parsing"),
    ("x = " + "(" * 300 + "1" + ")" * 300 + "\n", 1, "too many nested parentheses"),
    ("x = " + "[" * 20_000 + "]" * 20_000 + "\n", 1, "too many nested parentheses"),
    ("x = " + "+".join(["1"] * 20_000) + "\n", None, "nested too deeply"),
    ("x = " + "-" * 5_000 + "1\n", None, "nested too deeply"),
    ("x = f" + "()" * 5_000 + "\n", None, "nested too deeply"),
])
@pytest.mark.parametrize("triggered", [False, True], ids=["plain", "triggered"])
def test_unparseable_files_are_odl000_and_the_rest_is_linted(
        scratch: Path, body: str, line: int | None, message: str, triggered: bool) -> None:
    """Deep nesting used to overflow LibCST's native parser (a segfault) or take minutes."""
    header = "import equinox as eqx\nimport optax\n" if triggered else ""
    (scratch / "broken.py").write_text(header + body)
    before = snapshot(scratch)
    result = odelint("check", "--no-cache", "--fix", "-q", ".", cwd=scratch, timeout=60)
    assert result.returncode == 1, result.stderr
    [finding] = flagged(result, "broken.py")
    where = line + header.count("\n") if line else 1  # too deep: the whole file, from its start
    assert finding.startswith(f"broken.py:{where}:") and " ODL000 " in finding
    assert message in finding
    assert snapshot(scratch)["broken.py"] == before["broken.py"]
    assert "eqx.filter(model, eqx.is_array)" in (scratch / "good.py").read_text()


@pytest.mark.parametrize("body", [
    "x = " + "(" * 3_000 + "1" + ")" * 3_000 + "\n",
    "x = " + "+".join(["1"] * 20_000) + "\n",
])
def test_another_file_read_for_its_classes_is_parsed_only_where_cpython_may(scratch: Path, body: str) -> None:
    """Reading the class `Net` of model.py for train.py's finding used to hand model.py's text to
    LibCST even where CPython refuses it: the native parser overflowed its stack (a segfault)."""
    (scratch / "model.py").write_text("import equinox as eqx\n" + body + "class Net(eqx.Module):\n    f: int\n")
    (scratch / "train.py").write_text(HAZARD + "import jax\nfrom model import Net\n\n\ndef loss(m: Net, x):\n"
                                      "    return x\n\n\njax.jit(loss)(Net(1), 1.0)\n")
    result = odelint("check", "--no-cache", "train.py", cwd=scratch, timeout=60)
    assert result.returncode == 1, result.stderr
    assert [line.split(" ")[1] for line in flagged(result, "train.py")] == ["ODL201"]


@pytest.mark.parametrize("body", [
    "type Vector = list[float]\n",
    "def first[T](items: list[T]) -> T:\n    return items[0]\n",
    "class Box[T: (int, str), *Ts, **P]:\n    pass\n",
    'name = "x"\nx = f"{f"{f"{name}"}"}"\n',
    'x = f"{"nested quotes"}"\n',
])
@pytest.mark.parametrize("triggered", [False, True], ids=["plain", "triggered"])
def test_newer_syntax_is_linted_the_same_with_or_without_a_trigger(tmp_path: Path, body: str, triggered: bool) -> None:
    """Python 3.12/3.13 syntax: LibCST parses it, so it is linted, never an ODL000 flip-flop."""
    source = (HAZARD if triggered else "import math\n") + body
    (tmp_path / "new.py").write_text(source)
    try:
        cst.parse_module(source)
    except cst.ParserSyntaxError:
        pytest.skip("this LibCST cannot parse the syntax: covered by the ODL000 cases")
    result = odelint("check", "--no-cache", "-q", "new.py", cwd=tmp_path)
    codes = [line.split()[1] for line in flagged(result, "new.py")]
    assert codes == (["ODL201"] if triggered else [])
    assert result.returncode == (1 if triggered else 0)


@pytest.mark.parametrize(("name", "data", "line"), [
    ("empty.py", b"", None),
    ("blank.py", b"\n\n   \n", None),
    ("comment.py", b"# optax equinox", None),
    ("bom.py", b"\xef\xbb\xbf" + HAZARD.encode(), HAZARD_LINE),
    ("crlf.py", HAZARD.replace("\n", "\r\n").encode(), HAZARD_LINE),
    ("cr.py", HAZARD.replace("\n", "\r").encode(), HAZARD_LINE),
    ("mixed.py", HAZARD.replace("\n", "\r\n", 2).encode(), HAZARD_LINE),
    ("tabs.py", ("if True:\n\tx = 1\n\x0c\n" + HAZARD + "def f():\n\treturn 1\n").encode(), HAZARD_LINE + 3),
    ("formfeed.py", ("\x0c" + HAZARD.replace("\nmodel", "\n\x0cmodel")).encode(), HAZARD_LINE),
    ("latin1.py", ("# -*- coding: latin-1 -*-\n" + HAZARD + "name = 'café'\n").encode("latin-1"), HAZARD_LINE + 1),
    ("noeol.py", HAZARD.rstrip("\n").encode(), HAZARD_LINE),
])
def test_odd_but_valid_files_lint_correctly(tmp_path: Path, name: str, data: bytes, line: int | None) -> None:
    (tmp_path / name).write_bytes(data)
    result = odelint("check", "--no-cache", "-q", name, cwd=tmp_path)
    assert result.stderr == ""
    found = flagged(result, name)
    if line is None:
        assert (result.returncode, found) == (0, [])
    else:
        assert result.returncode == 1
        assert [f.split(":")[1] + " " + f.split()[1] for f in found] == [f"{line} ODL201"], found


def test_a_5_mb_generated_file(tmp_path: Path) -> None:
    block = ("def step_{i}(values, scale):\n    total = 0.0\n    for value in values:\n"
             "        total += (value * scale - {i}) ** 2\n    return total / max(len(values), 1)\n\n\n")
    blocks = []
    size = 0
    while size < 5_000_000:
        blocks.append(block.format(i=len(blocks)))
        size += len(blocks[-1])
    (tmp_path / "big.py").write_text("".join(blocks) + "def broken(:\n")
    result = odelint("check", "--no-cache", "-q", "big.py", cwd=tmp_path)
    assert result.returncode == 1
    assert flagged(result, "big.py") == [f"big.py:{7 * len(blocks) + 1}:12: ODL000 SyntaxError: invalid syntax"]


@pytest.mark.slow
def test_a_1_mb_generated_file_that_every_rule_parses(tmp_path: Path) -> None:
    block = ("def step_{i}(key):\n    model = eqx.nn.MLP(2, 2, 8, 2, key=key)\n"
             "    state = optax.adam(1e-3).init(model)\n    return model, state\n\n\n")
    head = "import equinox as eqx\nimport optax\n\n\n"
    count = 1_000_000 // len(block.format(i=0))
    (tmp_path / "big.py").write_text(head + "".join(block.format(i=i) for i in range(count)))
    result = odelint("check", "--no-cache", "-q", "--statistics", "big.py", cwd=tmp_path, timeout=600)
    assert result.returncode == 1
    assert result.stdout.split()[:2] == [str(count), "ODL201"]


# ---- the file system changes under our feet


def test_symlink_loops_and_a_folder_named_like_a_module(scratch: Path) -> None:
    (scratch / "loop.py").symlink_to("loop.py")
    (scratch / "again").symlink_to(".")
    (scratch / "pkg.py").mkdir()
    (scratch / "pkg.py" / "inner.py").write_text(HAZARD)
    (scratch / "dangling.py").symlink_to("nowhere.py")
    result = odelint("check", "--no-cache", "-q", ".", cwd=scratch, timeout=60)
    assert result.returncode == 2
    lines = error_lines(result)
    assert sorted(line.split(":")[2] for line in lines) == [" dangling.py", " loop.py"], lines
    assert len(flagged(result, "good.py")) == 1 and len(flagged(result, "pkg.py/inner.py")) == 1
    assert all(not line.startswith("again/") for line in result.stdout.splitlines())
    named = odelint("check", "--no-cache", "-q", "pkg.py", cwd=scratch)
    assert (named.returncode, len(flagged(named, "pkg.py/inner.py"))) == (1, 1)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads mode-000 files; see the monkeypatched twin below")
def test_an_unreadable_file_on_disk(scratch: Path) -> None:
    (scratch / "secret.py").write_text(HAZARD)
    (scratch / "secret.py").chmod(0)
    try:
        result = odelint("check", "--no-cache", "-q", ".", cwd=scratch)
    finally:
        (scratch / "secret.py").chmod(0o644)
    assert result.returncode == 2
    assert error_lines(result) == ["odelint: error: secret.py: Permission denied"]
    assert len(flagged(result, "good.py")) == 1


def _in_process(args: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(["check", "--no-cache", "-j", "1", "-q", *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_a_file_deleted_or_made_unreadable_after_discovery(scratch: Path, monkeypatch, capsys) -> None:
    for name in ("gone.py", "locked.py", "last.py"):
        (scratch / name).write_text(HAZARD)
    monkeypatch.chdir(scratch)
    discover = runner.discover

    def discover_then_delete(*args, **kwargs):
        found = discover(*args, **kwargs)
        os.remove("gone.py")
        return found

    real_open = fileio.nonblocking  # files are read through it (root ignores a chmod)

    def guarded_open(path, *args, **kwargs):
        if os.path.basename(str(path)) == "locked.py":
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(runner, "discover", discover_then_delete)
    monkeypatch.setattr(fileio, "nonblocking", guarded_open)
    code, out, err = _in_process(["--fix", "."], capsys)
    assert code == 2
    assert sorted(err.splitlines()) == ["odelint: error: gone.py: No such file or directory",
                                        "odelint: error: locked.py: Permission denied"]
    assert "eqx.filter" in (scratch / "good.py").read_text() and "eqx.filter" in (scratch / "last.py").read_text()
    assert (scratch / "locked.py").read_text() == HAZARD


# ---- configuration


@pytest.mark.parametrize(("config", "fragment"), [
    ("[tool.odelint\nselect = [", "invalid TOML"),
    ("[tool.odelint]\nselct = ['ODL2']\n", "unknown key(s) in [tool.odelint]: selct"),
    ("[tool.odelint]\nselect = ['ODL999']\n", "ODL999"),
    ("[tool.odelint]\nselect = 'ODL201'\n", "`select` must be a list of strings"),
    ("[tool.odelint]\nunsafe-fixes = 'yes'\n", "`unsafe-fixes` must be true or false"),
    ("[tool.odelint]\nper-file-ignores = ['tests/*']\n", "per-file-ignores"),
    ("[tool]\nodelint = 3\n", "must be a table"),
])
@pytest.mark.parametrize("how", ["found", "--config"])
def test_broken_configuration_is_one_line_and_exit_2(scratch: Path, config: str, fragment: str, how: str) -> None:
    (scratch / "pyproject.toml").write_text(config)
    before = snapshot(scratch)
    args = ["--config", "pyproject.toml"] if how == "--config" else []
    result = odelint("check", "--no-cache", "--fix", *args, ".", cwd=scratch)
    assert result.returncode == 2
    lines = [line for line in (result.stdout + result.stderr).splitlines() if fragment in line]
    if how == "found":  # reported once, as an ODL001 finding at the configuration file's line
        assert len(lines) == 1 and lines[0].startswith("pyproject.toml:") and ": ODL001 " in lines[0], lines
    else:
        assert len(lines) == 1 and lines[0].startswith("odelint: error: ") and fragment in lines[0], lines
    assert snapshot(scratch) == before


@pytest.mark.parametrize("args", [["--select", "ODL999"], ["--ignore", "XYZ"], ["--per-file-ignores", "nocodes"],
                                  ["--jobs", "0"]])
def test_bad_command_line_values_exit_2(scratch: Path, args: list[str]) -> None:
    result = odelint("check", "--no-cache", *args, ".", cwd=scratch)
    assert result.returncode == 2
    assert len(error_lines(result)) == 1


# ---- a rule that raises is contained


class ExplodingRule(Rule):
    """Raises on every call; only injected into the engine by the test below."""

    code = "ODL990"
    name = "exploding-rule"
    summary = "A test rule that raises"
    triggers = (("optax",),)
    fix_safety = Safety.SAFE

    def visit_Call(self, node: cst.Call, site) -> None:
        raise ZeroDivisionError("boom")


def test_a_rule_that_raises_is_an_internal_error_and_the_others_still_report(
        scratch: Path, monkeypatch, capsys) -> None:
    (scratch / "plain.py").write_text("import math\nx = math.pi\n")
    rules_for = engine.rules_for

    def with_exploding(path, codes, python):
        chosen = rules_for(path, codes, python)
        return [*chosen, ExplodingRule] if python else chosen

    monkeypatch.setattr(engine, "rules_for", with_exploding)
    monkeypatch.chdir(scratch)
    for fix in ([], ["--fix"]):
        before = (scratch / "good.py").read_text()
        code, out, err = _in_process([*fix, "."], capsys)
        assert code == 2
        [line] = err.splitlines()
        assert line.startswith("odelint: error: good.py: internal error in rule ODL990: ZeroDivisionError: boom")
        if fix:
            assert "eqx.filter(model, eqx.is_array)" in (scratch / "good.py").read_text()
        else:
            assert "ODL201" in out and (scratch / "good.py").read_text() == before
