"""The data tables' JSON mirrors (odelint.analysis.tables): believed only while they are the
parsed form of the TOML beside them, which stays what people edit."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest
from odelint.analysis import tables

DATA = Path(__file__).resolve().parents[1] / "lint" / "analysis" / "data"


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The tables copied, mirrors and all, and `tables.read` reading the copy afresh."""
    copy = tmp_path / "data"
    shutil.copytree(DATA, copy)
    monkeypatch.setattr(tables, "folder", lambda: copy)
    tables.read.cache_clear()
    yield copy
    tables.read.cache_clear()


def test_every_mirror_is_its_table_parsed_in_the_tomls_order() -> None:
    for name in tables.TABLES:
        parsed = tomllib.loads((DATA / name).read_text(encoding="utf-8"))
        mirrored = json.loads((DATA / tables.mirror_name(name)).read_text(encoding="utf-8"))["table"]
        assert mirrored == parsed and list(mirrored) == list(parsed), name
        assert (DATA / tables.mirror_name(name)).read_text(encoding="utf-8") == tables.mirror_text(
            (DATA / name).read_text(encoding="utf-8"))


def test_a_current_mirror_answers_without_parsing_the_toml(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mirror = data / tables.mirror_name("intent.toml")
    held = json.loads(mirror.read_text())
    held["table"]["expected_errors"]["methods"] = ["onlyInTheMirror"]
    mirror.write_text(json.dumps(held))
    monkeypatch.setattr(tomllib, "loads", lambda text: pytest.fail("the TOML was parsed"))
    assert tables.read("intent.toml")["expected_errors"]["methods"] == ["onlyInTheMirror"]


def test_an_edited_table_is_read_from_its_toml_until_the_mirror_is_made_again(
        data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = data / "intent.toml"
    table.write_text(table.read_text().replace('"assertRaises", ', '"assertRaises", "failUnlessRaises", '))
    assert "failUnlessRaises" in tables.read("intent.toml")["expected_errors"]["methods"]
    (data / tables.mirror_name("intent.toml")).write_text(tables.mirror_text(table.read_text()))
    tables.read.cache_clear()
    monkeypatch.setattr(tomllib, "loads", lambda text: pytest.fail("the regenerated mirror was not believed"))
    assert "failUnlessRaises" in tables.read("intent.toml")["expected_errors"]["methods"]


@pytest.mark.parametrize("mirror", [None, "{not json", "[1, 2]", '{"table": {}}'])
def test_a_missing_or_broken_mirror_falls_back_to_the_toml(data: Path, mirror: str | None) -> None:
    path = data / tables.mirror_name("diffrax_api.toml")
    if mirror is None:
        path.unlink()
    else:
        path.write_text(mirror)
    assert tables.read("diffrax_api.toml") == tomllib.loads((data / "diffrax_api.toml").read_text())


def test_a_table_json_cannot_keep_is_refused_when_mirrored() -> None:
    with pytest.raises(ValueError, match="JSON cannot keep"):
        tables.mirror_text("released = 2024-05-01\n")
