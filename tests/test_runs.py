"""Whole-run records (odelint.files.runs): a `check` over an unchanged project answers from its
record, and any change to what the run looked at (a file, a folder's names, a setting, an
ignore file, a project file a result read, the command line) sends it back to a full run,
whose answer is that of a run without any cache."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from odelint.api.registry import known_codes
from odelint.engine import runner
from odelint.faces import cli
from odelint.files import observed, runs
from odelint.files.cache import results_file

HAZARD = ("import equinox as eqx\nimport optax\n\nmodel = eqx.nn.MLP(2, 2, 8, 1, key=None)\n"
          "opt_state = optax.adam(1e-3).init(model)\n")
FILTERED = ("import equinox as eqx\nimport optax\n\nmodel = eqx.nn.MLP(2, 2, 8, 1, key=None)\n"
            "opt_state = optax.adam(1e-3).init(eqx.filter(model, eqx.is_array))\n")
PLAIN = "import jax.numpy as jnp\n\n\ndef loss(x):\n    return jnp.sum(x ** 2)\n"
MODEL = "import equinox as eqx\nimport jax\n\n\nclass Net(eqx.Module):\n    w: jax.Array\n    mlp: eqx.nn.MLP\n"
ARRAYS_ONLY = "import equinox as eqx\nimport jax\n\n\nclass Net(eqx.Module):\n    w: jax.Array\n"
USES_MODEL = ("import optax\nfrom model import Net\n\nmodel = Net(None)\nopt_state = optax.adam(1e-3).init(model)\n")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project in its own folder (below a parent that holds no settings), run from inside it.
    Statuses count as settled at once: every change below gives the file a new size or time."""
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "train.py").write_text(HAZARD)
    (root / "pkg" / "plain.py").write_text(PLAIN)
    (root / "pkg" / "other.py").write_text(HAZARD)
    monkeypatch.chdir(root)
    monkeypatch.setattr(runs, "RACY_NS", 0)
    (root / ".odelint_cache").mkdir()
    Path(results_file(str(root / ".odelint_cache"))).write_text("{}")  # a run has filled the cache
    return root


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = cli.main(["check", *args])
    return code, capsys.readouterr().out


def replayed(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str]:
    """A run that must be answered from its record: linting (or walking) is an error."""
    def no_run(*_args, **_kwargs):
        raise AssertionError("the run was not answered from its record")

    with monkeypatch.context() as patched:
        patched.setattr(runner, "run", no_run)
        return run(capsys, *args)


def records(root: Path) -> list[Path]:
    return sorted((root / ".odelint_cache").glob("run-*.json"))


def later(path: Path, text: str) -> None:
    """Write `text` with a modification time a second before the old one, so that the status
    differs even within one tick of the file system's clock (and is not in the future)."""
    before = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(before - 10**9, before - 10**9))


def test_an_unchanged_project_is_answered_from_its_record(project: Path, capsys, monkeypatch) -> None:
    first = run(capsys, ".")
    assert first[0] == 1 and "train.py:5" in first[1] and "other.py:5" in first[1]
    assert len(records(project)) == 1
    assert replayed(capsys, monkeypatch, ".") == first
    assert replayed(capsys, monkeypatch, ".") == first


@pytest.mark.parametrize("args", [("--format", "json"), ("--statistics",), ("--exit-zero", "-q")])
def test_a_replayed_answer_is_reported_as_the_run_it_replays(project: Path, capsys, monkeypatch,
                                                            args: tuple[str, ...]) -> None:
    first = run(capsys, *args, ".")
    assert replayed(capsys, monkeypatch, *args, ".") == first
    if "json" in args:
        assert sorted(finding["code"] for finding in json.loads(first[1])) == ["ODL201", "ODL201"]


def _edit_linted(root: Path) -> None:
    later(root / "train.py", FILTERED)


def _add_file(root: Path) -> None:
    (root / "pkg" / "new.py").write_text(HAZARD)


def _remove_file(root: Path) -> None:
    (root / "pkg" / "other.py").unlink()


def _rename_file(root: Path) -> None:
    (root / "pkg" / "other.py").rename(root / "pkg" / "renamed.py")


def _settings_here(root: Path) -> None:
    (root / "pyproject.toml").write_text('[tool.odelint]\nextend-exclude = ["pkg/other.py"]\n')


