"""Which files a folder walk finds, in which order, and how it names them: `os.walk`'s order and
`normpath`'s names, from one `scandir` per folder (odelint.files.discover)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from odelint.api.registry import file_patterns, known_codes
from odelint.files.config import ConfigResolver, Overrides
from odelint.files.discover import discover


def _tree(root: Path) -> None:
    for name in ("b.py", "a.py", "notes.txt", "pkg/z.py", "pkg/sub/y.py", "pkg/sub/deep/x.py", "..hidden/w.py",
                 "build/skipped.py", "aa/v.py", "pyproject.toml"):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("import jax\n" if name.endswith(".py") else "[project]\nname = 'demo'\n")


def _found(top: str, cwd: Path, monkeypatch: pytest.MonkeyPatch, isolated: bool = True):
    monkeypatch.chdir(cwd)
    resolver = ConfigResolver(Overrides(isolated=isolated), known_codes(), str(cwd))
    return discover([top], resolver, (*file_patterns(), "*.ipynb"))


def test_a_walk_lists_each_folders_files_by_name_then_its_subfolders(tmp_path: Path, monkeypatch) -> None:
    _tree(tmp_path)
    found = _found(".", tmp_path, monkeypatch)
    # `..hidden` is a folder inside the root, not above it; `build` is excluded by default
    assert [target.path for target in found.targets] == [
        "a.py", "b.py", "pyproject.toml", "..hidden/w.py", "aa/v.py", "pkg/z.py", "pkg/sub/y.py", "pkg/sub/deep/x.py"]
    assert all(target.absolute == os.path.abspath(target.path) for target in found.targets)
    assert found.errors == [] and found.skipped == []


@pytest.mark.parametrize(("top", "shown"), [("pkg", "pkg/"), ("./pkg/", "pkg/"), ("pkg/sub/..", "pkg/")])
def test_a_walk_names_files_as_normpath_would(tmp_path: Path, monkeypatch, top: str, shown: str) -> None:
    _tree(tmp_path)
    found = _found(top, tmp_path, monkeypatch)
    assert [target.path for target in found.targets] == [f"{shown}z.py", f"{shown}sub/y.py", f"{shown}sub/deep/x.py"]
    assert [target.absolute for target in found.targets] == [
        str(tmp_path / "pkg" / name) for name in ("z.py", "sub/y.py", "sub/deep/x.py")]


def test_a_walk_from_outside_names_files_by_the_path_given(tmp_path: Path, monkeypatch) -> None:
    _tree(tmp_path / "project")
    (tmp_path / "elsewhere").mkdir()
    found = _found("../project/pkg", tmp_path / "elsewhere", monkeypatch)
    assert [target.path for target in found.targets] == [
        "../project/pkg/z.py", "../project/pkg/sub/y.py", "../project/pkg/sub/deep/x.py"]
    found = _found(str(tmp_path / "project" / "pkg" / "sub"), tmp_path / "elsewhere", monkeypatch)
    assert [target.path for target in found.targets] == [str(tmp_path / "project/pkg/sub/y.py"),
                                                          str(tmp_path / "project/pkg/sub/deep/x.py")]


def test_links_to_folders_are_not_walked_and_a_linked_file_is_found_once(tmp_path: Path, monkeypatch) -> None:
    _tree(tmp_path)
    (tmp_path / "pkg" / "loop").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "alias.py").symlink_to(tmp_path / "pkg" / "z.py")
    found = _found(".", tmp_path, monkeypatch)
    paths = [target.path for target in found.targets]
    assert not any("loop" in path for path in paths)
    assert "alias.py" in paths and "pkg/z.py" not in paths  # one name per file: the first one found


def test_excluded_names_apply_under_the_configurations_root_only(tmp_path: Path, monkeypatch) -> None:
    """`exclude` matches the path relative to the root: a tree below a folder named `build` is
    linted when it is the root (no pyproject.toml above), and skipped from a root above it."""
    _tree(tmp_path / "build")
    found = _found(".", tmp_path / "build", monkeypatch)
    assert "pkg/z.py" in [target.path for target in found.targets]
    (tmp_path / "pyproject.toml").write_text("[tool.odelint]\nselect = ['ODL']\n")
    assert _found("build", tmp_path, monkeypatch, isolated=False).targets == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any folder")
def test_an_unreadable_folder_is_reported_and_the_walk_goes_on(tmp_path: Path, monkeypatch) -> None:
    _tree(tmp_path)
    (tmp_path / "pkg" / "sub").chmod(0)
    try:
        found = _found(".", tmp_path, monkeypatch)
    finally:
        (tmp_path / "pkg" / "sub").chmod(0o755)
    assert [target.path for target in found.targets][-2:] == ["aa/v.py", "pkg/z.py"]
    assert [(path, reason) for path, reason in found.errors] == [("pkg/sub", "Permission denied")]


def test_exclude_patterns_match_paths_relative_to_the_root_at_every_depth(tmp_path: Path, monkeypatch) -> None:
    """Each folder's path relative to the root comes from its parent's; a folder whose name
    starts with `..` is inside the root like any other."""
    _tree(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        "[tool.odelint]\nextend-exclude = ['..hidden/w.py', 'pkg/sub/deep', '/aa/v.py']\n")
    found = _found(".", tmp_path, monkeypatch, isolated=False)
    assert [target.path for target in found.targets] == ["a.py", "b.py", "pyproject.toml", "pkg/z.py", "pkg/sub/y.py"]
