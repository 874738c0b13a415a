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


# One severity everywhere (the server's diagnostics, SARIF levels, GitHub annotations): a
# finding is a warning the author decides about; a file that does not parse (ODL000) or cannot
# be read (ODL001) is an error, since nothing in it was checked.
ERROR, WARNING = "error", "warning"
SYNTAX_ERROR_CODE, IO_ERROR_CODE = "ODL000", "ODL001"  # the engine's rules (odelint.api.engine_rules)
ERROR_CODES = frozenset({SYNTAX_ERROR_CODE, IO_ERROR_CODE})


def severity(code: str) -> str:
    return ERROR if code in ERROR_CODES else WARNING


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


@dataclasses.dataclass(frozen=True)
class Related:
    """Another place that explains a finding ("the key was first used here"); in a notebook
    it may lie in another cell than the finding."""

    message: str
    span: Span
    node: cst.CSTNode | None = dataclasses.field(default=None, repr=False, compare=False)
    cell: int | None = None

    def to_dict(self) -> dict:
        return {"message": self.message, "cell": self.cell, "line": self.span.line, "column": self.span.column,
                "end_line": self.span.end_line, "end_column": self.span.end_column}

    @classmethod
    def from_dict(cls, data: dict) -> Related:
        return cls(data["message"], Span(data["line"], data["column"], data["end_line"], data["end_column"]),
                   cell=data.get("cell"))


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
    related: tuple[Related, ...] = ()  # other places in the same file that explain it

    @property
    def fixable(self) -> bool:
        return self.fix is not None

    @property
    def severity(self) -> str:
        return severity(self.code)

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
            "related": [related.to_dict() for related in self.related],
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
            related=tuple(Related.from_dict(related) for related in data.get("related") or ()),
        )
        if data.get("fixable"):
            finding.fix = Fix(Safety(data["fix_safety"]), data.get("fix_description") or "", _detached)
        return finding


def _detached() -> Edits:
    raise RuntimeError("this finding was read from a cache or another process; re-lint to fix it")
