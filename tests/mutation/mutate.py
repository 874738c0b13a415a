"""Mutation testing: small deliberate faults in the engine, faces, rules and proof, each run
against the tests that should notice it.

    python tests/mutation/mutate.py --quick      # a fixed sample (under 15 minutes on 2 cores)
    python tests/mutation/mutate.py              # every mutant of every target
    python tests/mutation/mutate.py --list       # the mutants, without running anything

Each mutant changes one operator or constant (== / !=, < / >=, and / or, drops a `not`,
True / False, n / n+1, + / -) with LibCST, so the rest of the file keeps its formatting. The
package is copied once into a temporary folder that goes first on PYTHONPATH (before the
editable install), each mutant is written there, and the target's tests run with `-x`: a
failing test (or a timeout) kills the mutant. Survivors are listed; those that cannot change
behaviour are kept, with the reason, in tests/mutation/equivalent.toml and not counted.
The last line is `mutants killed K of N`. docs/testing.md explains the habit.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EQUIVALENT_FILE = os.path.join(ROOT, "tests", "mutation", "equivalent.toml")
TIMEOUT = 300.0          # seconds a mutant's tests may take: a mutant that hangs them is killed
QUICK_PER_TARGET = 4     # mutants per target in --quick


@dataclasses.dataclass(frozen=True)
class Target:
    """A module of the product and the tests that must notice a fault in it."""

    path: str                   # relative to the repository
    tests: tuple[str, ...]      # pytest arguments


SURVIVORS = "tests/test_mutation_survivors.py"  # tests written for earlier survivors
TARGETS = (
    Target("lint/engine/noqa.py", ("tests/test_noqa.py", SURVIVORS)),
    Target("lint/engine/core.py", ("tests/test_engine.py", SURVIVORS)),
    Target("lint/engine/positions.py", ("tests/test_positions.py", SURVIVORS)),
    Target("lint/files/cache.py", ("tests/test_cache.py", "tests/test_warm_path.py",
                                   "tests/test_breakage_regressions.py", SURVIVORS, "-k",
                                   "cache or warm_path or changed_rule")),
    Target("lint/files/depends.py", ("tests/test_cache.py", "tests/test_warm_path.py", SURVIVORS, "-k",
                                     "cache or warm_path")),
    Target("lint/analysis/keys.py", ("tests/test_carried.py", "tests/test_analysis_keys.py",
                                     "tests/test_rule_examples.py", SURVIVORS, "-k",
                                     "ODL704 or carried or analysis_keys or survivors")),
    Target("lint/analysis/outline.py", ("tests/test_carried.py",)),
    Target("lint/analysis/reach.py", ("tests/test_carried.py", "tests/test_analysis_reach.py", SURVIVORS)),
    Target("lint/analysis/project.py", ("tests/test_project_places.py", "tests/test_project_kept.py",
                                        "tests/test_project_buffers.py", SURVIVORS)),
    Target("lint/faces/report/sarif.py", ("tests/test_breakage_regressions.py", SURVIVORS, "-k", "sarif")),
    Target("lint/proof/fixtures.py", ("tests/test_confirm.py", "-m", "not slow")),
    Target("lint/proof/confirm.py", ("tests/test_confirm.py", SURVIVORS, "-m", "not slow")),
    Target("rules/optimisers/optimizer_init_unfiltered.py", ("tests/test_rule_examples.py", SURVIVORS, "-k",
                                                              "ODL201")),
    Target("rules/arrays/where_nan_gradient.py", ("tests/test_rule_examples.py", "-k", "ODL706")),
    Target("rules/arrays/prng_key_reuse.py", ("tests/test_rule_examples.py", SURVIVORS, "-k", "ODL704")),
)

_SWAPS: dict[type[cst.CSTNode], Callable[[], cst.CSTNode]] = {
    cst.Equal: cst.NotEqual, cst.NotEqual: cst.Equal,
    cst.LessThan: cst.GreaterThanEqual, cst.GreaterThanEqual: cst.LessThan,
    cst.GreaterThan: cst.LessThanEqual, cst.LessThanEqual: cst.GreaterThan,
    cst.In: cst.NotIn, cst.NotIn: cst.In, cst.Is: cst.IsNot, cst.IsNot: cst.Is,
    cst.And: cst.Or, cst.Or: cst.And, cst.Add: cst.Subtract, cst.Subtract: cst.Add,
}


@dataclasses.dataclass(frozen=True)
class Mutant:
    target: Target
    index: int          # the index-th mutable node of the file, in source order
    line: int
    change: str         # "`a == b` -> `a != b`"

    @property
    def key(self) -> str:
        """Stable across edits elsewhere in the file (no line number)."""
        return f"{self.target.path}: {self.change}"


def _mutated(node: cst.CSTNode) -> cst.CSTNode | None:
    """The one-fault version of a node, or None when the node is not mutated."""
    if isinstance(node, cst.ComparisonTarget) and type(node.operator) in _SWAPS:
        old = node.operator
        new = _SWAPS[type(old)]()
        return node.with_changes(operator=new.with_changes(  # type: ignore[attr-defined]
            whitespace_before=old.whitespace_before, whitespace_after=old.whitespace_after))  # type: ignore[attr-defined]
    if isinstance(node, cst.BooleanOperation) and type(node.operator) in _SWAPS:
        old_operator = node.operator
        return node.with_changes(operator=_SWAPS[type(old_operator)]().with_changes(  # type: ignore[attr-defined]
            whitespace_before=old_operator.whitespace_before, whitespace_after=old_operator.whitespace_after))
    if isinstance(node, cst.BinaryOperation) and type(node.operator) in _SWAPS:
        old_operator = node.operator
        return node.with_changes(operator=_SWAPS[type(old_operator)]().with_changes(  # type: ignore[attr-defined]
            whitespace_before=old_operator.whitespace_before,  # type: ignore[attr-defined]
            whitespace_after=old_operator.whitespace_after))  # type: ignore[attr-defined]
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        return node.expression
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.with_changes(value="False" if node.value == "True" else "True")
    if isinstance(node, cst.Integer):
        return node.with_changes(value=str(int(node.value, 0) + 1))
    return None


class _Collect(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.found: list[tuple[int, str]] = []
        self.docstring_depth = 0

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.Annotation, cst.Decorator)):
            return False  # not run as code (annotations), or too coarse a fault (decorators)
        new = _mutated(node)
        if new is not None:
            line = self.get_metadata(PositionProvider, node).start.line
            before = " ".join(self.module.code_for_node(node).split())
            after = " ".join(self.module.code_for_node(new).split())
            self.found.append((line, f"line `{_line_text(self.module, line)}`: `{before}` -> `{after}`"))
        return True


def _line_text(module: cst.Module, line: int) -> str:
    return " ".join(module.code.splitlines()[line - 1].split())


class _Apply(cst.CSTTransformer):
    """Mutates the index-th mutable node (counted as _Collect counts them)."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.seen = -1
        self.stack: list[bool] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.Annotation, cst.Decorator)):
            return False
        self.stack.append(_mutated(node) is not None)
        if self.stack[-1]:
            self.seen += 1
            self.stack[-1] = self.seen == self.index
        return True

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):  # type: ignore[override]
        if isinstance(original, (cst.Annotation, cst.Decorator)):
            return updated
        chosen = self.stack.pop()
        if chosen:
            return _mutated(updated) or updated
        return updated


