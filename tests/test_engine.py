"""Engine pieces: noqa directives, choosing and applying fixes, import insertion, the gate."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from odelint.api import docs
from odelint.api.finding import Edits, Finding, Fix, NeedImport, Safety, Span
from odelint.api.registry import all_rules
from odelint.engine import core as engine
from odelint.engine import fix, noqa

ROOT = Path(__file__).resolve().parents[1]
HAZARD = "import equinox as eqx\nimport optax\nm = eqx.nn.MLP(1, 1, 1, 1, key=None)\ns = optax.adam(1.0).init(m)\n"


@pytest.mark.parametrize("line, codes", [
    ("x = 1  # noqa", noqa.ALL),
    ("x = 1  #noqa:ODL201", frozenset({"ODL201"})),
    ("x = 1  # NOQA: ODL201,ODL202", frozenset({"ODL201", "ODL202"})),
    ("x = 1  # noqa: ODL201 ODL202", frozenset({"ODL201", "ODL202"})),
    ("x = 1  # noqa:E501, ODL204  trailing words", frozenset({"E501", "ODL204"})),
    ("x = 1  # no qa", None),
    ("x = 'noqa'", None),
])
def test_noqa_directives(line: str, codes) -> None:
    assert noqa.directive(line) == codes


def _finding(code: str, line: int, column: int = 1, end: int = 5, safety: Safety | None = Safety.SAFE) -> Finding:
    fixer = Fix(safety, "x", lambda: Edits([])) if safety else None
    return Finding(code, "n", "m", Span(line, column, line, end), "f.py", fix=fixer)


def test_add_noqa_merges_and_skips_lines_it_cannot_touch() -> None:
    source = 'a = 1  # noqa: E501\nb = """start\nend"""\nc = 2 + \\\n    3\nd = 4\n'
    findings = [_finding("ODL201", 1), _finding("ODL202", 2), _finding("ODL203", 4), _finding("ODL204", 6),
                _finding("ODL204", 6)]
    assert noqa.add_noqa(source, findings) == (
        'a = 1  # noqa: E501, ODL201\nb = """start\nend"""\nc = 2 + \\\n    3\nd = 4  # noqa: ODL204\n')


def test_choose_skips_overlapping_and_unsafe_fixes() -> None:
    outer = _finding("ODL201", 3, 1, 20)
    inner = _finding("ODL202", 3, 5, 8)
    unsafe = _finding("ODL203", 5, safety=Safety.UNSAFE)
    none = _finding("ODL204", 6, safety=None)
    assert fix.choose([inner, outer, unsafe, none], unsafe=False) == [outer]
    assert fix.choose([inner, outer, unsafe, none], unsafe=True) == [outer, unsafe]


@pytest.mark.parametrize("source, expected", [
    ("x = 1\n", "import equinox as eqx\nx = 1\n"),
    ('"""Doc."""\nx = 1\n', '"""Doc."""\nimport equinox as eqx\nx = 1\n'),
    ("from __future__ import annotations\nimport os\n\nx = 1\n",
     "from __future__ import annotations\nimport os\nimport equinox as eqx\n\nx = 1\n"),
    ("# header comment\nimport os\nx = 1\n", "# header comment\nimport os\nimport equinox as eqx\nx = 1\n"),
])
def test_imports_go_after_the_leading_imports(source: str, expected: str) -> None:
    module = fix.add_imports(cst.parse_module(source), [NeedImport("equinox", "eqx"), NeedImport("equinox", "eqx")])
    assert module.code == expected


def test_gate_skips_parsing_but_still_reports_syntax_errors(monkeypatch) -> None:
    parsed = []
    real = engine._libcst_parse
    monkeypatch.setattr(engine, "_libcst_parse",
                        lambda source, path, *rest: parsed.append(path) or real(source, path, *rest))
    assert engine.lint_source("import os\nx = 1\n", "a.py").findings == []
    assert parsed == [], "no rule is triggered, so LibCST must not parse"
    assert engine.lint_source("import os\nx = (1,\n", "a.py").findings[0].code == "ODL000"
    parsed.clear()
    assert [f.code for f in engine.lint_source(HAZARD, "b.py").findings] == ["ODL201"]
    assert parsed == ["b.py"]


def test_syntax_error_position_and_message() -> None:
    finding = engine.lint_source(HAZARD + "def broken(:\n", "c.py").findings[0]
    assert (finding.code, finding.span.line) == ("ODL000", 5)
    assert finding.message.startswith("SyntaxError: ")


def test_fix_only_one_finding() -> None:
    source = HAZARD + "t = optax.rmsprop(1.0).init(m)\n"
    findings = engine.lint_source(source, "d.py").findings
    assert len(findings) == 2
    result = engine.fix_source(source, "d.py", only=findings[1])
    assert result.source == HAZARD + "t = optax.rmsprop(1.0).init(eqx.filter(m, eqx.is_array))\n"
    assert [f.span.line for f in result.findings] == [4]


def test_rules_are_registered_with_unique_codes_and_complete_docs() -> None:
    rules = all_rules()
    assert [rule.code for rule in rules] == sorted({rule.code for rule in rules})
    assert {"ODL000", "ODL201", "ODL202", "ODL203", "ODL204"} <= {rule.code for rule in rules}


def test_generated_rule_docs_are_up_to_date() -> None:
    """docs/rules.md is `odelint rules --format markdown`; regenerate it when a rule changes."""
    assert (ROOT / "docs" / "rules.md").read_text() == docs.markdown(list(all_rules()))


def test_text_snippet_of_a_very_long_line_is_a_window_around_the_finding() -> None:
    from odelint.faces.report import text

    line = "x = 1; " * 2000 + "s = optax.adam(1.0).init(m)"
    column = line.index("m)") + 1
    finding = Finding("ODL201", "n", "msg", Span(1, column, 1, column + 1), "f.py")
    shown, caret = text.render([finding], lines_of=lambda path: [line]).splitlines()[1:3]
    assert len(shown) < 200 and shown.endswith("s = optax.adam(1.0).init(m)")
    assert caret.index("^") == shown.index("m)")


def test_the_readme_rule_table_lists_every_rule() -> None:
    """README.md's "What it finds" table has a row for every registered rule, and no other."""
    rows = [line.split("|")[1:3] for line in (ROOT / "README.md").read_text().splitlines()
            if line.startswith("| ODL")]
    assert [(code.strip(), name.strip()) for code, name in rows] == [(rule.code, rule.name) for rule in all_rules()]
