"""Start-up and warm-run latency of odelint, side by side with Ruff on the same files.

    python bench/startup.py [--corpus /tmp/corpus] [--files 700] [--runs 30] [--ruff PATH]
                            [--project DIR] [--pythonpath DIR] [--whole-corpus N] [--out FILE]

Every measurement is a whole child process (wall seconds, monotonic clock), the cases
interleaved run by run so that a burst of load on the (shared) machine hits them all alike;
tables give the median and the 90th percentile. Cases: the interpreter's own start-up
(`python -c pass`), `--version`, `rules`, a warm `check` of a project of `--files` files
(through the `odelint` console script and through `python -m odelint`), a `check` right
after a configuration change (one rule ignored; the cache is put back to its warm state
before each run, and the table counts the files that were linted again), and
`ruff --version` / a warm `ruff check` of the same project.

The project is every k-th `.py` file of the corpus that `bench/make_corpus.sh` builds (in
sorted path order, folders kept), or, without a corpus, generated files of the same size.
`--pythonpath DIR` measures another checkout of odelint with this interpreter: DIR must hold
an `odelint` package (a folder with `odelint -> lint` and `lint/rules -> ../rules` links),
which is how the "before" numbers in bench/RESULTS.md were taken. `--whole-corpus N` also
times N cold (`--no-cache`) and N warm runs of `odelint check` over the whole corpus.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

CACHE = ".odelint_cache"
CHANGED_CONFIG = ["--ignore", "ODL201"]  # a rule whose gate (optax and equinox) few files pass


def build_project(corpus: Path | None, count: int, target: Path) -> int:
    """Fill `target` with `count` Python files; returns how many it holds."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    if corpus is not None and corpus.is_dir():
        files = sorted(corpus.rglob("*.py"))
        chosen = [files[index * len(files) // count] for index in range(min(count, len(files)))]
        for source in chosen:
            destination = target / source.relative_to(corpus)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, destination)
        return len(chosen)
    for index in range(count):  # no corpus: JAX-flavoured files of about the corpus's mean size
        folder = target / f"pkg{index // 50}"
        folder.mkdir(exist_ok=True)
        body = "".join(f"\ndef f{n}(x):\n    return jnp.sum(jnp.sin(x) * {n})\n" for n in range(60))
        header = "import equinox as eqx\nimport optax\n" if index % 10 == 0 else ""
        (folder / f"module{index}.py").write_text(f"import jax\nimport jax.numpy as jnp\n{header}{body}")
    return count


def _timed(command: Sequence[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def _cache_entries(project: Path) -> int:
    total = 0
    for path in (project / CACHE).glob("results-*.json"):
        with open(path, encoding="utf-8") as handle:
            total += len(json.load(handle))
    return total


class ConfigChange:
    """`odelint check` with one rule ignored, each run starting from the warm cache of the
    default configuration: the cost of re-linting what the change makes stale."""

    def __init__(self, command: list[str], project: Path, env: dict[str, str]) -> None:
        self.command, self.project, self.env = command, project, env
        self.snapshot = Path(tempfile.mkdtemp(prefix="odelint-cache-"))
        shutil.copytree(project / CACHE, self.snapshot / CACHE)
        self.relinted: list[int] = []

    def __call__(self) -> float:
        shutil.rmtree(self.project / CACHE)
        shutil.copytree(self.snapshot / CACHE, self.project / CACHE)
        before = _cache_entries(self.project)
        elapsed = _timed(self.command, self.project, self.env)
        self.relinted.append(_cache_entries(self.project) - before)
        return elapsed

    def restore(self) -> None:
        shutil.rmtree(self.project / CACHE)
        shutil.copytree(self.snapshot / CACHE, self.project / CACHE)


def _summary(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    p90 = statistics.quantiles(ordered, n=10, method="inclusive")[8] if len(ordered) > 1 else ordered[0]
    return statistics.median(ordered), p90


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/corpus"))
    parser.add_argument("--files", type=int, default=700)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--project", type=Path, default=Path(tempfile.gettempdir()) / "odelint-startup-project")
    parser.add_argument("--ruff", default=shutil.which("ruff"), help="the ruff executable (default: from PATH)")
    parser.add_argument("--pythonpath", help="import odelint from this folder instead")
    parser.add_argument("--whole-corpus", type=int, default=0, metavar="N", help="N cold and N warm runs on the corpus")
    parser.add_argument("--out", type=Path, help="also write the table here")
    args = parser.parse_args(argv)

    env = dict(os.environ)
    if args.pythonpath:
        env["PYTHONPATH"] = os.path.abspath(args.pythonpath)
    script = str(Path(sys.executable).with_name("odelint"))
    module = [sys.executable, "-m", "odelint"]
    files = build_project(args.corpus, args.files, args.project)
    project = args.project

    for _ in range(2):  # fill the caches (odelint's and Ruff's), twice so the second run is a pure read
        _timed([script, "check", "."], project, env)
        if args.ruff:
            _timed([args.ruff, "check", "--exit-zero", "."], project, env)
    change = ConfigChange([script, "check", *CHANGED_CONFIG, "."], project, env)

    cases: dict[str, object] = {
        "python -c pass (the interpreter alone)": [sys.executable, "-c", "pass"],
        "odelint --version": [script, "--version"],
        "python -m odelint --version": [*module, "--version"],
        "odelint rules": [script, "rules"],
        "python -m odelint rules": [*module, "rules"],
        f"odelint check . (warm, {files} files)": [script, "check", "."],
        f"python -m odelint check . (warm, {files} files)": [*module, "check", "."],
        f"odelint check {' '.join(CHANGED_CONFIG)} . (after the config change)": change,
    }
    if args.ruff:
        cases["ruff --version"] = [args.ruff, "--version"]
        cases[f"ruff check . (warm, {files} files)"] = [args.ruff, "check", "--exit-zero", "."]
    times: dict[str, list[float]] = {name: [] for name in cases}
    load_before = os.getloadavg()
    for _ in range(args.runs):
        for name, case in cases.items():
            times[name].append(case() if callable(case) else _timed(case, project, env))  # type: ignore[arg-type]
    change.restore()
    load_after = os.getloadavg()

    lines = [f"Taken {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()}, "
             f"{os.cpu_count()} cores, Python {platform.python_version()}; load average "
             f"{' '.join(f'{v:.2f}' for v in load_before)} at the start, "
             f"{' '.join(f'{v:.2f}' for v in load_after)} at the end. n = {args.runs} per row.", "",
             "| command | median ms | p90 ms |", "|---|---:|---:|"]
    for name, values in times.items():
        median, p90 = _summary(values)
        lines.append(f"| `{name}` | {median * 1000:.0f} | {p90 * 1000:.0f} |")
    relinted = statistics.median(change.relinted) if change.relinted else 0
    lines += ["", f"After the config change, {relinted:.0f} of {files} files were linted again (median)."]
    if args.whole_corpus and args.corpus.is_dir():
        lines += ["", *_whole_corpus(args.corpus, script, env, args.whole_corpus)]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


def _whole_corpus(corpus: Path, script: str, env: dict[str, str], runs: int) -> list[str]:
    """Cold (`--no-cache`) against warm over every file of the corpus, interleaved."""
    cache = tempfile.mkdtemp(prefix="odelint-corpus-cache-")  # the corpus folder may be shared: write nothing there
    cold_command = [script, "check", "--no-cache", "--exit-zero", "."]
    warm_command = [script, "check", "--cache-dir", cache, "--exit-zero", "."]
    _timed(warm_command, corpus, env)
    _timed(warm_command, corpus, env)
    cold, warm = [], []
    for _ in range(runs):
        cold.append(_timed(cold_command, corpus, env))
        warm.append(_timed(warm_command, corpus, env))
    shutil.rmtree(cache, ignore_errors=True)
    files = sum(1 for _ in corpus.rglob("*.py"))
    cold_median, warm_median = statistics.median(cold), statistics.median(warm)
    return [f"Whole corpus ({files} files), n = {runs}: cold `odelint check --no-cache` median "
            f"{cold_median:.2f} s, warm `odelint check` median {warm_median:.3f} s: "
            f"warm is {cold_median / warm_median:.1f}x faster."]


if __name__ == "__main__":
    sys.exit(main())
