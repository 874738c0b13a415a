"""`--fix` never loses a file: killed at any moment, every file is wholly old or wholly new,
and what it writes keeps the file's line endings, BOM, encoding and permission bits."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from odelint.faces import cli

HAZARD = ("import equinox as eqx\nimport optax\n\n"
          "model = eqx.nn.MLP(2, 2, 8, 1, key=None)\nstate = optax.adam(1e-3).init(model)\n")
FIXED = HAZARD.replace("init(model)", "init(eqx.filter(model, eqx.is_array))")
CLEAN = "import optax\n\noptim = optax.adam(1e-3)\n"

# Runs the CLI with os.replace / the temporary file's writes rigged to SIGKILL the process.
KILLER = """
import os, signal, sys
from odelint.faces import cli

when, nth = sys.argv[1], int(sys.argv[2])
calls = {"replace": 0, "open": 0}
real_replace, real_fdopen = os.replace, os.fdopen

def die():
    os.kill(os.getpid(), signal.SIGKILL)

def replace(source, target):
    calls["replace"] += 1
    if when == "before-rename" and calls["replace"] == nth:
        die()
    real_replace(source, target)
    if when == "after-rename" and calls["replace"] == nth:
        die()

class HalfWriter:
    def __init__(self, stream):
        self.stream = stream
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return self.stream.__exit__(*exc)
    def write(self, data):
        self.stream.write(data[: len(data) // 2])
        self.stream.flush()
        die()
    def __getattr__(self, name):
        return getattr(self.stream, name)

def fdopen(fd, *args, **kwargs):
    stream = real_fdopen(fd, *args, **kwargs)
    calls["open"] += 1
    return HalfWriter(stream) if when == "mid-write" and calls["open"] == nth else stream

os.replace, os.fdopen = replace, fdopen
sys.exit(cli.main(sys.argv[3:]))
"""


def make_project(folder: Path, count: int) -> list[Path]:
    paths = []
    for index in range(count):
        path = folder / f"mod_{index:03d}.py"
        path.write_text(HAZARD)
        paths.append(path)
    return paths


def states(paths: list[Path]) -> list[str]:
    """'old' or 'new' for each file; anything else is a torn write."""
    found = []
    for path in paths:
        text = path.read_text()
        assert text in (HAZARD, FIXED), f"{path.name} is half-written: {text!r}"
        found.append("old" if text == HAZARD else "new")
    return found


def strays(folder: Path) -> list[str]:
    expected = {p.name for p in folder.glob("mod_*.py")}
    return sorted(p.name for p in folder.iterdir() if p.name not in expected)


@pytest.mark.parametrize(("when", "nth", "new"), [("mid-write", 3, 2), ("before-rename", 3, 2),
                                                  ("after-rename", 3, 3)])
def test_killed_while_writing_leaves_every_file_old_or_new(tmp_path: Path, when: str, nth: int, new: int) -> None:
    paths = make_project(tmp_path, 12)
    result = subprocess.run([sys.executable, "-c", KILLER, when, str(nth), "check", "--fix", "--no-cache",
                             "-j", "2", "."], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == -signal.SIGKILL
    assert states(paths).count("new") == new
    assert all(name.startswith(".odelint-") and name.endswith(".tmp") for name in strays(tmp_path))
    again = subprocess.run([sys.executable, "-m", "odelint", "check", "--fix", "--no-cache", "-q", "."],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "Traceback" not in again.stderr
    assert set(states(paths)) == {"new"}


def test_sigkill_at_random_moments_never_tears_a_file(tmp_path: Path) -> None:
    """The real thing: a plain `odelint --fix` run over many files, killed from outside at
    moments spread over how long an undisturbed run takes on this machine."""
    paths = make_project(tmp_path, 80)
    command = [sys.executable, "-m", "odelint", "check", "--fix", "--no-cache", "-j", "2", "."]
    start = time.monotonic()
    subprocess.run(command, cwd=tmp_path, capture_output=True, timeout=300)
    duration = time.monotonic() - start
    seen = set()
    for fraction in (0.1, 0.3, 0.5, 0.7, 0.8, 0.9):
        for path in paths:
            path.write_text(HAZARD)
        process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   start_new_session=True)
        time.sleep(duration * fraction)
        os.killpg(process.pid, signal.SIGKILL)  # the workers too
        _, err = process.communicate(timeout=60)
        assert b"Traceback" not in err
        seen.update(states(paths))  # each file wholly old or wholly new, never torn
        assert all(name.startswith(".odelint-") and name.endswith(".tmp") for name in strays(tmp_path))
    assert "old" in seen, "no kill landed before the end of the run"


def test_a_failing_write_is_reported_and_cleaned_up(tmp_path: Path, monkeypatch, capsys) -> None:
    paths = make_project(tmp_path, 4)
    real_replace = os.replace
    calls = []

    def replace(source, target):
        calls.append(target)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check", "--fix", "--no-cache", "-j", "1", "-q", "."]) == 2
    err = capsys.readouterr().err
    assert err == "odelint: error: mod_001.py: cannot write: No space left on device\n"
    assert states(paths) == ["new", "old", "new", "new"]
    assert strays(tmp_path) == []


def test_a_read_only_file_is_reported_not_lost(tmp_path: Path) -> None:
    paths = make_project(tmp_path, 2)
    paths[0].chmod(0o444)
    result = subprocess.run([sys.executable, "-m", "odelint", "check", "--fix", "--no-cache", "-q", "."],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr == "odelint: error: mod_000.py: file is read-only; not fixed\n"
    assert states(paths) == ["old", "new"]
    assert stat.S_IMODE(paths[0].stat().st_mode) == 0o444


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into a read-only folder")
def test_a_read_only_folder_is_reported_not_lost(tmp_path: Path) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    paths = make_project(folder, 1)
    folder.chmod(0o555)
    try:
        result = subprocess.run([sys.executable, "-m", "odelint", "check", "--fix", "--no-cache", "-q", "."],
                                cwd=tmp_path, capture_output=True, text=True, timeout=300)
    finally:
        folder.chmod(0o755)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("odelint: error: locked/mod_000.py: cannot write: ")
    assert states(paths) == ["old"]


def fix(folder: Path, *paths: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "odelint", "check", "--fix", "--no-cache", "-q", *paths],
                            cwd=folder, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in result.stderr, result.stderr
    return result


@pytest.mark.parametrize(("data", "expected"), [
    (HAZARD.replace("\n", "\r\n").encode(), FIXED.replace("\n", "\r\n").encode()),
    (b"\xef\xbb\xbf" + HAZARD.encode(), b"\xef\xbb\xbf" + FIXED.encode()),
    (("# -*- coding: latin-1 -*-\n" + HAZARD + "name = 'caf\xe9'\n").encode("latin-1"),
     ("# -*- coding: latin-1 -*-\n" + FIXED + "name = 'caf\xe9'\n").encode("latin-1")),
    (b"\xef\xbb\xbf" + HAZARD.replace("\n", "\r\n").encode(), b"\xef\xbb\xbf" + FIXED.replace("\n", "\r\n").encode()),
    (("import optax\r\n" + HAZARD.replace("import optax\n", "")).encode(),
     ("import optax\r\n" + FIXED.replace("import optax\n", "")).encode()),
], ids=["crlf", "bom", "latin-1-cookie", "bom-crlf", "mixed-endings"])
def test_a_fix_keeps_the_file_encoding_and_line_endings(tmp_path: Path, data: bytes, expected: bytes) -> None:
    path = tmp_path / "train.py"
    path.write_bytes(data)
    assert fix(tmp_path, "train.py").returncode == 0
    assert path.read_bytes() == expected


def test_a_fix_that_adds_an_import_writes_crlf_into_a_crlf_file(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_bytes(HAZARD.replace("import equinox as eqx\n", "from equinox.nn import MLP\n")
                     .replace("eqx.nn.MLP", "MLP").replace("\n", "\r\n").encode())
    assert fix(tmp_path, "train.py").returncode == 0
    data = path.read_bytes()
    assert b"import equinox as eqx\r\n" in data and b"eqx.filter(model, eqx.is_array)" in data
    assert data.count(b"\n") == data.count(b"\r\n")


def test_mode_kept_unchanged_files_untouched_and_a_second_fix_changes_nothing(tmp_path: Path) -> None:
    script, clean, link = tmp_path / "train.py", tmp_path / "clean.py", tmp_path / "alias.py"
    script.write_text(HAZARD)
    script.chmod(0o751)
    clean.write_text(CLEAN)
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "target.py").write_text(HAZARD)
    link.symlink_to(Path("real") / "target.py")
    past = time.time_ns() - 10**10
    os.utime(clean, ns=(past, past))
    before = clean.stat()
    result = fix(tmp_path, "train.py", "clean.py", "alias.py")
    assert result.returncode == 0
    assert script.read_text() == FIXED and stat.S_IMODE(script.stat().st_mode) == 0o751
    assert (tmp_path / "real" / "target.py").read_text() == FIXED and link.is_symlink()
    after = clean.stat()
    assert (after.st_mtime_ns, after.st_ino) == (before.st_mtime_ns, before.st_ino)
    stamps = {p: p.stat().st_mtime_ns for p in (script, clean, tmp_path / "real" / "target.py")}
    second = fix(tmp_path, "train.py", "clean.py", "alias.py")
    assert second.returncode == 0 and "Fixed" not in second.stdout
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    assert sorted(p.name for p in tmp_path.iterdir()) == ["alias.py", "clean.py", "real", "train.py"]


def test_a_file_edited_while_fixing_is_not_overwritten(tmp_path, monkeypatch) -> None:
    """The worker fixes the bytes it read; if the user saved a new version meanwhile, that
    version wins and the run reports the file."""
    from odelint.api.registry import all_rules
    from odelint.engine import runner
    from odelint.files.config import ConfigResolver, Overrides

    target = tmp_path / "train.py"
    hazard = ("import equinox as eqx\nimport optax\nm = eqx.nn.MLP(1, 1, 1, 1, key=None)\n"
              "s = optax.adam(1.0).init(m)\n")
    target.write_text(hazard)
    real_process = runner.process

    def process_then_user_saves(task):
        outcome = real_process(task)
        target.write_text(hazard + "# the user's newer edit\n")
        return outcome

    monkeypatch.setattr(runner, "process", process_then_user_saves)
    resolver = ConfigResolver(Overrides(isolated=True), [rule.code for rule in all_rules()], str(tmp_path))
    result = runner.run([str(target)], resolver, runner.Options(mode=runner.FIX, jobs=1, use_cache=False))
    assert target.read_text() == hazard + "# the user's newer edit\n"
    assert result.errors == [(str(target), "changed on disk while odelint was fixing it; not written")]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as handle:
            return not any(line.startswith("State:") and "Z" in line.split()[1] for line in handle)
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc to list child processes")
def test_workers_exit_when_their_parent_is_killed(tmp_path: Path) -> None:
    make_project(tmp_path, 400)
    process = subprocess.Popen([sys.executable, "-m", "odelint", "check", "--fix", "--no-cache", "-j", "2", "."],
                               cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[int] = []
    deadline = time.monotonic() + 60
    while len(workers) < 2 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
        with open(f"/proc/{process.pid}/task/{process.pid}/children") as handle:
            workers = [int(pid) for pid in handle.read().split()]
    if len(workers) < 2:
        pytest.skip("the run finished before its workers could be seen")
    process.kill()
    process.wait()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers), "orphaned workers kept running"
