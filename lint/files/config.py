"""`[tool.odelint]` in pyproject.toml: found by walking up from each file, validated strictly."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from odelint.api.records import NamedTuple
from odelint.files import observed
from odelint.files.selection import Layer, SelectionError, check_selectors, matching, resolve
from odelint.files.verdicts import Memo, filed_under
from odelint.files.versions import NO_TARGETS, TargetError, parse_targets, target_versions

TYPE_CHECKING = False  # not typing's: a warm run imports no typing (odelint.api.records)
if TYPE_CHECKING:
    from packaging.version import Version

DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".mypy_cache", ".nox", ".pants.d",
    ".pytype", ".ruff_cache", ".odelint_cache", ".svn", ".tox", ".venv", "__pypackages__", "_build",
    "buck-out", "build", "dist", "node_modules", "site-packages", "venv", "__pycache__",
)

# Settings rules read (FileContext.options): `strict-key-reuse` makes ODL704 report every reuse
# of a PRNG key, deliberate ones included (as `jax.debug_key_reuse(True)` does at run time).
RULE_OPTIONS = ("strict-key-reuse",)
_LIST_KEYS = ("select", "ignore", "extend-select", "exclude", "extend-exclude", "include", "extend-include",
              "target-version")
_BOOL_KEYS = ("unsafe-fixes", "respect-gitignore", "force-exclude", "preview", *RULE_OPTIONS)
KNOWN_KEYS = (*_LIST_KEYS, *_BOOL_KEYS, "per-file-ignores")

if TYPE_CHECKING:
    import pathspec


class ConfigError(Exception):
    """A configuration that cannot be used; the message names the file and the problem.
    `path` and `line` say where in a configuration file it lies, when known."""

    def __init__(self, message: str, path: str | None = None, line: int = 1) -> None:
        super().__init__(message)
        self.path, self.line = path, line

    @property
    def reason(self) -> str:
        """The message without the file's name in front (shown at the file's own position)."""
        text = str(self)
        return text[len(self.path) + 2:] if self.path and text.startswith(f"{self.path}: ") else text


class Overrides(NamedTuple):
    """What the command line says; it wins over the file."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    extend_include: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    unsafe_fixes: bool | None = None
    force_exclude: bool | None = None
    preview: bool | None = None  # --preview
    config: str | None = None
    isolated: bool = False
    # `--config "key = value"`: validated settings (Python names) that win over every file
    settings: Mapping = MappingProxyType({})
    target_versions: tuple[tuple[str, Version], ...] = ()  # --target-version

    def layer(self) -> Layer:
        return Layer(self.select, self.extend_select, self.ignore)


