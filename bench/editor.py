"""The editor path: time to lint a ~1,000-line buffer again after a one-line edit.

    python bench/editor.py [--edits 15] [--select CODES]

Lints bench/training_script.py (a scientist's training script: models, losses, training
loops, ODE solves, with real mistakes in it, so every rule's gate opens) once
with an `IncrementalParser` (as the language server keeps one per open document), then
types one digit into a float literal inside a function in the middle `--edits` times and
measures each re-lint's CPU time. Prints min, median, p95 and max in milliseconds, with the
number of findings. `--in-largest` types inside the largest top-level statement instead (a
long function or class: before the incremental parser re-parsed one statement line, the
whole statement was parsed again on every keystroke).
"""

from __future__ import annotations

import argparse
import ast
import re
import statistics
import time
from pathlib import Path

from odelint.engine.core import lint_source
from odelint.engine.incremental import IncrementalParser

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "training_script.py"


def buffer(path: Path = SCRIPT) -> list[str]:
    """The buffer's lines: by default a real 1,200-line JAX training script (Diffrax, Equinox,
    Optax; its mistakes give about two dozen findings), where every rule's gate opens."""
    return path.read_text().splitlines(keepends=True)


def edit_site(lines: list[str], in_largest: bool = False) -> tuple[int, int]:
    """Where the benchmark types: just after the decimal point of the first float literal in
    a function body from the middle of the buffer on. Each edit inserts one digit there, so
    every version is valid code that computes something else (not a comment, which no rule
    reads). `in_largest`: the first one in the largest top-level statement instead."""
    first, last = _largest_statement(lines) if in_largest else (len(lines) // 2, len(lines))
    for number in range(first, last):
        found = re.search(r"\b\d+\.(?=\d)", lines[number])
        if lines[number].startswith("    ") and found:
            return number, found.end()
    raise ValueError("no float literal in a function body where the benchmark types")


def _largest_statement(lines: list[str]) -> tuple[int, int]:
    """The 0-based line range of the top-level statement with the most lines."""
    body = ast.parse("".join(lines)).body
    largest = max(body, key=lambda statement: (statement.end_lineno or 0) - statement.lineno)
    return largest.lineno - 1, largest.end_lineno or largest.lineno


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=15)
    parser.add_argument("--select", help="comma-separated rule codes (default: every rule)")
    parser.add_argument("--in-largest", action="store_true", help="type inside the largest top-level statement")
    args = parser.parse_args()
    codes = set(args.select.split(",")) if args.select else None
    lines = buffer()
    incremental = IncrementalParser()
    first = lint_source("".join(lines), "buffer.py", codes, parser=incremental)
    line, column = edit_site(lines, args.in_largest)
    samples = []
    for _ in range(args.edits):
        lines[line] = lines[line][:column] + "1" + lines[line][column:]
        start = time.process_time()
        result = lint_source("".join(lines), "buffer.py", codes, parser=incremental)
        samples.append((time.process_time() - start) * 1000)
    samples.sort()
    p95 = samples[min(len(samples) - 1, round(0.95 * (len(samples) - 1)))]
    print(f"{len(lines)} lines, {len(first.findings)} findings first, {len(result.findings)} after; "
          f"{args.edits} edits: min {samples[0]:.0f} ms, median {statistics.median(samples):.0f} ms, "
          f"p95 {p95:.0f} ms, max {samples[-1]:.0f} ms CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
