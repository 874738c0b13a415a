"""What a warm run does without linting, made cheap without changing its answers: installed
versions read from `.dist-info` as importlib.metadata reads them, dependency files parsed
only when they may pin, files read with `os` calls and not at all when their status is what
the cache recorded, each project file stamped once per run and absent ones answered by their
folder's listing, and a walk outside the configuration's root that matches `exclude` by name."""

from __future__ import annotations

import json
import os
import time
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
from odelint.files import cache as result_cache
from odelint.files import fileio, versions
from odelint.files.config import ConfigResolver, Overrides
from odelint.files.discover import discover
from odelint.files.fileio import NotRegular, read_regular
from odelint.files.verdicts import Memo
from packaging.version import Version


@pytest.mark.parametrize("name", [*versions.PACKAGES, "libcst", "packaging", "pytest", "Flake8", "typing-extensions",
                                  "typing_extensions", "no-such-distribution"])
def test_installed_versions_are_importlib_metadatas(name: str) -> None:
    try:
        expected: str | None = metadata.version(name)
    except metadata.PackageNotFoundError:
        expected = None
    assert versions._dist_info(name) == expected


def test_an_egg_info_or_an_archive_on_the_path_leaves_it_to_importlib_metadata(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "Optax-0.1.0.egg-info").mkdir()
    monkeypatch.setattr("sys.path", [str(tmp_path)])
    assert versions._dist_info("optax") == versions._UNSURE
    archive = tmp_path / "bundle.zip"
    archive.write_bytes(b"")
    monkeypatch.setattr("sys.path", [str(archive)])
    assert versions._dist_info("optax") == versions._UNSURE


def test_a_dist_info_answers_with_its_metadata(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    info = tmp_path / "Equinox-0.11.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: equinox\nVersion: 0.11.0\n\nVersion: 9\n")
    monkeypatch.setattr("sys.path", [str(tmp_path / "missing"), str(tmp_path)])
    assert versions.installed_text("equinox") == "0.11.0"
    assert versions.installed_text("diffrax") is None


