"""The values every face shares: a finding, its location and its optional fix."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Sequence

import libcst as cst


class Safety(str, enum.Enum):
    """Ruff's applicability: safe fixes run under `--fix`, unsafe ones need `--unsafe-fixes`."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclasses.dataclass(frozen=True, order=True)
class Span:
    """1-based line and column of the start, and the end (exclusive column), as editors show them."""

    line: int
    column: int
    end_line: int
    end_column: int


@dataclasses.dataclass(frozen=True)
class Replace:
    """Swap one node of the parsed module (matched by identity) for a new node."""

    node: cst.CSTNode
    new: cst.CSTNode


@dataclasses.dataclass(frozen=True)
class NeedImport:
    """A top-level `import module as alias` that the fix's new code refers to."""

    module: str
    alias: str | None


@dataclasses.dataclass(frozen=True)
class Edits:
    """What a fix does to the tree: node replacements plus imports it needs."""

    replacements: Sequence[Replace]
    imports: Sequence[NeedImport] = ()


@dataclasses.dataclass(frozen=True)
class Fix:
    """A fix is described cheaply; its edits are only built when someone applies or shows it."""

    safety: Safety
    description: str
    build: Callable[[], Edits]


@dataclasses.dataclass
class Finding:
    """One reported problem. `node` and `fix` live only inside the process that parsed the file."""

    code: str
    name: str
    message: str
    span: Span
    path: str = "-"
    fix: Fix | None = None
    node: cst.CSTNode | None = dataclasses.field(default=None, repr=False, compare=False)
    cell: int | None = None  # in a notebook: the cell (1-based) the span's lines count within

    @property
    def fixable(self) -> bool:
        return self.fix is not None

    @property
    def fix_safety(self) -> str | None:
        return self.fix.safety.value if self.fix else None

    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.span.line, self.span.column, self.code)

    def to_dict(self) -> dict:
        """Plain data for caches, JSON output and worker processes (no nodes, no callables)."""
        return {
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "path": self.path,
            "cell": self.cell,
            "line": self.span.line,
            "column": self.span.column,
            "end_line": self.span.end_line,
            "end_column": self.span.end_column,
            "fixable": self.fixable,
            "fix_safety": self.fix_safety,
            "fix_description": self.fix.description if self.fix else None,
        }

    @classmethod
    def from_dict(cls, data: dict) -> Finding:
        """Rebuild a detached finding: it still says whether it is fixable, but carries no fix."""
        finding = cls(
            code=data["code"],
            name=data["name"],
            message=data["message"],
            span=Span(data["line"], data["column"], data["end_line"], data["end_column"]),
            path=data["path"],
            cell=data.get("cell"),
        )
        if data.get("fixable"):
            finding.fix = Fix(Safety(data["fix_safety"]), data.get("fix_description") or "", _detached)
        return finding


def _detached() -> Edits:
    raise RuntimeError("this finding was read from a cache or another process; re-lint to fix it")
