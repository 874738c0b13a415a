"""Where a cold lint's CPU goes, phase by phase, in one process over a folder of Python files.

    python bench/phases.py DIR [--kept]

CPython's parse, the gate (trigger words, then the rules' declared needs on the Sketch),
LibCST's parse of the files the gate keeps, and the rules (the model built lazily inside them);
every rule of the default set, default settings. Prints CPU seconds per phase and how many
files LibCST parsed: the figures that say which part of a cold run to work on.

`--kept` also lists what the gate's imprecision costs: the parsed files that gave no finding,
grouped by the rules whose declarations held on them (what kept each file), with the CPU their
LibCST parse and rules took (other files read for their classes included). Their total is
what a gate that kept only the files with findings would save.
"""

from __future__ import annotations

import argparse
import ast
import time
import warnings
from collections import defaultdict
from pathlib import Path

import libcst as cst
from odelint.analysis import project
from odelint.analysis.sketch import Sketch
from odelint.api.registry import all_rules, opt_in_codes
from odelint.api.rule import triggered
from odelint.engine import core
from odelint.engine.once import linted_once

# (file, CPU of its LibCST parse and rules, the rules whose declarations held)
Kept = list[tuple[Path, float, tuple[str, ...]]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--kept", action="store_true",
                        help="also the parsed files that gave no finding, by what kept them, with their CPU")
    args = parser.parse_args()
    files = sorted(Path(args.folder).rglob("*.py"))
    rules = core.rules_for("x.py", [rule.code for rule in all_rules() if rule.code not in opt_in_codes()], True)
    spent = dict.fromkeys(("ast", "gate", "libcst", "rules"), 0.0)
    kept: Kept | None = [] if args.kept else None
    warnings.simplefilter("ignore")
    with project.places("bench"):  # one run, as the runner's workers lint it (each file's model released)
        parsed = 0
        for path in files:
            with linted_once():
                parsed += _lint(path, rules, spent, kept)
    figures = ", ".join(f"{name} {seconds:.2f}" for name, seconds in spent.items())
    print(f"{len(files)} files, {parsed} parsed by LibCST; CPU s: {figures}, total {sum(spent.values()):.2f}")
    if kept is not None:
        _report_kept(kept, spent["libcst"] + spent["rules"])
    return 0


def _lint(path: Path, rules: list, spent: dict[str, float], kept: Kept | None) -> bool:
    """One file's phases, added to `spent`; whether LibCST parsed it."""
    text = path.read_text(encoding="utf-8", errors="replace")
    start = time.process_time()
    try:
        tree = ast.parse(text, filename=str(path))
    except (SyntaxError, ValueError, RecursionError):
        return False
    gated = time.process_time()
    chosen, _ = core._candidates(text, str(path), triggered(rules, text), tree)
    decided = time.process_time()
    spent["ast"] += gated - start
    spent["gate"] += decided - gated
    if not chosen:
        return False
    module = core._libcst_parse(text, str(path), None)
    linted = time.process_time()
    found = (core.run_rules(module, text, str(path), chosen, True, tree=tree).findings
             if isinstance(module, cst.Module) else [])
    done = time.process_time()
    spent["libcst"] += linted - decided
    spent["rules"] += done - linted
    if kept is not None and not found:
        kept.append((path, done - decided, _held(text, path, tree, chosen)))
    return True


def _held(text: str, path: Path, tree: ast.Module, chosen: list) -> tuple[str, ...]:
    """The rules whose declarations hold on the file, settled (the gate stops at the first)."""
    sketch = Sketch(tree, str(path), core.NO_OPTIONS)
    try:
        return tuple(rule.code for rule in chosen if not core._declares(rule) or rule.needs.holds(sketch))
    finally:
        sketch.release()


def _report_kept(kept: Kept, parsed_cpu: float) -> None:
    wasted = sum(cpu for _, cpu, _ in kept)
    share = wasted / parsed_cpu if parsed_cpu else 0.0
    print(f"{len(kept)} parsed files gave no finding: {wasted:.2f} s of LibCST and rules "
          f"({share:.0%} of {parsed_cpu:.2f} s); kept by:")
    groups: dict[tuple[str, ...], list[tuple[Path, float]]] = defaultdict(list)
    for path, cpu, held in kept:
        groups[held].append((path, cpu))
    for held, members in sorted(groups.items(), key=lambda group: -sum(cpu for _, cpu in group[1])):
        cpu = sum(cpu for _, cpu in members)
        names = ", ".join(path.name for path, _ in members[:4]) + (", ..." if len(members) > 4 else "")
        print(f"  {', '.join(held) or '(no declaration)'}: {len(members)} files, {cpu:.2f} s ({names})")


if __name__ == "__main__":
    raise SystemExit(main())