class Settings:
    """What applies to the files under one configuration: its rule selection, exclusions and overrides."""

    def __init__(self, *, root: str, path: str | None, file_layer: Layer, overrides: Overrides,
                 exclude: tuple[str, ...], include: tuple[str, ...] | None, extend_include: tuple[str, ...],
                 per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...], unsafe_fixes: bool,
                 respect_gitignore: bool, force_exclude: bool, codes: tuple[str, ...],
                 targets: tuple[tuple[str, Version], ...] = (), options: frozenset[str] = frozenset(),
                 preview: bool = False, verdicts: Memo | None = None) -> None:
        self.root = root
        self.path = path
        self.file_layer = file_layer
        self.overrides = overrides
        self.exclude = exclude
        self.include = include  # None: the default file patterns
        self.extend_include = extend_include
        self.per_file_ignores = per_file_ignores
        self.unsafe_fixes = unsafe_fixes
        self.respect_gitignore = respect_gitignore
        self.force_exclude = force_exclude
        self.codes = codes
        self.targets = targets  # target-version, then --target-version
        self.options = options  # the RULE_OPTIONS set to true
        self.preview = preview  # `preview = true` / `--preview`: the opt-in rules are on like the others
        # which paths `exclude` and `per-file-ignores` match, remembered between runs (the resolver's)
        self._verdicts = verdicts if verdicts is not None else Memo()

    @functools.cached_property
    def versions(self) -> Mapping[str, Version | None]:
        """The JAX stack's versions rules may check against (see odelint.files.versions)."""
        return target_versions(self.root, self.targets)

    def versions_for(self, codes: frozenset[str]) -> Mapping[str, Version | None]:
        """What every face hands the engine for a file linted with `codes`: the target versions,
        or none where no rule among them reads any (finding them looks along `sys.path`)."""
        from odelint.api.registry import uses_versions

        return self.versions if uses_versions(codes) else NO_TARGETS

    @functools.cached_property
    def base_enabled(self) -> frozenset[str]:
        from odelint.api.registry import opt_in_codes

        return resolve(self.codes, [self.file_layer, self.overrides.layer()],
                       frozenset() if self.preview else opt_in_codes())

    @functools.cached_property
    def _exclude_patterns(self) -> tuple[str, ...]:
        """The patterns that are not plain names (the defaults are)."""
        return tuple(p for p in self.exclude if p not in self._excluded_names)

    @functools.cached_property
    def _exclude_spec(self) -> pathspec.GitIgnoreSpec:
        import pathspec  # only to decide a path no run has decided

        return pathspec.GitIgnoreSpec.from_lines(self._exclude_patterns)

    @functools.cached_property
    def _excluded_names(self) -> frozenset[str]:
        """Patterns that are plain names (`.venv`, `build`): they match any path component,
        which a set lookup decides without a regular expression per pattern and path."""
        return frozenset(p for p in self.exclude if p and not any(c in p for c in "/*?[]!\\#") and p.strip() == p)

    @functools.cached_property
    def _per_file_specs(self) -> tuple[pathspec.GitIgnoreSpec, ...]:
        import pathspec  # only to decide a path no run has decided

        return tuple(pathspec.GitIgnoreSpec.from_lines([pattern]) for pattern, _ in self.per_file_ignores)

    @functools.cached_property
    def _per_file_codes(self) -> tuple[frozenset[str], ...]:
        return tuple(matching(self.codes, selectors) for _, selectors in self.per_file_ignores)

    def _pattern_indices(self, verdict: object) -> bool:
        """Is a remembered per-file-ignores verdict a list of its patterns' indices?"""
        return isinstance(verdict, list) and all(type(index) is int for index in verdict) \
            and set(verdict) <= set(range(len(self.per_file_ignores)))

    def _filed(self, setting: str, patterns: Sequence[str]) -> str:
        """Where the verdicts of one of this configuration's settings are kept."""
        return filed_under(f"{setting}\0{self.root}\0{self.path}", "\0".join(patterns))

    @functools.cached_property
    def _exclude_filed(self) -> str:
        return self._filed("exclude", self._exclude_patterns)

    @functools.cached_property
    def _per_file_filed(self) -> str:
        return self._filed("per-file-ignores", [pattern for pattern, _ in self.per_file_ignores])

    def relative(self, path: str) -> str:
        relative = os.path.relpath(os.path.abspath(path), self.root)
        return relative.replace(os.sep, "/")

    def excluded(self, path: str, is_dir: bool = False, relative: str | None = None) -> bool:
        """Does `exclude` match? `relative` (to the root) may be passed when already known."""
        relative = relative or self.relative(path)
        if relative.startswith("../"):
            relative = os.path.basename(os.path.abspath(path))
        if not self._excluded_names.isdisjoint(relative.split("/")):
            return True
        if not self._exclude_patterns:
            return False
        name = relative + ("/" if is_dir else "")
        return self._verdicts.recall(self._exclude_filed, name, lambda: self._exclude_spec.match_file(name))

    def include_patterns(self, defaults: Sequence[str]) -> tuple[str, ...]:
        """The file patterns a folder walk picks up: `include` (else the defaults) plus `extend-include`."""
        return (*(self.include if self.include is not None else defaults), *self.extend_include)

    def enabled(self, path: str) -> frozenset[str]:
        """Rule codes on for this file (after per-file-ignores)."""
        if not self.per_file_ignores:
            return self.base_enabled
        relative = self.relative(path)
        matched = self._verdicts.recall(  # the indices of the patterns that match
            self._per_file_filed, relative,
            lambda: [index for index, spec in enumerate(self._per_file_specs) if spec.match_file(relative)],
            valid=self._pattern_indices)
        ignored: set[str] = set()
        for index in matched:
            ignored |= self._per_file_codes[index]
        return self.base_enabled - ignored


