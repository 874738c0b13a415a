"""Start-up and warm-run latency of odelint, side by side with Ruff on the same files.

    python bench/startup.py [--corpus /tmp/corpus] [--files 700] [--runs 30] [--ruff PATH]
                            [--project DIR] [--before DIR] [--whole-corpus N] [--out FILE]

Every measurement is a whole child process (wall seconds from a monotonic clock, CPU seconds
from `wait4`), the cases interleaved run by run so that a burst of load on the (shared)
machine hits them all alike; tables give the median, 90th percentile and minimum of the wall
time and the median CPU time. Children run without PYTHONDONTWRITEBYTECODE, as an installed
odelint does: its modules load from bytecode (the warm-up runs write it).

Cases: the interpreter's own start-up (`python -c pass`), `--version`, `rules`, a warm
`check` of a project of `--files` files (through the `odelint` console script and through
`python -m odelint`), a `check` right after a configuration change (one rule ignored; the
cache is put back to its warm state before each run, and the report counts the files that
were linted again), and `ruff --version` / a warm `ruff check` of the same project.

The project is every k-th `.py` file of the corpus that `bench/make_corpus.sh` builds (in
sorted path order, folders kept), or, without a corpus, generated files of the same size.
`--before DIR` also measures another checkout of odelint, interleaved with this one, with
this interpreter and a copy of the project: DIR must hold an importable `odelint` package,
e.g. `git archive COMMIT lint rules | tar -x -C DIR && ln -s lint DIR/odelint &&
ln -s ../rules DIR/lint/rules` (how the "before" rows in bench/RESULTS.md were taken).
`--whole-corpus N` also times N cold (`--no-cache`) and N warm runs of `odelint check` over
the whole corpus.
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
CHANGED_CONFIG = ["--ignore", "ODL401"]  # a rule whose gate (equinox, lax and a loop or cond) few files pass


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


def _timed(command: Sequence[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one child: CPU is user + sys from `wait4`, which a busy machine
    inflates far less than wall time."""
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = 0  # reaped by wait4
    return wall, usage.ru_utime + usage.ru_stime


def _cache_entries(project: Path) -> int:
    """Results stored: one per file and configuration (a file's entry holds one result per
    set of enabled rules that could fire on it; before that, an entry was one result)."""
    total = 0
    for path in (project / CACHE).glob("results-*.json"):
        with open(path, encoding="utf-8") as handle:
            entries = json.load(handle).get("entries", {})  # the layout of odelint.files.cache
        total += sum(len(entry.get("results", ())) or 1 for entry in entries.values())
    return total


class ConfigChange:
    """`odelint check` with one rule ignored, each run starting from the warm cache of the
    default configuration: the cost of re-linting what the change makes stale."""

    def __init__(self, command: list[str], project: Path, env: dict[str, str]) -> None:
        self.command, self.project, self.env = command, project, env
        self.snapshot = Path(tempfile.mkdtemp(prefix="odelint-cache-"))
        shutil.copytree(project / CACHE, self.snapshot / CACHE)
        self.relinted: list[int] = []

    def __call__(self) -> tuple[float, float]:
        shutil.rmtree(self.project / CACHE)
        shutil.copytree(self.snapshot / CACHE, self.project / CACHE)
        before = _cache_entries(self.project)
        elapsed = _timed(self.command, self.project, self.env)
        self.relinted.append(_cache_entries(self.project) - before)
        return elapsed

    def restore(self) -> None:
        """Leave the warm cache in place and remove the snapshot."""
        shutil.rmtree(self.project / CACHE)
        shutil.copytree(self.snapshot / CACHE, self.project / CACHE)
        shutil.rmtree(self.snapshot)


def _summary(times: list[tuple[float, float]]) -> tuple[float, float, float, float]:
    """Median, 90th percentile and minimum of the wall times (the minimum is the run the other
    users of the machine disturbed least), median of the CPU times."""
    walls = sorted(wall for wall, _ in times)
    p90 = statistics.quantiles(walls, n=10, method="inclusive")[8] if len(walls) > 1 else walls[0]
    return statistics.median(walls), p90, walls[0], statistics.median(cpu for _, cpu in times)


