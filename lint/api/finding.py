"""The values every face shares: a finding, its location and its optional fix."""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence

import libcst as cst
from odelint.api.records import NamedTuple


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


# The records below are named tuples and small classes, not dataclasses: a warm run builds
# them at import, and `dataclasses` (with the `inspect` it imports) cost a quarter of its
# instructions (bench/RESULTS.md).


class Span(NamedTuple):
    """1-based line and column of the start, and the end (exclusive column), as editors show them."""

    line: int
    column: int
    end_line: int
    end_column: int


class Replace(NamedTuple):
    """Swap one node of the parsed module (matched by identity) for a new node."""

    node: cst.CSTNode
    new: cst.CSTNode


class NeedImport(NamedTuple):
    """A top-level `import module as alias` that the fix's new code refers to."""

    module: str
    alias: str | None


class Edits(NamedTuple):
    """What a fix does to the tree: node replacements plus imports it needs."""

    replacements: Sequence[Replace]
    imports: Sequence[NeedImport] = ()


class Fix(NamedTuple):
    """A fix is described cheaply; its edits are only built when someone applies or shows it."""

    safety: Safety
    description: str
    build: Callable[[], Edits]


class Related:
    """Another place that explains a finding ("the key was first used here"); in a notebook
    it may lie in another cell than the finding. Its node (only inside the process that
    parsed the file) is neither compared nor shown."""

    __slots__ = ("message", "span", "node", "cell")

    def __init__(self, message: str, span: Span, node: cst.CSTNode | None = None, cell: int | None = None) -> None:
        self.message = message
        self.span = span
        self.node = node
        self.cell = cell

    def _compared(self) -> tuple:
        return self.message, self.span, self.cell

    def __eq__(self, other: object) -> bool:
        return type(other) is Related and self._compared() == other._compared()

    def __hash__(self) -> int:
        return hash(self._compared())

    def __repr__(self) -> str:
        return f"Related(message={self.message!r}, span={self.span!r}, cell={self.cell!r})"

    def moved(self, span: Span, cell: int | None = None) -> Related:
        """The same place, found at `span` (in `cell`, for a notebook)."""
        return Related(self.message, span, self.node, self.cell if cell is None else cell)

    def to_dict(self) -> dict:
        return {"message": self.message, "cell": self.cell, "line": self.span.line, "column": self.span.column,
                "end_line": self.span.end_line, "end_column": self.span.end_column}

    @classmethod
    def from_dict(cls, data: dict) -> Related:
        return cls(data["message"], Span(data["line"], data["column"], data["end_line"], data["end_column"]),
                   cell=data.get("cell"))


class Finding:
    """One reported problem. `node` and `fix` live only inside the process that parsed the file;
    the node is neither compared nor shown."""

    __slots__ = ("code", "name", "message", "span", "path", "fix", "node", "cell", "related")

    def __init__(self, code: str, name: str, message: str, span: Span, path: str = "-", fix: Fix | None = None,
                 node: cst.CSTNode | None = None, cell: int | None = None, related: tuple[Related, ...] = ()) -> None:
        self.code = code
        self.name = name
        self.message = message
        self.span = span
        self.path = path
        self.fix = fix
        self.node = node
        self.cell = cell  # in a notebook: the cell (1-based) the span's lines count within
        self.related = related  # other places in the same file that explain it

    def _compared(self) -> tuple:
        return self.code, self.name, self.message, self.span, self.path, self.fix, self.cell, self.related

    def __eq__(self, other: object) -> bool:
        return type(other) is Finding and self._compared() == other._compared()

    __hash__ = None  # type: ignore[assignment]  # mutable: its fields are set after it is made

    def moved(self, span: Span, cell: int | None, related: tuple[Related, ...]) -> Finding:
        """The same finding, found at `span` in `cell` (a notebook's), its related places moved too."""
        return Finding(self.code, self.name, self.message, span, self.path, self.fix, self.node, cell, related)

    def __repr__(self) -> str:
        return (f"Finding(code={self.code!r}, name={self.name!r}, message={self.message!r}, span={self.span!r}, "
                f"path={self.path!r}, fix={self.fix!r}, cell={self.cell!r}, related={self.related!r})")

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