def _list_of_strings(value, key: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings")
    return tuple(value)


def parse_table(table: Mapping, where: str, codes: Sequence[str]) -> dict:
    """Validate a `[tool.odelint]` table and return it with Python names as keys."""
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where}: [tool.odelint] must be a table")
    unknown = sorted(set(table) - set(KNOWN_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) in [tool.odelint]: {', '.join(unknown)} "
                          f"(known: {', '.join(KNOWN_KEYS)})")
    parsed: dict = {}
    for key in _LIST_KEYS:
        if key in table:
            parsed[key.replace("-", "_")] = _list_of_strings(table[key], key, where)
    for key in _BOOL_KEYS:
        if key in table:
            if not isinstance(table[key], bool):
                raise ConfigError(f"{where}: `{key}` must be true or false")
            parsed[key.replace("-", "_")] = table[key]
    if "target_version" in parsed:
        try:
            parsed["target_version"] = tuple(parse_targets(parsed["target_version"], where).items())
        except TargetError as error:
            raise ConfigError(str(error)) from None
    if "per-file-ignores" in table:
        value = table["per-file-ignores"]
        if not isinstance(value, Mapping):
            raise ConfigError(f"{where}: `per-file-ignores` must be a table of glob = [codes]")
        parsed["per_file_ignores"] = tuple(
            (pattern, _list_of_strings(selectors, f"per-file-ignores.{pattern}", where))
            for pattern, selectors in value.items())
    try:
        check_selectors([*parsed.get("select", ()), *parsed.get("extend_select", ()), *parsed.get("ignore", ()),
                         *(s for _, group in parsed.get("per_file_ignores", ()) for s in group)], codes, where)
    except SelectionError as error:
        raise ConfigError(str(error)) from None
    return parsed


def read_config_file(path: str, codes: Sequence[str]) -> dict | None:
    """The validated `[tool.odelint]` table of a pyproject.toml, or None when it has none; any
    other file (an `odelint.toml` given to `--config`) holds the settings at its top level.

    A pyproject.toml that never writes `odelint` has no such table, and is not parsed: every
    project has one, and parsing it (with tomllib's import) cost 5 ms of each run that
    answers from the cache. Its TOML is then not checked either: odelint reads nothing else."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}") from None
    if b"odelint" not in data and os.path.basename(path) == "pyproject.toml":
        return None
    import tomllib  # only where there is a configuration file to read

    try:
        document = tomllib.loads(data.decode("utf-8"))
    except tomllib.TOMLDecodeError as error:
        found = re.search(r"at line (\d+)", str(error))
        line = int(found.group(1)) if found else max(1, data.count(b"\n"))
        raise ConfigError(f"{path}: invalid TOML: {error}", path, line) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not valid UTF-8") from None
    try:
        if os.path.basename(path) != "pyproject.toml":
            return parse_table(document, path, codes)
        tool = document.get("tool", {})
        if not isinstance(tool, Mapping) or "odelint" not in tool:
            return None
        return parse_table(tool["odelint"], path, codes)
    except ConfigError as error:
        raise ConfigError(str(error), path, _line_of(data.decode("utf-8"), str(error))) from None


def _line_of(text: str, message: str) -> int:
    """The line of what a message names (the key `ignroe`, the selector 'ODL777'), looked for
    from the [tool.odelint] header on; that header's line when nothing is found."""
    lines = text.split("\n")
    start = next((number for number, line in enumerate(lines) if line.strip() == "[tool.odelint]"), 0)
    named = re.findall(r"`([^`]+)`|'([^']+)'", message)
    unknown = message.partition("unknown key(s) in [tool.odelint]: ")[2].split(" (known")[0]
    candidates = [part for found in named for part in found if part] + [key for key in unknown.split(", ") if key]
    for candidate in candidates:
        key = re.compile(rf"\s*[\"']?{re.escape(candidate.split('.')[0])}[\"']?\s*=")
        for number in range(start, len(lines)):
            if key.match(lines[number]) or candidate in lines[number]:
                return number + 1
    return start + 1


def parse_config_options(values: Sequence[str], codes: Sequence[str]) -> tuple[str | None, dict]:
    """Ruff's `--config`: a configuration file, or `key = value` TOML overriding one setting.

    Returns (the file or None, the validated overrides); an unknown key, a bad value or a
    second file raises ConfigError naming the option."""
    if not values:
        return None, {}
    import tomllib

    path: str | None = None
    settings: dict = {}
    for value in values:
        if os.path.isfile(value) or ("=" not in value and value.endswith(".toml")):
            if path is not None:
                raise ConfigError(f"--config {value}: only one configuration file may be given (also: {path})")
            path = value
            continue
        try:
            table = tomllib.loads(value)
        except tomllib.TOMLDecodeError as error:
            raise ConfigError(f"--config {value!r}: neither a file nor a `key = value` TOML setting "
                              f"({error})") from None
        settings.update(parse_table(table, f"--config {value!r}", codes))
    return path, settings