def mutants(target: Target) -> list[Mutant]:
    with open(os.path.join(ROOT, target.path), encoding="utf-8") as handle:
        module = cst.parse_module(handle.read())
    collector = _Collect(module)
    MetadataWrapper(module, unsafe_skip_copy=True).visit(collector)
    counts: dict[str, int] = {}
    found = []
    for index, (line, change) in enumerate(collector.found):
        counts[change] = counts.get(change, 0) + 1
        suffix = f" (#{counts[change]})" if counts[change] > 1 else ""
        found.append(Mutant(target, index, line, change + suffix))
    return found


def mutated_source(mutant: Mutant) -> str:
    with open(os.path.join(ROOT, mutant.target.path), encoding="utf-8") as handle:
        module = cst.parse_module(handle.read())
    return module.visit(_Apply(mutant.index)).code


def quick_sample(found: Sequence[Mutant], count: int = QUICK_PER_TARGET) -> list[Mutant]:
    """`count` mutants spread evenly over the file: the same ones every time."""
    if len(found) <= count:
        return list(found)
    step = len(found) / count
    return [found[int(i * step + step / 2)] for i in range(count)]


def load_equivalent(path: str = EQUIVALENT_FILE) -> dict[str, str]:
    """mutant key -> why it cannot change behaviour."""
    if not os.path.exists(path):
        return {}
    with open(path, "rb") as handle:
        data = tomllib.load(handle)
    return {entry["mutant"]: entry["why"] for entry in data.get("equivalent", [])}


