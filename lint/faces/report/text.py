"""Human output: `path:line:col: CODE [*] message`, the source line, a caret, then a summary."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from odelint.api.finding import Finding, Safety

SNIPPET_WIDTH = 160


def render(findings: Sequence[Finding], *, lines_of: Callable[[str], list[str] | None] = lambda path: None,
           unsafe_fixes: bool = False, quiet: bool = False, **_) -> str:
    out: list[str] = []
    for finding in findings:
        marker = " [*]" if _offered(finding, unsafe_fixes) else ""
        span = finding.span
        out.append(f"{where(finding)}:{span.line}:{span.column}: {finding.code}{marker} {finding.message}")
        if not quiet:
            lines = lines_of(finding.path) if finding.cell is None else lines_of(finding.path, finding.cell)
            out.extend(_snippet(finding, lines))
    if not quiet:
        out.append(summary(findings, unsafe_fixes))
    return "\n".join(out) + ("\n" if out else "")


def where(finding: Finding) -> str:
    """`train.py`, or `nb.ipynb:cell 3` for a notebook (its lines count within the cell)."""
    return finding.path if finding.cell is None else f"{finding.path}:cell {finding.cell}"


def _offered(finding: Finding, unsafe_fixes: bool) -> bool:
    return finding.fix is not None and (unsafe_fixes or finding.fix.safety is Safety.SAFE)


def _snippet(finding: Finding, lines: list[str] | None) -> list[str]:
    index = finding.span.line - 1
    if not lines or not 0 <= index < len(lines):
        return []
    line = lines[index].rstrip("\r\n").expandtabs(1)
    number = str(finding.span.line)
    pad = " " * len(number)
    start = max(finding.span.column - 1, 0)
    end = finding.span.end_column - 1 if finding.span.end_line == finding.span.line else len(line)
    if len(line) > SNIPPET_WIDTH:  # a generated or minified line: show a window around the finding
        left = max(0, min(start - 20, len(line) - SNIPPET_WIDTH))
        line, start, end = line[left:left + SNIPPET_WIDTH], start - left, min(end, left + SNIPPET_WIDTH) - left
    width = max(1, min(end, len(line)) - start)
    return [f" {number} | {line}", f" {pad} | {' ' * start}{'^' * width}"]


def summary(findings: Sequence[Finding], unsafe_fixes: bool) -> str:
    if not findings:
        return "All checks passed!"
    noun = "finding" if len(findings) == 1 else "findings"
    safe = sum(1 for f in findings if f.fix is not None and f.fix.safety is Safety.SAFE)
    unsafe = sum(1 for f in findings if f.fix is not None and f.fix.safety is Safety.UNSAFE)
    text = f"Found {len(findings)} {noun}."
    if unsafe_fixes and safe + unsafe:
        text += f"\n[*] {safe + unsafe} fixable with `odelint check --fix --unsafe-fixes`."
    else:
        if safe:
            text += f"\n[*] {safe} fixable with `odelint check --fix`."
        if unsafe:
            text += f"\n{unsafe} more fixable with `--unsafe-fixes`."
    return text


def statistics(findings: Sequence[Finding]) -> str:
    counts = Counter(f.code for f in findings)
    names = {f.code: f.name for f in findings}
    fixable = {f.code for f in findings if f.fix is not None}
    rows = [f"{counts[code]:>5}  {code}  {'[*]' if code in fixable else '   '} {names[code]}"
            for code in sorted(counts, key=lambda c: (-counts[c], c))]
    return "\n".join(rows) + ("\n" if rows else "")
