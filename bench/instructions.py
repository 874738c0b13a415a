"""Instructions, not seconds: the flake8 face and the cold run against their baselines under
`valgrind --tool=callgrind`, which counts the same total for the same program and input
whatever else the machine is doing (this machine's speed drifts by 20% or more within
minutes, more than most changes are worth).

    python bench/instructions.py --corpus /tmp/users [--slice 4] [--only flake8,flake8-odl]

Every case runs in one process (`-j1`, `--jobs 1`), so its count is the CPU work of the
whole run, start-up included; the report gives each count and the ratios the targets name:
flake8 with the ODL plugin against flake8 alone (target ≤ 1.3), and odelint's cold run
against the LibCST parse floor. Under callgrind a run takes about 50 times as long as
without: `--slice 4` (every 4th file, as bench/run.py slices) takes about 15 minutes for
the four cases on the users corpus. flake8 alone comes from `--tools-venv`, as in bench/run.py.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import compile_odelint, make_slice  # noqa: E402  (the same slices and byte-compiled modules)

CASES = {
    "flake8": ("{tools}/bin/flake8", "--isolated", "--exit-zero", "-j1", "{dir}"),
    "flake8-odl": ("{python}", "-m", "flake8", "--isolated", "--exit-zero", "-j1", "{dir}"),
    "odelint-cold-j1": ("{python}", "-m", "odelint", "check", "--isolated", "--no-cache", "--exit-zero", "-q",
                        "--jobs", "1", "{dir}"),
    "parse": ("{python}", str(HERE / "run.py"), "_parse", "{dir}"),
}
RATIOS = (("flake8 + ODL / flake8 alone", "flake8-odl", "flake8", "≤ 1.3"),
          ("odelint cold `--jobs 1` / LibCST parse-only", "odelint-cold-j1", "parse", "context"))


def count(command: list[str], cwd: str) -> int:
    """Instructions the command executes (its children not followed: every case is one process)."""
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg.out", *command],
                              cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: {done.stderr[-2000:]}")
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output: {done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, help="a corpus bench/make_corpus.sh built")
    parser.add_argument("--work", default="/tmp/odelint-bench", help="slices go here")
    parser.add_argument("--slice", type=int, default=4, help="every K-th file (1: all)")
    parser.add_argument("--tools-venv", default="/tmp/benchvenv", help="venv with a plain flake8")
    parser.add_argument("--only", type=lambda v: [n for n in v.split(",") if n], default=list(CASES),
                        help=f"cases: {', '.join(CASES)}")
    args = parser.parse_args()
    corpus = Path(args.corpus).resolve()
    part = make_slice(corpus, Path(args.work) / corpus.name, args.slice, "bench")
    compile_odelint()
    fill = {"tools": args.tools_venv, "python": sys.executable, "dir": part.folder}
    counts = {}
    for name in args.only:
        counts[name] = count([word.format(**fill) for word in CASES[name]], str(HERE.parent))
        print(f"{name}: {counts[name]:,} instructions", flush=True)
    print(f"\n{part.files:,} files ({part.lines:,} lines), every {args.slice}th of {corpus}")
    for label, top, bottom, target in RATIOS:
        if top in counts and bottom in counts:
            print(f"{label}: {counts[top] / counts[bottom]:.3f} (target {target})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
