"""Where a cold lint's CPU goes, phase by phase, in one process over a folder of Python files.

    python bench/phases.py DIR

CPython's parse, the gate (trigger words, then the rules' declared needs on the Sketch),
LibCST's parse of the files the gate keeps, and the rules (the model built lazily inside them);
every rule of the default set, default settings. Prints CPU seconds per phase and how many
files LibCST parsed: the figures that say which part of a cold run to work on.
"""

from __future__ import annotations

import argparse
import ast
import time
import warnings
from pathlib import Path

import libcst as cst
from odelint.analysis import project
from odelint.api.registry import all_rules, opt_in_codes
from odelint.api.rule import triggered
from odelint.engine import core
from odelint.engine.once import linted_once


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    args = parser.parse_args()
    files = sorted(Path(args.folder).rglob("*.py"))
    rules = core.rules_for("x.py", [rule.code for rule in all_rules() if rule.code not in opt_in_codes()], True)
    spent = dict.fromkeys(("ast", "gate", "libcst", "rules"), 0.0)
    warnings.simplefilter("ignore")
    with project.places("bench"):  # one run, as the runner's workers lint it (each file's model released)
        parsed = 0
        for path in files:
            with linted_once():
                parsed += _lint(path, rules, spent)
    figures = ", ".join(f"{name} {seconds:.2f}" for name, seconds in spent.items())
    print(f"{len(files)} files, {parsed} parsed by LibCST; CPU s: {figures}, total {sum(spent.values()):.2f}")
    return 0


def _lint(path: Path, rules: list, spent: dict[str, float]) -> bool:
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
    if isinstance(module, cst.Module):
        core.run_rules(module, text, str(path), chosen, True)
    spent["libcst"] += linted - decided
    spent["rules"] += time.process_time() - linted
    return True


if __name__ == "__main__":
    raise SystemExit(main())
