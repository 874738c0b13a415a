"""Which files to lint: walk the given paths, honour .gitignore and `exclude`, never loop."""

from __future__ import annotations

import fnmatch
import functools
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple

from odelint.files.config import ConfigError, ConfigResolver
from odelint.files.fileio import display, is_temporary, not_regular, remove_stale_temporary
from odelint.files.verdicts import Memo, filed_under

if TYPE_CHECKING:
    import pathspec


class Target(NamedTuple):
    """A file to lint, as discovery found it."""

    path: str
    explicit: bool  # named on the command line: linted whatever its name
    regular: bool = True  # False: a pipe named on the command line (`<(cat t.py)`), read once
    status: os.stat_result | None = None  # as discovery found it


class Discovery:
    """The files to lint, and what discovery could not read or skipped."""

    def __init__(self, targets: list[Target], errors: list[tuple[str, str]]) -> None:
        self.targets = targets
        self.errors = errors  # (path, reason)
        self.config_errors: dict[tuple[str, str], int] = {}  # of errors: -> line
        self.skipped: list[tuple[str, str]] = []  # (path, why): warnings


class GitIgnore:
    """The .gitignore files that apply to a path, from the repository root down; their
    verdicts are remembered in `verdicts` (odelint.files.verdicts), filed under the chain of
    folders that hold them and their lines."""

    def __init__(self, verdicts: Memo) -> None:
        self._verdicts = verdicts
        self._lines: dict[str, tuple[str, ...]] = {}
        self._specs: dict[str, pathspec.PathSpec] = {}
        self._roots: dict[str, str | None] = {}
        self._chains: dict[str, tuple[tuple[str, ...], str]] = {}

    def _lines_in(self, folder: str) -> tuple[str, ...]:
        """The patterns of the folder's .gitignore and, at the repository's root, of
        .git/info/exclude (no blank lines or comments: `git init` writes an exclude file of
        comments)."""
        if folder not in self._lines:
            lines: list[str] = []
            names = [".gitignore", os.path.join(".git", "info", "exclude")] if self._root(folder) == folder \
                else [".gitignore"]
            for name in names:
                try:
                    with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as handle:
                        lines += handle.read().splitlines()
                except OSError:
                    pass
            self._lines[folder] = tuple(line for line in lines if line.strip() and not line.startswith("#"))
        return self._lines[folder]

    def _spec(self, folder: str) -> pathspec.PathSpec:
        if folder not in self._specs:
            import pathspec  # only to decide a path no run has decided

            self._specs[folder] = pathspec.GitIgnoreSpec.from_lines(self._lines_in(folder))
        return self._specs[folder]

    def _root(self, folder: str) -> str | None:
        if folder not in self._roots:
            if os.path.exists(os.path.join(folder, ".git")):
                self._roots[folder] = folder
            else:
                parent = os.path.dirname(folder)
                self._roots[folder] = None if parent == folder else self._root(parent)
        return self._roots[folder]

    def _chain(self, folder: str) -> tuple[tuple[str, ...], str]:
        """The folders with patterns that apply inside `folder`, from the repository root down,
        and the key of their verdicts."""
        if folder not in self._chains:
            root = self._root(folder)
            parent = os.path.dirname(folder)
            above: tuple[tuple[str, ...], str] = ((), "") if root is None or folder == root or parent == folder \
                else self._chain(parent)
            if root is not None and self._lines_in(folder):
                folders = (*above[0], folder)
                text = "\0".join(f"{each}\n" + "\n".join(self._lines_in(each)) for each in folders)
                self._chains[folder] = folders, filed_under("\0".join(folders), text)
            else:
                self._chains[folder] = above
        return self._chains[folder]

    def applies(self, folder: str) -> bool:
        """Does any .gitignore apply to the entries of `folder` (absolute and normalised)?"""
        return bool(self._chain(folder)[0])

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Is the file or folder at `path` (absolute and normalised) ignored?"""
        folders, filed = self._chain(os.path.dirname(path))
        if not folders:
            return False
        return self._verdicts.recall(filed, path + "/" if is_dir else path, lambda: self._decide(folders, path, is_dir))

    def _decide(self, folders: tuple[str, ...], path: str, is_dir: bool) -> bool:
        decision = False
        for folder in folders:
            relative = path[len(folder):].lstrip(os.sep).replace(os.sep, "/") + ("/" if is_dir else "")
            result = self._spec(folder).check_file(relative)
            if result.include is not None:
                decision = result.include
        return decision


def discover(paths: Sequence[str], resolver: ConfigResolver, patterns: Sequence[str]) -> Discovery:
    """Files under `paths` that `include` picks (by default `patterns`; explicit files always
    count). .gitignore verdicts go to the resolver's memo, with those of its settings."""
    found = Discovery([], [])
    gitignore = GitIgnore(resolver.verdicts)
    seen: set[tuple[int, int]] = set()

    def add(path: str, explicit: bool) -> None:
        """Each file once, however it is reached (a symlink and its target, two hard links:
        fixing one name would find the other changed on disk). Only regular files are read
        from a folder walk: opening a FIFO would wait forever."""
        path = os.path.normpath(path)  # `./pkg/a.py` is shown as `pkg/a.py`
        try:
            status = os.stat(path)
        except OSError as error:
            if explicit:  # reported (no such file, permission denied) when it is read
                found.targets.append(Target(path, explicit))
            else:
                found.errors.append((display(path), error.strerror or str(error)))
            return
        regular = stat.S_ISREG(status.st_mode)
        if not regular and not explicit:
            found.skipped.append((display(path), f"{not_regular(status.st_mode)}; skipped"))
            return
        identity = (status.st_dev, status.st_ino)
        if identity not in seen:
            seen.add(identity)
            found.targets.append(Target(path, explicit, regular, status))

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
        for file_path in _walk(path, resolver, gitignore, patterns, found.errors, found.config_errors):
            add(file_path, False)
    return found


