"""What a run answers, and the modes it runs in: all a face needs to report a run, without
the runner (a warm run answered from its record imports no runner: odelint.files.runs)."""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: a warm run imports no typing (odelint.api.records)
if TYPE_CHECKING:
    from collections import Counter

    from odelint.api.finding import Finding

CHECK, FIX, DIFF, ADD_NOQA = "check", "fix", "diff", "add-noqa"


class RunResult:
    """What a run found, fixed and could not do, for the reporters."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.errors: list[tuple[str, str]] = []
        self.internal_errors: list[tuple[str, str]] = []
        self.fixes_applied = 0
        self.fixed_by_file: dict[str, Counter] = {}  # path -> fixes per code
        self.changed: list[str] = []
        self.diffs: list[str] = []
        self.files = 0
        self.stdout_data: bytes | None = None  # fixed stdin, for `--fix -`
        self.skipped: list[tuple[str, str]] = []  # (path, why): warnings
        self.config_errors: dict[tuple[str, str], int] = {}  # (path, why) -> line
