"""Benchmark odelint against the LibCST floor and its peers on the JAX-ecosystem corpus.

    python bench/run.py [--corpus /tmp/corpus] [--users /tmp/users] [--runs 3] [--slice 1]
                        [--only CASES] [--out FILE]
    python bench/run.py --check-gate [--users /tmp/users] [--slice 1]

Every measurement is a whole child process, interleaved with the others run by run: wall
seconds from a monotonic clock, CPU seconds (user + sys, workers included) and the peak
RSS of the largest process from `wait4`. Tables report medians. Build the corpora first with
`bash bench/make_corpus.sh /tmp/corpus` (the JAX ecosystem's libraries) and
`bash bench/make_corpus.sh --users /tmp/users` (ten projects built on Equinox, Diffrax and
Optax: a scientist's code, where every rule's gate opens). Given both `--corpus` and `--users`,
the report puts them side by side; given `--users` alone, it times users' code alone.
fixit, ruff and a plain flake8 come from `--tools-venv`, a venv without odelint (so its
flake8 runs without the ODL plugin) and with the same flake8 plugins as odelint's venv
otherwise:

    python3 -m venv /tmp/benchvenv
    /tmp/benchvenv/bin/pip install fixit==2.2.1 ruff==0.17.6 flake8==7.5.0

odelint, its flake8 plugin and the LibCST floor run under the interpreter running this script.
odelint's modules are byte-compiled once before anything is timed, as `pip install` leaves
them: where `PYTHONDONTWRITEBYTECODE` is set (or the package is a read-only checkout), every
process would otherwise compile them from source, which a user's install never does (a warm
run of the users corpus: about 60 ms more). So is the code of the methods LibCST's dataclasses
generate, kept in the user's cache by the first run after an install. `--no-compile` times
the case with neither.

Slices are every k-th file in sorted path order, so quarter ⊂ half ⊂ full. `--slice K`
makes the base corpus every K-th file; the slow tools (fixit, LibCST metadata) run on every
(K x --slow-step)-th file, and odelint and the parse floor are run on that slice too so
their ratios compare the same files.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


# -- children that the harness times -------------------------------------------------------

def _python_files(folder: str) -> list[Path]:
    return sorted(Path(folder).rglob("*.py"))


def _child_parse(folder: str) -> None:
    """The naive floor of any LibCST linter: parse every file, nothing else, one core."""
    import libcst as cst

    for path in _python_files(folder):
        cst.parse_module(path.read_bytes())


def _child_metadata(folder: str) -> None:
    """Parse plus LibCST's scope and qualified-name metadata: what Fixit-style rules pay for."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, QualifiedNameProvider, ScopeProvider

    for path in _python_files(folder):
        wrapper = MetadataWrapper(cst.parse_module(path.read_bytes()), unsafe_skip_copy=True)
        wrapper.resolve_many([ScopeProvider, QualifiedNameProvider])


CHILDREN = {"_parse": _child_parse, "_metadata": _child_metadata}


# -- the corpus and its slices -------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Slice:
    name: str
    step: int
    folder: str
    files: int
    lines: int


def make_slice(corpus: Path, work: Path, step: int, name: str) -> Slice:
    """Copy every `step`-th .py file of the corpus (sorted by path) into its own folder."""
    files = _python_files(str(corpus))[::step]
    folder = corpus if step == 1 else work / f"slice-{step}"
    if step != 1:
        _copy(corpus, files, folder)
    lines = sum(path.read_bytes().count(b"\n") for path in files)
    return Slice(name, step, str(folder), len(files), lines)


def _copy(source: Path, files: list[Path], folder: Path) -> None:
    """`files` (under `source`) copied to the same places under `folder`, unless they are there."""
    wanted = {path.relative_to(source) for path in files}
    present = {path.relative_to(folder) for path in _python_files(str(folder))} if folder.exists() else set()
    if present != wanted:
        shutil.rmtree(folder, ignore_errors=True)
        for relative in sorted(wanted):
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / relative, folder / relative)


