"""The versions of the JAX stack a rule may check code against (`--target-version`).

Each package's version comes from, in order: `--target-version jax==0.4.33` (or the
`target-version` setting), an exact pin (`==`) in the project's dependency files next to its
configuration, and the distribution installed here (its metadata, read as
importlib.metadata reads it; the package is never imported). A package found nowhere maps to None.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping

TYPE_CHECKING = False  # not typing's: a warm run imports no typing (odelint.api.records)
if TYPE_CHECKING:  # packaging's Version is imported where a version is read (Targets)
    from packaging.version import Version

PACKAGES = ("jax", "jaxlib", "equinox", "diffrax", "optax")
PIN_FILES = ("pyproject.toml", "setup.cfg", "requirements*.txt", "constraints*.txt", "environment*.yml",
             "environment*.yaml")


class TargetError(ValueError):
    """A `--target-version` that is not `PACKAGE==VERSION` for a package of the JAX stack."""


def parse_targets(values: Iterable[str], where: str) -> dict[str, Version]:
    targets: dict[str, Version] = {}
    for value in values:
        from packaging.utils import canonicalize_name  # imports packaging.tags: only for target versions
        from packaging.version import InvalidVersion, Version

        name, sep, version = value.partition("==")
        name = canonicalize_name(name.strip())
        if not sep or name not in PACKAGES:
            raise TargetError(f"{where}: target version {value!r} must look like jax==0.4.33 "
                              f"(packages: {', '.join(PACKAGES)})")
        try:
            targets[name] = Version(version.strip())
        except InvalidVersion:
            raise TargetError(f"{where}: {version.strip()!r} in {value!r} is not a version") from None
    return targets


def pinned(folder: str) -> dict[str, Version]:
    """Exact, unconditional pins (`jax==0.4.33`) in the dependency files directly in `folder`."""
    pins: dict[str, Version] = {}
    for pattern in PIN_FILES:
        for path in sorted(glob.glob(os.path.join(glob.escape(folder), pattern))):
            try:
                with open(path, encoding="utf-8") as handle:
                    text = handle.read()
            except (OSError, UnicodeDecodeError):
                continue
            if not _may_pin(text):
                continue
            from odelint.api import dependency_files  # the parser ODL501 uses, read only for a pin file
            from packaging.version import InvalidVersion, Version

            declared = dependency_files.read(os.path.basename(path), text)
            for item in declared:
                specs = list(item.specifier)
                if item.name in PACKAGES and not item.conditional and len(specs) == 1 \
                        and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
                    try:
                        pins.setdefault(item.name, Version(specs[0].version))
                    except InvalidVersion:
                        continue
    return pins


# A package's name (whose canonical form has no separator to vary), its extras, then `==`:
# what every exact pin is written as (PEP 508, with the parenthesised form and a
# backslash-continued line; conda's `name==1.2`).
_PIN_SHAPE = rf"(?:{'|'.join(PACKAGES)})[\s\\]*(?:\[[^\]]*\][\s\\]*)?\(?[\s\\]*=="


def _may_pin(text: str) -> bool:
    """Whether `text` writes one of our packages followed by `==`. A project's dependency file
    usually names jax, and often pins a tool elsewhere (`ruff==0.6.9`); parsing it for that
    would import packaging's requirement parser (about 20 ms) on every run that answers from
    the cache."""
    return re.search(_PIN_SHAPE, text.lower()) is not None  # compiled on first use


def installed_text(name: str) -> str | None:
    """The installed distribution's version as its metadata writes it, as importlib.metadata
    reads it. Its `.dist-info` folder is found here on `sys.path` the way importlib.metadata's
    path finder looks; importlib.metadata itself (20 ms to import, with the e-mail parser, on
    every run that answers from the cache) only where that look cannot be sure."""
    found = _dist_info(name)
    if found is not _UNSURE:
        return found
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _parsed(text: str | None) -> Version | None:
    from packaging.version import InvalidVersion, Version

    try:
        return Version(text) if text is not None else None
    except InvalidVersion:
        return None


_UNSURE = "unsure"


def _dist_info(name: str) -> str | None:
    """The `Version:` of the first `.dist-info` folder on `sys.path` named for `name` (None
    when there is none), or _UNSURE when importlib.metadata might answer otherwise: another
    finder of distributions, an archive or an egg on the path, an `.egg-info`, odd metadata."""
    import importlib.machinery

    if any(hasattr(finder, "find_distributions") and finder is not importlib.machinery.PathFinder
           for finder in sys.meta_path):
        return _UNSURE
    wanted = _normalized(name)
    for entry in sys.path:
        folder = entry or "."
        if os.path.isfile(folder) or folder.lower().endswith(".egg"):
            return _UNSURE
        children = _metadata_folders(folder)
        if children is None:
            continue
        for child in children:
            low = child.lower()
            if _normalized(low.rpartition(".")[0].partition("-")[0]) != wanted:
                continue
            return _version_in(os.path.join(folder, child, "METADATA")) if low.endswith(".dist-info") else _UNSURE
    return None


@functools.cache
def _metadata_folders(folder: str) -> tuple[str, ...] | None:
    """The `.dist-info` and `.egg-info` entries of a folder on `sys.path`, listed once for
    every package asked about (as `target_versions`, once per process); None if unreadable."""
    try:
        return tuple(child for child in os.listdir(folder) if child.lower().endswith((".dist-info", ".egg-info")))
    except OSError:
        return None


def _normalized(name: str) -> str:
    """importlib.metadata's normalisation of a distribution's name (PEP 503, with `_`)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _version_in(path: str) -> str | None:
    """The `Version:` header of a METADATA file (_UNSURE when it has none or cannot be read)."""
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    break
                key, colon, value = line.partition(":")
                if colon and key.lower() == "version":
                    return value.strip()
    except (OSError, UnicodeDecodeError):
        pass
    return _UNSURE


