"""The speed shortcuts change nothing: the trigger gate misses no finding, and the fast
traversal sees the same nodes, in the same order, as LibCST's own visitors.

The full-corpus version of the gate check is `python bench/run.py --check-gate`.
"""

from __future__ import annotations

import pathlib

import libcst as cst
import pytest
from odelint.analysis.scopes import build_scope_index, children_of, trivia
from odelint.api.registry import all_rules, file_patterns
from odelint.api.rule import Rule
from odelint.engine.core import lint_source
from odelint.files.config import RULE_OPTIONS

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Code that looks like the rules' targets but is spelled in ways a gate could trip over:
# aliases, from-imports, star-imports, dynamic imports, names in strings and comments.
DECOYS = {
    "aliases.py": (
        "import equinox as e, optax as o\nfrom jax import numpy as np, grad as g\n\n"
        "model = e.nn.MLP(2, 2, 8, 1, key=None)\nopt = o.adam(1e-3)\nstate = opt.init(model)\n"
        "updates, state = opt.update(g(lambda m: 0.0)(model), state)\nmodel = o.apply_updates(model, updates)\n"
    ),
    "from_imports.py": (
        "from equinox.nn import Linear\nfrom optax import adamw, MultiSteps\nimport jax\n\n"
        "layer = Linear(2, 2, key=jax.random.PRNGKey(0))\nopt = MultiSteps(adamw(1e-3), 4)\n"
        "state = opt.init(layer)\ngrads = jax.grad(lambda l: 0.0)(layer)\n"
        "updates, state = opt.update(grads, state)\n"
    ),
    "star_and_dynamic.py": (
        "from optax import *\nimport importlib\neqx = importlib.import_module('equinox')\n\n"
        "model = eqx.nn.MLP(2, 2, 8, 1, key=None)\nstate = adam(1e-3).init(model)\n"
    ),
    "words_only.py": (
        '"""Mentions optax, equinox, diffrax, custom_jvp, pure_callback and jax.grad in prose."""\n'
        "# optimiser.init(model) with equinox modules and optax states\n"
        "text = 'optax.adam(1e-3).init(eqx.nn.MLP(2, 2, 8, 1, key=None))'\n"
    ),
    "lookalikes.py": (
        "class optax:\n    @staticmethod\n    def adam(lr):\n        return lr\n\n"
        "class equinox:\n    class nn:\n        MLP = dict\n\n"
        "eqx = equinox\nmodel = eqx.nn.MLP()\nstate = optax.adam(1e-3)\n"
    ),
    "no_triggers.py": "import numpy as np\n\n\ndef loss(x):\n    return float(np.sum(x ** 2))\n",
    "syntax_error.py": "import optax\ndef broken(:\n    pass\n",
}


def _inputs() -> list[tuple[str, str]]:
    """(path, text) for every fixture program and data file, the example project, every
    rule's embedded examples and the decoys above."""
    found: list[tuple[str, str]] = []
    for folder in (ROOT / "tests" / "fixtures", ROOT / "tests" / "programs", ROOT / "examples"):
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(ROOT)
            if path.is_file() and not any(part.startswith(".") for part in relative.parts) \
                    and any(path.match(pattern) for pattern in file_patterns()):
                found.append((str(relative), path.read_text(encoding="utf-8")))
    for rule in all_rules():
        for index, example in enumerate(rule.examples):
            found.append((f"{rule.code}-{index}/{example.filename}", example.code))
    found += sorted(DECOYS.items())
    return found


INPUTS = _inputs()


def _comparable(findings) -> list[tuple]:
    """Without a triggered rule, CPython checks the syntax first; its wording may differ from
    LibCST's, so only the presence of a syntax error counts."""
    return sorted((f.code, f.span.line, f.span.column, f.message) if f.code != "ODL000" else ("ODL000",)
                  for f in findings)