# A project as a scientist keeps it: a git repository (`git init` leaves an exclude file of
# comments) with the usual Python .gitignore, and a pyproject.toml that names the JAX stack and
# pins its tools, but no jax. odelint reads all three on every run, from the project's root.
GIT_EXCLUDE = """# git ls-files --others --exclude-from=.git/info/exclude
# Lines that start with '#' are comments.
# For a project mostly in C, the following would be a good set of
# exclude patterns (uncomment them if you want to use them):
# *.[oa]
# *~
"""
GITIGNORE = """# Byte-compiled / optimized / DLL files
__pycache__/
*.py[cod]
*$py.class
*.so

# Distribution / packaging
build/
dist/
eggs/
.eggs/
sdist/
wheels/
*.egg-info/
*.egg

# Tests, coverage and type checkers
.tox/
.nox/
.coverage
.coverage.*
.cache
coverage.xml
htmlcov/
.pytest_cache/
.hypothesis/
.mypy_cache/
.ruff_cache/
.pyre/

# Jupyter, IDEs, environments
.ipynb_checkpoints
.idea/
.vscode/
.env
.venv
env/
venv/

# Experiments
wandb/
outputs/
checkpoints/
*.ckpt
*.npz
/data/
"""
PYPROJECT = """[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "experiments"
version = "0.1.0"
requires-python = ">=3.10"
dependencies = ["jax>=0.4.30", "equinox>=0.11.4", "diffrax>=0.6", "optax>=0.2.3", "numpy"]

[project.optional-dependencies]
dev = ["pytest==8.3.3", "ruff==0.6.9", "mypy==1.11.2"]

[tool.ruff]
line-length = 100

[tool.pytest.ini_options]
addopts = "-q"
"""


def make_repository(part: Slice, work: Path) -> str:
    """The slice's files in a repository of their own (copied once, kept while they match). A
    file already as wanted is left alone: rewritten after the cache was filled, pyproject.toml
    (a file odelint lints) looked edited to the first timed runs, and one of them wrote the
    cache again."""
    folder = work / f"repository-{part.step}"
    _copy(Path(part.folder), _python_files(part.folder), folder)
    (folder / ".git" / "info").mkdir(parents=True, exist_ok=True)
    for name, text in ((".git/info/exclude", GIT_EXCLUDE), (".gitignore", GITIGNORE), ("pyproject.toml", PYPROJECT)):
        path = folder / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    return str(folder)


# -- measuring one process -----------------------------------------------------------------

@dataclasses.dataclass
class Sample:
    wall: float
    cpu: float
    peak_mib: float


def measure(command: list[str], cwd: str) -> Sample:
    start = time.monotonic()
    child = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stderr is not None
    errors = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in (0, 1):
        tail = errors.decode(errors="replace")[-2000:]
        raise RuntimeError(f"{shlex.join(command)} exited {child.returncode}: {tail}")
    return Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


# -- what is measured ----------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    label: str
    workers: str               # {cores} is filled in
    command: tuple[str, ...]   # {dir}, {cache}, {python}, {tools}, {self} are filled in
    warm: bool = False
    in_repository: bool = False  # run in the slice made a project's repository (`repository`), not in --work