def build_settings(root: str, path: str | None, table: Mapping, overrides: Overrides,
                   codes: Sequence[str], verdicts: Memo | None = None) -> Settings:
    table = {**table, **overrides.settings}
    exclude = overrides.exclude if overrides.exclude is not None else table.get("exclude", ())
    unsafe = overrides.unsafe_fixes if overrides.unsafe_fixes is not None else table.get("unsafe_fixes", False)
    return Settings(
        root=root,
        path=path,
        file_layer=Layer(table.get("select"), table.get("extend_select", ()), table.get("ignore", ())),
        overrides=overrides,
        exclude=(*DEFAULT_EXCLUDE, *exclude, *table.get("extend_exclude", ()), *overrides.extend_exclude),
        include=table.get("include"),
        extend_include=(*table.get("extend_include", ()), *overrides.extend_include),
        per_file_ignores=(*table.get("per_file_ignores", ()), *overrides.per_file_ignores),
        unsafe_fixes=unsafe,
        respect_gitignore=table.get("respect_gitignore", True),
        force_exclude=(overrides.force_exclude if overrides.force_exclude is not None
                       else table.get("force_exclude", False)),
        codes=tuple(codes),
        targets=(*table.get("target_version", ()), *overrides.target_versions),
        options=frozenset(key for key in RULE_OPTIONS if table.get(key.replace("-", "_"))),
        preview=overrides.preview if overrides.preview is not None else table.get("preview", False),
        verdicts=verdicts,
    )


class ConfigResolver:
    """Settings for any path: the nearest pyproject.toml with [tool.odelint] above it, cached
    per folder; `--config` or `--isolated` make one settings object serve every file."""

    def __init__(self, overrides: Overrides, codes: Sequence[str], cwd: str | None = None) -> None:
        self.overrides = overrides
        self.codes = tuple(codes)
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self._by_folder: dict[str, Settings | ConfigError] = {}
        self._fixed: Settings | None = None
        self.verdicts = Memo()  # discovery's and every settings' (odelint.files.verdicts)
        if overrides.isolated:
            self._fixed = build_settings(self.cwd, None, {}, overrides, self.codes, self.verdicts)
        elif overrides.config:
            path = os.path.abspath(overrides.config)
            if not os.path.isfile(path):
                raise ConfigError(f"--config {overrides.config}: no such configuration file")
            table = read_config_file(path, self.codes) or {}
            self._fixed = build_settings(os.path.dirname(path), path, table, overrides, self.codes, self.verdicts)

    def for_path(self, path: str) -> Settings:
        """Raises ConfigError when the config that governs `path` is broken."""
        if self._fixed is not None:
            return self._fixed
        absolute = os.path.abspath(path)
        return self.for_folder(absolute if os.path.isdir(absolute) else os.path.dirname(absolute))

    def for_folder(self, folder: str) -> Settings:
        """`for_path` for an absolute, normalised path known to name a folder (a walk's),
        without asking the file system which it is."""
        if self._fixed is not None:
            return self._fixed
        found = self._for_folder(folder)
        if isinstance(found, ConfigError):
            raise found
        return found

    def for_file(self, absolute: str) -> Settings:
        """`for_path` for an absolute, normalised path known to name a file (not a folder): its
        folder's settings, without asking the file system which it is (asked for every file of
        a run)."""
        if self._fixed is not None:
            return self._fixed
        return self.for_folder(os.path.dirname(absolute))

    def _for_folder(self, folder: str) -> Settings | ConfigError:
        if folder in self._by_folder:
            return self._by_folder[folder]
        candidate = os.path.join(folder, "pyproject.toml")
        result: Settings | ConfigError
        try:
            table = read_config_file(candidate, self.codes) if observed.isfile(candidate) else None
        except ConfigError as error:
            table, result = None, error
        else:
            result = None  # type: ignore[assignment]
        if result is None:
            parent = os.path.dirname(folder)
            if table is not None:
                result = build_settings(folder, candidate, table, self.overrides, self.codes, self.verdicts)
            elif parent == folder:
                result = build_settings(self.cwd, None, {}, self.overrides, self.codes, self.verdicts)
            else:
                result = self._for_folder(parent)
        self._by_folder[folder] = result
        return result
