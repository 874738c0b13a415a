"""The known-bad version table (known_bad_versions.toml): loading it and matching it.

Shared by ODL501, which asks whether a dependency file's constraints can only install a bad
combination, and `odelint doctor`, which asks whether the installed versions are one.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING

from odelint.analysis import tables
from packaging.version import InvalidVersion, Version

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

TABLE_FILE = "known_bad_versions.toml"
# Stands for every release newer than the newest listed one; valid because no row's bound
# lies above the newest listed release (a test checks it).
_NEWER_THAN_LISTED = Version("9999")


@dataclasses.dataclass(frozen=True)
class Combination:
    """One known-bad combination: every package of `when` within its range."""

    id: str
    when: Mapping[str, SpecifierSet]  # canonical package name -> bad range ("" = any version)
    blame: str                        # the package to change; findings point at its line
    symptom: str
    issues: tuple[str, ...]
    fix: str

    def matches_installed(self, installed: Mapping[str, Version]) -> bool:
        return all(name in installed and bad.contains(installed[name], prereleases=True)
                   for name, bad in self.when.items())


@dataclasses.dataclass(frozen=True)
class Table:
    releases: Mapping[str, tuple[Version, ...]]
    combinations: tuple[Combination, ...]

    def allowed(self, name: str, constraint: SpecifierSet) -> set[Version]:
        """The versions an installer could pick under `constraint`: the listed releases, the
        versions the constraint names itself (an exact pin of a yanked or unlisted release),
        and one stand-in for anything newer than the listed releases."""
        candidates = {*self.releases.get(name, ()), _NEWER_THAN_LISTED}
        for specifier in constraint:
            try:
                candidates.add(Version(specifier.version))
            except InvalidVersion:  # wildcards (`==0.4.*`) and arbitrary `===` strings
                pass
        return {version for version in candidates if constraint.contains(version, prereleases=True)}

    def forced(self, constraints: Mapping[str, SpecifierSet]) -> list[Combination]:
        """The combinations that every resolution of `constraints` (canonical name -> the
        intersection of everything the file says about that package) falls into."""
        return [combination for combination in self.combinations if self._forces(combination, constraints)]

    def _forces(self, combination: Combination, constraints: Mapping[str, SpecifierSet]) -> bool:
        for name, bad in combination.when.items():
            if name not in constraints:
                return False
            allowed = self.allowed(name, constraints[name])
            if not allowed or not all(bad.contains(version, prereleases=True) for version in allowed):
                return False
        return True

    def installed(self, versions: Mapping[str, Version]) -> list[Combination]:
        return [combination for combination in self.combinations if combination.matches_installed(versions)]


@functools.cache
def load() -> Table:
    """The table shipped inside the package (raises on a malformed table: it is our data)."""
    return parse(tables.read(TABLE_FILE))


def parse(data: Mapping) -> Table:
    # Imported here: packaging's name and specifier modules (with its platform tags) take 10 ms,
    # and every lint imports this module through ODL501's, which parses the table only for a
    # dependency file.
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.utils import canonicalize_name

    releases: dict[str, tuple[Version, ...]] = {canonicalize_name(name): tuple(Version(v) for v in versions)
                for name, versions in data.get("releases", {}).items()}
    combinations = []
    for row in data.get("combination", []):
        try:
            when: dict[str, SpecifierSet] = {canonicalize_name(name): SpecifierSet(spec)
                                             for name, spec in row["when"].items()}
        except InvalidSpecifier as error:
            raise ValueError(f"{TABLE_FILE}: row {row.get('id')!r}: {error}") from error
        blame = canonicalize_name(row["blame"])
        if blame not in when:
            raise ValueError(f"{TABLE_FILE}: row {row['id']!r} blames {blame!r}, which it does not name")
        combinations.append(Combination(row["id"], when, blame, row["symptom"], tuple(row["issues"]), row["fix"]))
    return Table(releases, tuple(combinations))