CASES = {case.name: case for case in (
    Case("odelint-cold", "odelint, cold (`--no-cache`, default jobs)", "{cores} (default)",
         ("{python}", "-m", "odelint", "check", "--isolated", "--no-cache", "--exit-zero", "-q", "{dir}")),
    Case("odelint-cold-j1", "odelint, cold, `--jobs 1`", "1",
         ("{python}", "-m", "odelint", "check", "--isolated", "--no-cache", "--exit-zero", "-q", "--jobs", "1",
          "{dir}")),
    Case("odelint-warm", "odelint, warm (unchanged tree, cache filled)", "{cores} (default)",
         ("{python}", "-m", "odelint", "check", "--isolated", "--cache-dir", "{cache}", "--exit-zero", "-q",
          "{dir}"), warm=True),
    Case("odelint-warm-repo", "odelint, warm, in a repository (`.git`, .gitignore, pyproject.toml)",
         "{cores} (default)", ("{python}", "-m", "odelint", "check", "--cache-dir", "{cache}-repo", "--exit-zero", "-q",
                               "."), warm=True, in_repository=True),
    Case("parse", "LibCST parse only (`parse_module(bytes)`)", "1",
         ("{python}", "{self}", "_parse", "{dir}")),
    Case("metadata", "LibCST parse + ScopeProvider + QualifiedNameProvider", "1",
         ("{python}", "{self}", "_metadata", "{dir}")),
    Case("fixit", "`fixit lint` (Fixit 2, default rules)", "{cores} (its pool)",
         ("{tools}/bin/fixit", "lint", "{dir}")),
    Case("flake8", "`flake8` alone (pyflakes, pycodestyle, mccabe)", "{cores} (`-j auto`)",
         ("{tools}/bin/flake8", "--isolated", "--exit-zero", "{dir}")),
    Case("flake8-odl", "`flake8` with the ODL plugin", "{cores} (`-j auto`)",
         ("{python}", "-m", "flake8", "--isolated", "--exit-zero", "{dir}")),
    Case("ruff", "`ruff check --no-cache` (reference)", "{cores} threads",
         ("{tools}/bin/ruff", "check", "--isolated", "--no-cache", "--exit-zero", "{dir}")),
    Case("ruff-all", "`ruff check --no-cache --select ALL`", "{cores} threads",
         ("{tools}/bin/ruff", "check", "--isolated", "--no-cache", "--select", "ALL", "--exit-zero", "{dir}")),
)}
SLOW = ("fixit", "metadata")
BASE = ("odelint-cold", "odelint-cold-j1", "odelint-warm", "odelint-warm-repo", "parse", "flake8", "flake8-odl", "ruff",
        "ruff-all")
ON_SLOW_SLICE = ("fixit", "metadata", "odelint-cold", "parse")
SCALING = ("odelint-cold", "odelint-warm")


def plan(only: set[str] | None, slices: dict[str, Slice], scaling: bool) -> list[tuple[Case, Slice]]:
    """(case, slice) pairs in the order one run executes them."""
    pairs = [(CASES[name], slices["base"]) for name in BASE]
    pairs += [(CASES[name], slices["slow"]) for name in ON_SLOW_SLICE]
    if scaling:
        pairs += [(CASES[name], slices[size]) for size in ("quarter", "half") for name in SCALING]
    chosen, seen = [], set()
    for case, part in pairs:
        if (only is None or case.name in only) and (case.name, part.step) not in seen:
            seen.add((case.name, part.step))
            chosen.append((case, part))
    return chosen


def where(case: Case, part: Slice, work: Path) -> str:
    """The folder a case runs in."""
    return make_repository(part, work) if case.in_repository else str(work)


def fill(case: Case, part: Slice, args: argparse.Namespace, work: Path) -> list[str]:
    values = {"{dir}": part.folder, "{cache}": str(work / f"cache-{part.step}"),
              "{python}": sys.executable, "{tools}": args.tools_venv, "{self}": str(Path(__file__).resolve())}
    filled = []
    for word in case.command:
        for placeholder, value in values.items():
            word = word.replace(placeholder, value)
        filled.append(word)
    return filled


# -- versions and the report ---------------------------------------------------------------