def test_pins_are_read_only_from_files_that_may_hold_one(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("numpy==1.26.0\njax>=0.4\n")  # parsed: no pin of ours
    (tmp_path / "requirements-dev.txt").write_text("JAX[cuda12] == 0.4.33  # pinned\n")
    (tmp_path / "pyproject.toml").write_text('[project]\ndependencies = ["equinox>=0.11", "optax"]\n')
    assert not versions._may_pin('[project]\ndependencies = ["equinox>=0.11", "optax"]\n')
    assert versions._may_pin("JAX[cuda12] == 0.4.33")
    assert versions.pinned(str(tmp_path)) == {"jax": Version("0.4.33")}


@pytest.mark.parametrize(("filename", "text"), [
    ("requirements.txt", "jax==0.4.33\n"),
    ("requirements.txt", "JAX[cuda12] == 0.4.33  # pinned\n"),
    ("requirements.txt", "jax (==0.4.33)\n"),
    ("requirements.txt", "jax [ cuda12 ] \\\n    ==0.4.33\n"),
    ("constraints.txt", "jax===0.4.33\n"),
    ("pyproject.toml", '[project]\ndependencies = ["Jax[cpu]==0.4.33", "ruff==0.6.9"]\n'),
    ("setup.cfg", "[options]\ninstall_requires =\n    jax == 0.4.33\n"),
    ("environment.yml", "dependencies:\n  - conda-forge::jax==0.4.33=cpu\n"),
])
def test_every_spelling_of_a_pin_is_parsed_and_found(tmp_path: Path, filename: str, text: str) -> None:
    (tmp_path / filename).write_text(text)
    assert versions._may_pin(text)
    assert versions.pinned(str(tmp_path)) == {"jax": Version("0.4.33")}


@pytest.mark.parametrize("text", [
    '[project]\ndependencies = ["jax>=0.4.36", "optax"]\n[dependency-groups]\ndev = ["ruff==0.6.9"]\n',
    "jax>=0.4\nnumpy==1.26.0\nequinox  # == is not a pin here\n",
    "jax=0.4.33\n",  # conda's fuzzy `=`: any 0.4.33.x, not a pin
])
def test_a_file_that_names_a_package_and_pins_something_else_is_not_parsed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    from odelint.api import dependency_files

    (tmp_path / "pyproject.toml").write_text(text)

    def parsed(filename: str, text: str) -> list[object]:
        raise AssertionError(f"{filename} was parsed")

    monkeypatch.setattr(dependency_files, "read", parsed)
    assert versions.pinned(str(tmp_path)) == {}


def test_a_pyproject_that_never_names_odelint_is_not_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tomllib

    from odelint.files.config import ConfigError, read_config_file

    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\ndependencies = ["jax>=0.4"]\n[tool.ruff\n')
    (tmp_path / "pyproject.toml").write_text('[tool.odelint]\nignore = ["ODL704"]\n')
    parsed: list[str] = []
    loads = tomllib.loads
    monkeypatch.setattr(tomllib, "loads", lambda text: parsed.append(text) or loads(text))
    settings = ConfigResolver(Overrides(), ["ODL704", "ODL705"]).for_path(str(project / "src"))
    assert settings.path == str(tmp_path / "pyproject.toml"), "the search goes on upwards, as before"
    assert parsed == ['[tool.odelint]\nignore = ["ODL704"]\n']
    (project / "pyproject.toml").write_text("[tool.odelint\nselect = []\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        read_config_file(str(project / "pyproject.toml"), ["ODL704"])


def test_target_versions_are_parsed_only_where_a_rule_reads_one(monkeypatch: pytest.MonkeyPatch) -> None:
    import pickle

    from packaging import version as packaging_version

    parsed: list[str] = []

    class Counted(packaging_version.Version):
        def __init__(self, text: str) -> None:
            parsed.append(text)
            super().__init__(text)

    monkeypatch.setattr(packaging_version, "Version", Counted)
    targets = versions.Targets({"jax": "0.4.33", "optax": "not a version", "diffrax": None})
    assert versions.describe(targets) == "diffrax=None,jax=0.4.33,optax=not a version" and parsed == []
    copy = pickle.loads(pickle.dumps(targets))  # as a worker gets it
    assert {name: str(value) if value else value for name, value in copy.items()} == {
        "jax": "0.4.33", "optax": None, "diffrax": None}
    assert isinstance(copy.get("jax"), Counted) and sorted(parsed) == ["0.4.33", "not a version"]
    with pytest.raises(TypeError):
        targets["jax"] = Version("1")  # type: ignore[index]


@pytest.mark.parametrize("select", [("ODL201",), ("ODL201", "ODL901")])  # without and with a rule reading versions
def test_workers_get_the_target_versions_of_their_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, select: tuple[str, ...]) -> None:
    from odelint.api.registry import known_codes
    from odelint.engine import runner

    monkeypatch.setattr(runner, "PARALLEL_FROM_BYTES", 0)  # a pool, whatever the size: tasks are pickled
    for number in range(8):
        (tmp_path / f"train{number}.py").write_text(
            "import equinox as eqx\nimport jax\nimport optax\n\nmodel = eqx.nn.MLP(2, 2, 8, 1, key=None)\n"
            "opt_state = optax.adam(1e-3).init(model)\nleaves = jax.tree_map(abs, [1.0])\n")
    resolver = ConfigResolver(Overrides(isolated=True, select=select), known_codes(), str(tmp_path))
    result = runner.run([str(tmp_path)], resolver, runner.Options(jobs=2, use_cache=False))
    assert result.errors == [] and result.internal_errors == []
    assert sorted({finding.code for finding in result.findings}) == sorted(select)
    assert len(result.findings) == 8 * len(select)


def test_read_regular_reads_everything_or_up_to_one_byte_past_a_limit(tmp_path: Path) -> None:
    path = tmp_path / "big.py"
    data = os.urandom(3 * (1 << 20) + 17)
    path.write_bytes(data)
    assert read_regular(str(path)) == data
    assert read_regular(str(path), limit=100) == data[:101]
    (tmp_path / "empty.py").write_bytes(b"")
    assert read_regular(str(tmp_path / "empty.py")) == b""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_read_regular_refuses_a_fifo_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    with pytest.raises(NotRegular):
        read_regular(str(fifo))


def test_each_path_is_stamped_once_per_run_and_absent_ones_by_their_folders_listing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    listed: list[str] = []

    def stamp(path: str) -> list[int] | None:
        asked.append(path)
        return [1, 2]

    def listdir(folder: str) -> list[str]:
        listed.append(folder)
        return listing(folder)

    listing = os.listdir
    monkeypatch.setattr(result_cache.os, "listdir", listdir)
    cache = result_cache.Cache(str(tmp_path / "cache"), stamp)
    for number in range(3):
        cache.put(f"key{number}", ["ODL101"], {"ODL101"}, [],
                  {"/p/pyproject.toml": [1, 2], f"/p/m{number}.py": [1, 2], f"{tmp_path}/gone{number}.py": None,
                   f"{tmp_path}/pkg/sub/m{number}.py": None})
    assert all(cache.get(f"key{number}", frozenset({"ODL101", "ODL201"})) == [] for number in range(3))
    assert sorted(asked) == ["/p/m0.py", "/p/m1.py", "/p/m2.py", "/p/pyproject.toml"]
    # tmp_path and the folders above it once each; pkg and pkg/sub never: tmp_path lacks pkg
    assert str(tmp_path) in listed and len(listed) == len(set(listed))
    assert not any(folder.startswith(str(tmp_path / "pkg")) for folder in listed)


@pytest.mark.parametrize("created", ["gone.py", "pkg/__init__.py", "pkg/sub/m.py"])
def test_a_path_recorded_absent_that_now_exists_is_a_miss(tmp_path: Path, created: str) -> None:
    depends: dict[str, list[int] | None] = {str(tmp_path / name): None
                                            for name in ("gone.py", "pkg/__init__.py", "pkg/sub/m.py")}
    cache = result_cache.Cache(str(tmp_path / "cache"), lambda path: None)
    cache.put("k", ["ODL101"], {"ODL101"}, [], depends)
    cache.save()
    assert result_cache.Cache(str(tmp_path / "cache"), lambda path: None).get("k", {"ODL101"}) == []
    (tmp_path / created).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / created).write_text("x = 1\n")
    assert result_cache.Cache(str(tmp_path / "cache"), lambda path: None).get("k", {"ODL101"}) is None


def _status(ctime: int, mtime: int = 5, size: int = 10, inode: int = 7) -> os.stat_result:
    return cast(os.stat_result, SimpleNamespace(st_ctime_ns=ctime, st_mtime_ns=mtime, st_size=size, st_ino=inode))


def test_a_files_digest_answers_only_for_the_status_it_was_recorded_with(tmp_path: Path) -> None:
    now = time.time_ns()
    old = now - 60 * 10**9
    train = str(tmp_path / "train.py")  # files are recorded by their absolute paths
    cache = result_cache.Cache(str(tmp_path / "cache"), lambda path: None)
    cache.record(train, _status(old), "abc")
    cache.record(str(tmp_path / "racy.py"), _status(now), "def")  # changed just now: may change again unseen
    cache.record(str(tmp_path / "touched.py"), _status(old, mtime=now), "ghi")  # as Windows reports a modified file
    cache.save()
    cache = result_cache.Cache(str(tmp_path / "cache"), lambda path: None)
    assert cache.digest(train, _status(old)) == "abc"
    assert cache.digest(str(tmp_path / "racy.py"), _status(now)) is None
    assert cache.digest(str(tmp_path / "touched.py"), _status(old, mtime=now)) is None
    for changed in (_status(old + 1), _status(old, mtime=6), _status(old, size=11), _status(old, inode=8)):
        assert cache.digest(train, changed) is None


def test_a_warm_run_reads_no_file_whose_status_is_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from odelint.api.registry import known_codes
    from odelint.engine import runner

    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text("import optax\n\nopt = optax.adam(1e-3)\n")
    monkeypatch.setattr(fileio, "RACY_NS", -10**15)  # files written just now count as settled
    read: list[str] = []
    reading = runner._read

    def recording(path: str, regular: bool = True) -> bytes:
        read.append(os.path.basename(path))
        return reading(path, regular)

    monkeypatch.setattr(runner, "_read", recording)

    def run() -> list[str]:
        resolver = ConfigResolver(Overrides(), known_codes(), cwd=str(tmp_path))
        result = runner.run([str(tmp_path)], resolver, runner.Options(jobs=1))
        return [f"{os.path.basename(f.path)}:{f.code}" for f in result.findings]

    cold = run()
    assert sorted(read) == ["a.py", "a.py", "b.py", "b.py"]  # hashed here, linted in the task
    read.clear()
    assert run() == cold and read == []
    (tmp_path / "b.py").write_text("import optax\n\nopt = optax.sgd(1e-3)\n")
    assert run() == cold and sorted(read) == ["b.py", "b.py"]


def test_a_warm_run_checks_absent_modules_against_the_folders_its_walk_listed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A result holds while the modules its file looked up in vain are still absent: the
    folder walk has just listed those folders, so they are not listed again; a module created
    since is seen all the same."""
    from odelint.api.registry import known_codes
    from odelint.engine import runner
    from odelint.files import depends

    package = tmp_path / "pkg"
    package.mkdir()
    (package / "train.py").write_text("import optax\nfrom pkg.helpers import schedule\n\nopt = optax.adam(schedule)\n")
    monkeypatch.setattr(fileio, "RACY_NS", -10**15)
    listed: list[str] = []
    listing = os.listdir

    def recording(path: str = ".") -> list[str]:
        listed.append(path)
        return listing(path)

    def run() -> tuple[list[str], int]:
        resolver = ConfigResolver(Overrides(), known_codes(), cwd=str(tmp_path))
        result = runner.run([str(tmp_path)], resolver, runner.Options(jobs=1))
        return [f"{os.path.basename(f.path)}:{f.code}" for f in result.findings], result.files

    cold, _ = run()
    stored = json.loads(next((tmp_path / result_cache.CACHE_DIR).glob("results-*.json")).read_text())
    assert [str(package / "setup.py"), None] in stored["paths"]  # a project root's marker, not there
    monkeypatch.setattr(depends.os, "listdir", recording)
    linted: list[str] = []
    linting = runner._run_tasks
    monkeypatch.setattr(runner, "_run_tasks", lambda tasks, *rest: linted.extend(t.path for t in tasks) or linting(
        tasks, *rest))
    assert run()[0] == cold and linted == []
    assert not {str(tmp_path), str(package)} & set(listed)
    (package / "setup.py").write_text("from setuptools import setup\n\nsetup()\n")  # the root moves here
    run()
    assert [os.path.relpath(path, tmp_path) for path in linted] == ["pkg/setup.py", "pkg/train.py"]


def test_results_that_depend_on_the_same_files_share_one_group(tmp_path: Path) -> None:
    depends: dict[str, list[int] | None] = {"/p/model.py": [1, 2], "/p/absent.py": None}
    cache = result_cache.Cache(str(tmp_path / "cache"), lambda path: [1, 2])
    for number in range(3):
        cache.put(f"key{number}", ["ODL101"], {"ODL101"}, [], depends)
    cache.put("key3", ["ODL101"], {"ODL101"}, [], {"/p/model.py": [1, 2]})
    cache.put("key4", ["ODL101"], {"ODL101"}, [])
    cache.save()
    stored = json.loads(Path(cache.file).read_text(encoding="utf-8"))
    assert sorted(stored["paths"], key=str) == [["/p", None], ["/p/model.py", [1, 2]]]  # no /p here
    assert len(stored["groups"]) == 2 and "depends" not in stored["entries"]["key4"]
    assert len({stored["entries"][f"key{number}"]["depends"] for number in range(3)}) == 1


def test_the_files_several_results_read_are_their_groups_pairs_each_once(tmp_path: Path) -> None:
    """What a whole-run record holds for the cached results it answers with (odelint.files.runs)."""
    cache = result_cache.Cache(str(tmp_path / "cache"), lambda path: [1, 2])
    cache.put("a", ["ODL101"], {"ODL101"}, [], {"/p/model.py": [1, 2], "/p/layers.py": [3, 4]})
    cache.put("b", ["ODL101"], {"ODL101"}, [], {"/p/model.py": [1, 2]})
    cache.put("c", ["ODL101"], {"ODL101"}, [], {"/p/model.py": [1, 2], "/p/layers.py": [3, 4]})
    cache.put("d", ["ODL101"], {"ODL101"}, [])
    cache.save()
    reread = result_cache.Cache(str(tmp_path / "cache"), lambda path: [1, 2])
    assert reread.depends_of(["a", "b", "c", "d", "missing"]) == {"/p/model.py": [1, 2], "/p/layers.py": [3, 4]}
    assert reread.depends_of(["b"]) == {"/p/model.py": [1, 2]} and reread.depends_of(["d"]) == {}


def test_exclude_matches_by_name_in_a_tree_outside_the_root(tmp_path: Path) -> None:
    root, tree = tmp_path / "here", tmp_path / "elsewhere"
    root.mkdir()
    for relative in ("pkg/a.py", "pkg/skipped/b.py", "pkg/c_skip.py", "build/d.py"):
        (tree / relative).parent.mkdir(parents=True, exist_ok=True)
        (tree / relative).write_text("x = 1\n")
    resolver = ConfigResolver(Overrides(isolated=True, extend_exclude=("skipped", "*_skip.py")), ["ODL101"], str(root))
    found = discover([str(tree)], resolver, ("*.py",))
    assert sorted(os.path.relpath(target.path, tree) for target in found.targets) == ["pkg/a.py"]


def test_absent_paths_under_a_missing_folder_are_stored_as_that_folder(tmp_path: Path) -> None:
    """An import's candidate modules under a package folder that is not there become one path."""
    (tmp_path / "pkg").mkdir()
    missing = [f"{tmp_path}/pkg/models/{name}" for name in ("mlp.py", "mlp/__init__.py", "mlp.pyi", "cnn.py")]
    depends: dict[str, list[int] | None] = {path: None for path in [*missing, f"{tmp_path}/pkg/absent.py"]}
    depends[f"{tmp_path}/pkg"] = []  # recorded as there: kept beside the absent paths below it
    cache = result_cache.Cache(str(tmp_path / "cache"), lambda path: [] if os.path.exists(path) else None)
    cache.put("k", ["ODL101"], {"ODL101"}, [], depends)
    cache.save()
    stored = json.loads(Path(cache.file).read_text(encoding="utf-8"))
    assert sorted(stored["paths"], key=str) == sorted(
        [[f"{tmp_path}/pkg", []], [f"{tmp_path}/pkg/absent.py", None], [f"{tmp_path}/pkg/models", None]], key=str)
    assert result_cache.Cache(str(tmp_path / "cache"), lambda path: []).get("k", {"ODL101"}) == []
    (tmp_path / "pkg" / "models").mkdir()
    assert result_cache.Cache(str(tmp_path / "cache"), lambda path: []).get("k", {"ODL101"}) is None


def test_a_warm_run_finds_each_files_absolute_path_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative path's `abspath` asks the OS for the current folder: the runner asks once per
    file and hands the absolute path to the settings and the cache, whose answers are those
    of the path as given (a run over `.` and one over the absolute folder share the cache)."""
    from odelint.api.registry import known_codes
    from odelint.engine import runner

    (tmp_path / "pkg").mkdir()
    for number in range(12):
        call = "tree_map" if number < 2 else "tree.map"  # a finding in m0.py, and in m1.py where it is ignored
        (tmp_path / "pkg" / f"m{number}.py").write_text(f"import jax\n\nleaves = jax.{call}(abs, [1.0])\n")
    (tmp_path / "pyproject.toml").write_text('[tool.odelint]\nper-file-ignores = {"pkg/m1.py" = ["ODL901"]}\n')
    monkeypatch.setattr(fileio, "RACY_NS", -10**15)
    monkeypatch.chdir(tmp_path)
    read: list[str] = []
    reading = runner._read
    monkeypatch.setattr(runner, "_read", lambda path, regular=True: read.append(path) or reading(path, regular))

    def run(path: str) -> tuple[list[str], int]:
        resolver = ConfigResolver(Overrides(), known_codes())
        result = runner.run([path], resolver, runner.Options(jobs=1))
        return sorted(f"{os.path.basename(f.path)}:{f.code}" for f in result.findings), result.files

    cold, files = run(str(tmp_path))
    assert cold == ["m0.py:ODL901"] and files == 13  # pyproject.toml too
    read.clear()
    asked = []
    getcwd = os.getcwd
    monkeypatch.setattr(os, "getcwd", lambda: asked.append(1) or getcwd())
    assert run(".") == (cold, files) and read == []
    assert len(asked) <= files + 7  # a file each, and the run's own few (its folders, its resolver)


def _repository(root: Path) -> None:
    """A repository with a nested .gitignore, a negation and `git init`'s comment-only exclude file."""
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "info" / "exclude").write_text("# git ls-files --others --exclude-from=.git/info/exclude\n"
                                                    "# Lines that start with '#' are comments.\n")
    (root / ".gitignore").write_text("# build output\n\n__pycache__/\n*_generated.py\noutputs/\n")
    for relative in ("pkg/model.py", "pkg/model_generated.py", "pkg/keep_generated.py", "outputs/run.py",
                     "pkg/data/loader.py", "pkg/data/cache.py", "train.py"):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text("x = 1\n")
    (root / "pkg" / ".gitignore").write_text("!keep_generated.py\ndata/cache.py\n")