def _settings_above(root: Path) -> None:
    (root.parent / "pyproject.toml").write_text('[tool.odelint]\nignore = ["ODL201"]\n')


def _settings_edited(root: Path) -> None:
    later(root / "pyproject.toml", '[tool.odelint]\nextend-exclude = ["train.py"]\n')


def _ignored_by_git(root: Path) -> None:
    (root / ".git").mkdir()
    (root / ".gitignore").write_text("pkg/other.py\n")


def _ignore_edited(root: Path) -> None:
    later(root / ".gitignore", "train.py\n")


def _repository_above(root: Path) -> None:
    """A .git above the project makes its parent the repository root, whose .gitignore applies."""
    (root.parent / ".gitignore").write_text("project/train.py\n")
    (root.parent / ".git").mkdir()


CHANGES: dict[str, tuple[Callable[[Path], None], ...]] = {
    "a linted file edited": (_edit_linted,),
    "a file added": (_add_file,),
    "a file removed": (_remove_file,),
    "a file renamed": (_rename_file,),
    "settings added in the project": (_settings_here,),
    "settings added above the project": (_settings_above,),
    "settings edited": (_settings_here, _settings_edited),
    "an ignore file in a repository": (_ignored_by_git,),
    "an ignore file edited": (_ignored_by_git, _ignore_edited),
    "a repository above the project": (_repository_above,),
}


@pytest.mark.parametrize("changes", CHANGES.values(), ids=CHANGES.keys())
def test_a_change_to_what_the_run_looked_at_is_answered_as_a_run_without_cache(
        project: Path, capsys, monkeypatch, changes: tuple[Callable[[Path], None], ...]) -> None:
    for change in changes:
        run(capsys, ".")
        assert replayed(capsys, monkeypatch, ".") == run(capsys, ".")
        change(project)
        warm = run(capsys, ".")
        assert warm == run(capsys, "--no-cache", "."), change.__name__
    # and the new answer is recorded in its turn
    assert replayed(capsys, monkeypatch, ".") == warm


def test_a_change_to_a_project_file_a_result_read_is_not_answered_from_the_record(
        project: Path, capsys, monkeypatch) -> None:
    """model.py is not linted (only train.py is named), but ODL201's finding in train.py comes
    from what model.py declares."""
    (project / "model.py").write_text(MODEL)
    (project / "train.py").write_text(USES_MODEL)
    first = run(capsys, "train.py")
    assert "train.py:5" in first[1] and "ODL201" in first[1]
    assert replayed(capsys, monkeypatch, "train.py") == first
    later(project / "model.py", ARRAYS_ONLY)
    warm = run(capsys, "train.py")
    assert warm == run(capsys, "--no-cache", "train.py") and "ODL201" not in warm[1]


def test_another_command_line_has_its_own_record(project: Path, capsys, monkeypatch) -> None:
    every = run(capsys, ".")
    selected = run(capsys, "--select", "ODL202", ".")
    assert selected != every and len(records(project)) == 2
    assert replayed(capsys, monkeypatch, "--select", "ODL202", ".") == selected
    assert replayed(capsys, monkeypatch, ".") == every


def test_a_run_with_no_cache_file_yet_is_neither_watched_nor_recorded(project: Path, capsys, monkeypatch) -> None:
    """It lints the project: the audit hook would cost it 4% (every `id()` the model calls)."""
    Path(results_file(str(project / ".odelint_cache"))).unlink()

    def no_watching() -> None:
        raise AssertionError("watched")

    monkeypatch.setattr(observed, "start", no_watching)
    first = run(capsys, ".")
    assert records(project) == [] and Path(results_file(str(project / ".odelint_cache"))).exists()
    monkeypatch.undo()
    monkeypatch.chdir(project)
    monkeypatch.setattr(runs, "RACY_NS", 0)
    assert run(capsys, ".") == first and len(records(project)) == 1


def test_a_run_with_an_error_is_not_recorded(project: Path, capsys) -> None:
    code, out = run(capsys, ".", "missing.py")
    assert code == 2 and "missing.py:1:1: ODL001" in out
    assert records(project) == []


@pytest.mark.parametrize("args", [("--no-cache", "."), ("--diff", "."), ("--fix", "pkg/plain.py")])
def test_only_a_check_with_the_cache_is_recorded(project: Path, capsys, args: tuple[str, ...]) -> None:
    run(capsys, *args)
    assert records(project) == []