def shown_path(path: str) -> str:
    """A path as reports show files: relative when under the current folder."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _force_excluded(path: str, resolver: ConfigResolver) -> bool:
    """With `force-exclude`, files named explicitly (as pre-commit does) obey `exclude` too."""
    try:
        settings = resolver.for_path(path)
    except ConfigError:
        return False  # reported when the file itself is linted
    return settings.force_exclude and settings.excluded(path)


def _walk(top: str, resolver: ConfigResolver, gitignore: GitIgnore, patterns: Sequence[str],
          errors: list[tuple[str, str]], config_errors: dict[tuple[str, str], int]) -> Iterator[str]:
    def on_error(error: OSError) -> None:
        errors.append((error.filename or top, error.strerror or str(error)))

    for folder, dirs, files in os.walk(top, onerror=on_error):
        absolute = os.path.abspath(folder)  # once: each abspath of a relative path asks the OS for the current folder
        try:
            settings = resolver.for_folder(absolute)
        except ConfigError as error:  # once per configuration file, at its line
            where = (shown_path(error.path), error.reason) if error.path else (folder, str(error))
            if where not in config_errors:
                config_errors[where] = error.line
                errors.append(where)
            dirs[:] = []
            continue
        base = settings.relative(folder)
        inside = not base.startswith("..")
        # Outside the root and not above it (`../other/pkg`), `exclude` matches a path by its
        # name, as `Settings.excluded` would find after a relpath per file.
        beside = not inside and any(part != ".." for part in base.split("/"))

        def relative(name: str, base: str = base, inside: bool = inside, beside: bool = beside) -> str | None:
            """`name` relative to the settings' root, without a relpath per file."""
            if beside:
                return name
            return (name if base == "." else f"{base}/{name}") if inside else None

        # Most trees have no .gitignore above or in them: then no entry needs asking.
        ignoring = settings.respect_gitignore and gitignore.applies(absolute)

        included = _inclusion(settings.include_patterns(patterns))
        kept = []
        for name in sorted(dirs):
            path = os.path.join(folder, name)
            if settings.excluded(path, is_dir=True, relative=relative(name)):
                continue
            if ignoring and gitignore.ignored(os.path.join(absolute, name), is_dir=True):
                continue
            kept.append(name)
        dirs[:] = kept
        for name in sorted(files):
            if is_temporary(name):  # left by an odelint that was killed while writing
                remove_stale_temporary(folder, name)
                continue
            if not included(name, relative(name)):
                continue
            path = os.path.join(folder, name)
            if settings.excluded(path, relative=relative(name)) or (
                    ignoring and gitignore.ignored(os.path.join(absolute, name), is_dir=False)):
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
