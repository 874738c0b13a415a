"""Which files to lint: walk the given paths, honour .gitignore and `exclude`, never loop."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence

from odelint.api.records import NamedTuple
from odelint.files import observed
from odelint.files.config import ConfigError, ConfigResolver, Settings
from odelint.files.fileio import display, is_temporary, not_regular, remove_stale_temporary
from odelint.files.verdicts import Memo, filed_under

TYPE_CHECKING = False  # not typing's: a warm run imports no typing (odelint.api.records)
if TYPE_CHECKING:
    import pathspec


class Target(NamedTuple):
    """A file to lint, as discovery found it."""

    path: str
    explicit: bool  # named on the command line: linted whatever its name
    regular: bool = True  # False: a pipe named on the command line (`<(cat t.py)`), read once
    status: os.stat_result | None = None  # as discovery found it
    absolute: str | None = None  # the absolute path, where a folder walk found the file


class Discovery:
    """The files to lint, and what discovery could not read or skipped."""

    def __init__(self, targets: list[Target], errors: list[tuple[str, str]]) -> None:
        self.targets = targets
        self.errors = errors  # (path, reason)
        self.config_errors: dict[tuple[str, str], int] = {}  # of errors: -> line
        self.skipped: list[tuple[str, str]] = []  # (path, why): warnings
        # each walked folder's names, by its absolute path: what the cache's check that a
        # module is still absent would list again (odelint.files.depends)
        self.listings: dict[str, list[str]] = {}


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
            if observed.exists(os.path.join(folder, ".git")):
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

    def in_folder(self, folder: str) -> Callable[[str, bool], bool] | None:
        """Whether an entry of `folder` (absolute and normalised) is ignored, given its absolute
        path and whether it is a folder; None when no .gitignore applies there (most trees):
        then no entry needs asking."""
        folders, filed = self._chain(folder)
        if not folders:
            return None

        def ignored(path: str, is_dir: bool) -> bool:
            return self._verdicts.recall(filed, path + "/" if is_dir else path,
                                         lambda: self._decide(folders, path, is_dir))
        return ignored

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

    def add(path: str, explicit: bool, absolute: str | None = None) -> None:
        """Each file once, however it is reached (a symlink and its target, two hard links:
        fixing one name would find the other changed on disk). Only regular files are read
        from a folder walk: opening a FIFO would wait forever. A walk's paths come normalised,
        with their absolute path."""
        if absolute is None:
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
            found.targets.append(Target(path, explicit, regular, status, absolute))

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
        for file_path, absolute in _walk(path, resolver, gitignore, patterns, found):
            add(file_path, False, absolute)
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
          found: Discovery) -> Iterator[tuple[str, str]]:
    """(path as shown, absolute path) of each file to lint under `top`, in `os.walk`'s order
    (each folder's files by name, then its subfolders by name; links to folders are not
    followed), from one `scandir` per folder: no join, normpath or abspath per entry, as every
    warm run walks the whole tree. Errors, and each folder's names, go to `found`."""
    errors, config_errors = found.errors, found.config_errors
    top = os.path.normpath(top)
    # (folder as shown, its absolute path, the parent's settings and the folder's path relative to their root)
    pending: list[tuple[str, str, tuple[Settings, str] | None]] = [(top, os.path.abspath(top), None)]
    while pending:
        folder, absolute, above = pending.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError as error:
            errors.append((error.filename or folder, error.strerror or str(error)))
            continue
        try:
            settings = resolver.for_folder(absolute)
        except ConfigError as error:  # once per configuration file, at its line
            where = (shown_path(error.path), error.reason) if error.path else (folder, str(error))
            if where not in config_errors:
                config_errors[where] = error.line
                errors.append(where)
            continue
        # the parent's relative path and the name (under the same settings): no relpath per folder
        base = above[1] if above is not None and above[0] is settings else settings.relative(absolute)
        relative = _relative_to_root(base)
        ignored = gitignore.in_folder(absolute) if settings.respect_gitignore else None
        included = _inclusion(settings.include_patterns(patterns))
        shown = "" if folder == "." else folder if folder.endswith(os.sep) else folder + os.sep
        inside = absolute if absolute.endswith(os.sep) else absolute + os.sep
        files, folders = [], []
        found.listings[absolute] = [entry.name for entry in entries]
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if not is_dir:
                files.append(entry.name)
            elif not entry.is_symlink():  # a link to a folder is neither walked nor a file
                folders.append(entry.name)
        for name in sorted(files):
            if is_temporary(name):  # left by an odelint that was killed while writing
                remove_stale_temporary(folder, name)
                continue
            named = relative(name)
            if not included(name, named):
                continue
            path = shown + name
            if settings.excluded(path, relative=named) or (
                    ignored is not None and ignored(inside + name, False)):
                continue
            yield path, inside + name
        kept: list[tuple[str, str, tuple[Settings, str] | None]] = []
        for name in sorted(folders):
            named = relative(name)
            if settings.excluded(shown + name, is_dir=True, relative=named) or (
                    ignored is not None and ignored(inside + name, True)):
                continue
            inherited = (settings, named) if named is not None and not _outside(base) else None
            kept.append((shown + name, inside + name, inherited))
        pending.extend(reversed(kept))


def _relative_to_root(base: str) -> Callable[[str], str | None]:
    """A folder's entry's path relative to the settings' root, from the folder's (`base`),
    without a relpath per entry. Outside the root and not above it (`../other/pkg`), `exclude`
    matches a path by its name, as `Settings.excluded` would find after a relpath per file;
    above the root, no relative path."""
    if not _outside(base):
        return (lambda name: name) if base == "." else (lambda name: f"{base}/{name}")
    if any(part != ".." for part in base.split("/")):
        return lambda name: name
    return lambda name: None


def _outside(relative: str) -> bool:
    """Is a path relative to the settings' root outside it (`..`, `../pkg`; not `..pkg`)?"""
    return relative == ".." or relative.startswith("../")


@functools.cache
def _inclusion(patterns: tuple[str, ...]) -> Callable[[str, str | None], bool]:
    """Whether a file (its name, its path relative to the settings' root) is included. Name
    patterns (`*.ipynb`) match the name, all of them in one expression (a walk asks for every
    file); patterns with a `/` match the relative path as `.gitignore` lines do
    (`notebooks/**/*.ipynb`)."""
    names = [pattern for pattern in patterns if "/" not in pattern]
    paths = [pattern for pattern in patterns if "/" in pattern]
    named = re.compile("|".join(fnmatch.translate(pattern) for pattern in names)).match if names else None
    spec = None
    if paths:
        import pathspec  # only for path patterns in `include`

        spec = pathspec.GitIgnoreSpec.from_lines(paths)

    def included(name: str, relative: str | None) -> bool:
        if named is not None and named(name):
            return True
        return spec is not None and spec.match_file(relative or name)

    return included