def test_a_run_over_files_changed_just_before_it_is_not_recorded(project: Path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(runs, "RACY_NS", 2 * 10**9)  # as it is: the files were written just now
    run(capsys, ".")
    assert records(project) == []


def _finding_without_its_line(text: str) -> str:
    stored = json.loads(text)
    del stored["findings"][0]["line"]
    return json.dumps(stored)


@pytest.mark.parametrize("damage", [lambda _: "not json", lambda _: '{"format": 1}', lambda _: "[]",
                                    _finding_without_its_line])
def test_a_damaged_record_is_a_full_run(project: Path, capsys, damage: Callable[[str], str]) -> None:
    first = run(capsys, ".")
    (record,) = records(project)
    record.write_text(damage(record.read_text()))
    assert run(capsys, ".") == first
    assert json.loads(record.read_text())["format"] == runs.FORMAT  # recorded anew


def test_a_fifo_in_the_place_of_a_record_is_not_waited_on(project: Path, capsys) -> None:
    first = run(capsys, ".")
    (record,) = records(project)
    record.unlink()
    os.mkfifo(record)
    assert run(capsys, ".") == first


def test_a_record_is_used_for_a_day_at_most(project: Path, capsys, monkeypatch) -> None:
    first = run(capsys, ".")
    (record,) = records(project)
    stored = json.loads(record.read_text())
    stored["made"] -= 2 * 24 * 3600
    record.write_text(json.dumps(stored))
    linted: list[str] = []
    process = runner.run

    def counting(*args, **kwargs):
        linted.append("run")
        return process(*args, **kwargs)

    monkeypatch.setattr(runner, "run", counting)
    assert run(capsys, ".") == first and linted == ["run"]


def test_records_are_kept_for_the_newest_command_lines(project: Path, capsys) -> None:
    for code in known_codes()[:runs.KEPT + 3]:
        run(capsys, "--select", code, ".")
    assert len(records(project)) == runs.KEPT


def test_the_key_changes_with_odelints_own_modules_but_not_the_rules(tmp_path: Path, monkeypatch) -> None:
    """A checkout being worked on keeps its version: a record made by other discovery code is
    not replayed. (The rules are in `rules_digest`.)"""
    package = tmp_path / "odelint"
    for relative in ("__init__.py", "files/__init__.py", "files/runs.py", "files/discover.py", "rules/__init__.py",
                     "rules/arrays/__init__.py", "rules/arrays/rule.py", "fixtures/ODL201/hazard.py"):
        (package / relative).parent.mkdir(parents=True, exist_ok=True)
        (package / relative).write_text("x = 1\n")
    monkeypatch.setattr(runs, "__file__", str(package / "files" / "runs.py"))
    before = runs.key([("paths", ["."])], "/p")
    later(package / "rules" / "arrays" / "rule.py", "x = 2\n")
    later(package / "fixtures" / "ODL201" / "hazard.py", "x = 2\n")  # a program `confirm` runs, not a module
    assert runs.key([("paths", ["."])], "/p") == before
    later(package / "files" / "discover.py", "x = 2\n")
    assert runs.key([("paths", ["."])], "/p") != before


def test_the_observer_sees_files_read_folders_listed_and_paths_asked(tmp_path: Path) -> None:
    (tmp_path / "read.txt").write_text("x")
    observation = observed.start()
    try:
        (tmp_path / "read.txt").read_text()
        (tmp_path / "written.txt").write_text("y")
        os.listdir(tmp_path)
        list(os.scandir(tmp_path))
        assert observed.isfile(str(tmp_path / "pyproject.toml")) is False
        assert observed.exists(str(tmp_path / "read.txt")) is True
        descriptor = os.open(tmp_path, os.O_RDONLY)
        try:
            os.listdir(descriptor)
        finally:
            os.close(descriptor)
    finally:
        observed.stop()
    (tmp_path / "after.txt").write_text("z")
    (tmp_path / "after.txt").read_text()
    assert observation.opened == {str(tmp_path / "read.txt"), str(tmp_path)}
    assert observation.listed == {str(tmp_path)}
    assert observation.looked_up == {(str(tmp_path / "pyproject.toml"), "isfile"): False,
                                     (str(tmp_path / "read.txt"), "exists"): True}
    assert not observation.complete  # a folder listed by its descriptor: no path to stamp