@pytest.mark.parametrize("options", [frozenset(), frozenset(RULE_OPTIONS)], ids=["default", "every-setting"])
@pytest.mark.parametrize(("path", "text"), INPUTS, ids=[path for path, _ in INPUTS])
def test_gate_misses_nothing(path: str, text: str, options: frozenset[str]) -> None:
    """With every setting rules read on too: a declaration may read them (`Needs.setting`)."""
    gated = lint_source(text, path, options=options)
    ungated = lint_source(text, path, gate=False, options=options)
    assert gated.crashes == [] and ungated.crashes == []
    assert _comparable(gated.findings) == _comparable(ungated.findings)


def test_inputs_cover_every_rule_and_the_fixtures() -> None:
    paths = [path for path, _ in INPUTS]
    assert any(path.startswith("tests/fixtures/") and path.endswith(".py") for path in paths)
    flagged = {f.code for path, text in INPUTS for f in lint_source(text, path).findings}
    python_rules = {rule.code for rule in all_rules() if issubclass(rule, Rule)}
    assert python_rules <= flagged, f"no input makes these rules fire: {sorted(python_rules - flagged)}"


def test_files_without_trigger_words_are_not_parsed() -> None:
    assert not lint_source(DECOYS["no_triggers.py"], "no_triggers.py").parsed
    assert lint_source(DECOYS["no_triggers.py"], "no_triggers.py", gate=False).parsed
    assert lint_source(DECOYS["aliases.py"], "aliases.py").parsed


def test_a_syntax_error_is_still_reported_when_no_rule_is_triggered() -> None:
    result = lint_source("def broken(:\n    pass\n", "broken.py")
    assert not result.parsed
    assert [f.code for f in result.findings] == ["ODL000"]


@pytest.mark.parametrize("text", ["return 1\n", "break\n", "nonlocal x\n", "await f()\n", "yield x\n"])
def test_code_that_parses_but_does_not_compile_is_no_syntax_error(text: str) -> None:
    """The cheap check compiles first; what only the compiler rejects, LibCST accepts too."""
    assert lint_source(text, "script.py").findings == []
    assert lint_source(text, "script.py", gate=False).findings == []


@pytest.mark.parametrize("rule", [r for r in all_rules() if issubclass(r, Rule)], ids=lambda r: r.code)
def test_every_rule_declares_triggers(rule) -> None:
    """A rule without triggers would make every Python file pay for a LibCST parse."""
    assert rule.triggers, f"{rule.code} declares no trigger names"
    assert all(group and all(isinstance(word, str) and word for word in group) for group in rule.triggers)


def _python_inputs() -> list[tuple[str, cst.Module]]:
    modules = []
    for path, text in INPUTS:
        if path.endswith(".py"):
            try:
                modules.append((path, cst.parse_module(text)))
            except cst.ParserSyntaxError:
                continue
    return modules


def test_fast_children_match_libcst_order() -> None:
    for path, module in _python_inputs():
        stack: list[cst.CSTNode] = [module]
        while stack:
            node = stack.pop()
            expected = [child for child in node.children if not isinstance(child, trivia())]
            assert [id(c) for c in children_of(node)] == [id(c) for c in expected], (path, type(node).__name__)
            stack.extend(node.children)


class _Recorder(cst.CSTVisitor):
    def __init__(self, wanted: tuple[type, ...]) -> None:
        self.wanted = wanted
        self.seen: list[int] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, self.wanted):
            self.seen.append(id(node))
        return True


# Names are left out: the index skips the names a `def`, `class` or parameter binds, on
# purpose (they are bindings, not uses).
SEMANTIC = (cst.Call, cst.Attribute, cst.Subscript, cst.Arg)


def _indexed(index, wanted: tuple[type, ...]) -> list[int]:
    return [node_id for _, node_id in sorted((site.order, id(node)) for node_type in wanted
                                           for node, site in index.of_type(node_type))]


def test_index_holds_what_a_libcst_visitor_sees() -> None:
    for path, module in _python_inputs():
        recorder = _Recorder(SEMANTIC)
        module.visit(recorder)
        assert _indexed(build_scope_index(module, SEMANTIC), SEMANTIC) == recorder.seen, path