def _found(root: Path, remembered: dict | None) -> tuple[list[str], Memo]:
    """The files a walk of `root` finds, and its verdicts (those remembered, and any it decided)."""
    resolver = ConfigResolver(Overrides(isolated=True), ["ODL101"], str(root))
    resolver.verdicts.load(remembered or {})
    found = discover([str(root)], resolver, ("*.py",))
    return sorted(os.path.relpath(target.path, root) for target in found.targets), resolver.verdicts


def test_gitignore_verdicts_remembered_from_an_earlier_run_need_no_pathspec(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from odelint.files.discover import GitIgnore

    _repository(tmp_path)
    expected = ["pkg/data/loader.py", "pkg/keep_generated.py", "pkg/model.py", "train.py"]
    first, found = _found(tmp_path, None)
    assert first == expected and found.learned
    remembered = json.loads(json.dumps(found.consulted))  # as the cache file keeps them
    assert len(remembered) == 2, "one set of verdicts per chain of ignore files (root; root and pkg)"

    def unwanted(self: GitIgnore, folder: str) -> None:
        raise AssertionError(f"pathspec compiled for {folder}")

    monkeypatch.setattr(GitIgnore, "_spec", unwanted)
    again, found = _found(tmp_path, remembered)
    assert again == expected and not found.learned


def test_an_edited_gitignore_is_decided_anew(tmp_path: Path) -> None:
    _repository(tmp_path)
    _, found = _found(tmp_path, None)
    remembered = found.consulted
    (tmp_path / "pkg" / ".gitignore").write_text("data/\n")  # keep_generated.py ignored again, all of data/
    after, found = _found(tmp_path, remembered)
    assert after == ["pkg/model.py", "train.py"] and found.learned


def test_damaged_remembered_verdicts_are_decided_anew(tmp_path: Path) -> None:
    _repository(tmp_path)
    _, found = _found(tmp_path, None)
    damaged = {chain: {path: "yes" for path in verdicts} for chain, verdicts in found.consulted.items()}
    assert _found(tmp_path, damaged)[0] == ["pkg/data/loader.py", "pkg/keep_generated.py", "pkg/model.py", "train.py"]
    assert _found(tmp_path, {chain: 7 for chain in damaged})[0] == _found(tmp_path, None)[0]


def test_a_repository_whose_ignore_files_hold_only_comments_needs_no_pathspec(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from odelint.files.discover import GitIgnore

    _repository(tmp_path)
    (tmp_path / ".gitignore").write_text("# nothing yet\n\n")
    (tmp_path / "pkg" / ".gitignore").unlink()
    monkeypatch.setattr(GitIgnore, "_spec", lambda self, folder: pytest.fail("pathspec compiled"))
    files, found = _found(tmp_path, None)
    assert len(files) == 7 and found.consulted == {}


def test_the_cache_keeps_verdicts_until_their_ignore_files_are_found_edited(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from odelint.api.registry import known_codes
    from odelint.engine import runner
    from odelint.files.discover import GitIgnore

    root, cache_dir = tmp_path / "repo", tmp_path / "cache"
    _repository(root)
    (root / "other").mkdir()
    (root / "other" / ".gitignore").write_text("scratch.py\n")
    (root / "other" / "scratch.py").write_text("x = 1\n")

    def run(*paths: Path) -> int:
        resolver = ConfigResolver(Overrides(isolated=True), known_codes(), str(root))
        return runner.run([str(path) for path in paths], resolver,
                          runner.Options(jobs=1, cache_dir=str(cache_dir))).files

    def stored() -> dict:
        return json.loads(Path(result_cache.Cache(str(cache_dir), lambda path: None).file).read_text())["verdicts"]

    assert run(root) == 4
    first = stored()
    assert len(first) == 3, "one set of verdicts per chain of ignore files (root; root and pkg; root and other)"
    spec = GitIgnore._spec
    compiled: list[str] = []
    monkeypatch.setattr(GitIgnore, "_spec", lambda self, folder: compiled.append(folder) or spec(self, folder))
    assert run(root) == 4 and compiled == []
    written = os.stat(result_cache.Cache(str(cache_dir), lambda path: None).file).st_mtime_ns
    assert run(root / "train.py", root / "pkg" / "model.py") == 2  # as pre-commit runs it: no folder walked
    assert stored() == first and os.stat(result_cache.Cache(str(cache_dir), lambda path: None).file).st_mtime_ns \
        == written, "nothing new: the cache is not written again, and keeps every verdict"
    assert run(root / "pkg") == 3 and compiled == []  # a part of the tree: the others' verdicts stay
    assert stored() == first
    (root / ".gitignore").write_text("outputs/\n")  # *_generated.py no longer ignored
    assert run(root / "pkg") == 4 and compiled
    after = stored()
    assert len(after) == 3 and len(set(after) & set(first)) == 2, \
        "the chain walked (root and pkg) is decided anew and its old verdicts dropped; the others wait"
    assert run(root) == 5
    assert len(stored()) == 3 and not set(stored()) & set(first), "a walk of the whole tree replaces them all"

def test_per_file_ignores_and_exclude_patterns_are_decided_once_and_remembered(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from odelint.api.registry import known_codes
    from odelint.engine import runner
    from odelint.files.config import Settings

    root, cache_dir = tmp_path / "project", tmp_path / "cache"
    source = "import jax\n\nleaves = jax.tree_map(abs, [1.0])\n"
    for relative in ("src/model.py", "tests/test_model.py", "tests/unit/test_loss.py", "scratch/old_run.py"):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(source)
    config = root / "pyproject.toml"
    config.write_text('[tool.odelint]\nextend-exclude = ["scratch/*_run.py"]\n'
                      'per-file-ignores = {"tests/**" = ["ODL901"]}\n')

    def run() -> list[str]:
        resolver = ConfigResolver(Overrides(), known_codes(), str(root))
        result = runner.run([str(root)], resolver, runner.Options(jobs=1, cache_dir=str(cache_dir)))
        return sorted(f"{os.path.relpath(f.path, root)}:{f.code}" for f in result.findings)

    assert run() == ["src/model.py:ODL901"]

    def compiled(self: Settings) -> None:
        raise AssertionError("pathspec compiled for a path decided before")

    for name in ("_per_file_specs", "_exclude_spec"):
        monkeypatch.setattr(Settings, name, property(compiled))
    assert run() == ["src/model.py:ODL901"]
    monkeypatch.undo()
    config.write_text('[tool.odelint]\nextend-exclude = ["scratch/*_run.py"]\n'
                      'per-file-ignores = {"tests/unit/*" = ["ODL901"]}\n')
    assert run() == ["src/model.py:ODL901", "tests/test_model.py:ODL901"]
    stored = json.loads(Path(result_cache.Cache(str(cache_dir), lambda path: None).file).read_text())["verdicts"]
    per_file = [verdicts for verdicts in stored.values() if isinstance(verdicts.get("src/model.py"), list)]
    assert per_file == [{"pyproject.toml": [], "src/model.py": [], "tests/test_model.py": [],
                         "tests/unit/test_loss.py": [0]}], "the verdicts of the old patterns are dropped"
