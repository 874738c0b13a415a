"""The deprecated-API table (deprecated_apis.toml, odelint.analysis.tables): one row per old
spelling, loaded once."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping

from odelint.analysis import tables
from packaging.version import InvalidVersion, Version

TABLE_FILE = "deprecated_apis.toml"
MATCHES = ("reference", "import", "keyword", "call")
FIXES = ("safe", "none")
OUTCOMES = ("error", "warning")
# The versions every row's `error` was checked against: a row without a known removal version
# fails from these on.
CHECKED = {"jax": "0.10.2", "equinox": "0.13.8", "diffrax": "0.7.2", "optax": "0.2.8"}


@dataclasses.dataclass(frozen=True)
class DeprecatedApi:
    code: str
    name: str                    # the qualified name the file refers to (a module for `import`)
    match: str
    use: str                     # the advice the message gives
    fix: str
    outcome: str
    error: str                   # what the old spelling does on the checked versions
    deprecated: str
    removed: str
    issues: tuple[str, ...]
    source: str = ""             # where `deprecated`/`removed` come from (a changelog entry, a PR, sources)
    existed: bool = True         # False: the library never had the name (NumPy's spelling, say)
    replacement: str = ""        # the qualified name a fix writes
    import_from: str = ""        # what `from ... import <old>` becomes
    keyword: str = ""
    new_keyword: str = ""
    values: Mapping[str, str] = dataclasses.field(default_factory=dict)
    add_keyword: str = ""

    @property
    def package(self) -> str:
        return self.name.split(".")[0]

    @property
    def fixable(self) -> bool:
        return self.fix == "safe"

    def standing(self, target: Version | None) -> Standing | None:
        """What the old spelling is for code written for `target` (the package's version the
        project targets): None where it is not deprecated yet there, so nothing to report.
        An unknown target, or a row whose versions are not known, reads as the checked versions."""
        deprecated, removed = _version(self.deprecated), _version(self.removed)
        checked = Version(CHECKED[self.package])
        if target is None or not self.existed:
            return Standing(self.status(), fails=True, fixable=True)
        if removed is not None and target >= removed:
            return Standing(f"was removed in {self.package} {self.removed}", fails=True, fixable=True)
        if deprecated is not None and target < deprecated:
            return None
        since = f" is deprecated since {self.package} {self.deprecated} and" if deprecated is not None else ""
        works = f"still works on {self.package} {target}, the targeted version, but{since}"
        if removed is not None:
            return Standing(f"{works} was removed in {self.package} {self.removed}", fails=False,
                            fixable=deprecated is not None)
        if deprecated is not None and target < checked:
            return Standing(f"{works} fails on {self.package} {checked}", fails=False, fixable=True)
        return Standing(self.status(), fails=True, fixable=True)

    def status(self) -> str:
        """`was removed in jax 0.6.0`, `is deprecated (it warns)`, ... for messages."""
        if self.outcome == "warning":
            since = f" since {self.package} {self.deprecated}" if self.deprecated else ""
            return f"is deprecated{since} and warns"
        if not self.existed:
            return f"does not exist in {self.package} (no release had it)"
        if self.removed:
            return f"was removed in {self.package} {self.removed}"
        return f"no longer exists in {self.package}"


@dataclasses.dataclass(frozen=True)
class Standing:
    """An old spelling seen from the targeted version: how a message describes it, whether it
    fails there (then the message quotes the failure) and whether its fix may be offered there
    (the replacement exists from the deprecation on; without a known deprecation, only where
    the old spelling is gone)."""

    status: str
    fails: bool      # the old spelling fails (or warns) on the targeted version
    fixable: bool    # the replacement exists on the targeted version


def _version(text: str) -> Version | None:
    try:
        return Version(text) if text else None
    except InvalidVersion:
        return None


@functools.cache
def load() -> tuple[DeprecatedApi, ...]:
    """The table shipped inside the package (raises on a malformed table: it is our data)."""
    return parse(tables.read(TABLE_FILE))


def parse(data: Mapping) -> tuple[DeprecatedApi, ...]:
    fields = {field.name for field in dataclasses.fields(DeprecatedApi)}
    rows = []
    for raw in data.get("api", []):
        unknown = set(raw) - fields
        if unknown:
            raise ValueError(f"{TABLE_FILE}: row {raw.get('name')!r} has unknown keys {sorted(unknown)}")
        row = DeprecatedApi(**{**raw, "issues": tuple(raw.get("issues", ())), "values": dict(raw.get("values", {}))})
        _check(row)
        rows.append(row)
    return tuple(rows)


def _check(row: DeprecatedApi) -> None:
    problems = []
    if row.match not in MATCHES:
        problems.append(f"match must be one of {MATCHES}")
    if row.fix not in FIXES:
        problems.append(f"fix must be one of {FIXES}")
    if row.outcome not in OUTCOMES:
        problems.append(f"outcome must be one of {OUTCOMES}")
    if row.match == "keyword" and not (row.keyword and (row.new_keyword or not row.fixable)):
        problems.append("a keyword row names `keyword` and `new_keyword`")
    if row.match == "call" and row.fixable and not (row.replacement and row.add_keyword):
        problems.append("a fixable call row names `replacement` and `add_keyword`")
    if row.match == "reference" and row.fixable and not (row.replacement and row.import_from):
        problems.append("a fixable reference row names `replacement` and `import_from`")
    for label, text in (("deprecated", row.deprecated), ("removed", row.removed)):
        if text and _version(text) is None:
            problems.append(f"{label} must be a version or empty")
    if not row.existed and (row.deprecated or row.removed):
        problems.append("a name that never existed has no `deprecated` or `removed` version")
    if problems:
        raise ValueError(f"{TABLE_FILE}: row {row.name!r} ({row.code}): " + "; ".join(problems))


def rows_for(code: str) -> tuple[DeprecatedApi, ...]:
    return tuple(row for row in load() if row.code == code)


def triggers_for(code: str) -> tuple[tuple[str, ...], ...]:
    """The gate's substrings for a rule's rows: a file that spells a row contains its last
    name part (and, for a keyword, the keyword)."""
    groups: dict[tuple[str, ...], None] = {}
    for row in rows_for(code):
        last = row.name.rsplit(".", 1)[-1]
        groups[(last, row.keyword) if row.keyword else (last,)] = None
    return tuple(groups)


def within_module(module: str, name: str) -> bool:
    """Is `module` the module `name` or one of its submodules?"""
    return module == name or module.startswith(name + ".")
