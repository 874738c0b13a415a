"""Generated programs: the linter never raises, fixes always parse, fixing twice changes nothing.

Two sources of programs: hypothesmith's grammar-valid Python (behind a header that opens
every rule's trigger gate), and programs assembled from the statements of every rule's
own examples (so they really contain the JAX/Equinox/Optax patterns the rules look for),
shuffled together, nested in functions, mixed with generated filler and written with
either line ending. `--hypothesis-profile=long` runs 10,000 of each (tests/conftest.py).
"""

from __future__ import annotations

import textwrap

import hypothesmith
import libcst as cst
from hypothesis import assume, example, given
from hypothesis import strategies as st
from odelint.analysis.project import compiles
from odelint.api.registry import all_rules
from odelint.api.rule import Flag, Rule
from odelint.engine.core import fix_source, lint_source


def _statements(code: str) -> list[str]:
    try:
        module = cst.parse_module(code)
    except cst.ParserSyntaxError:
        return []
    return [module.code_for_node(statement) for statement in module.body]


_EXAMPLES = [e for rule in all_rules() if issubclass(rule, Rule) for e in rule.examples
             if e.filename.endswith(".py")]
IMPORTS = sorted({s for e in _EXAMPLES for s in _statements(e.code) if s.startswith(("import ", "from "))})
STATEMENTS = sorted({s for e in _EXAMPLES for s in _statements(e.code) if not s.startswith(("import ", "from "))})
FLAGGED = [e.code for e in _EXAMPLES if isinstance(e, Flag)]
TRIGGER_WORDS = sorted({word for rule in all_rules() for group in rule.triggers for word in group})
HEADER = ("import jax\nimport jax.numpy as jnp\nimport equinox as eqx\nimport diffrax\nimport optax\n"
          f"# {' '.join(TRIGGER_WORDS)}\n")
# Built once: each `from_grammar()` call compiles a LALR parser for Python's grammar (~2.5 s).
FILLER = hypothesmith.from_grammar()


def _nested(block: list[str], name: str) -> str:
    body = textwrap.indent("".join(block), "    ") or "    pass\n"
    return f"def {name}(model, params, key, *args, **kwargs):\n{body}"


@st.composite
def pattern_programs(draw) -> str:
    """A program made of the rules' own example statements and grammar-generated filler."""
    imports = draw(st.lists(st.sampled_from(IMPORTS), max_size=8, unique=True))
    pieces: list[str] = []
    for index in range(draw(st.integers(1, 6))):
        choice = draw(st.sampled_from(["example", "statements", "nested", "filler"]))
        if choice == "example":
            pieces.append(draw(st.sampled_from(FLAGGED)))
        elif choice == "statements":
            pieces.append("".join(draw(st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=6))))
        elif choice == "nested":
            pieces.append(_nested(draw(st.lists(st.sampled_from(STATEMENTS), max_size=5)), f"_case{index}"))
        else:
            filler = draw(FILLER)
            pieces.append(filler if filler.endswith("\n") else filler + "\n")
    source = "".join(imports) + "".join(pieces)
    if draw(st.booleans()):
        source = source.replace("\r\n", "\n").replace("\n", "\r\n")
    assume(_libcst_parses(source))
    return source


def _bare_newlines(text: str) -> int:
    return text.count("\n") - text.count("\r\n")


def _libcst_parses(source: str) -> bool:
    try:
        cst.parse_module(source)
    except cst.ParserSyntaxError:
        return False
    return True


def _check(source: str) -> None:
    linted = lint_source(source, "generated.py")
    assert linted.crashes == [], [crash.message() for crash in linted.crashes]
    fixed = fix_source(source, "generated.py", unsafe=True)
    assert fixed.crashes == [], [crash.message() for crash in fixed.crashes]
    if not _libcst_parses(source):  # CPython accepts a few texts LibCST rejects (`\\` at the end)
        assert fixed.source == source and [f.code for f in linted.findings] == ["ODL000"]
        return
    assert _libcst_parses(fixed.source), "a fix produced code that does not parse"
    if compiles(source):
        assert compiles(fixed.source), "a fix turned a program CPython compiles into one it rejects"
    again = fix_source(fixed.source, "generated.py", unsafe=True)
    assert again.source == fixed.source, "a second fix changed the code again"
    assert again.applied == 0
    if "\r\n" in source and _bare_newlines(source) == 0:
        assert _bare_newlines(fixed.source) == 0, "a fix wrote a bare LF into a CRLF file"


def test_the_pool_holds_real_patterns() -> None:
    """Without the rules' examples the pattern strategy would generate nothing of interest."""
    assert IMPORTS and STATEMENTS and FLAGGED
    assert any("optax" in line for line in IMPORTS) and any("equinox" in line for line in IMPORTS)


@given(hypothesmith.from_grammar())
@example("\n\\\r\n")  # `compile` accepts it, `python file.py` does not (an ODL000 only where a pre-check held)
def test_grammar_programs_behind_every_trigger(source: str) -> None:
    _check(HEADER + source)


@given(hypothesmith.from_grammar())
def test_grammar_programs_with_the_gate_off(source: str) -> None:
    linted = lint_source(source, "generated.py", gate=False)
    assert linted.crashes == [], [crash.message() for crash in linted.crashes]
    syntax_errors = [f.code for f in linted.findings if f.code == "ODL000"]
    assert syntax_errors == ([] if _libcst_parses(source) else ["ODL000"])


@given(pattern_programs())
def test_programs_built_from_the_rules_patterns(source: str) -> None:
    _check(source)
