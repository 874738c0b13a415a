"""Human output: `path:line:col: CODE [*] message`, the source line, a caret, then a summary."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from odelint.api.finding import IO_ERROR_CODE, Finding, Safety
from odelint.api.registry import rules_by_code
from odelint.faces.colour import Paint, plain

SNIPPET_WIDTH = 160


def render(findings: Sequence[Finding], *, lines_of: Callable[..., list[str] | None] = lambda *where: None,
           unsafe_fixes: bool = False, quiet: bool = False, fixed: int = 0, internal_errors: int = 0,
           show_fixes: bool = False, paint: Paint = plain, files: int | None = None, summary: bool = True,
           snippets: bool = True, **_) -> str:
    out: list[str] = []
    for finding in findings:
        marker = paint(" [*]", "fix") if _offered(finding, unsafe_fixes) else ""
        span = finding.span
        position = paint(f"{where(finding)}:{span.line}:{span.column}:", "path")
        out.append(f"{position} {paint(finding.code, 'code')}{marker} {finding.message}")
        if not quiet and snippets:
            lines = lines_of(finding.path) if finding.cell is None else lines_of(finding.path, finding.cell)
            out.extend(_snippet(finding, lines, paint))
            out.extend(paint(f"   = note: {where(finding, related.cell)}:{related.span.line}:{related.span.column}: "
                             f"{related.message}", "gutter") for related in finding.related)
            if show_fixes and finding.fix is not None:
                out.append(paint(f"   = fix ({finding.fix.safety.value}): {finding.fix.description}", "fix"))
    if not quiet and summary:
        out.append(paint(summarise(findings, unsafe_fixes, fixed=fixed, internal_errors=internal_errors, files=files),
                         "summary"))
    return "\n".join(out) + ("\n" if out else "")


def where(finding: Finding, cell: int | None = None) -> str:
    """`train.py`, or `nb.ipynb:cell 3` for a notebook (its lines count within the cell);
    `cell` names another cell of the finding's notebook (a related location's)."""
    cell = finding.cell if cell is None else cell
    return finding.path if cell is None else f"{finding.path}:cell {cell}"


def _offered(finding: Finding, unsafe_fixes: bool) -> bool:
    return finding.fix is not None and (unsafe_fixes or finding.fix.safety is Safety.SAFE)


def _snippet(finding: Finding, lines: list[str] | None, paint: Paint = plain) -> list[str]:
    index = finding.span.line - 1
    if finding.code == IO_ERROR_CODE or not lines or not 0 <= index < len(lines):
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
    return [f"{paint(f' {number} |', 'gutter')} {line}",
            f"{paint(f' {pad} |', 'gutter')} {' ' * start}{paint('^' * width, 'caret')}"]


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def summarise(findings: Sequence[Finding], unsafe_fixes: bool, *, fixed: int = 0, internal_errors: int = 0,
            files: int | None = None) -> str:
    """Ruff's summary: what was found (and fixed), what could not be checked, what `--fix` can do.
    "All checks passed!" only when every file was read and nothing is left to report, and
    never when no file was checked at all (`files` is 0)."""
    unread = sum(1 for f in findings if f.code == IO_ERROR_CODE)
    remaining = [f for f in findings if f.code != IO_ERROR_CODE]
    if not remaining and not fixed and not unread and not internal_errors:
        return "No Python files or notebooks were checked." if files == 0 else "All checks passed!"
    text = f"Found {_plural(len(remaining) + fixed, 'finding')}"
    if fixed:
        text += f" ({fixed} fixed, {len(remaining)} remaining)"
    if unread:
        text += f"; {_plural(unread, 'file')} could not be read or linted (ODL001)"
    if internal_errors:
        text += f"; {_plural(internal_errors, 'internal error')} (see the messages above)"
    text += "."
    safe = sum(1 for f in remaining if f.fix is not None and f.fix.safety is Safety.SAFE)
    unsafe = sum(1 for f in remaining if f.fix is not None and f.fix.safety is Safety.UNSAFE)
    if unsafe_fixes and safe + unsafe:
        text += f"\n[*] {safe + unsafe} fixable with `odelint check --fix --unsafe-fixes`."
    else:
        if safe:
            text += f"\n[*] {safe} fixable with `odelint check --fix`."
        if unsafe:
            text += f"\n{unsafe} more fixable with `--unsafe-fixes`."
    return text


def statistics(findings: Sequence[Finding], unsafe_fixes: bool = False) -> str:
    """One row per code; `[*]` where `--fix` (with the current unsafe-fixes setting) fixes some."""
    counts = Counter(f.code for f in findings)
    names = {f.code: f.name for f in findings}
    fixable = {f.code for f in findings if _offered(f, unsafe_fixes)}
    rows = [f"{counts[code]:>5}  {code}  {'[*]' if code in fixable else '   '} {names[code]}"
            for code in sorted(counts, key=lambda c: (-counts[c], c))]
    return "\n".join(rows) + ("\n" if rows else "")


def fixed_listing(applied: Mapping[str, Counter]) -> str:
    """`--fix --show-fixes`: what was fixed, per file and code, as Ruff lists it."""
    if not applied:
        return "No findings fixed.\n"
    total = sum(sum(counts.values()) for counts in applied.values())
    names = {code: rule.name for code, rule in rules_by_code().items()}
    out = [f"Fixed {_plural(total, 'finding')}:"]
    for path in sorted(applied):
        out.append(f"- {path}:")
        for code, count in sorted(applied[path].items()):
            out.append(f"    {count} × {code} ({names.get(code, code)})")
    return "\n".join(out) + "\n"
