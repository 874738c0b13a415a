"""Where the project switches JAX's 64-bit mode on for a file, from the project's other files.

Scientists switch x64 on once: `jax.config.update("jax_enable_x64", True)` in `conftest.py`
(every test below it runs in 64-bit mode), in a package's `__init__.py` (importing any module
of the package runs it first), inside `with jax.enable_x64():` in such a file, as
`JAX_ENABLE_X64=1` in pytest's environment settings (pytest-env: pyproject.toml's
`[tool.pytest.ini_options] env`, pytest.ini, tox.ini, setup.cfg), or in the program's entry
module, which imports the file directly or through other project files: a script in the
file's folder or a folder above it up to the project root (a `__main__.py`, a file with an
`if __name__ == "__main__":` block, or one that switches x64 on as it is imported, like
`train.py` at the top of a research project), or a module that pyproject.toml's
`[project.scripts]` names. A float64 request in a file covered by one of them is honoured.
Every file and folder looked at (present or not) is recorded as a dependency of the result,
so a cached result holds only while they stay the same (a new script invalidates it).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

import libcst as cst
from odelint.analysis import literals, project

_SWITCHES = frozenset({"jax.config.update", "jax.experimental.enable_x64", "jax.enable_x64"})
_TRUE = frozenset({"1", "true", "yes", "on"})
# (file, ini section) holding pytest's settings; pyproject.toml is read as TOML
_INI_FILES = (("pytest.ini", "pytest"), ("tox.ini", "pytest"), ("setup.cfg", "tool:pytest"))
_MAX_IMPORTED = 500  # project files followed from one entry module


def enabled_for(path: str) -> str | None:
    """The project file that switches 64-bit mode on for the code in `path`, else None."""
    for candidate in _python_files(path):
        if project.noted(candidate) is not None and _switches_on(candidate):
            return candidate
    target = os.path.abspath(path)
    for entry in _entries(path):
        if entry != target and _imports(entry, target):
            return entry
    if project.is_test_file(path):
        root = project.project_root(path)
        if root is not None:
            return _pytest_env(root)
    return None


def _python_files(path: str) -> Iterator[str]:
    """conftest.py in the file's folder and every folder above it up to the project root, and
    the `__init__.py` of every package the file belongs to."""
    in_package = True
    for folder in _folders(path):
        yield os.path.join(folder, "conftest.py")
        init = os.path.join(folder, "__init__.py")
        in_package = in_package and os.path.isfile(init)
        if in_package and os.path.abspath(init) != os.path.abspath(path):
            yield init


def _folders(path: str) -> Iterator[str]:
    """The file's folder and every folder above it up to the project root."""
    folder = os.path.dirname(os.path.abspath(path))
    root = project.project_root(path) or folder
    while True:
        yield folder
        parent = os.path.dirname(folder)
        if folder == root or parent == folder or not folder.startswith(root):
            return
        folder = parent


def _switches_on(path: str, on_import: bool = False) -> bool:
    """Does the file switch 64-bit mode on (`on_import`: in code that runs as it is imported,
    outside any function)?"""
    facts = project.facts_of(path, frozenset())
    if facts is None:
        return False
    for call, site in facts.calls_to(_SWITCHES):
        qualname = facts.qualname(call.func, site.scope)
        if qualname in _SWITCHES and (qualname != "jax.config.update" or _enables(call)) and (
                not on_import or site.scope is facts.index.module_scope):
            return True
    return False


def _entries(path: str) -> Iterator[str]:
    """The project's entry modules that switch 64-bit mode on: scripts in the file's folder
    and every folder above it up to the project root, then pyproject.toml's scripts."""
    for folder in _folders(path):
        if project.noted(folder) is None:  # its listing counts: a script added later is seen
            continue
        for name in sorted(os.listdir(folder)):
            candidate = os.path.join(folder, name)
            if (name.endswith(".py") and name not in ("conftest.py", "__init__.py")
                    and not project.is_test_module(candidate) and _mentions_x64(candidate)
                    and _switches_on(candidate, on_import=not _is_script(candidate))):
                yield candidate
    root = project.project_root(path)
    for script in _project_scripts(root) if root is not None else ():
        if _mentions_x64(script) and _switches_on(script):
            yield script


def _mentions_x64(path: str) -> bool:
    """A cheap first look, so that only files that could switch x64 on are parsed."""
    if project.noted(path) is None:
        return False
    try:
        text = project.read_text(path)
    except (OSError, UnicodeDecodeError):
        return False
    return "enable_x64" in text


def _is_script(path: str) -> bool:
    """`__main__.py`, or a module with an `if __name__ == "__main__":` block: run as a program."""
    if os.path.basename(path) == "__main__.py":
        return True
    facts = project.facts_of(path, frozenset())
    return facts is not None and any(isinstance(statement, cst.If) and _is_main_test(statement.test)
                                     for statement in facts.index.module.body)


def _is_main_test(test: cst.BaseExpression) -> bool:
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    target = test.comparisons[0]
    sides = (test.left, target.comparator)
    return (isinstance(target.operator, cst.Equal) and any(isinstance(s, cst.Name) and s.value == "__name__"
                                                           for s in sides)
            and any(literals.string(s) == "__main__" for s in sides))


def _project_scripts(root: str) -> list[str]:
    """The modules of pyproject.toml's `[project.scripts]` / `[project.gui-scripts]`
    (`train = "experiments.train:main"`)."""
    pyproject = os.path.join(root, "pyproject.toml")
    if project.noted(pyproject) is None:
        return []
    import tomllib  # only where there is a settings file to read (an editor's buffer may have none)

    try:
        with open(pyproject, "rb") as handle:
            table = tomllib.load(handle).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return []
    found = []
    for section in ("scripts", "gui-scripts"):
        scripts = table.get(section, {}) if isinstance(table, dict) else {}
        for target in scripts.values() if isinstance(scripts, dict) else ():
            module = str(target).partition(":")[0].strip()
            where = project.module_file(module, pyproject) if module else None
            if where is not None:
                found.append(os.path.abspath(where))
    return found


def _imports(entry: str, target: str) -> bool:
    """Does `entry` import `target`, directly or through other files of the project?"""
    pending, seen, program = [entry], {entry}, os.path.dirname(entry)
    while pending and len(seen) < _MAX_IMPORTED:
        facts = project.facts_of(pending.pop(), frozenset())
        for imported in project.imported_files(facts, program) if facts is not None else ():
            if imported == target:
                return True
            if imported not in seen:
                seen.add(imported)
                pending.append(imported)
    return False


def _enables(call: cst.Call) -> bool:
    """`update("jax_enable_x64", True)` (or 1, or "True")."""
    if len(call.args) < 2 or literals.string(call.args[0].value) != "jax_enable_x64":
        return False
    value = call.args[1].value
    if isinstance(value, cst.Name):
        return value.value == "True"
    if isinstance(value, cst.Integer):
        return value.value != "0"
    text = literals.string(value) if isinstance(value, cst.SimpleString) else None
    return text is not None and text.lower() in _TRUE


def _pytest_env(root: str) -> str | None:
    """The settings file whose pytest `env` sets JAX_ENABLE_X64 to a true value."""
    pyproject = os.path.join(root, "pyproject.toml")
    if project.noted(pyproject) is not None:
        import tomllib

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
        import configparser

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
