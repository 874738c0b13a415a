"""Issue 22's file and engine defects: each case reproduces what a user (or an attacker) did.

Every case runs the real command in a scratch folder: nothing lost (findings, owners, links,
stray temporary files), nothing hangs (FIFOs, dying workers), nothing surprises (stale cache
results, valid code called a syntax error).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HAZARD = ("import equinox as eqx\nimport optax\n\n"
          "model = eqx.nn.MLP(2, 2, 8, 1, key=None)\nstate = optax.adam(1e-3).init(model)\n")
FIXED = "optax.adam(1e-3).init(eqx.filter(model, eqx.is_array))"


def odelint(*args: str, cwd: Path, timeout: int = 120, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "odelint", *args], cwd=cwd, capture_output=True, timeout=timeout,
                            input=stdin)
    out = result.stdout.decode("utf-8", "replace") + result.stderr.decode("utf-8", "replace")
    assert "Traceback" not in out, out
    return result


def out(result: subprocess.CompletedProcess) -> str:
    return result.stdout.decode("utf-8", "replace")


def err(result: subprocess.CompletedProcess) -> str:
    return result.stderr.decode("utf-8", "replace")


def codes(result: subprocess.CompletedProcess, name: str) -> list[str]:
    return [line.split()[1] for line in out(result).splitlines() if line.startswith(f"{name}:")]


# ---- 13: a NUL byte anywhere is what CPython refuses


@pytest.mark.parametrize("where", ["comment", "string"])
def test_a_nul_byte_after_the_first_8_kib_is_odl000(tmp_path: Path, where: str) -> None:
    tail = b"# c \x00\n" if where == "comment" else b"s = 'a\x00b'\n"
    (tmp_path / "late.py").write_bytes(b"x = 1\n#" + b"x" * 9000 + b"\n" + tail)
    result = odelint("check", "--no-cache", "-q", "late.py", cwd=tmp_path)
    assert result.returncode == 1
    assert codes(result, "late.py") == ["ODL000"] and "null bytes" in out(result)


# ---- 15: valid code CPython compiles is never a syntax error


@pytest.mark.parametrize("expression", [
    " and ".join(f"a{i}" for i in range(1000)),
    "(" + " ".join(f"'s{i}'" for i in range(1000)) + ")",
])
@pytest.mark.parametrize("mode", ["check", "--fix"])
def test_long_chains_cpython_compiles_are_linted(tmp_path: Path, expression: str, mode: str) -> None:
    source = HAZARD + f"y = {expression}\n"
    compile(source, "deep.py", "exec")
    (tmp_path / "deep.py").write_text(source)
    args = ("--fix",) if mode == "--fix" else ()
    result = odelint("check", "--no-cache", "-q", *args, "deep.py", cwd=tmp_path)
    assert "ODL000" not in out(result) and "ODL001" not in out(result)
    if mode == "--fix":
        assert result.returncode == 0 and FIXED in (tmp_path / "deep.py").read_text()
    else:
        assert codes(result, "deep.py") == ["ODL201"]


def test_code_too_deep_even_with_room_is_one_odl001_line_not_a_syntax_error() -> None:
    from odelint.engine import core

    source = HAZARD + "y = " + " and ".join(f"a{i}" for i in range(1000)) + "\n"
    original = core._ROOMY_RECURSION_LIMIT
    core._ROOMY_RECURSION_LIMIT = 0  # no more room than the default: the second try runs out too
    try:
        [finding] = core.lint_source(source, "deep.py").findings
    finally:
        core._ROOMY_RECURSION_LIMIT = original
    assert finding.code == "ODL001" and "Python accepts it" in finding.message


# ---- 11: cross-file results keyed by every path they looked at, found or not

MODULE_NET = "import equinox as eqx\nimport jax\n\nclass Net(eqx.Module):\n    w: jax.Array\n    mlp: eqx.nn.MLP\n"
ARRAY_NET = "import equinox as eqx\nimport jax\n\nclass Net(eqx.Module):\n    w: jax.Array\n"
TRAIN = "import optax\nfrom model import Net\n\nnet = Net(None)\nstate = optax.adam(1e-3).init(net)\n"


def json_codes(folder: Path, *paths: str) -> dict[str, list[str]]:
    import json

    result = odelint("check", *paths, "--format", "json", "--exit-zero", cwd=folder)
    found: dict[str, list[str]] = {}
    for finding in json.loads(out(result)):
        found.setdefault(finding["filename"] if "filename" in finding else finding["path"], []).append(finding["code"])
    return found


def test_a_module_created_after_the_first_run_is_read(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "train.py").write_text(TRAIN)
    assert json_codes(tmp_path, "train.py") == {}, "no model.py: Net is unknown"
    (tmp_path / "model.py").write_text(MODULE_NET)
    assert "ODL201" in json_codes(tmp_path, "train.py").get("train.py", [])


def test_the_same_train_py_beside_different_models_gets_its_own_result(tmp_path: Path) -> None:
    for folder, model in (("a", ARRAY_NET), ("b", MODULE_NET)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "pyproject.toml").write_text("")
        (tmp_path / folder / "model.py").write_text(model)
        (tmp_path / folder / "train.py").write_text(TRAIN)
    assert json_codes(tmp_path, "a/train.py") == {}
    assert "ODL201" in json_codes(tmp_path, "b/train.py").get(os.path.join("b", "train.py"), [])


def test_a_new_module_shadowing_another_is_read(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "model.py").write_text(ARRAY_NET)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(TRAIN)
    assert json_codes(tmp_path, "pkg/train.py") == {}, "the root's model.py holds arrays only"
    (tmp_path / "pkg" / "model.py").write_text(MODULE_NET)  # beside train.py: looked up first
    assert "ODL201" in json_codes(tmp_path, "pkg/train.py").get(os.path.join("pkg", "train.py"), [])


def test_a_model_py_edited_to_hold_modules_relints_a_file_the_gate_had_passed(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "model.py").write_text("class Net:\n    def __init__(self, w):\n        self.w = w\n")
    (tmp_path / "train.py").write_text(TRAIN)
    assert json_codes(tmp_path, "train.py") == {}
    (tmp_path / "model.py").write_text(MODULE_NET)
    assert "ODL201" in json_codes(tmp_path, "train.py").get("train.py", [])


# ---- 3: --fix keeps owner and group, and hard links


def test_fix_keeps_hard_links_and_writes_the_shared_file(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(HAZARD)
    os.link(tmp_path / "src" / "train.py", tmp_path / "other_name.txt")
    inode = (tmp_path / "src" / "train.py").stat().st_ino
    result = odelint("check", "--no-cache", "--fix", "-q", "src", cwd=tmp_path)
    assert result.returncode == 0, err(result)
    assert (tmp_path / "src" / "train.py").stat().st_ino == inode
    assert FIXED in (tmp_path / "other_name.txt").read_text()
    assert sorted(p.name for p in (tmp_path / "src").iterdir()) == ["train.py"]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root may give a file away")
def test_fix_keeps_owner_and_group(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(HAZARD)
    os.chown(path, 4321, 8765)
    path.chmod(0o640)
    result = odelint("check", "--no-cache", "--fix", "-q", "train.py", cwd=tmp_path)
    assert result.returncode == 0, err(result)
    status = path.stat()
    assert (status.st_uid, status.st_gid, status.st_mode & 0o777) == (4321, 8765, 0o640)
    assert FIXED in path.read_text()


def test_an_interrupted_in_place_write_is_undone_by_the_next_run(tmp_path: Path) -> None:
    """A SIGKILL between journal and the end of an in-place write: the next run restores."""
    from odelint.files import fileio

    path = tmp_path / "train.py"
    path.write_text(HAZARD)
    journal = tmp_path / ".odelint-999999999-0000abcd.tmp"  # no such process: stale
    import hashlib

    header = b"odelint-journal " + hashlib.sha256(b"new text").hexdigest().encode() + b" " + \
        os.fsencode("train.py").hex().encode() + b"\n"
    journal.write_bytes(header + HAZARD.encode())
    path.write_bytes(b"new te")  # half written
    fileio.remove_stale_temporaries(str(tmp_path))
    assert path.read_text() == HAZARD and not journal.exists()


# ---- 4: a read-only file keeps its findings


def test_a_read_only_file_under_fix_still_reports_its_findings(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(HAZARD)
    path.chmod(0o444)
    result = odelint("check", "--no-cache", "--fix", "train.py", cwd=tmp_path)
    assert result.returncode == 2
    assert codes(result, "train.py") == ["ODL001", "ODL201"]
    lines = [line for line in err(result).splitlines() if line]
    assert lines == ["odelint: error: train.py: file is read-only; not fixed"]
    assert path.read_text() == HAZARD


# ---- 5: no temporary files left behind


def test_stale_temporaries_of_killed_runs_are_removed_by_the_next_run(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(HAZARD)
    (tmp_path / ".odelint-999999999-0badf00d.tmp").write_text("half")  # a dead writer's
    (tmp_path / ".odelint-k2j3_x9q.tmp").write_text("half")  # an older odelint's mkstemp name
    alive = tmp_path / f".odelint-{os.getpid()}-0000beef.tmp"  # a writer still at work
    alive.write_text("half")
    odelint("check", "--no-cache", "-q", ".", cwd=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["train.py", alive.name])


def test_a_sigterm_during_a_write_leaves_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import signal

    from odelint.files import fileio

    path = tmp_path / "train.py"
    path.write_text(HAZARD)
    real_fsync = os.fsync

    def killed(descriptor: int) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        real_fsync(descriptor)

    monkeypatch.setattr(fileio.os, "fsync", killed)
    with pytest.raises(KeyboardInterrupt):
        fileio.atomic_write(str(path), b"x = 1\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"] and path.read_text() == HAZARD


def test_a_cache_that_cannot_be_replaced_leaves_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from odelint.analysis import project
    from odelint.files import cache as result_cache

    def refused(source: str, target: str) -> None:
        raise PermissionError(1, "Operation not permitted", target)

    monkeypatch.setattr(result_cache.os, "replace", refused)
    for run in range(3):
        cache = result_cache.Cache(str(tmp_path / "cache"), project.stamp)
        cache.put(f"key{run}", ["ODL201"], ["ODL201"], [])
        cache.save()
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [".gitignore"]


# ---- 6: a file name that is not valid UTF-8


@pytest.mark.parametrize("cache", [True, False], ids=["cache", "no-cache"])
@pytest.mark.parametrize("format", ["text", "json", "sarif", "github"])
def test_a_name_that_is_not_utf8_is_linted_and_reported(tmp_path: Path, cache: bool, format: str) -> None:
    folder = os.fsencode(tmp_path)
    with open(os.path.join(folder, b"bad\xff.py"), "w") as handle:
        handle.write(HAZARD)
    (tmp_path / "good.py").write_text(HAZARD)
    args = ([] if cache else ["--no-cache"]) + ["--format", format, "."]
    for _ in range(2):  # cold, then warm
        result = odelint("check", *args, cwd=tmp_path)
        assert result.returncode == 1, err(result)
        assert "good.py" in out(result) and "bad\\xff.py" in out(result).replace("\\\\", "\\")


# ---- 8 and 12: FIFOs are never waited on; a pipe named on the line is read once


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_in_a_folder_is_skipped_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(HAZARD)
    os.mkfifo(tmp_path / "fifo.py")
    result = odelint("check", "--no-cache", "-q", ".", cwd=tmp_path, timeout=60)
    assert result.returncode == 1 and codes(result, "train.py") == ["ODL201"]
    assert "odelint: warning: fifo.py: a FIFO, not a regular file; skipped" in err(result)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_in_place_of_the_cache_file_is_left_alone(tmp_path: Path) -> None:
    from odelint import __version__

    (tmp_path / "train.py").write_text(HAZARD)
    (tmp_path / ".odelint_cache").mkdir()
    os.mkfifo(tmp_path / ".odelint_cache" / f"results-{__version__}.json")
    result = odelint("check", "-q", ".", cwd=tmp_path, timeout=60)
    assert result.returncode == 1 and codes(result, "train.py") == ["ODL201"]
    assert "a FIFO, not a regular file; the cache is not used" in err(result)


@pytest.mark.skipif(not os.path.exists("/dev/fd"), reason="needs /dev/fd")
@pytest.mark.parametrize("cache", [True, False], ids=["cache", "no-cache"])
def test_a_pipe_named_on_the_command_line_is_read_once(tmp_path: Path, cache: bool) -> None:
    (tmp_path / "t.py").write_text(HAZARD)
    flags = "" if cache else "--no-cache"
    done = subprocess.run(["bash", "-c", f"{sys.executable} -m odelint check -q {flags} <(cat t.py)"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert " ODL201 " in done.stdout and "All checks passed" not in done.stdout


# ---- 9: a cache entry of the right shape but the wrong types is a miss


@pytest.mark.parametrize("damage", [
    {"used": "yesterday"},
    {"relevant": [1, 2]},
    {"depends": {"x.py": "stamp"}},
    {"depends": 10**6},
    {"results": {"": [{"code": 201}]}},
    {"results": {"": ["ODL201"]}},
    {"results": {"": [{"code": "ODL201", "name": "n", "message": "m", "line": "5", "column": 1, "end_line": 5,
                       "end_column": 2, "fixable": True, "fix_safety": "perhaps", "fix_description": None,
                       "cell": None}]}},
])
def test_a_cache_entry_with_wrong_types_is_a_miss(tmp_path: Path, damage: dict) -> None:
    import json

    from odelint import __version__

    (tmp_path / "train.py").write_text(HAZARD)
    assert odelint("check", "-q", ".", cwd=tmp_path).returncode == 1
    cache_file = tmp_path / ".odelint_cache" / f"results-{__version__}.json"
    stored = json.loads(cache_file.read_text())
    assert stored["entries"]
    for entry in stored["entries"].values():
        if "results" in damage:
            entry["results"] = {key: damage["results"][""] for key in entry["results"]}
        else:
            entry.update(damage)
    cache_file.write_text(json.dumps(stored))
    for _ in range(2):
        result = odelint("check", "-q", ".", cwd=tmp_path)
        assert result.returncode == 1 and codes(result, "train.py") == ["ODL201"], err(result)


# ---- 16: an empty selection says so; a symlink and its target are one file


def test_an_empty_select_is_a_usage_error_not_a_clean_run(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("def f(:\n")
    result = odelint("check", "--no-cache", "--select", "", ".", cwd=tmp_path)
    assert result.returncode == 2 and "All checks passed" not in out(result)
    assert "--select '' selects no rule" in err(result)


def test_a_symlink_and_its_target_are_fixed_once(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(HAZARD)
    (tmp_path / "alias.py").symlink_to("train.py")
    result = odelint("check", "--no-cache", "--fix", "-q", ".", cwd=tmp_path)
    assert result.returncode == 0, err(result)
    assert "changed on disk" not in err(result) and FIXED in (tmp_path / "train.py").read_text()
    assert (tmp_path / "alias.py").is_symlink()


# ---- 7: one worker dying costs one file; one file's cost is capped


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the test's stand-in worker is inherited by fork")
def test_a_worker_that_dies_costs_only_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import signal

    from odelint.engine import runner

    paths = []
    for number in range(12):
        path = tmp_path / f"f{number:02}.py"
        path.write_text(HAZARD)
        paths.append(str(path))
    real = runner._process

    def dying(task: runner.Task, outcome: runner.Outcome) -> runner.Outcome:
        if task.path.endswith("f05.py"):
            os.kill(os.getpid(), signal.SIGKILL)  # what the kernel's OOM killer does
        return real(task, outcome)

    monkeypatch.setattr(runner, "_process", dying)
    monkeypatch.setattr(runner, "PARALLEL_FROM_BYTES", 0)  # workers even for a dozen small files
    tasks = [runner.Task(path, None, frozenset({"ODL201"}), "python", runner.CHECK, False) for path in paths]
    outcomes = runner._run_tasks(tasks, 2)
    assert [outcome.path for outcome in outcomes] == paths
    for outcome in outcomes:
        if outcome.path.endswith("f05.py"):
            assert outcome.error == runner.WORKER_DIED
        else:
            assert outcome.error is None and [f["code"] for f in outcome.findings] == ["ODL201"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the test's stand-in worker is inherited by fork")
def test_a_worker_that_raises_costs_only_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from odelint.engine import runner

    paths = []
    for number in range(12):
        (tmp_path / f"f{number:02}.py").write_text(HAZARD)
        paths.append(str(tmp_path / f"f{number:02}.py"))
    real = runner._process

    def raising(task: runner.Task, outcome: runner.Outcome) -> runner.Outcome:
        if task.path.endswith("f07.py"):
            raise MemoryError("no room")
        return real(task, outcome)

    monkeypatch.setattr(runner, "_process", raising)
    monkeypatch.setattr(runner, "PARALLEL_FROM_BYTES", 0)  # workers even for a dozen small files
    tasks = [runner.Task(path, None, frozenset({"ODL201"}), "python", runner.CHECK, False) for path in paths]
    outcomes = runner._run_tasks(tasks, 2)
    assert [outcome.error for outcome in outcomes].count(None) == 11
    assert outcomes[7].error == "internal error: MemoryError: no room"


def test_a_file_that_takes_too_long_is_stopped_and_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from odelint.engine import runner

    (tmp_path / "slow.py").write_text(HAZARD)

    def slow(task: runner.Task, outcome: runner.Outcome) -> runner.Outcome:
        time.sleep(30)
        return outcome

    monkeypatch.setattr(runner, "_process", slow)
    started = time.monotonic()
    outcome = runner.process(runner.Task(str(tmp_path / "slow.py"), None, frozenset(), "python", runner.CHECK, False,
                                         max_seconds=0.5))
    assert time.monotonic() - started < 10
    assert outcome.error is not None and "took longer than 0.5 s" in outcome.error


def test_a_file_over_the_size_limit_is_one_line_and_the_rest_is_linted(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text("import optax\nx = [" + "1, " * 800_000 + "]\n")
    (tmp_path / "train.py").write_text(HAZARD)
    result = odelint("check", "--no-cache", "-q", ".", cwd=tmp_path)
    assert result.returncode == 2 and codes(result, "train.py") == ["ODL201"]
    assert codes(result, "big.py") == ["ODL001"] and "over the limit of 2,000,000" in out(result)
    result = odelint("check", "--no-cache", "-q", "--select", "ODL000", ".", cwd=tmp_path)
    assert result.returncode == 0, "CPython's syntax check is not capped"
    result = odelint("check", "--no-cache", "-q", "--max-file-size", "0.0001", "train.py", cwd=tmp_path)
    assert result.returncode == 2 and codes(result, "train.py") == ["ODL001"]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root may give a file away")
def test_a_file_whose_owner_cannot_be_given_back_is_written_in_place(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from odelint.files import fileio

    path = tmp_path / "train.py"
    path.write_text(HAZARD)
    os.chown(path, 4321, 8765)
    inode = path.stat().st_ino

    def refused(descriptor: int, uid: int, gid: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(fileio.os, "fchown", refused)  # as for a user fixing a group-writable file
    fileio.atomic_write(str(path), b"x = 1\n")
    status = path.stat()
    assert (status.st_ino, status.st_uid, status.st_gid) == (inode, 4321, 8765)
    assert path.read_bytes() == b"x = 1\n" and sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]
