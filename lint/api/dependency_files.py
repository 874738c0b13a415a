"""Read the requirements a dependency file declares, each with where it is written: what
dependency-file rules (ODL501) and the target-version lookup (odelint.files.versions) read.

Formats: requirements/constraints files (pip's line syntax), pyproject.toml (PEP 621
dependencies and optional dependencies, PEP 735 dependency groups), setup.cfg
(install_requires, extras_require) and conda's environment.yml (conda specs plus a `pip:`
list). A malformed file, or a line that is not a requirement, yields nothing: this is a
linter, not an installer.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from odelint.api.finding import Span

if TYPE_CHECKING:  # packaging's parsers are imported where a file is read: every lint imports
    from packaging.specifiers import SpecifierSet  # this module (ODL501's), few read such a file

FILE_PATTERNS = ("requirements*.txt", "constraints*.txt", "pyproject.toml", "setup.cfg",
                 "environment*.yml", "environment*.yaml")

_PIP_COMMENT = re.compile(r"(^|\s+)#.*$")           # pip: `#` at the start or after whitespace
_PIP_OPTION = re.compile(r"\s+--?[a-zA-Z]")         # `req --hash=...` per-requirement options
_CONDA_SPEC = re.compile(r"^(?:[\w.-]+::)?(?P<name>[A-Za-z0-9][A-Za-z0-9_.-]*)\s*(?P<rest>.*)$")


@dataclasses.dataclass(frozen=True)
class Declared:
    """One requirement as the file writes it."""

    name: str                  # canonical (PEP 503) name
    specifier: SpecifierSet
    text: str
    span: Span
    conditional: bool = False  # an environment marker or a URL: its version is not known here


def read(filename: str, text: str) -> list[Declared]:
    """The requirements of the file named `filename` (a base name) with this text."""
    if filename == "pyproject.toml":
        return list(_pyproject(text))
    if filename == "setup.cfg":
        return list(_setup_cfg(text))
    if fnmatch.fnmatchcase(filename, "environment*.y*ml"):
        return list(_environment(text))
    return list(_requirements_txt(text))


def _declared(text: str, line: int, column: int, end_column: int | None = None) -> Declared | None:
    """A pip-syntax requirement starting at 1-based (line, column), or None if it is not one."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return None
    span = Span(line, column, line, end_column or column + len(text))
    return Declared(canonicalize_name(requirement.name), requirement.specifier, text, span,
                    conditional=requirement.marker is not None or requirement.url is not None)


def _requirements_txt(text: str) -> Iterator[Declared]:
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        start = index
        logical = lines[index]
        # a trailing backslash continues the requirement on the next line
        while logical.endswith("\\") and index + 1 < len(lines):
            index += 1
            logical = logical[:-1] + lines[index]
        index += 1
        body = _PIP_COMMENT.sub("", logical)
        option = _PIP_OPTION.search(body)
        body = (body[:option.start()] if option else body).rstrip()
        stripped = body.lstrip()
        if not stripped or stripped.startswith("-"):
            continue
        column = len(body) - len(stripped) + 1
        # a continued requirement is shown on its first line
        end_column = min(column + len(stripped), len(lines[start].rstrip("\\").rstrip()) + 1)
        found = _declared(stripped, start + 1, column, end_column)
        if found is not None:
            yield found


class _Occurrences:
    """Finds where a value read by a parser that forgets positions is written, each place once."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.used: set[tuple[int, int]] = set()

    def find(self, pattern: re.Pattern[str]) -> tuple[int, int] | None:
        """The first unused (line, column) where `pattern`'s group `at` matches, both 1-based."""
        for number, line in enumerate(self.lines, start=1):
            for match in pattern.finditer(line):
                where = (number, match.start("at") + 1)
                if where not in self.used:
                    self.used.add(where)
                    return where
        return None


