"""An editor document's traversal reuses what it learnt from unchanged top-level statements
(odelint.analysis.scopes.Traversals): the index must mean exactly what a fresh traversal
of the same tree means, and lint results must not change."""

from __future__ import annotations

import random
from pathlib import Path

import libcst as cst
from odelint.analysis.facts import model_node_types
from odelint.analysis.scopes import ScopeIndex, Site, Traversals, build_scope_index
from odelint.api.rule import all_node_types
from odelint.engine.core import lint_source, rules_for
from odelint.engine.incremental import IncrementalParser

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = (ROOT / "bench" / "training_script.py").read_text()
WANTED = all_node_types(rules_for("train.py", None, True)) | model_node_types()
SNIPPETS = ["1", " + x", "\n    key = jax.random.PRNGKey(0)\n", "\nglobal_count = 0\n",
            "\ndef helper(key):\n    return jax.random.split(key)\n", "\n    for i in range(3):\n        y = i\n"]


def _meaning(index: ScopeIndex) -> list:
    """What the index says, with orders replaced by their rank (only their sequence means anything)."""
    sites: list[tuple[cst.CSTNode, Site]] = [entry for node_type in sorted(index.nodes, key=str)
                                             for entry in index.of_type(node_type)]
    ranks = {order: rank for rank, order in enumerate(sorted(
        {site.order for _, site in sites} | {b.order for b in index.all_bindings()}
        | {o for first, last, _, _ in index.loop_parts for o in (first, last)} | set(index.top_orders)))}

    def scope(s):
        return (s.kind, id(s.node), id(s.parent.node) if s.parent else None)

    said: list = [[(id(node), scope(site.scope), ranks[site.order]) for node, site in index.of_type(t)]
                  for t in sorted(index.nodes, key=str)]
    said.append(sorted((scope(b.scope), b.name, b.kind, id(b.node), ranks[b.order], b.path, b.qualname)
                       for b in index.all_bindings()))
    said.append(sorted((id(node), scope(s)) for node, s in
                       [(s.node, s) for s in index.body_scopes.values()]))
    said.append([ranks[o] for o in index.top_orders])
    said.append([(ranks[a], ranks[b], id(loop), scope(s)) for a, b, loop, s in index.loop_parts])
    names = [(node, site) for node, site in index.of_type(cst.Name)]
    said.append([[id(b.node) for b in index.lookup(node.value, site.scope)] for node, site in names])
    said.append([id(index.loop_at(site)) for _, site in index.of_type(cst.Call)])
    return said


def _edit(source: str, rng: random.Random) -> str:
    lines = source.splitlines(keepends=True)
    inside = [n for n, line in enumerate(lines) if line.startswith("    ") and line.strip()]
    number = rng.choice(inside)
    snippet = rng.choice(SNIPPETS)
    if snippet.startswith("\n") and not snippet.startswith("\n    "):
        number = next((n for n in range(number, len(lines)) if not lines[n].startswith((" ", "\n"))), len(lines))
        return "".join(lines[:number]) + snippet.lstrip("\n") + "".join(lines[number:])
    line = lines[number].rstrip("\n")
    lines[number] = line + (snippet if not snippet.startswith("\n") else snippet.rstrip("\n")) + "\n"
    return "".join(lines)


def test_kept_statements_mean_what_a_fresh_traversal_says() -> None:
    rng = random.Random(7)
    parser, source = IncrementalParser(), SCRIPT
    module = parser.parse(source)
    build_scope_index(module, WANTED, parser.traversals)
    for _ in range(25):
        edited = _edit(source, rng)
        try:
            module = parser.parse(edited)
        except cst.ParserSyntaxError:
            continue
        kept = build_scope_index(module, WANTED, parser.traversals)
        assert _meaning(kept) == _meaning(build_scope_index(module, WANTED)), edited
        source = edited


def test_an_edit_walks_only_its_statement_and_a_large_one_moves_the_rest() -> None:
    parser = IncrementalParser()
    first = parser.parse(SCRIPT)
    build_scope_index(first, WANTED, parser.traversals)
    walked_before = dict(parser.traversals.walked)
    line = "    return 0.5 * velocity**2 + 0.5 * frequency**2 * position**2"
    assert line in SCRIPT
    second = parser.parse(SCRIPT.replace(line, line + " + 1.0"))
    build_scope_index(second, WANTED, parser.traversals)
    fresh = [s for s in second.body if parser.traversals.walked[id(s)] is not walked_before.get(id(s))]
    assert len(fresh) == 1 and isinstance(fresh[0], cst.FunctionDef) and fresh[0].name.value == "energy"
    # a statement that grows by more than the room left after it moves the ones after it
    big = line + "".join(f"\n    velocity = velocity + {n}.0 * position" for n in range(Traversals.ROOM // 4))
    third = parser.parse(SCRIPT.replace(line, big))
    kept = build_scope_index(third, WANTED, parser.traversals)
    assert _meaning(kept) == _meaning(build_scope_index(third, WANTED))


def test_editor_relints_give_the_findings_of_a_fresh_lint() -> None:
    rng = random.Random(11)
    parser, source = IncrementalParser(), SCRIPT
    lint_source(source, "train.py", parser=parser)
    for _ in range(4):
        source = _edit(source, rng)
        edited = lint_source(source, "train.py", parser=parser)
        fresh = lint_source(source, "train.py")
        assert [(f.code, f.span, f.message) for f in edited.findings] == \
               [(f.code, f.span, f.message) for f in fresh.findings]
