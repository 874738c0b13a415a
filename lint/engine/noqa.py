"""`# noqa` comments, read the way flake8 and Ruff read them.

Line level: `# noqa` and `# noqa: ODL201, ODL202` on the reported line. File level: an own-line
`# odelint: noqa` (every finding) or `# odelint: noqa: ODL201` (those codes), and flake8's
`# flake8: noqa`, which exempts the whole file with or without codes, as flake8 itself does
(so both faces agree). In Python only real comments count (the tokenizer finds
them), so a string that happens to contain `# noqa` suppresses nothing; the tokenizer runs
only for files that have findings and mention "noqa".
"""

from __future__ import annotations

import dataclasses
import io
import re
import tokenize
from collections.abc import Collection, Iterable

from odelint.api.finding import Edits, Finding
from odelint.files import lines as text_lines

NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
FILE_NOQA = re.compile(r"^#\s*odelint\s*:\s*noqa(?:\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?\s*$",
                       re.IGNORECASE)
FLAKE8_FILE_NOQA = re.compile(r"^#\s*flake8[:=]\s*noqa", re.IGNORECASE)  # flake8's own pattern
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)
ALL = frozenset({"*"})
UNSUPPRESSIBLE = frozenset({"ODL000", "ODL001"})  # a file that does not parse or cannot be read


def directive(comment: str) -> frozenset[str] | None:
    """The codes a noqa comment names (ALL for a bare `# noqa`), or None without one."""
    if "noqa" not in comment.lower():
        return None
    match = NOQA.search(comment)
    if match is None:
        return None
    codes = match.group("codes")
    return ALL if codes is None else frozenset(code.upper() for code in _CODE.findall(codes))


def file_directive(comment: str) -> frozenset[str] | None:
    """The codes an own-line `# odelint: noqa[: CODES]` exempts; `# flake8: noqa...` exempts all."""
    if FLAKE8_FILE_NOQA.match(comment.strip()):
        return ALL
    match = FILE_NOQA.match(comment.strip())
    if match is None:
        return None
    codes = match.group("codes")
    return ALL if codes is None else frozenset(code.upper() for code in _CODE.findall(codes))


def suppresses(codes: frozenset[str] | None, code: str) -> bool:
    """Whether a directive's codes cover `code`: as flake8 matches them, a named code covers
    every code it begins (`# noqa: ODL2` covers ODL201)."""
    return codes is not None and code not in UNSUPPRESSIBLE and (
        codes is ALL or "*" in codes or any(code.startswith(named) for named in codes))


class Comments:
    """The comments of one source text: by line, and which of them stand on their own line."""

    def __init__(self, source: str, python: bool = True) -> None:
        self.by_line: dict[int, str] = {}
        self.own_line: set[int] = set()
        if python and _tokenize(source, self):
            return
        self.by_line, self.own_line = {}, set()
        for number, line in enumerate(text_lines.bare(source), start=1):  # requirements, TOML, or untokenizable
            position = line.find("#")
            if position >= 0:
                self.by_line[number] = line[position:]
                if not line[:position].strip():
                    self.own_line.add(number)

    def line_codes(self, line: int) -> frozenset[str] | None:
        comment = self.by_line.get(line)
        return directive(comment) if comment is not None else None

    def file_codes(self) -> frozenset[str] | None:
        """The union of the file-level exemptions (ALL when one is bare), or None."""
        found: set[str] = set()
        for line in sorted(self.own_line):
            codes = file_directive(self.by_line[line])
            if codes is ALL:
                return ALL
            if codes is not None:
                found |= codes
        return frozenset(found) if found else None


def _tokenize(source: str, comments: Comments) -> bool:
    last_line = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text_lines.with_newlines(source)).readline):
            if token.type == tokenize.COMMENT:
                line = token.start[0]
                comments.by_line[line] = token.string
                if line != last_line:
                    comments.own_line.add(line)
            if token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                last_line = token.end[0]
    except (tokenize.TokenError, SyntaxError):
        return False
    return True


def unsuppressed(findings: Iterable[Finding], source: str, python: bool = True, *,
                 line_level: bool = True) -> list[Finding]:
    """The findings no noqa comment suppresses; `line_level=False` honours only the file-level
    directives (flake8 reads the line-level ones itself)."""
    findings = list(findings)
    if not findings or "noqa" not in source.lower():
        return findings
    comments = Comments(source, python)
    exempt = comments.file_codes()
    return [f for f in findings if not suppresses(exempt, f.code)
            and not (line_level and suppresses(comments.line_codes(f.span.line), f.code))]


def add_noqa(source: str, findings: Iterable[Finding], python: bool = True) -> str:
    """Append `# noqa: CODES` to every reported line (merging with an existing directive).

    Lines whose end lies inside a string or after a backslash continuation are skipped:
    a comment there would change the program.
    """
    wanted: dict[int, set[str]] = {}
    for finding in findings:
        if finding.code not in UNSUPPRESSIBLE:
            wanted.setdefault(finding.span.line, set()).add(finding.code)
    if not wanted:
        return source
    unsafe = _lines_ending_in_tokens(source) if python else set()
    comments = Comments(source, python)
    lines = text_lines.split(source)
    for number, codes in sorted(wanted.items()):
        index = number - 1
        if not 0 <= index < len(lines) or number in unsafe:
            continue
        line = lines[index]
        body = text_lines.strip_break(line)
        ending = line[len(body):]
        if body.rstrip().endswith("\\"):
            continue
        comment = comments.by_line.get(number)
        existing = directive(comment) if comment is not None else None
        if existing is ALL:
            continue
        if existing is not None and comment is not None and body.endswith(comment):
            merged = ", ".join(sorted(set(existing) | codes))
            body = body[:len(body) - len(comment)] + NOQA.sub(f"# noqa: {merged}", comment, count=1)
        else:
            body = f"{body.rstrip()}  # noqa: {', '.join(sorted(codes))}"
        lines[index] = body + ending
    return "".join(lines)


