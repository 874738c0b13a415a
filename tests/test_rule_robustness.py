"""The must-flag side at scale: every rule's Flag examples and fixture hazards, rewritten in
ways that keep their meaning, are still flagged as often, and their fixes stay exact and
idempotent.

Rewrites (tests/corpus/mutate.py): renamed import aliases (`import equinox as my_eqx`,
`from optax import adamw as my_adamw`), renamed functions/classes/variables, the code moved
into a function, a method of a class or a nested function, unrelated look-alike code added,
and attribute uses turned into from-imports (`from equinox import filter as filter_from`).
For all but the last the expected fix output is the same rewrite of the original fix
output; after from-imports the fix spells names its own way, so only its effect is checked.
"""

from __future__ import annotations

import functools
import importlib.util
import os

import libcst as cst
import pytest
from odelint.api.registry import all_rules
from odelint.api.rule import Flag, Rule
from odelint.engine.core import fix_source, lint_source
from odelint.proof.fixtures import load_cases

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("odelint_mutate", os.path.join(ROOT, "tests", "corpus", "mutate.py"))
mutate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mutate)  # type: ignore[union-attr]


def _subjects():
    """(id, code, source, expected fix output or None, unsafe) for every Python hazard."""
    for rule in all_rules():
        if not issubclass(rule, Rule):
            continue
        for index, example in enumerate(rule.examples):
            if isinstance(example, Flag):
                yield f"{rule.code}-flag-{index}", rule.code, example.code, example.fixed, example.unsafe
        if rule.fixtures and os.path.isdir(os.path.join(ROOT, rule.fixtures)):
            for case in load_cases(os.path.join(ROOT, rule.fixtures), rule.code):
                with open(case.path(case.hazard), encoding="utf-8") as handle:
                    hazard = handle.read()
                fixed = None
                if case.fix != "manual":
                    with open(case.path(case.fixed), encoding="utf-8") as handle:
                        fixed = handle.read()
                yield f"{rule.code}-{case.name}", rule.code, hazard, fixed, case.fix == "unsafe"


def _renamer(prefix: str, imports: bool):
    """A mutation giving a prefix to the global names bound by imports (or to all the
    others); the mapping comes from the original, so names a fix adds stay as it spells them."""
    def mutation(source: str, original: str) -> str:
        imported = set(_import_names(original))
        mapping = mutate.unique_mapping(original, lambda name: f"{prefix}{name}")
        return mutate.rename(source, {old: new for old, new in mapping.items() if (old in imported) == imports})
    return mutation


def _import_names(source: str) -> list[str]:
    names = []
    for statement in cst.parse_module(source).body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                    for alias in small.names:
                        bound = alias.evaluated_alias or alias.evaluated_name
                        names.append(bound.split(".")[0])
    return names


def _chain(*steps):
    def mutation(source: str, original: str) -> str:
        for step in steps:
            source = step(source, original)
        return source
    return mutation


def _plain(function, *args):
    return lambda source, original: function(source, *args)


EXACT = {
    "aliases": _renamer("my_", imports=True),
    "names": _renamer("renamed_", imports=False),
    "in-function": _plain(mutate.wrap, "function"),
    "in-method": _plain(mutate.wrap, "method"),
    "in-nested-function": _plain(mutate.wrap, "nested"),
    "unrelated-code": _plain(mutate.add_unrelated),
    "aliases+method+unrelated": _chain(_renamer("my_", imports=True), _plain(mutate.wrap, "method"),
                                       _plain(mutate.add_unrelated)),
}

SUBJECTS = list(_subjects())
CASES = [(subject, name) for subject in SUBJECTS for name in EXACT]


@functools.cache
def _count(source: str, code: str) -> int:
    result = lint_source(source, "example.py", {code})
    assert result.crashes == []
    return sum(f.code == code for f in result.findings)


def _fix(source: str, code: str, unsafe: bool) -> str:
    result = fix_source(source, "example.py", {code}, unsafe=unsafe)
    assert result.crashes == []
    again = fix_source(result.source, "example.py", {code}, unsafe=unsafe)
    assert again.source == result.source, "a second fix changed the code again"
    compile(result.source, "example.py", "exec")
    return result.source


@pytest.mark.parametrize("case", CASES, ids=[f"{s[0]}-{name}" for s, name in CASES])
def test_mutated_hazard_is_flagged_and_fixed_exactly(case) -> None:
    (_, code, source, fixed, unsafe), name = case
    mutation = EXACT[name]
    mutated = mutation(source, source)
    assert mutated != source
    compile(mutated, "mutated.py", "exec")
    assert _count(mutated, code) == _count(source, code)
    if fixed is not None:
        assert _fix(mutated, code, unsafe) == mutation(fixed, source)


@pytest.mark.parametrize("subject", SUBJECTS, ids=[s[0] for s in SUBJECTS])
def test_from_imports_keep_findings_and_fixes(subject) -> None:
    _, code, source, fixed, unsafe = subject
    mutated = mutate.from_imports(source)
    if mutated == source:
        pytest.skip("no attribute access through a module import to rewrite")
    compile(mutated, "mutated.py", "exec")
    assert _count(mutated, code) == _count(source, code)
    if fixed is not None:
        after = _fix(mutated, code, unsafe)
        assert (after != mutated) == (fixed != source)  # an example may promise no change
        assert _count(after, code) == _count(fixed, code)


def test_mutations_cover_every_python_rule() -> None:
    covered = {code for _, code, *_ in SUBJECTS}
    assert covered == {rule.code for rule in all_rules() if issubclass(rule, Rule) and rule.code != "ODL000"}