def _pyproject(text: str) -> Iterator[Declared]:
    import tomllib  # the parsers load with the first dependency file read, not with the engine

    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, UnicodeError):
        return
    project = data["project"] if isinstance(data.get("project"), dict) else {}
    lists = [project.get("dependencies")]
    for table in (project.get("optional-dependencies"), data.get("dependency-groups")):
        if isinstance(table, dict):
            lists += table.values()
    where = _Occurrences(text)
    for values in lists:
        for value in values if isinstance(values, list) else ():
            if not isinstance(value, str):  # `{include-group = "..."}`
                continue
            position = where.find(re.compile(rf"([\"'])(?P<at>{re.escape(value)})\1"))
            line, column = position if position else (1, 1)
            stripped = value.strip()
            found = _declared(stripped, line, column + len(value) - len(value.lstrip()))
            if found is not None:
                yield found


def _setup_cfg(text: str) -> Iterator[Declared]:
    import configparser

    parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=("#",))
    try:
        parser.read_string(text)
    except configparser.Error:
        return
    values: list[str] = []
    if parser.has_option("options", "install_requires"):
        values.append(parser.get("options", "install_requires"))
    if parser.has_section("options.extras_require"):
        values += [parser.get("options.extras_require", key) for key in parser.options("options.extras_require")]
    where = _Occurrences(text)
    for value in values:
        for requirement in (part.strip() for part in value.splitlines()):
            if not requirement:
                continue
            # the requirement alone on its line, or after `key =`, before an optional comment
            position = where.find(re.compile(rf"(?:^|[=:\s])(?P<at>{re.escape(requirement)})\s*(?:#.*)?$"))
            line, column = position if position else (1, 1)
            found = _declared(requirement, line, column)
            if found is not None:
                yield found


def _environment(text: str) -> Iterator[Declared]:
    """A line reader for the part of YAML that environment.yml uses: `dependencies:` with
    `- conda-spec` items and one `- pip:` item holding `- pip-requirement` items."""
    in_dependencies = False
    pip_indent: int | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        content = _PIP_COMMENT.sub("", raw).rstrip()
        if not content.strip():
            continue
        indent = len(content) - len(content.lstrip())
        stripped = content.strip()
        if indent == 0 and not stripped.startswith("-"):
            in_dependencies, pip_indent = stripped.startswith("dependencies:"), None
            continue
        if not in_dependencies or not stripped.startswith("-"):
            continue
        item = stripped[1:].strip()
        item_column = len(content) - len(item) + 1
        if pip_indent is not None and indent <= pip_indent:
            pip_indent = None
        if pip_indent is None and item.replace(" ", "") == "pip:":
            pip_indent = indent
            continue
        if len(item) >= 2 and item[0] == item[-1] and item[0] in "'\"":
            item, item_column = item[1:-1], item_column + 1
        found = (_declared(item, number, item_column) if pip_indent is not None
                 else _conda(item, number, item_column))
        if found is not None:
            yield found


def _conda(item: str, line: int, column: int) -> Declared | None:
    """A conda match spec: `name`, `name=1.2` or `name 1.2` (1.2.*), `name==1.2`,
    `name>=1,<2`, with an optional `channel::` prefix and `=build` suffix."""
    match = _CONDA_SPEC.match(item)
    if match is None:
        return None
    rest = match.group("rest").strip()
    if (rest.startswith("=") and not rest.startswith("==")) or rest[:1].isdigit():
        # `name=1.2`, `name=1.2=build` and `name 1.2` are fuzzy: any 1.2.x
        version = re.split(r"[=\s]", rest.lstrip("="), maxsplit=1)[0]
        if not version:
            return None
        rest = f"=={version}" if version.endswith("*") else f"=={version}.*"
    elif rest:
        rest = rest.split()[0]
        if rest.startswith("==") and "=" in rest[2:]:  # `name==1.2=build`
            rest = "==" + rest[2:].split("=")[0]
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.utils import canonicalize_name

    try:
        specifier = SpecifierSet(rest)
    except InvalidSpecifier:
        return None
    span = Span(line, column, line, column + len(item))
    return Declared(canonicalize_name(match.group("name")), specifier, item, span)