def _site(folder: str) -> str:
    """The package as the wheel lays it out (odelint, odelint.rules, odelint.fixtures)."""
    package = os.path.join(folder, "odelint")
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(os.path.join(ROOT, "lint"), package, ignore=ignore)
    shutil.copytree(os.path.join(ROOT, "rules"), os.path.join(package, "rules"), ignore=ignore)
    shutil.copytree(os.path.join(ROOT, "tests", "fixtures"), os.path.join(package, "fixtures"), ignore=ignore)
    return package


def _installed_path(package: str, path: str) -> str:
    top, _, rest = path.partition("/")
    return os.path.join(package, rest) if top == "lint" else os.path.join(package, "rules", rest)


def run_one(mutant: Mutant, site: str, package: str) -> tuple[bool, float]:
    """(killed, seconds): the target's tests against the mutant."""
    where = _installed_path(package, mutant.target.path)
    with open(where, encoding="utf-8") as handle:
        original = handle.read()
    with open(where, "w", encoding="utf-8") as handle:
        handle.write(mutated_source(mutant))
    env = {**os.environ, "PYTHONPATH": site, "PYTHONDONTWRITEBYTECODE": "1"}
    started = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                               *mutant.target.tests], cwd=ROOT, env=env, capture_output=True, timeout=TIMEOUT)
        killed = done.returncode != 0
    except subprocess.TimeoutExpired:
        killed = True
    finally:
        with open(where, "w", encoding="utf-8") as handle:
            handle.write(original)
    return killed, time.perf_counter() - started


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_PER_TARGET} mutants per target")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    parser.add_argument("--target", action="append", default=[], help="only targets whose path contains this")
    options = parser.parse_args(argv)
    targets = [t for t in TARGETS if not options.target or any(part in t.path for part in options.target)]
    chosen: list[Mutant] = []
    for target in targets:
        found = mutants(target)
        chosen += quick_sample(found) if options.quick else found
    equivalent = load_equivalent()
    if options.list:
        for mutant in chosen:
            note = "  [equivalent]" if mutant.key in equivalent else ""
            print(f"{mutant.target.path}:{mutant.line}: {mutant.change}{note}")
        return 0
    counted = [m for m in chosen if m.key not in equivalent]
    survivors = []
    with tempfile.TemporaryDirectory(prefix="odelint-mutants-") as site:
        package = _site(site)
        for number, mutant in enumerate(counted, 1):
            killed, seconds = run_one(mutant, site, package)
            verdict = "killed" if killed else "SURVIVED"
            print(f"[{number}/{len(counted)}] {verdict} {mutant.target.path}:{mutant.line}: {mutant.change} "
                  f"({seconds:.0f} s)", flush=True)
            if not killed:
                survivors.append(mutant)
    skipped = len(chosen) - len(counted)
    if skipped:
        print(f"{skipped} equivalent mutant(s) not run (tests/mutation/equivalent.toml)")
    for mutant in survivors:
        print(f"survivor: {mutant.key}")
    print(f"mutants killed {len(counted) - len(survivors)} of {len(counted)}")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
