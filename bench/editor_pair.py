"""Two builds' re-lints, edit by edit, in the same minutes: the paired editor comparison.

    python bench/editor_pair.py --against OTHER_PYTHON [--edits 300]

This machine runs in phases of seconds at up to twice another's speed, so two editor runs
taken one after the other compare hours, not builds. Here two processes, this interpreter
(this checkout) and `--against` (the interpreter of another checkout's environment), each
lint bench/training_script.py once, then take turns: each types one digit into the same
float literal as bench/editor.py and reports the CPU time of its re-lint. Both see the same
phase of the machine, so the ratio of each pair is the builds' ratio. Prints each build's
min, median and p95 in ms, and the median and quartiles of this/other over the pairs.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent


def worker() -> None:
    """One build: lint the buffer, then one edit and its re-lint per line read from stdin."""
    sys.path.insert(0, str(BENCH))
    from editor import buffer, edit_site
    from odelint.engine.core import lint_source
    from odelint.engine.incremental import IncrementalParser
    from odelint.engine.preload import load_linting

    load_linting()
    gc.disable()  # as the server runs: no automatic collections, one full one now and then
    lines = buffer()
    parser = IncrementalParser()
    lint_source("".join(lines), "buffer.py", None, parser=parser)
    parser.prepare()
    gc.collect()
    line, column = edit_site(lines)
    print("ready", flush=True)
    for count, _ in enumerate(sys.stdin, 1):
        lines[line] = lines[line][:column] + "1" + lines[line][column:]
        start = time.process_time()
        lint_source("".join(lines), "buffer.py", None, parser=parser)
        print(f"{(time.process_time() - start) * 1000:.3f}", flush=True)
        if count % 25 == 0:
            gc.collect()


def main() -> int:
    if sys.argv[1:] == ["--worker"]:
        worker()
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", required=True, help="the other build's Python interpreter")
    parser.add_argument("--edits", type=int, default=300)
    args = parser.parse_args()
    builds = {"this": sys.executable, "other": args.against}
    workers = {name: subprocess.Popen([python, __file__, "--worker"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)
               for name, python in builds.items()}
    for process in workers.values():
        if process.stdout.readline().strip() != "ready":  # type: ignore[union-attr]
            raise SystemExit("a worker did not start")
    times: dict[str, list[float]] = {name: [] for name in builds}
    for edit in range(args.edits):
        for name in (builds if edit % 2 == 0 else reversed(builds)):  # who goes first alternates
            process = workers[name]
            process.stdin.write("edit\n")  # type: ignore[union-attr]
            process.stdin.flush()  # type: ignore[union-attr]
            times[name].append(float(process.stdout.readline()))  # type: ignore[union-attr]
    for process in workers.values():
        process.stdin.close()  # type: ignore[union-attr]
        process.wait()
    for name, samples in times.items():
        ordered = sorted(samples)
        print(f"{name}: min {ordered[0]:.1f} ms, median {statistics.median(ordered):.1f} ms, "
              f"p95 {ordered[round(0.95 * (len(ordered) - 1))]:.1f} ms CPU per re-lint ({builds[name]})")
    ratios = sorted(mine / theirs for mine, theirs in zip(times["this"], times["other"], strict=True))
    print(f"this/other over {len(ratios)} pairs: median {statistics.median(ratios):.3f}, "
          f"quartiles {ratios[len(ratios) // 4]:.3f}..{ratios[3 * len(ratios) // 4]:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