def added(before: str, after: str) -> int:
    """How many lines `add_noqa` gave a comment (it never adds or removes a line)."""
    return sum(old != new for old, new in zip(text_lines.split(before), text_lines.split(after), strict=True))


def _lines_ending_in_tokens(source: str) -> set[int]:
    """Line numbers whose end falls inside a multi-line token (a triple-quoted string)."""
    inside: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text_lines.with_newlines(source)).readline):
            start, end = token.start[0], token.end[0]
            if end > start:
                inside.update(range(start, end))
    except (tokenize.TokenError, SyntaxError):
        return set(range(1, len(text_lines.split(source)) + 2))
    return inside


UNUSED_CODE = "ODL002"
_FULL_CODE = re.compile(r"ODL[0-9]{3}")


@dataclasses.dataclass(frozen=True)
class Unused:
    """A line-level directive naming odelint codes that suppress nothing on its line."""

    line: int
    column: int  # 0-based, where the comment starts
    comment: str
    codes: tuple[str, ...]

    @property
    def removable(self) -> bool:
        """Whether the comment is the directive alone, so dropping its last code may drop it."""
        match = NOQA.match(self.comment)
        return match is not None and not self.comment[match.end():].strip()


def unused(findings: Iterable[Finding], source: str, enabled: Collection[str], python: bool = True) -> list[Unused]:
    """The directives whose named odelint codes match no finding on their line. `findings`
    are every finding before suppression. Only full codes of enabled rules count: another
    linter's codes, a bare `# noqa` and codes of rules that did not run may serve someone else."""
    if "noqa" not in source.lower():
        return []
    comments = Comments(source, python)
    found: dict[int, set[str]] = {}
    for finding in findings:
        found.setdefault(finding.span.line, set()).add(finding.code)
    texts = text_lines.bare(source)
    result = []
    for line, comment in sorted(comments.by_line.items()):
        codes = directive(comment)
        if codes is None or codes is ALL or line in comments.own_line or line > len(texts):
            continue
        named = [code.upper() for code in _CODE.findall(NOQA.search(comment).group("codes") or "")]  # type: ignore[union-attr]
        idle = tuple(code for code in named if _FULL_CODE.fullmatch(code) and code != UNUSED_CODE
                     and code in enabled and not any(seen.startswith(code) for seen in found.get(line, ())))
        if idle:
            result.append(Unused(line, texts[line - 1].rfind(comment), comment, idle))
    return result


def judged(findings: list[Finding], source: str, enabled: Collection[str], path: str,
           python: bool = True) -> list[Finding]:
    """What a lint with ODL002 reports: of `findings` (every finding of the enabled rules,
    before suppression), those no directive suppresses, and ODL002's for each directive that
    names a code with no finding on its line; in order."""
    idle = unused(findings, source, enabled, python)
    kept = unsuppressed(findings, source, python)
    return sorted([*kept, *unused_findings(idle, path)], key=lambda finding: finding.sort_key())


def unused_findings(entries: Iterable[Unused], path: str) -> list[Finding]:
    from odelint.api.finding import Fix, Safety, Span

    findings = []
    for entry in entries:
        named = ", ".join(entry.codes)
        which = f"no {named} finding is" if len(entry.codes) == 1 else "none of them has a finding"
        fix = Fix(Safety.SAFE, f"remove {named} from the `# noqa`", _as_text) if entry.removable or len(
            entry.codes) < len(directive(entry.comment) or ()) else None
        findings.append(Finding(UNUSED_CODE, "unused-noqa", f"`# noqa` names {named}, but {which} on this line",
                                Span(entry.line, entry.column + 1, entry.line, entry.column + 1 + len(entry.comment)),
                                path, fix=fix))
    return findings


def _as_text() -> Edits:
    raise RuntimeError("an unused noqa is removed from the text (odelint.engine.noqa.remove_unused), not the tree")


def remove_unused(source: str, entries: Iterable[Unused]) -> tuple[str, int]:
    """The source without the unused codes (a directive left with none goes, with the blanks
    before it), and how many directives changed."""
    lines = text_lines.split(source)
    changed = 0
    for entry in entries:
        line = lines[entry.line - 1]
        body, ending = text_lines.strip_break(line), text_lines.ending(line)
        if not body[entry.column:].startswith(entry.comment):
            continue
        match = NOQA.match(entry.comment)
        named = _CODE.findall(match.group("codes") or "") if match else []
        kept = [code for code in named if code.upper() not in entry.codes]
        if kept:
            comment = NOQA.sub(f"# noqa: {', '.join(kept)}", entry.comment, count=1)
            body = body[:entry.column] + comment + body[entry.column + len(entry.comment):]
        elif entry.removable:
            body = body[:entry.column].rstrip()
        else:
            continue
        lines[entry.line - 1] = body + ending
        changed += 1
    return "".join(lines), changed