def _output(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"unavailable ({error})"
    if done.returncode != 0:  # the tool is not installed there: its error's last line says why
        lines = (done.stderr or done.stdout).strip().splitlines()
        return f"unavailable ({lines[-1] if lines else f'exit {done.returncode}'})"
    return " ".join(done.stdout.split())


_VERSION_OF_LIBCST = "import importlib.metadata as m; print(m.version('libcst'))"


def versions(args: argparse.Namespace) -> list[tuple[str, str]]:
    from importlib import metadata

    from odelint import __version__

    commit = _output(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
    dirty = _output(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"])
    return [
        ("machine", f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}"),
        ("python", platform.python_version()),
        ("odelint", f"{__version__} (commit {commit}{', with uncommitted changes' if dirty else ''}); "
                    + ("modules and generated methods compiled in every process (`--no-compile`)" if args.no_compile
                       else "modules byte-compiled and generated methods kept before timing, as a first run "
                            "leaves them")),
        ("libcst", f"{metadata.version('libcst')} (odelint, parse floor); "
                   f"{_output([f'{args.tools_venv}/bin/python', '-c', _VERSION_OF_LIBCST])} (fixit)"),
        ("flake8 + ODL", _output([sys.executable, "-m", "flake8", "--version"])),
        ("flake8 alone", _output([f"{args.tools_venv}/bin/flake8", "--version"])),
        ("fixit", _output([f"{args.tools_venv}/bin/fixit", "--version"])),
        ("ruff", _output([f"{args.tools_venv}/bin/ruff", "--version"])),
    ]


def _median(samples: list[Sample], field: str) -> float:
    return statistics.median(getattr(sample, field) for sample in samples)


def render(results: dict[tuple[str, int], list[Sample]], pairs: list[tuple[Case, Slice]],
           slices: dict[str, Slice], args: argparse.Namespace, load: tuple[str, str]) -> str:
    by_step = {part.step: part for part in slices.values()}
    med = {key: (_median(s, "wall"), _median(s, "cpu"), max(x.peak_mib for x in s)) for key, s in results.items()}
    lines = [f"Command: `{shlex.join(['python', 'bench/run.py', *sys.argv[1:]])}`  ",
             f"Taken {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}; load average at start {load[0]}, "
             f"at end {load[1]} (on {os.cpu_count()} cores).", ""]
    lines += ["| slice | files | lines |", "|---|---:|---:|"]
    for part in sorted(by_step.values(), key=lambda p: p.step):
        lines.append(f"| 1/{part.step} ({part.name}) | {part.files:,} | {part.lines:,} |")
    lines += ["", "| what | slice | workers | n | wall s | CPU s | peak MiB | lines/s (wall) "
                  "| × parse (wall) | × parse (CPU) |",
              "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for case, part in pairs:
        key = (case.name, part.step)
        if key not in med:
            continue
        wall, cpu, peak = med[key]
        floor = med.get(("parse", part.step))
        ratio_wall = f"{wall / floor[0]:.3f}" if floor else "-"
        ratio_cpu = f"{cpu / floor[1]:.3f}" if floor else "-"
        workers = case.workers.replace("{cores}", str(os.cpu_count()))
        lines.append(f"| {case.label} | 1/{part.step} | {workers} | {len(results[key])} | {wall:.2f} | {cpu:.2f} | "
                     f"{peak:.0f} | {part.lines / wall:,.0f} | {ratio_wall} | {ratio_cpu} |")
    lines += ["", "Ratios (medians, wall; CPU in brackets; then the median of each round's own ratio, "
                  "wall, with its quartiles):", ""]
    lines += [f"- {text}" for text in ratios(med, slices, results)]
    lines += ["", "Versions:", ""] + [f"- {name}: {value}" for name, value in versions(args)]
    return "\n".join(lines) + "\n"


def ratios(med: dict, slices: dict[str, Slice], results: dict[tuple[str, int], list[Sample]]) -> list[str]:
    base, slow = slices["base"].step, slices["slow"].step
    found = []

    def pair(text: str, top: tuple[str, int], bottom: tuple[str, int], target: str) -> None:
        if top in med and bottom in med:
            found.append(f"{text}: {med[top][0] / med[bottom][0]:.3f} ({med[top][1] / med[bottom][1]:.3f})"
                         f"{paired(results[top], results[bottom])}; target {target}")

    pair("odelint cold (default jobs) / LibCST parse-only (1 core)", ("odelint-cold", base), ("parse", base), "≤ 1.0")
    pair("Fixit / odelint cold, same files", ("fixit", slow), ("odelint-cold", slow), "≥ 10")
    pair("odelint cold / odelint warm", ("odelint-cold", base), ("odelint-warm", base), "≥ 30")
    pair("odelint cold / odelint warm in a repository", ("odelint-cold", base), ("odelint-warm-repo", base), "≥ 30")
    pair("flake8 + ODL / flake8 alone", ("flake8-odl", base), ("flake8", base), "≤ 1.3")
    pair("LibCST parse + metadata / parse-only, same files", ("metadata", slow), ("parse", slow), "context")
    pair("odelint cold `--jobs 1` / parse-only", ("odelint-cold-j1", base), ("parse", base), "context")
    pair("odelint cold / ruff", ("odelint-cold", base), ("ruff", base), "context")
    for name in SCALING:
        sizes = [slices[size] for size in ("quarter", "half", "base") if size in slices]
        steps = [part for part in sizes if (name, part.step) in med]
        if len(steps) > 2:
            found.append(f"scaling of {name} (CPU s): "
                         + _linear_fit([(p.lines, med[(name, p.step)][1]) for p in steps]))
    return found


def paired(top: list[Sample], bottom: list[Sample]) -> str:
    """The median of each round's own ratio (wall), with its quartiles. The two runs of a
    round are taken one after the other, so a drift in the machine's speed (this 2-core
    machine runs in phases ±15% apart, seconds to minutes long) mostly cancels out of each
    round's ratio, where a ratio of the two medians can set one case's slow phase against the
    other's fast one."""
    if len(top) != len(bottom) or len(top) < 3:
        return ""
    each = [first.wall / second.wall for first, second in zip(top, bottom, strict=True)]
    low, middle, high = statistics.quantiles(each, n=4)
    return f"; by round {middle:.3f} ({low:.3f}..{high:.3f})"


def _linear_fit(points: list[tuple[int, float]]) -> str:
    """Least squares `cost = start + per_line x lines` over CPU seconds (less disturbed by
    other load than wall seconds); linear growth leaves small residuals."""
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / sum((x - mean_x) ** 2 for x, _ in points)
    start = mean_y - slope * mean_x
    worst = max(abs(y - (start + slope * x)) / y for x, y in points)
    costs = ", ".join(f"{x:,} lines {y:.2f} s" for x, y in points)
    return (f"{costs}; fit {start:.2f} s + {slope * 1e6:.1f} µs/line, "
            f"largest deviation from the line {worst:.0%}")


# -- the gate check ------------------------------------------------------------------------

def _gate_one(path: str) -> tuple[str, int, int, bool, bool]:
    from odelint.engine.core import lint_source
    from odelint.files.config import RULE_OPTIONS

    text = Path(path).read_text(encoding="utf-8")
    gated, ungated = lint_source(text, path), lint_source(text, path, gate=False)
    every = frozenset(RULE_OPTIONS)  # a declaration may read the settings (`Needs.setting`)
    gated_set, ungated_set = lint_source(text, path, options=every), lint_source(text, path, gate=False, options=every)

    def key(result) -> list[tuple]:
        return sorted((f.code, f.span.line, f.span.column, f.message) if f.code != "ODL000" else ("ODL000",)
                      for f in result.findings)

    same = all(key(with_gate) == key(without) and not with_gate.crashes and not without.crashes
               for with_gate, without in ((gated, ungated), (gated_set, ungated_set)))
    return path, len(gated.findings), len(ungated.findings), gated.parsed, same


def check_gate(part: Slice, jobs: int) -> int:
    """Lint every file with and without the gate, with the default settings and with every
    setting rules read on; any difference is a missed finding."""
    from concurrent.futures import ProcessPoolExecutor

    files = [str(path) for path in _python_files(part.folder)]
    start = time.monotonic()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        outcomes = list(pool.map(_gate_one, files, chunksize=8))
    different = [path for path, _, _, _, same in outcomes if not same]
    print(f"gate check on {part.files:,} files ({part.lines:,} lines), {time.monotonic() - start:.0f} s: "
          f"{sum(o[3] for o in outcomes):,} files parsed with the gate; findings with the gate "
          f"{sum(o[1] for o in outcomes):,}, without {sum(o[2] for o in outcomes):,}; "
          f"{len(different)} file(s) differ")
    for path in different:
        print(f"  differs: {path}")
    return 1 if different else 0


# -- main ----------------------------------------------------------------------------------

def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] in CHILDREN:
        CHILDREN[sys.argv[1]](sys.argv[2])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", help="the libraries, built by bench/make_corpus.sh "
                                          "(default: /tmp/corpus, unless --users is given alone)")
    parser.add_argument("--users", help="users' code, built by `bench/make_corpus.sh --users DIR`; "
                                        "with --corpus, the report puts both side by side")
    parser.add_argument("--work", default="/tmp/odelint-bench", help="slices and caches go here")
    parser.add_argument("--tools-venv", default="/tmp/benchvenv", help="venv with fixit, ruff and flake8")
    parser.add_argument("--runs", type=int, default=3, help="timed runs of every case (median reported)")
    parser.add_argument("--slice", type=int, default=1, help="base corpus: every K-th file (1: all)")
    parser.add_argument("--slow-step", type=int, default=16, help="slow tools run on every (K x this)-th file")
    parser.add_argument("--only", type=lambda v: {n for n in v.split(",") if n}, help=f"cases: {', '.join(CASES)}")
    parser.add_argument("--no-scaling", action="store_true", help="skip the quarter and half runs")
    parser.add_argument("--out", help="write the markdown report here (default: stdout)")
    parser.add_argument("--check-gate", action="store_true", help="compare findings with and without the gate")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="workers of --check-gate")
    parser.add_argument("--no-compile", action="store_true",
                        help="leave odelint's modules uncompiled (each process compiles them from source)")
    args = parser.parse_args()
    if args.no_compile:
        # Nor is the code LibCST's dataclasses generate kept: every process compiles it again.
        os.environ["ODELINT_CACHE_DIR"] = tempfile.mkdtemp(prefix="odelint-no-generated-code-")
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        compile_odelint()
    unknown = (args.only or set()) - set(CASES)
    if unknown:
        parser.error(f"unknown case(s) {', '.join(sorted(unknown))}; known: {', '.join(CASES)}")

    corpora = chosen_corpora(args.corpus, args.users)
    for label, corpus in corpora:
        if not corpus.is_dir():
            option = "--users " if label == "users" else ""
            parser.error(f"no corpus at {corpus}: run `bash bench/make_corpus.sh {option}{corpus}` first")
    reports, summaries = [], []
    for label, corpus in corpora:
        work = Path(args.work).resolve() / label
        work.mkdir(parents=True, exist_ok=True)
        k = args.slice
        slices = {"base": make_slice(corpus, work, k, "base" if k > 1 else "full"),
                  "slow": make_slice(corpus, work, k * args.slow_step, "slow")}
        if args.check_gate:
            if check_gate(slices["base"], args.jobs):
                return 1
            continue
        if not args.no_scaling:
            slices["quarter"] = make_slice(corpus, work, 4 * k, "quarter")
            slices["half"] = make_slice(corpus, work, 2 * k, "half")
        pairs = plan(args.only, slices, not args.no_scaling)
        results, load = run_cases(pairs, work, args)
        reports.append(f"## {label} corpus ({corpus})\n\n" + render(results, pairs, slices, args, load))
        summaries.append((label, slices["base"], results))
    if args.check_gate:
        return 0
    report = (side_by_side(summaries) if len(summaries) > 1 else "") + "\n".join(reports)
    if args.out:
        Path(args.out).write_text(report, encoding="utf-8")
    else:
        sys.stdout.write(report)
    return 0


def chosen_corpora(libraries: str | None, users: str | None) -> list[tuple[str, Path]]:
    """(label, folder) of each corpus to time: each named by what it holds, not by which flag
    gave it (users' code timed alone used to be reported as the libraries)."""
    corpora = []
    if libraries or not users:
        corpora.append(("libraries", Path(libraries or "/tmp/corpus").resolve()))
    if users:
        corpora.append(("users", Path(users).resolve()))
    return corpora


def compile_odelint() -> None:
    """Write the .pyc files of odelint and its rules (py_compile writes them whatever
    PYTHONDONTWRITEBYTECODE says; the interpreter reads them either way). Forced: compileall
    keeps a .pyc whose recorded modification time matches, where the interpreter also checks
    the size, so a source rewritten within the same second would be compiled in every run."""
    import compileall
    import importlib.util

    for package in ("odelint", "odelint.rules"):
        spec = importlib.util.find_spec(package)
        for folder in (spec.submodule_search_locations or []) if spec is not None else []:
            compileall.compile_dir(folder, quiet=1, force=True)
    # The code of the methods LibCST's and odelint's dataclasses generate, which the first run
    # after an install keeps in the user's cache (odelint.engine.generated_code).
    environment = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-c", "from odelint.engine.preload import load_linting; load_linting()"],
                   env=environment, check=True, timeout=120)