class Targets(Mapping[str, "Version | None"]):
    """package -> version, read-only. An installed package's version is kept as its metadata
    writes it and parsed when a rule reads it: a run that answers every file from the cache
    needs only the texts, for its cache keys, and never imports packaging's version parser."""

    def __init__(self, texts: Mapping[str, str | None]) -> None:
        self._texts = dict(texts)
        self._parsed: dict[str, Version | None] = {}

    def __getitem__(self, name: str) -> Version | None:
        if name not in self._parsed:
            self._parsed[name] = _parsed(self._texts[name])
        return self._parsed[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._texts)

    def __len__(self) -> int:
        return len(self._texts)

    def __reduce__(self) -> tuple[type[Targets], tuple[dict[str, str | None]]]:
        return Targets, (self._texts,)  # to a worker: the texts alone

    def describe(self) -> str:
        return ",".join(f"{name}={self._texts[name]}" for name in sorted(self._texts))


NO_TARGETS = Targets({})  # for files no rule reading versions looks at


@functools.cache
def target_versions(folder: str, explicit: tuple[tuple[str, Version], ...] = ()) -> Targets:
    """package -> version for the project configured in `folder`."""
    chosen: dict[str, str | None] = {name: str(version) for name, version in explicit}
    pins = pinned(folder)
    for name in PACKAGES:
        if name not in chosen:
            chosen[name] = str(pins[name]) if name in pins else installed_text(name)
    return Targets(chosen)


def forget() -> None:
    """Read the pins and the installed versions again (a long-running server, after a
    dependency file changed)."""
    target_versions.cache_clear()
    _metadata_folders.cache_clear()


def describe(versions: Mapping[str, Version | None]) -> str:
    """A stable text for cache keys (a version is written as its source wrote it: texts that
    differ but name one version only cost a re-lint)."""
    if isinstance(versions, Targets):
        return versions.describe()
    return ",".join(f"{name}={versions[name]}" for name in sorted(versions))
