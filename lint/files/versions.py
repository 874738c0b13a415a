"""The versions of the JAX stack a rule may check code against (`--target-version`).

Each package's version comes from, in order: `--target-version jax==0.4.33` (or the
`target-version` setting), an exact pin (`==`) in the project's dependency files next to its
configuration, and the distribution installed here (read with importlib.metadata; the
package is never imported). A package found nowhere maps to None.
"""

from __future__ import annotations

import functools
import glob
import os
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from packaging.version import InvalidVersion, Version

PACKAGES = ("jax", "jaxlib", "equinox", "diffrax", "optax")
PIN_FILES = ("pyproject.toml", "setup.cfg", "requirements*.txt", "constraints*.txt", "environment*.yml",
             "environment*.yaml")


class TargetError(ValueError):
    """A `--target-version` that is not `PACKAGE==VERSION` for a package of the JAX stack."""


def parse_targets(values: Iterable[str], where: str) -> dict[str, Version]:
    from packaging.utils import canonicalize_name  # imports packaging.tags: only for target versions

    targets: dict[str, Version] = {}
    for value in values:
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
    from odelint.api import dependency_files  # the parser ODL501 uses

    pins: dict[str, Version] = {}
    for pattern in PIN_FILES:
        for path in sorted(glob.glob(os.path.join(glob.escape(folder), pattern))):
            try:
                with open(path, encoding="utf-8") as handle:
                    declared = dependency_files.read(os.path.basename(path), handle.read())
            except (OSError, UnicodeDecodeError):
                continue
            for item in declared:
                specs = list(item.specifier)
                if item.name in PACKAGES and not item.conditional and len(specs) == 1 \
                        and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
                    try:
                        pins.setdefault(item.name, Version(specs[0].version))
                    except InvalidVersion:
                        continue
    return pins


def installed(name: str) -> Version | None:
    from importlib import metadata  # only when a rule asks for versions

    try:
        return Version(metadata.version(name))
    except (metadata.PackageNotFoundError, InvalidVersion):
        return None


@functools.cache
def target_versions(folder: str, explicit: tuple[tuple[str, Version], ...] = ()) -> Mapping[str, Version | None]:
    """package -> version for the project configured in `folder`; read-only."""
    chosen: dict[str, Version | None] = dict(explicit)
    pins = pinned(folder)
    for name in PACKAGES:
        if name not in chosen:
            chosen[name] = pins[name] if name in pins else installed(name)
    return MappingProxyType(chosen)


def describe(versions: Mapping[str, Version | None]) -> str:
    """A stable text for cache keys."""
    return ",".join(f"{name}={versions[name]}" for name in sorted(versions))
