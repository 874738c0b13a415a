"""Other files' facts are kept while they are used (odelint.analysis.project): the most
recently used, up to `KEPT_CHARACTERS` of source in all, so neither a run over thousands of
files nor a server that runs for days keeps every file it ever read."""

from __future__ import annotations

from pathlib import Path

import pytest
from odelint.analysis import project


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setattr(project, "KEPT_CHARACTERS", 250)
    monkeypatch.setattr(project, "_parsed", {})
    paths = []
    for name in ("a", "b", "c"):
        path = tmp_path / f"{name}.py"
        path.write_text(f"class {name.upper()}:\n    x = {'1' * 80}\n")  # 100 characters each
        paths.append(str(path))
    return paths


def test_the_least_recently_used_facts_go_first(files: list[str]) -> None:
    a, b, c = files
    first = project.facts_of(a, frozenset())
    project.facts_of(b, frozenset())
    assert project.facts_of(a, frozenset()) is first  # kept, and now the most recently used
    project.facts_of(c, frozenset())  # 300 characters: b, used longest ago, goes
    assert list(project._parsed) == [a, c]
    assert project.facts_of(a, frozenset()) is first


def test_dropped_facts_are_built_again_with_the_same_answers(files: list[str]) -> None:
    a, b, c = files
    first = project.facts_of(a, frozenset())
    for path in (b, c):
        project.facts_of(path, frozenset())
    again = project.facts_of(a, frozenset())
    assert again is not first and again is not None and first is not None
    assert set(again.index.module_scope.bindings) == set(first.index.module_scope.bindings) == {"A"}


def test_a_file_larger_than_the_budget_is_kept_alone(files: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(project, "KEPT_CHARACTERS", 50)
    a, b, _ = files
    project.facts_of(a, frozenset())
    kept = project.facts_of(b, frozenset())
    assert list(project._parsed) == [b] and project.facts_of(b, frozenset()) is kept


def test_forget_drops_every_kept_file(files: list[str]) -> None:
    project.facts_of(files[0], frozenset())
    project.forget()
    assert project._parsed == {}
