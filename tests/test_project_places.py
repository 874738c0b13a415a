"""Where the project's files are is looked up once per run (odelint.analysis.project.places):
the files of one package import the same modules, and each lookup walks folders with
`stat`. A run takes the tree as fixed; each file's recorded dependencies stay what a fresh
lookup would record, and the next run looks again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from odelint.analysis import project


@pytest.fixture
def package(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "model.py").write_text("class Net:\n    pass\n")
    for name in ("train", "evaluate"):
        (tmp_path / "pkg" / f"{name}.py").write_text("from pkg.model import Net\nfrom pkg.data import load\n")
    return tmp_path


def _lookups(package: Path, name: str) -> tuple[str | None, str | None, dict]:
    """What linting pkg/<name>.py looks up: `pkg.model`, `pkg.data` (not there yet), with
    what its lint records as depended on."""
    importer = str(package / "pkg" / f"{name}.py")
    with project.recording() as depends:
        imports = project.ImportsOf(importer)
        found = imports.file("pkg.model"), imports.file("pkg.data")
    return found[0], found[1], depends


def test_a_run_looks_each_place_up_once_and_records_it_for_every_file(package: Path, monkeypatch) -> None:
    alone = {name: _lookups(package, name) for name in ("train", "evaluate")}
    stats: list[str] = []
    real_stat = os.stat

    def counted(path, *args, **kwargs):
        stats.append(str(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", counted)
    with project.places("run 1"):
        first = _lookups(package, "train")
    looked_up = len(stats)
    with project.places("run 1"):
        second = _lookups(package, "evaluate")
    assert looked_up > 0 and len(stats) == looked_up  # the second file's lookups were all answered
    assert first == alone["train"] and second == alone["evaluate"]  # found and recorded the same
    assert first[0] == str(package / "pkg" / "model.py") and first[1] is None
    assert os.path.abspath(package / "pkg" / "data.py") in second[2]  # its absence is depended on


def test_the_next_run_finds_a_module_created_since(package: Path) -> None:
    with project.places("run 1"):
        assert _lookups(package, "train")[1] is None
    (package / "pkg" / "data.py").write_text("def load():\n    pass\n")
    with project.places("run 1"):  # still the same run: the tree is taken as fixed
        assert _lookups(package, "train")[1] is None
    with project.places("run 2"):
        assert _lookups(package, "train")[1] == str(package / "pkg" / "data.py")


def test_outside_a_run_nothing_is_kept(package: Path) -> None:
    with project.places("run 1"):
        _lookups(package, "train")
    (package / "pkg" / "data.py").write_text("def load():\n    pass\n")
    assert _lookups(package, "train")[1] == str(package / "pkg" / "data.py")
    with project.places(None):
        (package / "pkg" / "data.py").unlink()
        assert _lookups(package, "train")[1] is None
