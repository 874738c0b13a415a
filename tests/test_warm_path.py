"""What a warm run does without linting, made cheap without changing its answers: installed
versions read from `.dist-info` as importlib.metadata reads them, dependency files parsed
only when they may pin, files read with `os` calls, each project file stamped once per run,
and a walk outside the configuration's root that matches `exclude` by name."""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

import pytest
from odelint.files import cache as result_cache
from odelint.files import versions
from odelint.files.config import ConfigResolver, Overrides
from odelint.files.discover import discover
from odelint.files.fileio import NotRegular, read_regular


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
    assert str(versions.installed("equinox")) == "0.11.0"
    assert versions.installed("diffrax") is None


def test_pins_are_read_only_from_files_that_may_hold_one(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("numpy==1.26.0\njax>=0.4\n")  # parsed: no pin of ours
    (tmp_path / "requirements-dev.txt").write_text("JAX[cuda12] == 0.4.33  # pinned\n")
    (tmp_path / "pyproject.toml").write_text('[project]\ndependencies = ["equinox>=0.11", "optax"]\n')
    assert not versions._may_pin('[project]\ndependencies = ["equinox>=0.11", "optax"]\n')
    assert versions._may_pin("JAX[cuda12] == 0.4.33")
    assert versions.pinned(str(tmp_path)) == {"jax": versions.Version("0.4.33")}


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


def test_each_path_is_stamped_once_per_run(tmp_path: Path) -> None:
    asked: list[str] = []

    def stamp(path: str) -> list[int] | None:
        asked.append(path)
        return None

    cache = result_cache.Cache(str(tmp_path / "cache"), stamp)
    for number in range(3):
        cache.put(f"key{number}", ["ODL101"], {"ODL101"}, [], {"/p/pyproject.toml": None, f"/p/m{number}.py": None})
    assert all(cache.get(f"key{number}", frozenset({"ODL101", "ODL201"})) == [] for number in range(3))
    assert sorted(asked) == ["/p/m0.py", "/p/m1.py", "/p/m2.py", "/p/pyproject.toml"]


def test_exclude_matches_by_name_in_a_tree_outside_the_root(tmp_path: Path) -> None:
    root, tree = tmp_path / "here", tmp_path / "elsewhere"
    root.mkdir()
    for relative in ("pkg/a.py", "pkg/skipped/b.py", "pkg/c_skip.py", "build/d.py"):
        (tree / relative).parent.mkdir(parents=True, exist_ok=True)
        (tree / relative).write_text("x = 1\n")
    resolver = ConfigResolver(Overrides(isolated=True, extend_exclude=("skipped", "*_skip.py")), ["ODL101"], str(root))
    found = discover([str(tree)], resolver, ("*.py",))
    assert sorted(os.path.relpath(target.path, tree) for target in found.targets) == ["pkg/a.py"]