def test_asking_for_layout_nodes_changes_nothing_else() -> None:
    """A rule that visits comments makes the walk use LibCST's full child lists."""
    for path, module in _python_inputs():
        with_layout = build_scope_index(module, (*SEMANTIC, cst.Comment))
        assert _indexed(with_layout, SEMANTIC) == _indexed(build_scope_index(module, SEMANTIC), SEMANTIC), path
    module = cst.parse_module("x = f(1,  # one\n      2)  # two\n")
    comments = [node.value for node, _ in build_scope_index(module, (cst.Comment,)).of_type(cst.Comment)]
    assert comments == ["# one", "# two"]


def test_trigger_words_are_looked_for_again_in_each_new_text() -> None:
    """`triggered` remembers the words it found in the last text it searched (the cache's
    relevance and the run ask of the same text); a different text, even an equal one built
    anew, is searched again."""
    from odelint.api.rule import triggered

    rules = [rule for rule in all_rules() if rule.code in ("ODL704", "ODL801", "ODL201")]
    jax_text = "import jax\nk = jax.random.PRNGKey(0)\n"
    diffrax_text = "import diffrax\nsol = diffrax.diffeqsolve(term, solver, 0, 1, None, y0, max_steps=None)\n"
    assert [rule.code for rule in triggered(rules, jax_text)] == ["ODL704"]
    assert [rule.code for rule in triggered(rules, jax_text)] == ["ODL704"]
    assert [rule.code for rule in triggered(rules, diffrax_text)] == ["ODL801"]
    assert [rule.code for rule in triggered(rules, "".join(["import optax\n", "optax.adamw(1e-3)\n"]))] == ["ODL201"]


def test_an_edited_text_is_searched_only_around_the_edit_and_answers_the_same() -> None:
    """An editor's next text carries the last one's answers over where only the middle
    changed: a word the edit made, broke, or left in place is found exactly as a search
    of the whole new text finds it, including words that straddle the edit's ends."""
    from odelint.analysis.words import Words

    words = ["jax", "grad", "vmap", "random", "optax", "filter_jit", "scan", "x64"]
    base = "import jax\n\ndef loss(p):\n    return jax.grad(f)(p)\n\n# optax later\n" * 40
    edits = [
        (len(base) // 2, 0, "vmap"),                  # a word typed in the middle
        (base.index("grad"), 1, ""),                  # a word broken by a deletion
        (base.index("grad") + 2, 0, "X"),             # a word split by an insertion
        (base.index("optax"), 5, "opt"),              # one of many copies changed
        (len(base) // 2, 0, "ran"), (len(base) // 2 + 3, 0, "dom"),  # a word completed in two keystrokes
        (len(base) // 3, 0, "fil" + "ter_j" + "it"),  # a word typed inside another line
    ]
    text = base
    last = Words(text)
    for word in words:
        last.holds(word)
    for start, removed, inserted in edits:
        text = text[:start] + inserted + text[start + removed:]
        words_now = Words(text, last)
        assert words_now._last, "a one-keystroke edit carries the last answers over"
        for word in words:
            assert words_now.holds(word) == (word in text), (word, start, inserted)
        last = words_now
    unique = "jax " + "x" * 100 + " vmap"
    every = Words(unique, Words("jax " + "x" * 100 + " vma"))
    assert every.holds("vmap") and not every.holds("grad")


@pytest.mark.parametrize("seed", range(30))
def test_carried_word_answers_match_a_whole_search_for_random_edits(seed: int) -> None:
    import random

    from odelint.analysis.words import Words

    rng = random.Random(seed)
    alphabet = "jaxgrdvmp._ \n"
    text = "".join(rng.choice(alphabet) for _ in range(400))
    words = ["jax", "grad", "vmap", "ax", "x.g", "a", "pp"]
    last = Words(text)
    for _ in range(20):
        for word in rng.sample(words, 4):
            last.holds(word)
        start = rng.randrange(len(text))
        text = text[:start] + "".join(rng.choice(alphabet) for _ in range(rng.randrange(4))) \
            + text[start + rng.randrange(4):]
        last = Words(text, last)
        for word in words:
            assert last.holds(word) == (word in text)