class Variant:
    """One odelint to measure: this one, or (`--before DIR`) another checkout imported from DIR,
    each with its own copy of the project so that their caches do not mix."""

    def __init__(self, label: str, pythonpath: str | None, project: Path, ruff: str | None) -> None:
        self.label, self.project = label, project
        self.env = dict(os.environ)
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: modules load from bytecode, not source
        if pythonpath:
            self.env["PYTHONPATH"] = os.path.abspath(pythonpath)
        self.script = str(Path(sys.executable).with_name("odelint"))
        for _ in range(2):  # fill the caches (and write bytecode); the second run is a pure read
            _timed([self.script, "check", "."], project, self.env)
            if ruff:
                _timed([ruff, "check", "--exit-zero", "."], project, self.env)
        self.change = ConfigChange([self.script, "check", *CHANGED_CONFIG, "."], project, self.env)

    def cases(self, files: int) -> dict[str, object]:
        module = [sys.executable, "-m", "odelint"]
        return {f"{self.label}{name}": case for name, case in {
            "odelint --version": [self.script, "--version"],
            "python -m odelint --version": [*module, "--version"],
            "odelint rules": [self.script, "rules"],
            "python -m odelint rules": [*module, "rules"],
            f"odelint check . (warm, {files} files)": [self.script, "check", "."],
            f"python -m odelint check . (warm, {files} files)": [*module, "check", "."],
            f"odelint check {' '.join(CHANGED_CONFIG)} . (after the config change)": self.change,
        }.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/corpus"))
    parser.add_argument("--files", type=int, default=700)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--change-runs", type=int, default=5,
                        help="runs of the config-change case (the first of the --runs rounds); before the "
                             "per-rule cache keys it re-lints nearly every file")
    parser.add_argument("--project", type=Path, default=Path(tempfile.gettempdir()) / "odelint-startup-project")
    parser.add_argument("--ruff", default=shutil.which("ruff"), help="the ruff executable (default: from PATH)")
    parser.add_argument("--before", metavar="DIR", help="also measure the odelint importable from DIR, interleaved")
    parser.add_argument("--whole-corpus", type=int, default=0, metavar="N", help="N cold and N warm runs on the corpus")
    parser.add_argument("--out", type=Path, help="also write the table here")
    args = parser.parse_args(argv)

    files = build_project(args.corpus, args.files, args.project)
    variants = [Variant("", None, args.project, args.ruff)]
    if args.before:
        copy = args.project.with_name(args.project.name + "-before")
        build_project(args.corpus, args.files, copy)
        variants.append(Variant("before: ", args.before, copy, None))
    plain_env = variants[0].env
    cases: dict[str, object] = {"python -c pass (the interpreter alone)": [sys.executable, "-c", "pass"]}
    for variant in variants:
        cases.update(variant.cases(files))
    if args.ruff:
        cases["ruff --version"] = [args.ruff, "--version"]
        cases[f"ruff check . (warm, {files} files)"] = [args.ruff, "check", "--exit-zero", "."]
    where = {name: variant for variant in variants for name in variant.cases(files)}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    load_before = os.getloadavg()
    for round_number in range(args.runs):
        for name, case in cases.items():
            if callable(case) and round_number >= args.change_runs:
                continue
            variant = where.get(name, variants[0])
            measured = case() if callable(case) else _timed(case, variant.project, variant.env)  # type: ignore
            times[name].append(measured)
    for variant in variants:
        variant.change.restore()
    load_after = os.getloadavg()

    lines = [f"Taken {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()}, "
             f"{os.cpu_count()} cores, Python {platform.python_version()}; load average "
             f"{' '.join(f'{v:.2f}' for v in load_before)} at the start, "
             f"{' '.join(f'{v:.2f}' for v in load_after)} at the end.", "",
             "| command | n | wall median ms | wall p90 ms | wall min ms | CPU median ms |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, values in times.items():
        median, p90, least, cpu = _summary(values)
        lines.append(f"| `{name}` | {len(values)} | {median * 1000:.0f} | {p90 * 1000:.0f} | {least * 1000:.0f} "
                     f"| {cpu * 1000:.0f} |")
    lines.append("")
    for variant in variants:
        relinted = statistics.median(variant.change.relinted) if variant.change.relinted else 0
        lines.append(f"{variant.label or 'now: '}after the config change, {relinted:.0f} of {files} files "
                     "were linted again (median).")
    if args.whole_corpus and args.corpus.is_dir():
        lines += ["", *_whole_corpus(args.corpus, variants[0].script, plain_env, args.whole_corpus)]
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
        cold.append(_timed(cold_command, corpus, env)[0])
        warm.append(_timed(warm_command, corpus, env)[0])
    shutil.rmtree(cache, ignore_errors=True)
    files = sum(1 for _ in corpus.rglob("*.py"))
    cold_median, warm_median = statistics.median(cold), statistics.median(warm)
    return [f"Whole corpus ({files} files), n = {runs}: cold `odelint check --no-cache` median "
            f"{cold_median:.2f} s, warm `odelint check` median {warm_median:.3f} s: "
            f"warm is {cold_median / warm_median:.1f}x faster."]


if __name__ == "__main__":
    sys.exit(main())
