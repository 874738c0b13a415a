"""`# noqa` and `# noqa: ODL201, ODL202` on the reported line, the way flake8 and Ruff read them."""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable

from odelint.api.finding import Finding

NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)
ALL = frozenset({"*"})


def directive(line: str) -> frozenset[str] | None:
    """The codes a line's noqa comment names (ALL for a bare `# noqa`), or None without one."""
    if "noqa" not in line.lower():
        return None
    match = NOQA.search(line)
    if match is None:
        return None
    codes = match.group("codes")
    return ALL if codes is None else frozenset(code.upper() for code in _CODE.findall(codes))


def suppresses(codes: frozenset[str] | None, code: str) -> bool:
    return codes is not None and (codes is ALL or "*" in codes or code in codes)


def is_suppressed(finding: Finding, lines: list[str]) -> bool:
    if finding.code == "ODL000":
        return False
    index = finding.span.line - 1
    return 0 <= index < len(lines) and suppresses(directive(lines[index]), finding.code)


def unsuppressed(findings: Iterable[Finding], source: str) -> list[Finding]:
    lines = source.splitlines()
    return [finding for finding in findings if not is_suppressed(finding, lines)]


def add_noqa(source: str, findings: Iterable[Finding]) -> str:
    """Append `# noqa: CODES` to every reported line (merging with an existing directive).

    Lines whose end lies inside a string or after a backslash continuation are skipped:
    a comment there would change the program.
    """
    wanted: dict[int, set[str]] = {}
    for finding in findings:
        if finding.code != "ODL000":
            wanted.setdefault(finding.span.line, set()).add(finding.code)
    if not wanted:
        return source
    unsafe = _lines_ending_in_tokens(source)
    lines = source.splitlines(keepends=True)
    for number, codes in sorted(wanted.items()):
        index = number - 1
        if not 0 <= index < len(lines) or number in unsafe:
            continue
        line = lines[index]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        if body.rstrip().endswith("\\"):
            continue
        existing = directive(body)
        if existing is ALL:
            continue
        if existing is not None:
            merged = ", ".join(sorted(set(existing) | codes))
            body = NOQA.sub(f"# noqa: {merged}", body, count=1)
        else:
            body = f"{body.rstrip()}  # noqa: {', '.join(sorted(codes))}"
        lines[index] = body + ending
    return "".join(lines)


def _lines_ending_in_tokens(source: str) -> set[int]:
    """Line numbers whose end falls inside a multi-line token (a triple-quoted string)."""
    inside: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            start, end = token.start[0], token.end[0]
            if end > start:
                inside.update(range(start, end))
    except (tokenize.TokenError, SyntaxError):
        return set(range(1, source.count("\n") + 2))
    return inside
