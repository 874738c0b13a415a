"""The rules that could report anything on a file: its cached results are keyed by the enabled
ones among these alone, so enabling or disabling a rule re-lints only the files it could
report on.

A rule that does not look at this kind of file, or whose trigger words the file lacks, is
never run on it (`odelint.engine.core`), so whether it is on cannot change the findings;
the syntax check (ODL000) runs on every Python file. This is the engine's own gate, asked
of every rule at once when a file is linted (`odelint.api.rule.triggered`).
"""

from __future__ import annotations

from odelint.api.engine_rules import SyntaxErrorRule
from odelint.api.rule import triggered
from odelint.engine.core import rules_for
from odelint.engine.noqa import UNUSED_CODE


def relevant_codes(text: str, path: str, python: bool) -> frozenset[str]:
    codes = {rule.code for rule in triggered(rules_for(path, None, python), text)}
    if python:
        codes.add(SyntaxErrorRule.code)
    if "noqa" in text.lower():
        codes.add(UNUSED_CODE)
    return frozenset(codes)
