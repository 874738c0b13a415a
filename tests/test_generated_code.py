"""The code class generators compile at import is kept across runs, and the classes come out the same."""

from __future__ import annotations

import dataclasses
import inspect
import os
import subprocess
import sys
from pathlib import Path

import attr
import pytest
from odelint.engine import generated_code
from odelint.engine.generated_code import ATTRS, DATACLASSES, kept


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ODELINT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    return tmp_path / "generated-code"


def _point() -> type:
    @dataclasses.dataclass(frozen=True)
    class Point:
        x: int
        y: float = 0.5
        tags: list[str] = dataclasses.field(default_factory=list)

    return Point


def _attrs_point() -> type:
    @attr.define(frozen=True)
    class Point:
        x: int
        y: float = 0.5

    return Point


def _same_code(one: type, other: type) -> None:
    """Every generated method compiled alike: same bytecode, same flags (`__future__` ones too)."""
    methods = {name: value for name, value in vars(one).items() if hasattr(value, "__code__")}
    assert methods, one
    for name, method in methods.items():
        code, again = method.__code__, vars(other)[name].__code__
        assert (code.co_code, code.co_flags, code.co_filename) == (again.co_code, again.co_flags,
                                                                   again.co_filename), name


def test_a_second_window_compiles_nothing_and_the_class_behaves_the_same(cache: Path) -> None:
    plain = _point()
    with kept("/somewhere/pkg/__init__.py", DATACLASSES) as first:
        _point()
    assert first.compiled > 0 and first.found == 0
    assert len(list(cache.iterdir())) == 1
    with kept("/somewhere/pkg/__init__.py", DATACLASSES) as second:
        reused = _point()
    assert second.compiled == 0 and second.found == first.compiled
    assert reused(1) == reused(1, 0.5, []) and reused(1) != reused(2)
    assert repr(reused(3, 1.5, ["a"])) == "_point.<locals>.Point(x=3, y=1.5, tags=['a'])" == repr(plain(3, 1.5, ["a"]))
    with pytest.raises(TypeError, match="unhashable"):
        hash(reused(1))  # the generated __hash__ hashes the fields, a list among them
    with pytest.raises(dataclasses.FrozenInstanceError):
        reused(1).x = 2  # type: ignore[misc]
    assert reused(1).tags is not reused(1).tags  # the default factory runs per instance
    assert inspect.signature(reused) == inspect.signature(plain)
    assert reused.__init__.__annotations__ == plain.__init__.__annotations__
    _same_code(reused, plain)


def test_attrs_methods_keep_the_future_flags_attrs_compiles_them_with(cache: Path) -> None:
    # attr/_make.py imports `annotations` from __future__, and `compile` passes that on to the
    # methods it compiles; dataclasses.py imports nothing from __future__.
    plain = _attrs_point()
    with kept("/somewhere/lsprotocol/__init__.py", ATTRS):
        _attrs_point()
    with kept("/somewhere/lsprotocol/__init__.py", ATTRS) as second:
        reused = _attrs_point()
    assert second.compiled == 0 and second.found > 0
    assert reused.__init__.__annotations__ == plain.__init__.__annotations__
    _same_code(reused, plain)
    assert reused(1, 2.0) == reused(1, 2.0) and repr(reused(1)) == repr(plain(1)) == "Point(x=1, y=0.5)"
    with pytest.raises(attr.exceptions.FrozenInstanceError):
        reused(1).x = 2


def test_each_origin_has_its_own_file_and_other_windows_entries_stay(cache: Path) -> None:
    with kept("/one/__init__.py", DATACLASSES):
        _point()
    with kept("/two/__init__.py", DATACLASSES):
        _point()
    assert len(list(cache.iterdir())) == 2

    with kept("/one/__init__.py", DATACLASSES):  # another face of the same package defines another class
        @dataclasses.dataclass
        class Other:
            name: str
    with kept("/one/__init__.py", DATACLASSES) as again:
        _point()
    assert again.compiled == 0


def test_the_generators_namespace_is_restored_even_after_an_error(cache: Path) -> None:
    assert "exec" not in vars(dataclasses)
    with pytest.raises(RuntimeError), kept("/pkg/__init__.py", DATACLASSES, ATTRS):
        assert vars(dataclasses)["exec"] is not exec
        raise RuntimeError
    assert "exec" not in vars(dataclasses)
    assert "compile" not in vars(attr._make)
    _point()  # the builtin again


def test_nothing_is_written_when_python_may_not_write_bytecode(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    with kept("/pkg/__init__.py", DATACLASSES) as tally:
        _point()
    assert tally.compiled > 0 and not cache.exists()


def _written(cache: Path) -> Path:
    with kept("/pkg/__init__.py", DATACLASSES):
        _point()
    [path] = cache.iterdir()
    return path


def test_a_damaged_file_is_ignored_and_written_again(cache: Path) -> None:
    path = _written(cache)
    path.write_bytes(b"\x00not marshal at all")
    with kept("/pkg/__init__.py", DATACLASSES) as tally:
        _point()
    assert tally.compiled > 0 and tally.found == 0
    with kept("/pkg/__init__.py", DATACLASSES) as tally:
        _point()
    assert tally.compiled == 0


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_a_file_others_may_write_is_not_read(cache: Path) -> None:
    path = _written(cache)
    path.chmod(0o666)
    with kept("/pkg/__init__.py", DATACLASSES) as tally:
        _point()
    assert tally.found == 0 and tally.compiled > 0


def test_a_relative_cache_folder_is_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ODELINT_CACHE_DIR", "~/.cache/odelint")  # what `~` gives where there is no home
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    with kept("/pkg/__init__.py", DATACLASSES) as tally:
        _point()
    assert tally.compiled > 0 and list(tmp_path.iterdir()) == []


def test_a_generator_that_cannot_be_imported_is_left_alone(cache: Path) -> None:
    assert generated_code.origin_of("no_such_package_here") == "no_such_package_here"
    with kept("/pkg/__init__.py", "no_such_package_here._make") as tally:
        _point()
    assert tally.compiled == 0 and tally.found == 0


def test_odelint_keeps_libcsts_code_for_the_next_process(tmp_path: Path) -> None:
    """End to end: the first process that loads LibCST writes its node classes' code; the
    next one compiles nothing, so it leaves the file as it was."""
    env = {**os.environ, "ODELINT_CACHE_DIR": str(tmp_path)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    code = ("import odelint, libcst as cst\n"
            "assert cst.parse_module('x = 1\\n').code == 'x = 1\\n'\n")

    def run() -> None:
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr

    run()
    [path] = (tmp_path / "generated-code").iterdir()
    written = path.stat().st_mtime_ns, path.read_bytes()
    assert len(written[1]) > 100_000  # LibCST's hundreds of methods
    run()
    assert (path.stat().st_mtime_ns, path.read_bytes()) == written


def test_the_users_cache_folder_is_odelints_own_setting_else_the_xdg_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from odelint.files.user_cache import user_cache_dir

    monkeypatch.setenv("ODELINT_CACHE_DIR", "/kept/here")
    assert user_cache_dir() == "/kept/here"
    monkeypatch.delenv("ODELINT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")
    assert user_cache_dir() == os.path.join("/xdg", "odelint")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert user_cache_dir() == os.path.join(os.path.expanduser("~"), ".cache", "odelint")
