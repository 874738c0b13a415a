"""The deprecated-API table (deprecated_apis.toml, odelint.analysis.tables): one row per old
spelling, loaded once."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping

from odelint.analysis import tables

TABLE_FILE = "deprecated_apis.toml"
MATCHES = ("reference", "import", "keyword", "call")
FIXES = ("safe", "none")
OUTCOMES = ("error", "warning")


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

    def status(self) -> str:
        """`was removed in jax 0.6.0`, `is deprecated (it warns)`, ... for messages."""
        if self.outcome == "warning":
            since = f" since {self.package} {self.deprecated}" if self.deprecated else ""
            return f"is deprecated{since} and warns"
        if self.removed:
            return f"was removed in {self.package} {self.removed}"
        return f"no longer exists in {self.package}"


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
    if row.match == "keyword" and not (row.keyword and row.new_keyword):
        problems.append("a keyword row names `keyword` and `new_keyword`")
    if row.match == "call" and row.fixable and not (row.replacement and row.add_keyword):
        problems.append("a fixable call row names `replacement` and `add_keyword`")
    if row.match == "reference" and row.fixable and not (row.replacement and row.import_from):
        problems.append("a fixable reference row names `replacement` and `import_from`")
    if problems:
        raise ValueError(f"{TABLE_FILE}: row {row.name!r} ({row.code}): " + "; ".join(problems))


def rows_for(code: str) -> tuple[DeprecatedApi, ...]:
    return tuple(row for row in load() if row.code == code)