def run_cases(pairs: list[tuple[Case, Slice]], work: Path, args: argparse.Namespace
              ) -> tuple[dict[tuple[str, int], list[Sample]], tuple[str, str]]:
    """Every (case, slice) `args.runs` times, interleaved; caches of warm cases filled first."""
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    for case, part in pairs:  # fill the caches the warm runs read (untimed)
        if case.warm:
            shutil.rmtree(work / f"cache-{part.step}{'-repo' if case.in_repository else ''}", ignore_errors=True)
            measure(fill(case, part, args, work), where(case, part, work))
    results: dict[tuple[str, int], list[Sample]] = {}
    folders = {(case.name, part.step): where(case, part, work) for case, part in pairs}
    for run in range(args.runs):
        for case, part in pairs:
            sample = measure(fill(case, part, args, work), folders[(case.name, part.step)])
            results.setdefault((case.name, part.step), []).append(sample)
            print(f"run {run + 1}/{args.runs}  {case.name:<16} 1/{part.step:<3} wall {sample.wall:8.2f}  "
                  f"cpu {sample.cpu:8.2f}  peak {sample.peak_mib:6.0f} MiB", file=sys.stderr, flush=True)
    return results, (load_start, " ".join(f"{x:.2f}" for x in os.getloadavg()))


def side_by_side(summaries: list[tuple[str, Slice, dict[tuple[str, int], list[Sample]]]]) -> str:
    """One row per case, one column group per corpus: wall, CPU and wall × the parse floor."""
    head = "| what | " + " | ".join(f"{label}: wall s | CPU s | × parse (wall)" for label, _, _ in summaries) + " |"
    lines = ["## Both corpora side by side (medians)", "",
             ", ".join(f"{label}: {part.files:,} files, {part.lines:,} lines" for label, part, _ in summaries), "",
             head, "|---|" + "---:|---:|---:|" * len(summaries)]
    for name in BASE:
        cells = []
        for _, part, results in summaries:
            samples, floor = results.get((name, part.step)), results.get(("parse", part.step))
            if not samples:
                cells.append("- | - | -")
                continue
            wall, cpu = _median(samples, "wall"), _median(samples, "cpu")
            ratio = f"{wall / _median(floor, 'wall'):.3f}" if floor else "-"
            cells.append(f"{wall:.2f} | {cpu:.2f} | {ratio}")
        lines.append(f"| {CASES[name].label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n"


if __name__ == "__main__":
    sys.exit(main())
