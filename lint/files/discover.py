"""Which files to lint: walk the given paths, honour .gitignore and `exclude`, never loop."""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import os
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from odelint.files.config import ConfigError, ConfigResolver

if TYPE_CHECKING:
    import pathspec


@dataclasses.dataclass(frozen=True)
class Target:
    path: str
    explicit: bool  # named on the command line: linted whatever its name


@dataclasses.dataclass
class Discovery:
    targets: list[Target]
    errors: list[tuple[str, str]]  # (path, reason)


class GitIgnore:
    """The .gitignore files that apply to a path, from the repository root down."""

    def __init__(self) -> None:
        self._specs: dict[str, pathspec.PathSpec | None] = {}
        self._roots: dict[str, str | None] = {}
        self._chains: dict[str, list[tuple[str, pathspec.PathSpec]]] = {}

    def _spec(self, folder: str) -> pathspec.PathSpec | None:
        if folder not in self._specs:
            lines: list[str] = []
            for name in (".gitignore", os.path.join(".git", "info", "exclude")):
                try:
                    with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as handle:
                        lines += handle.read().splitlines()
                except OSError:
                    pass
            if lines:
                import pathspec  # only where a .gitignore is: a tree without one never needs it

                self._specs[folder] = pathspec.GitIgnoreSpec.from_lines(lines)
            else:
                self._specs[folder] = None
        return self._specs[folder]

    def _root(self, folder: str) -> str | None:
        if folder not in self._roots:
            if os.path.exists(os.path.join(folder, ".git")):
                self._roots[folder] = folder
            else:
                parent = os.path.dirname(folder)
                self._roots[folder] = None if parent == folder else self._root(parent)
        return self._roots[folder]

    def _chain(self, folder: str) -> list[tuple[str, pathspec.PathSpec]]:
        """The (folder, spec) pairs that apply inside `folder`, from the repository root down."""
        if folder not in self._chains:
            root = self._root(folder)
            parent = os.path.dirname(folder)
            above = [] if root is None or folder == root or parent == folder else self._chain(parent)
            spec = self._spec(folder) if root is not None else None
            self._chains[folder] = [*above, (folder, spec)] if spec is not None else above
        return self._chains[folder]

    def ignored(self, path: str, is_dir: bool) -> bool:
        path = os.path.abspath(path)
        decision = False
        for folder, spec in self._chain(os.path.dirname(path)):
            relative = path[len(folder):].lstrip(os.sep).replace(os.sep, "/") + ("/" if is_dir else "")
            result = spec.check_file(relative)
            if result.include is not None:
                decision = result.include
        return decision


def discover(paths: Sequence[str], resolver: ConfigResolver, patterns: Sequence[str]) -> Discovery:
    """Files under `paths` that `include` picks (by default `patterns`; explicit files always count)."""
    found = Discovery([], [])
    gitignore = GitIgnore()
    seen: set[str] = set()

    def add(path: str, explicit: bool) -> None:
        path = os.path.normpath(path)  # `./pkg/a.py` is shown as `pkg/a.py`
        key = os.path.abspath(path)
        if key not in seen:
            seen.add(key)
            found.targets.append(Target(path, explicit))

    for path in paths:
        if path == "-":
            add(path, True)
            continue
        if not os.path.lexists(path):
            found.errors.append((path, "no such file or directory"))
            continue
        if not os.path.isdir(path):
            if not _force_excluded(path, resolver):
                add(path, True)
            continue
        for file_path in _walk(path, resolver, gitignore, patterns, found.errors):
            add(file_path, False)
    return found


def _force_excluded(path: str, resolver: ConfigResolver) -> bool:
    """With `force-exclude`, files named explicitly (as pre-commit does) obey `exclude` too."""
    try:
        settings = resolver.for_path(path)
    except ConfigError:
        return False  # reported when the file itself is linted
    return settings.force_exclude and settings.excluded(path)


def _walk(top: str, resolver: ConfigResolver, gitignore: GitIgnore, patterns: Sequence[str],
          errors: list[tuple[str, str]]) -> Iterator[str]:
    def on_error(error: OSError) -> None:
        errors.append((error.filename or top, error.strerror or str(error)))

    for folder, dirs, files in os.walk(top, onerror=on_error):
        try:
            settings = resolver.for_path(folder)
        except ConfigError as error:
            errors.append((folder, str(error)))
            dirs[:] = []
            continue
        base = settings.relative(folder)
        inside = not base.startswith("..")

        def relative(name: str, base: str = base, inside: bool = inside) -> str | None:
            """`name` relative to the settings' root, without a relpath per file."""
            return (name if base == "." else f"{base}/{name}") if inside else None

        included = _inclusion(settings.include_patterns(patterns))
        kept = []
        for name in sorted(dirs):
            path = os.path.join(folder, name)
            if settings.excluded(path, is_dir=True, relative=relative(name)):
                continue
            if settings.respect_gitignore and gitignore.ignored(path, is_dir=True):
                continue
            kept.append(name)
        dirs[:] = kept
        for name in sorted(files):
            if not included(name, relative(name)):
                continue
            path = os.path.join(folder, name)
            if settings.excluded(path, relative=relative(name)) or (
                    settings.respect_gitignore and gitignore.ignored(path, is_dir=False)):
                continue
            yield path


@functools.cache
def _inclusion(patterns: tuple[str, ...]) -> Callable[[str, str | None], bool]:
    """Whether a file (its name, its path relative to the settings' root) is included. Name
    patterns (`*.ipynb`) match the name; patterns with a `/` match the relative path as
    `.gitignore` lines do (`notebooks/**/*.ipynb`)."""
    names = tuple(pattern for pattern in patterns if "/" not in pattern)
    paths = [pattern for pattern in patterns if "/" in pattern]
    spec = None
    if paths:
        import pathspec  # only for path patterns in `include`

        spec = pathspec.GitIgnoreSpec.from_lines(paths)

    def included(name: str, relative: str | None) -> bool:
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in names):
            return True
        return spec is not None and spec.match_file(relative or name)

    return included
