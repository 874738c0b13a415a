"""Realistic programs (tests/programs/): exactly the expected findings, nothing else."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from odelint.api.registry import all_rules
from odelint.engine.core import lint_source

PROGRAMS = Path(__file__).parent / "programs"
FILES = sorted(PROGRAMS.rglob("*.py"))
# The rule families these programs were written for (custom derivatives, optimisers, callbacks,
# control flow); rules of other families are checked by their own examples.
CHECKED = {rule.code for rule in all_rules() if rule.code[3] in "1234"}
EXPECT = re.compile(r"#\s*expect:\s*(ODL\d{3}(?:\s*,\s*ODL\d{3})*)")


def expected(source: str) -> set[tuple[int, str]]:
    found = set()
    for number, line in enumerate(source.splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            found |= {(number, code.strip()) for code in match.group(1).split(",")}
    return found


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PROGRAMS)))
def test_program_findings(path: Path) -> None:
    source = path.read_text()
    compile(source, str(path), "exec")
    result = lint_source(source, str(path), CHECKED)
    assert result.crashes == []
    found = {(f.span.line, f.code) for f in result.findings}
    assert found == expected(source)


def test_there_are_enough_programs_both_ways() -> None:
    flagged = [path for path in FILES if expected(path.read_text())]
    quiet = [path for path in FILES if not expected(path.read_text())]
    assert len(FILES) >= 15 and len(flagged) >= 12 and len(quiet) >= 2
