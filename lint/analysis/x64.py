"""Where the project switches JAX's 64-bit mode on for a file, from the project's other files.

Scientists switch x64 on once: `jax.config.update("jax_enable_x64", True)` in `conftest.py`
(every test below it runs in 64-bit mode), in a package's `__init__.py` (importing any module
of the package runs it first), inside `with jax.enable_x64():` in such a file, or as
`JAX_ENABLE_X64=1` in pytest's environment settings (pytest-env: pyproject.toml's
`[tool.pytest.ini_options] env`, pytest.ini, tox.ini, setup.cfg). A float64 request in a
file covered by one of them is honoured. Every file looked at (present or not) is recorded
as a dependency of the result, so a cached result holds only while they stay the same.
"""

from __future__ import annotations

import configparser
import os
import tomllib
from collections.abc import Iterable, Iterator

import libcst as cst
from odelint.analysis import project

_SWITCHES = frozenset({"jax.config.update", "jax.experimental.enable_x64", "jax.enable_x64"})
_TRUE = frozenset({"1", "true", "yes", "on"})
# (file, ini section) holding pytest's settings; pyproject.toml is read as TOML
_INI_FILES = (("pytest.ini", "pytest"), ("tox.ini", "pytest"), ("setup.cfg", "tool:pytest"))


def enabled_for(path: str) -> str | None:
    """The project file that switches 64-bit mode on for the code in `path`, else None."""
    for candidate in _python_files(path):
        if project.noted(candidate) is not None and _switches_on(candidate):
            return candidate
    if project.is_test_file(path):
        root = project.project_root(path)
        if root is not None:
            return _pytest_env(root)
    return None


def _python_files(path: str) -> Iterator[str]:
    """conftest.py in the file's folder and every folder above it up to the project root, and
    the `__init__.py` of every package the file belongs to."""
    folder = os.path.dirname(os.path.abspath(path))
    root = project.project_root(path) or folder
    in_package = True
    while True:
        yield os.path.join(folder, "conftest.py")
        init = os.path.join(folder, "__init__.py")
        in_package = in_package and os.path.isfile(init)
        if in_package and os.path.abspath(init) != os.path.abspath(path):
            yield init
        parent = os.path.dirname(folder)
        if folder == root or parent == folder or not folder.startswith(root):
            return
        folder = parent


def _switches_on(path: str) -> bool:
    facts = project.facts_of(path, frozenset())
    if facts is None:
        return False
    for call, site in facts.index.of_type(cst.Call):
        qualname = facts.qualname(call.func, site.scope)
        if qualname in _SWITCHES and (qualname != "jax.config.update" or _enables(call)):
            return True
    return False


def _enables(call: cst.Call) -> bool:
    """`update("jax_enable_x64", True)` (or 1, or "True")."""
    if len(call.args) < 2 or not isinstance(call.args[0].value, cst.SimpleString):
        return False
    if call.args[0].value.evaluated_value != "jax_enable_x64":
        return False
    value = call.args[1].value
    if isinstance(value, cst.Name):
        return value.value == "True"
    if isinstance(value, cst.Integer):
        return value.value != "0"
    return isinstance(value, cst.SimpleString) and str(value.evaluated_value).lower() in _TRUE


def _pytest_env(root: str) -> str | None:
    """The settings file whose pytest `env` sets JAX_ENABLE_X64 to a true value."""
    pyproject = os.path.join(root, "pyproject.toml")
    if project.noted(pyproject) is not None:
        try:
            with open(pyproject, "rb") as handle:
                table = tomllib.load(handle)
            env = table.get("tool", {}).get("pytest", {}).get("ini_options", {}).get("env", [])
        except (OSError, tomllib.TOMLDecodeError, AttributeError):
            env = []
        if isinstance(env, list) and _sets_x64(str(line) for line in env):
            return pyproject
    for name, section in _INI_FILES:
        settings = os.path.join(root, name)
        if project.noted(settings) is None:
            continue
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(settings, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            continue
        values = [parser.get(section, "env", fallback="")]
        if name == "tox.ini":
            values += [parser.get(part, "setenv", fallback="") for part in parser.sections()
                       if part.startswith("testenv")]
        if _sets_x64(line for value in values for line in value.splitlines()):
            return settings
    return None


def _sets_x64(lines: Iterable[str]) -> bool:
    """pytest-env lines: `JAX_ENABLE_X64=1`, `D:JAX_ENABLE_X64=True` (flags before a colon)."""
    for line in lines:
        name, _, value = line.partition("=")
        if name.strip().rpartition(":")[2].strip() == "JAX_ENABLE_X64" and value.strip().lower() in _TRUE:
            return True
    return False
