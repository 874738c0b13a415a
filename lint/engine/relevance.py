"""The rules that could report anything on a file: its cached results are keyed by the enabled
ones among these alone, so enabling or disabling a rule re-lints only the files it could
report on.

A rule that does not look at this kind of file, or whose trigger words the file lacks, is
never run on it (`odelint.engine.core`), so whether it is on cannot change the findings;
the syntax check (ODL000) runs on every Python file. This is the engine's own gate, asked
of every rule at once when a file is linted; rules share trigger words, so each word is
looked for once.
"""

from __future__ import annotations

from odelint.api.registry import SyntaxErrorRule
from odelint.api.rule import BaseRule
from odelint.engine.core import rules_for
from odelint.engine.noqa import UNUSED_CODE


def relevant_codes(text: str, path: str, python: bool) -> frozenset[str]:
    present: dict[str, bool] = {}

    def holds(word: str) -> bool:
        if word not in present:
            present[word] = word in text
        return present[word]

    def triggered(rule: type[BaseRule]) -> bool:
        if rule.triggered_by.__func__ is not BaseRule.triggered_by.__func__:  # type: ignore[attr-defined]
            return rule.triggered_by(text)  # a gate of its own
        return not rule.triggers or any(all(holds(word) for word in group) for group in rule.triggers)

    codes = {rule.code for rule in rules_for(path, None, python) if triggered(rule)}
    if python:
        codes.add(SyntaxErrorRule.code)
    if "noqa" in text.lower():
        codes.add(UNUSED_CODE)
    return frozenset(codes)
